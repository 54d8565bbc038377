"""Reader for the AutoVowelDuration (AVD) feature and label format (Adi et al. 2016).

The peer tool AutoVowelDuration stores one example as two text files:

``<id>.data``
    No header; one row per 5 ms frame (row ``f`` is time ``f * 5`` ms); values separated by
    spaces; ``nan`` marks a missing value. The tutorial files have 22 columns (the peer's
    front end: energies, Wiener entropy, autocorrelation, pitch, voicing, zero crossings,
    phone-classifier probabilities, cepstral distances, formants); a whole-recording file
    may have 20. Some columns are entirely ``nan`` in some files (e.g. the nasal
    probability when the classifier was not run).

    **NaN handling**: :func:`read_avd_features` replaces every ``nan`` by ``0.0``, as the
    peer's own reader does (so the returned array is always finite). Pass
    ``nan_to_zero=False`` to keep them. ``inf`` is never accepted.

``<id>.labels``
    Line 1 is the constant ``1 2``; line 2 is ``onset offset`` as frame indices
    (``onset = ceil(t_on * 200)``, ``offset = floor(t_off * 200)``). Integral floats such as
    ``90.0`` are accepted.

``train.txt`` / ``test.txt``
    One example per line: ``feat/<id>.data lab/<id>.labels``, paths relative to a root.

Every malformed input raises :class:`~aligner.errors.FeatureError` with a one-line message
naming the file (and the line, where there is one).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Union

import numpy as np

from aligner.errors import FeatureError
from aligner.textfiles import read_text

PathLike = Union[str, Path]

__all__ = ["read_avd_features", "read_avd_labels", "read_avd_list", "read_avd_example"]


def read_avd_features(path: PathLike, nan_to_zero: bool = True) -> np.ndarray:
    """Read an AVD ``.data`` file: float64 array of shape (T, C), one row per 5 ms frame.

    ``nan`` values become 0.0 (the peer's reader does the same) unless ``nan_to_zero`` is
    False. Blank lines are skipped (a trailing newline is normal).

    Raises:
        FeatureError: missing/unreadable file, no rows, a value that is not a number
            (or is infinite), or rows of different lengths (ragged) - naming file and line.
    """
    path = Path(path)
    text = read_text(path, "feature file", FeatureError)
    rows = []
    n_cols = None
    first_line = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        try:
            values = [float(v) for v in fields]
        except ValueError:
            bad = next(v for v in fields if not _is_float(v))
            raise FeatureError(f"{path}, line {lineno}: {bad[:40]!r} is not a number") from None
        if any(math.isinf(v) for v in values):
            raise FeatureError(f"{path}, line {lineno}: infinite value")
        if n_cols is None:
            n_cols, first_line = len(values), lineno
        elif len(values) != n_cols:
            raise FeatureError(f"{path}, line {lineno}: {len(values)} values but line {first_line} "
                               f"has {n_cols} (ragged rows)")
        rows.append(values)
    if not rows:
        raise FeatureError(f"{path}: no feature rows (empty file)")
    out = np.asarray(rows, dtype=np.float64)
    if nan_to_zero:
        np.nan_to_num(out, copy=False, nan=0.0)
    return out


def _is_float(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def read_avd_labels(path: PathLike, n_frames: Optional[int] = None) -> tuple[int, int]:
    """Read an AVD ``.labels`` file: ``(onset, offset)`` frame indices from its line 2.

    Line 1 (the constant ``1 2``) must be present but is not interpreted. With
    ``n_frames`` given, both frames must lie in ``[0, n_frames)``.

    Raises:
        FeatureError: missing file, fewer than two lines, line 2 not two integers,
            ``onset >= offset``, a negative frame, or a frame beyond ``n_frames``.
    """
    path = Path(path)
    lines = [ln for ln in read_text(path, "label file", FeatureError).splitlines() if ln.strip()]
    if len(lines) < 2:
        raise FeatureError(f"{path}: expected 2 lines ('1 2', then 'onset offset'), got {len(lines)}")
    fields = lines[1].split()
    if len(fields) != 2:
        raise FeatureError(f"{path}, line 2: expected 'onset offset' (2 values), got {len(fields)} values")
    frames = []
    for v in fields:
        try:
            f = float(v)
        except ValueError:
            raise FeatureError(f"{path}, line 2: {v[:40]!r} is not a number") from None
        if not math.isfinite(f) or f != round(f):
            raise FeatureError(f"{path}, line 2: {v!r} is not an integer frame index")
        frames.append(int(round(f)))
    onset, offset = frames
    if onset < 0:
        raise FeatureError(f"{path}, line 2: onset {onset} is negative")
    if offset <= onset:
        raise FeatureError(f"{path}, line 2: offset {offset} is not after onset {onset}")
    if n_frames is not None and offset >= n_frames:
        raise FeatureError(
            f"{path}, line 2: offset frame {offset} is out of range (the features have {n_frames} frames)"
        )
    return onset, offset


def read_avd_list(list_file: PathLike, root: Optional[PathLike] = None) -> list[tuple[Path, Path]]:
    """Read ``train.txt``/``test.txt``: ``[(data_path, labels_path), ...]``.

    Relative paths are resolved against ``root`` (default: the list file's directory).
    Both files of every pair must exist.

    Raises:
        FeatureError: missing list file, a line without exactly two paths, a listed file
            that does not exist, or an empty list.
    """
    list_file = Path(list_file)
    root = list_file.parent if root is None else Path(root)
    pairs = []
    for lineno, line in enumerate(read_text(list_file, "list file", FeatureError).splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise FeatureError(
                f"{list_file}, line {lineno}: expected 'features labels' (2 paths), got {len(fields)} fields"
            )
        data_path, labels_path = (root / f for f in fields)
        for p in (data_path, labels_path):
            if not p.is_file():
                raise FeatureError(f"{list_file}, line {lineno}: {p} not found")
        pairs.append((data_path, labels_path))
    if not pairs:
        raise FeatureError(f"{list_file}: no examples listed")
    return pairs


def read_avd_example(data_path: PathLike, labels_path: PathLike,
                     nan_to_zero: bool = True) -> tuple[np.ndarray, tuple[int, int]]:
    """Features (T, C) and ``(onset, offset)`` of one example, the labels checked against T."""
    features = read_avd_features(data_path, nan_to_zero=nan_to_zero)
    return features, read_avd_labels(labels_path, n_frames=features.shape[0])
