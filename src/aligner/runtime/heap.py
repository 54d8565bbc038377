"""The allocator of a process that processes recordings: keep the top of its heap.

Aligning or measuring a recording allocates and frees arrays of a few hundred kilobytes to a few
megabytes (the MFCC's FFT buffers, the classifier's layers, the decoder's tables). With glibc's
default settings the heap is trimmed after each and grown again for the next, and every regrowth
faults fresh pages in: hundreds of thousands of page faults per minute of audio, which on a
virtual machine cost several microseconds each (half of the MFCC's time on short recordings).
:func:`keep_heap_top` keeps a bounded amount of freed memory at the heap's top instead.
"""

from __future__ import annotations

#: glibc's ``mallopt`` parameter numbers
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
#: bytes a worker's heap keeps above its top allocation (:func:`keep_heap_top`)
WORKER_HEAP_TOP_PAD = 64 * 1024 * 1024
#: allocations up to this many bytes come from the heap, not from a mapping of their own (glibc's
#: own ceiling for the threshold it adapts by itself)
MMAP_THRESHOLD = 32 * 1024 * 1024


def keep_heap_top(pad: int = WORKER_HEAP_TOP_PAD) -> bool:
    """Ask glibc's allocator to grow the heap by ``pad`` bytes more than it needs and to keep
    that much free memory at its top instead of giving it back (``mallopt(M_TOP_PAD)``);
    True if it took. For processes that allocate and free arrays of a few hundred kilobytes
    per item: with the default pad the heap is trimmed and regrown around them, and every
    regrowth faults fresh pages in (hundreds of page faults per short recording). The memory
    kept is bounded by ``pad``; processes forked afterwards inherit the setting.

    Arrays up to :data:`MMAP_THRESHOLD` bytes are taken from the heap too, and the heap is
    trimmed only past twice ``pad``: glibc adapts both by itself, but not once the environment
    sets one (``MALLOC_TRIM_THRESHOLD_``, which Dask's nanny sets for its workers: every array of
    128 KB or more was then a mapping of its own, made and unmade for each, 300,000 page faults
    where a local worker took 7,000). Not glibc (or no ``mallopt``): nothing changes, False."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                    and libc.mallopt(_M_TRIM_THRESHOLD, 2 * int(pad))
                    and libc.mallopt(_M_TOP_PAD, int(pad)))
    except (OSError, AttributeError, TypeError):
        return False
