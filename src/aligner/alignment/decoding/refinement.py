"""Sub-frame boundary refinement: a learned shift of every decoded phone boundary.

The segmental DP (:mod:`aligner.alignment.decoding.task`) places boundaries on the 10 ms frame grid,
at ``t * 10 + 7.5`` ms. Hand labels are not on that grid, and annotators place some
boundaries consistently early or late within a spectral transition (a glide into a vowel, a
closure into a vowel, speech fading into the final silence). A :class:`BoundaryRefiner`
predicts, for every boundary, the shift in **milliseconds** from the grid time to the
hand-labelled time, from local evidence around the boundary before frame ``b`` between phones
``p`` (left) and ``q`` (right), whose decoded lengths are ``L_p`` and ``L_q`` frames:

===========  =====================================================================
columns      feature
===========  =====================================================================
0-5          ``g(s_t, p) - g(s_t, q)`` for ``t = b-3 .. b+2`` (classifier scores of the
             left minus the right phone; clipped to +-10; frames clipped to the utterance)
6-10         ``||s_t - s_{t-1}|| / sqrt(D)`` for ``t = b-2 .. b+2`` (spectral change
             between consecutive frames)
11-59        one-hot of the (left, right) broad-class pair, 7 x 7 classes
             (:data:`BROAD_CLASSES`)
60-65        log energy (MFCC column 13, normalised over the utterance) at ``t = b-3 .. b+2``
66-67        ``(L - mean) / std`` of the left and right phone (the decoder's duration
             statistics of each phone, frames)
68-69        ``log L`` of the left and right phone (L in frames)
70-71        1 for the utterance's first boundary, 1 for its last (else 0)
===========  =====================================================================

The regression is a one-hidden-layer network (``hidden`` ReLU units on the standardised
features, squared loss, L2 penalty ``alpha``; fitted with scikit-learn's ``MLPRegressor`` and
stored as plain weight arrays), or ridge regression with ``hidden=0``. Training targets are the
shifts measured on the training utterances after decoding them with out-of-fold classifier
scores, clipped to ``+-target_clip_ms`` so gross misalignments (which no local shift repairs)
don't dominate the fit. Predictions are clipped to ``+-max_shift_ms`` and the refined start
times are kept strictly increasing.

Refiners saved before columns 60-71 existed (ridge on columns 0-59) still load and use the
first 60 columns.

Its effect is measured by ``python -m benchmarks.alignment.eval_alignment_cv`` (speaker folds), which
scores the decodes with and without it; the figures are in docs/results.md.
"""

from __future__ import annotations

import warnings
from typing import Mapping, Sequence

import numpy as np
from numba import njit

from aligner.errors import ModelError
from aligner.features.numeric import _pairwise_sum
from aligner.frames import phone_start_times
from aligner.phones.sets import BROAD_CLASSES, TIMIT39_INVENTORY

#: class index (of :data:`~aligner.phones.sets.CLASSES39`) -> index of its broad class in
#: :data:`~aligner.phones.sets.BROAD_CLASSES`, for the broad-class pair indicator of the shipped
#: models' inventory; a model of another inventory passes its own
#: (:attr:`~aligner.phones.sets.PhoneInventory.broad_indices`)
_BROAD_OF_CLASS = TIMIT39_INVENTORY.broad_indices
N_BROAD = len(BROAD_CLASSES)
SCORE_OFFSETS = np.arange(-3, 3)  #: frames relative to the boundary frame b, for the score difference
CHANGE_OFFSETS = np.arange(-2, 3)  #: frames t (relative to b) of the change ||s_t - s_{t-1}||
ENERGY_OFFSETS = np.arange(-3, 3)  #: frames relative to b of the log-energy levels
ENERGY_COLUMN = 13  #: log energy's column in the MFCC frames (:mod:`aligner.features.mfcc`)
#: columns of the first refiners (score differences, spectral change, broad-class pair)
N_BASIC_FEATURES = len(SCORE_OFFSETS) + len(CHANGE_OFFSETS) + N_BROAD * N_BROAD
N_REFINER_FEATURES = N_BASIC_FEATURES + len(ENERGY_OFFSETS) + 2 + 2 + 2


#: recordings of more phones are refined in blocks of this many boundaries (bounded memory)
REFINE_BLOCK_PHONES = 20_000


def boundary_features(scores: np.ndarray, frames: np.ndarray, classes: np.ndarray,
                      y: np.ndarray, dur_mean: np.ndarray, dur_std: np.ndarray,
                      broad_of_class: np.ndarray | None = None) -> np.ndarray:
    """Features (K-1, :data:`N_REFINER_FEATURES`) of the boundaries before phones 2..K.

    ``scores``: (T, C) classifier scores; ``frames``: (T, D) MFCC frames; ``classes``: (K,)
    phone classes; ``y``: (K,) start frames from the decoder; ``dur_mean``, ``dur_std``: (K,)
    the decoder's duration statistics of each phone, in frames; ``broad_of_class``: (C,) each
    class's broad-class index (None: the 39 classes').
    """
    broad = _BROAD_OF_CLASS if broad_of_class is None else np.asarray(broad_of_class, np.int64)
    # scores and frames stay in their own dtype; only the rows read are converted (a long
    # recording's arrays are not copied)
    scores, frames = np.asarray(scores), np.asarray(frames)
    classes = np.asarray(classes, np.int64)
    y = np.asarray(y, np.int64)
    T, K = frames.shape[0], len(y)
    out = np.zeros((max(K - 1, 0), N_REFINER_FEATURES))
    if K < 2:
        return out
    lengths = np.diff(np.append(y, T)).astype(np.float64)
    log_len = np.log(np.maximum(lengths, 1.0))  # numpy's log, as the refiners were trained with
    _fill_boundary_features(scores, frames, classes, y, np.asarray(dur_mean, np.float64),
                            np.asarray(dur_std, np.float64), broad, lengths, log_len, out)
    return out


@njit(cache=True, nogil=True)
def _fill_boundary_features(scores, frames, classes, y, dur_mean, dur_std, broad, lengths, log_len, out):
    """Fill ``out`` (K-1, :data:`N_REFINER_FEATURES`) float64, zeros on entry, with the columns of
    :func:`boundary_features` (the module docstring's table); ``lengths`` and ``log_len`` (K,)
    are the phones' decoded lengths (frames) and their logs. Frames read outside ``0 .. T-1``
    are clipped to it."""
    T, D = frames.shape
    K = y.shape[0]
    n_score, n_change, n_energy = SCORE_OFFSETS.shape[0], CHANGE_OFFSETS.shape[0], ENERGY_OFFSETS.shape[0]
    c_change = n_score
    c_pair = c_change + n_change
    c_energy = c_pair + N_BROAD * N_BROAD
    c_z = c_energy + n_energy
    root_d = np.sqrt(np.float64(D))
    sq = np.empty(D)  # a squared difference of two frames, summed as np.linalg.norm sums it
    for k in range(K - 1):
        b = y[k + 1]
        left, right = classes[k], classes[k + 1]
        for j in range(n_score):
            t = min(max(b + SCORE_OFFSETS[j], 0), T - 1)
            d = np.float64(scores[t, left]) - np.float64(scores[t, right])
            out[k, j] = min(max(d, -10.0), 10.0)
        for j in range(n_change):
            t = min(max(b + CHANGE_OFFSETS[j], 0), T - 1)
            if t > 0:
                for i in range(D):
                    d = np.float64(frames[t, i]) - np.float64(frames[t - 1, i])
                    sq[i] = d * d
                out[k, c_change + j] = np.sqrt(_pairwise_sum(sq, 0, D, 1)) / root_d
        out[k, c_pair + broad[left] * N_BROAD + broad[right]] = 1.0
        for j in range(n_energy):
            t = min(max(b + ENERGY_OFFSETS[j], 0), T - 1)
            out[k, c_energy + j] = np.float64(frames[t, ENERGY_COLUMN])
        out[k, c_z] = (lengths[k] - dur_mean[k]) / dur_std[k]
        out[k, c_z + 1] = (lengths[k + 1] - dur_mean[k + 1]) / dur_std[k + 1]
        out[k, c_z + 2] = log_len[k]
        out[k, c_z + 3] = log_len[k + 1]
    out[0, c_z + 4] = 1.0
    out[K - 2, c_z + 5] = 1.0


class BoundaryRefiner:
    """Regression from :func:`boundary_features` to the boundary shift in ms.

    Parameters
    ----------
    hidden : ReLU units of the hidden layer; 0 = ridge regression (linear).
    alpha : L2 penalty on the weights of the standardised features (network or ridge).
    target_clip_ms : training shifts are clipped to +- this (ms).
    max_shift_ms : predicted shifts are clipped to +- this (ms).
    seed : seeds the network's initialisation and its early-stopping split.
    """

    def __init__(self, hidden: int = 32, alpha: float = 10.0, target_clip_ms: float = 15.0,
                 max_shift_ms: float = 10.0, seed: int = 0):
        self.hidden = int(hidden)
        self.alpha = float(alpha)
        self.target_clip_ms = float(target_clip_ms)
        self.max_shift_ms = float(max_shift_ms)
        self.seed = int(seed)
        self.mean = self.scale = None
        self.hidden_weights = np.zeros((0, 0))  #: (F, hidden)
        self.hidden_bias = np.zeros(0)  #: (hidden,)
        self.output_weights = None  #: (hidden,) or, for ridge, (F,)
        self.output_bias = 0.0
        #: (C,) broad-class index of every class of the model's inventory (set by the model)
        self.broad_of_class: np.ndarray = _BROAD_OF_CLASS

    @property
    def n_features(self) -> int:
        """Feature columns the refiner reads (the first ones of :func:`boundary_features`)."""
        if self.mean is None:
            raise ModelError("the boundary refiner is not fitted")
        return len(self.mean)

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
        if self.hidden == 0:
            tm = t.mean()
            self.hidden_weights, self.hidden_bias = np.zeros((X.shape[1], 0)), np.zeros(0)
            self.output_weights = np.linalg.solve(Z.T @ Z + self.alpha * np.eye(Z.shape[1]), Z.T @ (t - tm))
            self.output_bias = float(tm)  # Z is centred, so the intercept is the mean shift
            return self
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPRegressor

        net = MLPRegressor(hidden_layer_sizes=(self.hidden,), alpha=self.alpha, max_iter=300,
                           early_stopping=True, random_state=self.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            net.fit(Z, t)
        self.hidden_weights = np.asarray(net.coefs_[0], np.float64)
        self.hidden_bias = np.asarray(net.intercepts_[0], np.float64)
        self.output_weights = np.asarray(net.coefs_[1], np.float64)[:, 0]
        self.output_bias = float(net.intercepts_[1][0])
        return self

    def shifts_ms(self, features: np.ndarray) -> np.ndarray:
        """Predicted shift (ms) of each boundary, clipped to +- ``max_shift_ms``."""
        if self.output_weights is None:
            raise ModelError("the boundary refiner is not fitted")
        Z = (np.asarray(features, np.float64) - self.mean) / self.scale
        if self.hidden_weights.shape[1]:
            Z = np.maximum(Z @ self.hidden_weights + self.hidden_bias, 0.0)
        pred = Z @ self.output_weights + self.output_bias
        return np.clip(pred, -self.max_shift_ms, self.max_shift_ms)

    def start_times(self, scores, frames, classes, y, dur_mean, dur_std,
                    duration_s: float | None = None) -> np.ndarray:
        """Refined phone start times in **seconds** (K,): the first is 0, the rest strictly increase
        (and stay below ``duration_s`` when given). Arguments as for :func:`boundary_features`."""
        K = len(y)
        if K <= REFINE_BLOCK_PHONES:
            features = boundary_features(scores, frames, classes, y, dur_mean, dur_std, self.broad_of_class)
            return refined_start_times(y, self.shifts_ms(features), duration_s)
        # a long recording: blocks of boundaries, each computed with two phones of context on
        # either side (the features of a boundary read its two phones and frames near it only)
        classes, y = np.asarray(classes), np.asarray(y)
        dur_mean, dur_std = np.asarray(dur_mean), np.asarray(dur_std)
        shifts = np.empty(K - 1)
        for a in range(1, K, REFINE_BLOCK_PHONES):
            b = min(K, a + REFINE_BLOCK_PHONES)
            lo, hi = max(0, a - 2), min(K, b + 2)
            part = boundary_features(scores, frames, classes[lo:hi], y[lo:hi], dur_mean[lo:hi], dur_std[lo:hi],
                                     self.broad_of_class)
            if lo > 0:
                part[0, -2] = 0.0  # the block's first boundary is not the recording's
            if hi < K:
                part[-1, -1] = 0.0
            shifts[a - 1:b - 1] = self.shifts_ms(part[a - lo - 1:b - lo - 1])
        return refined_start_times(y, shifts, duration_s)

    # -- persistence -------------------------------------------------------------------
    def to_arrays(self) -> dict:
        if self.output_weights is None:
            raise ModelError("the boundary refiner is not fitted")
        return {"mean": self.mean, "scale": self.scale,
                "hidden_weights": self.hidden_weights, "hidden_bias": self.hidden_bias,
                "output_weights": self.output_weights, "output_bias": np.float64(self.output_bias),
                "settings": np.array([self.hidden, self.alpha, self.target_clip_ms, self.max_shift_ms,
                                      self.seed], np.float64)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "BoundaryRefiner":
        try:
            settings = np.asarray(arrays["settings"], np.float64)
            mean = np.asarray(arrays["mean"], np.float64)
            hidden, alpha, clip, max_shift, seed = (float(v) for v in settings)
            ref = cls(int(hidden), alpha, clip, max_shift, int(seed))
            ref.hidden_weights = np.asarray(arrays["hidden_weights"], np.float64)
            ref.hidden_bias = np.asarray(arrays["hidden_bias"], np.float64)
            ref.output_weights = np.asarray(arrays["output_weights"], np.float64)
            ref.output_bias = float(arrays["output_bias"])
            ref.mean = mean
            ref.scale = np.asarray(arrays["scale"], np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"boundary refiner arrays unusable ({exc})") from None
        n, h = len(ref.mean), ref.hidden
        shapes_ok = (ref.mean.ndim == 1 and n == N_REFINER_FEATURES
                     and ref.scale.shape == (n,) and ref.hidden_weights.shape == (n, h)
                     and ref.hidden_bias.shape == (h,) and ref.output_weights.shape == ((h,) if h else (n,)))
        if not shapes_ok or not all(np.all(np.isfinite(a)) for a in (
                settings, ref.mean, ref.scale, ref.hidden_weights, ref.hidden_bias, ref.output_weights)) \
                or not np.isfinite(ref.output_bias) or not np.all(ref.scale > 0):
            raise ModelError(f"boundary refiner arrays have the wrong shapes or non-finite values "
                             f"(expected {N_REFINER_FEATURES} features)")
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
