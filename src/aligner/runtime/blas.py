"""BLAS threads: the one place that sets how many threads the matrix products use.

The products of aligning and measuring are small (a recording's frames times a few hundred or
thousand columns). OpenBLAS's extra threads gain little on them and, on a machine whose cores
are busy (parallel workers, other jobs), slow each product down several times, so the
aligning and measuring code runs its products on one thread (:func:`limit`).

Batch workers run on one thread for their whole life (:func:`one_thread_for_good`), and a
parent that forks them caps its own BLAS first (:func:`one_thread_while_forking`). The order
matters: OpenBLAS shuts its thread pool down when a process forks, and a forked process that
then sets the thread count (``openblas_set_num_threads``, even to one) rebuilds the pool at its
default size; the new threads spin idle for a while before they sleep, beside the worker's own
thread. A worker forked from a capped parent inherits the cap and never sets a count, so no
thread is built.

The command line goes further for the commands that align or measure: it sets
``OPENBLAS_NUM_THREADS=1`` before numpy loads (:mod:`aligner.cli`), so no BLAS thread is ever
built there.
"""

from __future__ import annotations

import contextlib

#: True in a process whose BLAS runs on one thread for good (a batch worker, or a parent while
#: it forks workers); then :func:`limit` does nothing
ONE_THREAD = False

_CONTROLLER = None


def _controller():
    """threadpoolctl's view of the process's BLAS libraries, built once (ImportError without
    threadpoolctl; the callers then leave BLAS as it is)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def limit(n: int):
    """Context running the BLAS products inside on at most ``n`` threads, restoring the count
    after; does nothing for ``n <= 0`` (leave BLAS as it is), in a process on one thread for
    good (:data:`ONE_THREAD`), or without threadpoolctl."""
    if n <= 0 or ONE_THREAD:
        return contextlib.nullcontext()
    try:
        return _controller().limit(limits=n, user_api="blas")
    except Exception:  # threadpoolctl missing or unable to inspect the libraries
        return contextlib.nullcontext()


def one_thread_for_good() -> None:
    """Run BLAS on one thread for the rest of this process's life (a batch worker). A process
    forked from a parent inside :func:`one_thread_while_forking` is already capped and sets
    nothing (setting the count would rebuild OpenBLAS's thread pool)."""
    global ONE_THREAD
    if ONE_THREAD:
        return
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
    except Exception:  # threadpoolctl missing or unable to inspect the libraries
        return
    ONE_THREAD = True


@contextlib.contextmanager
def one_thread_while_forking():
    """Context for a parent that forks worker processes: its BLAS runs on one thread inside (the
    workers inherit the cap from the fork), and as before after."""
    global ONE_THREAD
    if ONE_THREAD:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(limits=1, user_api="blas")
    except Exception:  # threadpoolctl missing or unable to inspect the libraries
        yield
        return
    ONE_THREAD = True
    try:
        yield
    finally:
        ONE_THREAD = False
        limiter.restore_original_limits()


def cap_worker_threads(threads: int) -> None:
    """A worker process's BLAS threads: one for good (:func:`one_thread_for_good`;
    then the per-product caps are skipped), or at most ``threads``."""
    if threads == 1:
        one_thread_for_good()
    else:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
