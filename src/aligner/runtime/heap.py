"""The allocator of a process that processes recordings: keep the top of its heap.

Aligning or measuring a recording allocates and frees arrays of a few hundred kilobytes to a few
megabytes (the MFCC's FFT buffers, the classifier's layers, the decoder's tables). With glibc's
default settings the heap is trimmed after each and grown again for the next, and every regrowth
faults fresh pages in: hundreds of thousands of page faults per minute of audio, which on a
virtual machine cost several microseconds each (half of the MFCC's time on short recordings).
:func:`keep_heap_top` keeps a bounded amount of freed memory at the heap's top instead.
"""

from __future__ import annotations

#: glibc's ``mallopt`` parameter number of ``M_TOP_PAD``
_M_TOP_PAD = -2
#: bytes a worker's heap keeps above its top allocation (:func:`keep_heap_top`)
WORKER_HEAP_TOP_PAD = 64 * 1024 * 1024


def keep_heap_top(pad: int = WORKER_HEAP_TOP_PAD) -> bool:
    """Ask glibc's allocator to grow the heap by ``pad`` bytes more than it needs and to keep
    that much free memory at its top instead of giving it back (``mallopt(M_TOP_PAD)``);
    True if it took. For processes that allocate and free arrays of a few hundred kilobytes
    per item: with the default pad the heap is trimmed and regrown around them, and every
    regrowth faults fresh pages in (hundreds of page faults per short recording). The memory
    kept is bounded by ``pad``; processes forked afterwards inherit the setting. Not glibc (or
    no ``mallopt``): nothing changes, False."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_TOP_PAD, int(pad)))
    except (OSError, AttributeError, TypeError):
        return False
