"""The glottal onset variant: a word that begins with a vowel may begin with TIMIT's glottal stop,
scored as silence with its own durations and owned by the word's first phone."""

import numpy as np

from aligner.alignment.decoding import words as W
from aligner.phones.sets import CLASSES39, get_phone_set
from tests.conftest import TIMIT, needs_timit


def _expansions(phones, rules=("glottal_onset",)):
    return W._expansions(phones, get_phone_set("arpabet"), rules)


def test_a_vowel_initial_word_gets_a_glottal_onset_owned_by_its_first_phone():
    plain, glottal = _expansions(["AO1", "L"])
    assert glottal.symbols == ["q", "AO1", "L"]
    assert glottal.classes[0] == CLASSES39.index("sil") and list(glottal.classes[1:]) == list(plain.classes)
    assert list(glottal.owner) == [0, 0, 1] and glottal.n_output == plain.n_output == 2


def test_no_glottal_onset_before_a_consonant_or_without_the_rule():
    assert len(_expansions(["K", "AA1", "R"])) == 1  # a stop: its closure, no glottal stop
    assert len(_expansions(["AO1", "L"], rules=())) == 1
    assert "glottal_onset" in W.DEFAULT_RULES and "glottal_onset" in W.VARIANT_RULES


def test_the_glottal_onset_carries_its_bonus_in_the_word_graph():
    from aligner import api

    model = api.load_model()
    graph, expansions = W.word_graph(model, [[["DH", "AH0"]], [["AO1", "L"]]])
    glottal = [k for k, (_, exp) in enumerate(expansions[1]) if exp.symbols[0] == "q"]
    assert len(glottal) == 1
    q_nodes = np.flatnonzero(np.array([label == "q" for label in graph.labels]))
    assert len(q_nodes) == 1
    assert graph.node_bonus[q_nodes[0]] == W.RULE_VARIANT_BONUS + W.GLOTTAL_ONSET_BONUS
    mean, _, _ = model.durations.for_phones(np.array([model.inventory.silence_index]), ["q"])
    assert graph.dur_mean[q_nodes[0]] == mean[0]  # the glottal stop's own durations, not a pause's
    first, _ = W.word_graph(model, [[["AO1", "L"]]])
    assert "q" not in first.labels  # after the leading silence the first word has none (its silence is the edge's)


@needs_timit
def test_aligning_for_vowels_leaves_glottal_onsets_out(monkeypatch):
    """``aligner vowels`` aligns words without glottal onsets (a vowel is measured from its voicing)."""
    from aligner import api
    from aligner.vowels import pipeline as vp

    seen = []
    real = W.align_words_scored

    def spy(*args, **kwargs):
        seen.append(kwargs.get("rules", W.DEFAULT_RULES))
        return real(*args, **kwargs)

    monkeypatch.setattr(W, "align_words_scored", spy)
    from aligner.alignment import corpus

    # the English model as this process's (an earlier test may have left another one there)
    monkeypatch.setattr(corpus, "_WORKER_MODEL", api.load_model())
    wav = sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[0]
    api.align_words(wav, wav.with_suffix(".txt"))
    records, failures, _ = vp._measure_aligned(wav, "x", None, None, wav.with_suffix(".txt"), None, False, None)
    assert not failures and records
    assert "glottal_onset" in seen[0] and all("glottal_onset" not in r for r in seen[1:]) and len(seen) >= 2
