"""The peer tool's (AutoVowelDuration, Adi et al. 2016) data format, for the benchmarks.

Not part of the installed package: the aligner computes its own vowel features
(:mod:`aligner.features.vowel_acoustics`); this module reads the peer's feature and label
files and holds the peer's column selection and search space, so that
:mod:`benchmarks.vowels.bench_vowels_peer` (and the tests) can run the package's vowel task on the
peer's own features.

AutoVowelDuration stores one example as two text files:

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

**Shorter recordings** (:func:`crop_avd_example`, :func:`random_avd_crops`). The peer's front
end normalises some columns over each whole recording: columns 0-5 and 8 (energies, Wiener
entropy, autocorrelation, zero crossings) are z-scored, 6-7 (pitch, voicing) scaled to
[0, 1]. The same word in a shorter recording (less silence around it) therefore gets other
values: a vowel that fills 25 % of a 1.2 s file has a lower z-scored energy than one that
fills 10 % of a 2.2 s file (in the tutorial, the training files are all 440 frames and the
energy z-scores inside their vowels average about 2.2; the shorter test files about 1.4).
Both maps are affine per column, so cutting the frames ``[start, stop)`` out of a file and
normalising those columns again over the cut gives exactly what the front end would have
written for the shorter recording (up to the smoothing at the cut's edges); the other
columns (classifier probabilities, cepstral distances, formants) are per frame and stay.

**The peer's feature map** (:data:`PEER_COLUMNS`, :data:`PEER_SEARCH`, :func:`peer_ranges`).
The peer's 116-dim map uses 16 of its columns (0-10, 13, 16-19); pass them as
``make_vowel_input(..., columns=PEER_COLUMNS)``. The peer searches onsets in [11, T-10] and
durations of 9-91 frames.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Union

import numpy as np

from aligner.errors import FeatureError
from aligner.io.transcripts import read_text

PathLike = Union[str, Path]

__all__ = ["read_avd_features", "read_avd_labels", "read_avd_list", "read_avd_example",
           "crop_avd_example", "random_avd_crops", "PEER_ZSCORED_COLUMNS", "PEER_UNIT_COLUMNS",
           "PEER_COLUMNS", "PEER_COLUMNS_NO_NASAL", "PEER_COLUMN_NAMES", "PEER_SEARCH", "peer_ranges"]

#: the peer's columns its 116-feature map uses, in its 20/22-column files
PEER_COLUMNS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 16, 17, 18, 19)

#: :data:`PEER_COLUMNS` without the nasal probability (column 10), which is all-NaN (read as 0)
#: in 14 of the 30 tutorial files (8 of the 20 training files)
PEER_COLUMNS_NO_NASAL = tuple(c for c in PEER_COLUMNS if c != 10)

#: names of :data:`PEER_COLUMNS` (``../shared/data/README.md``)
PEER_COLUMN_NAMES = (
    "short_term_energy", "total_energy", "low_energy", "high_energy", "wiener_entropy",
    "autocorrelation", "pitch", "voicing", "zero_crossing", "vowel_prob", "nasal_prob",
    "vowel_share", "cepstral_dist_1", "cepstral_dist_2", "cepstral_dist_3", "cepstral_dist_4",
)

#: the peer's search space (``../shared/data/README.md``): onsets in [11, T-10], durations 9-91
PEER_SEARCH = {"min_dur": 9, "max_dur": 91, "onset_margins": (11, 10)}

#: columns the peer's front end z-scores over each recording (energies, Wiener entropy,
#: autocorrelation, zero-crossing rate)
PEER_ZSCORED_COLUMNS = (0, 1, 2, 3, 4, 5, 8)

#: columns the peer's front end scales to [0, 1] over each recording (pitch, voicing)
PEER_UNIT_COLUMNS = (6, 7)


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


def crop_avd_example(features, y, start: int, stop: int, min_std: float = 1e-8):
    """The example as the peer's front end would give it for the recording cut to ``[start, stop)``.

    ``features``: (T, C) frames of a whole file (NaN already replaced, as
    :func:`read_avd_features` does by default); ``y = (onset, offset)``. Returns the frames
    ``start .. stop-1`` with :data:`PEER_ZSCORED_COLUMNS` z-scored and
    :data:`PEER_UNIT_COLUMNS` min-max scaled to [0, 1] again over the cut (columns the file
    lacks, or that are constant over the cut, are left as they are), and the labels shifted
    by ``-start``. The vowel must lie inside the cut.

    Raises:
        ValueError: ``0 <= start <= onset < offset < stop <= T`` does not hold.
    """
    X = np.asarray(features, dtype=np.float64)
    onset, offset = int(y[0]), int(y[1])
    start, stop = int(start), int(stop)
    if not 0 <= start <= onset < offset < stop <= X.shape[0]:
        raise ValueError(f"crop [{start}, {stop}) must hold the vowel {onset}-{offset} "
                         f"within the {X.shape[0]} frames")
    out = X[start:stop].copy()
    z = [c for c in PEER_ZSCORED_COLUMNS if c < out.shape[1]]
    if z:
        sd = out[:, z].std(axis=0)
        ok = sd > min_std
        cols = np.asarray(z)[ok]
        out[:, cols] = (out[:, cols] - out[:, cols].mean(axis=0)) / sd[ok]
    u = [c for c in PEER_UNIT_COLUMNS if c < out.shape[1]]
    if u:
        lo, hi = out[:, u].min(axis=0), out[:, u].max(axis=0)
        ok = hi - lo > min_std
        cols = np.asarray(u)[ok]
        out[:, cols] = (out[:, cols] - lo[ok]) / (hi - lo)[ok]
    return out, (onset - start, offset - start)


def random_avd_crops(features, y, k: int, rng: np.random.Generator, before: int = 20, after: int = 30):
    """``k`` random :func:`crop_avd_example` cuts of one example (training augmentation).

    Each cut starts uniformly in ``[0, onset - before]`` and ends uniformly in
    ``[offset + after, T]`` (clipped to the file), so at least ``before`` frames precede the
    vowel and ``after`` frames follow it: recordings from the whole file down to the vowel
    with ``before``/``after`` frames of context. Returns ``[(features, (onset, offset)), ...]``.
    """
    X = np.asarray(features)
    T = X.shape[0]
    onset, offset = int(y[0]), int(y[1])
    out = []
    for _ in range(int(k)):
        start = int(rng.integers(0, max(onset - before, 0) + 1))
        stop = int(rng.integers(min(offset + after, T), T + 1))
        out.append(crop_avd_example(X, (onset, offset), start, stop))
    return out


def peer_ranges(n_frames: int, margins: tuple[int, int] = PEER_SEARCH["onset_margins"]) -> tuple[int, int]:
    """The peer's onset range ``(margins[0], T - margins[1])`` for a cut of ``n_frames``."""
    return int(margins[0]), int(n_frames) - int(margins[1])
