"""Merged junctions ("this staff": one /s/ for both words): the graph's merged phone and the word
decoder's variants, against brute force, and on a TIMIT utterance that says one."""

import dataclasses

import numpy as np
import pytest

from aligner.alignment.decoding.graph import Segment, build_word_graph
from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input

from tests.conftest import TIMIT, needs_timit
from tests.decoding.test_graph_task import D, P, all_outputs, pause_seg


def _two_words():
    """Word 0 ends in class 3 (one alternative) or class 2; word 1 begins with class 3."""
    ends3 = Segment.make([0, 3], [2.0, 4.0], [1.0, 1.5], [6, 9], labels=["a", "s"])
    ends5 = Segment.make([0, 2], [2.0, 3.0], [1.0, 1.0], [6, 7], labels=["a", "z"])
    begins3 = Segment.make([3, 4], [5.0, 2.5], [2.0, 1.0], [10, 6], labels=["s", "t"])
    return ends3, ends5, begins3


def test_a_merged_variant_follows_only_the_alternatives_ending_in_its_first_phone():
    ends3, ends5, begins3 = _two_words()
    merged = dataclasses.replace(begins3, merges_first=True, bonus=0.5)
    g = build_word_graph([[ends3, ends5], [begins3, merged]], pause_seg(np.random.default_rng(0)))
    plain = build_word_graph([[ends3, ends5], [begins3]], pause_seg(np.random.default_rng(0)))
    assert g.n_nodes == plain.n_nodes + 2  # the merged /s/ of word 0, and word 1 from its /t/
    (m,) = np.flatnonzero((g.word == 0) & (g.dur_mean == 9.0))  # both phones' means summed
    assert g.classes[m] == 3 and g.labels[m] == "s" and g.max_frames[m] == 19
    assert g.dur_std[m] == pytest.approx(np.sqrt(1.5 ** 2 + 2.0 ** 2))
    assert [g.labels[n] for n in g.preds(m)] == ["a"] and g.word[g.preds(m)[0]] == 0
    (tail,) = np.flatnonzero((g.word == 1) & (g.word_start == 1) & (g.classes == 4))
    assert list(g.preds(tail)) == [m]  # after the merged /s/ alone: no pause, not after the /z/ word
    assert g.node_bonus[tail] == 0.5
    g.check_words()
    assert any(m in p for p in g.paths())


def test_a_merged_variant_without_a_matching_word_before_is_left_out():
    ends3, ends5, begins3 = _two_words()
    merged = dataclasses.replace(begins3, merges_first=True)
    rng = np.random.default_rng(0)
    g = build_word_graph([[ends5], [begins3, merged]], pause_seg(rng))
    assert g.n_nodes == build_word_graph([[ends5], [begins3]], pause_seg(rng)).n_nodes
    first = build_word_graph([[begins3, merged], [ends3]], pause_seg(rng))  # nothing before it
    assert first.n_nodes == build_word_graph([[begins3], [ends3]], pause_seg(rng)).n_nodes
    required = build_word_graph([[ends3], [begins3, merged]], pause_seg(rng), between="required")
    assert not np.any(required.dur_mean == 9.0)  # a pause must come between: no merging


@pytest.mark.parametrize("seed", range(3))
def test_decode_with_merged_junctions_matches_brute_force(seed):
    rng = np.random.default_rng(900 + seed)
    ends3, ends5, begins3 = _two_words()
    merged = dataclasses.replace(begins3, merges_first=True, bonus=float(rng.normal()))
    g = build_word_graph([[ends3, ends5], [begins3, merged]], pause_seg(rng))
    T = int(rng.integers(9, 12))
    x = make_graph_input(rng.normal(size=(T, P)), rng.normal(size=(T, D)), g)
    outs = list(all_outputs(x))
    task = GraphAlignmentTask(phone_bonus=0.4)
    w = rng.normal(size=7)
    y, _ = task.decode_with_value(x, w)
    assert task.score(x, y, w) == pytest.approx(max(task.score(x, o, w) for o in outs), abs=1e-9)


def test_the_word_graph_offers_merged_held_consonants_not_vowels():
    from aligner import api
    from aligner.alignment.decoding import words as wd

    model = api.load_model()
    # "this staff": /s/ + /s/; "holiday aprons": /ey/ + /ey/ (a vowel: not merged)
    for prons, merges in ((([("DH", "IH1", "S")], [("S", "T", "AE1", "F")]), True),
                          (([("HH", "AA1", "L", "IH0", "D", "EY2")], [("EY1", "P", "R", "AH0", "N", "Z")]), False)):
        g, exps = wd.word_graph(model, prons)
        tails = [(phones, e.symbols) for phones, e in exps[1] if len(phones) < len(prons[1][0])]
        assert bool(tails) == merges
        if merges:
            assert tails == [(("T", "AE1", "F"), ["tcl", "T", "AE1", "F"])]
            start = int(np.flatnonzero((g.word_start == 1) & (g.classes == model.inventory.silence_index))[0])
            (m,) = g.preds(start)
            assert g.labels[m] == "S" and g.word[m] == 0 and g.node_bonus[start] == wd.MERGED_JUNCTION_BONUS


@needs_timit
def test_this_staff_says_one_s_for_both_words():
    """dr5-ftlg0/si483 "This staff deserves...": TIMIT's labels give the one /s/ to "this" (it ends
    at 0.422 s, where "staff"'s /t/ closure begins)."""
    import warnings

    from aligner import api
    from aligner.io.audio import RepairedAudioWarning

    wav = TIMIT / "dr5-ftlg0" / "si483.wav"
    if not wav.is_file():
        pytest.skip(f"{wav} not in the sample")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        result = api.align_words(str(wav), wav.with_suffix(".txt"))
    words = dict(result.tiers)["words"]
    assert [w.label for w in words[:2]] == ["this", "staff"]
    assert abs(words[0].end_s - 0.422) <= 0.02
    phones = dict(result.tiers)["phones"]
    assert [p.label for p in phones if p.start_s >= words[1].start_s - 1e-6][0] == "T"  # "staff" from its /t/
