"""Word-track metrics (aligner.alignment.evaluation.words): pairing, edge errors, boundary F1,
phone pairing on the 39 classes, and the .wrd / TextGrid readers."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from aligner.alignment.evaluation.words import (
    WordScores, align_labels, boundary_times, count_matched_boundaries, edge_errors_ms,
    normalize_word, pair_phones, pair_words, read_phone_intervals, read_word_alignment,
    read_words_tier, read_wrd, score_phone_alignments, score_word_alignments,
)
from aligner.errors import TranscriptError
from aligner.io.textgrids import Interval, write_textgrid

from tests.conftest import needs_timit, TIMIT


def words(*spec):
    """words("a", 0, 1, "b", 1, 2) -> Intervals."""
    return [Interval(float(spec[k + 1]), float(spec[k + 2]), spec[k]) for k in range(0, len(spec), 3)]


REF = words("the", 0.10, 0.20, "cat", 0.20, 0.50, "sat", 0.70, 1.00)


# ------------------------------------------------------------------ pairing

def test_normalize_word():
    assert normalize_word("Don't,") == "dont"
    assert normalize_word("semi-heights.") == "semiheights"
    assert normalize_word("ÉCOLE") == normalize_word("école") == "école"
    assert normalize_word("...") == ""


def test_identical_words_pair_with_zero_error():
    p = pair_words(REF, REF)
    assert p.pairs == [(0, 0), (1, 1), (2, 2)]
    assert (p.n_substituted, p.n_deleted, p.n_inserted) == (0, 0, 0)
    assert np.all(edge_errors_ms(p) == 0)
    s = score_word_alignments([(REF, REF)])
    assert s.mean_ms == 0 and s.f1 == 100.0 and s.error_rate == 0.0
    assert s.n_ref_boundaries == 5  # 0.1, 0.2 (merged), 0.5, 0.7, 1.0


def test_labels_compared_after_normalisation():
    hyp = words("The", 0.10, 0.20, "CAT,", 0.20, 0.50, "sat.", 0.70, 1.00)
    assert len(pair_words(REF, hyp).pairs) == 3


def test_inserted_word():
    hyp = words("the", 0.10, 0.20, "big", 0.20, 0.30, "cat", 0.30, 0.50, "sat", 0.70, 1.00)
    p = pair_words(REF, hyp)
    assert p.pairs == [(0, 0), (1, 2), (2, 3)]
    assert (p.n_substituted, p.n_deleted, p.n_inserted) == (0, 0, 1)
    s = score_word_alignments([(REF, hyp)])
    assert s.insertion_rate == pytest.approx(100 / 3)
    assert s.n_edges == 6
    # only "cat"'s start moved (0.20 -> 0.30): 100 ms on one of six edges
    assert s.mean_ms == pytest.approx(100 / 6)
    assert s.median_ms == pytest.approx(0)
    # boundaries: ref {.1 .2 .5 .7 1}, hyp {.1 .2 .3 .5 .7 1}: 5 matched
    assert (s.n_matched_boundaries, s.n_ref_boundaries, s.n_hyp_boundaries) == (5, 5, 6)
    assert s.recall == 100 and s.precision == pytest.approx(500 / 6)


def test_deleted_word():
    hyp = words("the", 0.10, 0.50, "sat", 0.70, 1.00)
    p = pair_words(REF, hyp)
    assert p.pairs == [(0, 0), (2, 1)]
    assert (p.n_substituted, p.n_deleted, p.n_inserted) == (0, 1, 0)
    s = score_word_alignments([(REF, hyp)])
    assert s.deletion_rate == pytest.approx(100 / 3) and s.error_rate == pytest.approx(100 / 3)
    assert sorted(edge_errors_ms(p)) == pytest.approx([0, 0, 0, 300])


def test_substituted_word_is_not_scored():
    hyp = words("the", 0.10, 0.20, "hat", 0.20, 0.50, "sat", 0.70, 1.00)
    p = pair_words(REF, hyp)
    assert p.pairs == [(0, 0), (2, 2)]
    assert (p.n_substituted, p.n_deleted, p.n_inserted) == (1, 0, 0)
    s = score_word_alignments([(REF, hyp)])
    assert s.n_edges == 4 and s.substitution_rate == pytest.approx(100 / 3)
    assert s.f1 == 100.0  # boundaries are paired by time alone


def test_alignment_prefers_pairs_over_substitutions():
    # a b c vs b c d: pair b and c (delete a, insert d) rather than three substitutions
    steps = align_labels(list("abc"), list("bcd"))
    assert steps == [(0, None), (1, 0), (2, 1), (None, 2)]
    # one substitution beats a deletion plus an insertion
    assert align_labels(list("axc"), list("ayc")) == [(0, 0), (1, 1), (2, 2)]
    assert align_labels([], list("ab")) == [(None, 0), (None, 1)]
    assert align_labels(list("ab"), []) == [(0, None), (1, None)]


def test_silence_words_and_empty_labels_are_dropped():
    hyp = [Interval(0.0, 0.1, "<sil>"), *REF[:2], Interval(0.5, 0.7, "sp"), Interval(0.6, 0.65, ","),
           REF[2], Interval(1.0, 1.2, "</s>")]
    p = pair_words(REF, hyp)
    assert len(p.hyp) == 3 and len(p.pairs) == 3 and p.n_inserted == 0


def test_shifted_boundaries_known_errors():
    # every start 15 ms late and every end 30 ms early, on 3 words: errors 15 x3, 30 x3
    hyp = [Interval(w.start_s + 0.015, w.end_s - 0.030, w.label) for w in REF]
    s = score_word_alignments([(REF, hyp)])
    assert s.mean_ms == pytest.approx(22.5)
    assert s.median_ms == pytest.approx(22.5)
    assert s.within_ms == {10: 0.0, 20: 50.0, 50: 100.0}
    # F1: ref {.1 .2 .5 .7 1.0}; hyp {.115 .17 .215 .47 .715 .97}: .1-.115, .2-.215 (or .17),
    # .7-.715 within 20 ms; .5-.47 and 1.0-.97 are 30 ms off
    assert s.n_hyp_boundaries == 6
    assert s.n_matched_boundaries == 3
    assert s.f1 == pytest.approx(100 * 2 * 3 / 11)


def test_tolerances_are_inclusive():
    hyp = [Interval(w.start_s + 0.020, w.end_s + 0.020, w.label) for w in REF]
    s = score_word_alignments([(REF, hyp)])
    assert s.within_ms[20] == 100.0 and s.within_ms[10] == 0.0
    assert s.f1 == 100.0


def test_pooled_over_utterances_and_empty_hypothesis():
    hyp = [Interval(w.start_s + 0.040, w.end_s + 0.040, w.label) for w in REF]
    s = score_word_alignments([(REF, REF), (REF, hyp), (REF, [])])
    assert s.n_utterances == 3 and s.n_ref == 9 and s.n_paired == 6 and s.n_deleted == 3
    assert s.mean_ms == pytest.approx(20.0) and s.within_ms[20] == 50.0
    # boundaries: 15 reference, 10 hypothesis, 5 matched (the exact utterance)
    assert (s.n_ref_boundaries, s.n_hyp_boundaries, s.n_matched_boundaries) == (15, 10, 5)
    assert s.recall == pytest.approx(100 / 3) and s.precision == 50.0


def test_no_pairs_gives_nan_not_crash():
    s = score_word_alignments([(REF, [])])
    assert math.isnan(s.mean_ms) and math.isnan(s.within_ms[20])
    assert s.f1 == 0.0 and s.deletion_rate == 100.0
    assert math.isnan(score_word_alignments([]).f1)


def test_scores_to_dict_and_format():
    s = score_word_alignments([(REF, REF)])
    d = s.to_dict()
    assert d["within_ms"] == {"10": 100.0, "20": 100.0, "50": 100.0}
    assert d["f1"] == 100.0 and d["unit"] == "word" and d["error_rate"] == 0.0
    text = s.format()
    assert "WER 0.0 %" in text and "F1 100.0 %" in text and "<=20 ms: 100.0 %" in text
    assert isinstance(s, WordScores)


def test_bad_interval_is_a_value_error():
    with pytest.raises(ValueError, match="hypothesis word 1"):
        pair_words(REF, [(0.5, 0.2, "x")])
    with pytest.raises(ValueError, match="boundary style"):
        score_word_alignments([(REF, REF)], boundary_style="middles")


# ------------------------------------------------------------------ boundaries and F1

def test_boundary_times_styles():
    w = words("a", 0.1, 0.2, "b", 0.2, 0.4, "c", 0.6, 0.9)
    assert boundary_times(w).tolist() == pytest.approx([0.1, 0.2, 0.4, 0.6, 0.9])
    assert boundary_times(w, "onsets").tolist() == pytest.approx([0.2, 0.6])
    # float noise at a shared boundary is one boundary
    w2 = words("a", 0.1, 0.30000000001, "b", 0.3, 0.5)
    assert len(boundary_times(w2)) == 3
    assert boundary_times([]).size == 0


def _brute_force_matching(ref, hyp, tol):
    """Maximum one-to-one matching by trying every injection of the smaller side."""
    small, large = (ref, hyp) if len(ref) <= len(hyp) else (hyp, ref)
    best = 0
    for k in range(len(small), 0, -1):
        for subset in itertools.combinations(range(len(small)), k):
            for image in itertools.permutations(range(len(large)), k):
                if all(abs(small[a] - large[b]) <= tol + 1e-9 for a, b in zip(subset, image)):
                    return k
    return best


def test_greedy_sweep_is_a_maximum_matching():
    rng = random.Random(0)
    for _ in range(400):
        n, m = rng.randint(0, 6), rng.randint(0, 6)
        # coarse grid so that ties and chains of near points are frequent
        ref = [rng.randint(0, 30) * 0.005 for _ in range(n)]
        hyp = [rng.randint(0, 30) * 0.005 for _ in range(m)]
        tol = rng.choice([0.005, 0.01, 0.02])
        assert count_matched_boundaries(ref, hyp, tol) == _brute_force_matching(ref, hyp, tol), (ref, hyp, tol)


def test_sweep_beats_closest_first_greedy():
    # closest-first pairs 15-10 (5 ms) and then nothing; both 0-10 and 15-30 are allowed
    assert count_matched_boundaries([0.0, 0.015], [0.010, 0.030], 0.016) == 2


# ------------------------------------------------------------------ phones

def test_phones_paired_on_39_classes_across_phone_sets():
    ref = [Interval(0.0, 0.1, "h#"), Interval(0.1, 0.2, "ix"), Interval(0.2, 0.3, "z"),
           Interval(0.3, 0.4, "ao"), Interval(0.4, 0.5, "pau")]
    hyp = [Interval(0.0, 0.11, "SIL"), Interval(0.11, 0.2, "IH0"), Interval(0.2, 0.28, "S"),
           Interval(0.28, 0.4, "AA1"), Interval(0.4, 0.5, "SIL")]
    p = pair_phones(ref, hyp)
    assert [k for k in p.ref_keys] == ["ih", "z", "aa"]  # silences dropped, ix -> ih, ao -> aa
    assert p.pairs == [(0, 0), (2, 2)] and p.n_substituted == 1
    s = score_phone_alignments([(ref, hyp)])
    assert s.unit == "phone" and s.substitution_rate == pytest.approx(100 / 3)
    assert sorted(edge_errors_ms(p)) == pytest.approx([0, 0, 10, 20])
    assert "PER" in s.format()
    with_sil = pair_phones(ref, hyp, keep_silence=True)
    assert len(with_sil.pairs) == 4


def test_phone_deletion_and_insertion_rates():
    ref = [Interval(0.0, 0.1, "d"), Interval(0.1, 0.2, "ow"), Interval(0.2, 0.3, "n"), Interval(0.3, 0.4, "t")]
    hyp = [Interval(0.0, 0.1, "D"), Interval(0.1, 0.2, "OW"), Interval(0.2, 0.4, "N"),
           Interval(0.4, 0.45, "AH"), Interval(0.45, 0.5, "P")]
    s = score_phone_alignments([(ref, hyp)])
    assert (s.n_paired, s.n_substituted, s.n_deleted, s.n_inserted) == (3, 1, 0, 1)
    assert s.error_rate == pytest.approx(50.0)


def test_unknown_phone_names_the_side():
    with pytest.raises(TranscriptError, match="hypothesis phones"):
        pair_phones([Interval(0, 0.1, "aa")], [Interval(0, 0.1, "QQ")])


# ------------------------------------------------------------------ readers

def test_read_wrd(tmp_path):
    f = tmp_path / "a.wrd"
    f.write_text("2200 4760 don't\n\n4760 9350 ask\n9000 11600 me\n", encoding="utf-8")
    got = read_wrd(f)
    assert got == [Interval(2200 / 16000, 4760 / 16000, "don't"), Interval(4760 / 16000, 9350 / 16000, "ask"),
                   Interval(9000 / 16000, 11600 / 16000, "me")]  # TIMIT words may overlap
    assert read_word_alignment(f) == got


@pytest.mark.parametrize("text, message", [
    ("", "is empty"),
    ("10 20\n", "line 1: expected 'start_sample end_sample word'"),
    ("10 20 a\nx 30 b\n", "line 2: expected"),
    ("-5 20 a\n", "negative start"),
    ("30 20 a\n", "line 1: end sample 20 is not after start sample 30"),
    ("30 40 a\n10 20 b\n", "line 2: start sample 10 is before the previous word's start 30"),
])
def test_read_wrd_bad_input(tmp_path, text, message):
    f = tmp_path / "bad.wrd"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(TranscriptError, match=message) as err:
        read_wrd(f)
    assert str(f) in str(err.value) and "\n" not in str(err.value)


def test_read_wrd_missing_and_binary(tmp_path):
    with pytest.raises(TranscriptError, match="not found"):
        read_wrd(tmp_path / "nope.wrd")
    f = tmp_path / "bin.wrd"
    f.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(TranscriptError, match="not UTF-8"):
        read_wrd(f)


def test_read_words_tier(tmp_path):
    f = tmp_path / "a.TextGrid"
    write_textgrid(f, [("words", [(0.1, 0.3, "hello"), (0.3, 0.35, "sp"), (0.35, 0.7, "world"),
                                  (0.7, 0.8, "<eps>")]),
                       ("phones", [(0.1, 0.2, "HH"), (0.2, 0.3, "AH0")])], xmax=1.0)
    assert read_words_tier(f) == [Interval(0.1, 0.3, "hello"), Interval(0.35, 0.7, "world")]
    assert read_word_alignment(f) == read_words_tier(f)
    assert read_phone_intervals(f) == [Interval(0.1, 0.2, "HH"), Interval(0.2, 0.3, "AH0")]


def test_read_words_tier_mfa_speaker_naming(tmp_path):
    f = tmp_path / "mfa.TextGrid"
    write_textgrid(f, [("spk1 - words", [(0.1, 0.3, "hi")]), ("spk1 - phones", [(0.1, 0.3, "HH")])], 1.0)
    assert read_words_tier(f) == [Interval(0.1, 0.3, "hi")]
    g = tmp_path / "two.TextGrid"
    write_textgrid(g, [("a - words", [(0.1, 0.3, "hi")]), ("b - words", [(0.4, 0.6, "yo")])], 1.0)
    with pytest.raises(TranscriptError, match="several speakers"):
        read_words_tier(g)
    assert read_words_tier(g, tier="b - words") == [Interval(0.4, 0.6, "yo")]


def test_read_words_tier_bad_input(tmp_path):
    f = tmp_path / "nowords.TextGrid"
    write_textgrid(f, [("phones", [(0.1, 0.3, "HH")])], 1.0)
    with pytest.raises(TranscriptError, match=r"tier 'words' not found \(interval tiers: 'phones'\)"):
        read_words_tier(f)
    e = tmp_path / "empty.TextGrid"
    write_textgrid(e, [("words", [(0.1, 0.3, "sil")])], 1.0)
    with pytest.raises(TranscriptError, match="holds no words"):
        read_words_tier(e)
    g = tmp_path / "garbage.TextGrid"
    g.write_text("not a textgrid\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match="not a readable Praat TextGrid") as err:
        read_words_tier(g)
    assert str(g) in str(err.value)
    with pytest.raises(TranscriptError, match="not found"):
        read_words_tier(tmp_path / "missing.TextGrid")


@needs_timit
def test_timit_wrd_files_all_read():
    files = sorted(TIMIT.glob("*/*.wrd"))
    assert files
    for f in files:
        ws = read_wrd(f)
        assert ws and all(w.end_s > w.start_s for w in ws)
    # a reference scored against itself is perfect
    ws = read_wrd(files[0])
    assert score_word_alignments([(ws, ws)]).f1 == 100.0
