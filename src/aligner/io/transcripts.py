"""Transcript files: phone transcripts (TIMIT ``.phn``, symbol lists, inline strings) and the text
reader behind them, with one-line errors that name the file."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aligner.errors import AlignerError, TranscriptError
from aligner.frames import SAMPLE_RATE
from aligner.phones.sets import PhoneSet, get_phone_set


def read_text(path: Path, what: str, error: type = AlignerError) -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark dropped); raises ``error`` naming the
    file when it is missing, a directory, unreadable or not UTF-8 (naming the line of the first
    bad byte). ``what`` names the kind of file ("transcript", ...)."""
    path = Path(path)
    if not path.exists():
        raise error(f"{path}: {what} not found")
    if path.is_dir():
        raise error(f"{path}: is a directory, not a {what}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the {what} as UTF-8") from None


_TRANSCRIPT_SUFFIXES = (".phn", ".phones", ".txt", ".lab")


def _describe_inline(text: str) -> str:
    short = " ".join(text.split())
    if len(short) > 40:
        short = short[:37] + "..."
    return f"inline transcript {short!r}"


def _looks_like_path(text: str) -> bool:
    """True if a string that names no existing file was probably meant as a file name."""
    tokens = text.split()
    if len(tokens) != 1:
        return False
    token = tokens[0]
    return ("/" in token or os.sep in token or token.lower().endswith(_TRANSCRIPT_SUFFIXES)
            or _FILE_NAME.match(token) is not None)


#: one token ending in a file extension of 2-10 letters or digits (``demo.phnoes``, ``a.wav``)
_FILE_NAME = re.compile(r"^\S+\.[A-Za-z][A-Za-z0-9]{1,9}$")
MISSING_TRANSCRIPT = "{}: transcript not found; check the file name (a transcript given inline is the text itself)"


_INT = re.compile(r"^[+-]?[0-9]+$")


def is_int(token: str) -> bool:
    return _INT.match(token) is not None


def _tokens_with_lines(text: str, strict_phn: bool, source: str) -> list[tuple[str, int]]:
    """Split a transcript into (symbol, 1-based line number) pairs.

    A line ``start end label`` (two integers and a symbol, as in TIMIT ``.phn``) yields its label;
    any other line yields all its whitespace-separated tokens. With ``strict_phn`` (a ``.phn``
    file) a line must be either ``start end label`` or a single label.
    """
    out: list[tuple[str, int]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if len(tokens) == 3 and is_int(tokens[0]) and is_int(tokens[1]):
            out.append((tokens[2], line_no))
        elif strict_phn and len(tokens) > 1:
            raise TranscriptError(
                f"{source}: line {line_no}: expected 'start end label' or 'label', got {line.strip()!r}"
            )
        else:
            out.extend((t, line_no) for t in tokens)
    return out


def read_transcript(
    source: str | os.PathLike, phone_set: str | PhoneSet = "auto"
) -> tuple[list[str], PhoneSet]:
    """Read a phone transcript and check its symbols against a phone set.

    ``source`` is a path to a TIMIT ``.phn`` file (``start end label`` lines, times ignored, or
    ``label`` lines), a path to a text file of whitespace/newline-separated symbols, or - if it
    is a string that names no existing file - the symbols themselves (``"sil dh ax sil"``).
    ``phone_set`` is a :class:`PhoneSet`, a set name, or ``"auto"`` (see :func:`detect_phone_set`).

    Returns the symbols as written (stress digits and case kept, so output labels match the
    input) and the phone set, whose :meth:`PhoneSet.class_index` maps each onto
    :data:`CLASSES39`. Raises :class:`TranscriptError` for a missing, empty or unreadable
    transcript, or a symbol outside the phone set (naming the symbol, its position and line).
    """
    if isinstance(source, os.PathLike) or (isinstance(source, str) and os.path.exists(source)):
        path = Path(source)
        name, from_file = str(path), True
        text = read_text(path, "transcript", TranscriptError)
        pairs = _tokens_with_lines(text, strict_phn=path.suffix.lower() == ".phn", source=name)
    elif isinstance(source, str):
        if _looks_like_path(source):
            raise TranscriptError(MISSING_TRANSCRIPT.format(source))
        name, from_file = _describe_inline(source), False
        pairs = _tokens_with_lines(source, strict_phn=False, source=name)
    else:
        raise TypeError(f"transcript source must be a path or a string, not {type(source).__name__}")

    symbols = [s for s, _ in pairs]
    if not symbols:
        raise TranscriptError(f"{name}: transcript is empty (no phone symbols)")
    if isinstance(phone_set, str):
        phone_set = get_phone_set(phone_set, symbols, name)
    phone_set.validate(symbols, name, lines=[line for _, line in pairs] if from_file else None)
    return symbols, phone_set


def read_phn(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a TIMIT ``.phn`` reference alignment.

    Each non-blank line is ``start end label`` with ``start``/``end`` in samples (16 kHz in
    TIMIT), ``end`` exclusive. Returns ``(starts, ends, labels)``: two int64 arrays in samples and
    the labels. Raises :class:`TranscriptError` naming the file and line for a missing or empty
    file, a malformed line, negative times, ``end <= start`` or a start before the previous one.
    """
    return read_sample_intervals(path, "phone alignment (.phn)", "phone")


def read_sample_intervals(path: str | os.PathLike, what: str, unit: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read ``start_sample end_sample label`` lines (TIMIT ``.phn``, ``.wrd``): ``(starts, ends,
    labels)``, int64 samples; starts must not decrease (intervals may overlap, as TIMIT's words
    do). ``what`` names the file kind and ``unit`` its entries in the one-line errors."""
    path = Path(path)
    text = read_text(path, what, TranscriptError)
    starts: list[int] = []
    ends: list[int] = []
    labels: list[str] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        where = f"{path}: line {line_no}"
        if len(tokens) != 3 or not (is_int(tokens[0]) and is_int(tokens[1])):
            raise TranscriptError(
                f"{where}: expected 'start_sample end_sample {unit}', got {line.strip()!r}"
            )
        start, end = int(tokens[0]), int(tokens[1])
        if start < 0:
            raise TranscriptError(f"{where}: negative start sample {start}")
        if end <= start:
            raise TranscriptError(f"{where}: end sample {end} is not after start sample {start}")
        if starts and start < starts[-1]:
            raise TranscriptError(
                f"{where}: start sample {start} is before the previous {unit}'s start {starts[-1]}"
            )
        starts.append(start)
        ends.append(end)
        labels.append(tokens[2])
    if not labels:
        raise TranscriptError(f"{path}: {what} is empty")
    return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64), labels


# --------------------------------------------------------------------------------------------
# Word transcripts: which kind a transcript is, and its segments

#: transcript kinds: ``phones`` (a phone sequence) or ``words`` (an orthographic transcript)
TRANSCRIPT_KINDS = ("auto", "words", "phones")
#: suffixes always read as phone transcripts (TIMIT ``.phn``, a list of symbols)
PHONE_SUFFIXES = (".phn", ".phones")
#: suffixes of orthographic transcripts beside the audio, in the order they are looked for
#: (Montreal Forced Aligner's ``.lab``/``.txt``, and TextGrids with utterance intervals)
WORD_SUFFIXES = (".lab", ".txt", ".textgrid")


@dataclass(frozen=True)
class TranscriptSegment:
    """One stretch of a recording to align from its words.

    ``text``: the words as written; ``start_s``/``end_s``: the stretch in seconds, or None for
    the whole recording; ``speaker``: the TextGrid tier it came from when the file has several
    speaker tiers, else None.
    """

    text: str
    start_s: float | None = None
    end_s: float | None = None
    speaker: str | None = None


def _is_path(source) -> bool:
    return isinstance(source, os.PathLike) or (isinstance(source, str) and os.path.exists(source))


def _looks_like_phones(text: str) -> bool:
    """True when every symbol of ``text`` belongs to one phone set (``sil HH AH0 L OW1``), or at
    least 4 symbols and 3 in 4 of them do (a phone list with a typo, which then fails naming
    the unknown symbol rather than being read as words)."""
    symbols = [s for s, _ in _tokens_with_lines(text, strict_phn=False, source="")]
    if not symbols:
        return False
    try:
        get_phone_set("auto", symbols, "")
        return True
    except TranscriptError:
        pass
    sets = [get_phone_set(name) for name in ("timit61", "timit39", "arpabet")]
    known = sum(any(s in ps for ps in sets) for s in symbols)
    return len(symbols) >= 4 and known >= 0.75 * len(symbols)


def transcript_kind(source, kind: str = "auto") -> str:
    """``"phones"`` or ``"words"``: the kind of transcript ``source`` (a path or an inline string).

    ``kind`` other than ``"auto"`` is returned as it is. Otherwise: ``.phn``/``.phones`` files
    are phones, TextGrids words; any other file or string is phones when every symbol belongs to
    one phone set (TIMIT-61, the 39 classes, ARPAbet with stress digits) and words otherwise.
    """
    if kind not in TRANSCRIPT_KINDS:
        raise ValueError(f"transcript kind must be one of {', '.join(TRANSCRIPT_KINDS)}, got {kind!r}")
    if kind != "auto":
        return kind
    if isinstance(source, (list, tuple)):
        return "phones"
    if isinstance(source, str) and not _is_path(source) and _looks_like_path(source):
        raise TranscriptError(MISSING_TRANSCRIPT.format(source))
    if _is_path(source):
        path = Path(source)
        suffix = path.suffix.lower()
        if suffix in PHONE_SUFFIXES:
            return "phones"
        if suffix == ".textgrid":
            return "words"
        text = read_text(path, "transcript", TranscriptError).lstrip("\ufeff")
        return "phones" if _looks_like_phones(text) else "words"
    return "phones" if _looks_like_phones(str(source)) else "words"


def read_word_segments(source, tier: str | None = None) -> list[TranscriptSegment]:
    """The segments of an orthographic transcript: a ``.lab``/``.txt`` file or an inline string
    (one segment, the whole recording), or a TextGrid whose interval tiers hold utterance
    transcripts (one segment per non-empty interval; the speaker is the tier's name when there
    are several tiers, as Montreal Forced Aligner reads them); ``tier``: that interval tier of
    the TextGrid alone.

    A ``.txt`` file whose first two words are whole numbers is taken as TIMIT's (its leading
    sample range is dropped). Raises :class:`TranscriptError` naming the file for an unreadable or non-UTF-8 file, a
    TextGrid without interval tiers or text, and overlapping intervals within one tier.
    """
    if not _is_path(source):
        return [TranscriptSegment(str(source))]
    path = Path(source)
    if path.suffix.lower() != ".textgrid":
        text = read_text(path, "transcript", TranscriptError).lstrip("\ufeff")
        head = text.split(maxsplit=2)
        if path.suffix.lower() == ".txt" and len(head) >= 2 and head[0].isdecimal() and head[1].isdecimal():
            text = head[2] if len(head) == 3 else ""  # TIMIT's leading sample range
        return [TranscriptSegment(text)]
    from aligner.io.textgrids import interval_tier, load_textgrid, tier_names

    grid = load_textgrid(path)
    names = tier_names(grid, interval=True)
    if not names:
        raise TranscriptError(f"{path}: no interval tier to read utterances from")
    if tier is not None:
        if tier not in names:
            raise TranscriptError(f"{path}: no interval tier {tier!r} (interval tiers: "
                                  f"{', '.join(map(repr, names))})")
        names = [tier]
    segments = []
    for name in names:
        cursor = -math.inf
        for start, end, label in sorted(interval_tier(grid, path, name)):
            if not label.strip():
                continue
            if start < cursor - 1e-6:
                raise TranscriptError(f"{path}: tier {name!r}: the interval {start:.3f}-{end:.3f} s "
                                      f"overlaps the one before it (ending at {cursor:.3f} s)")
            cursor = end
            segments.append(TranscriptSegment(label.strip(), start, end, name if len(names) > 1 else None))
    if not segments:
        raise TranscriptError(f"{path}: no interval holds text to align")
    return segments


def read_alignment(path: str | os.PathLike, sample_rate: int = SAMPLE_RATE) -> tuple[np.ndarray, list[str]]:
    """Phone start times (seconds) and labels of a reference or predicted alignment.

    ``path`` is a TIMIT ``.phn`` file (sample counts, divided by ``sample_rate``) or a Praat
    TextGrid, whose tier of phones is read (``phones`` or ``phone``, any case; without one, its
    first interval tier; :func:`~aligner.io.textgrids.find_phones_tier`). Intervals
    with an empty (or blank) label are gaps, not phones, and are skipped.

    Returns ``(boundaries_s, labels)``: a float64 array of each phone's start time in seconds,
    and the labels. Raises :class:`TranscriptError` naming the file when it cannot be read or
    holds no phones.
    """
    from aligner.io.textgrids import find_phones_tier, interval_tier, load_textgrid, tier_names

    path = Path(path)
    if path.suffix.lower() == ".phn":
        starts, _, labels = read_phn(path)
        return starts / float(sample_rate), labels

    grid = load_textgrid(path)
    names = tier_names(grid, interval=True)
    if not names:
        raise TranscriptError(f"{path}: TextGrid has no interval tier to read phones from")
    tier_name = find_phones_tier(names, path, fallback="first")
    phones = [(start, label) for start, _, label in interval_tier(grid, path, tier_name) if label.strip()]
    if not phones:
        raise TranscriptError(f"{path}: tier {tier_name!r} holds no labelled intervals")
    boundaries = np.array([start for start, _ in phones], dtype=np.float64)
    return boundaries, [label.strip() for _, label in phones]


_ZERO_LENGTH = re.compile(r"xmin\s*=\s*([-+0-9.eE]+)\s*xmax\s*=\s*([-+0-9.eE]+)\s*(?:text|mark)\s*=\s*\"((?:[^\"]|\"\")*)\"")


def read_reference_phones(path: str | os.PathLike, tier: str | None = None,
                          sample_rate: int = SAMPLE_RATE) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Hand-aligned phones to train on: ``(starts_s (K,), ends_s (K,), labels)``, every interval
    of the file in order, empty labels included (silence, as MFA and Praat write it).

    ``path``: a TIMIT ``.phn`` (sample counts at ``sample_rate``) or a Praat TextGrid, whose
    interval tier ``tier`` is read (None: ``phones`` or ``phone``, any case, else the only
    interval tier; :func:`~aligner.io.textgrids.find_phones_tier`), in any encoding Praat writes
    (UTF-8 with or without a byte-order mark, UTF-16). Raises
    :class:`TranscriptError` naming the file (and tier) for a missing tier, a tier with no
    labelled interval, a zero-length interval, or intervals that overlap or leave a gap.
    """
    from aligner.io.textgrids import find_phones_tier, interval_tier, load_textgrid, read_textgrid_text, tier_names

    path = Path(path)
    if path.suffix.lower() == ".phn":
        starts, ends, labels = read_phn(path)
        return starts / float(sample_rate), ends / float(sample_rate), labels
    grid = load_textgrid(path)
    tier = find_phones_tier(tier_names(grid, interval=True), path, tier)
    intervals = interval_tier(grid, path, tier)
    where = f"{path}: tier {tier!r}"
    text = read_textgrid_text(path)
    for a, b, label in _ZERO_LENGTH.findall(text):  # the textgrid package drops these silently
        try:
            zero = float(a) == float(b)
        except ValueError:
            continue
        if zero:
            raise TranscriptError(f"{path}: zero-length interval at {float(a):g} s ({label!r}); remove it or "
                                  "give it a duration")
    if not any(iv.label.strip() for iv in intervals):
        raise TranscriptError(f"{where} holds no labelled intervals")
    for prev, cur in zip(intervals, intervals[1:]):
        if cur.start_s < prev.end_s - 1e-6:
            raise TranscriptError(f"{where}: intervals overlap at {cur.start_s:g} s ({prev.label!r} ends at "
                                  f"{prev.end_s:g} s)")
        if cur.start_s > prev.end_s + 1e-6:
            raise TranscriptError(f"{where}: gap between {prev.end_s:g} and {cur.start_s:g} s; an interval "
                                  "tier must cover its time without gaps")
    starts = np.array([iv.start_s for iv in intervals], np.float64)
    ends = np.array([iv.end_s for iv in intervals], np.float64)
    return starts, ends, [iv.label for iv in intervals]
