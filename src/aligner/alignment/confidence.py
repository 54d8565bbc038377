"""Per-boundary confidence and a transcript-mismatch check for decoded alignments (issue 16).

Boundary confidence
    For every phone start of a decoded alignment, the estimated probability that it lies within
    :data:`TOLERANCE_S` (20 ms) of where an annotator would put it. The first phone starts at 0 s
    by construction (as the annotator's does) and gets probability 1; every later start (the
    *boundary* before phone k, k = 1 .. K-1, between phones k-1 and k) is scored from the
    evidence columns of :func:`boundary_evidence`:

    ========  =================================================================================
    column    evidence (boundary before frame ``b = y[k]``; left phone ``k-1``, right phone ``k``)
    ========  =================================================================================
    0-1       DP score margins, ``log1p`` of the smallest drop of the alignment objective
              (un-normalised: ``K w . (phi(y) - phi(y'))``) when this boundary moves by +-1 frame
              (0) or by 2 .. :data:`MAX_MOVE` frames (1), its two neighbouring boundaries free to
              follow by up to :data:`NEIGHBOUR_MOVES` frames, the rest fixed; a move that breaks
              the decoder's length limits counts as :data:`MARGIN_CAP`
    2         log of the local posterior mass of ``|move| <= 1`` under ``exp(-drop)`` over the
              moves -:data:`MAX_MOVE` .. +:data:`MAX_MOVE` (<= 0)
    3-8       classifier score of the left minus the right phone's class, ``g(s_t, p) - g(s_t, q)``,
              at frames ``b-3 .. b+2`` (clipped to +-10)
    9-10      the best split of that difference within +-:data:`MAX_MOVE` frames of ``b`` (window
              of +-:data:`CHANGE_WINDOW` frames): its offset from ``b`` (frames) and ``log1p`` of
              how much better it splits than ``b``
    11-12     classifier agreement ``A[t, p] = g(s_t, p) - max_c g(s_t, c)`` of the left class at
              ``b-1`` and the right class at ``b`` (clipped to >= -10)
    13-14     mean agreement over the decoded frames of the left and of the right phone
    15-18     duration z-scores ``(L - mu) / sigma`` of the left and right phone (decoded lengths
              L and the decoder's statistics, frames; clipped to +-6) and their absolute values
    19-20     ``log L`` of the left and right phone (L in frames)
    21        spectral jump ``||s_{b-1} - s_{b+1}|| / sqrt(D)``
    22        spectral change at ``b`` relative to its neighbourhood: ``||s_{b-1} - s_{b+1}||``
              over its maximum for boundaries within 3 frames
    23-24     log energy (MFCC column :data:`ENERGY_COLUMN`) at ``b-1`` and ``b``
    25        the refiner's shift of the boundary from the 10 ms grid, absolute, ms
    26-27     1 for the utterance's first boundary, 1 for its last
    28-29     the class indices (:data:`~aligner.phonetics.CLASSES39`) of the left and right phone;
              :class:`BoundaryConfidence` replaces them by smoothed error logits of the classes and
              of their broad-class pair and one-hot codes of the two broad classes
    ========  =================================================================================

    The margins are computed by re-scoring the decoded path with each boundary moved, from the
    task's local terms only (agreement, duration and boundary-distance terms of the up to four
    phones whose lengths change, and the rate-change terms that involve them): O(T + K
    :data:`MAX_MOVE` :data:`NEIGHBOUR_MOVES`^2) per utterance, no second DP. At an exact DP optimum every drop is >= 0.

    :class:`BoundaryConfidence` maps the evidence to probabilities: standardised columns, a
    small L2-penalised network (or a logistic regression; optionally one per error threshold, e.g. 10, 20, 30
    and 50 ms, their logits averaged), then a calibration map fitted on out-of-fold predictions
    of the training material (speaker groups): Platt scaling of the logit (2 numbers) or isotonic
    regression (a monotone piecewise-linear map stored as its knots). Everything it learns is a
    plain float array (:meth:`BoundaryConfidence.to_arrays`), checked on load
    (:meth:`BoundaryConfidence.from_arrays`).

Transcript mismatch
    :func:`utterance_evidence` summarises a decoded utterance: the mean per-frame agreement of
    the decoded phones (a log likelihood ratio against the best class of each frame, <= 0), the
    mean boundary confidence, the share of boundaries below 0.5 confidence, the mean absolute
    duration z-score, and three local statistics of the agreement that a mismatch confined to
    one word still moves (its mean over all frames barely does): the lowest mean of the
    per-phone mean agreements of :data:`RUN_PHONES` consecutive phones, the mean of the
    :data:`WORST_PHONES` lowest per-phone mean agreements, and the lowest mean agreement over
    :data:`WINDOW_FRAMES` consecutive frames. A transcript that does not belong to the audio
    forces phones onto frames the classifier reads as something else, so the agreement drops.
    :class:`UtteranceCheck` turns them into one score (a logistic regression fitted on correct
    and deliberately mismatched transcripts of training utterances) and flags an utterance whose
    score falls below a threshold set from the training material alone: by default the
    ``false_flag_rate`` (1 %) lower tail of a normal distribution fitted (mean, standard
    deviation) to the out-of-fold (speaker-group) logits of the correct training utterances.
    The fitted tail is steadier than their empirical 1 % quantile, which rests on the one or two
    lowest of some hundred logits (rule ``"quantile"``, the first checks' rule, is kept).

Typical use (a fitted ``BoundaryConfidence`` ``conf`` and ``AlignmentModel`` ``model``)::

    x = model.make_input(frames, classes, scores, symbols=symbols)
    y = model.align_frames(x)
    starts_s = model.start_times(x, y, scores, frames, duration_s)
    p = boundary_confidences(model, frames, scores, classes, y, starts_s, confidence=conf,
                             symbols=symbols)          # (K,) probabilities, p[0] = 1
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
from numba import njit

from aligner.errors import ModelError
from aligner.frames import boundary_time
from aligner.alignment.refinement import _BROAD_OF_CLASS, N_BROAD

#: a boundary counts as correct within this distance of the annotator's, seconds
TOLERANCE_S = 0.020
#: largest move (frames) of one boundary re-scored for the margins
MAX_MOVE = 4
#: how far (frames) each neighbouring boundary may follow a moved boundary in the margins
NEIGHBOUR_MOVES = 1
#: the drop of the objective assigned to an infeasible move, and the cap of every drop
MARGIN_CAP = 50.0
#: frames relative to the boundary frame b of the classifier score differences
DIFF_OFFSETS = np.arange(-3, 3)
#: half-width (frames) of the window of the local change point of the score difference
CHANGE_WINDOW = 6
#: log energy's column in the MFCC frames (:mod:`aligner.features.mfcc`)
ENERGY_COLUMN = 13
#: columns of :func:`boundary_evidence`
EVIDENCE_NAMES = (
    "log1p_margin_1", "log1p_margin_2plus", "log_mass_within_1",
    "score_diff_b-3", "score_diff_b-2", "score_diff_b-1", "score_diff_b", "score_diff_b+1", "score_diff_b+2",
    "change_point_offset", "log1p_change_point_gain", "agree_left_before", "agree_right_at",
    "agree_left_mean", "agree_right_mean", "z_left", "z_right", "abs_z_left", "abs_z_right",
    "log_len_left", "log_len_right", "spectral_jump", "change_ratio", "energy_before", "energy_at",
    "abs_refiner_shift_ms", "first", "last", "left_class", "right_class",
)
N_EVIDENCE = len(EVIDENCE_NAMES)
#: the numeric columns come first; the last two hold class indices
N_NUMERIC = N_EVIDENCE - 2
N_CLASSES = 39
#: columns of the design matrix of :class:`BoundaryConfidence`: the numeric evidence, the
#: smoothed error logits of the broad-class pair, of the left class and of the right class, and
#: one-hot codes of the left and the right broad class
N_DESIGN = N_NUMERIC + 3 + 2 * N_BROAD
#: version 2: one network per error threshold (``thresholds_ms``), weights stacked per threshold
_FORMAT_VERSION = 2
_CALIBRATIONS = ("none", "platt", "isotonic")


# --------------------------------------------------------------------------------------
# DP score margins
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _log_density(l, mu, sigma):
    z = (l - mu) / sigma
    return -0.5 * z * z


@njit(cache=True, nogil=True)
def _boundary_dist(frames, t, j, dist_scale):
    T = frames.shape[0]
    a = min(max(t - j, 0), T - 1)
    b = min(max(t + j, 0), T - 1)
    acc = 0.0
    for i in range(frames.shape[1]):
        diff = np.float64(frames[a, i]) - np.float64(frames[b, i])
        acc += diff * diff
    return math.sqrt(acc) * dist_scale


@njit(cache=True, nogil=True)
def _frame_max(scores):
    """``max_p scores[t, p]`` (T,) float64 of scores (T, P)."""
    T, P = scores.shape
    out = np.empty(T)
    for t in range(T):
        best = np.float64(scores[t, 0])
        for p in range(1, P):
            v = np.float64(scores[t, p])
            if v > best:
                best = v
        out[t] = best
    return out


@njit(cache=True, nogil=True)
def _phone_term(pre, pre_off, pre_lo, mu, sigma, w, agreement_mean, j, s, e):
    """Agreement and duration terms (un-normalised) of phone j over frames ``s .. e - 1``.
    ``pre[pre_off[j] + t - pre_lo[j]]`` is phone j's agreement summed from frame ``pre_lo[j]``
    to ``t - 1``."""
    length = e - s
    acc = pre[pre_off[j] + e - pre_lo[j]] - pre[pre_off[j] + s - pre_lo[j]]
    return w[0] * (acc / length if agreement_mean else acc) + w[w.shape[0] - 2] * _log_density(length, mu[j], sigma[j])


@njit(cache=True, nogil=True)
def _move_drops(scores, fmax, frames, classes, y, mu, sigma, max_len, min_len, w, dist_scale,
                agreement_mean, max_move, neighbour_moves, cap):
    """Drop of the un-normalised objective ``K w . phi`` when boundary k (1 .. K-1) moves by d.

    ``scores`` (T, P) classifier scores and ``fmax`` (T,) their maximum over P (the agreement
    is ``scores[t, p] - fmax[t]``), ``frames`` (T, D), ``classes`` (K,), ``y`` (K,) start
    frames, ``mu``/``sigma``/``max_len`` (K,) frames. Returns (K, 2 max_move + 1): entry
    ``[k, max_move + d]`` is ``score(y) - max score(y')`` over the segmentations ``y'`` with
    ``y'[k] = y[k] + d`` whose neighbouring boundaries ``k-1``, ``k+1`` moved by at most
    ``neighbour_moves`` frames (0: fixed) and the rest unchanged; ``cap`` where no such ``y'``
    keeps every length within ``min_len .. max_len``; entries above ``cap`` are capped. Row 0 is 0.

    Only the terms of phones k-2 .. k+1 and the rate-change terms of the pairs with one of
    them change. Given d, the terms split into those that depend on the left neighbour's move
    e1 (phones k-2, k-1), those that depend on the right neighbour's move e2 (phones k, k+1)
    and one term coupling both (the rate change between phones k-1 and k), so each phone's
    terms are computed once per (d, e1) or (d, e2) rather than once per (d, e1, e2).
    Time O(T D + K max_move neighbour_moves^2).
    """
    T = scores.shape[0]
    K = y.shape[0]
    width = 2 * max_move + 1
    out = np.zeros((K, width))
    reach = max_move + neighbour_moves
    # prefix sums of each phone's agreement over its frames widened by `reach`
    pre_lo = np.empty(K, dtype=np.int64)
    pre_off = np.empty(K + 1, dtype=np.int64)
    pre_off[0] = 0
    for j in range(K):
        e = y[j + 1] if j + 1 < K else T
        pre_lo[j] = max(y[j] - reach, 0)
        pre_off[j + 1] = pre_off[j] + (min(e + reach, T) - pre_lo[j]) + 1
    pre = np.empty(pre_off[K])
    for j in range(K):
        p = classes[j]
        acc = 0.0
        pre[pre_off[j]] = 0.0
        for i in range(pre_off[j + 1] - pre_off[j] - 1):
            acc += np.float64(scores[pre_lo[j] + i, p]) - fmax[pre_lo[j] + i]
            pre[pre_off[j] + i + 1] = acc
    # boundary-distance score sum_j w_j dist_j(t) of every frame a boundary may move to
    n_dist = w.shape[0] - 3
    bscore = np.zeros(T)
    done = np.zeros(T, dtype=np.bool_)
    for k in range(1, K):
        for t in range(max(y[k] - reach, 0), min(y[k] + reach, T - 1) + 1):
            if not done[t]:
                acc = 0.0
                for i in range(n_dist):
                    acc += w[1 + i] * _boundary_dist(frames, t, i + 1, dist_scale)
                bscore[t] = acc
                done[t] = True
    c = w[n_dist + 2]
    n_side = 2 * neighbour_moves + 1
    left_start = np.empty(n_side, dtype=np.int64)  # start of phone k-1 per left move e1
    left_fixed = np.empty(n_side)  # terms of e1 alone: phone k-2 and its rate pair, bscore at k-1
    left_ok = np.empty(n_side, dtype=np.bool_)
    right_start = np.empty(n_side, dtype=np.int64)  # end of phone k (start of k+1) per right move e2
    right_fixed = np.empty(n_side)  # terms of e2 alone: phone k+1 and its rate pair with k+2, bscore at k+1
    right_ok = np.empty(n_side, dtype=np.bool_)
    left_val = np.empty(n_side)
    left_rate = np.empty(n_side)
    left_feasible = np.empty(n_side, dtype=np.bool_)
    right_val = np.empty(n_side)
    right_rate = np.empty(n_side)
    right_feasible = np.empty(n_side, dtype=np.bool_)
    for k in range(1, K):
        n_lo = neighbour_moves if k - 1 >= 1 else 0
        n_hi = neighbour_moves if k + 1 < K else 0
        # phone k-2 (if any) ends and phone k-1 starts at y[k-1] + e1
        for i1 in range(2 * n_lo + 1):
            s1 = y[k - 1] + i1 - n_lo
            left_start[i1] = s1
            val = 0.0
            ok = True
            if k - 2 >= 0:
                length = s1 - y[k - 2]
                ok = min_len <= length <= max_len[k - 2]
                if length >= 1:
                    val += _phone_term(pre, pre_off, pre_lo, mu, sigma, w, agreement_mean, k - 2, y[k - 2], s1)
                if k - 2 >= 1:
                    val += bscore[y[k - 2]] + c * (length / mu[k - 2] - (y[k - 2] - y[k - 3]) / mu[k - 3]) ** 2
            if k - 1 >= 1:
                val += bscore[s1]
            left_fixed[i1] = val
            left_ok[i1] = ok
        # phone k ends and phone k+1 (if any) starts at y[k+1] + e2
        for i2 in range(2 * n_hi + 1):
            val = 0.0
            ok = True
            s2 = T
            if k + 1 < K:
                s2 = y[k + 1] + i2 - n_hi
                e2 = y[k + 2] if k + 2 < K else T
                length = e2 - s2
                ok = min_len <= length <= max_len[k + 1]
                if length >= 1:
                    val += _phone_term(pre, pre_off, pre_lo, mu, sigma, w, agreement_mean, k + 1, s2, e2)
                    val += bscore[s2]
                if k + 2 <= K - 1:
                    e3 = y[k + 3] if k + 3 < K else T
                    val += c * ((e3 - e2) / mu[k + 2] - length / mu[k + 1]) ** 2
            right_start[i2] = s2
            right_fixed[i2] = val
            right_ok[i2] = ok
        base = 0.0
        for col in range(width):
            sb = y[k] + col - max_move  # phone k's start
            out[k, col] = -np.inf
            if sb < 1 or sb >= T:  # no phone fits before or after it
                continue
            for i1 in range(2 * n_lo + 1):
                s1 = left_start[i1]
                length = sb - s1
                left_feasible[i1] = left_ok[i1] and min_len <= length <= max_len[k - 1] and length >= 1
                val = left_fixed[i1]
                if length >= 1:
                    val += _phone_term(pre, pre_off, pre_lo, mu, sigma, w, agreement_mean, k - 1, s1, sb)
                    if k - 1 >= 1:
                        val += c * (length / mu[k - 1] - (s1 - y[k - 2]) / mu[k - 2]) ** 2
                left_val[i1] = val
                left_rate[i1] = length / mu[k - 1]
            for i2 in range(2 * n_hi + 1):
                e = right_start[i2]
                length = e - sb
                right_feasible[i2] = right_ok[i2] and min_len <= length <= max_len[k] and length >= 1
                val = right_fixed[i2] + bscore[sb]
                if length >= 1:
                    val += _phone_term(pre, pre_off, pre_lo, mu, sigma, w, agreement_mean, k, sb, e)
                    if k + 1 < K:
                        val += c * (((y[k + 2] if k + 2 < K else T) - e) / mu[k + 1] - length / mu[k]) ** 2
                right_val[i2] = val
                right_rate[i2] = length / mu[k]
            best = -np.inf
            for i1 in range(2 * n_lo + 1):
                for i2 in range(2 * n_hi + 1):
                    v = left_val[i1] + right_val[i2] + c * (right_rate[i2] - left_rate[i1]) ** 2
                    if col == max_move and i1 == n_lo and i2 == n_hi:
                        base = v  # the decoded path itself
                        best = max(best, v)
                    elif left_feasible[i1] and right_feasible[i2] and v > best:
                        best = v
            out[k, col] = best
        for col in range(width):  # drops, once the decoded path's score is known
            out[k, col] = cap if out[k, col] == -np.inf else min(base - out[k, col], cap)
    return out


def move_drops(model, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, y: np.ndarray,
               symbols=None, max_move: int = MAX_MOVE, neighbour_moves: int = 0) -> np.ndarray:
    """Drop of the alignment objective (un-normalised, ``K w . phi``) when each boundary alone
    moves by ``d = -max_move .. max_move`` frames: (K, 2 max_move + 1), column ``max_move + d``.

    ``model``: the :class:`~aligner.alignment.model.AlignmentModel` that decoded ``y`` (K,) start
    frames from ``frames`` (T, 42) and ``scores`` (T, 39) for phones of ``classes`` (K,)
    (written as ``symbols``, which select per-symbol duration statistics, as in decoding).
    Moves that break the decoder's length limits get :data:`MARGIN_CAP`, as do drops above it.
    Row 0 (the first phone, which always starts at frame 0) is 0. At an exact DP optimum every
    entry is >= 0 (up to rounding).
    """
    classes = np.ascontiguousarray(classes, np.int64)
    y = np.ascontiguousarray(y, np.int64)
    frames, scores = _plain(frames), _plain(scores)
    mean, std, max_frames = model.durations.for_phones(classes, symbols)
    return _drops(model, frames, scores, _frame_max(scores), classes, y, mean, std, max_frames, max_move,
                  neighbour_moves)


def _plain(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous float32 or float64 array (copied only if it is neither)."""
    a = np.asarray(a)
    if a.dtype != np.float32 and a.dtype != np.float64:
        a = a.astype(np.float64)
    return np.ascontiguousarray(a)


def _drops(model, frames, scores, fmax, classes, y, mean, std, max_frames, max_move, neighbour_moves):
    T, K = frames.shape[0], len(y)
    mu = np.maximum(np.asarray(mean, np.float64), 1.0)
    sigma = np.maximum(np.asarray(std, np.float64), 1.0)
    max_len = np.minimum(np.asarray(max_frames, np.int64), T - (K - 1) * int(model.min_frames))
    w = np.ascontiguousarray(model.weights, dtype=np.float64)
    return _move_drops(scores, fmax, frames, classes, y, mu, sigma, max_len, int(model.min_frames), w,
                       1.0 / math.sqrt(2.0 * frames.shape[1]), True, int(max_move), int(neighbour_moves),
                       MARGIN_CAP)


# --------------------------------------------------------------------------------------
# evidence
# --------------------------------------------------------------------------------------


def boundary_evidence(model, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, y: np.ndarray,
                      starts_s: np.ndarray | None = None, symbols=None) -> np.ndarray:
    """Evidence (K-1, :data:`N_EVIDENCE`) of the boundaries before phones 1 .. K-1 (module
    docstring, columns :data:`EVIDENCE_NAMES`).

    ``model``: the AlignmentModel that decoded start frames ``y`` (K,) from ``frames`` (T, 42)
    and classifier ``scores`` (T, 39) for ``classes`` (K,) written as ``symbols`` (optional, K
    symbols); ``starts_s`` (K,) the reported start times in seconds (the refiner's output; None =
    the grid times, no shift).
    """
    classes = np.asarray(classes, np.int64)
    y = np.asarray(y, np.int64)
    frames64 = np.ascontiguousarray(frames, dtype=np.float64)
    T, K = frames64.shape[0], len(y)
    if len(classes) != K or K < 1 or y[0] != 0 or np.any(np.diff(y) <= 0) or y[-1] >= T:
        raise ValueError(f"y must hold {len(classes)} strictly increasing start frames from 0 below T = {T}")
    out = np.zeros((K - 1, N_EVIDENCE))
    if K == 1:
        return out
    n = K - 1
    rows = np.arange(n)
    mean, std, max_frames = model.durations.for_phones(classes, symbols)
    mu = np.maximum(np.asarray(mean, np.float64), 1.0)
    sigma = np.maximum(np.asarray(std, np.float64), 1.0)
    s = np.asarray(scores, np.float64)
    agree = s - s.max(axis=1, keepdims=True)

    # DP margins, neighbours free to follow by NEIGHBOUR_MOVES frames
    plain_scores = _plain(scores)
    drops = _drops(model, _plain(frames), plain_scores, _frame_max(plain_scores), classes, y, mean, std, max_frames,
                   MAX_MOVE, NEIGHBOUR_MOVES)
    drops = np.maximum(drops[1:], 0.0)
    m = MAX_MOVE
    offsets = np.arange(-m, m + 1)
    out[:, 0] = np.log1p(drops[:, np.abs(offsets) == 1].min(axis=1))
    out[:, 1] = np.log1p(drops[:, np.abs(offsets) >= 2].min(axis=1))
    logits = -drops
    top = logits.max(axis=1, keepdims=True)
    inner = np.log(np.exp(logits[:, np.abs(offsets) <= 1] - top).sum(axis=1))
    out[:, 2] = inner - np.log(np.exp(logits - top).sum(axis=1))

    # classifier evidence around the boundary
    b = y[1:]
    left, right = classes[:-1], classes[1:]
    w = np.arange(-CHANGE_WINDOW, CHANGE_WINDOW)
    t = np.clip(b[:, None] + w[None, :], 0, T - 1)
    diff = np.clip(s[t, left[:, None]] - s[t, right[:, None]], -10.0, 10.0)
    out[:, 3:9] = diff[:, DIFF_OFFSETS + CHANGE_WINDOW]  # the window holds DIFF_OFFSETS
    cs = np.concatenate([np.zeros((n, 1)), np.cumsum(diff, axis=1)], axis=1)
    gain = 2.0 * cs - cs[:, -1:]  # gain[:, i]: left frames before window frame i, right from i on
    lo, hi = CHANGE_WINDOW - MAX_MOVE, CHANGE_WINDOW + MAX_MOVE + 1
    best = gain[:, lo:hi].argmax(axis=1) + lo
    out[:, 9] = best - CHANGE_WINDOW
    out[:, 10] = np.log1p(np.maximum(gain[rows, best] - gain[:, CHANGE_WINDOW], 0.0))
    before = np.maximum(b - 1, 0)
    out[:, 11] = np.maximum(agree[before, left], -10.0)
    out[:, 12] = np.maximum(agree[b, right], -10.0)
    lengths_i = np.diff(np.append(y, T))
    path_agree = agree[np.arange(T), np.repeat(classes, lengths_i)]
    cum = np.concatenate([[0.0], np.cumsum(path_agree)])
    ends = np.append(y[1:], T)
    lengths = lengths_i.astype(np.float64)
    phone_mean = (cum[ends] - cum[y]) / lengths
    out[:, 13], out[:, 14] = phone_mean[:-1], phone_mean[1:]

    # durations
    z = np.clip((lengths - mu) / sigma, -6.0, 6.0)
    out[:, 15], out[:, 16] = z[:-1], z[1:]
    out[:, 17], out[:, 18] = np.abs(z[:-1]), np.abs(z[1:])
    out[:, 19], out[:, 20] = np.log(lengths[:-1]), np.log(lengths[1:])

    # acoustics
    root_d = math.sqrt(frames64.shape[1])
    out[:, 21] = np.linalg.norm(frames64[before] - frames64[np.minimum(b + 1, T - 1)], axis=1) / root_d
    t = np.clip(b[:, None] + np.arange(-3, 4)[None, :], 0, T - 1)
    step = np.linalg.norm(frames64[np.clip(t - 1, 0, T - 1)] - frames64[np.clip(t + 1, 0, T - 1)], axis=2)
    out[:, 22] = step[:, 3] / np.maximum(step.max(axis=1), 1e-9)
    out[:, 23] = frames64[before, ENERGY_COLUMN]
    out[:, 24] = frames64[b, ENERGY_COLUMN]

    # the refiner, position, classes
    if starts_s is not None:
        starts_s = np.asarray(starts_s, np.float64)
        if starts_s.shape != (K,):
            raise ValueError(f"starts_s must hold {K} start times, got shape {starts_s.shape}")
        out[:, 25] = 1000.0 * np.abs(starts_s[1:] - boundary_time(y[1:]))
    out[0, 26] = 1.0
    out[-1, 27] = 1.0
    out[:, 28] = left
    out[:, 29] = right
    return out


# --------------------------------------------------------------------------------------
# the calibrated classifier
# --------------------------------------------------------------------------------------


def _logit(p):
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, np.float64)))


class BoundaryConfidence:
    """Probability that a decoded boundary lies within :data:`TOLERANCE_S` of the annotator's.

    The design matrix (:data:`N_DESIGN` columns) holds the numeric evidence, the logits of the
    smoothed training rate of correct boundaries of the boundary's broad-class pair, of its left
    class and of its right class, and one-hot codes of the left and right broad class; it is
    standardised and fed to a network with one layer of ``hidden`` ReLU units and a logistic
    output (L2 penalty ``alpha``; scikit-learn's ``MLPClassifier``, stored as plain weight
    arrays), or to a logistic regression with ``hidden=0``. A calibration map of its logit is
    then fitted on out-of-fold predictions over the ``groups`` given to :meth:`fit`.

    With several ``thresholds_ms`` one such model is fitted per threshold (target: the boundary's
    error is at most that many ms; :meth:`fit` then needs the errors) and the raw logit is their
    mean: the neighbouring thresholds (10, 30, 50 ms) carry ranking information the 20 ms label
    alone throws away (an error of 19 ms and one of 21 ms are labelled apart, one of 21 ms and
    one of 80 ms alike). The calibration map always targets :data:`TOLERANCE_S`.

    Parameters
    ----------
    hidden : ReLU units; 0 = logistic regression.
    alpha : L2 penalty (the network's ``alpha``; for the logistic regression ``C = 1 / alpha``).
    calibration : ``"platt"`` (logistic map of the logit, 2 numbers), ``"isotonic"`` (monotone
        piecewise-linear map, stored as its knots) or ``"none"``.
    prior : pseudo-count of the smoothing of each pair's and class's rate towards the overall rate.
    cal_folds : group folds of the out-of-fold predictions for the calibration map.
    seed : seeds the network's initialisation.
    thresholds_ms : error thresholds (ms) of the averaged models; ``(20,)`` = the tolerance only.
    """

    def __init__(self, hidden: int = 16, alpha: float = 10.0, calibration: str = "platt",
                 prior: float = 20.0, cal_folds: int = 3, seed: int = 0, thresholds_ms=(1000.0 * TOLERANCE_S,)):
        if calibration not in _CALIBRATIONS:
            raise ValueError(f"calibration must be one of {_CALIBRATIONS}, got {calibration!r}")
        th = np.atleast_1d(np.asarray(thresholds_ms, np.float64))
        if th.ndim != 1 or len(th) == 0 or not np.all(np.isfinite(th)) or np.any(th <= 0):
            raise ValueError(f"thresholds_ms must be positive numbers, got {thresholds_ms!r}")
        self.thresholds_ms = tuple(float(t) for t in th)
        self.hidden = int(hidden)
        self.alpha = float(alpha)
        self.calibration = calibration
        self.prior = float(prior)
        self.cal_folds = int(cal_folds)
        self.seed = int(seed)
        self._params = None
        #: (C,) broad-class index of every class of the model's inventory (the 39 by default;
        #: :meth:`from_arrays` takes the model's)
        self.broad_of_class: np.ndarray = _BROAD_OF_CLASS

    # -- design ----------------------------------------------------------------------------
    @staticmethod
    def _split(evidence: np.ndarray, broad_of_class: np.ndarray | None = None) -> tuple:
        E = np.asarray(evidence, np.float64)
        if E.ndim != 2 or E.shape[1] != N_EVIDENCE:
            raise ValueError(f"evidence must be (n, {N_EVIDENCE}), got shape {E.shape}")
        broad = _BROAD_OF_CLASS if broad_of_class is None else broad_of_class
        cls = E[:, N_NUMERIC:]
        if np.any(cls != np.round(cls)) or np.any(cls < 0) or np.any(cls >= len(broad)):
            raise ValueError("class columns of the evidence must hold class indices")
        left, right = cls[:, 0].astype(np.int64), cls[:, 1].astype(np.int64)
        return E[:, :N_NUMERIC], left, right, broad[left] * N_BROAD + broad[right]

    @staticmethod
    def _design(evidence, tables, broad_of_class: np.ndarray | None = None) -> np.ndarray:
        numeric, left, right, pair = BoundaryConfidence._split(evidence, broad_of_class)
        n = len(numeric)
        X = np.zeros((n, N_DESIGN))
        X[:, :N_NUMERIC] = numeric
        X[:, N_NUMERIC] = tables["pair_logit"][pair]
        X[:, N_NUMERIC + 1] = tables["left_logit"][left]
        X[:, N_NUMERIC + 2] = tables["right_logit"][right]
        X[np.arange(n), N_NUMERIC + 3 + pair // N_BROAD] = 1.0
        X[np.arange(n), N_NUMERIC + 3 + N_BROAD + pair % N_BROAD] = 1.0
        return X

    def _rate_logits(self, index, correct, size):
        count = np.bincount(index, minlength=size).astype(np.float64)
        hits = np.bincount(index, weights=correct.astype(np.float64), minlength=size)
        return _logit((hits + self.prior * correct.mean()) / (count + self.prior))

    def _fit_raw(self, E: np.ndarray, c: np.ndarray, labels: np.ndarray) -> dict:
        """The uncalibrated model's arrays, fitted on evidence E (n, N_EVIDENCE), the tolerance
        labels c (n,) (the class-rate tables) and one label column per threshold (n, M)."""
        _, left, right, pair = self._split(E, self.broad_of_class)
        n_classes = len(self.broad_of_class)
        p = {"pair_logit": self._rate_logits(pair, c, N_BROAD * N_BROAD),
             "left_logit": self._rate_logits(left, c, n_classes),
             "right_logit": self._rate_logits(right, c, n_classes)}
        X = self._design(E, p, self.broad_of_class)
        p["mean"] = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale < 1e-9] = 1.0
        p["scale"] = scale
        Z = (X - p["mean"]) / scale
        M, h = labels.shape[1], self.hidden
        p["hidden_weights"], p["hidden_bias"] = np.zeros((M, N_DESIGN, h)), np.zeros((M, h))
        p["output_weights"], p["output_bias"] = np.zeros((M, h if h else N_DESIGN)), np.zeros(M)
        for i in range(M):
            target = labels[:, i].astype(int)
            if target.min() == target.max():
                raise ValueError(f"no boundary on one side of the {self.thresholds_ms[i]:g} ms threshold")
            if h == 0:
                from sklearn.linear_model import LogisticRegression

                lr = LogisticRegression(C=1.0 / self.alpha, max_iter=3000).fit(Z, target)
                p["output_weights"][i] = lr.coef_[0]
                p["output_bias"][i] = lr.intercept_[0]
                continue
            import warnings

            from sklearn.exceptions import ConvergenceWarning
            from sklearn.neural_network import MLPClassifier

            net = MLPClassifier(hidden_layer_sizes=(h,), alpha=self.alpha, max_iter=500, random_state=self.seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                net.fit(Z, target)
            p["hidden_weights"][i] = net.coefs_[0]
            p["hidden_bias"][i] = net.intercepts_[0]
            p["output_weights"][i] = net.coefs_[1][:, 0]
            p["output_bias"][i] = net.intercepts_[1][0]
        return p

    @staticmethod
    def _raw_logit(E: np.ndarray, p: dict, broad_of_class: np.ndarray | None = None) -> np.ndarray:
        """Mean over the thresholds' models of their logits."""
        Z = (BoundaryConfidence._design(E, p, broad_of_class) - p["mean"]) / p["scale"]
        total = np.zeros(len(Z))
        M = p["output_bias"].shape[0]
        for i in range(M):
            H = np.maximum(Z @ p["hidden_weights"][i] + p["hidden_bias"][i], 0.0) if p["hidden_weights"].shape[2] \
                else Z
            total += H @ p["output_weights"][i] + p["output_bias"][i]
        return total / M

    def _labels(self, c: np.ndarray, errors_ms) -> np.ndarray:
        """(n, M) labels: error <= each threshold (the tolerance labels ``c`` for 20 ms without errors)."""
        tol_ms = 1000.0 * TOLERANCE_S
        if errors_ms is None:
            if any(abs(t - tol_ms) > 1e-9 for t in self.thresholds_ms):
                raise ValueError("thresholds other than the tolerance need the boundaries' errors (errors_ms)")
            return np.repeat(c[:, None], len(self.thresholds_ms), axis=1)
        e = np.asarray(errors_ms, np.float64)
        if e.shape != c.shape or not np.all(np.isfinite(e)):
            raise ValueError(f"errors_ms must hold {len(c)} finite errors")
        return e[:, None] <= np.asarray(self.thresholds_ms)[None, :] + 1e-6

    def fit(self, evidence, correct, groups=None, errors_ms=None) -> "BoundaryConfidence":
        """Fit on boundary evidence (n, :data:`N_EVIDENCE`) (or a list of per-utterance blocks)
        and whether each boundary was within tolerance (n,) bool; ``groups`` (n,) (e.g. the
        speaker of each boundary) split the out-of-fold predictions the calibration map is
        fitted on (None: boundaries are dealt round robin); ``errors_ms`` (n,) the boundaries'
        absolute errors, needed for ``thresholds_ms`` other than the tolerance."""
        E = np.vstack(evidence) if isinstance(evidence, (list, tuple)) else np.asarray(evidence, np.float64)
        c = (np.concatenate(correct) if isinstance(correct, (list, tuple)) else np.asarray(correct)).astype(bool)
        if isinstance(errors_ms, (list, tuple)):
            errors_ms = np.concatenate(errors_ms)
        if E.ndim != 2 or E.shape[0] != c.shape[0] or E.shape[0] == 0:
            raise ValueError(f"evidence ({E.shape}) and labels ({c.shape}) must match and be non-empty")
        if c.all() or not c.any():
            raise ValueError("need both correct and incorrect boundaries to fit a confidence model")
        if not np.all(np.isfinite(E)):
            raise ValueError("boundary evidence holds NaN or infinite values")
        labels = self._labels(c, errors_ms)
        params = self._fit_raw(E, c, labels)
        params["platt"] = np.array([1.0, 0.0])
        params["cal_x"], params["cal_y"] = np.zeros(0), np.zeros(0)
        if self.calibration != "none":
            groups = np.arange(len(c)) if groups is None else np.asarray(groups)
            names = np.unique(groups)
            n_folds = min(max(self.cal_folds, 2), len(names))
            fold_of = {g: i % n_folds for i, g in enumerate(names)}
            fold = np.array([fold_of[g] for g in groups])
            oof = np.zeros(len(c))
            for f in range(n_folds):
                tr, te = fold != f, fold == f
                if c[tr].all() or not c[tr].any():
                    raise ValueError("a calibration fold holds one kind of boundary only; give more groups")
                oof[te] = self._raw_logit(E[te], self._fit_raw(E[tr], c[tr], labels[tr]), self.broad_of_class)
            if self.calibration == "platt":
                from sklearn.linear_model import LogisticRegression

                lr = LogisticRegression(C=1e6, max_iter=1000).fit(oof[:, None], c.astype(int))
                params["platt"] = np.array([float(lr.coef_[0, 0]), float(lr.intercept_[0])])
            else:
                from sklearn.isotonic import IsotonicRegression

                iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(oof, c.astype(float))
                params["cal_x"] = np.asarray(iso.X_thresholds_, np.float64)
                params["cal_y"] = np.asarray(iso.y_thresholds_, np.float64)
        self._params = params
        return self

    def decision_function(self, evidence: np.ndarray) -> np.ndarray:
        """The uncalibrated logit (n,) of evidence (n, :data:`N_EVIDENCE`)."""
        if self._params is None:
            raise ModelError("the boundary confidence model is not fitted")
        return self._raw_logit(np.asarray(evidence, np.float64), self._params, self.broad_of_class)

    def predict_proba(self, evidence: np.ndarray) -> np.ndarray:
        """P(within tolerance) (n,) of boundaries with evidence (n, :data:`N_EVIDENCE`);
        non-decreasing in :meth:`decision_function`."""
        z = self.decision_function(evidence)
        if self.calibration == "platt":
            a, b = self._params["platt"]
            return _sigmoid(a * z + b)
        if self.calibration == "isotonic":
            return np.interp(z, self._params["cal_x"], self._params["cal_y"])
        return _sigmoid(z)

    # -- persistence -----------------------------------------------------------------------
    _ARRAYS = ("pair_logit", "left_logit", "right_logit", "mean", "scale", "hidden_weights", "hidden_bias",
               "output_weights", "output_bias", "platt", "cal_x", "cal_y")

    def to_arrays(self) -> dict:
        """Every parameter as a plain float64 (or int64) array: ``np.savez`` them, read them back
        with ``np.load(allow_pickle=False)`` and :meth:`from_arrays`."""
        if self._params is None:
            raise ModelError("the boundary confidence model is not fitted")
        out = {k: np.asarray(self._params[k], np.float64) for k in self._ARRAYS}
        out["format_version"] = np.array(_FORMAT_VERSION, np.int64)
        out["thresholds_ms"] = np.asarray(self.thresholds_ms, np.float64)
        out["settings"] = np.array([self.hidden, self.alpha, _CALIBRATIONS.index(self.calibration), self.prior,
                                    self.cal_folds, self.seed, MAX_MOVE, NEIGHBOUR_MOVES, TOLERANCE_S,
                                    N_EVIDENCE], np.float64)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray],
                    broad_of_class: np.ndarray | None = None) -> "BoundaryConfidence":
        """Rebuild from :meth:`to_arrays`; raises :class:`ModelError` (one line) on a missing,
        mis-shaped, non-finite or inconsistent array, or one made for other evidence.
        ``broad_of_class``: (C,) the broad-class index of each class of the model's inventory
        (None: the 39 classes')."""
        broad = _BROAD_OF_CLASS if broad_of_class is None else np.asarray(broad_of_class, np.int64)
        try:
            version = int(np.asarray(arrays["format_version"]))
            if version != _FORMAT_VERSION:
                raise ValueError(f"format {version}, this aligner reads format {_FORMAT_VERSION} only; refit it with "
                                 "python -m benchmarks.eval_confidence --save DIR")
            thresholds = np.asarray(arrays["thresholds_ms"], np.float64)
            if thresholds.ndim != 1 or len(thresholds) == 0 or not np.all(np.isfinite(thresholds)) \
                    or np.any(thresholds <= 0):
                raise ValueError("thresholds_ms must be 1-d positive numbers")
            settings = np.asarray(arrays["settings"], np.float64)
            if settings.shape != (10,) or not np.all(np.isfinite(settings)):
                raise ValueError("settings must be 10 finite numbers")
            hidden, alpha, cal, prior, folds, seed, max_move, neighbours, tol, n_evidence = settings
            if (int(max_move), int(neighbours), int(n_evidence)) != (MAX_MOVE, NEIGHBOUR_MOVES, N_EVIDENCE) \
                    or abs(tol - TOLERANCE_S) > 1e-12:
                raise ValueError(f"made for other evidence ({int(n_evidence)} columns, moves of {int(max_move)} "
                                 f"frames, {tol * 1000:g} ms)")
            if hidden < 0 or hidden != int(hidden) or alpha <= 0 or prior < 0 \
                    or cal != int(cal) or not 0 <= cal < len(_CALIBRATIONS):
                raise ValueError("invalid settings")
            conf = cls(int(hidden), alpha, _CALIBRATIONS[int(cal)], prior, int(folds), int(seed), thresholds)
            p = {k: np.asarray(arrays[k], np.float64) for k in cls._ARRAYS}
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"boundary confidence arrays unusable ({exc})") from None
        h, M = conf.hidden, len(conf.thresholds_ms)
        conf.broad_of_class = broad
        n_classes = len(broad)
        expect = {"pair_logit": (N_BROAD * N_BROAD,), "left_logit": (n_classes,), "right_logit": (n_classes,),
                  "mean": (N_DESIGN,), "scale": (N_DESIGN,), "hidden_weights": (M, N_DESIGN, h),
                  "hidden_bias": (M, h), "output_weights": (M, h) if h else (M, N_DESIGN), "output_bias": (M,),
                  "platt": (2,)}
        problems = [f"{k} has shape {p[k].shape}, expected {v}" for k, v in expect.items() if p[k].shape != v]
        if p["cal_x"].ndim != 1 or p["cal_x"].shape != p["cal_y"].shape:
            problems.append("cal_x and cal_y must be 1-d of one length")
        if not problems:
            if not all(np.all(np.isfinite(v)) for v in p.values()):
                problems.append("non-finite values")
            elif not np.all(p["scale"] > 0):
                problems.append("scale must be positive")
            elif conf.calibration == "platt" and not p["platt"][0] > 0:
                problems.append("the Platt map must increase (positive slope)")
            elif conf.calibration == "isotonic" and (
                    len(p["cal_x"]) < 2 or np.any(np.diff(p["cal_x"]) < 0) or np.any(np.diff(p["cal_y"]) < 0)
                    or p["cal_y"].min() < 0 or p["cal_y"].max() > 1):
                problems.append("the isotonic map must have >= 2 ascending knots with probabilities "
                                "non-decreasing in [0, 1]")
        if problems:
            raise ModelError(f"boundary confidence arrays unusable ({'; '.join(problems)})")
        conf._params = p
        return conf


def boundary_confidences(model, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, y: np.ndarray,
                         starts_s: np.ndarray | None = None, confidence: BoundaryConfidence | None = None,
                         symbols=None) -> np.ndarray:
    """P(within 20 ms of the annotator's) of every phone start: (K,), the first one 1.0.

    Arguments as for :func:`boundary_evidence`; ``confidence`` defaults to ``model.confidence``
    (a fitted :class:`BoundaryConfidence`).
    """
    confidence = confidence if confidence is not None else getattr(model, "confidence", None)
    if confidence is None:
        raise ModelError("this model has no boundary confidence model")
    E = boundary_evidence(model, frames, scores, classes, y, starts_s, symbols)
    return np.concatenate([[1.0], confidence.predict_proba(E)]) if len(E) else np.ones(1)


# --------------------------------------------------------------------------------------
# transcript mismatch
# --------------------------------------------------------------------------------------

#: columns of :func:`utterance_evidence`; checks of format 1 read the first four
UTTERANCE_EVIDENCE_NAMES = ("mean_frame_agreement", "mean_confidence", "share_below_half",
                            "mean_abs_z", "worst_run_agreement", "worst_phones_agreement",
                            "worst_window_agreement")
#: consecutive phones of the ``worst_run_agreement`` column
RUN_PHONES = 4
#: lowest per-phone agreements averaged in the ``worst_phones_agreement`` column
WORST_PHONES = 5
#: frames (0.4 s) of the ``worst_window_agreement`` column
WINDOW_FRAMES = 40
#: columns an utterance check of each format reads
_UTTERANCE_COLUMNS = {1: 4, 2: len(UTTERANCE_EVIDENCE_NAMES)}
_THRESHOLD_RULES = ("quantile", "gaussian")


def utterance_evidence(model, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, y: np.ndarray,
                       confidences: np.ndarray, symbols=None) -> np.ndarray:
    """Summary (7,) of a decoded utterance (:data:`UTTERANCE_EVIDENCE_NAMES`): mean over frames
    of the decoded phone's agreement ``A[t, p]`` (<= 0, log-likelihood ratio units per frame),
    mean boundary confidence and share of boundaries below 0.5 over phones 1 .. K-1 (1 and 0 for
    a single phone), mean absolute duration z-score of the phones, the lowest mean of the
    per-phone mean agreements of :data:`RUN_PHONES` consecutive phones, the mean of the
    :data:`WORST_PHONES` lowest per-phone mean agreements and the lowest mean agreement over
    :data:`WINDOW_FRAMES` consecutive frames (all phones or frames when there are fewer).
    ``confidences`` (K,) as returned by :func:`boundary_confidences`; other arguments as for
    :func:`boundary_evidence`.
    """
    classes = np.asarray(classes, np.int64)
    y = np.asarray(y, np.int64)
    T = len(frames)
    lengths = np.diff(np.append(y, T))
    frame_class = np.repeat(classes, lengths)
    s = np.asarray(scores)
    agree = s[np.arange(T), frame_class].astype(np.float64) - s.max(axis=1)
    mean, std, _ = model.durations.for_phones(classes, symbols)
    z = (lengths - np.maximum(mean, 1.0)) / np.maximum(std, 1.0)
    p = np.asarray(confidences, np.float64)[1:]
    cum = np.concatenate([[0.0], np.cumsum(agree)])
    phone_mean = (cum[np.append(y[1:], T)] - cum[y]) / lengths
    run = min(RUN_PHONES, len(y))
    worst_run = np.convolve(phone_mean, np.full(run, 1.0 / run), mode="valid").min()
    worst_phones = np.sort(phone_mean)[:WORST_PHONES].mean()
    w = min(WINDOW_FRAMES, T)
    worst_window = ((cum[w:] - cum[:-w]) / w).min()
    return np.array([agree.mean(), p.mean() if len(p) else 1.0, np.mean(p < 0.5) if len(p) else 0.0,
                     np.mean(np.abs(z)), worst_run, worst_phones, worst_window])


class UtteranceCheck:
    """Flags an utterance whose transcript does not match its audio.

    ``score = sigmoid(coef . standardised evidence + intercept)`` (:func:`utterance_evidence`),
    a logistic regression of P(transcript matches) fitted on correct and mismatched training
    utterances. An utterance is flagged when its logit is below ``threshold_logit``, set from the
    correct training utterances' out-of-fold logits (each predicted by a regression fitted
    without its group, e.g. its speaker): a rule fixed in advance that sees the training
    material only. ``rule="gaussian"`` (default): ``mean - z sd`` of those logits, ``z`` the
    standard normal's upper ``false_flag_rate`` quantile (the tail of a normal fitted to them);
    ``rule="quantile"``: their empirical ``false_flag_rate`` quantile.

    Fitted on evidence of 4 columns (the first four of :data:`UTTERANCE_EVIDENCE_NAMES`, format
    1) or of all 7 (format 2); :meth:`logit` reads the columns its format uses, so checks saved
    before the last three columns existed still load and score as they did.
    """

    def __init__(self, C: float = 1.0, false_flag_rate: float = 0.01, rule: str = "gaussian"):
        if not 0.0 < false_flag_rate < 1.0:
            raise ValueError(f"false_flag_rate must lie in (0, 1), got {false_flag_rate}")
        if rule not in _THRESHOLD_RULES:
            raise ValueError(f"rule must be one of {_THRESHOLD_RULES}, got {rule!r}")
        self.C = float(C)
        self.false_flag_rate = float(false_flag_rate)
        self.rule = rule
        self.mean = self.scale = self.coef = None
        self.intercept = 0.0
        self.threshold_logit = 0.0

    @property
    def n_columns(self) -> int:
        """Evidence columns the fitted check reads (4 or 7)."""
        if self.coef is None:
            raise ModelError("the utterance check is not fitted")
        return len(self.coef)

    @staticmethod
    def _regression(X, c, C):
        from sklearn.linear_model import LogisticRegression

        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale < 1e-9] = 1.0
        lr = LogisticRegression(C=C, max_iter=2000).fit((X - mean) / scale, c)
        return mean, scale, lr.coef_[0].astype(np.float64), float(lr.intercept_[0])

    def _threshold(self, oof: np.ndarray) -> float:
        if self.rule == "quantile":
            return float(np.quantile(oof, self.false_flag_rate))
        from scipy.stats import norm

        sd = float(np.std(oof, ddof=1)) if len(oof) > 1 else 0.0
        return float(np.mean(oof) - norm.isf(self.false_flag_rate) * sd)

    def fit(self, evidence_ok: np.ndarray, evidence_bad: np.ndarray, groups_ok=None, groups_bad=None,
            n_folds: int = 5, threshold_from=None) -> "UtteranceCheck":
        """``evidence_ok`` (n, 7) (or (n, 4), format 1) of correctly transcribed utterances,
        ``evidence_bad`` (m, same) of mismatched ones; ``groups_ok``/``groups_bad`` (e.g.
        speakers) split the out-of-fold logits the threshold is set from (None: utterances dealt
        round robin into ``n_folds``). ``threshold_from``: (n,) bool, the correct utterances
        whose out-of-fold logits set the threshold (None: all of them), e.g. those given as words."""
        ok = np.asarray(evidence_ok, np.float64)
        bad = np.asarray(evidence_bad, np.float64)
        if len(ok) < 2 or len(bad) < 2:
            raise ValueError("need at least 2 correct and 2 mismatched utterances")
        if ok.ndim != 2 or bad.ndim != 2 or ok.shape[1] != bad.shape[1] \
                or ok.shape[1] not in _UTTERANCE_COLUMNS.values():
            raise ValueError(f"utterance evidence must have {sorted(set(_UTTERANCE_COLUMNS.values()))} columns, "
                             f"got shapes {ok.shape} and {bad.shape}")
        X = np.vstack([ok, bad])
        c = np.r_[np.ones(len(ok)), np.zeros(len(bad))]
        self.mean, self.scale, self.coef, self.intercept = self._regression(X, c, self.C)
        g_ok = np.arange(len(ok)) if groups_ok is None else np.asarray(groups_ok)
        g_bad = np.arange(len(bad)) if groups_bad is None else np.asarray(groups_bad)
        g = np.r_[g_ok, g_bad]
        names = list(dict.fromkeys(g_ok.tolist()))
        k = min(max(n_folds, 2), len(names))
        fold_of = {name: i % k for i, name in enumerate(names)}
        fold = np.array([fold_of.get(v, -1) for v in g.tolist()])
        sets = np.r_[np.ones(len(ok), bool) if threshold_from is None else np.asarray(threshold_from, bool),
                     np.zeros(len(bad), bool)]
        if sets.shape != c.shape or not sets.any():
            raise ValueError("threshold_from must mark at least one of the correct utterances")
        oof = []
        for f in range(k):
            tr, te = fold != f, (fold == f) & sets
            if not te.any():
                continue
            if c[tr].min() == c[tr].max():
                raise ValueError("an out-of-fold split holds one kind of utterance only; give more groups")
            mean, scale, coef, icpt = self._regression(X[tr], c[tr], self.C)
            oof.append(((X[te] - mean) / scale) @ coef + icpt)
        self.threshold_logit = self._threshold(np.concatenate(oof))
        return self

    def logit(self, evidence: np.ndarray) -> np.ndarray:
        """Match logit (n,) of utterance evidence (n, 7) (format-1 checks read its first 4
        columns and take (n, 4) too); higher = transcript more likely right."""
        if self.coef is None:
            raise ModelError("the utterance check is not fitted")
        E = np.atleast_2d(np.asarray(evidence, np.float64))
        n = len(self.coef)
        if E.shape[1] < n:
            raise ValueError(f"utterance evidence must have at least {n} columns, got {E.shape[1]}")
        return ((E[:, :n] - self.mean) / self.scale) @ self.coef + self.intercept

    def score(self, evidence: np.ndarray) -> np.ndarray:
        """P(transcript matches) (n,) by the fitted logistic regression."""
        return _sigmoid(self.logit(evidence))

    def flags_probability(self, p: float) -> bool:
        """True if an utterance scored ``p`` = P(transcript matches) (:meth:`score`) is flagged."""
        p = min(max(float(p), 1e-300), 1.0 - 1e-16)
        return bool(np.log(p) - np.log1p(-p) < self.threshold_logit)

    def flag(self, evidence: np.ndarray) -> np.ndarray:
        """True (n,) for utterances whose transcript probably does not match their audio."""
        return self.logit(evidence) < self.threshold_logit

    def to_arrays(self) -> dict:
        if self.coef is None:
            raise ModelError("the utterance check is not fitted")
        version = {v: k for k, v in _UTTERANCE_COLUMNS.items()}[len(self.coef)]
        return {"format_version": np.array(version, np.int64), "mean": self.mean, "scale": self.scale,
                "coef": self.coef, "intercept": np.float64(self.intercept),
                "threshold_logit": np.float64(self.threshold_logit),
                "settings": np.array([self.C, self.false_flag_rate, _THRESHOLD_RULES.index(self.rule)], np.float64)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "UtteranceCheck":
        """Rebuild from :meth:`to_arrays` (format 2) or from a check saved before
        ``format_version`` existed (format 1: 4 evidence columns, 1 or 2 settings, quantile
        rule); raises :class:`ModelError` (one line) on anything else."""
        try:
            version = int(np.asarray(arrays["format_version"])) if "format_version" in arrays else 1
            if version not in _UTTERANCE_COLUMNS:
                raise ValueError(f"format {version}, this aligner reads formats "
                                 f"{', '.join(map(str, sorted(_UTTERANCE_COLUMNS)))}; refit it with "
                                 "python -m benchmarks.eval_confidence --save DIR")
            settings = np.asarray(arrays["settings"], np.float64)
            if settings.shape not in ((1,), (2,), (3,)):
                raise ValueError("settings must hold 1 to 3 numbers")
            if not np.all(np.isfinite(settings)):
                raise ValueError("non-finite settings")
            rule = 0 if len(settings) < 3 else settings[2]
            if rule != int(rule) or not 0 <= rule < len(_THRESHOLD_RULES):
                raise ValueError(f"threshold rule {rule:g} unknown")
            chk = cls(float(settings[0]), float(settings[1]) if len(settings) >= 2 else 0.01,
                      _THRESHOLD_RULES[int(rule)])
            chk.mean = np.asarray(arrays["mean"], np.float64)
            chk.scale = np.asarray(arrays["scale"], np.float64)
            chk.coef = np.asarray(arrays["coef"], np.float64)
            chk.intercept = float(np.asarray(arrays["intercept"], np.float64))
            chk.threshold_logit = float(np.asarray(arrays["threshold_logit"], np.float64))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"utterance check arrays unusable ({exc})") from None
        n = _UTTERANCE_COLUMNS[version]
        if not (chk.mean.shape == chk.scale.shape == chk.coef.shape == (n,)):
            raise ModelError(f"utterance check arrays unusable (format {version}: mean, scale and coef must hold "
                             f"{n} values)")
        if not all(np.all(np.isfinite(a)) for a in (chk.mean, chk.scale, chk.coef)) \
                or not (math.isfinite(chk.intercept) and math.isfinite(chk.threshold_logit)) \
                or not np.all(chk.scale > 0):
            raise ModelError("utterance check arrays unusable (non-finite values or non-positive scale)")
        return chk
