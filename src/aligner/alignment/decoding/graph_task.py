"""Forced alignment over a pronunciation graph (SPEC section 6, "Words"), as a structured task.

The linear task (:mod:`aligner.alignment.decoding.task`) aligns ONE phone sequence. Here the input
holds a :class:`~aligner.alignment.decoding.graph.PhoneGraph` (alternatives per word, optional pauses)
and the decoder chooses, exactly, the path through the graph together with the segmentation.

Output ``y``: a :class:`GraphPath` -- the node path (K node indices), the start frame of
each of its phones (``starts[0] = 0``, strictly increasing, the last phone ends at T-1), and,
for the cost, which phones start a word. K varies from path to path.

Feature map: the same 7 features as the linear task (agreement, 4 boundary distances, log
duration density, squared change of speaking rate), computed over the path's phone sequence
exactly as :meth:`AlignmentTask.phi` would for that sequence -- except the divisor, and the
silence before the first word, whose summed agreement is divided by at least
:data:`LEADING_SILENCE_MEAN_FRAMES` frames (a phone's is divided by its length).

Normalisation (the divisor Z). The linear map divides every sum over phones by K. Here K
depends on the path, and ``sum/K_path`` is not decomposable over the DP. Options
(``divisor`` of :class:`GraphAlignmentTask`):

* ``"min_phones"`` (default): Z = the fewest phones on any path of the graph, a constant of
  the utterance (for a one-path graph Z = K, and phi equals the linear task's);
* ``"frames"``: Z = T / 10 (one unit per 100 ms; a constant too, for long inputs where the
  phone count of a path is arbitrary);
* ``"path"``: Z = K of the path itself (like the linear task per path). Decoding is still
  exact: maximising a ratio ``f(y)/K(y)`` is done by Dinkelbach's iteration, each step an
  exact DP of ``f(y) - lambda K(y)`` (a per-phone bonus ``-lambda``), ending when no path
  beats the current ratio (typically 2-4 DPs). Loss-augmented decoding is not offered for
  it (``f/K + eps cost`` is neither a ratio nor decomposable): ``decode_augmented`` raises.

With a constant Z, ``argmax_y w.phi`` does not depend on Z at all (the objective is scaled
by 1/Z), but each extra phone adds its own per-phone terms, which are negative on average
(the log duration density, the agreement): a constant divisor prefers paths with fewer
phones. ``phone_bonus`` (b, added per phone) and ``pause_bonus`` (added per pause phone)
counter that, and a node's own :attr:`~aligner.alignment.decoding.graph.PhoneGraph.node_bonus`
(a pronunciation's prior, on its first phone) is added where it lies on the path; the decoder
maximises ``w.phi(x, y) + (b K(y) + b_pause P(y) + B(y)) / Z``
(:meth:`GraphAlignmentTask.score`). They are decode-time constants, not learned (they are
not in phi): a trainer learns w with them fixed. ``"path"`` normalisation is the constant
divisor with the bonus b = -lambda* chosen per utterance (lambda* the best path's mean
per-phone score). ``python -m benchmarks.words.bench_graph_decoder`` measures the options.

Cost (``cost(y, y')``, frames; the tau-insensitive or tau-alignment cost of the linear task
on phones the two paths share, plus a penalty for phones they do not share):

    cost = ( sum_{n in both paths} d(s_n, s'_n)
             + sum_{n in y' only, n starts word i} d(ws_i, s'_n)
             + P * |nodes in exactly one of the paths| ) / K(y)

with ``d(a, b) = max(|a - b| - tau, 0)`` (tau-insensitive) or ``[|a - b| > tau]``
(tau-alignment), ``ws_i`` the start of word i on the reference path y, and the mismatch
penalty ``P`` (``mismatch_cost``; default 2 frames for tau-insensitive, i.e. as much as a
boundary 30 ms off, and 1 for tau-alignment, a missed boundary). Every word starts on every
path, so a word whose pronunciation differs still has its start scored. When the paths are
the same node sequence the cost is exactly the linear task's cost of the two segmentations;
it is >= 0 and is 0 only when the paths agree (and their starts agree within tau). It
decomposes over the phones of y' (a phone of y' missing from y costs P, one on y costs
``d - P`` plus the constant ``P K(y)``), so ``decode_augmented`` is the same exact DP.

Decoder (:func:`_graph_dp`): states (node n, end frame e, length l); the predecessor's
length is the only history dim 7 needs, and the predecessor is a graph predecessor m of n:

    V[n, s+l, l] = local(n, s, l) + max_{m in pred(n), l'} ( V[m, s, l'] + c (l/mu_n - l'/mu_m)^2 )

For one start s and one predecessor m, the max over l' for every l is an upper envelope of
lines (the linear DP's convex-hull trick), so each (n, s) costs O(|pred(n)| L):
O(E T L) time overall for E edges (the linear DP is the case E = K - 1). Back-pointers
(predecessor index and l', one byte each while L <= 256) per state; value layers of
(T+1, L) float64 only for the nodes whose successors are not all done (a word graph keeps a
few alive at once). Exact: no pruning. Infeasible states hold -inf.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from aligner.alignment.decoding.graph import PhoneGraph
from aligner.alignment.decoding.task import _agreement_is_mean, _log_normal_pdf, boundary_distances, hull_breaks, hull_push
from aligner.errors import AlignmentError, FeatureError
from aligner.learn.task import StructuredTask

DIVISORS = ("min_phones", "frames", "path")
_COST_KINDS = {"tau_insensitive": 0, "tau_alignment": 1}


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GraphPath:
    """One output: ``nodes`` (K,) node path, ``starts`` (K,) start frames, ``word_start``
    (K,) the word each phone starts (-1 if it starts none). Compare with ``==``."""

    nodes: np.ndarray
    starts: np.ndarray
    word_start: np.ndarray

    def __len__(self) -> int:
        return len(self.nodes)

    def __eq__(self, other) -> bool:
        return (isinstance(other, GraphPath) and np.array_equal(self.nodes, other.nodes)
                and np.array_equal(self.starts, other.starts))

    def __hash__(self):
        return hash((self.nodes.tobytes(), self.starts.tobytes()))

    def word_starts(self) -> np.ndarray:
        """Start frame of every word (W,), in word order."""
        sel = self.word_start >= 0
        out = np.empty(int(sel.sum()), np.int64)
        out[self.word_start[sel]] = self.starts[sel]
        return out


def make_path(graph: PhoneGraph, nodes, starts) -> GraphPath:
    """A :class:`GraphPath` of ``graph`` (checks that ``nodes`` is a start-to-final path)."""
    nodes = np.asarray(nodes, np.int64).reshape(-1)
    starts = np.asarray(starts).reshape(-1)
    if starts.dtype.kind not in "iu" and not np.all(starts == np.round(starts)):
        raise ValueError("starts must be integer frame indices")
    starts = starts.astype(np.int64)
    if nodes.shape != starts.shape:
        raise ValueError(f"path: {len(nodes)} nodes but {len(starts)} start frames")
    if not graph.is_path(nodes):
        raise ValueError(f"path: {nodes.tolist()[:10]}... is not a start-to-final path of the graph")
    return GraphPath(nodes, starts, graph.word_start[nodes].copy())


# --------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GraphAlignmentInput:
    """What the feature map and the decoder need for one utterance (frames).

    Build with :func:`make_graph_input`. Per node n of ``graph``: ``dur_mean``/``dur_std``
    floored, ``max_len`` clipped to T, ``log_dur[n, l] = log N(l; mu_n, sigma_n)`` (for an
    any-length node its :attr:`PhoneGraph.flat_log_density` for every l);
    ``s_lo``/``s_hi`` the hull of n's feasible start frames and ``e_lo``/``e_hi`` of its
    feasible end frames (exact sets may have gaps; the DP holds -inf there), ``slot`` the
    value layer n uses in the DP (layers are reused once all successors are done).
    """

    cum_agree: np.ndarray
    dist: np.ndarray
    graph: PhoneGraph
    dur_mean: np.ndarray
    dur_std: np.ndarray
    max_len: np.ndarray
    log_dur: np.ndarray
    s_lo: np.ndarray
    s_hi: np.ndarray
    e_lo: np.ndarray
    e_hi: np.ndarray
    slot: np.ndarray
    n_slots: int
    min_len: int
    min_phones: int
    max_phones: int
    agreement_mean: bool = True
    name: str = "<utterance>"

    @property
    def n_frames(self) -> int:
        return self.dist.shape[0]

    @property
    def n_nodes(self) -> int:
        return self.graph.n_nodes

    def agreement_floors(self) -> np.ndarray:
        """(N,) int64 frames: node n's per-phone mean agreement divides its sum by at least this
        many frames (:data:`LEADING_SILENCE_MEAN_FRAMES` for the silence before the first word,
        else 0: by its length)."""
        g = self.graph
        return np.where(g.any_length & (g.pause_slot == 0), int(LEADING_SILENCE_MEAN_FRAMES), 0).astype(np.int64)

    def bp_offsets(self) -> np.ndarray:
        widths = self.max_len - self.min_len + 1
        rows = np.maximum(self.s_hi - self.s_lo + 1, 0)
        off = np.zeros(self.n_nodes + 1, np.int64)
        np.cumsum(widths * rows, out=off[1:])
        return off


@njit(cache=True, nogil=True, inline="always")
def _hull_of_both(a, b, lo, hi, n):
    """``lo[n], hi[n]`` = the first and last frame t where ``a[t]`` and ``b[t]`` (unchanged if none)."""
    first = True
    for t in range(a.shape[0]):
        if a[t] and b[t]:
            if first:
                lo[n] = t
                first = False
            hi[n] = t


@njit(cache=True, nogil=True)
def _feasible_hulls(pred_ptr, pred_idx, is_start, is_final, T, max_len, min_len):
    """Hulls of the exact feasible start and end frames of every node, and whether any path fits.

    Forward: the starts reachable from frame 0 and the ends they reach; backward: the ends
    from which frame T is reachable and the starts that reach them. Feasible = both.
    Returns (s_lo, s_hi, e_lo, e_hi, ok); an empty hull is (1, 0).
    """
    N = max_len.shape[0]
    start_f = np.zeros((N, T + 1), dtype=np.bool_)
    end_f = np.zeros((N, T + 1), dtype=np.bool_)
    cs = np.zeros(T + 2, dtype=np.int64)
    for n in range(N):
        if is_start[n]:
            start_f[n, 0] = True
        for i in range(pred_ptr[n], pred_ptr[n + 1]):
            m = pred_idx[i]
            for t in range(T):  # a phone cannot start at T
                if end_f[m, t]:
                    start_f[n, t] = True
        for t in range(T + 1):
            cs[t + 1] = cs[t] + (1 if start_f[n, t] else 0)
        for e in range(T + 1):
            a = max(e - max_len[n], 0)
            b = e - min_len + 1
            if b > a and cs[b] - cs[a] > 0:
                end_f[n, e] = True
    start_b = np.zeros((N, T + 1), dtype=np.bool_)
    end_b = np.zeros((N, T + 1), dtype=np.bool_)
    for n in range(N - 1, -1, -1):
        if is_final[n]:
            end_b[n, T] = True
    # successors: scan nodes in reverse; a node's successors all have larger indices
    for n in range(N - 1, -1, -1):
        # end_b[n] is complete here (successors q > n pushed into it below)
        for t in range(T + 1):
            cs[t + 1] = cs[t] + (1 if end_b[n, t] else 0)
        for s in range(T + 1):
            a = s + min_len
            b = min(s + max_len[n], T)
            if b >= a and cs[b + 1] - cs[a] > 0:
                start_b[n, s] = True
        for i in range(pred_ptr[n], pred_ptr[n + 1]):
            m = pred_idx[i]
            for t in range(T + 1):
                if start_b[n, t]:
                    end_b[m, t] = True
    s_lo = np.ones(N, dtype=np.int64)
    s_hi = np.zeros(N, dtype=np.int64)
    e_lo = np.ones(N, dtype=np.int64)
    e_hi = np.zeros(N, dtype=np.int64)
    ok = False
    for n in range(N):
        _hull_of_both(start_f[n], start_b[n], s_lo, s_hi, n)
        _hull_of_both(end_f[n], end_b[n], e_lo, e_hi, n)
        if is_final[n] and end_f[n, T]:
            ok = True
    return s_lo, s_hi, e_lo, e_hi, ok


@njit(cache=True, nogil=True)
def _slots(pred_ptr, pred_idx, is_final):
    N = pred_ptr.shape[0] - 1
    last_use = np.arange(N)  # the last node that reads n's layer (N: the end, for final nodes)
    for n in range(N):
        for i in range(pred_ptr[n], pred_ptr[n + 1]):
            m = pred_idx[i]
            if n > last_use[m]:
                last_use[m] = n
        if is_final[n]:
            last_use[n] = N
    slot = np.empty(N, np.int64)
    held_until = np.empty(N, np.int64)  # per layer: last_use of the node holding it
    n_slots = 0
    for n in range(N):
        s = -1
        for j in range(n_slots):  # the lowest layer no longer read
            if held_until[j] < n:
                s = j
                break
        if s < 0:
            s = n_slots
            n_slots += 1
        slot[n] = s
        held_until[s] = last_use[n]
    return slot, n_slots


def _assign_slots(graph: PhoneGraph) -> tuple:
    """Value layer of every node: reuse a layer once every successor of its node is done."""
    slot, n_slots = _slots(graph.pred_ptr, graph.pred_idx, graph.is_final)
    return slot, int(n_slots)


def make_graph_input(scores, frames, graph: PhoneGraph, min_frames: int = 1, *, sigma_floor: float = 1.0,
                     dist_scale: float | None = None, agreement: str = "mean",
                     name: str = "<utterance>") -> GraphAlignmentInput:
    """Validate one utterance and its graph, and precompute (as :func:`make_alignment_input`).

    Raises :class:`AlignmentError` when no path of the graph fits the T frames (naming the
    file, T, and the fewest/most phones and frames the graph allows).
    """
    scores = np.asarray(scores, dtype=np.float64)
    frames = np.asarray(frames, dtype=np.float64)
    if scores.ndim != 2 or frames.ndim != 2 or scores.shape[0] != frames.shape[0]:
        raise FeatureError(f"{name}: scores must be (T, P) and frames (T, D) with the same T; "
                           f"got {scores.shape} and {frames.shape}")
    T, P = scores.shape
    if T == 0:
        raise AlignmentError(f"{name}: no frames to align")
    if not (np.all(np.isfinite(scores)) and np.all(np.isfinite(frames))):
        raise FeatureError(f"{name}: scores or frames hold NaN or infinite values")
    if graph.classes.min() < 0 or graph.classes.max() >= P:
        raise FeatureError(f"{name}: phone class indices must lie in [0, {P}) (the score columns)")
    if not (np.all(np.isfinite(graph.dur_mean)) and np.all(np.isfinite(graph.dur_std))):
        raise ValueError(f"{name}: duration statistics hold NaN or infinite values")
    min_len = int(min_frames)
    if min_len < 1:
        raise ValueError(f"min_frames must be >= 1, got {min_len}")
    if np.any(graph.max_frames < min_len):
        raise ValueError(f"{name}: a node's max_frames is below min_frames = {min_len}")
    max_len = np.minimum(graph.max_frames, T).astype(np.int64)
    k_min, k_max = graph.phone_count_range()

    s_lo, s_hi, e_lo, e_hi, ok = _feasible_hulls(graph.pred_ptr, graph.pred_idx, graph.is_start, graph.is_final,
                                                 T, max_len, min_len)
    if not ok:
        raise AlignmentError(
            f"{name}: no path of the pronunciation graph fits {T} frames (paths hold {k_min}-{k_max} "
            f"phones of {min_len}-{int(max_len.max())} frames each; check the transcript or raise max_frames)")

    agree = scores - scores.max(axis=1, keepdims=True)
    cum = np.zeros((P, T + 1), dtype=np.float64)
    np.cumsum(agree.T, axis=1, out=cum[:, 1:])
    if dist_scale is None:
        dist_scale = 1.0 / math.sqrt(2.0 * frames.shape[1])
    dist = boundary_distances(frames, float(dist_scale))
    mu = np.maximum(graph.dur_mean, 1.0)
    sigma = np.maximum(graph.dur_std, float(sigma_floor))
    lengths = np.arange(int(max_len.max()) + 1, dtype=np.float64)
    log_dur = np.ascontiguousarray(_log_normal_pdf(lengths[None, :], mu[:, None], sigma[:, None]))
    flat = graph.any_length
    if flat.any():  # every length alike
        log_dur[flat] = graph.flat_log_density[flat][:, None]
    slot, n_slots = _assign_slots(graph)
    return GraphAlignmentInput(cum, dist, graph, mu, sigma, max_len, log_dur, s_lo, s_hi, e_lo, e_hi,
                               slot, n_slots, min_len, k_min, k_max, _agreement_is_mean(agreement), name)


#: the silence before the first word (an any-length node in the first pause slot) divides its
#: summed agreement by at least this many frames, not by its length alone. A phone's agreement is
#: its mean over its frames, so each frame of a silence of 1 or 2 frames weighs 1/2 to 1 (against
#: about 1/5 to 1/10 in a word's phones): such a silence gave away a frame that overlaps the first
#: word's onset whenever that phone's duration term wanted one more frame, and the first word of a
#: recording cut 30 ms before it started about 12 ms early (``python -m
#: benchmarks.words.eval_tight_edges --folds-dir DIR``; docs/results.md, "Edges and dialects").
#: 0: by its length, as every other phone's.
LEADING_SILENCE_MEAN_FRAMES = 3


# --------------------------------------------------------------------------------------
# the dynamic program
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _graph_dp(cum_agree, dist, classes, dur_mean, log_dur, max_len, min_len, pred_ptr, pred_idx,
              is_start, is_final, node_bias, s_lo, s_hi, e_lo, e_hi, slot, n_slots, bp_offset,
              bp_pred, bp_len, w, inv_z, phone_bonus, ref_start, node_word,
              ref_word_start, eps, inv_kref, cost_kind, tau, mismatch, agreement_mean, mean_floor):
    """argmax over paths and segmentations of the objective (module docstring), in frames.

    ``ref_start[n]``: start of node n on the reference path (-1: n not on it); ``node_word[n]``
    the word node n starts (-1: none); ``ref_word_start`` (W,) the reference word starts;
    ``mean_floor[n]``: node n's agreement sum over l frames is divided by ``max(l, mean_floor[n])``
    (with ``agreement_mean``). The augmentation adds ``eps * inv_kref * term(n, s)`` per phone (the constant
    ``eps * mismatch`` is added by the caller). Returns (nodes, starts, K, value); K = 0 if
    no path fits.
    """
    N = classes.shape[0]
    T = dist.shape[0]
    l_max = 0
    for n in range(N):
        if max_len[n] > l_max:
            l_max = max_len[n]
    width = l_max - min_len + 1
    w_agree = w[0] * inv_z
    w_dur = w[5] * inv_z
    c = w[6] * inv_z
    bscore = np.empty(T + 1)
    for t in range(T):
        acc = 0.0
        for j in range(dist.shape[1]):
            acc += w[1 + j] * dist[t, j]
        bscore[t] = acc * inv_z
    bscore[T] = 0.0
    inv_l = np.empty(l_max + 1)
    inv_l[0] = 0.0
    for l in range(1, l_max + 1):
        inv_l[l] = 1.0 / l if agreement_mean else 1.0

    vals = np.empty((n_slots, (T + 1) * width))  # layer of node n: [e * w_n + l - min_len]
    best = np.empty(l_max + 1)
    best_j = np.empty(l_max + 1, dtype=np.int64)
    best_lp = np.empty(l_max + 1, dtype=np.int64)
    x_cur = np.empty(l_max + 1)
    dur_cur = np.empty(l_max + 1)
    inv_n = np.empty(l_max + 1)  # node n's 1 / (frames its agreement is divided by), per length
    h_slope = np.empty(width)
    h_icpt = np.empty(width)
    h_len = np.empty(width, dtype=np.int64)
    h_break = np.empty(width)

    max_np = 1
    for n in range(N):
        if pred_ptr[n + 1] - pred_ptr[n] > max_np:
            max_np = pred_ptr[n + 1] - pred_ptr[n]
    ub_off = np.empty((max_np, l_max + 1))  # pruning bounds per predecessor, see below
    b_pred = np.empty((max_np, l_max + 1))  # l'/mu_m per predecessor j of the node
    q_pred = np.empty((max_np, l_max + 1))  # c (l'/mu_m)^2
    lb_off = np.empty((max_np, l_max + 1))

    for n in range(N):
        V = vals[slot[n]]
        m_n = max_len[n]
        # No clearing: a successor reads only states (start, length) with the start in
        # [s_lo, s_hi] and the end in [e_lo, e_hi], and every one of them is written below
        # (-inf where no path reaches it).
        wn = m_n - min_len + 1
        if s_lo[n] > s_hi[n]:
            continue
        p = classes[n]
        r_mu = 1.0 / dur_mean[n]
        bias = (phone_bonus + node_bias[n]) * inv_z
        floor_n = mean_floor[n]
        for l in range(min_len, m_n + 1):
            x_cur[l] = l * r_mu
            dur_cur[l] = w_dur * log_dur[n, l]
            inv_n[l] = 1.0 / floor_n if agreement_mean and l < floor_n else inv_l[l]
        # Exact pruning (as in the linear DP): over the query range x in [min_len/mu_n, m_n/mu_n]
        # a line of predecessor length l' scores V + c (x - b)^2, b = l'/mu_m: at most
        # V + ub_off, at least V + lb_off. A line whose maximum is below another line's minimum
        # (of any predecessor) never wins, so it is skipped before the hulls are built.
        x_lo = min_len * r_mu
        x_hi = m_n * r_mu
        n_pred = pred_ptr[n + 1] - pred_ptr[n]
        if c != 0.0:
            for j in range(n_pred):
                m = pred_idx[pred_ptr[n] + j]
                r_mu_p = 1.0 / dur_mean[m]
                for lp in range(min_len, max_len[m] + 1):
                    bb = lp * r_mu_p
                    b_pred[j, lp] = bb
                    q_pred[j, lp] = c * bb * bb
                    d_lo = (x_lo - bb) ** 2
                    d_hi = (x_hi - bb) ** 2
                    far = max(d_lo, d_hi)
                    near = 0.0 if x_lo <= bb <= x_hi else min(d_lo, d_hi)
                    if c < 0.0:
                        ub_off[j, lp] = c * near
                        lb_off[j, lp] = c * far
                    else:
                        ub_off[j, lp] = c * far
                        lb_off[j, lp] = c * near
        off = bp_offset[n]
        for s in range(s_lo[n], s_hi[n] + 1):
            l_first = max(min_len, e_lo[n] - s)
            l_last = min(m_n, e_hi[n] - s)
            if l_first > l_last:
                continue
            # augmentation: cost term of node n starting at s
            aug = 0.0
            if eps != 0.0:
                if ref_start[n] >= 0:
                    d = abs(s - ref_start[n])
                    if cost_kind == 0:
                        cst = max(d - tau, 0.0)
                    else:
                        cst = 1.0 if d > tau else 0.0
                    aug = cst - mismatch
                else:
                    aug = mismatch
                    if node_word[n] >= 0:
                        d = abs(s - ref_word_start[node_word[n]])
                        if cost_kind == 0:
                            aug += max(d - tau, 0.0)
                        elif d > tau:
                            aug += 1.0
                aug *= eps * inv_kref
            c0 = cum_agree[p, s]
            row = s - s_lo[n]
            if s == 0:
                if is_start[n]:
                    for l in range(l_first, l_last + 1):
                        V[l * wn + l - min_len] = (w_agree * (cum_agree[p, l] - c0) * inv_n[l] + dur_cur[l]
                                             + bias + aug)
                        bp_pred[off + row * wn + (l - min_len)] = 0
                        bp_len[off + row * wn + (l - min_len)] = 0
                continue
            start_score = bscore[s] + bias + aug
            direct = n_pred == 1  # one predecessor: write the states in the query loop
            written = False
            if not direct:
                for l in range(l_first, l_last + 1):
                    best[l] = -np.inf
            v_floor = -np.inf
            if c != 0.0:
                for j in range(n_pred):
                    m = pred_idx[pred_ptr[n] + j]
                    if s < e_lo[m] or s > e_hi[m]:
                        continue
                    Vm = vals[slot[m]]
                    row_m = s * (max_len[m] - min_len + 1) - min_len
                    # feasible predecessor lengths: its start s - l' within [s_lo[m], s_hi[m]]
                    for lp in range(max(min_len, s - s_hi[m]), min(max_len[m], s - s_lo[m]) + 1):
                        v = Vm[row_m + lp] + lb_off[j, lp]
                        if v > v_floor:
                            v_floor = v
            for j in range(n_pred):
                m = pred_idx[pred_ptr[n] + j]
                if s < e_lo[m] or s > e_hi[m]:
                    continue
                Vm = vals[slot[m]]
                row_m = s * (max_len[m] - min_len + 1) - min_len
                a = max(min_len, s - s_hi[m])
                b = min(max_len[m], s - s_lo[m])
                if a > b:
                    continue
                if c == 0.0:
                    lp_b = -1
                    v_b = -np.inf
                    for lp in range(a, b + 1):
                        v = Vm[row_m + lp]
                        if v > v_b:
                            v_b = v
                            lp_b = lp
                    if lp_b < 0:
                        continue
                    if direct:
                        written = True
                        for l in range(l_first, l_last + 1):
                            V[(s + l) * wn + l - min_len] = (v_b + start_score
                                                             + w_agree * (cum_agree[p, s + l] - c0) * inv_n[l]
                                                             + dur_cur[l])
                            bp_pred[off + row * wn + (l - min_len)] = 0
                            bp_len[off + row * wn + (l - min_len)] = lp_b - min_len
                        continue
                    for l in range(l_first, l_last + 1):
                        if v_b > best[l]:
                            best[l] = v_b
                            best_j[l] = j
                            best_lp[l] = lp_b
                    continue
                # upper envelope of y = -2 c b x + (V + c b^2), ascending slopes
                if c < 0.0:
                    first = a
                    step = 1
                else:
                    first = b
                    step = -1
                nh = 0
                for i in range(b - a + 1):
                    lp = first + step * i
                    v = Vm[row_m + lp]
                    if v == -np.inf or v + ub_off[j, lp] < v_floor:
                        continue
                    slope = -2.0 * c * b_pred[j, lp]
                    icpt = v + q_pred[j, lp]
                    nh = hull_push(h_slope, h_icpt, h_len, nh, slope, icpt, lp)
                if nh == 0:
                    continue
                hull_breaks(h_slope, h_icpt, h_break, nh)
                ptr = 0
                if direct:
                    written = True
                    for l in range(l_first, l_last + 1):
                        xq = x_cur[l]
                        while ptr + 1 < nh and h_break[ptr + 1] <= xq:
                            ptr += 1
                        lp = h_len[ptr]
                        diff = xq - b_pred[j, lp]
                        V[(s + l) * wn + l - min_len] = (Vm[row_m + lp] + c * diff * diff + start_score
                                                         + w_agree * (cum_agree[p, s + l] - c0) * inv_n[l]
                                                         + dur_cur[l])
                        bp_pred[off + row * wn + (l - min_len)] = 0
                        bp_len[off + row * wn + (l - min_len)] = lp - min_len
                    continue
                for l in range(l_first, l_last + 1):
                    xq = x_cur[l]
                    while ptr + 1 < nh and h_break[ptr + 1] <= xq:
                        ptr += 1
                    lp = h_len[ptr]
                    diff = xq - b_pred[j, lp]
                    v = Vm[row_m + lp] + c * diff * diff
                    if v > best[l]:
                        best[l] = v
                        best_j[l] = j
                        best_lp[l] = lp
            if direct:
                if not written:
                    for l in range(l_first, l_last + 1):
                        V[(s + l) * wn + l - min_len] = -np.inf
                continue
            for l in range(l_first, l_last + 1):
                if best[l] == -np.inf:
                    V[(s + l) * wn + l - min_len] = -np.inf
                    continue
                V[(s + l) * wn + l - min_len] = (best[l] + start_score + w_agree * (cum_agree[p, s + l] - c0) * inv_n[l]
                                         + dur_cur[l])
                bp_pred[off + row * wn + (l - min_len)] = best_j[l]
                bp_len[off + row * wn + (l - min_len)] = best_lp[l] - min_len

    # best final state
    n_best = -1
    l_best = -1
    v_best = -np.inf
    for n in range(N):
        if not is_final[n] or e_lo[n] > T or e_hi[n] < T:
            continue
        V = vals[slot[n]]
        for l in range(max(min_len, T - s_hi[n]), min(max_len[n], T - s_lo[n]) + 1):
            v = V[T * (max_len[n] - min_len + 1) + l - min_len]
            if v > v_best:
                v_best = v
                n_best = n
                l_best = l
    nodes = np.empty(N, dtype=np.int64)
    starts = np.empty(N, dtype=np.int64)
    if n_best < 0:
        return nodes[:0], starts[:0], 0, v_best
    k = 0
    n = n_best
    e = T
    l = l_best
    while True:
        s = e - l
        nodes[k] = n
        starts[k] = s
        k += 1
        if s == 0:
            break
        wn = max_len[n] - min_len + 1
        idx = bp_offset[n] + (s - s_lo[n]) * wn + (l - min_len)
        j = np.int64(bp_pred[idx])
        lp = np.int64(bp_len[idx]) + min_len
        n = pred_idx[pred_ptr[n] + j]
        e = s
        l = lp
    return nodes[:k][::-1].copy(), starts[:k][::-1].copy(), k, v_best


def _uint_for(top: int):
    if top <= np.iinfo(np.uint8).max:
        return np.uint8
    if top <= np.iinfo(np.uint16).max:
        return np.uint16
    return np.int64


# --------------------------------------------------------------------------------------
# the task
# --------------------------------------------------------------------------------------


class GraphAlignmentTask(StructuredTask):
    """Forced alignment over a pronunciation graph for the learning core (module docstring).

    Args:
        cost_name: ``"tau_insensitive"`` or ``"tau_alignment"`` (module docstring, "Cost").
        tau: tolerance of the cost, frames.
        mismatch_cost: P, the cost of a phone on one path only (frames for tau-insensitive);
            None: 2 for tau-insensitive, 1 for tau-alignment.
        divisor: ``"min_phones"``, ``"frames"`` or ``"path"`` (module docstring).
        phone_bonus, pause_bonus: decode-time bonuses per phone and per pause phone, in the
            units of the per-phone terms ``w . (per-phone features)``.
        n_jobs: threads for :meth:`decode_many`.
    """

    n_features = 7

    def __init__(self, cost_name: str = "tau_insensitive", tau: float = 1, mismatch_cost: float | None = None,
                 divisor: str = "min_phones", phone_bonus: float = 0.0, pause_bonus: float = 0.0,
                 n_jobs: int = 2):
        if cost_name not in _COST_KINDS:
            raise ValueError(f"cost_name must be one of {sorted(_COST_KINDS)}, got {cost_name!r}")
        if divisor not in DIVISORS:
            raise ValueError(f"divisor must be one of {DIVISORS}, got {divisor!r}")
        self.cost_name = cost_name
        self.tau = float(tau)
        if mismatch_cost is None:
            mismatch_cost = 2.0 if cost_name == "tau_insensitive" else 1.0
        self.mismatch_cost = float(mismatch_cost)
        self.divisor = divisor
        self.phone_bonus = float(phone_bonus)
        self.pause_bonus = float(pause_bonus)
        self.n_jobs = int(n_jobs)

    # ---- normalisation --------------------------------------------------------------
    def z(self, x: GraphAlignmentInput, y: GraphPath | None = None) -> float:
        """The divisor Z of ``x`` (of path ``y`` for ``divisor="path"``)."""
        if self.divisor == "min_phones":
            return float(x.min_phones)
        if self.divisor == "frames":
            return x.n_frames / 10.0
        if y is None:
            raise ValueError("divisor 'path' needs the path")
        return float(len(y))

    # ---- feature map ----------------------------------------------------------------
    def raw_features(self, x: GraphAlignmentInput, y: GraphPath) -> np.ndarray:
        """The 7 per-phone sums (not divided): ``phi = raw_features / Z``."""
        y = self._check_y(x, y)
        T = x.n_frames
        st = y.starts
        ends = np.append(st[1:], T)
        lengths = (ends - st).astype(np.float64)
        nd = y.nodes
        pc = x.graph.classes[nd]
        f = np.empty(7)
        per_phone = x.cum_agree[pc, ends] - x.cum_agree[pc, st]
        f[0] = (np.sum(per_phone / np.maximum(lengths, x.agreement_floors()[nd])) if x.agreement_mean
                else np.sum(per_phone))
        f[1:5] = x.dist[st[1:]].sum(axis=0)
        flat = x.graph.flat_log_density[nd]
        f[5] = np.sum(np.where(np.isnan(flat), _log_normal_pdf(lengths, x.dur_mean[nd], x.dur_std[nd]), flat))
        f[6] = np.sum(np.diff(lengths / x.dur_mean[nd]) ** 2)
        return f

    def phi(self, x: GraphAlignmentInput, y: GraphPath) -> np.ndarray:
        """The 7 features of path ``y`` (the linear task's, divided by Z instead of K)."""
        return self.raw_features(x, y) / self.z(x, y)

    def bonus(self, x: GraphAlignmentInput, y: GraphPath) -> float:
        """The decode-time bonus of ``y``: ``(b K + b_pause P + sum of its nodes' node_bonus) / Z``."""
        return (self.phone_bonus * len(y) + float(np.sum(self._node_bias(x.graph)[y.nodes]))) / self.z(x, y)

    def _node_bias(self, g: PhoneGraph) -> np.ndarray:
        """(N,) per node: ``pause_bonus`` for a pause, plus its :attr:`PhoneGraph.node_bonus`."""
        return self.pause_bonus * g.is_pause + g.node_bonus

    def score(self, x: GraphAlignmentInput, y: GraphPath, w) -> float:
        """The objective the decoder maximises: ``w . phi(x, y) + bonus(x, y)``."""
        return float(np.dot(np.asarray(w, float), self.phi(x, y))) + self.bonus(x, y)

    # ---- cost -------------------------------------------------------------------------
    def cost(self, y: GraphPath, y_pred: GraphPath) -> float:
        """The task cost (module docstring), frames per reference phone."""
        ref = {int(n): int(s) for n, s in zip(y.nodes, y.starts)}
        ws = y.word_starts()
        total = 0.0
        shared = 0
        for n, s, wi in zip(y_pred.nodes, y_pred.starts, y_pred.word_start):
            r = ref.get(int(n))
            if r is not None:
                total += self._d(abs(int(s) - r))
                shared += 1
            else:
                total += self.mismatch_cost
                if wi >= 0:
                    total += self._d(abs(int(s) - int(ws[wi])))
        total += self.mismatch_cost * (len(y) - shared)
        return total / len(y)

    def _d(self, diff: int) -> float:
        if self.cost_name == "tau_insensitive":
            return max(diff - self.tau, 0.0)
        return 1.0 if diff > self.tau else 0.0

    def same(self, y, y_other) -> bool:
        return y == y_other

    # ---- inference --------------------------------------------------------------------
    def decode(self, x: GraphAlignmentInput, w) -> GraphPath:
        """``argmax_y w . phi(x, y) + bonus(x, y)`` over paths and segmentations."""
        return self._decode(x, w)[0]

    def decode_augmented(self, x: GraphAlignmentInput, y, w, eps: float) -> GraphPath:
        """``argmax_y' w . phi(x, y') + bonus(x, y') + eps * cost(y, y')``; ``eps`` may be negative."""
        if self.divisor == "path" and eps != 0.0:
            raise NotImplementedError("loss-augmented decoding is not exact with divisor='path' "
                                      "(use 'min_phones' or 'frames' to train)")
        return self._run(x, w, self._check_y(x, y), float(eps), 1.0 / self.z(x), self.phone_bonus)[0]

    def decode_many(self, x: GraphAlignmentInput, ws) -> list:
        ws = np.asarray(ws, dtype=np.float64).reshape(-1, self.n_features)
        n_jobs = min(self.n_jobs, ws.shape[0])
        if n_jobs <= 1:
            return [self.decode(x, w) for w in ws]
        chunks = np.array_split(np.arange(ws.shape[0]), n_jobs)
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            parts = list(pool.map(lambda idx: [self.decode(x, ws[i]) for i in idx], chunks))
        return [y for part in parts for y in part]

    def decode_with_value(self, x: GraphAlignmentInput, w) -> tuple:
        """``(y, objective)`` of :meth:`decode`."""
        return self._decode(x, w)

    def _decode(self, x, w):
        if self.divisor != "path":
            return self._run(x, w, None, 0.0, 1.0 / self.z(x), self.phone_bonus)
        # Dinkelbach: max f(y)/K(y) with f = w . raw + b_pause P; each step max f - lam K
        y, _ = self._run(x, w, None, 0.0, 1.0, 0.0)
        w = np.asarray(w, float)

        bias = self._node_bias(x.graph)

        def ratio(p):
            return (float(np.dot(w, self.raw_features(x, p))) + float(np.sum(bias[p.nodes]))) / len(p)

        lam = ratio(y)
        for _ in range(100):
            y_new, val = self._run(x, w, None, 0.0, 1.0, -lam)
            if val <= 1e-9 * max(1.0, abs(lam) * len(y_new)) or y_new == y:
                break
            y, lam = y_new, ratio(y_new)
        return y, lam + self.phone_bonus

    def _run(self, x: GraphAlignmentInput, w, y_ref, eps, inv_z, phone_bonus):
        w = np.ascontiguousarray(w, dtype=np.float64).reshape(-1)
        if w.shape != (self.n_features,):
            raise ValueError(f"w must have {self.n_features} entries, got shape {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError("w holds NaN or infinite values")
        g = x.graph
        N = g.n_nodes
        ref_start = np.full(N, -1, np.int64)
        if y_ref is None:
            ref_ws = np.zeros(max(g.n_words, 1), np.int64)
            eps = 0.0
            inv_kref = 0.0
        else:
            ref_start[y_ref.nodes] = y_ref.starts
            ref_ws = y_ref.word_starts()
            if len(ref_ws) == 0:
                ref_ws = np.zeros(1, np.int64)
            inv_kref = 1.0 / len(y_ref)
        off = x.bp_offsets()
        bp_len = np.empty(int(off[-1]), dtype=_uint_for(int(x.max_len.max()) - x.min_len))
        max_pred = int(np.max(np.diff(g.pred_ptr))) if N else 0
        bp_pred = np.empty(int(off[-1]), dtype=_uint_for(max(max_pred - 1, 0)))
        nodes, starts, k, value = _graph_dp(
            x.cum_agree, x.dist, g.classes, x.dur_mean, x.log_dur, x.max_len, x.min_len, g.pred_ptr,
            g.pred_idx, g.is_start, g.is_final, self._node_bias(g), x.s_lo, x.s_hi, x.e_lo, x.e_hi, x.slot,
            x.n_slots, off, bp_pred, bp_len, w, float(inv_z), float(phone_bonus),
            ref_start, g.word_start, ref_ws, float(eps), float(inv_kref), _COST_KINDS[self.cost_name],
            self.tau, self.mismatch_cost, bool(x.agreement_mean), x.agreement_floors())
        if k == 0:
            raise AlignmentError(f"{x.name}: no path of the pronunciation graph fits {x.n_frames} frames")
        return GraphPath(nodes, starts, g.word_start[nodes].copy()), float(value) + eps * self.mismatch_cost

    def _check_y(self, x: GraphAlignmentInput, y) -> GraphPath:
        if not isinstance(y, GraphPath):
            raise ValueError(f"y must be a GraphPath, got {type(y).__name__}")
        st = y.starts
        if len(st) == 0 or st[0] != 0 or np.any(np.diff(st) <= 0) or st[-1] >= x.n_frames:
            raise ValueError(f"y: starts must begin at 0, increase strictly and stay below T = {x.n_frames}")
        if len(y.nodes) and (y.nodes.max() >= x.n_nodes or y.nodes.min() < 0):
            raise ValueError("y: node index out of range")
        return y
