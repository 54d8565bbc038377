"""Review pictures of an alignment: waveform, spectrogram and TextGrid tiers in one PNG.

:func:`plot_alignment` draws, top to bottom and on one time axis in seconds:

- the waveform of the recording (at 16 kHz, mono, as the aligner reads it);
- a grey-scale spectrogram as Praat draws one: 0 - 8000 Hz, frames every 5 ms
  (:data:`HOP_S`), a 25 ms Gaussian window (:data:`WINDOW_S`), 6 dB/octave pre-emphasis above
  50 Hz, power in dB, black at the loudest cell of the picture and white from
  :data:`DYNAMIC_RANGE_DB` below it;
- the TextGrid's interval tiers, one row each, labels centred in their intervals (a label too
  wide for its interval is drawn smaller, and left out when even that does not fit).

Every boundary is a vertical line in its tier and through the waveform and spectrogram; in an
overview, where a tier's boundaries lie closer than :data:`DENSE_PX` pixels on average, its lines
are thin and only those with a confidence below 0.5 cross the signal. With
per-boundary confidences - point tiers ``TIER confidence`` in the TextGrid (marks such as
``0.93`` at the interval starts, as ``aligner.io.exports.write_alignment(...,
confidence_tiers=True)`` writes them) or the aligner's CSV with a ``Confidence`` column - the
boundaries are coloured from red (probability 0) through orange to green (1), with a colour bar;
boundaries without a confidence are dark grey, and all are blue when there are no confidences.

matplotlib is an optional extra (``pip install "aligner[plot]"``); it is imported only when a
picture is drawn, and only its Agg (file) canvas is used: no GUI, no pyplot state.
"""

from __future__ import annotations

import csv
import io
import math
import os
from bisect import bisect_left
from pathlib import Path
from typing import Mapping, Sequence, Union

import numpy as np

from aligner.errors import AlignerError, TranscriptError

__all__ = ["plot_alignment", "MAX_DURATION_S", "HOP_S", "WINDOW_S", "MAX_FREQUENCY_HZ", "DYNAMIC_RANGE_DB"]

#: The longest stretch (seconds) drawn in one picture; longer ones are refused (labels and
#: boundaries would be illegible): draw a part with ``start_s``/``end_s``.
MAX_DURATION_S = 60.0
#: The shortest stretch (seconds) drawn.
MIN_DURATION_S = 0.05
#: Spectrogram frame step (seconds), window length (seconds, Gaussian as Praat's), top frequency
#: (Hz), dynamic range (dB below the picture's maximum drawn white) and pre-emphasis corner (Hz).
HOP_S = 0.005
WINDOW_S = 0.025
MAX_FREQUENCY_HZ = 8000.0
DYNAMIC_RANGE_DB = 60.0
PREEMPHASIS_HZ = 50.0
#: Picture defaults: width and row heights in inches, resolution in dots per inch.
WIDTH_IN = 12.0
DPI = 150
#: Largest picture side in pixels.
MAX_PIXELS = 20000
#: A tier whose boundaries lie closer than this (pixels, on average) is drawn as an overview:
#: thin lines, and only its boundaries with a confidence below 0.5 run through the signal.
DENSE_PX = 6.0
#: A confidence point (or CSV row) belongs to a boundary within this many seconds of it.
MATCH_TOLERANCE_S = 0.001

_EXTRA_HINT = 'pip install "aligner[plot]"'

# Row heights and margins in inches (scaled when a height is requested).
_TITLE_IN, _WAVE_IN, _SPEC_IN, _TIER_IN, _AXIS_IN, _GAP_IN = 0.42, 1.0, 2.3, 0.42, 0.5, 0.08
_LEFT_IN, _RIGHT_IN = 1.15, 0.25
_LABEL_PT, _MIN_LABEL_PT = 10.0, 6.0
_NO_CONFIDENCE_COLOUR = "#1f4fbf"  # Praat-like blue
_UNKNOWN_CONFIDENCE_COLOUR = "#555555"
#: red (p = 0), orange (0.5), yellow-green (0.75), green (1)
_CONFIDENCE_COLOURS = [(0.0, "#d7191c"), (0.5, "#f08c00"), (0.75, "#8db600"), (1.0, "#1a9641")]

Confidences = Union[str, os.PathLike, Mapping[str, Sequence[tuple[float, float]]], None]


class MissingExtraError(AlignerError):
    """The optional extra ``plot`` (matplotlib) is not installed."""


def _matplotlib():
    """``(Figure, FigureCanvasAgg, colors module)``; a one-line error naming the extra without it."""
    try:
        from matplotlib import colors
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError(f"drawing a picture needs matplotlib, the optional extra 'plot': "
                                f"{_EXTRA_HINT}") from None
    return Figure, FigureCanvasAgg, colors


# -- inputs ------------------------------------------------------------------------------------

def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _output_path(out_png, textgrid_path: Path, inputs: Sequence[Path]) -> Path:
    out = textgrid_path.with_suffix(".png") if out_png is None else Path(out_png)
    for item in inputs:
        if item is not None and _same_file(out, Path(item)):
            raise AlignerError(f"{out}: the picture would overwrite the input {item}; choose another output")
    if out.suffix.lower() != ".png":
        raise AlignerError(f"{out}: the picture is written as PNG; give an output name ending in .png")
    if out.is_dir():
        raise AlignerError(f"{out}: is a directory; give a .png file name")
    return out


def _time_range(audio_path: Path, duration_s: float, start_s, end_s) -> tuple[float, float]:
    """The stretch to draw, checked against the recording's ``duration_s`` (seconds)."""
    start = 0.0 if start_s is None else float(start_s)
    end = duration_s if end_s is None else float(end_s)
    where = f"{audio_path}: time range {start:g} - {end:g} s"
    if not (math.isfinite(start) and math.isfinite(end)):
        raise AlignerError(f"{where} is not finite")
    if start < 0 or start >= duration_s:
        raise AlignerError(f"{audio_path}: start {start:g} s lies outside the recording (0 - {duration_s:.3f} s)")
    if end > duration_s + 1e-3:
        raise AlignerError(f"{audio_path}: end {end:g} s lies outside the recording (0 - {duration_s:.3f} s)")
    end = min(end, duration_s)
    if end - start < MIN_DURATION_S:
        raise AlignerError(f"{where} is empty or shorter than {MIN_DURATION_S * 1000:g} ms; the end must "
                           f"come after the start")
    if end - start > MAX_DURATION_S + 1e-9:
        raise AlignerError(
            f"{where} lasts {end - start:.1f} s, longer than the {MAX_DURATION_S:g} s one legible picture "
            f"can show; draw a part of it, e.g. start {start:g} s, end {min(start + 10, duration_s):g} s "
            f"(--start/--end)")
    return start, end


def _read_tiers(textgrid_path: Path, tiers) -> tuple[list[tuple[str, list]], dict, float]:
    """``(interval tiers [(name, [Interval, ...])], confidence point tiers {tier: [(t, p)]}, xmax_s)``."""
    from aligner.io.textgrids import interval_tier, load_textgrid, tier_names

    grid = load_textgrid(textgrid_path)
    names = tier_names(grid, interval=True)
    if not names:
        points = tier_names(grid, interval=False)
        have = f" (point tiers only: {', '.join(map(repr, points))})" if points else ""
        raise TranscriptError(f"{textgrid_path}: TextGrid has no interval tier to draw{have}")
    if tiers is None:
        chosen = names
    else:
        chosen = [tiers] if isinstance(tiers, str) else list(tiers)
        if not chosen:
            raise TranscriptError(f"{textgrid_path}: no tier chosen to draw (it has {', '.join(map(repr, names))})")
    shown = [(name, interval_tier(grid, textgrid_path, name)) for name in chosen]

    confidences: dict[str, list[tuple[float, float]]] = {}
    for tier in grid.tiers:
        if hasattr(tier, "points") and tier.name.endswith(" confidence"):
            target = tier.name[: -len(" confidence")]
            if target not in chosen:
                continue
            marks = []
            for i, point in enumerate(tier.points, start=1):
                p = _probability(point.mark)
                if p is None:
                    raise TranscriptError(f"{textgrid_path}: point tier {tier.name!r}, point {i}: mark "
                                          f"{point.mark!r:.40} is not a probability between 0 and 1")
                marks.append((float(point.time), p))
            confidences[target] = marks
    return shown, confidences, float(grid.maxTime)


def _probability(text) -> float | None:
    try:
        p = float(str(text).strip())
    except ValueError:
        return None
    return p if 0.0 <= p <= 1.0 else None


def _read_confidence_csv(path: Path, tier_names_shown: Sequence[str]) -> dict:
    """``{tier: [(begin_s, p), ...]}`` from the aligner's CSV (``Begin,End,Label,Type,Speaker,
    Confidence``); a row's tier is ``SPEAKER - TYPE`` or ``TYPE``, whichever is drawn."""
    if not path.exists():
        raise AlignerError(f"{path}: confidence CSV not found")
    if path.is_dir():
        raise AlignerError(f"{path}: is a directory, not a confidence CSV")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise AlignerError(f"{path}: confidence CSV is not UTF-8 text") from None
    rows = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(rows, [])]
    missing = [c for c in ("Begin", "Type", "Confidence") if c not in header]
    if missing:
        raise AlignerError(f"{path}: not the aligner's CSV with confidences (no {', '.join(missing)} column; "
                           f"expected Begin,End,Label,Type,Speaker,Confidence)")
    col = {name: header.index(name) for name in header}
    out: dict[str, list[tuple[float, float]]] = {}
    for line_no, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise AlignerError(f"{path}: line {line_no}: {len(row)} columns, the header has {len(header)}")
        if not row[col["Confidence"]].strip():
            continue  # a tier without confidences
        p = _probability(row[col["Confidence"]])
        try:
            begin = float(row[col["Begin"]])
        except ValueError:
            begin = float("nan")
        if p is None or not math.isfinite(begin):
            raise AlignerError(f"{path}: line {line_no}: Begin {row[col['Begin']]!r:.20} and Confidence "
                               f"{row[col['Confidence']]!r:.20} must be seconds and a probability 0 - 1")
        kind = row[col["Type"]].strip()
        speaker = row[col["Speaker"]].strip() if "Speaker" in col else ""
        for name in (f"{speaker} - {kind}", kind):
            if name in tier_names_shown:
                out.setdefault(name, []).append((begin, p))
                break
    if not out:
        raise AlignerError(f"{path}: no row's Type (or 'Speaker - Type') names a drawn tier "
                           f"({', '.join(map(repr, tier_names_shown))}) or has a Confidence")
    return out


def _confidence_map(confidences: Confidences, textgrid_path: Path, shown, from_grid: dict) -> dict:
    if confidences is None:
        return from_grid
    if isinstance(confidences, (str, os.PathLike)):
        return _read_confidence_csv(Path(confidences), [name for name, _ in shown])
    out = {}
    for name, marks in dict(confidences).items():
        pairs = []
        for t, p in marks:
            q = _probability(p)
            if q is None:
                raise AlignerError(f"{textgrid_path}: tier {name!r}: confidence {p!r} is not a probability 0 - 1")
            pairs.append((float(t), q))
        out[name] = pairs
    return out


def _boundaries(intervals, confidence: Sequence[tuple[float, float]] | None, xmax: float):
    """``[(time_s, p or None), ...]``: the inner boundaries of a tier (interval starts other than
    the tier's start and the grid's end ``xmax``), each with the confidence of the point within
    :data:`MATCH_TOLERANCE_S` seconds of it."""
    marks = sorted(confidence or [])
    mark_times = [t for t, _ in marks]
    out = []
    first = intervals[0].start_s if intervals else 0.0
    for interval in intervals:
        t = interval.start_s
        if t <= first + 1e-9 or t >= xmax - 1e-9:
            continue
        p = None
        i = bisect_left(mark_times, t - MATCH_TOLERANCE_S)
        if i < len(marks) and abs(mark_times[i] - t) <= MATCH_TOLERANCE_S:
            p = marks[i][1]
        out.append((t, p))
    return out


def _check_confidences_match(conf: dict, shown, xmax: float, source: Path) -> None:
    """Refuse confidences of which fewer than half lie at a boundary of their tier (another
    alignment's); warn when some do not."""
    import warnings

    given = matched = 0
    for name, intervals in shown:
        marks = conf.get(name) or []
        given += len(marks)
        matched += sum(p is not None for _, p in _boundaries(intervals, marks, xmax))
    if 2 * matched < given:
        raise AlignerError(f"{source}: only {matched} of its {given} confidences lie at a boundary of the drawn "
                           f"tiers (within {MATCH_TOLERANCE_S * 1000:g} ms): is it the same alignment?")
    if matched < given:
        warnings.warn(f"{source}: {given - matched} of {given} confidences lie at no boundary of their tier "
                      f"and are not drawn", stacklevel=3)


# -- signal ------------------------------------------------------------------------------------

def _spectrogram(y: np.ndarray, sr: int, start_s: float, end_s: float):
    """``(power_db (frequencies, frames), frame_times_s, frequencies_hz)`` of ``y`` between
    ``start_s`` and ``end_s`` seconds: Gaussian windows of :data:`WINDOW_S` s centred every
    :data:`HOP_S` s, pre-emphasised, up to :data:`MAX_FREQUENCY_HZ`."""
    from scipy import fft as sp_fft

    n_win = int(round(WINDOW_S * sr)) // 2 * 2
    hop = max(1, int(round(HOP_S * sr)))
    n_fft = 1 << int(math.ceil(math.log2(n_win * 2)))
    first, last = int(round(start_s * sr)), int(round(end_s * sr))
    centres = np.arange(first, last + 1, hop)
    lo, hi = centres[0] - n_win // 2, centres[-1] + n_win // 2 + 1
    seg = np.zeros(hi - lo, dtype=np.float64)
    a, b = max(lo, 0), min(hi, len(y))
    seg[a - lo:b - lo] = y[a:b]
    alpha = math.exp(-2 * math.pi * PREEMPHASIS_HZ / sr)
    seg[1:] -= alpha * seg[:-1].copy()
    # Praat's Gaussian window: exp(-12 (t/T - 1/2)^2) over the window's physical length T
    x = (np.arange(n_win) + 0.5) / n_win - 0.5
    window = np.exp(-12.0 * x * x) - math.exp(-3.0)
    frames = np.lib.stride_tricks.sliding_window_view(seg, n_win)[::hop][: len(centres)]
    freqs = np.fft.rfftfreq(n_fft, 1.0 / sr)
    keep = freqs <= MAX_FREQUENCY_HZ + 1e-6
    power = np.empty((int(keep.sum()), len(centres)), dtype=np.float32)
    for i in range(0, len(centres), 2048):  # blocks: bounded memory for long stretches
        spec = sp_fft.rfft(frames[i:i + 2048] * window, n=n_fft, axis=1)
        power[:, i:i + 2048] = (spec.real ** 2 + spec.imag ** 2)[:, keep].T
    power_db = 10.0 * np.log10(np.maximum(power, 1e-20))
    return power_db, centres / sr, freqs[keep]


def _waveform(ax, y: np.ndarray, sr: int, start_s: float, end_s: float, width_px: int) -> None:
    """The waveform as a line, or as a min/max envelope when there are many samples per pixel."""
    first, last = int(round(start_s * sr)), min(int(round(end_s * sr)) + 1, len(y))
    seg = y[first:last].astype(np.float64)
    n_bins = max(width_px * 2, 1)
    if len(seg) > 4 * n_bins:
        edges = np.linspace(0, len(seg), n_bins + 1).astype(int)
        lows = np.minimum.reduceat(seg, edges[:-1])
        highs = np.maximum.reduceat(seg, edges[:-1])
        t = (first + (edges[:-1] + edges[1:]) / 2) / sr
        ax.fill_between(t, lows, highs, color="black", linewidth=0.4)
    else:
        ax.plot((first + np.arange(len(seg))) / sr, seg, color="black", linewidth=0.6)
    peak = float(np.max(np.abs(seg))) if len(seg) else 1.0
    peak = peak if peak > 0 else 1.0
    ax.set_ylim(-1.08 * peak, 1.08 * peak)
    ax.axhline(0.0, color="#999999", linewidth=0.4, zorder=0)


# -- picture -----------------------------------------------------------------------------------

def _boundary_colour(p, cmap, have_confidences: bool):
    if not have_confidences:
        return _NO_CONFIDENCE_COLOUR
    return _UNKNOWN_CONFIDENCE_COLOUR if p is None else cmap(p)


def _draw_labels(ax, intervals, start_s: float, end_s: float, renderer) -> None:
    """Each non-empty label centred in the visible part of its interval: shrunk down to
    ``_MIN_LABEL_PT`` points to fit; else written upright (rotated 90 degrees) when its interval
    is at least a line of text wide and the label fits in the row's height; else left out."""
    bbox = ax.get_window_extent(renderer)
    px_per_s = bbox.width / (end_s - start_s)
    for interval in intervals:
        label = interval.label.strip()
        lo, hi = max(interval.start_s, start_s), min(interval.end_s, end_s)
        if not label or hi <= lo:
            continue
        room = (hi - lo) * px_per_s - 3  # a little space beside the boundary lines
        if room <= 0:
            continue
        text = ax.text((lo + hi) / 2, 0.5, label, ha="center", va="center", fontsize=_LABEL_PT, clip_on=True)
        if _shrink_to_fit(text, renderer, room, bbox.height - 4, _LABEL_PT):
            continue
        text.set_rotation(90)
        if not _shrink_to_fit(text, renderer, room, bbox.height - 4, _LABEL_PT - 2):
            text.remove()


def _shrink_to_fit(text, renderer, max_width: float, max_height: float, size: float) -> bool:
    """Set ``text``'s font size to the largest (in half points, from ``size`` down to
    ``_MIN_LABEL_PT``) at which it fits ``max_width`` x ``max_height`` pixels; False if none does."""
    text.set_fontsize(size)
    while True:
        extent = text.get_window_extent(renderer)
        ratio = min(max_width / max(extent.width, 1e-9), max_height / max(extent.height, 1e-9))
        if ratio >= 1:
            return True
        size = min(size - 0.5, math.floor(size * ratio * 2) / 2)
        if size < _MIN_LABEL_PT:
            return False
        text.set_fontsize(size)


def plot_alignment(audio_path, textgrid_path, out_png=None, start_s: float | None = None,
                   end_s: float | None = None, tiers: Sequence[str] | str | None = None,
                   confidences: Confidences = None, width_in: float = WIDTH_IN,
                   height_in: float | None = None, dpi: int = DPI) -> Path:
    """Draw the waveform, spectrogram and interval tiers of an alignment to a PNG; return its path.

    ``audio_path``: the recording (any format :func:`aligner.io.audio.load_audio` reads; drawn
    at 16 kHz, so the spectrogram shows 0 - 8000 Hz). ``textgrid_path``: a Praat TextGrid.
    ``out_png``: the picture, a ``.png`` [the TextGrid's name with ``.png``, beside it]; it may
    not be the audio, the TextGrid or the confidence CSV. Written atomically (rendered in
    memory, written to a temporary file in the same directory, renamed over ``out_png``).

    ``start_s``, ``end_s``: the stretch to draw, in seconds [the whole recording]; it must lie
    within the recording, last at least :data:`MIN_DURATION_S` and at most
    :data:`MAX_DURATION_S` seconds. ``tiers``: names of the interval tiers to draw, top to
    bottom [all, in the file's order]. ``confidences``: per-boundary probabilities colouring the
    boundaries - None [the TextGrid's point tiers ``TIER confidence``, if any], the path of the
    aligner's CSV with a ``Confidence`` column, or ``{tier: [(time_s, probability), ...]}``;
    a probability belongs to the boundary within :data:`MATCH_TOLERANCE_S` seconds of its time.

    ``width_in``, ``height_in``: picture size in inches [12; 4.4 plus 0.42 per tier], ``dpi``:
    dots per inch [150]; the PNG is ``round(width_in * dpi)`` by ``round(height_in * dpi)``
    pixels (a requested height is shared out among the rows in their default proportions).

    Raises :class:`~aligner.errors.AlignerError` (one line, naming the file) for a missing
    matplotlib (:class:`MissingExtraError`), a missing or unreadable audio file or TextGrid, a
    TextGrid without interval tiers or without a requested tier, a time range outside the
    recording or too long, a bad confidence CSV, or an output path that is one of the inputs.
    """
    Figure, FigureCanvasAgg, mcolors = _matplotlib()
    from aligner.io.atomic import atomic_write_bytes
    from aligner.io.audio import SAMPLE_RATE, audio_duration, load_audio

    audio_path, textgrid_path = Path(audio_path), Path(textgrid_path)
    csv_path = Path(confidences) if isinstance(confidences, (str, os.PathLike)) else None
    out = _output_path(out_png, textgrid_path, [audio_path, textgrid_path, csv_path])
    width_in, dpi = float(width_in), int(dpi)
    if not (math.isfinite(width_in) and width_in > 0 and dpi > 0
            and (height_in is None or (math.isfinite(float(height_in)) and float(height_in) > 0))):
        raise AlignerError(f"{out}: width and height (inches) and dpi must be positive numbers")

    shown, grid_confidences, xmax = _read_tiers(textgrid_path, tiers)
    # the header's duration refuses a too-long range before the whole file is decoded
    start, end = _time_range(audio_path, audio_duration(audio_path), start_s, end_s)
    conf = _confidence_map(confidences, textgrid_path, shown, grid_confidences)
    y = load_audio(audio_path)
    sr = SAMPLE_RATE
    duration = len(y) / sr
    start, end = _time_range(audio_path, duration, start, min(end, duration))
    if xmax > duration + 0.01:
        import warnings

        warnings.warn(f"{textgrid_path}: the TextGrid lasts {xmax:.3f} s, longer than the recording "
                      f"{audio_path} ({duration:.3f} s): are they a pair?", stacklevel=2)

    # layout, in inches
    fixed = _TITLE_IN + _AXIS_IN + 2 * _GAP_IN
    rows_in = [_WAVE_IN, _SPEC_IN] + [_TIER_IN] * len(shown)
    natural = fixed + sum(rows_in)
    height = natural if height_in is None else float(height_in)
    if height <= fixed + 0.2 * len(rows_in):
        raise AlignerError(f"{out}: a height of {height:g} in is too small for {len(shown)} tier(s); "
                           f"give at least {fixed + 0.2 * len(rows_in) + 0.01:.1f} in")
    if max(width_in, height) * dpi > MAX_PIXELS:
        raise AlignerError(f"{out}: {width_in * dpi:.0f} x {height * dpi:.0f} pixels is too large "
                           f"(at most {MAX_PIXELS} a side); lower the size or the dpi")
    scale = (height - fixed) / sum(rows_in)
    rows_in = [r * scale for r in rows_in]

    fig = Figure(figsize=(width_in, height), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    left, right = _LEFT_IN / width_in, 1 - _RIGHT_IN / width_in

    def axes_at(top_in: float, h_in: float, **kw):
        return fig.add_axes((left, 1 - (top_in + h_in) / height, right - left, h_in / height), **kw)

    top = _TITLE_IN
    ax_wave = axes_at(top, rows_in[0])
    top += rows_in[0] + _GAP_IN
    ax_spec = axes_at(top, rows_in[1], sharex=ax_wave)
    top += rows_in[1] + _GAP_IN
    tier_axes = []
    for h in rows_in[2:]:
        tier_axes.append(axes_at(top, h, sharex=ax_wave))
        top += h

    width_px = int(round(width_in * dpi * (right - left)))
    _waveform(ax_wave, y, sr, start, end, width_px)
    ax_wave.set_yticks([])
    ax_wave.set_ylabel("waveform", rotation=0, ha="right", va="center")

    power_db, times, freqs = _spectrogram(y, sr, start, end)
    top_db = float(power_db.max())
    hop, df = HOP_S, freqs[1] - freqs[0]
    ax_spec.imshow(power_db, origin="lower", aspect="auto", cmap="Greys", interpolation="bilinear",
                   vmin=top_db - DYNAMIC_RANGE_DB, vmax=top_db,
                   extent=(times[0] - hop / 2, times[-1] + hop / 2, -df / 2, freqs[-1] + df / 2))
    ax_spec.set_ylim(0, MAX_FREQUENCY_HZ)
    ax_spec.set_yticks(np.arange(0, MAX_FREQUENCY_HZ + 1, 2000))
    ax_spec.set_yticklabels([f"{int(f / 1000)}" for f in np.arange(0, MAX_FREQUENCY_HZ + 1, 2000)], fontsize=8)
    ax_spec.set_ylabel("kHz", rotation=0, ha="right", va="center")

    _check_confidences_match(conf, shown, xmax, csv_path or textgrid_path)
    have_conf = any(conf.get(name) for name, _ in shown)
    cmap = mcolors.LinearSegmentedColormap.from_list("confidence", _CONFIDENCE_COLOURS)
    px_per_s = width_px / (end - start)
    per_tier, dense = {}, {}
    for k, (name, intervals) in enumerate(shown):
        per_tier[k] = [(t, p) for t, p in _boundaries(intervals, conf.get(name), xmax) if start < t < end]
        # boundaries closer than DENSE_PX on average would hide the signal: an overview
        dense[k] = len(per_tier[k]) > (end - start) * px_per_s / DENSE_PX
    # boundaries through the signal: every tier's (in an overview, a dense tier's only where
    # the confidence is below 0.5), the tier with most intervals (the phones) winning where two
    # tiers share a time
    signal_lines: dict[float, tuple] = {}
    for k in sorted(range(len(shown)), key=lambda k: len(shown[k][1])):  # coarse tiers first
        for t, p in per_tier[k]:
            if not dense[k] or (p is not None and p < 0.5):
                signal_lines[round(t, 4)] = (t, p)
    # the less confident a boundary, the wider its line and the higher it lies
    lines = sorted(signal_lines.values(), key=lambda tp: -1.0 if tp[1] is None else -tp[1])
    if lines:
        times = [t for t, _ in lines]
        colours = [_boundary_colour(p, cmap, have_conf) for _, p in lines]
        widths = [0.8 if p is None else 0.8 + 1.2 * (1.0 - p) for _, p in lines]
        for ax in (ax_wave, ax_spec):
            ax.vlines(times, 0, 1, transform=ax.get_xaxis_transform(), colors=colours, linewidths=widths,
                      alpha=0.85)

    for k, ax in enumerate(tier_axes):
        name, intervals = shown[k]
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        ax.set_ylabel(name, rotation=0, ha="right", va="center")
        if per_tier[k]:
            width = 0.5 if dense[k] else 1.6 if have_conf else 1.0
            ax.vlines([t for t, _ in per_tier[k]], 0, 1, linewidths=width,
                      colors=[_boundary_colour(p, cmap, have_conf) for _, p in per_tier[k]])
        _draw_labels(ax, intervals, start, end, renderer)

    for ax in [ax_wave, ax_spec] + tier_axes[:-1]:
        ax.tick_params(axis="x", labelbottom=False)
    bottom = tier_axes[-1] if tier_axes else ax_spec
    ax_wave.set_xlim(start, end)
    bottom.set_xlabel("time (s)")
    bottom.ticklabel_format(axis="x", useOffset=False, style="plain")

    fig.text(_LEFT_IN / width_in, 1 - 0.12 / height,
             f"{audio_path.name}  |  {textgrid_path.name}  |  {start:.3f} - {end:.3f} s",
             ha="left", va="top", fontsize=10)
    if have_conf:
        bar_w, bar_h = min(2.2, 0.25 * width_in), 0.1
        cax = fig.add_axes((right - bar_w / width_in, 1 - 0.2 / height, bar_w / width_in, bar_h / height))
        import matplotlib.cm as mcm

        bar = fig.colorbar(mcm.ScalarMappable(norm=mcolors.Normalize(0, 1), cmap=cmap), cax=cax,
                           orientation="horizontal", ticks=[0, 0.5, 1])
        bar.ax.tick_params(labelsize=7, length=2, pad=1)
        cax.text(-0.03, 0.5, "boundary confidence", transform=cax.transAxes, ha="right", va="center",
                 fontsize=8)

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    atomic_write_bytes(out, buffer.getvalue())
    return out
