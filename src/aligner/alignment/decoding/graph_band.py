"""Decoding a pronunciation graph within a band around a first pass (inference only).

The exact graph DP (:func:`aligner.alignment.decoding.graph_task._graph_dp`) visits every node at every
start frame the graph's lengths allow. With an optional pause between every two words (up
to :data:`~aligner.alignment.decoding.words.PAUSE_SYMBOL`'s longest duration each), nearly every node
may start nearly anywhere, so the DP visits several times the states of the linear DP over
one phone sequence. :func:`decode_banded` decodes in two passes:

1. **First pass** (:func:`graph_viterbi`): a frame-synchronous Viterbi over a hidden Markov
   model with one state per graph node and the graph's edges (emission: the classifier
   agreement ``A[t, p_n]``, the DP's dim 1; leaving node n costs ``log(1 / mu_n)``, staying
   ``log(1 - 1 / mu_n)``, ``mu_n`` its mean duration in frames; a node is left once the best
   path into it has stayed its longest length ``max_len_n``, as in the phones' first pass of
   :mod:`aligner.alignment.decoding.long_recordings`: without that limit, one phone whose
   agreement tops the silence's in a pause, a universal view's stop among them, held a pause and
   the next word, and the words after it were squeezed into the frames left). It chooses a path,
   so it places every word and every pause it takes. Time O(T (N + E)), back-pointers T x N.
2. **Second pass**: the exact graph DP with every node's start restricted to a band: the
   phones of word i (of every pronunciation) to within ``band`` frames of the first pass's
   span of word i and the pauses beside it, the pause between words i and i+1 to within
   ``band`` frames of the first pass's span of those two words. While a decoded start lands on a band edge that cut the
   node's feasible starts (or no path fits the band), the band is doubled; a band as long
   as the utterance is the exact DP.

The result equals the exact DP's whenever the exact path lies inside the band (then it is
the best path of the band too); ``python -m benchmarks.words.bench_graph_band`` measures how often
that holds and the time saved. Training (:class:`~aligner.alignment.decoding.graph_task.GraphAlignmentTask`'s
``decode`` and ``decode_augmented``) stays exact.

Frames are the 10 ms frames of :mod:`aligner.frames`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from aligner.alignment.decoding.graph_task import GraphAlignmentInput, GraphAlignmentTask, GraphPath
from aligner.errors import AlignmentError

#: half-width, in frames, of the band around the first pass's word spans and pauses
WORD_BAND_FRAMES = 40


@njit(cache=True, nogil=True)
def _graph_viterbi(cum_agree, classes, log_stay, log_leave, pred_ptr, pred_idx, is_start, is_final, max_len):
    """Nodes (K,) and start frames (K,) of the best HMM path, or empty arrays if none. A node
    whose best path has stayed ``max_len[n]`` frames in it may only be left (the length of that
    path's segment is carried along)."""
    N = classes.shape[0]
    T = cum_agree.shape[1] - 1
    neg = -np.inf
    v = np.full(N, neg)
    nv = np.empty(N)
    run = np.zeros(N, np.int64)  # frames the best path into each node has spent in it
    nrun = np.zeros(N, np.int64)
    came = np.empty((T, N), np.int16)  # -1: stayed in n; j >= 0: entered from predecessor j
    for n in range(N):
        if is_start[n]:
            p = classes[n]
            v[n] = cum_agree[p, 1] - cum_agree[p, 0]
            run[n] = 1
    for t in range(1, T):
        for n in range(N):
            best = v[n] + log_stay[n] if v[n] > neg and run[n] < max_len[n] else neg
            arg = -1
            for i in range(pred_ptr[n], pred_ptr[n + 1]):
                m = pred_idx[i]
                if v[m] > neg:
                    cand = v[m] + log_leave[m]
                    if cand > best:
                        best = cand
                        arg = i - pred_ptr[n]
            came[t, n] = arg
            nrun[n] = run[n] + 1 if arg < 0 else 1
            if best > neg:
                p = classes[n]
                nv[n] = best + (cum_agree[p, t + 1] - cum_agree[p, t])
            else:
                nv[n] = neg
        v, nv = nv, v
        run, nrun = nrun, run
    n_best, v_best = -1, neg
    for n in range(N):
        if is_final[n] and v[n] > v_best:
            v_best, n_best = v[n], n
    nodes = np.empty(T, np.int64)
    starts = np.empty(T, np.int64)
    if n_best < 0:
        return nodes[:0], starts[:0]
    k = 0
    n = n_best
    for t in range(T - 1, 0, -1):
        j = came[t, n]
        if j >= 0:
            nodes[k] = n
            starts[k] = t
            k += 1
            n = pred_idx[pred_ptr[n] + j]
    nodes[k] = n
    starts[k] = 0
    k += 1
    if not is_start[n]:
        return nodes[:0], starts[:0]
    return nodes[:k][::-1].copy(), starts[:k][::-1].copy()


def graph_viterbi(x: GraphAlignmentInput) -> tuple:
    """The first pass (module docstring): ``(nodes, starts)`` of the best HMM path through
    ``x.graph`` over its T frames (empty arrays if no path has at least one frame per node)."""
    g = x.graph
    mu = np.maximum(np.asarray(x.dur_mean, np.float64), 1.0)
    with np.errstate(divide="ignore"):
        log_stay = np.log1p(-1.0 / mu)
    log_leave = -np.log(mu)
    return _graph_viterbi(x.cum_agree, g.classes, log_stay, log_leave, g.pred_ptr, g.pred_idx,
                          g.is_start, g.is_final, np.asarray(x.max_len, np.int64))


def word_bands(x: GraphAlignmentInput, nodes: np.ndarray, starts: np.ndarray, band: int) -> tuple:
    """Per node, the start frames ``(lo, hi)`` (N,) allowed within ``band`` frames of the
    first pass's path ``(nodes, starts)``: a word's phones around that word's span, a pause
    around the gap it fills."""
    g = x.graph
    T, W = x.n_frames, g.n_words
    ends = np.append(starts[1:], T)
    word_first = np.full(W, T, np.int64)
    word_last = np.zeros(W, np.int64)
    on_word = g.word[nodes]
    sel = on_word >= 0
    np.minimum.at(word_first, on_word[sel], starts[sel])
    np.maximum.at(word_last, on_word[sel], ends[sel])
    gap_lo = np.concatenate([[0], word_last])    # gap i lies between word i-1 and word i
    gap_hi = np.concatenate([word_first, [T]])
    is_word = g.word >= 0
    word = np.maximum(g.word, 0)
    gap = np.maximum(g.pause_slot, 0)
    # a word's band reaches over the pauses the first pass put beside it, and a pause's over
    # the words beside it (the exact path may move a pause to the word's other end)
    pause_lo = np.concatenate([[0], word_first])[gap]
    pause_hi = np.concatenate([word_last, [T]])[gap]
    lo = np.where(is_word, gap_lo[word], pause_lo) - band
    hi = np.where(is_word, gap_hi[word + 1], pause_hi) + band
    return lo, hi


def restrict_to_band(x: GraphAlignmentInput, lo: np.ndarray, hi: np.ndarray) -> GraphAlignmentInput:
    """``x`` with node n's starts limited to ``lo[n] .. hi[n]`` (and its ends to what those
    starts reach)."""
    g = x.graph
    T = x.n_frames
    s_lo = np.maximum(x.s_lo, lo)
    s_hi = np.minimum(x.s_hi, hi)
    # a node ends where one of its successors starts (or at T if it is final)
    succ_lo = np.where(g.is_final, T, T + 1)
    succ_hi = np.where(g.is_final, T, -1)
    node_of_edge = np.repeat(np.arange(g.n_nodes), np.diff(g.pred_ptr))
    live = s_lo[node_of_edge] <= s_hi[node_of_edge]
    np.minimum.at(succ_lo, g.pred_idx[live], s_lo[node_of_edge[live]])
    np.maximum.at(succ_hi, g.pred_idx[live], s_hi[node_of_edge[live]])
    e_lo = np.maximum.reduce([x.e_lo, s_lo + x.min_len, succ_lo])
    e_hi = np.minimum.reduce([x.e_hi, s_hi + x.max_len, succ_hi])
    empty = (s_lo > s_hi) | (e_lo > e_hi)
    s_lo[empty], s_hi[empty], e_lo[empty], e_hi[empty] = 1, 0, 1, 0
    return dataclasses.replace(x, s_lo=s_lo, s_hi=s_hi, e_lo=e_lo, e_hi=e_hi)


def decode_banded(task: GraphAlignmentTask, x: GraphAlignmentInput, w, band: int = WORD_BAND_FRAMES) -> GraphPath:
    """``task.decode(x, w)`` by the two passes of the module docstring."""
    if task.divisor == "path":  # Dinkelbach's iterations compare whole-graph optima
        return task.decode(x, w)
    nodes, starts = graph_viterbi(x)
    if len(nodes) == 0:
        return task.decode(x, w)
    band = max(int(band), 1)
    while band < x.n_frames:
        lo, hi = word_bands(x, nodes, starts, band)
        banded = restrict_to_band(x, lo, hi)
        try:
            path = task.decode(banded, w)
        except AlignmentError:
            band *= 2
            continue
        n, s = path.nodes, path.starts
        cut_lo = banded.s_lo[n] > x.s_lo[n]
        cut_hi = banded.s_hi[n] < x.s_hi[n]
        if not np.any((cut_lo & (s == banded.s_lo[n])) | (cut_hi & (s == banded.s_hi[n]))):
            return path
        band *= 2
    return task.decode(x, w)
