"""Tests for aligner.words.normalize: the documented transcript normalisation rules."""

import importlib.util

import pytest

from aligner.errors import TranscriptError
from aligner.words.dictionary import PronouncingDictionary
from aligner.words.normalize import Token, normalize_transcript, read_words_transcript, words_of

needs_num2words = pytest.mark.skipif(
    importlib.util.find_spec("num2words") is None,
    reason="the 'num2words' package (numbers written in digits) is not installed: pip install num2words",
)

# A small dictionary standing in for CMU, so these tests need no data package.
DICT = PronouncingDictionary({
    "merry-go-round": ["M EH1 R IY0 G OW0 R AW2 N D"], "'em": ["AH0 M"], "dogs'": ["D AO1 G Z"],
    "mr.": ["M IH1 S T ER0"], "a.m.": ["EY2 EH1 M"], "cafe": ["K AH0 F EY1"], "don't": ["D OW1 N T"],
})


def words(text, dictionary=None):
    return words_of(normalize_transcript(text, dictionary))


def test_case_and_punctuation():
    assert words('"Hello," she said. (Yes)! Don\u2019t--stop...') == ["hello", "she", "said", "yes", "don't", "stop"]


def test_apostrophes():
    assert words("don't o'clock 'em dogs' 'quoted'") == ["don't", "o'clock", "em", "dogs", "quoted"]
    assert words("don't o'clock 'em dogs' 'quoted'", DICT) == ["don't", "o'clock", "'em", "dogs'", "quoted"]


def test_hyphens_periods_and_ampersand():
    assert words("merry-go-round blue-green", DICT) == ["merry-go-round", "blue", "green"]
    assert words("merry-go-round") == ["merry", "go", "round"]
    assert words("Mr. Smith at 9 a.m.", DICT)[:2] == ["mr.", "smith"]
    assert words("a.m. U.S.") == ["a", "m", "u", "s"]
    assert words("AT&T R & D") == ["at", "and", "t", "r", "and", "d"]
    assert words("and/or yes\u2014no") == ["and", "or", "yes", "no"]


def test_accents_fall_back_to_dictionary_form():
    assert words("Caf\u00e9", DICT) == ["cafe"]
    assert words("Caf\u00e9") == ["caf\u00e9"]


@needs_num2words
@pytest.mark.parametrize("text, expected", [
    ("42", "forty two"),
    ("1999", "nineteen ninety nine"),
    ("1999.", "nineteen ninety nine"),
    ("2005", "two thousand five"),
    ("1500", "fifteen hundred"),
    ("2100", "two thousand one hundred"),  # outside 1100-2099: cardinal
    ("1,999", "one thousand nine hundred ninety nine"),  # comma: cardinal, not a year
    ("101", "one hundred one"),
    ("3rd", "third"),
    ("1st 2nd 21st", "first second twenty first"),
    ("3.14", "three point one four"),
    ("12.50", "twelve point five zero"),
    ("50%", "fifty percent"),
    ("$12", "twelve dollars"),
    ("$1", "one dollar"),
    ("$12.50", "twelve dollars fifty cents"),
    ("$0.05", "five cents"),
    ("-5", "minus five"),
    ("&", "and"),
    ("covid-19", "covid nineteen"),
    ("1990s mp3", "1990s mp3"),  # left alone: reported as unknown words
])
def test_numbers(text, expected):
    assert words(text) == expected.split()


@needs_num2words
def test_original_token_kept_for_labels():
    tokens = normalize_transcript("I'm 42, ok")
    assert tokens == [Token("i'm", "I'm", 0), Token("forty", "42,", 1), Token("two", "42,", 1),
                      Token("ok", "ok", 2)]


def test_annotations():
    tokens = normalize_transcript("well [laughter] {LG} <unk> [Background noise] yes")
    assert [t.word for t in tokens] == ["well", "[laughter]", "{lg}", "<unk>", "[background_noise]", "yes"]
    assert [t.annotation for t in tokens] == [False, True, True, True, True, False]
    assert tokens[4].original == "[Background noise]" and tokens[5].index == 5
    assert words("well [laughter] yes") == ["well", "yes"]


def test_punctuation_only_is_empty():
    assert normalize_transcript("") == []
    assert normalize_transcript(" -- ... ?! ") == []


def test_read_timit_txt_strips_sample_numbers(tmp_path):
    path = tmp_path / "sa1.txt"
    path.write_text("0 46797 She had your dark suit in greasy wash water all year.\n")
    tokens = read_words_transcript(path)
    assert words_of(tokens) == "she had your dark suit in greasy wash water all year".split()
    assert tokens[0] == Token("she", "She", 0)


@needs_num2words
def test_read_keeps_leading_numbers_when_not_txt(tmp_path):
    path = tmp_path / "utt.lab"
    path.write_bytes("\ufeff0 46797 She".encode())  # BOM accepted
    assert words_of(read_words_transcript(path))[:1] == ["zero"]


def test_read_errors(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("0 12345 ... [noise]\n")
    with pytest.raises(TranscriptError, match="no words to align"):
        read_words_transcript(empty)
    bad = tmp_path / "bad.lab"
    bad.write_bytes(b"caf\xe9\n")
    with pytest.raises(TranscriptError) as e:
        read_words_transcript(bad)
    assert str(e.value).startswith(f"{bad}:1: not UTF-8") and "\n" not in str(e.value)
    with pytest.raises(TranscriptError, match="not found"):
        read_words_transcript(tmp_path / "missing.lab")
