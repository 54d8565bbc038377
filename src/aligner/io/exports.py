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


def alignment_json(tiers: Sequence[tuple[str, Sequence]], duration_s: float) -> str:
    """MFA's JSON layout of ``tiers`` (module docstring); labelled intervals only."""
    data = {"start": 0, "end": float(duration_s), "tiers": {}}
    for name, intervals in tiers:
        data["tiers"][name] = {"type": "interval",
                               "entries": [[float(s), float(e), str(lab)] for s, e, lab in intervals if lab]}
    return json.dumps(data, ensure_ascii=False) + "\n"


def alignment_csv(tiers: Sequence[tuple[str, Sequence]], speaker: str) -> str:
    """MFA's CSV layout of ``tiers``: ``Begin,End,Label,Type,Speaker``; labelled intervals only.
    ``speaker`` is used for tiers whose name names none."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["Begin", "End", "Label", "Type", "Speaker"])
    for name, intervals in tiers:
        tier_speaker, kind = _split_name(name, speaker)
        for s, e, lab in intervals:
            if lab:
                writer.writerow([f"{float(s):.4f}", f"{float(e):.4f}", lab, kind, tier_speaker])
    return buffer.getvalue()


def write_alignment(path: str | os.PathLike, tiers: Sequence[tuple[str, Sequence]], duration_s: float,
                    fmt: str = "textgrid", speaker: str | None = None) -> Path:
    """Write ``tiers`` to ``path`` in format ``fmt`` (``textgrid``, ``json`` or ``csv``), atomically.

    ``speaker`` fills the CSV's ``Speaker`` column for tiers that name none (default: the stem of
    ``path``). Returns ``path``.
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    tiers = [(name, list(intervals)) for name, intervals in tiers]
    if fmt == "textgrid":
        write_textgrid(path, tiers, xmax=duration_s)
    elif fmt == "json":
        atomic_write_text(path, alignment_json(tiers, duration_s))
    else:
        atomic_write_text(path, alignment_csv(tiers, speaker or path.stem))
    return path
