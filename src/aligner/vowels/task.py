"""Vowel duration measurement as a structured task (SPEC section 4).

Given the frames of a cut that holds one vowel between consonants, predict the vowel's
onset and offset. ``x`` is a :class:`VowelInput` (built once per cut by
:func:`make_vowel_input`); ``y`` is an int array ``(t_b, t_e)``: the vowel occupies frames
``t_b .. t_e`` inclusive (AutoVowelDuration's labels: ``t_b = ceil(t_on * 200)`` is the
first vowel frame, ``t_e = floor(t_off * 200)`` the last), so its boundaries lie before
frame ``t_b`` and before frame ``t_e + 1``; its duration is ``d = t_e - t_b`` frames
(5 ms each), the value the peer reports and the cost compares.

Notation. ``x_t`` is the acoustic vector of frame t restricted to the selected columns
(F of them: ``make_vowel_input(columns=...)``; the package's vowel model uses the 16 of
:data:`aligner.features.vowel_acoustics.VOWEL_COLUMNS`). For a boundary before frame t and a
width w (frames), the window means are ``M+_w(t) = mean x[t : t+w]`` and
``M-_w(t) = mean x[t-w : t]`` (windows clipped to the cut, an empty window has mean 0),
and the **edge** feature is ``E_w(t) = M+_w(t) - M-_w(t)`` (after minus before; an
onset of voicing or energy makes it positive, an offset negative). With
``W_o = outside_width`` (default 10 frames = 50 ms) the **inside vs outside** feature is
``mean x[t_b : t_e+1] - (M-_{W_o}(t_b) + M+_{W_o}(t_e+1)) / 2``.

Feature map: ``F * (2 * n_widths + 1) + 4`` dims, **116** for 16 columns and the default
3 widths ``(2, 5, 10)`` frames = 10, 25, 50 ms. Within each edge triple, the dims are in
width order 10 ms, 25 ms, 50 ms (``dim = block + 3 * i + j`` for the i-th selected column
and the j-th width); :func:`vowel_feature_names` names every dim.

============ =================================================================
dims (F=16)  feature
============ =================================================================
0-47         onset edge ``E_w(t_b)`` of each selected column, w = 10/25/50 ms
48-95        offset edge ``E_w(t_e+1)`` of each selected column, w = 10/25/50 ms
96-111       inside vs outside, one per selected column
112          duration prior: log Gamma(d; k, theta), k = mu^2/s^2, theta = s^2/mu
113          duration prior: log N(d; mu, s) (Gaussian)
114          duration prior: log LogNormal(d; m, v) (m, v: mean, std of log d)
115          duration prior: d / mu (linear)
============ =================================================================

``mu, s`` are the mean and standard deviation of the training durations (frames), ``m, v``
those of their logarithms (:class:`DurationPrior`, fitted by
:meth:`DurationPrior.fit`). The four prior dims span ``{d, d^2, log d, (log d)^2}``, so
the trainer can shape any prior of the Gamma/Gaussian/log-normal families and mixtures.
Because of that, widening the moments hardly changes what ``"full"`` can express; the other
forms (``DurationPrior(form=...)``, ``fit_vowel_task(prior_form=..., prior_widen=...)``)
restrict it: ``"gamma"`` or ``"lognormal"`` keep one dim (the log-density with ``std``,
``log_std`` multiplied by ``widen``, so the learner can only scale a fixed, possibly widened
shape - for test speakers whose vowels are longer than the training speaker's), and ``"off"``
zeroes all four. The layout stays 116 dims; the dead dims are 0 for every candidate.

Per-cut normalisation. ``make_vowel_input(..., cut_norm=True)`` z-scores every selected
column over the cut's own frames first (:func:`normalise_cut`), so the features are relative
to the cut (speaker level, recording gain) rather than absolute; default off.
With another column selection or width set the blocks keep this order and sizes scale
(``3F`` onset, ``3F`` offset, ``F`` inside, 4 prior; :func:`vowel_feature_names` lists them).

Standardisation. Trainers take steps of size ``eta * (phi(y) - phi(y'))``, so dims of
very different ranges (cepstral distances reach 100, probabilities stay in [0, 1]) learn
at very different speeds. :class:`VowelTask` holds plain arrays ``center`` and ``scale``
and returns ``phi = (phi_raw - center) / scale``; :meth:`VowelTask.fit_scale` sets them to
the mean and standard deviation of ``phi_raw`` over the true outputs and random feasible
candidates of the training inputs (dims that never vary keep scale 1). ``center`` shifts
every score of a cut by one constant, so it changes neither the argmax nor any
``phi(y) - phi(y')``. :func:`fit_vowel_task` fits the prior and the scale together.

Decoder. Every feature is O(1) per candidate from precomputed arrays (cumulative sums of
the columns, edge features per frame), and the score separates as
``A[t_b] + B[t_e+1] + (Z[t_e+1] - Z[t_b]) / (d+1) + P[d]`` with ``A, B, Z`` per-frame
products with ``w`` and ``P`` per-duration, so one numba loop (:func:`_best_pairs`)
scores every pair with ``min_dur <= d <= max_dur`` (onsets and offsets within the given
ranges) in O(T (max_dur - min_dur)) time, exactly (no pruning). The cost (orbit eq. 38)
separates over onset and offset, so loss-augmented decoding adds it to ``A`` and ``B``.
``decode_many`` splits its weight vectors over ``n_jobs`` threads (the loop releases the
GIL). Its speed is measured by ``python -m benchmarks.vowels.bench_vowels_peer`` (results in
docs/results.md).

Search space. The searched durations and onset/offset ranges are parameters of
:func:`make_vowel_input` (the peer tool's own search space is in ``benchmarks/vowels/avd.py``),
and offsets may go up to ``T-1`` unless ``offset_range`` says
otherwise. A true output outside the search space is still a valid ``y`` for ``phi`` and
``cost``, but the decoder can never return it.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from numba import njit

from aligner.errors import AlignmentError, FeatureError
from aligner.learn.costs import onset_offset_cost
from aligner.learn.task import StructuredTask

#: number of columns of the package's default vowel model
#: (``len(aligner.features.vowel_acoustics.VOWEL_COLUMNS)``; 116-dim feature map)
DEFAULT_N_COLUMNS = 16

#: default edge window widths, frames (10, 25, 50 ms at 5 ms per frame)
DEFAULT_WIDTHS = (2, 5, 10)

#: default width of the outside windows of the inside-vs-outside features, frames (50 ms)
DEFAULT_OUTSIDE_WIDTH = 10

#: names of the four duration-prior dims
PRIOR_NAMES = ("dur_log_gamma", "dur_log_gauss", "dur_log_lognormal", "dur_linear")

N_PRIOR = len(PRIOR_NAMES)

#: the forms of :class:`DurationPrior` (which of the four prior dims are live)
PRIOR_FORMS = ("full", "gamma", "lognormal", "off")

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def n_vowel_features(n_columns: int = DEFAULT_N_COLUMNS, n_widths: int = len(DEFAULT_WIDTHS)) -> int:
    """Length of the feature map for ``n_columns`` columns and ``n_widths`` edge widths."""
    return n_columns * (2 * n_widths + 1) + N_PRIOR


def vowel_feature_names(column_names: Sequence[str],
                        widths: Sequence[int] = DEFAULT_WIDTHS, frame_ms: float = 5.0) -> list[str]:
    """Name of every dim of the feature map, in order (see the module docstring's table).

    ``column_names``: the names of the selected columns, in selection order (for the
    package's acoustics: ``[COLUMN_NAMES[c] for c in VOWEL_COLUMNS]`` of
    :mod:`aligner.features.vowel_acoustics`).
    """
    ms = [f"{w * frame_ms:g}ms" for w in widths]
    names = [f"onset_edge_{c}_{m}" for c in column_names for m in ms]
    names += [f"offset_edge_{c}_{m}" for c in column_names for m in ms]
    names += [f"inside_vs_outside_{c}" for c in column_names]
    return names + list(PRIOR_NAMES)


# --------------------------------------------------------------------------------------
# duration prior
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DurationPrior:
    """Parameters of the four duration-prior dims, in frames.

    ``mean``, ``std``: of the durations ``d = t_e - t_b``; ``log_mean``, ``log_std``: of
    ``log d``. Defaults are the peer's tutorial training set rounded (51 +- 13 frames).
    """

    mean: float = 51.0
    std: float = 13.0
    log_mean: float = 3.9
    log_std: float = 0.26
    #: which dims are live: ``"full"`` (all four), ``"gamma"`` (dim 0 only), ``"lognormal"``
    #: (dim 2 only) or ``"off"`` (none); the others are 0 for every duration
    form: str = "full"
    #: factor on ``std`` and ``log_std`` (> 0): ``widen > 1`` flattens the prior
    widen: float = 1.0

    def __post_init__(self):
        if self.form not in PRIOR_FORMS:
            raise ValueError(f"DurationPrior: form must be one of {PRIOR_FORMS}, got {self.form!r}")
        if not self.widen > 0:
            raise ValueError(f"DurationPrior: widen must be > 0, got {self.widen}")

    @classmethod
    def fit(cls, durations, min_std: float = 1.0, min_log_std: float = 0.05, form: str = "full",
            widen: float = 1.0) -> "DurationPrior":
        """Moments of the training durations (frames, each >= 1); stds floored."""
        d = np.asarray(durations, dtype=np.float64).reshape(-1)
        if d.size == 0:
            raise ValueError("DurationPrior.fit: no durations")
        if np.any(d < 1) or not np.all(np.isfinite(d)):
            raise ValueError("DurationPrior.fit: durations must be finite and >= 1 frame")
        logs = np.log(d)
        return cls(float(d.mean()), float(max(d.std(), min_std)),
                   float(logs.mean()), float(max(logs.std(), min_log_std)), form=form, widen=float(widen))

    def features(self, d) -> np.ndarray:
        """The four prior dims for durations ``d`` (frames, >= 1): shape ``d.shape + (4,)``."""
        d = np.asarray(d, dtype=np.float64)
        out = np.zeros(d.shape + (N_PRIOR,), dtype=np.float64)
        if self.form == "off":
            return out
        mu, s, ls = self.mean, self.std * self.widen, self.log_std * self.widen
        logd = np.log(d)
        if self.form in ("full", "gamma"):
            k = mu * mu / (s * s)
            theta = s * s / mu
            out[..., 0] = (k - 1.0) * logd - d / theta - math.lgamma(k) - k * math.log(theta)
        if self.form == "full":
            z = (d - mu) / s
            out[..., 1] = -0.5 * z * z - math.log(s) - _LOG_SQRT_2PI
        if self.form in ("full", "lognormal"):
            zl = (logd - self.log_mean) / ls
            out[..., 2] = -0.5 * zl * zl - logd - math.log(ls) - _LOG_SQRT_2PI
        if self.form == "full":
            out[..., 3] = d / mu
        return out


# --------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class VowelInput:
    """Everything the feature map and the decoder need for one cut (frames of 5 ms).

    Build it with :func:`make_vowel_input`, which validates and precomputes.

    Attributes:
        edge: (T+1, F*W) float64, ``edge[t, i*W + j] = E_{w_j}(t)`` of column i (the edge
            feature of a boundary before frame t, module docstring).
        before: (T+1, F) float64, ``M-_{W_o}(t)``, mean of the ``W_o`` frames before t.
        after: (T+1, F) float64, ``M+_{W_o}(t)``, mean of the ``W_o`` frames from t on.
        cum: (T+1, F) float64, ``cum[t] = sum_{u < t} x_u``.
        widths: (W,) int64 edge widths, frames.
        onset_lo, onset_hi, offset_lo, offset_hi: the searched onset and offset frames
            (inclusive), already tightened to what the durations allow.
        min_dur, max_dur: the searched durations ``t_e - t_b``, frames (inclusive).
        outside_width: ``W_o``, frames.
        name: the file or cut name used in error messages.
    """

    edge: np.ndarray
    before: np.ndarray
    after: np.ndarray
    cum: np.ndarray
    widths: np.ndarray
    onset_lo: int
    onset_hi: int
    offset_lo: int
    offset_hi: int
    min_dur: int
    max_dur: int
    outside_width: int
    name: str = "<cut>"

    @property
    def n_frames(self) -> int:
        """T, the number of frames."""
        return self.cum.shape[0] - 1

    @property
    def n_columns(self) -> int:
        """F, the number of selected acoustic columns."""
        return self.cum.shape[1]

    @property
    def n_widths(self) -> int:
        return self.widths.shape[0]

    @property
    def n_candidates(self) -> int:
        """Number of ``(t_b, t_e)`` pairs the decoder scores."""
        b = np.arange(self.onset_lo, self.onset_hi + 1)
        lo = np.maximum(b + self.min_dur, self.offset_lo)
        hi = np.minimum(b + self.max_dur, self.offset_hi)
        return int(np.maximum(hi - lo + 1, 0).sum())


def _window_means(cum: np.ndarray, w: int):
    """``(M-_w(t), M+_w(t))`` for t = 0..T from cumulative sums (clipped windows, empty -> 0)."""
    T = cum.shape[0] - 1
    t = np.arange(T + 1)
    lo = np.maximum(t - w, 0)
    hi = np.minimum(t + w, T)
    n_before = (t - lo).astype(np.float64)[:, None]
    n_after = (hi - t).astype(np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        before = np.where(n_before > 0, (cum[t] - cum[lo]) / n_before, 0.0)
        after = np.where(n_after > 0, (cum[hi] - cum[t]) / n_after, 0.0)
    return before, after


@njit(cache=True, nogil=True)
def _cumulative_sums(X, cum):
    """Fill ``cum`` (T+1, F) with the cumulative sums of the (T, F) ``X`` in ``np.cumsum`` order:
    ``cum[0] = 0``, ``cum[1] = X[0]``, ``cum[t+1] = cum[t] + X[t]``."""
    T, F = X.shape
    for i in range(F):
        cum[0, i] = 0.0
    if T > 0:
        for i in range(F):
            cum[1, i] = X[0, i]
    for t in range(1, T):
        for i in range(F):
            cum[t + 1, i] = cum[t, i] + X[t, i]


@njit(cache=True, nogil=True)
def _window_arrays(X, widths, outside_width, cum, edge, before, after):
    """Fill the arrays of a :class:`VowelInput` from its (T, F) float64 columns ``X``: ``cum``
    (T+1, F) the cumulative sums (``np.cumsum`` order: ``cum[t+1] = cum[t] + X[t]``, ``cum[1] =
    X[0]``); ``edge`` (T+1, F*W) ``M+_w - M-_w`` of each width w of ``widths`` (W,); ``before``,
    ``after`` (T+1, F) ``M-``, ``M+`` of ``outside_width`` frames. The window means are those of
    :func:`_window_means` (clipped windows, an empty window's mean 0), the same operations."""
    T, F = X.shape
    W = widths.shape[0]
    _cumulative_sums(X, cum)
    for t in range(T + 1):
        for j in range(W + 1):
            w = widths[j] if j < W else outside_width
            lo = max(t - w, 0)
            hi = min(t + w, T)
            n_before = float(t - lo)
            n_after = float(hi - t)
            for i in range(F):
                b = (cum[t, i] - cum[lo, i]) / n_before if n_before > 0 else 0.0
                a = (cum[hi, i] - cum[t, i]) / n_after if n_after > 0 else 0.0
                if j < W:
                    edge[t, i * W + j] = a - b
                else:
                    before[t, i] = b
                    after[t, i] = a


def make_vowel_input(
    features,
    min_dur: int,
    max_dur: int,
    onset_range: Optional[tuple[int, int]] = None,
    offset_range: Optional[tuple[int, int]] = None,
    *,
    columns: Optional[Sequence[int]],
    widths: Sequence[int] = DEFAULT_WIDTHS,
    outside_width: int = DEFAULT_OUTSIDE_WIDTH,
    name: str = "<cut>",
    cut_norm: bool = False,
) -> VowelInput:
    """Validate one cut and precompute what ``phi`` and the decoder need.

    Args:
        features: (T, C) acoustic frames (5 ms apart), finite (the AVD reader turns the
            peer's ``nan`` into 0).
        min_dur, max_dur: searched durations ``t_e - t_b``, frames.
        onset_range: ``(lo, hi)`` inclusive onset frames to search; default ``(0, T-1)``.
        offset_range: ``(lo, hi)`` inclusive offset frames; default ``(0, T-1)``.
        columns: the columns of ``features`` to use (required, keyword-only: the right
            selection depends on the features' layout - for the package's own acoustics
            :data:`aligner.features.vowel_acoustics.VOWEL_COLUMNS`); ``None`` uses every column.
        widths: edge window widths, frames (each >= 1).
        outside_width: width of the windows outside the vowel that the inside-vs-outside
            features compare against, frames.
        name: the file or cut name used in error messages.
        cut_norm: z-score every selected column over this cut (its own mean and standard
            deviation; a constant column becomes 0) before anything else, so the features
            are relative to the cut rather than to the speaker or recording level.

    Raises:
        FeatureError: features not 2-D, empty, non-finite, or too few columns.
        AlignmentError: no ``(t_b, t_e)`` fits (the cut is shorter than ``min_dur`` or the
            ranges exclude every candidate) - the message gives the numbers.
        ValueError: inconsistent parameters (``min_dur < 1``, ``max_dur < min_dur``, ...).
    """
    X = np.asarray(features, dtype=np.float64)
    if X.ndim != 2:
        raise FeatureError(f"{name}: features must be a (frames, columns) array, got shape {X.shape}")
    T, C = X.shape
    if T == 0 or C == 0:
        raise FeatureError(f"{name}: empty features (shape {X.shape})")
    if columns is not None:
        columns = np.asarray(columns, dtype=np.int64).reshape(-1)
        if columns.size == 0:
            raise ValueError(f"{name}: empty column selection")
        if columns.min() < 0 or columns.max() >= C:
            raise FeatureError(
                f"{name}: features have {C} columns but the selection needs column {int(columns.max())} "
                f"(pass columns=None to use all, or a selection that fits)"
            )
        X = X[:, columns]
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))[0]
        raise FeatureError(f"{name}: non-finite feature value at frame {bad[0]}, selected column {bad[1]}")
    if cut_norm:
        X = normalise_cut(X)
    min_dur, max_dur = int(min_dur), int(max_dur)
    if min_dur < 1:
        raise ValueError(f"{name}: min_dur must be >= 1 frame, got {min_dur}")
    if max_dur < min_dur:
        raise ValueError(f"{name}: max_dur ({max_dur}) is below min_dur ({min_dur})")
    widths = np.asarray(widths, dtype=np.int64).reshape(-1)
    if widths.size == 0 or widths.min() < 1:
        raise ValueError(f"{name}: widths must be >= 1 frame, got {widths.tolist()}")
    outside_width = int(outside_width)
    if outside_width < 1:
        raise ValueError(f"{name}: outside_width must be >= 1 frame, got {outside_width}")

    on_lo, on_hi, off_lo, off_hi = searched_ranges(T, min_dur, max_dur, onset_range, offset_range, name)

    F, W = X.shape[1], widths.size
    cum = np.empty((T + 1, F), dtype=np.float64)
    edge = np.empty((T + 1, F * W), dtype=np.float64)
    before, after = np.empty((T + 1, F)), np.empty((T + 1, F))
    _window_arrays(np.ascontiguousarray(X), widths, outside_width, cum, edge, before, after)
    return VowelInput(
        edge=edge,
        before=before,
        after=after,
        cum=cum,
        widths=widths,
        onset_lo=on_lo,
        onset_hi=on_hi,
        offset_lo=off_lo,
        offset_hi=off_hi,
        min_dur=min_dur,
        max_dur=max_dur,
        outside_width=outside_width,
        name=name,
    )


def searched_ranges(T: int, min_dur: int, max_dur: int, onset_range: Optional[tuple] = None,
                    offset_range: Optional[tuple] = None, name: str = "<cut>") -> tuple:
    """``(on_lo, on_hi, off_lo, off_hi)``, inclusive frames: the onsets and offsets of a cut of
    ``T`` frames the decoder searches, ``onset_range`` and ``offset_range`` (default ``(0, T-1)``)
    clipped to the cut and tightened so that every onset has an offset ``min_dur..max_dur``
    frames later and every offset an onset. Raises :class:`~aligner.errors.AlignmentError`
    (naming ``name``) when no pair fits."""
    on_lo, on_hi = (0, T - 1) if onset_range is None else (int(onset_range[0]), int(onset_range[1]))
    off_lo, off_hi = (0, T - 1) if offset_range is None else (int(offset_range[0]), int(offset_range[1]))
    on_lo, off_lo = max(on_lo, 0), max(off_lo, 0)
    on_hi, off_hi = min(on_hi, T - 1), min(off_hi, T - 1)
    # tighten: an onset needs an offset min_dur..max_dur frames later within the offset range
    on_lo = max(on_lo, off_lo - max_dur)
    on_hi = min(on_hi, off_hi - min_dur)
    if on_lo > on_hi or off_lo > off_hi:
        raise AlignmentError(
            f"{name}: no vowel of {min_dur}-{max_dur} frames fits in {T} frames "
            f"(onsets {onset_range if onset_range is not None else (0, T - 1)}, "
            f"offsets {offset_range if offset_range is not None else (0, T - 1)}); "
            f"the cut is too short or the ranges too narrow"
        )
    return on_lo, on_hi, max(off_lo, on_lo + min_dur), min(off_hi, on_hi + max_dur)


def normalise_cut(X, min_std: float = 1e-8) -> np.ndarray:
    """Per-column z-scores of a (T, F) cut over its own frames (constant columns -> 0)."""
    X = np.asarray(X, dtype=np.float64)
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > min_std, std, 1.0)


# --------------------------------------------------------------------------------------
# the decoder
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _best_pairs(A, B, Z, P, inv_cnt, on_lo, on_hi, off_lo, off_hi, min_dur, max_dur, out, values):
    """For each row k: ``argmax_{(b, e)} A[k,b] + B[k,e+1] + (Z[k,e+1]-Z[k,b]) inv_cnt[e-b] + P[k,e-b]``.

    ``b`` in ``[on_lo, on_hi]``, ``e`` in ``[off_lo, off_hi]``, ``min_dur <= e - b <= max_dur``
    (all frames). ``A, B, Z``: (n, T+1); ``P``: (n, max_dur+1); ``inv_cnt[d] = 1/(d+1)``.
    Writes ``out[k] = (b, e)`` and ``values[k]``; ties go to the smallest ``b``, then ``e``.
    """
    n = A.shape[0]
    for k in range(n):
        best = -np.inf
        bb = -1
        be = -1
        for b in range(on_lo, on_hi + 1):
            e_lo = max(b + min_dur, off_lo)
            e_hi = min(b + max_dur, off_hi)
            ab = A[k, b]
            zb = Z[k, b]
            for e in range(e_lo, e_hi + 1):
                d = e - b
                v = ab + B[k, e + 1] + (Z[k, e + 1] - zb) * inv_cnt[d] + P[k, d]
                if v > best:
                    best = v
                    bb = b
                    be = e
        out[k, 0] = bb
        out[k, 1] = be
        values[k] = best


@njit(cache=True, nogil=True)
def _cut_pulled_pairs(X, widths, outside_width, w_on, w_off, w_io, P, inv_cnt, on_lo, on_hi, off_lo, off_hi,
                      min_dur, max_dur, ref_b, ref_e, pulls, tau_on, tau_off, cap, out, values):
    """:func:`_best_pairs` of one cut under one weight vector for each pull of ``pulls`` (P,),
    straight from its (T, F) float64 columns ``X``: the window means of :func:`_window_arrays`
    (sums times the reciprocal count rather than divided by it) weighted as the decoder's onset,
    offset and inside scores (``A``, ``B``, ``Z`` of :meth:`VowelTask._run`: ``w_on``, ``w_off``
    (F*W,) on the edges, column-major by width, ``w_io`` (F,) on the inside and outside means)
    without the (T+1, F*W) edge array.
    A pull ``eps`` other than 0 adds ``eps * min([|t - ref_b| - tau_on]_+, cap)`` to the onset
    scores and ``eps * min([|t - 1 - ref_e| - tau_off]_+, cap)`` to the offset scores
    (:meth:`VowelTask._run`; ``cap`` inf: no cap; ``ref_b`` < 0: no pull). ``P``, ``inv_cnt``:
    the prior's scores and ``1/(d+1)`` of :meth:`VowelTask._weight_terms`. Writes ``out[k]`` and
    ``values[k]`` (without the standardisation's constant) for each pull."""
    T, F = X.shape
    W = widths.shape[0]
    cum = np.empty((T + 1, F))
    _cumulative_sums(X, cum)
    A0 = np.empty(T + 1)
    B0 = np.empty(T + 1)
    Z = np.empty(T + 1)
    for t in range(T + 1):
        a_on = 0.0
        a_off = 0.0
        io_before = 0.0
        io_after = 0.0
        z = 0.0
        for j in range(W + 1):
            w = widths[j] if j < W else outside_width
            lo = max(t - w, 0)
            hi = min(t + w, T)
            # an empty window's mean is 0: its reciprocal count 0 (multiplied, not divided)
            r_before = 1.0 / (t - lo) if t > lo else 0.0
            r_after = 1.0 / (hi - t) if hi > t else 0.0
            for i in range(F):
                b = (cum[t, i] - cum[lo, i]) * r_before
                a = (cum[hi, i] - cum[t, i]) * r_after
                if j < W:
                    a_on += w_on[i * W + j] * (a - b)
                    a_off += w_off[i * W + j] * (a - b)
                else:
                    io_before += w_io[i] * b
                    io_after += w_io[i] * a
        for i in range(F):
            z += w_io[i] * cum[t, i]
        A0[t] = a_on - 0.5 * io_before
        B0[t] = a_off - 0.5 * io_after
        Z[t] = z
    A = np.empty((1, T + 1))
    B = np.empty((1, T + 1))
    Zk = Z.reshape(1, T + 1)
    one = np.empty((1, 2), dtype=np.int64)
    value = np.empty(1)
    for k in range(pulls.shape[0]):
        eps = pulls[k]
        for t in range(T + 1):
            A[0, t] = A0[t]
            B[0, t] = B0[t]
            if eps != 0.0 and ref_b >= 0:
                A[0, t] += eps * min(max(abs(t - ref_b) - tau_on, 0.0), cap)
                B[0, t] += eps * min(max(abs(t - 1 - ref_e) - tau_off, 0.0), cap)
        _best_pairs(A, B, Zk, P, inv_cnt, on_lo, on_hi, off_lo, off_hi, min_dur, max_dur, one, value)
        out[k, 0] = one[0, 0]
        out[k, 1] = one[0, 1]
        values[k] = value[0]


# --------------------------------------------------------------------------------------
# the task
# --------------------------------------------------------------------------------------


class VowelTask(StructuredTask):
    """Vowel onset/offset prediction (SPEC section 4) for the learning core.

    Args:
        tau_on, tau_off: tolerances of the cost (orbit eq. 38), frames.
        n_columns, n_widths: the feature layout (must match the inputs; default
            :data:`DEFAULT_N_COLUMNS` = 16 and 3, 116 dims).
        prior: the :class:`DurationPrior` (fit it on training labels; default: the peer
            tutorial's moments).
        center, scale: (n_features,) standardisation arrays (default 0 and 1; see
            :meth:`fit_scale`).
        n_jobs: threads for :meth:`decode_many`.
    """

    def __init__(
        self,
        tau_on: float = 0.0,
        tau_off: float = 0.0,
        n_columns: int = DEFAULT_N_COLUMNS,
        n_widths: int = len(DEFAULT_WIDTHS),
        prior: Optional[DurationPrior] = None,
        center: Optional[np.ndarray] = None,
        scale: Optional[np.ndarray] = None,
        n_jobs: int = 2,
    ):
        if tau_on < 0 or tau_off < 0:
            raise ValueError(f"tau_on and tau_off must be >= 0 frames, got {tau_on}, {tau_off}")
        self.tau_on = float(tau_on)
        self.tau_off = float(tau_off)
        self.n_columns = int(n_columns)
        self.n_widths = int(n_widths)
        self.n_features = n_vowel_features(self.n_columns, self.n_widths)
        self.prior = DurationPrior() if prior is None else prior
        self.center = np.zeros(self.n_features) if center is None else _vec(center, self.n_features, "center")
        self.scale = np.ones(self.n_features) if scale is None else _vec(scale, self.n_features, "scale")
        if np.any(self.scale <= 0):
            raise ValueError("scale entries must be > 0")
        self.n_jobs = int(n_jobs)

    # ---- layout -------------------------------------------------------------------
    @property
    def _blocks(self):
        fw = self.n_columns * self.n_widths
        return fw, 2 * fw, 2 * fw + self.n_columns  # ends of onset, offset, inside blocks

    def _check_x(self, x: VowelInput):
        if x.n_columns != self.n_columns or x.n_widths != self.n_widths:
            raise ValueError(
                f"{x.name}: input has {x.n_columns} columns x {x.n_widths} widths but the task "
                f"expects {self.n_columns} x {self.n_widths}"
            )

    # ---- feature map --------------------------------------------------------------
    def phi_raw(self, x: VowelInput, y) -> np.ndarray:
        """The unstandardised features (module docstring table) of ``y = (t_b, t_e)``.

        ``y`` need not lie in the searched ranges, only ``0 <= t_b < t_e < T``.
        """
        self._check_x(x)
        b, e = _check_y(x, y)
        return self._phi_raw_many(x, np.array([b]), np.array([e]))[0]

    def _phi_raw_many(self, x: VowelInput, b: np.ndarray, e: np.ndarray) -> np.ndarray:
        n1, n2, n3 = self._blocks
        out = np.empty((b.shape[0], self.n_features), dtype=np.float64)
        out[:, :n1] = x.edge[b]
        out[:, n1:n2] = x.edge[e + 1]
        inside = (x.cum[e + 1] - x.cum[b]) / (e - b + 1).astype(np.float64)[:, None]
        out[:, n2:n3] = inside - 0.5 * (x.before[b] + x.after[e + 1])
        out[:, n3:] = self.prior.features(e - b)
        return out

    def phi(self, x: VowelInput, y) -> np.ndarray:
        """Standardised features ``(phi_raw(x, y) - center) / scale``, shape (n_features,)."""
        return (self.phi_raw(x, y) - self.center) / self.scale

    def score(self, x: VowelInput, y, w) -> float:
        """``w . phi(x, y)``."""
        return float(np.dot(np.asarray(w, dtype=np.float64), self.phi(x, y)))

    # ---- standardisation -------------------------------------------------------------
    def fit_prior(self, Y, form: str = "full", widen: float = 1.0) -> "VowelTask":
        """Fit the duration prior on training outputs ``Y`` (sequence of ``(t_b, t_e)``).

        ``form`` and ``widen``: see :class:`DurationPrior`. Refit the scale afterwards
        (:meth:`fit_scale`), since the prior dims change.
        """
        Y = np.asarray(Y, dtype=np.int64).reshape(-1, 2)
        self.prior = DurationPrior.fit(Y[:, 1] - Y[:, 0], form=form, widen=widen)
        return self

    def fit_scale(self, X: Sequence[VowelInput], Y=None, n_per_input: int = 200, seed: int = 0,
                  min_scale: float = 1e-8) -> "VowelTask":
        """Set ``center``/``scale`` to the mean/std of ``phi_raw`` over training candidates.

        For every input, ``n_per_input`` feasible ``(t_b, t_e)`` are drawn uniformly (plus the
        true output when ``Y`` is given). Dims whose std is below ``min_scale`` keep scale 1.
        """
        rng = np.random.default_rng(seed)
        rows = []
        for i, x in enumerate(X):
            self._check_x(x)
            b, e = _sample_candidates(x, n_per_input, rng)
            if Y is not None:
                yb, ye = _check_y(x, Y[i])
                b, e = np.append(b, yb), np.append(e, ye)
            rows.append(self._phi_raw_many(x, b, e))
        if not rows:
            raise ValueError("fit_scale: no inputs")
        F = np.concatenate(rows)
        self.center = F.mean(axis=0)
        std = F.std(axis=0)
        self.scale = np.where(std > min_scale, std, 1.0)
        return self

    # ---- cost -----------------------------------------------------------------------
    def cost(self, y, y_pred) -> float:
        """Orbit eq. 38 in frames: ``[|dt_b| - tau_on]_+ + [|dt_e| - tau_off]_+``."""
        return onset_offset_cost(y, y_pred, self.tau_on, self.tau_off)

    # ---- inference ------------------------------------------------------------------
    def decode(self, x: VowelInput, w) -> np.ndarray:
        """``argmax_y w . phi(x, y)`` over the searched ``(t_b, t_e)``."""
        return self._run(x, np.asarray(w, dtype=np.float64).reshape(1, -1), None, 0.0)[0][0]

    def decode_augmented(self, x: VowelInput, y, w, eps: float) -> np.ndarray:
        """``argmax_y' w . phi(x, y') + eps * cost(y, y')``; ``eps`` may be negative."""
        y = np.asarray(_check_y(x, y), dtype=np.int64)
        return self._run(x, np.asarray(w, dtype=np.float64).reshape(1, -1), y, float(eps))[0][0]

    def decode_with_value(self, x: VowelInput, w, y=None, eps=0.0, cap: Optional[float] = None):
        """``(y_hat, objective)``: the argmax and ``w . phi(x, y_hat) + eps * cost(y, y_hat)``.

        ``eps`` may also be a pair ``(eps_on, eps_off)``: the cost's onset term is weighted by
        the first, its offset term by the second (a negative pair pulls the onset and the
        offset toward ``y`` with strengths of their own: :mod:`aligner.vowels.fused`). ``cap``
        (frames): each of the cost's two terms counts at most this much (a bounded pull)."""
        y_ref = None if y is None else np.asarray(_check_y(x, y), dtype=np.int64)
        eps = (float(eps[0]), float(eps[1])) if isinstance(eps, (tuple, list, np.ndarray)) else float(eps)
        ys, vals = self._run(x, np.asarray(w, dtype=np.float64).reshape(1, -1), y_ref, eps, cap)
        return ys[0], float(vals[0])

    def decode_many(self, x: VowelInput, ws) -> list:
        """Decode ``x`` under each row of ``ws`` (n, n_features), ``n_jobs`` threads in parallel."""
        ws = np.asarray(ws, dtype=np.float64).reshape(-1, self.n_features)
        n = ws.shape[0]
        n_jobs = max(1, min(self.n_jobs, n // 8))
        if n_jobs <= 1:
            ys, _ = self._run(x, ws, None, 0.0)
            return list(ys)
        chunks = np.array_split(np.arange(n), n_jobs)
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            parts = list(pool.map(lambda idx: self._run(x, ws[idx], None, 0.0)[0], chunks))
        return [y for part in parts for y in part]

    def _weight_terms(self, ws: np.ndarray, max_dur: int) -> tuple:
        """``(we, const, P, inv_cnt)`` of :meth:`_run` for the (n, d) weights ``ws`` and durations
        up to ``max_dur`` frames: ``we`` (n, d) the weights on the raw features, ``const`` (n,)
        the standardisation's constant, ``P`` (n, max_dur + 1) the prior's score per duration,
        ``inv_cnt`` (max_dur + 1,) ``1 / (d + 1)``. The last set is kept (a batch decodes every
        cut under one weight vector), keyed by the weights, ``max_dur``, the prior and the
        standardisation, so a change of any of them computes them afresh."""
        key = (ws.shape, ws.tobytes(), int(max_dur), self.prior, self.center.tobytes(), self.scale.tobytes())
        cached = getattr(self, "_weight_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        if ws.shape[1] != self.n_features:
            raise ValueError(f"w must have {self.n_features} entries, got {ws.shape[1]}")
        if not np.all(np.isfinite(ws)):
            raise ValueError("w holds NaN or infinite values")
        n3 = self._blocks[2]
        we = ws / self.scale  # weights on the raw features
        const = -(we @ self.center)
        d = np.arange(max_dur + 1)
        prior = np.zeros((max_dur + 1, N_PRIOR))
        prior[1:] = self.prior.features(d[1:])
        P = np.ascontiguousarray(we[:, n3:] @ prior.T)
        terms = (we, const, P, 1.0 / (d + 1.0))
        self._weight_cache = (key, terms)
        return terms

    def decode_cut_pulls(self, features: np.ndarray, w, y, pulls: Sequence, cap: Optional[float] = None, *,
                         columns: Sequence[int], widths: Sequence[int], outside_width: int, min_dur: int,
                         max_dur: int, onset_range: tuple, offset_range: tuple, name: str = "<cut>") -> list:
        """``[(y_hat, objective), ...]``: :meth:`decode_with_value` under ``w`` of the
        :func:`make_vowel_input` of a cut's (T, C) ``features`` (the same arguments; ``widths`` as
        this task's) for each ``eps`` of ``pulls`` (0, or None: no cost; else toward ``y`` with
        that weight), without building the input: one numba pass (:func:`_cut_pulled_pairs`)
        computes the window scores once and decodes every pull. The outputs are those of one
        :meth:`decode_with_value` per pull but for the rounding of the window scores (summed in
        another order), which can only matter between candidates that tie to the last bits.
        Raises as :func:`make_vowel_input` for non-finite features and when no candidate fits."""
        X = np.asarray(features, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0:
            raise FeatureError(f"{name}: features must be a non-empty (frames, columns) array, got shape {X.shape}")
        X = np.ascontiguousarray(X[:, np.asarray(columns, dtype=np.int64)])
        if not np.isfinite(X).all():
            bad = np.argwhere(~np.isfinite(X))[0]
            raise FeatureError(f"{name}: non-finite feature value at frame {bad[0]}, selected column {bad[1]}")
        widths = np.asarray(widths, dtype=np.int64)
        if X.shape[1] != self.n_columns or widths.shape[0] != self.n_widths:
            raise ValueError(f"{name}: {X.shape[1]} columns x {widths.shape[0]} widths but the task expects "
                             f"{self.n_columns} x {self.n_widths}")
        T = X.shape[0]
        on_lo, on_hi, off_lo, off_hi = searched_ranges(T, min_dur, max_dur, onset_range, offset_range, name)
        ws = np.asarray(w, dtype=np.float64).reshape(1, -1)
        we, const, P, inv_cnt = self._weight_terms(ws, int(max_dur))
        n1, n2, n3 = self._blocks
        ref = (-1, -1) if y is None else _check_y_frames(T, y, name)
        eps = np.array([float(p or 0.0) for p in pulls], dtype=np.float64)
        out = np.empty((eps.shape[0], 2), dtype=np.int64)
        values = np.empty(eps.shape[0])
        _cut_pulled_pairs(X, widths, int(outside_width), we[0, :n1], we[0, n1:n2], we[0, n2:n3], P, inv_cnt,
                          on_lo, on_hi, off_lo, off_hi, int(min_dur), int(max_dur), int(ref[0]), int(ref[1]), eps,
                          self.tau_on, self.tau_off, math.inf if cap is None else float(cap), out, values)
        return [(out[k], float(values[k] + const[0])) for k in range(eps.shape[0])]

    def _run(self, x: VowelInput, ws: np.ndarray, y_ref, eps, cap: Optional[float] = None):
        """Decode under each row of ``ws`` (n, d); returns ((n, 2) int64 outputs, (n,) objectives).
        ``eps``: the cost's weight, or ``(onset weight, offset weight)``; ``cap``: each cost term
        clipped to at most this many frames (None: not clipped)."""
        self._check_x(x)
        we, const, P, inv_cnt = self._weight_terms(ws, x.max_dur)
        n1, n2, n3 = self._blocks
        w_io = we[:, n2:n3]
        A = we[:, :n1] @ x.edge.T - 0.5 * (w_io @ x.before.T)
        B = we[:, n1:n2] @ x.edge.T - 0.5 * (w_io @ x.after.T)
        Z = w_io @ x.cum.T
        eps_on, eps_off = eps if isinstance(eps, tuple) else (eps, eps)
        if y_ref is not None and (eps_on != 0.0 or eps_off != 0.0):
            t = np.arange(x.n_frames + 1)
            c_on = np.maximum(np.abs(t - y_ref[0]) - self.tau_on, 0.0)
            c_off = np.maximum(np.abs(t - 1 - y_ref[1]) - self.tau_off, 0.0)
            if cap is not None:
                c_on, c_off = np.minimum(c_on, cap), np.minimum(c_off, cap)
            A = A + eps_on * c_on[None, :]
            B = B + eps_off * c_off[None, :]
        n = ws.shape[0]
        out = np.empty((n, 2), dtype=np.int64)
        values = np.empty(n, dtype=np.float64)
        _best_pairs(np.ascontiguousarray(A), np.ascontiguousarray(B), np.ascontiguousarray(Z),
                    np.ascontiguousarray(P), inv_cnt, x.onset_lo, x.onset_hi, x.offset_lo,
                    x.offset_hi, x.min_dur, x.max_dur, out, values)
        return out, values + const


def fit_vowel_task(X: Sequence[VowelInput], Y, tau_on: float = 0.0, tau_off: float = 0.0,
                   n_jobs: int = 2, n_per_input: int = 200, seed: int = 0, prior_form: str = "full",
                   prior_widen: float = 1.0) -> VowelTask:
    """A :class:`VowelTask` with its duration prior and standardisation fitted on ``(X, Y)``.

    ``prior_form`` and ``prior_widen`` are passed to :meth:`DurationPrior.fit` (the prior's
    moments always come from ``Y``).
    """
    if len(X) == 0 or len(X) != len(Y):
        raise ValueError(f"fit_vowel_task: need as many outputs as inputs (got {len(X)} and {len(Y)})")
    x0 = X[0]
    task = VowelTask(tau_on, tau_off, n_columns=x0.n_columns, n_widths=x0.n_widths, n_jobs=n_jobs)
    task.fit_prior(Y, form=prior_form, widen=prior_widen)
    task.fit_scale(X, Y, n_per_input=n_per_input, seed=seed)
    return task


def _sample_candidates(x: VowelInput, n: int, rng: np.random.Generator):
    """``n`` feasible ``(t_b, t_e)`` pairs drawn uniformly from the decoder's search space."""
    b = np.arange(x.onset_lo, x.onset_hi + 1)
    lo = np.maximum(b + x.min_dur, x.offset_lo)
    hi = np.minimum(b + x.max_dur, x.offset_hi)
    counts = np.maximum(hi - lo + 1, 0)
    cum = np.cumsum(counts)
    k = rng.integers(0, cum[-1], size=n)
    i = np.searchsorted(cum, k, side="right")
    start = cum[i] - counts[i]
    return b[i], lo[i] + (k - start)


def _vec(a, n, what) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    if a.shape != (n,):
        raise ValueError(f"{what} must have {n} entries, got {a.shape[0]}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} holds NaN or infinite values")
    return a.copy()


def _check_y(x: VowelInput, y) -> tuple[int, int]:
    """Validate ``(t_b, t_e)``: two integer frames with ``0 <= t_b < t_e < T``."""
    return _check_y_frames(x.n_frames, y, x.name)


def _check_y_frames(T: int, y, name: str = "<cut>") -> tuple[int, int]:
    """:func:`_check_y` for a cut of ``T`` frames."""
    y = np.asarray(y)
    if y.shape != (2,):
        raise ValueError(f"{name}: y must be (onset, offset), got shape {y.shape}")
    if y.dtype.kind not in "iu" and not np.all(y == np.round(y)):
        raise ValueError(f"{name}: y must hold integer frame indices, got {y.tolist()}")
    b, e = int(y[0]), int(y[1])
    if not 0 <= b < e < T:
        raise ValueError(f"{name}: need 0 <= onset < offset < T = {T}, got ({b}, {e})")
    return b, e
