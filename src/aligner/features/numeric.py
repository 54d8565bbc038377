"""Sums in numba in the order numpy adds them, so a kernel's sums equal ``np.sum``'s bit for bit.

``np.sum`` and ``np.mean`` along a contiguous row add the values by pairwise summation: blocks
of up to :data:`_PAIRWISE_BLOCK` values added eight lanes at a time, longer runs split in two and
summed so. A numba kernel that must reproduce numpy's result exactly (the MFCC's frame energies,
the vowel front end's z-scores) sums with :func:`_pairwise_sum`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_PAIRWISE_BLOCK = 128  #: numpy's pairwise summation sums blocks of up to this many values directly


@njit(cache=True, nogil=True)
def _block_sum(a, lo, n, step):
    """``0.0 +`` the sum of ``a[lo], a[lo + step], ...`` (``n <= _PAIRWISE_BLOCK`` values) as numpy's
    pairwise summation adds one block: under 8 values one by one, else 8 interleaved
    accumulators combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the
    last ``n % 8`` values one by one."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i * step]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + step], a[lo + 2 * step], a[lo + 3 * step]
    r4, r5, r6, r7 = a[lo + 4 * step], a[lo + 5 * step], a[lo + 6 * step], a[lo + 7 * step]
    m = n - n % 8
    i = 8
    while i < m:
        k = lo + i * step
        r0 += a[k]
        r1 += a[k + step]
        r2 += a[k + 2 * step]
        r3 += a[k + 3 * step]
        r4 += a[k + 4 * step]
        r5 += a[k + 5 * step]
        r6 += a[k + 6 * step]
        r7 += a[k + 7 * step]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i * step]
        i += 1
    return 0.0 + res


@njit(cache=True, nogil=True)
def _half(n):
    """The first part of numpy's pairwise split of ``n`` values (``n // 2`` down to a multiple of 8)."""
    h = n // 2
    return h - h % 8


@njit(cache=True, nogil=True)
def _split_sum1(a, lo, n, step):
    """:func:`_pairwise_sum` of a run whose parts are blocks (``n <= 2 _PAIRWISE_BLOCK`` or so)."""
    if n <= _PAIRWISE_BLOCK:
        return _block_sum(a, lo, n, step)
    h = _half(n)
    return _block_sum(a, lo, h, step) + _block_sum(a, lo + h * step, n - h, step)


@njit(cache=True, nogil=True)
def _split_sum2(a, lo, n, step):
    """:func:`_pairwise_sum` two splits deep (``n`` up to about 4 _PAIRWISE_BLOCK)."""
    if n <= _PAIRWISE_BLOCK:
        return _block_sum(a, lo, n, step)
    h = _half(n)
    return _split_sum1(a, lo, h, step) + _split_sum1(a, lo + h * step, n - h, step)


@njit(cache=True, nogil=True)
def _split_sum3(a, lo, n, step):
    """:func:`_pairwise_sum` three splits deep (``n`` up to about 8 _PAIRWISE_BLOCK)."""
    if n <= _PAIRWISE_BLOCK:
        return _block_sum(a, lo, n, step)
    h = _half(n)
    return _split_sum2(a, lo, h, step) + _split_sum2(a, lo + h * step, n - h, step)


@njit(cache=True, nogil=True)
def _pairwise_sum(a, lo, n, step):
    """The sum of ``n`` float64 values ``a[lo + i * step]`` in the order of numpy's pairwise
    summation (plus 0.0, the reduction's starting value): blocks of up to
    :data:`_PAIRWISE_BLOCK` values by :func:`_block_sum`; a longer run is split in two (the
    first part ``n // 2`` rounded down to a multiple of 8), each part summed so, and the two
    added. No recursion (numba's cache does not load recursive functions safely): up to 6
    blocks' worth (every frame window here) three splits unrolled; longer runs (z-scores over
    a recording) by a stack of partial sums combined as the recursion would."""
    if n <= 6 * _PAIRWISE_BLOCK:
        return 0.0 + _split_sum3(a, lo, n, step)
    # explicit stack: (start, length, state) where state 0 = not split yet, 1 = left done
    starts = np.empty(64, np.int64)
    lengths = np.empty(64, np.int64)
    states = np.empty(64, np.int64)
    lefts = np.empty(64, np.float64)
    top = 0
    starts[0], lengths[0], states[0] = 0, n, 0
    result = 0.0
    while top >= 0:
        s0, n0 = starts[top], lengths[top]
        if states[top] == 0:
            if n0 <= _PAIRWISE_BLOCK:
                value = _block_sum(a, lo + s0 * step, n0, step)
                top -= 1
                # hand the value to the parent
                while True:
                    if top < 0:
                        result = value
                        break
                    if states[top] == 0:  # cannot happen: a parent is split before its children run
                        break
                    if states[top] == 1:  # left child done: keep it, run the right child
                        lefts[top] = value
                        states[top] = 2
                        half = lengths[top] // 2
                        half -= half % 8
                        top += 1
                        starts[top], lengths[top], states[top] = starts[top - 1] + half, lengths[top - 1] - half, 0
                        break
                    value = lefts[top] + value  # right child done: combine, pass up
                    top -= 1
            else:
                states[top] = 1
                half = n0 // 2
                half -= half % 8
                top += 1
                starts[top], lengths[top], states[top] = s0, half, 0
    return result
