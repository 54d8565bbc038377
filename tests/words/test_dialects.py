"""Dialect variants: the r-less rules, the alternatives each --dialect offers, and the choice the
decoder makes between them (synthetic scores: a word sounding with or without its /r/)."""

import numpy as np
import pytest

from aligner.alignment.decoding.words import align_words_scored, with_dialect
from aligner.errors import AlignerError
from aligner.phones.sets import CLASSES39
from aligner.words.dialects import DIALECTS, DialectForm, dialect_pronunciations, ends_in_r, non_rhotic


def p(s):
    return tuple(s.split())


@pytest.mark.parametrize("rhotic, rless", [
    ("AO1 F ER0", "AO1 F AH0"),            # offer: the r-coloured schwa
    ("N AO1 R TH", "N AO1 TH"),            # north
    ("D AA1 R K", "D AA1 K"),              # dark
    ("N IH1 R", "N IH1 AH0"),              # near: a centring diphthong
    ("DH EH1 R", "DH EH1 AH0"),            # there
    ("T UH1 R", "T UH1 AH0"),              # tour
    ("B ER1 D", "B AH1 D"),                # bird
    ("K AE1 M ER0 AH0", "K AE1 M AH0 R AH0"),  # camera: r before a vowel stays
    ("V EH1 R IY0", "V EH1 R IY0"),        # very: intervocalic r stays
    ("T R IY1", "T R IY1"),                # tree: r after a consonant stays
    ("S T AO1 R IY0", "S T AO1 R IY0"),    # story
])
def test_non_rhotic_rules(rhotic, rless):
    assert non_rhotic(p(rhotic)) == p(rless)


def test_linking_r_and_word_final_r():
    assert non_rhotic(p("F AA1 R"), linking=True) == p("F AA1 R")
    assert non_rhotic(p("W AO1 T ER0"), linking=True) == p("W AO1 T AH0 R")
    assert non_rhotic(p("D AA1 R K"), linking=True) == p("D AA1 K")  # not word-final: no linking r
    assert ends_in_r(p("W AO1 T ER0")) and ends_in_r(p("F AA1 R")) and not ends_in_r(p("T R IY1"))


def test_alternatives_of_each_dialect():
    water = [p("W AO1 T ER0")]
    assert dialect_pronunciations(water, "rhotic") == water
    auto = dialect_pronunciations(water, "auto")
    assert auto == [p("W AO1 T ER0"), p("W AO1 T AH0")]
    assert not isinstance(auto[0], DialectForm) and isinstance(auto[1], DialectForm)
    assert dialect_pronunciations(water, "non-rhotic") == [p("W AO1 T AH0")]
    assert dialect_pronunciations(water, "non-rhotic", vowel_follows=True) == [p("W AO1 T AH0"), p("W AO1 T AH0 R")]
    # a word without a post-vocalic r: the dictionary's form alone, in every dialect
    for d in DIALECTS:
        assert dialect_pronunciations([p("T R IY1")], d) == [p("T R IY1")]
    with pytest.raises(ValueError):
        dialect_pronunciations(water, "scouse")


def test_a_model_of_its_own_phones_gets_no_english_rules(shipped_model):
    class OwnPhones:
        phone_set = type("PS", (), {"inventory": object()})()

    prons = [[p("W AO1 T ER0")]]
    assert with_dialect(OwnPhones(), prons, "non-rhotic") == prons
    assert with_dialect(shipped_model, prons, "non-rhotic") == [[p("W AO1 T AH0")]]


@pytest.fixture(scope="module")
def shipped_model():
    from aligner import api

    return api.load_model()


def _scores_for(classes_by_frame, n_classes=39):
    """Classifier-like scores (T, 39): each frame's class 0, the others -6."""
    scores = np.full((len(classes_by_frame), n_classes), -6.0)
    for t, c in enumerate(classes_by_frame):
        scores[t, CLASSES39.index(c)] = 0.0
    return scores


@pytest.mark.parametrize("said, expected", [("r-less", p("DH EH1 AH0")), ("rhotic", p("DH EH1 R"))])
def test_auto_picks_the_form_the_audio_has(shipped_model, said, expected):
    """``there`` between silences: frames of eh then ah (r-less) or eh then r (rhotic)."""
    tail = ["ah"] * 8 if said == "r-less" else ["r"] * 8
    frames_cls = ["sil"] * 10 + ["dh"] * 5 + ["eh"] * 12 + tail + ["sil"] * 10
    scores = _scores_for(frames_cls)
    frames = np.zeros((len(frames_cls), 42))
    out = align_words_scored(shipped_model, frames, scores, ["there"], [[p("DH EH1 R")]], len(frames_cls) / 100,
                             dialect="auto")
    assert tuple(out.pronunciations[0]) == expected
    assert [iv.label for iv in out.phones] == list(expected)
    rhotic = align_words_scored(shipped_model, frames, scores, ["there"], [[p("DH EH1 R")]], len(frames_cls) / 100,
                                dialect="rhotic")
    assert tuple(rhotic.pronunciations[0]) == p("DH EH1 R")


def test_api_refuses_an_unknown_dialect():
    from aligner import api

    with pytest.raises(AlignerError, match="dialect"):
        api.align_words(np.zeros(16000, np.float32), "there", sr=16000, dialect="scouse")


def _word_phones(path, word):
    """The phone labels inside the first interval of ``word`` in a TextGrid's words tier."""
    from aligner.io.textgrids import read_interval_tier

    w = next(iv for iv in read_interval_tier(path, "words") if iv.label == word)
    return tuple(iv.label for iv in read_interval_tier(path, "phones")
                 if iv.label and iv.start_s >= w.start_s - 1e-6 and iv.end_s <= w.end_s + 1e-6)


def test_cli_dialect_reaches_align_and_align_corpus(tmp_path):
    """``--dialect`` through ``aligner align`` and ``align-corpus``: non-rhotic aligns ``year`` r-less,
    rhotic as CMUdict writes it (a TIMIT recording; the words are what the flag changes)."""
    import shutil
    import warnings

    import soundfile as sf

    from tests.conftest import TIMIT, run

    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT}")
    from aligner.io.audio import load_audio

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sf.write(corpus / "sa1.wav", load_audio(TIMIT / "dr1-fvmh0" / "sa1.wav"), 16000)
    shutil.copy(TIMIT / "dr1-fvmh0" / "sa1.txt", corpus / "sa1.txt")
    for dialect, year in (("non-rhotic", p("Y IH1 AH0")), ("rhotic", p("Y IH1 R"))):
        out = tmp_path / f"{dialect}.TextGrid"
        code, text = run("align", corpus / "sa1.wav", corpus / "sa1.txt", "--dialect", dialect, "-o", out)
        assert code == 0, text
        assert _word_phones(out, "year") == year
        code, text = run("align-corpus", corpus, tmp_path / dialect, "--dialect", dialect)
        assert code == 0, text
        assert _word_phones(tmp_path / dialect / "sa1.TextGrid", "year") == year
    code, text = run("align", corpus / "sa1.wav", corpus / "sa1.txt", "--dialect", "scouse")
    assert code != 0 and "scouse" in text
