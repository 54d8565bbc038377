"""Which transcripts are phones and which are words; TextGrid utterance segments."""

from pathlib import Path

import pytest

from aligner.errors import TranscriptError
from aligner.io.exports import write_alignment
from aligner.io.transcripts import TranscriptSegment, read_word_segments, transcript_kind

from tests.conftest import TIMIT

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text, kind", [("sil HH AH0 L OW1 sil", "phones"), ("h# sh iy h#", "phones"),
                                        ("She had your dark suit.", "words"), ("hello world", "words")])
def test_inline_kind_by_content(text, kind):
    assert transcript_kind(text) == kind


def test_file_kind_by_suffix_then_content(tmp_path):
    assert transcript_kind(REPO / "examples" / "demo.phones") == "phones"
    lab = tmp_path / "a.lab"
    lab.write_text("\ufeffhello world\n", encoding="utf-8")
    assert transcript_kind(lab) == "words"
    txt = tmp_path / "b.txt"
    txt.write_text("sil AA1 sil\n")
    assert transcript_kind(txt) == "phones"
    assert transcript_kind(txt, "words") == "words"  # an explicit kind wins
    with pytest.raises(ValueError, match="auto, words, phones"):
        transcript_kind(txt, "letters")


def test_timit_folder_has_both_and_phones_are_read_from_phn():
    utt = TIMIT / "dr1-fvmh0" / "sa1"
    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT}")
    assert transcript_kind(utt.with_suffix(".phn")) == "phones"
    assert transcript_kind(utt.with_suffix(".txt")) == "words"


def test_textgrid_segments_per_speaker(tmp_path):
    grid = write_alignment(tmp_path / "a.TextGrid", [("anna", [(0.5, 1.5, "hello there"), (2.0, 3.0, "  ")]),
                                                     ("ben", [(1.0, 2.5, "good morning")])], 3.0)
    segments = read_word_segments(grid)
    assert segments == [TranscriptSegment("hello there", 0.5, 1.5, "anna"),
                        TranscriptSegment("good morning", 1.0, 2.5, "ben")]
    one = write_alignment(tmp_path / "b.TextGrid", [("utterances", [(0.0, 1.0, "hi")])], 2.0)
    assert read_word_segments(one) == [TranscriptSegment("hi", 0.0, 1.0, None)]
    empty = write_alignment(tmp_path / "c.TextGrid", [("utterances", [])], 2.0)
    with pytest.raises(TranscriptError, match="no interval holds text"):
        read_word_segments(empty)


def test_overlapping_intervals_in_one_tier_are_refused(tmp_path):
    grid = tmp_path / "o.TextGrid"
    grid.write_text('File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = 3\ntiers? <exists>\n'
                    'size = 1\nitem []:\n    item [1]:\n        class = "IntervalTier"\n        name = "u"\n'
                    '        xmin = 0\n        xmax = 3\n        intervals: size = 2\n'
                    '        intervals [1]:\n            xmin = 0\n            xmax = 2\n            text = "a b"\n'
                    '        intervals [2]:\n            xmin = 1\n            xmax = 3\n            text = "c d"\n')
    with pytest.raises(TranscriptError, match="overlap"):
        read_word_segments(grid)
