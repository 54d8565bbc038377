"""Evidence of each decoded boundary: the decoder's score margins and the frames around it.

Every boundary of a decoded alignment (the *boundary* before phone k, k = 1 .. K-1, between
phones k-1 and k; the first phone starts at frame 0 by construction) gets the evidence columns
of :func:`boundary_evidence`:

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
28-29     the class indices (:data:`~aligner.phones.sets.CLASSES39`) of the left and right phone;
          :class:`~aligner.alignment.review.confidence.BoundaryConfidence`
          replaces them by smoothed error logits of the classes and
          of their broad-class pair and one-hot codes of the two broad classes
========  =================================================================================

The margins are computed by re-scoring the decoded path with each boundary moved, from the
task's local terms only (agreement, duration and boundary-distance terms of the up to four
phones whose lengths change, and the rate-change terms that involve them): O(T + K
:data:`MAX_MOVE` :data:`NEIGHBOUR_MOVES`^2) per utterance, no second DP. At an exact DP optimum every drop is >= 0.

:mod:`aligner.alignment.review.confidence` maps the evidence to probabilities.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from aligner.frames import boundary_time

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


def _frame_max(scores: np.ndarray) -> np.ndarray:
    """``max_p scores[t, p]`` (T,) float64 of finite scores (T, P) (float32 or float64; the
    maximum is one of the values, so taking it before widening gives the same numbers). Plain
    numpy: one call per recording, where a numba dispatcher would cost a process its cache load."""
    return np.max(scores, axis=1).astype(np.float64)


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
