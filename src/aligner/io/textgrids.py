"""Praat TextGrids: atomic writing, reading tiers. All times here are in seconds.

Reading a reference alignment (a TIMIT ``.phn`` or a TextGrid's phones) is
:func:`aligner.io.transcripts.read_alignment`: the transcript readers use this module, never
the other way round.
"""

from __future__ import annotations

import codecs
import importlib.util
import math
import os
import sys
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple, Sequence, Union

from aligner.errors import TranscriptError
from aligner.io.atomic import atomic_write_text

# textgrid (third-party) is needed only to read TextGrids: imported on first use (LazyLoader),
# not by every command that merely writes one (issue 15)
if "textgrid" in sys.modules:
    _textgrid = sys.modules["textgrid"]
else:
    _spec = importlib.util.find_spec("textgrid")
    if _spec is None or _spec.loader is None:
        raise ImportError("aligner needs the 'textgrid' package: pip install textgrid")
    _spec.loader = importlib.util.LazyLoader(_spec.loader)
    _textgrid = importlib.util.module_from_spec(_spec)
    sys.modules["textgrid"] = _textgrid
    _spec.loader.exec_module(_textgrid)
    del _spec

__all__ = ["write_textgrid", "read_interval_tier", "read_textgrid_text", "find_phones_tier", "PHONE_TIER_NAMES",
           "TIME_TOLERANCE"]

class Interval(NamedTuple):
    """One labelled interval of a tier, times in seconds."""

    start_s: float
    end_s: float
    label: str


Tiers = Union[Mapping[str, Sequence[Interval]], Sequence[tuple[str, Sequence[Interval]]]]

#: Two times closer than this (seconds; 1/60 of a sample at 16 kHz) are taken as equal when
#: checking that intervals touch, do not overlap and lie within the grid.
TIME_TOLERANCE = 1e-6


def _tier_items(tiers: Tiers) -> list[tuple[str, Sequence[Interval]]]:
    items = list(tiers.items()) if isinstance(tiers, Mapping) else [tuple(t) for t in tiers]
    for item in items:
        if len(item) != 2 or not isinstance(item[0], str):
            raise ValueError(f"each tier must be (tier_name, intervals), got {item!r:.80}")
    return items


def _complete_tier(path: Path, name: str, intervals: Iterable[Interval], xmax: float) -> list[Interval]:
    """Check one tier's intervals and fill the gaps with empty-label intervals to cover 0..xmax.

    Times within :data:`TIME_TOLERANCE` of a neighbour (or of 0 or ``xmax``) are snapped to it,
    so that float noise neither makes an overlap nor leaves a sliver of a gap.
    """
    out: list[Interval] = []
    cursor = 0.0  # end of the tier covered so far, in seconds
    for i, interval in enumerate(intervals, start=1):
        where = f"{path}: tier {name!r}, interval {i}"
        try:
            start, end, label = interval
            start, end = float(start), float(end)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: expected (start_s, end_s, label), got {interval!r:.80}") from None
        if not isinstance(label, str):
            raise ValueError(f"{where}: label must be a string, got {type(label).__name__}")
        if not (math.isfinite(start) and math.isfinite(end)):
            raise ValueError(f"{where}: times must be finite, got {start} .. {end}")
        if start < cursor - TIME_TOLERANCE:
            what = "before 0" if not out else f"before the previous interval's end {cursor:.6f} s"
            raise ValueError(f"{where}: starts at {start:.6f} s, {what}")
        if end > xmax + TIME_TOLERANCE:
            raise ValueError(f"{where}: ends at {end:.6f} s, after the grid's end xmax = {xmax:.6f} s")
        if start - cursor < TIME_TOLERANCE:
            start = cursor  # touches the previous interval (or 0) up to float noise
        end = min(end, xmax)
        if end - start < TIME_TOLERANCE:
            raise ValueError(f"{where}: empty or reversed interval {start:.6f} .. {end:.6f} s")
        if start > cursor:
            out.append((cursor, start, ""))
        out.append((start, end, label))
        cursor = end
    if xmax - cursor >= TIME_TOLERANCE or not out:
        out.append((cursor, xmax, ""))
    else:  # snap a last end within tolerance of xmax onto it
        start, _, label = out[-1]
        out[-1] = (start, xmax, label)
    return out


def _fmt_time(seconds: float) -> str:
    """A time in seconds, written exactly (shortest round-tripping decimal) as Praat reads it."""
    return repr(float(seconds))


def _fmt_text(label: str) -> str:
    """A Praat string literal: double quotes are escaped by doubling them."""
    return '"' + label.replace('"', '""') + '"'


def write_textgrid(path: str | os.PathLike, tiers: Tiers, xmax: float, point_tiers: Sequence = ()) -> None:
    """Write interval tiers as a long-format ("ooTextFile") Praat TextGrid, atomically.

    ``tiers`` maps tier names to intervals, or is a list of ``(tier_name, intervals)``; each
    interval is ``(start_s, end_s, label)`` in seconds. Intervals must be ordered and
    non-overlapping, within ``[0, xmax]`` seconds; gaps (and an empty tier) are filled with
    empty-label intervals so every tier covers ``0 .. xmax``. ``point_tiers``: Praat point
    tiers (``TextTier``) after them, ``[(tier_name, [(time_s, mark), ...]), ...]``, times
    within ``[0, xmax]`` and increasing. The file is UTF-8.

    Raises ValueError naming the file, tier and interval when the intervals break these rules.
    """
    path = Path(path)
    xmax = float(xmax)
    if not (math.isfinite(xmax) and xmax > 0):
        raise ValueError(f"{path}: TextGrid xmax must be a positive number of seconds, got {xmax}")
    items = _tier_items(tiers)
    if not items:
        raise ValueError(f"{path}: a TextGrid needs at least one tier")
    points = [(name, list(marks)) for name, marks in point_tiers]
    for name, marks in points:
        times = [float(t) for t, _ in marks]
        if any(not (0.0 <= t <= xmax) for t in times) or any(b <= a for a, b in zip(times, times[1:])):
            raise ValueError(f"{path}: point tier {name!r}: times must increase within 0 .. {xmax} s")

    lines = [
        'File type = "ooTextFile"',
        'Object class = "TextGrid"',
        "",
        "xmin = 0",
        f"xmax = {_fmt_time(xmax)}",
        "tiers? <exists>",
        f"size = {len(items) + len(points)}",
        "item []:",
    ]
    for tier_no, (name, intervals) in enumerate(items, start=1):
        filled = _complete_tier(path, name, intervals, xmax)
        lines += [
            f"    item [{tier_no}]:",
            '        class = "IntervalTier"',
            f"        name = {_fmt_text(name)}",
            "        xmin = 0",
            f"        xmax = {_fmt_time(xmax)}",
            f"        intervals: size = {len(filled)}",
        ]
        for i, (start, end, label) in enumerate(filled, start=1):
            lines += [
                f"        intervals [{i}]:",
                f"            xmin = {_fmt_time(start)}",
                f"            xmax = {_fmt_time(end)}",
                f"            text = {_fmt_text(label)}",
            ]
    for tier_no, (name, marks) in enumerate(points, start=len(items) + 1):
        lines += [
            f"    item [{tier_no}]:",
            '        class = "TextTier"',
            f"        name = {_fmt_text(name)}",
            "        xmin = 0",
            f"        xmax = {_fmt_time(xmax)}",
            f"        points: size = {len(marks)}",
        ]
        for i, (time_s, mark) in enumerate(marks, start=1):
            lines += [
                f"        points [{i}]:",
                f"            number = {_fmt_time(float(time_s))}",
                f"            mark = {_fmt_text(str(mark))}",
            ]
    atomic_write_text(path, "\n".join(lines) + "\n")


#: the names a tier of phones goes by, compared stripped and in lower case, in order of preference
#: (Praat's and MFA's ``phones``; some corpora write ``phone``, ``phonemes`` or ``segments``)
PHONE_TIER_NAMES = ("phones", "phone", "phonemes", "phoneme", "segments", "segment")


def textgrid_encoding(raw: bytes) -> str:
    """The text encoding of a TextGrid file's bytes ``raw``: ``utf-8-sig`` after a UTF-8
    byte-order mark, ``utf-16`` after a UTF-16 one (either byte order; Praat saves any file with a
    non-ASCII label so), ``utf-16-le``/``utf-16-be`` for UTF-16 without a mark (its ASCII header
    then has a zero byte after or before every letter), else ``utf-8``."""
    if raw.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    head = raw[:64]
    if len(head) >= 8:
        if head[1::2].count(0) == len(head) // 2:
            return "utf-16-le"
        if head[0::2].count(0) == (len(head) + 1) // 2:
            return "utf-16-be"
    return "utf-8"


def _textgrid_bytes(path: Path) -> bytes:
    if not path.exists():
        raise TranscriptError(f"{path}: TextGrid not found")
    if path.is_dir():
        raise TranscriptError(f"{path}: is a directory, not a TextGrid")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read TextGrid ({exc.strerror or exc})") from None


def read_textgrid_text(path: str | os.PathLike) -> str:
    """The text of a TextGrid file in any of the encodings Praat writes (:func:`textgrid_encoding`),
    its byte-order mark dropped; :class:`TranscriptError` naming the file when it is missing or
    does not decode."""
    path = Path(path)
    raw = _textgrid_bytes(path)
    encoding = textgrid_encoding(raw)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not a readable Praat TextGrid (not {encoding.replace('-sig', '')} text at "
                              f"byte {exc.start})") from None


def find_phones_tier(names: Sequence[str], path, tier: str | None = None, fallback: str = "only") -> str:
    """The name, among a TextGrid's interval tiers ``names``, of its tier of phones: ``tier`` when
    given, else the first named as :data:`PHONE_TIER_NAMES` say (any case), else by ``fallback``:
    ``"only"`` the file's one interval tier, ``"first"`` its first interval tier; otherwise an error
    that names the file, lists its tiers and points at ``--phones-tier``."""
    if tier is not None:  # :func:`interval_tier` names the file and lists its tiers when it has no such tier
        return tier
    listed = ", ".join(map(repr, names)) or "none"
    for wanted in PHONE_TIER_NAMES:
        for name in names:
            if name.strip().lower() == wanted:
                return name
    if names and (fallback == "first" or (fallback == "only" and len(names) == 1)):
        return names[0]
    raise TranscriptError(f"{path}: no phones tier (interval tiers: {listed}); name it with --phones-tier")


def load_textgrid(path: Path) -> _textgrid.TextGrid:
    """A TextGrid file parsed (long or short text format, in any encoding of
    :func:`textgrid_encoding`); :class:`TranscriptError` naming the file when it cannot be."""
    path = Path(path)
    encoding = textgrid_encoding(_textgrid_bytes(path))
    grid = _textgrid.TextGrid()
    try:
        grid.read(str(path), encoding=encoding)
    # The textgrid package signals malformed input with whatever its parser trips on
    # (TextGridError, ValueError, AttributeError, IndexError, EOFError, UnicodeError ...).
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, ValueError) and len(exc.args) == 2 and all(
                hasattr(iv, "minTime") for iv in exc.args):  # the textgrid package's overlap signal
            a, b = exc.args
            raise TranscriptError(f"{path}: two intervals of one tier overlap ({a.minTime:g}-{a.maxTime:g} s "
                                  f"{a.mark!r} and {b.minTime:g}-{b.maxTime:g} s {b.mark!r})") from None
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise TranscriptError(f"{path}: not a readable Praat TextGrid ({reason:.120})") from None
    return grid


def tier_names(grid: _textgrid.TextGrid, interval: bool) -> list[str]:
    return [t.name for t in grid.tiers if isinstance(t, _textgrid.IntervalTier) == interval]


def interval_tier(grid: _textgrid.TextGrid, path: Path, tier_name: str) -> list[Interval]:
    for tier in grid.tiers:
        if tier.name == tier_name and isinstance(tier, _textgrid.IntervalTier):
            return [Interval(float(iv.minTime), float(iv.maxTime), str(iv.mark)) for iv in tier]
    intervals, points = tier_names(grid, interval=True), tier_names(grid, interval=False)
    have = f"interval tiers: {', '.join(map(repr, intervals)) or 'none'}"
    if points:
        have += f"; point tiers: {', '.join(map(repr, points))}"
    kind = "is a point tier, not an interval tier" if tier_name in points else "not found"
    raise TranscriptError(f"{path}: tier {tier_name!r} {kind} ({have})")


def read_interval_tier(path: str | os.PathLike, tier_name: str) -> list[Interval]:
    """The intervals ``(start_s, end_s, label)`` of the interval tier ``tier_name``, in seconds.

    Read with the ``textgrid`` package (long or short format; times rounded to 10 microseconds;
    zero-length intervals dropped). Raises :class:`TranscriptError` naming the file for a
    missing or unparsable file, and for a missing tier (listing the tiers the file has).
    """
    path = Path(path)
    return interval_tier(load_textgrid(path), path, tier_name)
