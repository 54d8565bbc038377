"""Alignment outputs in the three layouts users know from Montreal Forced Aligner.

An alignment is an ordered list of interval tiers ``[(tier_name, [(start_s, end_s, label),
...]), ...]`` over a recording of ``duration_s`` seconds; times in seconds. Tier names follow
MFA: ``words`` then ``phones`` for one speaker; ``SPEAKER - words``, ``SPEAKER - phones`` when
the input had several speaker tiers (:func:`tier_name`).

``textgrid``
    A long-format Praat TextGrid, every tier covering ``0 .. duration_s`` (gaps are written
    as empty intervals), :func:`aligner.io.textgrids.write_textgrid`.
``json``
    MFA's JSON: ``{"start": 0, "end": duration_s, "tiers": {name: {"type": "interval",
    "entries": [[start_s, end_s, label], ...]}}}``; only labelled intervals are listed.
``csv``
    MFA's CSV: header ``Begin,End,Label,Type,Speaker`` and one row per labelled interval, tier
    by tier; ``Type`` is the tier's kind (``words``, ``phones``) and ``Speaker`` the speaker
    (the file's stem when the input named none).

With per-boundary confidences (``confidences``: tier name -> one probability per interval,
that its start lies within 20 ms of an annotator's; :mod:`aligner.alignment.review.confidence`) the CSV
gets a ``Confidence`` column and each JSON entry a fourth element; a TextGrid gets a point tier
``TIER confidence`` per tier, a point at each interval's start marked with the probability,
when ``confidence_tiers`` is set.

Every file is written atomically (:mod:`aligner.io.atomic`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Sequence

from aligner.io.atomic import atomic_write_text
from aligner.io.textgrids import write_textgrid

FORMATS = ("textgrid", "json", "csv")
#: file suffix written for each format
SUFFIXES = {"textgrid": ".TextGrid", "json": ".json", "csv": ".csv"}
#: separator between speaker and tier kind in a tier name, as MFA writes it
SPEAKER_SEPARATOR = " - "


def tier_name(kind: str, speaker: str | None = None) -> str:
    """``kind`` (``words``/``phones``) for one speaker, ``SPEAKER - kind`` for one of several."""
    return kind if not speaker else f"{speaker}{SPEAKER_SEPARATOR}{kind}"


def _split_name(name: str, default_speaker: str) -> tuple[str, str]:
    if SPEAKER_SEPARATOR in name:
        speaker, kind = name.rsplit(SPEAKER_SEPARATOR, 1)
        return speaker, kind
    return default_speaker, name


def _confidence_of(confidences, name: str, n: int) -> list:
    values = (confidences or {}).get(name)
    if values is None:
        return [None] * n
    if len(values) != n:
        raise ValueError(f"tier {name!r}: {len(values)} confidences for {n} intervals")
    return list(values)


def alignment_json(tiers: Sequence[tuple[str, Sequence]], duration_s: float, confidences: dict | None = None) -> str:
    """MFA's JSON layout of ``tiers`` (module docstring); labelled intervals only, each with its
    confidence as a fourth element when ``confidences`` has the tier."""
    data = {"start": 0, "end": float(duration_s), "tiers": {}}
    for name, intervals in tiers:
        conf = _confidence_of(confidences, name, len(intervals))
        entries = []
        for (s, e, lab), c in zip(intervals, conf):
            if lab:
                entries.append([float(s), float(e), str(lab)] + ([] if c is None else [round(float(c), 4)]))
        data["tiers"][name] = {"type": "interval", "entries": entries}
    return json.dumps(data, ensure_ascii=False) + "\n"


def alignment_csv(tiers: Sequence[tuple[str, Sequence]], speaker: str, confidences: dict | None = None) -> str:
    """MFA's CSV layout of ``tiers``: ``Begin,End,Label,Type,Speaker`` (and ``Confidence`` when
    ``confidences`` is given); labelled intervals only. ``speaker`` is used for tiers whose name
    names none."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["Begin", "End", "Label", "Type", "Speaker"] + (["Confidence"] if confidences else []))
    for name, intervals in tiers:
        tier_speaker, kind = _split_name(name, speaker)
        conf = _confidence_of(confidences, name, len(intervals))
        for (s, e, lab), c in zip(intervals, conf):
            if lab:
                row = [f"{float(s):.4f}", f"{float(e):.4f}", lab, kind, tier_speaker]
                if confidences:
                    row.append("" if c is None else f"{float(c):.4f}")
                writer.writerow(row)
    return buffer.getvalue()


def confidence_point_tiers(tiers: Sequence[tuple[str, Sequence]], confidences: dict) -> list:
    """``[("TIER confidence", [(start_s, "0.93"), ...]), ...]``: a point at the start of each
    labelled interval of every tier that has confidences (Praat point tiers)."""
    out = []
    for name, intervals in tiers:
        if name not in (confidences or {}):
            continue
        conf = _confidence_of(confidences, name, len(intervals))
        points, last = [], -1.0
        for (s, _, lab), c in zip(intervals, conf):
            if lab and c is not None and float(s) > last:
                points.append((float(s), f"{float(c):.2f}"))
                last = float(s)
        out.append((f"{name} confidence", points))
    return out


def write_alignment(path: str | os.PathLike, tiers: Sequence[tuple[str, Sequence]], duration_s: float,
                    fmt: str = "textgrid", speaker: str | None = None, confidences: dict | None = None,
                    confidence_tiers: bool = False) -> Path:
    """Write ``tiers`` to ``path`` in format ``fmt`` (``textgrid``, ``json`` or ``csv``), atomically.

    ``speaker`` fills the CSV's ``Speaker`` column for tiers that name none (default: the stem of
    ``path``). ``confidences``: tier name -> one probability per interval (module docstring),
    written by CSV and JSON, and by a TextGrid as point tiers if ``confidence_tiers``.
    Returns ``path``.
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    tiers = [(name, list(intervals)) for name, intervals in tiers]
    if fmt == "textgrid":
        points = confidence_point_tiers(tiers, confidences) if confidence_tiers and confidences else []
        write_textgrid(path, tiers, xmax=duration_s, point_tiers=points)
    elif fmt == "json":
        atomic_write_text(path, alignment_json(tiers, duration_s, confidences))
    else:
        atomic_write_text(path, alignment_csv(tiers, speaker or path.stem, confidences))
    return path
