"""Sub-frame boundary refinement: a learned shift of every decoded phone boundary.

The segmental DP (:mod:`aligner.tasks.alignment`) places boundaries on the 10 ms frame grid,
at ``t * 10 + 7.5`` ms. Hand labels are not on that grid, and annotators place some
boundaries consistently early or late within a spectral transition (a glide into a vowel, a
closure into a vowel). A :class:`BoundaryRefiner` predicts, for every boundary, the shift in
**milliseconds** from the grid time to the hand-labelled time, by ridge regression on local
evidence around the boundary before frame ``b`` between phone classes ``p`` (left) and ``q``
(right):

===========  =====================================================================
columns      feature
===========  =====================================================================
0-5          ``g(s_t, p) - g(s_t, q)`` for ``t = b-3 .. b+2`` (classifier scores of the
             left minus the right phone; clipped to +-10; frames clipped to the utterance)
6-10         ``||s_t - s_{t-1}|| / sqrt(D)`` for ``t = b-2 .. b+2`` (spectral change
             between consecutive frames)
11-59        one-hot of the (left, right) broad-class pair, 7 x 7 classes
             (:data:`BROAD_CLASSES`)
===========  =====================================================================

Training targets are the shifts measured on the training utterances after decoding them
with out-of-fold classifier scores, clipped to ``+-target_clip_ms`` so gross misalignments
(which no local shift repairs) don't dominate the fit. Predictions are clipped to
``+-max_shift_ms`` and the refined start times are kept strictly increasing.

Measured on the shared TIMIT sample (``scripts/eval_alignment_cv.py``, speaker folds): see the
README's forced-alignment table, which reports it on and off.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .errors import ModelError
from .features.mfcc import phone_start_times
from .phones import CLASSES39

#: Broad phone classes for the pair indicator (names of the 39 classes).
BROAD_CLASSES = {
    "vowel": "iy ih eh ae ah uw uh aa ey ay oy aw ow er",
    "glide": "l r w y",
    "nasal": "m n ng",
    "stop": "b d g p t k dx",
    "affricate": "jh ch",
    "fricative": "s sh z f th v dh hh",
    "silence": "sil",
}
_BROAD_OF_CLASS = np.zeros(len(CLASSES39), np.int64)
for _i, (_name, _members) in enumerate(BROAD_CLASSES.items()):
    for _m in _members.split():
        _BROAD_OF_CLASS[CLASSES39.index(_m)] = _i
N_BROAD = len(BROAD_CLASSES)
SCORE_OFFSETS = np.arange(-3, 3)  #: frames relative to the boundary frame b, for the score difference
CHANGE_OFFSETS = np.arange(-2, 3)  #: frames t (relative to b) of the change ||s_t - s_{t-1}||
N_REFINER_FEATURES = len(SCORE_OFFSETS) + len(CHANGE_OFFSETS) + N_BROAD * N_BROAD


def boundary_features(scores: np.ndarray, frames: np.ndarray, classes: np.ndarray,
                      y: np.ndarray) -> np.ndarray:
    """Features (K-1, :data:`N_REFINER_FEATURES`) of the boundaries before phones 2..K.

    ``scores``: (T, 39) classifier scores; ``frames``: (T, D) MFCC frames; ``classes``: (K,)
    phone classes; ``y``: (K,) start frames from the decoder.
    """
    scores = np.asarray(scores, np.float64)
    frames = np.asarray(frames, np.float64)
    classes = np.asarray(classes, np.int64)
    y = np.asarray(y, np.int64)
    T = frames.shape[0]
    b = y[1:, None]
    left, right = classes[:-1, None], classes[1:, None]
    t = np.clip(b + SCORE_OFFSETS[None, :], 0, T - 1)
    diff = np.clip(scores[t, left] - scores[t, right], -10.0, 10.0)
    step = np.zeros(T)
    if T > 1:
        step[1:] = np.linalg.norm(np.diff(frames, axis=0), axis=1) / np.sqrt(frames.shape[1])
    change = step[np.clip(b + CHANGE_OFFSETS[None, :], 0, T - 1)]
    pair = np.zeros((len(b), N_BROAD * N_BROAD))
    pair[np.arange(len(b)), _BROAD_OF_CLASS[classes[:-1]] * N_BROAD + _BROAD_OF_CLASS[classes[1:]]] = 1.0
    return np.hstack([diff, change, pair])


class BoundaryRefiner:
    """Ridge regression from :func:`boundary_features` to the boundary shift in ms.

    Parameters
    ----------
    ridge : L2 penalty on the standardised feature weights (not on the intercept).
    target_clip_ms : training shifts are clipped to +- this (ms).
    max_shift_ms : predicted shifts are clipped to +- this (ms).
    """

    def __init__(self, ridge: float = 10.0, target_clip_ms: float = 15.0, max_shift_ms: float = 10.0):
        self.ridge = float(ridge)
        self.target_clip_ms = float(target_clip_ms)
        self.max_shift_ms = float(max_shift_ms)
        self.mean = self.scale = self.coef = None
        self.intercept = 0.0

    def fit(self, features: Sequence[np.ndarray], shifts_ms: Sequence[np.ndarray]) -> "BoundaryRefiner":
        """Fit on per-utterance feature blocks and their measured shifts (hand time - grid time, ms)."""
        X = np.vstack([np.asarray(f, np.float64) for f in features])
        t = np.clip(np.concatenate([np.asarray(s, np.float64) for s in shifts_ms]),
                    -self.target_clip_ms, self.target_clip_ms)
        if X.shape[0] != t.shape[0] or X.shape[0] == 0 or X.shape[1] != N_REFINER_FEATURES:
            raise ValueError(f"refiner needs matching non-empty features ({X.shape}) and shifts ({t.shape})")
        self.mean = X.mean(axis=0)
        self.scale = X.std(axis=0) + 1e-6
        Z = (X - self.mean) / self.scale
        tm = t.mean()
        self.coef = np.linalg.solve(Z.T @ Z + self.ridge * np.eye(Z.shape[1]), Z.T @ (t - tm))
        self.intercept = float(tm)  # Z is centred, so the intercept is the mean shift
        return self

    def shifts_ms(self, features: np.ndarray) -> np.ndarray:
        """Predicted shift (ms) of each boundary, clipped to +- ``max_shift_ms``."""
        if self.coef is None:
            raise ModelError("the boundary refiner is not fitted")
        pred = ((np.asarray(features, np.float64) - self.mean) / self.scale) @ self.coef + self.intercept
        return np.clip(pred, -self.max_shift_ms, self.max_shift_ms)

    def start_times(self, scores, frames, classes, y, duration_s: float | None = None) -> np.ndarray:
        """Refined phone start times in **seconds** (K,): the first is 0, the rest strictly increase
        (and stay below ``duration_s`` when given)."""
        return refined_start_times(y, self.shifts_ms(boundary_features(scores, frames, classes, y)),
                                   duration_s)

    # -- persistence -------------------------------------------------------------------
    def to_arrays(self) -> dict:
        if self.coef is None:
            raise ModelError("the boundary refiner is not fitted")
        return {"mean": self.mean, "scale": self.scale, "coef": self.coef,
                "intercept": np.float64(self.intercept),
                "settings": np.array([self.ridge, self.target_clip_ms, self.max_shift_ms])}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "BoundaryRefiner":
        try:
            settings = np.asarray(arrays["settings"], np.float64)
            ref = cls(*[float(v) for v in settings])
            ref.mean = np.asarray(arrays["mean"], np.float64)
            ref.scale = np.asarray(arrays["scale"], np.float64)
            ref.coef = np.asarray(arrays["coef"], np.float64)
            ref.intercept = float(arrays["intercept"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"boundary refiner arrays unusable ({exc})") from None
        n = N_REFINER_FEATURES
        if (settings.shape != (3,) or ref.mean.shape != (n,) or ref.scale.shape != (n,)
                or ref.coef.shape != (n,)
                or not all(np.all(np.isfinite(a)) for a in (settings, ref.mean, ref.scale, ref.coef))
                or not np.isfinite(ref.intercept)):
            raise ModelError(f"boundary refiner arrays have the wrong shapes or non-finite values "
                             f"(expected {n} features)")
        return ref


def refined_start_times(y: np.ndarray, shifts_ms: np.ndarray, duration_s: float | None = None,
                        min_gap_s: float = 0.001) -> np.ndarray:
    """Start times (s) of phones from start frames ``y`` (K,) moved by ``shifts_ms`` (K-1,).

    The first phone starts at 0; each later start is at least ``min_gap_s`` after the previous
    and, when ``duration_s`` is given, leaves ``min_gap_s`` per later phone before the end. A
    shift never moves a boundary past the grid time of its neighbours' boundaries.
    """
    y = np.asarray(y, np.int64)
    K = len(y)
    grid = phone_start_times(y)
    times = grid.copy()
    times[1:] += np.asarray(shifts_ms, np.float64) / 1000.0
    upper = np.append(grid[2:], np.inf) if K > 1 else np.zeros(0)
    times[1:] = np.minimum(times[1:], upper)  # never past the next boundary's grid time
    times[1:] = np.maximum(times[1:], grid[:-1])  # nor before the previous one's
    if duration_s is not None:
        times[1:] = np.minimum(times[1:], duration_s - min_gap_s * np.arange(K - 1, 0, -1))
    for k in range(1, K):
        times[k] = max(times[k], times[k - 1] + min_gap_s)
    return times
