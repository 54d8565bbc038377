"""Recordings of any length: a linear first pass, then the exact DP in banded, overlapping chunks.

The exact segmental DP (:mod:`aligner.alignment.decoding.task`) costs O(K T L) time and back-pointer
memory; K grows with T, so a whole recording costs time and memory quadratic in its length.
When that table would pass :data:`EXACT_DP_BUDGET_CELLS` states, :func:`align_long` aligns in
two passes, each linear in the recording's length:

1. **First pass** (:func:`first_pass_starts`): a frame-synchronous Viterbi over a left-to-right
   HMM with one state per phone (emission: the classifier agreement ``A[t, p_k]``, the DP's
   dim 1; leaving phone k costs ``log(1 / mu_k)``, staying ``log(1 - 1 / mu_k)``, ``mu_k`` its
   mean duration in frames). Only a window of W phone states is kept alive at each frame,
   centred on the best state (and pushed forward where the phones left must still fit in the
   frames left); back-pointers are one bit per live state and frame. W is as large as
   :data:`FIRST_PASS_BACKPOINTER_BYTES` allow for the recording's T frames, within
   :data:`FIRST_PASS_WINDOW` .. :data:`FIRST_PASS_MAX_WINDOW` (:func:`first_pass_window`): in
   loud noise a narrow window can drop the right path for good. Time O(T W), memory O(T W / 8)
   bytes.
2. **Second pass** (:func:`align_long`): the phones are cut into chunks of
   :data:`CHUNK_PHONES`, each decoded with :data:`CHUNK_OVERLAP` phones more on either side
   over the frames the first pass gives those phones, by the exact DP restricted to a band of
   +-:data:`BAND_FRAMES` frames around the first pass's starts (doubled while a decoded start
   lands on the band's edge). Neighbouring chunks are joined
   at a phone inside their overlap where both put the same start frame (the chunk edges,
   forced to the first pass's frames, are ``CHUNK_OVERLAP`` phones away from any kept phone).
   Time and memory per chunk are bounded (O(C B L)), so the whole is linear in K with bounded
   peak memory.

Within a chunk the objective is the DP's own (the feature map's 1/K scales every term alike,
so dividing by the chunk's K instead of the recording's does not move the argmax). The
result equals the exact DP's wherever the exact path stays inside the band and the chunks
agree at their joins; ``python -m benchmarks.speed.bench_long_recordings`` measures both.

Frames are the 10 ms frames of :mod:`aligner.frames`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligner.errors import AlignmentError

#: phone states kept alive per frame by the first pass: at least FIRST_PASS_WINDOW, at most
#: FIRST_PASS_MAX_WINDOW, as many as FIRST_PASS_BACKPOINTER_BYTES of back-pointers allow
#: (under white noise 5 dB, 256 lost a 6-minute recording, and 1024 a 2-minute one that 2048
#: and the exact first pass placed)
FIRST_PASS_WINDOW = 1024
FIRST_PASS_MAX_WINDOW = 2048
FIRST_PASS_BACKPOINTER_BYTES = 64 * 2**20
#: phones kept from each chunk of the second pass
CHUNK_PHONES = 400
#: phones decoded beyond each end of a chunk (and searched for a join)
CHUNK_OVERLAP = 40
#: half-width, in frames, of the band around the first pass's starts
BAND_FRAMES = 40
#: the exact DP over the whole recording is used up to this many (phone, start, length) states
#: (one back-pointer byte each; about 100 MB)
EXACT_DP_BUDGET_CELLS = 100_000_000


@njit(cache=True, nogil=True)
def _frame_max(scores, t):
    best = scores[t, 0]
    for p in range(1, scores.shape[1]):
        if scores[t, p] > best:
            best = scores[t, p]
    return best


@njit(cache=True, nogil=True)
def _windowed_viterbi(scores, classes, log_stay, log_leave, window, max_len):
    """Start frame of every phone (K,) on the best HMM path, or an empty array if the window
    lost every path that ends in the last phone at the last frame. The emission of phone k at
    frame t is the agreement ``scores[t, p_k] - max_p scores[t, p]`` (computed here: no copy of
    a long recording's scores). A state whose best path has stayed ``max_len[k]`` frames in
    phone k may only leave it (the length of that path's segment is carried along)."""
    T = scores.shape[0]
    K = classes.shape[0]
    W = min(window, K)
    n_bytes = (W + 7) // 8
    advanced = np.zeros((T, n_bytes), np.uint8)
    lo = np.zeros(T, np.int64)
    neg = -np.inf
    v = np.full(W, neg)
    nv = np.empty(W)
    run = np.zeros(W, np.int64)  # frames the best path into each live state has spent in its phone
    nrun = np.zeros(W, np.int64)
    v[0] = scores[0, classes[0]] - _frame_max(scores, 0)
    run[0] = 1
    for t in range(1, T):
        top = _frame_max(scores, t)
        prev_lo = lo[t - 1]
        best, best_i = neg, 0
        for i in range(W):
            if v[i] > best:
                best, best_i = v[i], i
        lo_t = prev_lo + best_i - W // 2
        # the live window must reach the states from which the last phone is still reachable
        lo_t = max(lo_t, K - (T - t) - (W - 1))
        lo_t = max(lo_t, prev_lo)
        lo_t = min(lo_t, K - W)
        lo_t = min(lo_t, prev_lo + W)  # never jump past every live state
        lo[t] = lo_t
        row = advanced[t]
        for i in range(W):
            k = lo_t + i
            j = k - prev_lo
            stay = v[j] + log_stay[k] if 0 <= j < W and run[j] < max_len[k] else neg
            leave = v[j - 1] + log_leave[k - 1] if 1 <= j <= W and k >= 1 else neg
            if leave > stay:
                row[i >> 3] |= np.uint8(1 << (i & 7))
                stay = leave
                nrun[i] = 1
            else:
                nrun[i] = run[j] + 1 if 0 <= j < W else 1
            nv[i] = stay + (scores[t, classes[k]] - top) if stay > neg else neg
        v, nv = nv, v
        run, nrun = nrun, run
    i = K - 1 - lo[T - 1]
    starts = np.zeros(K, np.int64)
    if i < 0 or i >= W or v[i] == neg:
        return starts[:0]
    k = K - 1
    for t in range(T - 1, 0, -1):
        i = k - lo[t]
        if (advanced[t, i >> 3] >> (i & 7)) & 1:
            starts[k] = t
            k -= 1
    if k != 0:
        return starts[:0]
    return starts


def first_pass_window(n_frames: int) -> int:
    """Live states W of the first pass over ``n_frames`` frames (module docstring)."""
    by_budget = FIRST_PASS_BACKPOINTER_BYTES * 8 // max(int(n_frames), 1)
    return int(min(FIRST_PASS_MAX_WINDOW, max(FIRST_PASS_WINDOW, by_budget)))


def first_pass_starts(scores: np.ndarray, phone_classes: np.ndarray, dur_mean: np.ndarray,
                      window: int | None = None, name: str = "<utterance>",
                      max_frames: np.ndarray | None = None) -> np.ndarray:
    """Approximate start frames (K,) of K phones by the windowed HMM Viterbi (module docstring).

    ``scores``: (T, 39) classifier scores; ``phone_classes``: (K,) their columns;
    ``dur_mean``: (K,) mean durations in frames; ``window``: live states (None:
    :func:`first_pass_window` of T). Doubles the window (up to every phone) if the window lost
    the end; raises :class:`AlignmentError` naming ``name`` if K phones cannot fit T frames.
    ``max_frames``: (K,) longest length of each phone, frames (None: any length). The best path
    into a state that has stayed that long in its phone must leave it, so that no phone can
    hold the frames of many (a class that outscores the others on much of a recording, such as
    a rare phone whose prior-divided score is high in pauses and noise, would otherwise take
    minutes of it in a long recording). The search runs again without the limit if no path
    within it survives the window.
    """
    scores = np.ascontiguousarray(scores, np.float32)
    T = scores.shape[0]
    if window is None:
        window = first_pass_window(T)
    classes = np.ascontiguousarray(phone_classes, np.int64)
    K = classes.shape[0]
    if K > T:
        raise AlignmentError(f"{name}: {K} phones need at least {K} frames, got {T}")
    mu = np.maximum(np.asarray(dur_mean, np.float64), 1.5)
    log_leave = np.log(1.0 / mu)
    log_stay = np.log1p(-1.0 / mu)
    longest = np.full(K, T + 1, np.int64) if max_frames is None else \
        np.broadcast_to(np.asarray(max_frames, np.int64), (K,)).copy()
    start_window = int(window)
    while True:
        starts = _windowed_viterbi(scores, classes, log_stay, log_leave, int(window), longest)
        if len(starts) == K or window >= K:
            break
        window *= 2
    if len(starts) != K and max_frames is not None:
        return first_pass_starts(scores, classes, dur_mean, start_window, name)
    if len(starts) != K:
        raise AlignmentError(f"{name}: no path of the {K} phones fits the {T} frames")
    return starts


def needs_long_path(n_dp_cells: int) -> bool:
    """True when the exact DP over the whole recording would hold more than
    :data:`EXACT_DP_BUDGET_CELLS` states."""
    return n_dp_cells > EXACT_DP_BUDGET_CELLS


def _chunks(K: int, size: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """``(keep_lo, keep_hi, dec_lo, dec_hi)`` phone ranges: the phones each chunk keeps and the
    (wider) range it decodes."""
    n = max(1, int(round(K / size)))
    bounds = np.linspace(0, K, n + 1).round().astype(int)
    return [(int(a), int(b), max(0, int(a) - overlap), min(K, int(b) + overlap))
            for a, b in zip(bounds[:-1], bounds[1:])]


def join_chunks(n: int, size: int, overlap: int, decode, same, fits=None) -> list:
    """Decode ``n`` items (phones, words) in overlapping chunks and join them: a list of ``n``.

    ``decode(lo, hi)`` returns items ``lo .. hi - 1`` (one chunk with its overlap, :func:`_chunks`);
    neighbouring chunks are joined at an item of their overlap for which ``same(earlier's,
    later's)`` holds, nearest the nominal cut and at least ``overlap // 4`` items from either
    chunk's forced edge; failing that, at the item nearest the cut for which ``fits(earlier
    chunk's item before it, later chunk's item)`` holds (the two chunks' items then follow each
    other in order), when ``fits`` is given; else at the nominal cut (the caller mends that join).
    """
    out: list = [None] * n
    prev, prev_lo, prev_hi = None, 0, 0
    margin = max(1, overlap // 4)
    for keep_lo, _, dec_lo, dec_hi in _chunks(n, size, overlap):
        cur = decode(dec_lo, dec_hi)
        join = keep_lo
        if prev is not None:
            agree = [k for k in range(dec_lo + margin, prev_hi - margin + 1)
                     if same(prev[k - prev_lo], cur[k - dec_lo])]
            if agree:
                join = min(agree, key=lambda k: abs(k - keep_lo))
            elif fits is not None:
                follow = [k for k in range(dec_lo + margin, prev_hi - margin + 1)
                          if fits(prev[k - 1 - prev_lo], cur[k - dec_lo])]
                if follow:
                    join = min(follow, key=lambda k: abs(k - keep_lo))
        out[join:dec_hi] = list(cur[join - dec_lo:])
        prev, prev_lo, prev_hi = cur, dec_lo, dec_hi
    return out


def align_long(decode_chunk, scores: np.ndarray, phone_classes: np.ndarray, dur_mean: np.ndarray,
               name: str = "<utterance>", chunk_phones: int = CHUNK_PHONES,
               overlap: int = CHUNK_OVERLAP, band: int = BAND_FRAMES,
               first_pass: np.ndarray | None = None, max_frames: np.ndarray | None = None) -> np.ndarray:
    """Start frames (K,) of K phones over T frames, in time and memory linear in T.

    ``decode_chunk(frame_lo, frame_hi, phone_lo, phone_hi, centres, band)`` decodes phones
    ``phone_lo .. phone_hi - 1`` over frames ``frame_lo .. frame_hi - 1`` with phone k's start
    within ``band`` frames of ``centres[k - phone_lo]`` (frames counted from ``frame_lo``) and
    returns their start frames counted from ``frame_lo``; it raises :class:`AlignmentError`
    if nothing fits the band. The band is doubled and the chunk decoded again while nothing
    fits or a decoded start lies on the band's edge (the band, not the data, chose it).
    ``first_pass``: the first pass's starts, if already computed; ``max_frames``: (K,) each phone's longest
    length in frames, for the first pass (:func:`first_pass_starts`).
    """
    scores = np.asarray(scores)
    T = scores.shape[0]
    K = len(phone_classes)
    rough = first_pass if first_pass is not None else first_pass_starts(scores, phone_classes, dur_mean,
                                                                        name=name, max_frames=max_frames)
    edges = np.append(rough, T)

    def decode(dec_lo, dec_hi):
        f_lo, f_hi = int(edges[dec_lo]), int(edges[dec_hi])
        centres = rough[dec_lo:dec_hi] - f_lo
        width = band
        while True:  # widen the band while it binds (a start on its edge) or nothing fits it
            try:
                local = np.asarray(decode_chunk(f_lo, f_hi, dec_lo, dec_hi, centres, width), np.int64)
                binds = np.any(np.abs(local[1:] - centres[1:]) >= width)
            except AlignmentError:
                local, binds = None, True
            if not binds or width >= f_hi - f_lo:
                if local is None:
                    raise AlignmentError(f"{name}: no segmentation of phones {dec_lo}-{dec_hi - 1} fits "
                                         f"frames {f_lo}-{f_hi - 1}")
                return local + f_lo
            width *= 2

    out = np.array(join_chunks(K, chunk_phones, overlap, decode, lambda a, b: a == b), np.int64)
    # a join without agreement can leave a start at or before its predecessor: push forward
    for k in range(1, K):
        if out[k] <= out[k - 1]:
            out[k] = out[k - 1] + 1
    if out[-1] >= T:
        raise AlignmentError(f"{name}: the chunked alignment ran past the last frame")
    return out
