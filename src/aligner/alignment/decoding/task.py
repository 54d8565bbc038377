"""Phoneme forced alignment as a structured task (SPEC section 3).

Given the frames of a recording and its phone sequence ``p_1..p_K``, predict the start
frame of every phone. ``x`` is an :class:`AlignmentInput` (built once per utterance by
:func:`make_alignment_input`); ``y`` is an int array of shape (K,) of phone START frames:
``y[0] = 0``, strictly increasing, phone ``k`` spans frames ``y[k] .. y[k+1]-1`` and the
last phone ends at frame ``T-1``. Lengths ``l_k = y[k+1] - y[k]`` (``l_K = T - y[K-1]``),
all in frames (10 ms each for the SPEC front end).

Feature map (7 dims, Keshet, Shalev-Shwartz, Singer & Chazan 2007). Every term is summed
over phones and divided by K (so utterances of different length weigh alike); ``A[t, p] =
g(s_t, p) - max_q g(s_t, q)`` is the classifier agreement (<= 0), ``s_t`` the acoustic vector
(D = 42 dims, normalised per utterance), ``mu_k``, ``sigma_k`` the duration mean and std of
phone k in frames.

==== ===================================================== ============ ==========================
dim  term (per phone, then sum_k / K)                      scale        typical phi_i (TIMIT)
==== ===================================================== ============ ==========================
1    mean_{t in phone k} A[t, p_k]                         1            -0.5 .. 0 (posteriors:
                                                                        A in [-1, 0])
2-5  d_j(y_k) = ||s_{y_k-j} - s_{y_k+j}|| * dist_scale,    1/sqrt(2 D)  1.0 +- 0.05
     j = 1..4, phones k >= 2 (frame indices clipped to
     [0, T-1])
6    log N(l_k; mu_k, sigma_k) (Gaussian log-density,      1            -2.5 +- 0.2
     sigma floored at ``sigma_floor`` = 1 frame, mu at 1)
7    (l_k/mu_k - l_{k-1}/mu_{k-1})^2, phones k >= 2        1            0.3 +- 0.15
==== ===================================================== ============ ==========================

The typical values were measured on 60 utterances of the shared TIMIT sample at the
hand-labelled boundaries (13 MFCC + log energy + deltas + delta-deltas, normalised per
utterance; per-label duration statistics of the sample); dim 1 depends on the classifier.

Scaling of dims 2-5: for features normalised per utterance (zero mean, unit variance per
dim) two unrelated frames lie ``sqrt(2 D)`` apart on average (E||a - b||^2 = 2 D), so
``dist_scale = 1/sqrt(2 D)`` (0.109 for D = 42) brings the distances to about 1, the same
order as the other dims (measured: 0.96-1.01 at true boundaries, 0.93-1.00 mid-phone, the
delta dims being noisy frame to frame). The reference implementation's 0.01 leaves these
dims about 10x smaller than the rest, so a trainer whose steps are feature differences
(perceptron, direct loss) would move their weights 10x slower. ``dist_scale`` is a
parameter of :func:`make_alignment_input`. Dim 6 keeps the true log-density (its constant
``-log(sigma sqrt(2 pi))`` is the same for every ``y`` of an utterance, so it changes
neither the argmax nor any ``phi(y) - phi(y')``).

Decoder: one numba segmental dynamic program (:func:`_segmental_dp`) serves ``decode`` and
``decode_augmented``; see its docstring for the state, transitions and memory. It is exact
(no pruning) unless the caller asks for a band in :func:`make_alignment_input`, or decodes
with :func:`decode_banded` (a band around a first pass's starts, widened while it binds; what
:meth:`~aligner.alignment.model.AlignmentModel.decode_phones` does at inference; training
decodes stay exact).
"""

from __future__ import annotations

import dataclasses
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from aligner.errors import AlignmentError, FeatureError, TranscriptError
from aligner.features.numeric import _pairwise_sum
from aligner.learn.costs import tau_alignment_cost, tau_insensitive_cost
from aligner.learn.task import StructuredTask

#: names of the 7 feature dimensions, in order
FEATURE_NAMES = (
    "agreement",
    "dist_1",
    "dist_2",
    "dist_3",
    "dist_4",
    "log_duration",
    "rate_change",
)

#: number of boundary-distance features (j = 1 .. N_DIST)
N_DIST = 4

#: the last word's last phone has its mean duration and deviation (frames) multiplied by this,
#: for a model whose durations hold no statistics of phones before a pause (phrase-final
#: lengthening; the English model): in the TIMIT sample's hand labels an utterance's last phone
#: lasts 1.33 times its class's mean on average; with 1 the decoder, which scores a fading end
#: as silence, ended last words 14 ms early on average. 1.5 placed last words a little better
#: (``eval_tight_edges``) but moved other phone boundaries of words aligned from text: two
#: speaker folds lost 0.3-0.4 points of phones within 20 ms, against 0.1-0.2 with 1.3. Since
#: 0.26.1 a phone transcript's last phone is lengthened by the same factors
#: (:func:`phrase_final_lengthened`)
FINAL_LENGTHENING = 1.3
#: broad classes lengthened before a pause by their own factor instead of
#: :data:`FINAL_LENGTHENING` (same models: those without statistics of phones before a pause).
#: In the TIMIT sample's hand labels an utterance's last fricative lasts 1.6 times its symbol's
#: mean (median of 30), its last vowel 1.1-1.2 times, a glide 1.0; with 1.3 the decoder ended
#: final fricatives' fading tails early (the last word's end up to 200 ms early). Chosen on the
#: validation utterances (the first 60, speaker folds), word MAE: fricatives 1.3 (as the rest) /
#: 1.6 / 1.8 / 2.0 / 2.3: 13.15 / 12.98 / 12.94 / 12.95 / 12.95 ms; affricates with them, 12.93;
#: other classes moved by their own factors changed less than 0.05 ms or got worse
FINAL_LENGTHENING_BY_BROAD_CLASS = {"fricative": 1.8, "affricate": 1.8}


def final_lengthening_of(inventory, phone_class: int) -> float:
    """The factor a phone of ``phone_class`` (an index into ``inventory``, a
    :class:`~aligner.phones.sets.PhoneInventory`) is lengthened by before a pause:
    :data:`FINAL_LENGTHENING_BY_BROAD_CLASS` of its broad class, else :data:`FINAL_LENGTHENING`."""
    broad = inventory.broad[int(phone_class)]
    return float(FINAL_LENGTHENING_BY_BROAD_CLASS.get(broad, FINAL_LENGTHENING))


def phrase_final_lengthened(inventory, classes, mean, std, max_frames) -> tuple:
    """``(mean, std, max_frames)`` (K,) of phones of ``classes`` (K,) with the utterance's last
    phone (the one before the final silence; the last, where the transcript ends without one)
    lengthened by :func:`final_lengthening_of` (mean, deviation and longest length, frames), as
    the word graph lengthens the last word's last phone: for a duration table without statistics
    of phones before a pause (the English model). Copies; the arguments are not changed."""
    classes = np.asarray(classes, np.int64)
    sil = inventory.silence_index
    k = len(classes) - 2 if len(classes) >= 2 and classes[-1] == sil else len(classes) - 1
    mean, std, max_frames = (np.array(mean, np.float64), np.array(std, np.float64),
                             np.array(max_frames, copy=True))
    if k >= 0 and classes[k] != sil:
        f = final_lengthening_of(inventory, classes[k])
        mean[k], std[k] = mean[k] * f, std[k] * f
        max_frames[k] = int(math.ceil(max_frames[k] * f))
    return mean, std, max_frames


_COST_KINDS = {"tau_insensitive": 0, "tau_alignment": 1}


# --------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AlignmentInput:
    """Everything the feature map and the decoder need for one utterance (frames).

    Build it with :func:`make_alignment_input`, which validates and precomputes.

    Attributes:
        cum_agree: (P, T+1) float64, ``cum_agree[p, t] = sum_{u < t} A[u, p]`` with
            ``A[u, p] = g(s_u, p) - max_q g(s_u, q)`` (class-major so one phone's
            cumulative sums are contiguous in memory).
        dist: (T, 4) float64, ``dist[t, j-1] = dist_scale * ||s_{t-j} - s_{t+j}||``
            (indices clipped to [0, T-1]).
        phone_classes: (K,) int64 class index of each phone (column of ``scores``).
        dur_mean: (K,) float64 duration mean per phone, frames (floored at 1).
        dur_std: (K,) float64 duration std per phone, frames (floored at ``sigma_floor``).
        max_len: (K,) int64 maximum length of each phone, frames (the caller's
            ``max_frames``, clipped to what T allows).
        log_dur: (K, max(max_len)+1) float64, ``log_dur[k, l] = log N(l; mu_k, sigma_k)``.
        start_lo, start_hi: (K+1,) int64, the feasible start frames of phone k are
            ``start_lo[k] .. start_hi[k]`` (entry K is the end, ``T``). Every frame in the
            range lies on at least one complete valid segmentation.
        min_len: minimum length of every phone, frames (a 0-d int64 array).
        agreement_mean: dim 1 is the per-phone mean (True, SPEC) or sum (False) of the agreement.
        paced: (K,) bool, or None (every phone): whether phone k's length follows the speaker's
            rate. Dim 7 sums ``(l_k/mu_k - l_{k-1}/mu_{k-1})^2`` over the neighbours that both
            are (a pause's length is not the speaker's rate: a pause of seconds after a phone of
            ordinary length is no change of tempo).
    """

    cum_agree: np.ndarray
    dist: np.ndarray
    phone_classes: np.ndarray
    dur_mean: np.ndarray
    dur_std: np.ndarray
    max_len: np.ndarray
    log_dur: np.ndarray
    start_lo: np.ndarray
    start_hi: np.ndarray
    min_len: np.ndarray
    agreement_mean: bool = True
    paced: np.ndarray | None = None

    @property
    def n_frames(self) -> int:
        """T, the number of frames."""
        return self.dist.shape[0]

    @property
    def n_phones(self) -> int:
        """K, the number of phones."""
        return self.phone_classes.shape[0]

    @property
    def n_dp_cells(self) -> int:
        """Number of (phone, start, length) DP states = back-pointer entries (bytes while L <= 256)."""
        widths = self.max_len - int(self.min_len) + 1
        n_starts = self.start_hi[:-1] - self.start_lo[:-1] + 1
        return int(np.sum(widths[1:] * n_starts[1:]))


def _log_normal_pdf(l, mu, sigma):
    """log N(l; mu, sigma), elementwise (l, mu, sigma in frames)."""
    z = (l - mu) / sigma
    return -0.5 * z * z - np.log(sigma) - 0.5 * math.log(2.0 * math.pi)


def boundary_distances(frames: np.ndarray, dist_scale: float) -> np.ndarray:
    """``dist_scale * ||s_{t-j} - s_{t+j}||`` for every frame t and j = 1..4: shape (T, 4).

    Frame indices ``t-j`` and ``t+j`` are clipped to [0, T-1]. Float64 frames go through
    :func:`_boundary_distances64` (the same values, without the (4, T, D) temporaries).
    """
    frames = np.asarray(frames)
    T = frames.shape[0]
    if frames.dtype == np.float64 and T:
        out = np.empty((T, N_DIST), dtype=np.float64)
        _boundary_distances64(np.ascontiguousarray(frames), float(dist_scale), out)
        return out
    padded = frames[np.clip(np.arange(-N_DIST, T + N_DIST), 0, T - 1)]  # row N_DIST + t: frame clip(t)
    diff = np.empty((N_DIST, T, frames.shape[1]), dtype=frames.dtype)  # one block per j
    for j in range(1, N_DIST + 1):
        np.subtract(padded[N_DIST - j:N_DIST - j + T], padded[N_DIST + j:N_DIST + j + T], out=diff[j - 1])
    diff *= diff
    out = np.empty((T, N_DIST), dtype=np.float64)
    out[:] = np.sqrt(np.sum(diff, axis=2)).T
    out *= dist_scale
    return out


@njit(cache=True, nogil=True)
def _boundary_distances64(frames, dist_scale, out):
    """:func:`boundary_distances` of (T, D) float64 frames into ``out`` (T, N_DIST), in numpy's
    order of operations: each squared difference's D values summed pairwise as ``np.sum`` sums
    them (:func:`~aligner.features.numeric._pairwise_sum`), the root, then times ``dist_scale``."""
    T, D = frames.shape
    sq = np.empty(D)
    for t in range(T):
        for j in range(1, N_DIST + 1):
            a = max(t - j, 0)
            b = min(t + j, T - 1)
            for d in range(D):
                v = frames[a, d] - frames[b, d]
                sq[d] = v * v
            out[t, j - 1] = np.sqrt(_pairwise_sum(sq, 0, D, 1)) * dist_scale


def make_alignment_input(
    scores,
    frames,
    phone_classes,
    dur_mean,
    dur_std,
    max_frames,
    min_frames: int = 1,
    *,
    sigma_floor: float = 1.0,
    dist_scale: float | None = None,
    band: int | None = None,
    band_centre=None,
    agreement: str = "mean",
    name: str = "<utterance>",
    unpaced=None,
) -> AlignmentInput:
    """Validate one utterance and precompute what ``phi`` and the decoder need.

    Args:
        scores: (T, P) frame classifier confidences ``g(s_t, p)`` (P = 39 classes).
        frames: (T, D) acoustic vectors ``s_t`` (D = 42), normalised per utterance.
        phone_classes: (K,) int, class index (column of ``scores``) of each phone.
        dur_mean, dur_std: (K,) float, duration mean and std of each phone, frames.
        max_frames: (K,) int (or a scalar), maximum length of each phone, frames.
        min_frames: minimum length of every phone, frames (>= 1).
        sigma_floor: floor of ``dur_std``, frames (a phone never seen twice has std 0).
        dist_scale: factor on the boundary distances; default ``1/sqrt(2 D)`` (module
            docstring).
        band: optional search band, frames: phone k may only start within +-``band``
            frames of ``T * sum_{j<k} mu_j / sum_j mu_j`` (its start if every phone
            stretched alike). Off (None) by default: it is NOT lossless, it trades exactness
            for speed on long recordings (time and memory become O(K band L)).
        band_centre: optional (K,) int frames, phone k's band centre instead of the
            proportional one (e.g. a first pass's starts, :mod:`aligner.alignment.decoding.long_recordings`).
        agreement: dim 1 per phone as the ``"mean"`` of the agreement over the phone's
            frames (SPEC section 3) or their ``"sum"`` (each frame counts once, as in an HMM's
            log-likelihood); both then summed over phones and divided by K.
        name: the utterance or file name used in error messages.
        unpaced: optional (K,) bool, the phones whose length is not the speaker's rate (pauses):
            dim 7 leaves out their pairs with their neighbours (:attr:`AlignmentInput.paced`).

    Raises:
        FeatureError: malformed or non-finite ``scores``/``frames``.
        TranscriptError: empty phone sequence.
        AlignmentError: no segmentation fits (too few frames for K phones of at least
            ``min_frames``, or ``max_frames`` too short to cover T, or an empty band).
    """
    scores = np.asarray(scores, dtype=np.float64)
    frames = np.asarray(frames, dtype=np.float64)
    if scores.ndim != 2 or frames.ndim != 2:
        raise FeatureError(
            f"{name}: scores must be (T, P) and frames (T, D); got shapes {scores.shape} and {frames.shape}"
        )
    T, P = scores.shape
    if frames.shape[0] != T:
        raise FeatureError(f"{name}: scores have {T} frames but acoustic frames have {frames.shape[0]}")
    if T == 0:
        raise AlignmentError(f"{name}: no frames to align")
    if not np.all(np.isfinite(scores)):
        raise FeatureError(f"{name}: classifier scores hold NaN or infinite values")
    if not np.all(np.isfinite(frames)):
        raise FeatureError(f"{name}: acoustic frames hold NaN or infinite values")

    phone_classes = np.asarray(phone_classes, dtype=np.int64).reshape(-1)
    K = phone_classes.shape[0]
    if K == 0:
        raise TranscriptError(f"{name}: empty phone sequence")
    if phone_classes.min() < 0 or phone_classes.max() >= P:
        raise FeatureError(f"{name}: phone class indices must lie in [0, {P}) (the score columns)")
    dur_mean = np.asarray(dur_mean, dtype=np.float64).reshape(-1)
    dur_std = np.asarray(dur_std, dtype=np.float64).reshape(-1)
    max_len = np.broadcast_to(np.asarray(max_frames, dtype=np.int64), (K,)).copy()
    if dur_mean.shape != (K,) or dur_std.shape != (K,):
        raise ValueError(f"{name}: dur_mean and dur_std need one value per phone ({K})")
    if not (np.all(np.isfinite(dur_mean)) and np.all(np.isfinite(dur_std))):
        raise ValueError(f"{name}: duration statistics hold NaN or infinite values")
    min_frames = int(min_frames)
    if min_frames < 1:
        raise ValueError(f"min_frames must be >= 1, got {min_frames}")
    if np.any(max_len < min_frames):
        k = int(np.argmax(max_len < min_frames))
        raise ValueError(f"{name}: max_frames[{k}] = {max_len[k]} is below min_frames = {min_frames}")

    # --- feasibility ---------------------------------------------------------------
    check_fits(T, K, max_len, min_frames, name)
    # no phone can be longer than what the others leave
    max_len = np.minimum(max_len, T - (K - 1) * min_frames)
    band_lo = np.full(K, -1, dtype=np.int64)
    band_hi = np.full(K, T, dtype=np.int64)
    if band is not None:
        band = int(band)
        if band < 0:
            raise ValueError(f"band must be >= 0 frames, got {band}")
        if band_centre is not None:
            centre = np.asarray(band_centre, np.int64).reshape(-1)
            if centre.shape != (K,):
                raise ValueError(f"{name}: band_centre needs one frame per phone ({K})")
        else:
            mu = np.maximum(dur_mean, 1.0)
            centre = np.rint(T * np.concatenate(([0.0], np.cumsum(mu)[:-1])) / mu.sum()).astype(np.int64)
        band_lo = centre - band
        band_hi = centre + band
    start_lo, start_hi = _feasible_starts(T, max_len, min_frames, band_lo, band_hi)
    if start_lo is None:
        raise AlignmentError(
            f"{name}: no segmentation of {T} frames into {K} phones fits within a band of "
            f"+-{band} frames (widen or drop the band)"
        )

    # --- precomputation ------------------------------------------------------------
    agree = scores - scores.max(axis=1, keepdims=True)
    cum = np.zeros((P, T + 1), dtype=np.float64)
    np.cumsum(agree.T, axis=1, out=cum[:, 1:])
    if dist_scale is None:
        dist_scale = 1.0 / math.sqrt(2.0 * frames.shape[1])
    dist = boundary_distances(frames, float(dist_scale))
    mu, sigma, log_dur = _duration_table(dur_mean, dur_std, max_len, sigma_floor)

    return AlignmentInput(
        cum_agree=cum,
        dist=dist,
        phone_classes=phone_classes,
        dur_mean=mu,
        dur_std=sigma,
        max_len=max_len,
        log_dur=log_dur,
        start_lo=start_lo,
        start_hi=start_hi,
        min_len=np.asarray(min_frames, dtype=np.int64),
        agreement_mean=_agreement_is_mean(agreement),
        paced=_paced(unpaced, K, name),
    )


def _paced(unpaced, K: int, name: str) -> np.ndarray | None:
    """:attr:`AlignmentInput.paced` of ``unpaced`` (K,) bool or None: None when every phone is paced."""
    if unpaced is None:
        return None
    unpaced = np.asarray(unpaced, bool).reshape(-1)
    if unpaced.shape != (K,):
        raise ValueError(f"{name}: unpaced needs one flag per phone ({K})")
    return None if not unpaced.any() else ~unpaced


def _pair_paced(x: AlignmentInput) -> np.ndarray:
    """(K,) bool: whether dim 7 counts the pair of phones k-1, k (entry 0: no pair)."""
    if x.paced is None:
        return np.ones(x.n_phones, bool)
    pair = x.paced.copy()
    pair[1:] &= x.paced[:-1]
    return pair


def with_durations(x: AlignmentInput, dur_mean, dur_std, sigma_floor: float = 1.0) -> AlignmentInput:
    """``x`` with other duration statistics of its phones: ``dur_mean``, ``dur_std`` (K,) frames, as
    :func:`make_alignment_input` would have floored and tabulated them (the same values); the scores'
    sums, boundary distances, lengths and feasible starts, which do not depend on them, are ``x``'s."""
    mean = np.asarray(dur_mean, dtype=np.float64).reshape(-1)
    std = np.asarray(dur_std, dtype=np.float64).reshape(-1)
    if mean.shape != (x.n_phones,) or std.shape != (x.n_phones,):
        raise ValueError(f"dur_mean and dur_std need one value per phone ({x.n_phones})")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std))):
        raise ValueError("duration statistics hold NaN or infinite values")
    mu, sigma, log_dur = _duration_table(mean, std, x.max_len, sigma_floor)
    return dataclasses.replace(x, dur_mean=mu, dur_std=sigma, log_dur=log_dur)


def _duration_table(dur_mean: np.ndarray, dur_std: np.ndarray, max_len: np.ndarray, sigma_floor: float) -> tuple:
    """``(mu, sigma, log_dur)`` of an :class:`AlignmentInput`: the (K,) float64 means floored at 1 frame
    and deviations at ``sigma_floor``, and the (K, max(max_len)+1) C-contiguous ``log N(l; mu_k, sigma_k)``."""
    mu = np.maximum(dur_mean, 1.0)
    sigma = np.maximum(dur_std, float(sigma_floor))
    lengths = np.arange(int(max_len.max()) + 1, dtype=np.float64)
    return mu, sigma, np.ascontiguousarray(_log_normal_pdf(lengths[None, :], mu[:, None], sigma[:, None]))


def check_fits(T: int, K: int, max_frames, min_frames: int, name: str = "<utterance>") -> None:
    """Raise :class:`AlignmentError` (one line, naming ``name``) unless K phones of
    ``min_frames`` .. ``max_frames`` (K,) frames each can cover T frames. O(K); meant to run
    before features or DP tables are computed."""
    min_frames = int(min_frames)
    if K * min_frames > T:
        raise AlignmentError(
            f"{name}: {K} phones need at least {K * min_frames} frames "
            f"({min_frames} each), got {T} frames: the transcript is too long for the audio "
            f"({T / 100:.2f} s); check that it belongs to this recording")
    capacity = int(np.sum(np.minimum(np.asarray(max_frames, np.int64), T)))
    if capacity < T:
        raise AlignmentError(
            f"{name}: {K} phones of at most max_frames cover at most {capacity} frames, "
            f"got {T} frames: the audio ({T / 100:.2f} s) is far too long for "
            f"the transcript; check that it belongs to this recording, or cut the recording")


def dp_cells(T: int, max_frames, min_frames: int) -> int:
    """The (phone, start, length) states of the exact DP for phones of at most ``max_frames``
    (K,) frames over T frames, without building its input (O(K))."""
    max_len = np.minimum(np.asarray(max_frames, np.int64), T)
    K = len(max_len)
    lo, hi = _feasible_starts(T, max_len, int(min_frames), np.full(K, -1, np.int64), np.full(K, T, np.int64))
    if lo is None:
        return 0
    widths = max_len - int(min_frames) + 1
    return int(np.sum(widths[1:] * (hi[1:K] - lo[1:K] + 1)))


def _agreement_is_mean(agreement: str) -> bool:
    if agreement not in ("mean", "sum"):
        raise ValueError(f"agreement must be 'mean' or 'sum', got {agreement!r}")
    return agreement == "mean"


def _feasible_starts(T, max_len, min_len, band_lo, band_hi):
    """Exact start-frame ranges of every phone (plus the end ``T`` as entry K).

    Forward: the starts reachable from frame 0 form an interval (a sum of integer
    intervals); backward: keep those from which frame T is reachable. Every frame of the
    result lies on a complete valid segmentation. Returns (None, None) if none exists.
    ``max_len``, ``band_lo``, ``band_hi``: (K,) ints, frames.
    """
    lo, hi, ok = _feasible_ranges(int(T), np.ascontiguousarray(max_len, np.int64), int(min_len),
                                  np.ascontiguousarray(band_lo, np.int64), np.ascontiguousarray(band_hi, np.int64))
    return (lo, hi) if ok else (None, None)


def _feasible_ranges(T: int, max_len: np.ndarray, min_len: int, band_lo: np.ndarray, band_hi: np.ndarray) -> tuple:
    """:func:`_feasible_starts`' recursions: ``(lo (K+1,), hi (K+1,), whether any segmentation
    fits)`` (``lo``, ``hi`` meaningful only when it does), int64 frames.

    Forward, phone k's earliest start is the previous one's plus ``min_len``, raised to
    ``band_lo[k]`` (k < K), its latest the previous one's plus ``max_len[k - 1]``, lowered to
    ``band_hi[k]``: with ``lo[k] - k min_len`` and ``hi[k] - sum(max_len[:k])`` these are running
    maxima and minima. Backward, from ``T`` at entry K, likewise with the lengths still to come.
    Integer arithmetic in numpy (a few calls per decode; no numba dispatcher to load); up to
    :data:`FEASIBLE_LOOP_PHONES` phones the same recursions as Python loops
    (:func:`_feasible_ranges_loop`: a short recording's few phones cost less that way)."""
    K = len(max_len)
    if K <= FEASIBLE_LOOP_PHONES:
        return _feasible_ranges_loop(T, max_len, min_len, band_lo, band_hi)
    max_len = np.asarray(max_len, np.int64)
    band_lo, band_hi = np.asarray(band_lo, np.int64), np.asarray(band_hi, np.int64)
    lo, hi = np.zeros(K + 1, np.int64), np.zeros(K + 1, np.int64)
    if K == 0 or band_lo[0] > 0 or band_hi[0] < 0:
        return lo, hi, K == 0 and T == 0
    k = np.arange(K + 1, dtype=np.int64)
    reach = np.concatenate([[0], np.cumsum(max_len)])  # sum(max_len[:k])
    floor_lo = np.concatenate([[0], band_lo[1:] - k[1:K] * min_len, [_FAR_BELOW]])
    ceil_hi = np.concatenate([[0], band_hi[1:] - reach[1:K], [_FAR_ABOVE]])
    lo = np.maximum.accumulate(floor_lo) + k * min_len
    hi = np.minimum.accumulate(ceil_hi) + reach
    if np.any(lo[1:] > hi[1:]) or not lo[K] <= T <= hi[K]:
        return lo, hi, False
    # backward: lo[k] = max(lo[k], lo[k + 1] - max_len[k]), hi[k] = min(hi[k], hi[k + 1] - min_len)
    rest = reach[K] - reach  # sum(max_len[k:])
    lo[K] = hi[K] = T
    lo = (np.maximum.accumulate((lo + rest)[::-1]) - rest[::-1])[::-1]
    to_come = (K - k) * min_len
    hi = (np.minimum.accumulate((hi + to_come)[::-1]) - to_come[::-1])[::-1]
    return lo, hi, bool(np.all(lo <= hi))


def _feasible_ranges_loop(T: int, max_len, min_len: int, band_lo, band_hi) -> tuple:
    """:func:`_feasible_ranges` by its recursions one phone at a time (the same integers)."""
    K = len(max_len)
    max_len, band_lo, band_hi = (np.asarray(a).tolist() for a in (max_len, band_lo, band_hi))
    if K == 0 or band_lo[0] > 0 or band_hi[0] < 0:
        return np.zeros(K + 1, np.int64), np.zeros(K + 1, np.int64), K == 0 and T == 0
    lo, hi = [0] * (K + 1), [0] * (K + 1)
    for k in range(1, K):
        lo[k] = max(lo[k - 1] + min_len, band_lo[k])
        hi[k] = min(hi[k - 1] + max_len[k - 1], band_hi[k])
    lo[K], hi[K] = lo[K - 1] + min_len, hi[K - 1] + max_len[K - 1]
    if any(a > b for a, b in zip(lo[1:], hi[1:])) or not lo[K] <= T <= hi[K]:
        return np.array(lo, np.int64), np.array(hi, np.int64), False
    lo[K] = hi[K] = T
    for k in range(K - 1, -1, -1):
        lo[k] = max(lo[k], lo[k + 1] - max_len[k])
        hi[k] = min(hi[k], hi[k + 1] - min_len)
    return np.array(lo, np.int64), np.array(hi, np.int64), all(a <= b for a, b in zip(lo, hi))


#: phones up to which :func:`_feasible_ranges` loops in Python rather than in numpy
FEASIBLE_LOOP_PHONES = 24
#: sentinels of :func:`_feasible_ranges`' running extremes (far outside any frame count, no overflow)
_FAR_BELOW = -(2 ** 60)
_FAR_ABOVE = 2 ** 60


# --------------------------------------------------------------------------------------
# the dynamic program
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def hull_push(h_slope, h_icpt, h_len, nh, slope, icpt, length):
    """Add the line ``slope * a + icpt`` (from predecessor length ``length``) to the upper
    envelope ``h_*[:nh]`` of the monotone convex-hull trick (lines added in slope order),
    dropping the lines it makes useless; returns the envelope's new size."""
    while nh >= 2:
        s1 = h_slope[nh - 2]
        i1 = h_icpt[nh - 2]
        if (i1 - icpt) * (h_slope[nh - 1] - s1) <= (i1 - h_icpt[nh - 1]) * (slope - s1):
            nh -= 1
        else:
            break
    h_slope[nh] = slope
    h_icpt[nh] = icpt
    h_len[nh] = length
    return nh + 1


@njit(cache=True, nogil=True, inline="always")
def hull_breaks(h_slope, h_icpt, h_break, nh):
    """``h_break[i]``: where line i of the envelope overtakes line i - 1 (i = 1 .. nh-1)."""
    for i in range(1, nh):
        h_break[i] = (h_icpt[i - 1] - h_icpt[i]) / (h_slope[i] - h_slope[i - 1])


@njit(cache=True, nogil=True)
def _segmental_dp(cum_agree, dist, phone_classes, dur_mean, log_dur, max_len, min_len,
                  start_lo, start_hi, bp_offset, w, y_ref, eps, cost_kind, tau, bp, agreement_mean, pair_paced):
    """argmax_y w . phi(x, y) + eps * cost(y_ref, y) by a segmental DP (all in frames).

    State ``(k, e, l)``: phone k ends at frame e (exclusive, e = its successor's start)
    with length l; ``V[k, e, l]`` is the best score of phones 0..k in that state. The
    previous phone's length is the only history dim 7 needs, and it is the length of the
    state we come from, so

        V[k, s+l, l] = local(k, s, l) + max_{l'} ( V[k-1, s, l'] + c (l/mu_k - l'/mu_{k-1})^2 )

    with ``c = w_7 / K`` (0 where ``pair_paced[k]`` is False: that pair is left out of dim 7)
    and ``local`` = agreement (O(1) from ``cum_agree``) + duration (``log_dur`` table) +
    boundary distances at s + ``eps`` * the cost of starting phone k at s (both costs
    decompose over phone starts). The inner max over l' is a maximum of
    L lines in ``a = l/mu_k`` (expand the square: slope ``-2 c b``, intercept
    ``V + c b^2`` with ``b = l'/mu_{k-1}``), so for one start s all L queries cost O(L)
    with the monotone convex-hull trick instead of O(L^2): O(K T L) time overall (the
    SPEC's O(K T L^2) bound, improved by a factor L), exact for either sign of ``w_7``;
    when ``w_7 = 0`` the best predecessor is one argmax shared by every l. Before the
    hull is built, predecessors that are beaten everywhere on the query range are skipped
    (a bound, exact). The chosen l'
    is re-scored directly, so the DP value is exactly the objective of the path it
    returns. Ties are broken deterministically (same input, same output).

    Memory: two value layers of (T, L) float64 and one back-pointer per state, ``bp``
    holding ``l' - min_len`` (uint8 while L <= 256 frames), laid out per phone as
    ``bp[bp_offset[k] + (s - start_lo[k]) * width_k + (l - min_len)]``: O(K T L) bytes.
    Only feasible starts ``start_lo[k] .. start_hi[k]`` are visited; every state visited
    lies on a valid segmentation, so no -inf bookkeeping is needed.

    ``cost_kind``: 0 tau-insensitive, 1 tau-alignment. Returns (y, best objective).
    """
    K = phone_classes.shape[0]
    T = dist.shape[0]
    inv_k = 1.0 / K
    l_max = 0
    for k in range(K):
        if max_len[k] > l_max:
            l_max = max_len[k]
    width = l_max - min_len + 1

    w_agree = w[0] * inv_k
    w_dur = w[5] * inv_k
    c_paced = w[6] * inv_k

    # boundary-distance score of a phone starting at frame t (phones k >= 1)
    bscore = np.empty(T)
    for t in range(T):
        acc = 0.0
        for j in range(dist.shape[1]):
            acc += w[1 + j] * dist[t, j]
        bscore[t] = acc * inv_k
    inv_l = np.empty(l_max + 1)
    inv_l[0] = 0.0
    for l in range(1, l_max + 1):
        inv_l[l] = 1.0 / l if agreement_mean else 1.0

    n_rows = 1
    for k in range(1, K + 1):
        r = start_hi[k] - start_lo[k] + 1
        if r > n_rows:
            n_rows = r
    prev = np.empty((n_rows, width))
    cur = np.empty((n_rows, width))
    h_slope = np.empty(width)
    h_icpt = np.empty(width)
    h_len = np.empty(width, dtype=np.int64)

    # phone 0 starts at frame 0
    p = phone_classes[0]
    lo_n = start_lo[1]
    hi_n = start_hi[1]
    d = abs(0 - y_ref[0])
    if cost_kind == 0:
        cst = max(d - tau, 0.0)
    else:
        cst = 1.0 if d > tau else 0.0
    aug = eps * cst * inv_k
    for l in range(max(min_len, lo_n), min(max_len[0], hi_n) + 1):
        prev[l - lo_n, l - min_len] = (w_agree * (cum_agree[p, l] - cum_agree[p, 0]) * inv_l[l]
                                       + w_dur * log_dur[0, l] + aug)

    # per-length scratch (index = length in frames)
    b_prev = np.empty(l_max + 1)   # l'/mu_{k-1}
    q_prev = np.empty(l_max + 1)   # c (l'/mu_{k-1})^2
    x_cur = np.empty(l_max + 1)    # l/mu_k
    dur_cur = np.empty(l_max + 1)  # w_6/K log N(l; mu_k, sigma_k)
    h_break = np.empty(width)      # x where hull line i overtakes line i-1
    ub_off = np.empty(l_max + 1)   # pruning bounds, see below
    lb_off = np.empty(l_max + 1)

    for k in range(1, K):
        c = c_paced if pair_paced[k] else 0.0
        p = phone_classes[k]
        lo = start_lo[k]
        hi = start_hi[k]
        lo_p = start_lo[k - 1]
        hi_p = start_hi[k - 1]
        lo_n = start_lo[k + 1]
        hi_n = start_hi[k + 1]
        m_k = max_len[k]
        m_p = max_len[k - 1]
        r_mu = 1.0 / dur_mean[k]
        r_mu_p = 1.0 / dur_mean[k - 1]
        for lp in range(min_len, m_p + 1):
            b_prev[lp] = lp * r_mu_p
            q_prev[lp] = c * b_prev[lp] * b_prev[lp]
        for l in range(min_len, m_k + 1):
            x_cur[l] = l * r_mu
            dur_cur[l] = w_dur * log_dur[k, l]
        # Exact pruning of predecessors. Over the query range x in I = [m/mu_k, M_k/mu_k],
        # the candidate l' scores V + c (x - b)^2 with b = l'/mu_{k-1}: at most V + ub_off,
        # at least V + lb_off. A candidate whose maximum is below another's minimum
        # never wins, so it is skipped before the hull is built.
        x_lo = x_cur[min_len]
        x_hi = x_cur[m_k]
        for lp in range(min_len, m_p + 1):
            d_lo = (x_lo - b_prev[lp]) ** 2
            d_hi = (x_hi - b_prev[lp]) ** 2
            far = max(d_lo, d_hi)
            near = 0.0 if x_lo <= b_prev[lp] <= x_hi else min(d_lo, d_hi)
            if c < 0.0:
                ub_off[lp] = c * near
                lb_off[lp] = c * far
            else:
                ub_off[lp] = c * far
                lb_off[lp] = c * near
        wk = m_k - min_len + 1
        off = bp_offset[k]
        yk = y_ref[k]
        for s in range(lo, hi + 1):
            row = s - lo  # the previous layer is indexed by end frame - start_lo[k]
            a = max(min_len, s - hi_p)  # feasible previous lengths l' = a .. b
            b = min(m_p, s - lo_p)

            # --- terms that depend on the start only
            d = abs(s - yk)
            if cost_kind == 0:
                cst = max(d - tau, 0.0)
            else:
                cst = 1.0 if d > tau else 0.0
            start_score = bscore[s] + eps * cst * inv_k
            c0 = cum_agree[p, s]
            l_first = max(min_len, lo_n - s)
            l_last = min(m_k, hi_n - s)

            if c == 0.0:
                # no rate term: the best predecessor is the same for every l
                lp_best = a
                v_best = prev[row, a - min_len]
                for lp in range(a + 1, b + 1):
                    v = prev[row, lp - min_len]
                    if v > v_best:
                        v_best = v
                        lp_best = lp
                for l in range(l_first, l_last + 1):
                    cur[s + l - lo_n, l - min_len] = (v_best + start_score
                                                      + w_agree * (cum_agree[p, s + l] - c0) * inv_l[l]
                                                      + dur_cur[l])
                    bp[off + row * wk + (l - min_len)] = lp_best - min_len
                continue

            v_floor = -np.inf
            for lp in range(a, b + 1):
                v = prev[row, lp - min_len] + lb_off[lp]
                if v > v_floor:
                    v_floor = v

            # --- upper envelope of the lines y = -2 c b_l' * x + (V + c b_l'^2),
            #     added in ascending slope order (distinct slopes since c != 0)
            if c < 0.0:
                first = a
                step = 1
            else:
                first = b
                step = -1
            nh = 0
            for i in range(b - a + 1):
                lp = first + step * i
                v = prev[row, lp - min_len]
                if v + ub_off[lp] < v_floor:
                    continue
                slope = -2.0 * c * b_prev[lp]
                icpt = v + q_prev[lp]
                nh = hull_push(h_slope, h_icpt, h_len, nh, slope, icpt, lp)
            hull_breaks(h_slope, h_icpt, h_break, nh)

            # --- queries, lengths ascending (x = l/mu_k ascending)
            ptr = 0
            for l in range(l_first, l_last + 1):
                xq = x_cur[l]
                while ptr + 1 < nh and h_break[ptr + 1] <= xq:
                    ptr += 1
                lp = h_len[ptr]
                diff = xq - b_prev[lp]
                cur[s + l - lo_n, l - min_len] = (prev[row, lp - min_len] + c * diff * diff + start_score
                                                  + w_agree * (cum_agree[p, s + l] - c0) * inv_l[l]
                                                  + dur_cur[l])
                bp[off + row * wk + (l - min_len)] = lp - min_len
        tmp = prev
        prev = cur
        cur = tmp

    # the last phone ends at T: row 0 of the final layer (start_lo[K] = T)
    lo = start_lo[K - 1]
    hi = start_hi[K - 1]
    l_best = -1
    v_best = -np.inf
    for l in range(max(min_len, T - hi), min(max_len[K - 1], T - lo) + 1):
        v = prev[0, l - min_len]
        if v > v_best:
            v_best = v
            l_best = l

    y = np.empty(K, dtype=np.int64)
    s = T - l_best
    y[K - 1] = s
    length = l_best
    for k in range(K - 1, 0, -1):
        wk = max_len[k] - min_len + 1
        lp = np.int64(bp[bp_offset[k] + (s - start_lo[k]) * wk + (length - min_len)]) + min_len
        s = s - lp
        length = lp
        y[k - 1] = s
    return y, v_best


def _bp_dtype(x: AlignmentInput):
    """Smallest unsigned type holding ``l' - min_len`` for every length."""
    top = int(x.max_len.max()) - int(x.min_len)
    if top <= np.iinfo(np.uint8).max:
        return np.uint8
    if top <= np.iinfo(np.uint16).max:
        return np.uint16
    return np.int64


def _bp_offsets(x: AlignmentInput) -> np.ndarray:
    widths = x.max_len - int(x.min_len) + 1
    n_starts = x.start_hi[:-1] - x.start_lo[:-1] + 1
    sizes = widths * n_starts
    sizes[0] = 0  # phone 0 has no predecessor
    off = np.zeros(x.n_phones + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    return off


# --------------------------------------------------------------------------------------
# the task
# --------------------------------------------------------------------------------------


class AlignmentTask(StructuredTask):
    """Forced alignment (SPEC section 3) for the learning core.

    Args:
        cost_name: "tau_insensitive" (DLM eq. 17) or "tau_alignment" (DLM eq. 16), both
            over all K phone starts and divided by K (``y[0] = 0`` always agrees, so it
            adds 0 to the sum but counts in K, as in ``phi``'s own 1/K).
        tau: tolerance of the cost, frames.
        n_jobs: threads for :meth:`decode_many` (the DP releases the GIL). Each running
            decode holds its own back-pointer table, so peak memory grows with n_jobs.
    """

    n_features = 7

    def __init__(self, cost_name: str = "tau_insensitive", tau: float = 1, n_jobs: int = 2):
        if cost_name not in _COST_KINDS:
            raise ValueError(f"cost_name must be one of {sorted(_COST_KINDS)}, got {cost_name!r}")
        self.cost_name = cost_name
        self.tau = tau
        self.n_jobs = int(n_jobs)

    # ---- feature map --------------------------------------------------------------
    def phi(self, x: AlignmentInput, y) -> np.ndarray:
        """The 7 features (module docstring) of segmentation ``y`` (K start frames).

        ``y`` need not respect ``max_frames`` (a hand-labelled truth may not), only
        ``y[0] = 0``, strictly increasing, ``y[K-1] < T``.
        """
        y = _check_y(x, y)
        K = x.n_phones
        T = x.n_frames
        ends = np.append(y[1:], T)
        lengths = (ends - y).astype(np.float64)
        pc = x.phone_classes
        f = np.empty(self.n_features, dtype=np.float64)
        per_phone = x.cum_agree[pc, ends] - x.cum_agree[pc, y]
        f[0] = np.sum(per_phone / lengths) if bool(x.agreement_mean) else np.sum(per_phone)
        f[1:5] = x.dist[y[1:]].sum(axis=0)
        f[5] = np.sum(_log_normal_pdf(lengths, x.dur_mean, x.dur_std))
        rate = lengths / x.dur_mean
        f[6] = np.sum((np.diff(rate) ** 2)[_pair_paced(x)[1:]])
        return f / K

    def score(self, x: AlignmentInput, y, w) -> float:
        """``w . phi(x, y)``."""
        return float(np.dot(np.asarray(w, dtype=np.float64), self.phi(x, y)))

    # ---- cost -----------------------------------------------------------------------
    def cost(self, y, y_pred) -> float:
        """The task cost in frames, averaged over the K phone starts."""
        if self.cost_name == "tau_insensitive":
            return tau_insensitive_cost(y, y_pred, self.tau)
        return tau_alignment_cost(y, y_pred, self.tau)

    # ---- inference ------------------------------------------------------------------
    def decode(self, x: AlignmentInput, w) -> np.ndarray:
        """``argmax_y w . phi(x, y)`` over segmentations within ``[min_frames, max_frames]``."""
        return self._run(x, w, None, 0.0)[0]

    def decode_augmented(self, x: AlignmentInput, y, w, eps: float) -> np.ndarray:
        """``argmax_y' w . phi(x, y') + eps * cost(y, y')``; ``eps`` may be negative."""
        return self._run(x, w, _check_y(x, y), float(eps))[0]

    def decode_many(self, x: AlignmentInput, ws) -> list:
        """Decode ``x`` under each row of ``ws`` (n, 7), ``n_jobs`` threads in parallel."""
        ws = np.asarray(ws, dtype=np.float64).reshape(-1, self.n_features)
        n = ws.shape[0]
        n_jobs = min(self.n_jobs, n)
        if n_jobs <= 1:
            return [self.decode(x, w) for w in ws]
        chunks = np.array_split(np.arange(n), n_jobs)
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            parts = list(pool.map(lambda idx: [self.decode(x, ws[i]) for i in idx], chunks))
        return [y for part in parts for y in part]

    def _run(self, x: AlignmentInput, w, y_ref, eps: float):
        """Run the DP; returns (y, objective value)."""
        w = np.ascontiguousarray(w, dtype=np.float64).reshape(-1)
        if w.shape != (self.n_features,):
            raise ValueError(f"w must have {self.n_features} entries, got shape {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError("w holds NaN or infinite values")
        if y_ref is None:
            y_ref = np.zeros(x.n_phones, dtype=np.int64)
            eps = 0.0
        offsets = _bp_offsets(x)
        bp = np.empty(int(offsets[-1]), dtype=_bp_dtype(x))
        y, value = _segmental_dp(
            x.cum_agree, x.dist, x.phone_classes, x.dur_mean, x.log_dur, x.max_len,
            int(x.min_len), x.start_lo, x.start_hi, offsets, w, y_ref, float(eps),
            _COST_KINDS[self.cost_name], float(self.tau), bp, bool(x.agreement_mean), _pair_paced(x),
        )
        return y, float(value)


def band_input(x: AlignmentInput, centre, band: int) -> AlignmentInput | None:
    """``x`` with phone k's start restricted to ``centre[k] - band .. centre[k] + band``
    (frames; ``centre`` (K,) ints), or None when no segmentation fits that band. The same
    input :func:`make_alignment_input` builds with ``band`` and ``band_centre``, without
    recomputing the tables."""
    centre = np.asarray(centre, np.int64)
    lo, hi = _feasible_starts(x.n_frames, x.max_len, int(x.min_len), centre - int(band), centre + int(band))
    if lo is None:
        return None
    return dataclasses.replace(x, start_lo=lo, start_hi=hi)


def decode_banded(task: "AlignmentTask", x: AlignmentInput, w, centre, band: int) -> np.ndarray:
    """Start frames (K,) of ``task.decode(x, w)`` searched first within +-``band`` frames of
    ``centre`` (K,) (a first pass's starts, :func:`aligner.alignment.decoding.long_recordings.first_pass_starts`).

    The band is doubled while nothing fits it, a decoded start lies on an edge of its banded
    range that the band moved (an edge the exact ``start_lo``/``start_hi`` do not share), or a
    decoded start lies more than half the band from its centre (the first pass was that far
    off, so the exact path may lie further still); a band that covers every frame is the exact
    DP. The result is the exact DP's whenever the exact path lies inside the final band (it is
    then the band's best path too). Time and back-pointer memory O(K band L) instead of
    O(K T L) (frames throughout).
    """
    T = x.n_frames
    centre = np.asarray(centre, np.int64)
    width = max(int(band), 1)
    while width < T:
        xb = band_input(x, centre, width)
        if xb is not None:
            y = task.decode(xb, w)
            moved_lo = (xb.start_lo[:-1] > x.start_lo[:-1]) & (y == xb.start_lo[:-1])
            moved_hi = (xb.start_hi[:-1] < x.start_hi[:-1]) & (y == xb.start_hi[:-1])
            far = 2 * np.abs(y - centre) > width
            if not (np.any(moved_lo) or np.any(moved_hi) or np.any(far)):
                return y
        width *= 2
    return task.decode(x, w)


def _check_y(x: AlignmentInput, y) -> np.ndarray:
    """Validate a segmentation: (K,) ints, y[0] = 0, strictly increasing, last < T."""
    y = np.asarray(y)
    if y.shape != (x.n_phones,):
        raise ValueError(f"y must hold one start frame per phone ({x.n_phones}), got shape {y.shape}")
    if y.dtype.kind not in "iu":
        if not np.all(y == np.round(y)):
            raise ValueError("y must hold integer frame indices")
    y = y.astype(np.int64)
    if y[0] != 0 or np.any(np.diff(y) <= 0) or y[-1] >= x.n_frames:
        raise ValueError(
            f"y must start at 0, increase strictly and stay below T = {x.n_frames}; got {y.tolist()[:8]}..."
        )
    return y
