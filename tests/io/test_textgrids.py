"""Tests for aligner.io.textgrids: atomic writes, TextGrid writing/reading, reference alignments."""

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest
import textgrid

from aligner.errors import TranscriptError
from aligner.io.transcripts import read_phn
from aligner.io.atomic import atomic_write_text
from aligner.io.textgrids import read_interval_tier, write_textgrid
from aligner.io.transcripts import read_alignment

from tests.conftest import TIMIT


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- atomic_write_text --------------------------------------------------------------------


def test_atomic_write_creates_parents_and_writes_exactly(tmp_path):
    path = tmp_path / "a" / "b" / "out.txt"
    atomic_write_text(path, "line 1\nʃ line 2\n")
    assert path.read_bytes() == "line 1\nʃ line 2\n".encode("utf-8")
    assert leftovers(path.parent) == []


def test_atomic_write_under_a_file_is_one_error_naming_it(tmp_path):
    from aligner.errors import OutputError

    (tmp_path / "a").write_text("a file, not a folder\n")
    for path in (tmp_path / "a" / "out.txt", tmp_path / "a" / "b" / "out.txt"):
        with pytest.raises(OutputError, match=r"out.txt: cannot write it .*a part of that path is a file"):
            atomic_write_text(path, "x")
    assert (tmp_path / "a").read_text() == "a file, not a folder\n"
    assert leftovers(tmp_path) == []


def test_atomic_write_into_a_folder_another_process_is_making(tmp_path, monkeypatch):
    """Two workers writing the first files of a new output folder: the folder appears between
    one worker's failed open and its check. The write goes on (it was refused as an output
    error, and align-corpus --jobs 2 failed one file of a fresh folder now and then); a folder
    that stays missing is still an error."""
    from aligner.errors import OutputError
    from aligner.io import atomic

    path = tmp_path / "new" / "out.txt"
    real_open = os.open
    calls = []

    def racing_open(name, flags, mode=0o777):
        calls.append(name)
        if len(calls) == 1:  # the folder is missing when this worker opens ...
            exc = FileNotFoundError(2, "No such file or directory", str(name))
            path.parent.mkdir()  # ... and the other worker makes it before this one looks
            raise exc
        return real_open(name, flags, mode)

    monkeypatch.setattr(atomic.os, "open", racing_open)
    atomic_write_text(path, "x")
    assert path.read_text() == "x" and len(calls) == 2 and leftovers(path.parent) == []

    def vanishing_open(name, flags, mode=0o777):
        raise FileNotFoundError(2, "No such file or directory", str(name))

    monkeypatch.setattr(atomic.os, "open", vanishing_open)
    with pytest.raises(OutputError, match="again.txt"):
        atomic_write_text(tmp_path / "new" / "again.txt", "x")


def test_atomic_write_replaces_an_existing_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old contents that are longer than the new ones\n")
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n"


def test_atomic_write_uses_ordinary_permissions(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    path = tmp_path / "out.txt"
    atomic_write_text(path, "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_failed_encode_leaves_old_file_and_no_temp(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(path, "ʃ cannot be ascii", encoding="ascii")
    assert path.read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_failed_replace_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_text("old\n")

    def broken_replace(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    from aligner.errors import OutputError

    with pytest.raises(OutputError, match=r"out.txt: cannot write it \(disk on fire\)"):
        atomic_write_text(path, "new\n")
    assert path.read_text() == "old\n"
    assert leftovers(tmp_path) == []


# --- write_textgrid -----------------------------------------------------------------------


def test_write_then_read_fills_gaps(tmp_path):
    path = tmp_path / "out" / "utt.TextGrid"
    phones = [(0.1, 0.25, "DH"), (0.25, 0.4, "AH0"), (0.6, 0.9, "sil")]
    write_textgrid(path, {"phones": phones, "words": [(0.1, 0.4, "the")]}, xmax=1.0)

    got = read_interval_tier(path, "phones")
    assert got == [(0.0, 0.1, ""), (0.1, 0.25, "DH"), (0.25, 0.4, "AH0"), (0.4, 0.6, ""),
                   (0.6, 0.9, "sil"), (0.9, 1.0, "")]  # fmt: skip
    assert read_interval_tier(path, "words") == [(0.0, 0.1, ""), (0.1, 0.4, "the"), (0.4, 1.0, "")]

    grid = textgrid.TextGrid.fromFile(str(path))
    assert [t.name for t in grid.tiers] == ["phones", "words"]
    assert grid.minTime == 0.0 and grid.maxTime == 1.0
    for tier in grid.tiers:
        assert tier.minTime == 0.0 and tier.maxTime == 1.0
        assert tier[0].minTime == 0.0 and tier[-1].maxTime == 1.0
        assert all(a.maxTime == b.minTime for a, b in zip(tier, tier[1:]))


def test_tiers_as_a_list_keep_their_order_and_empty_tier_is_one_interval(tmp_path):
    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, [("words", []), ("phones", [(0.0, 2.5, "a")])], xmax=2.5)
    grid = textgrid.TextGrid.fromFile(str(path))
    assert [t.name for t in grid.tiers] == ["words", "phones"]
    assert read_interval_tier(path, "words") == [(0.0, 2.5, "")]
    assert read_interval_tier(path, "phones") == [(0.0, 2.5, "a")]


def test_labels_with_quotes_and_unicode_survive(tmp_path):
    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, {"phones": [(0.0, 0.5, 'say "hi"'), (0.5, 1.0, "ʃɑː")]}, xmax=1.0)
    assert '"say ""hi"""' in path.read_text(encoding="utf-8")
    assert [label for _, _, label in read_interval_tier(path, "phones")] == ['say "hi"', "ʃɑː"]


def test_float_noise_is_snapped_not_an_error(tmp_path):
    path = tmp_path / "utt.TextGrid"
    frame_times = np.arange(4) * 0.01 + 0.0075  # boundaries as an aligner computes them
    intervals = [(0.0, frame_times[1], "a"), (frame_times[1] + 1e-12, frame_times[3], "b"),
                 (frame_times[3] - 1e-12, 0.1 + 1e-9, "c")]  # fmt: skip
    write_textgrid(path, {"phones": intervals}, xmax=0.1)
    got = read_interval_tier(path, "phones")
    assert [label for _, _, label in got] == ["a", "b", "c"]  # no sliver intervals
    assert got[-1][1] == 0.1


def test_written_file_is_long_format(tmp_path):
    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, {"phones": [(0.0, 1.0, "a")]}, xmax=1.0)
    text = path.read_text()
    assert text.startswith('File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = 1.0\n')
    assert "tiers? <exists>\nsize = 1\nitem []:\n" in text
    assert re.search(r'class = "IntervalTier"\n\s+name = "phones"', text)


@pytest.mark.parametrize(
    "intervals, xmax, problem",
    [
        ([(0.0, 0.5, "a"), (0.4, 0.8, "b")], 1.0, "interval 2: starts at 0.400000 s, before the previous interval's end"),
        ([(0.5, 0.8, "a"), (0.0, 0.3, "b")], 1.0, "interval 2: starts at 0.000000 s, before the previous"),
        ([(-0.1, 0.5, "a")], 1.0, "interval 1: starts at -0.100000 s, before 0"),
        ([(0.0, 1.5, "a")], 1.0, "interval 1: ends at 1.500000 s, after the grid's end"),
        ([(0.2, 0.2, "a")], 1.0, "interval 1: empty or reversed"),
        ([(0.5, 0.2, "a")], 1.0, "interval 1: empty or reversed"),
        ([(0.0, float("nan"), "a")], 1.0, "interval 1: times must be finite"),
        ([(0.0, 0.5, 3)], 1.0, "interval 1: label must be a string"),
        ([(0.0, 0.5)], 1.0, "interval 1: expected \\(start_s, end_s, label\\)"),
    ],
)
def test_invalid_intervals(tmp_path, intervals, xmax, problem):
    path = tmp_path / "bad.TextGrid"
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: tier 'phones', {problem}"):
        write_textgrid(path, {"phones": intervals}, xmax)
    assert not path.exists()


@pytest.mark.parametrize("xmax", [0.0, -1.0, float("inf")])
def test_invalid_xmax(tmp_path, xmax):
    with pytest.raises(ValueError, match="xmax must be a positive number of seconds"):
        write_textgrid(tmp_path / "bad.TextGrid", {"phones": []}, xmax)


def test_no_tiers(tmp_path):
    with pytest.raises(ValueError, match="at least one tier"):
        write_textgrid(tmp_path / "bad.TextGrid", {}, 1.0)


@pytest.mark.skipif(shutil.which("praat") is None, reason="praat is not installed")
def test_praat_reads_the_file(tmp_path):
    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, {"phones": [(0.1, 0.25, "ʃ"), (0.25, 0.4, 'a"b')], "words": []}, xmax=0.5)
    script = tmp_path / "check.praat"
    script.write_text(
        "form check\n  sentence file x\nendform\n"
        "Read from file: file$\n"
        "tiers = Get number of tiers\n"
        "intervals = Get number of intervals: 1\n"
        "first$ = Get label of interval: 1, 2\n"
        "second$ = Get label of interval: 1, 3\n"
        "end = Get end time of interval: 1, 3\n"
        'writeInfoLine: tiers, " ", intervals, " ", first$, " ", second$, " ", fixed$(end, 6)\n',
        encoding="utf-8",
    )
    out = subprocess.run(["praat", "--run", str(script), str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == '2 4 ʃ a"b 0.400000'


# --- read_interval_tier -------------------------------------------------------------------


def test_read_missing_file(tmp_path):
    path = tmp_path / "none.TextGrid"
    with pytest.raises(TranscriptError, match=f"^{re.escape(str(path))}: TextGrid not found$"):
        read_interval_tier(path, "phones")


@pytest.mark.parametrize(
    "content",
    ["not a textgrid at all\n", 'File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = oops\n', ""],
    ids=["text", "truncated", "empty"],
)
def test_read_unparsable_file(tmp_path, content):
    path = tmp_path / "bad.TextGrid"
    path.write_text(content)
    with pytest.raises(TranscriptError) as err:
        read_interval_tier(path, "phones")
    message = str(err.value)
    assert message.startswith(f"{path}: not a readable Praat TextGrid") and "\n" not in message


def test_read_missing_tier_lists_the_tiers(tmp_path):
    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, [("words", []), ("segments", [])], xmax=1.0)
    with pytest.raises(TranscriptError) as err:
        read_interval_tier(path, "phones")
    assert str(err.value) == f"{path}: tier 'phones' not found (interval tiers: 'words', 'segments')"


def test_read_short_format(tmp_path):
    path = tmp_path / "short.TextGrid"
    path.write_text(
        'File type = "ooTextFile short"\n"TextGrid"\n\n0\n1\n<exists>\n1\n'
        '"IntervalTier"\n"phones"\n0\n1\n2\n0\n0.4\n"a"\n0.4\n1\n"b"\n'
    )
    assert read_interval_tier(path, "phones") == [(0.0, 0.4, "a"), (0.4, 1.0, "b")]


# --- read_alignment -----------------------------------------------------------------------


def test_read_alignment_prefers_the_phones_tier_and_skips_gaps(tmp_path):
    path = tmp_path / "utt.TextGrid"
    tiers = [("words", [(0.1, 0.4, "the")]), ("phones", [(0.1, 0.25, "DH"), (0.25, 0.4, "AH0"), (0.5, 0.8, "sil")])]
    write_textgrid(path, tiers, xmax=1.0)
    boundaries, labels = read_alignment(path)
    assert boundaries.dtype == np.float64
    np.testing.assert_allclose(boundaries, [0.1, 0.25, 0.5])
    assert labels == ["DH", "AH0", "sil"]


def test_read_alignment_falls_back_to_the_first_interval_tier(tmp_path):
    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, [("segs", [(0.0, 0.3, "a"), (0.3, 1.0, "b")]), ("other", [(0.0, 1.0, "x")])], xmax=1.0)
    boundaries, labels = read_alignment(path)
    np.testing.assert_allclose(boundaries, [0.0, 0.3])
    assert labels == ["a", "b"]


def test_read_alignment_of_an_unlabelled_tier(tmp_path):
    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, {"phones": []}, xmax=1.0)
    with pytest.raises(TranscriptError, match="tier 'phones' holds no labelled intervals"):
        read_alignment(path)


def test_read_alignment_of_a_phn_file(tmp_path):
    path = tmp_path / "utt.PHN"
    path.write_text("0 2200 h#\n2200 4280 sh\n4280 5472 iy\n")
    boundaries, labels = read_alignment(path)
    np.testing.assert_allclose(boundaries, [0.0, 0.1375, 0.2675])
    assert labels == ["h#", "sh", "iy"]


def test_timit_phn_roundtrips_through_a_textgrid(tmp_path):
    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT} (it lives beside the repo, not in it)")
    phn = sorted(TIMIT.glob("*/*.phn"))[0]
    starts, ends, labels = read_phn(phn)
    boundaries, phn_labels = read_alignment(phn)
    np.testing.assert_array_equal(boundaries, starts / 16000)
    assert phn_labels == labels

    grid = tmp_path / "utt.TextGrid"
    intervals = [(s / 16000, e / 16000, label) for s, e, label in zip(starts, ends, labels)]
    write_textgrid(grid, {"phones": intervals}, xmax=ends[-1] / 16000)
    tg_boundaries, tg_labels = read_alignment(grid)
    assert tg_labels == labels
    np.testing.assert_allclose(tg_boundaries, boundaries, atol=1e-5)  # textgrid rounds to 10 us


# --- Praat's encodings, the short format, the phones tier by name -------------------------------

_LONG = ('File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = 1\ntiers? <exists>\nsize = 2\n'
         'item []:\n    item [1]:\n        class = "IntervalTier"\n        name = "word"\n        xmin = 0\n'
         '        xmax = 1\n        intervals: size = 1\n        intervals [1]:\n            xmin = 0\n'
         '            xmax = 1\n            text = "aʤa"\n    item [2]:\n        class = "IntervalTier"\n'
         '        name = "phone"\n        xmin = 0\n        xmax = 1\n        intervals: size = 3\n'
         '        intervals [1]:\n            xmin = 0\n            xmax = 0.3\n            text = ""\n'
         '        intervals [2]:\n            xmin = 0.3\n            xmax = 0.6\n            text = "d͡ʒ"\n'
         '        intervals [3]:\n            xmin = 0.6\n            xmax = 1\n            text = "ʃʲ"\n')
_SHORT = ('File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n1\n<exists>\n1\n"IntervalTier"\n"phones"\n'
          '0\n1\n3\n0\n0.3\n""\n0.3\n0.6\n"d͡ʒ"\n0.6\n1\n"ʃʲ"\n')


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16-le-bom", "utf-16-be-bom", "utf-16-le"])
@pytest.mark.parametrize("text", [_LONG, _SHORT], ids=["long", "short"])
def test_every_textgrid_reader_takes_praats_encodings(tmp_path, encoding, text):
    from aligner.io.transcripts import read_reference_phones

    path = tmp_path / "utt.TextGrid"
    if encoding.endswith("-bom"):
        codec = encoding[:-4]
        bom = "\ufeff".encode(codec)
        path.write_bytes(bom + text.encode(codec))
    else:
        path.write_bytes(text.encode(encoding))
    starts, ends, labels = read_reference_phones(path)
    np.testing.assert_allclose(starts, [0.0, 0.3, 0.6])
    assert labels == ["", "d͡ʒ", "ʃʲ"]
    boundaries, labels = read_alignment(path)  # aligner evaluate's reader
    np.testing.assert_allclose(boundaries, [0.3, 0.6])
    assert labels == ["d͡ʒ", "ʃʲ"]


def test_the_phones_tier_is_found_by_name_or_named(tmp_path):
    from aligner.io.transcripts import read_reference_phones

    path = tmp_path / "utt.TextGrid"
    write_textgrid(path, [("Words", [(0.0, 1.0, "ab")]), ("Phones", [(0.0, 0.5, "a"), (0.5, 1.0, "b")]),
                          ("ipa", [(0.0, 0.4, "ɐ"), (0.4, 1.0, "β")])], xmax=1.0)
    assert read_reference_phones(path)[2] == ["a", "b"]
    assert read_reference_phones(path, "ipa")[2] == ["ɐ", "β"]
    with pytest.raises(TranscriptError) as err:
        read_reference_phones(path, "segments")
    assert str(err.value) == f"{path}: tier 'segments' not found (interval tiers: 'Words', 'Phones', 'ipa')"
    write_textgrid(path, [("words", [(0.0, 1.0, "ab")]), ("Segments", [(0.0, 1.0, "a")])], xmax=1.0)
    assert read_reference_phones(path)[2] == ["a"]  # another name phones go by
    write_textgrid(path, [("words", [(0.0, 1.0, "ab")]), ("segs", [(0.0, 1.0, "a")])], xmax=1.0)
    with pytest.raises(TranscriptError) as err:
        read_reference_phones(path)
    assert str(err.value) == (f"{path}: no phones tier (interval tiers: 'words', 'segs'); name it with "
                              "--phones-tier")
    write_textgrid(path, [("phones", [])], xmax=1.0)
    with pytest.raises(TranscriptError, match=r"^\S+: tier 'phones' holds no labelled intervals$"):
        read_reference_phones(path)


def test_a_textgrid_that_is_no_text_is_one_line(tmp_path):
    path = tmp_path / "utt.TextGrid"
    path.write_bytes(b"\xfe\xff\xd8\x00\x00")  # a UTF-16 mark, then half a surrogate pair
    with pytest.raises(TranscriptError) as err:
        read_alignment(path)
    assert str(err.value).startswith(f"{path}: not a readable Praat TextGrid") and "\n" not in str(err.value)
