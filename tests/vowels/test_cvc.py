"""CVC token cutting (SPEC section 5)."""

from aligner.vowels.cvc import TIMIT_FLANKS, TIMIT_VOWELS, cvc_tokens
from aligner.io.transcripts import read_phn
from aligner.phones.sets import TIMIT61

from tests.conftest import TIMIT, needs_timit


def phones(*spec):
    """('h#', 10), ('b', 5), ... -> starts, ends, labels with consecutive times."""
    starts, ends, labels, t = [], [], [], 0
    for label, n in spec:
        starts.append(t)
        ends.append(t + n)
        labels.append(label)
        t += n
    return starts, ends, labels


def test_cut_spans_whole_obstruent_runs():
    # h# [s tcl t] aa [pcl p] w
    tokens = cvc_tokens(*phones(("h#", 10), ("s", 5), ("tcl", 4), ("t", 2), ("aa", 12), ("pcl", 3),
                                ("p", 2), ("w", 6)))
    assert len(tokens) == 1
    tok = tokens[0]
    assert (tok.cut_start, tok.cut_end) == (10, 38)
    assert (tok.vowel_start, tok.vowel_end, tok.vowel) == (21, 33, "aa")
    assert tok.context == ("s", "tcl", "t", "aa", "pcl", "p")
    assert (tok.onset_in_cut, tok.offset_in_cut) == (11, 23)


def test_vowel_next_to_glide_or_vowel_or_edge_is_not_a_token():
    assert cvc_tokens(*phones(("b", 3), ("aa", 9), ("r", 4), ("d", 3))) == []   # r after
    assert cvc_tokens(*phones(("w", 3), ("iy", 9), ("d", 4))) == []             # w before
    assert cvc_tokens(*phones(("aa", 9), ("d", 4))) == []                       # utterance start
    assert cvc_tokens(*phones(("d", 3), ("ey", 6), ("ih", 5), ("t", 3))) == []  # vowel-vowel


def test_two_tokens_share_a_run():
    tokens = cvc_tokens(*phones(("k", 3), ("ae", 8), ("t", 2), ("s", 4), ("ih", 6), ("z", 5)))
    assert [t.vowel for t in tokens] == ["ae", "ih"]
    assert tokens[0].context == ("k", "ae", "t", "s")
    assert tokens[1].context == ("t", "s", "ih", "z")


def test_phone_classes_are_timit_symbols_and_disjoint():
    assert TIMIT_VOWELS <= set(TIMIT61) and TIMIT_FLANKS <= set(TIMIT61)
    assert not TIMIT_VOWELS & TIMIT_FLANKS


@needs_timit
def test_tokens_from_the_timit_sample():
    n = 0
    for phn in sorted(TIMIT.glob("*/*.phn")):
        starts, ends, labels = read_phn(phn)
        for tok in cvc_tokens(starts, ends, labels):
            assert tok.cut_start < tok.vowel_start < tok.vowel_end < tok.cut_end
            assert tok.context[0] in TIMIT_FLANKS and tok.context[-1] in TIMIT_FLANKS
            n += 1
    assert n > 100  # the 120 utterances hold a few hundred CVC vowels
