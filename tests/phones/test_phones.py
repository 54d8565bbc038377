"""Tests for aligner.phones.sets: the phone sets, the 61 -> 39 folding, detection and transcript reading."""

import re
from pathlib import Path

import numpy as np
import pytest

from aligner.errors import TranscriptError
from aligner.phones.sets import (
    ARPABET,
    ARPABET_TO_39,
    CLASSES39,
    SILENCE,
    TIMIT61,
    TIMIT61_TO_39,
    PhoneSet,
    detect_phone_set,
    get_phone_set,
)
from aligner.io.transcripts import read_phn, read_transcript

REPO = Path(__file__).resolve().parents[2]
from tests.conftest import TIMIT


def timit_phn_files() -> list[Path]:
    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT} (it lives beside the repo, not in it)")
    files = sorted(TIMIT.glob("*/*.phn"))
    assert files, f"no .phn files under {TIMIT}"
    return files


# --- the symbol tables --------------------------------------------------------------------


def test_table_sizes_and_order():
    assert len(TIMIT61) == len(set(TIMIT61)) == 61
    assert len(CLASSES39) == len(set(CLASSES39)) == 39
    assert len(ARPABET) == len(set(ARPABET)) == 39
    assert CLASSES39[-1] == SILENCE == "sil"
    assert list(CLASSES39[:-1]) == sorted(CLASSES39[:-1])


# Lee & Hon (1989) folding, spelled out independently of the module's table.
FOLDS = {
    "ao": "aa", "ax": "ah", "ax-h": "ah", "axr": "er", "hv": "hh", "ix": "ih", "el": "l",
    "em": "m", "en": "n", "nx": "n", "eng": "ng", "zh": "sh", "ux": "uw",
    "pcl": "sil", "tcl": "sil", "kcl": "sil", "bcl": "sil", "dcl": "sil", "gcl": "sil",
    "h#": "sil", "pau": "sil", "epi": "sil", "q": "sil",
}  # fmt: skip


@pytest.mark.parametrize("timit, folded", sorted(FOLDS.items()))
def test_timit_folds(timit, folded):
    assert TIMIT61_TO_39[timit] == folded
    assert get_phone_set("timit61").class_index(timit) == CLASSES39.index(folded)


def test_unfolded_timit_symbols_are_their_own_class():
    rest = set(TIMIT61) - set(FOLDS)
    assert len(rest) == 38 and rest == set(CLASSES39) - {"sil"}
    assert all(TIMIT61_TO_39[s] == s for s in rest)


def test_arpabet_maps_onto_the_classes():
    assert ARPABET_TO_39["ao"] == "aa" and ARPABET_TO_39["zh"] == "sh"
    assert set(ARPABET_TO_39.values()) == set(CLASSES39) - {"dx"}  # CMU has no flap
    arpabet = get_phone_set("arpabet")
    for spelling in ("AH0", "ah1", "Ah2", "AH", "ah"):
        assert arpabet.class_of(spelling) == "ah"
    for silence in ("sil", "sp", "SIL", "SP"):
        assert arpabet.class_index(silence) == CLASSES39.index("sil")
    assert arpabet.class_of("AO1") == "aa"


@pytest.mark.parametrize("bad", ["B1", "AH3", "AH12", "dx", "h#", "ax"])
def test_arpabet_rejects(bad):
    assert bad not in get_phone_set("arpabet")
    with pytest.raises(KeyError):
        get_phone_set("arpabet").class_index(bad)


def test_class_indices_vector():
    timit = get_phone_set("timit61")
    got = timit.class_indices(["h#", "ix", "ih", "q"])
    assert got.dtype == np.int64
    assert got.tolist() == [38, CLASSES39.index("ih"), CLASSES39.index("ih"), 38]


def test_validate():
    timit39 = get_phone_set("timit39")
    timit39.validate(["sil", "dx", "ah"], "x.txt")  # no error
    with pytest.raises(TranscriptError, match=r"x\.txt: unknown phone 'ax' \(symbol 2 of 3, line 7\) in the timit39"):
        timit39.validate(["sil", "ax", "ah"], "x.txt", lines=[1, 7, 9])
    with pytest.raises(TranscriptError, match="x.txt: transcript is empty"):
        timit39.validate([], "x.txt")


def test_get_phone_set():
    assert isinstance(get_phone_set("timit61"), PhoneSet)
    assert get_phone_set("ARPAbet").name == "arpabet"
    assert get_phone_set("auto", ["SH", "IY1"]).name == "arpabet"
    with pytest.raises(TranscriptError, match="unknown phone set 'klingon'"):
        get_phone_set("klingon")
    assert get_phone_set("IPA").code == "ipa" and get_phone_set("xsampa").code == "xsampa"  # any phone in them


# --- auto detection -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "symbols, expected",
    [
        ("h# sh iy hv ae dcl d h#", "timit61"),
        ("sh iy", "timit61"),  # lower-case ARPAbet without stress is also TIMIT-61 (same classes)
        ("sil SH IY1 HH AE1 D sp", "arpabet"),
        ("SH IY HH AE D", "arpabet"),
        ("sil sh iy0 sil", "arpabet"),
        ("sil sh dx ah sil", "timit39"),
        ("H# SH IY", "timit61"),
    ],
)
def test_detect(symbols, expected):
    assert detect_phone_set(symbols.split()).name == expected


def test_detect_names_the_first_unknown_symbol_and_the_sets():
    with pytest.raises(TranscriptError) as err:
        detect_phone_set(["sil", "aa", "xyz", "qq"], "t.txt")
    message = str(err.value)
    assert message.startswith("t.txt: unknown phone 'xyz' (symbol 3 of 4)")
    assert "timit61" in message and "arpabet" in message and "timit39" in message


def test_detect_mixed_sets():
    with pytest.raises(TranscriptError, match="mixes phone sets.*'h#'.*'sil'"):
        detect_phone_set(["h#", "aa", "sil"], "m.txt")


# --- read_transcript ----------------------------------------------------------------------


def test_inline_transcript():
    symbols, phone_set = read_transcript("sil DH AH0  K AE1 T\nsil")
    assert symbols == ["sil", "DH", "AH0", "K", "AE1", "T", "sil"]  # as written
    assert phone_set.name == "arpabet"


def test_plain_file(tmp_path):
    path = tmp_path / "utt.txt"
    path.write_text("h# dh ax\n\n  k ae tcl t h#\n")
    symbols, phone_set = read_transcript(path)
    assert symbols == ["h#", "dh", "ax", "k", "ae", "tcl", "t", "h#"]
    assert phone_set.name == "timit61"
    assert read_transcript(str(path))[0] == symbols  # a str path is read as a path too


def test_phn_file_times_ignored(tmp_path):
    path = tmp_path / "utt.phn"
    path.write_text("0 2200 h#\n2200 4280 sh\n4280 5472 iy\n5472 7000 h#\n")
    assert read_transcript(path) == (["h#", "sh", "iy", "h#"], get_phone_set("timit61"))


def test_phn_file_labels_only(tmp_path):
    path = tmp_path / "utt.phn"
    path.write_text("h#\nsh\niy\nh#\n")
    assert read_transcript(path)[0] == ["h#", "sh", "iy", "h#"]


def test_malformed_phn_line(tmp_path):
    path = tmp_path / "utt.phn"
    path.write_text("0 2200 h#\n2200 sh iy\n")
    with pytest.raises(TranscriptError, match=r"utt\.phn: line 2: expected 'start end label' or 'label'"):
        read_transcript(path)


def test_unknown_symbol_names_symbol_position_line_source_and_set(tmp_path):
    path = tmp_path / "utt.txt"
    path.write_text("sil DH AH0\nK AE1 TT\nsil\n")
    with pytest.raises(TranscriptError) as err:
        read_transcript(path, "arpabet")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: unknown phone 'TT' (symbol 6 of 7, line 2) in the arpabet phone set")


def test_unknown_symbol_inline_with_explicit_set():
    with pytest.raises(TranscriptError, match=r"inline transcript 'h# aa sil': unknown phone 'sil' \(symbol 3 of 3\) in the timit61"):
        read_transcript("h# aa sil", phone_set="timit61")


def test_explicit_phone_set_object():
    timit39 = get_phone_set("timit39")
    assert read_transcript("sil dx sil", timit39) == (["sil", "dx", "sil"], timit39)


@pytest.mark.parametrize("content", ["", "  \n\n \t\n"], ids=["empty", "blank"])
def test_empty_transcript_file(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_text(content)
    with pytest.raises(TranscriptError, match=f"^{re.escape(str(path))}: transcript is empty"):
        read_transcript(path)


def test_empty_inline_transcript():
    with pytest.raises(TranscriptError, match="transcript is empty"):
        read_transcript("   ")


def test_missing_transcript_files(tmp_path):
    with pytest.raises(TranscriptError, match="missing.phn: transcript not found"):
        read_transcript(tmp_path / "missing.phn")  # a Path is always a path
    with pytest.raises(TranscriptError, match="transcript not found"):
        read_transcript(str(tmp_path / "missing.txt"))  # a string that looks like a path
    with pytest.raises(TranscriptError, match="is a directory"):
        read_transcript(tmp_path)


def test_binary_transcript(tmp_path):
    path = tmp_path / "utt.txt"
    path.write_bytes(b"\xff\xfe\x00\x81 binary")
    with pytest.raises(TranscriptError, match="not UTF-8 text"):
        read_transcript(path)


def test_demo_transcript_in_the_repo():
    symbols, phone_set = read_transcript(REPO / "examples" / "demo.phones")
    assert phone_set.name == "arpabet"
    assert symbols[0] == symbols[-1] == "sil"
    assert len(symbols) == 36


# --- read_phn -----------------------------------------------------------------------------


def test_read_phn(tmp_path):
    path = tmp_path / "utt.phn"
    path.write_text("0 2200 h#\n2200 4280 sh\n\n4280 5472 iy\n")
    starts, ends, labels = read_phn(path)
    assert starts.dtype == ends.dtype == np.int64
    assert starts.tolist() == [0, 2200, 4280]
    assert ends.tolist() == [2200, 4280, 5472]
    assert labels == ["h#", "sh", "iy"]


@pytest.mark.parametrize(
    "content, problem",
    [
        ("0 2200 h#\n2200 sh\n", "line 2: expected 'start_sample end_sample phone'"),
        ("0 2200 h#\n2200 x4280 sh\n", "line 2: expected"),
        ("-5 2200 h#\n", "line 1: negative start sample -5"),
        ("0 2200 h#\n2200 2200 sh\n", "line 2: end sample 2200 is not after start sample 2200"),
        ("2200 4280 sh\n100 2200 h#\n", "line 2: start sample 100 is before the previous phone's start 2200"),
        ("\n\n", "phone alignment \\(.phn\\) is empty"),
    ],
)
def test_read_phn_errors(tmp_path, content, problem):
    path = tmp_path / "bad.phn"
    path.write_text(content)
    with pytest.raises(TranscriptError, match=f"^{re.escape(str(path))}: {problem}"):
        read_phn(path)


def test_read_phn_missing(tmp_path):
    with pytest.raises(TranscriptError, match="not found"):
        read_phn(tmp_path / "none.phn")


# --- the TIMIT sample ---------------------------------------------------------------------


def test_timit_sample_transcripts():
    files = timit_phn_files()
    seen = set()
    for phn in files:
        starts, ends, labels = read_phn(phn)
        assert labels[0] == labels[-1] == "h#", phn
        assert np.all(starts[1:] == ends[:-1]), f"{phn}: phones not contiguous"
        symbols, phone_set = read_transcript(phn)
        assert symbols == labels and phone_set.name == "timit61", phn
        seen.update(labels)
    assert seen <= set(TIMIT61)


def test_one_broad_class_table_covers_the_39_classes():
    from aligner.phones.sets import BROAD_CLASS_OF, BROAD_CLASSES, CLASSES39, GLIDE_CLASSES, VOWEL_CLASSES

    members = [c for cs in BROAD_CLASSES.values() for c in cs]
    assert sorted(members) == sorted(CLASSES39)  # every class exactly once
    assert BROAD_CLASS_OF["hh"] == "fricative" and "hh" not in GLIDE_CLASSES
    assert len(VOWEL_CLASSES) == 14 and BROAD_CLASS_OF["sil"] == "silence"


def test_cvc_flanks_and_vowels_come_from_the_table():
    from aligner.phones.sets import TIMIT61, TIMIT61_TO_39, BROAD_CLASS_OF
    from aligner.vowels.cvc import TIMIT_FLANKS, TIMIT_VOWELS

    assert TIMIT_VOWELS == {s for s in TIMIT61 if BROAD_CLASS_OF[TIMIT61_TO_39[s]] == "vowel"}
    assert not TIMIT_FLANKS & TIMIT_VOWELS and not {"hh", "hv", "l", "r", "w", "y"} & TIMIT_FLANKS
    assert {"bcl", "q", "dx", "nx", "zh"} <= TIMIT_FLANKS


def test_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.phones"
    path.write_bytes("\ufeffsil HH AH0 L OW1 sil\n".encode("utf-8"))
    symbols, _ = read_transcript(path)
    assert symbols[0] == "sil"
