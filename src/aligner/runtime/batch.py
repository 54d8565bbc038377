"""Batches over worker processes that survive a dead worker and die with their parent.

:class:`WorkerPool` maps a function over items on ``jobs`` processes (forked where the platform
allows, so workers inherit the model the parent loaded and warmed) and yields the results in
input order. A worker killed mid-batch (``kill -9``, the out-of-memory killer) breaks a
``ProcessPoolExecutor``; here the pool is started again, the items that were in flight are rerun
one at a time, and an item whose worker dies again on its own is reported through ``on_lost``
instead of a result: the batch goes on. Workers ask the kernel to end them when their parent
ends (Linux ``PR_SET_PDEATHSIG``), so a killed command leaves no orphans; SIGTERM in the parent
is handled like Ctrl-C (:func:`terminate_like_interrupt`).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, Optional

from aligner.runtime import blas
from aligner.runtime.heap import WORKER_HEAP_TOP_PAD, keep_heap_top  # noqa: F401  (re-exported)

#: what a lost item's record says
LOST_MESSAGE = ("its worker process died (killed, or out of memory) while working on it; "
                "the other files went on")


def _die_with_parent() -> None:
    """Ask the kernel to SIGTERM this process when its parent dies (Linux); default SIGTERM."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and shuts us down
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass  # not Linux: no parent-death signal


def _initialise(initializer, initargs) -> None:
    _die_with_parent()
    if initializer is not None:
        initializer(*initargs)


def _run_chunk(fn, chunk, chunk_fn=None):
    return [fn(item) for item in chunk] if chunk_fn is None else chunk_fn(chunk)


def _chunk_sizes(n_items: int, chunksize: int, jobs: int) -> list:
    """``[(first index, size)]`` of the chunks of ``n_items`` items: ``chunksize`` items each
    until the last ``2 jobs chunksize`` or so, then shrinking to a ``2 jobs``-th of what is
    left (at least 4 items, or ``chunksize`` if smaller), so that the workers run out of work at about the same time
    instead of one waiting for the other's last whole chunk."""
    out, start = [], 0
    while start < n_items:
        left = n_items - start
        size = min(chunksize, left, max(4, -(-left // (2 * jobs))))
        out.append((start, size))
        start += size
    return out


def _noop(_):
    return os.getpid()


def terminate_like_interrupt() -> None:
    """Make SIGTERM raise :class:`KeyboardInterrupt` in this (the main) process, so a terminated
    batch shuts its workers down and writes nothing half-done, as on Ctrl-C."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


class WorkerPool:
    """``with WorkerPool(jobs, initializer, initargs) as pool: pool.map(fn, items, on_lost)``.

    ``jobs`` <= 1 maps in this process. ``chunksize`` items go to a worker at a time (fewer
    towards the end of a batch: :func:`_chunk_sizes`).
    ``initializer(*initargs)`` runs in every worker (and again in the workers of a restarted pool).
    While it has workers, this process runs BLAS on one thread, and so do the workers it forks
    (:func:`aligner.runtime.blas.one_thread_while_forking`).
    """

    def __init__(self, jobs: int, initializer=None, initargs: tuple = (), chunksize: int = 1):
        self.jobs, self.initializer, self.initargs = int(jobs), initializer, tuple(initargs)
        self.chunksize = max(1, int(chunksize))
        self.executor: ProcessPoolExecutor | None = None
        self.restarts = 0  #: pools started again after a worker died
        self._blas = None  #: this process's one-BLAS-thread context while it has workers

    # -- lifetime -----------------------------------------------------------------------
    def _start(self) -> None:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork") if "fork" in methods else None
        # The objects the forked workers inherit (modules, the model) are frozen out of their
        # cyclic garbage collector: its passes would otherwise write to every inherited object's
        # header, copying each page it touches into the worker (Python's advice for fork).
        gc.freeze()
        try:
            self.executor = ProcessPoolExecutor(max_workers=self.jobs, mp_context=context, initializer=_initialise,
                                                initargs=(self.initializer, self.initargs))
            list(self.executor.map(_noop, range(self.jobs)))  # start every worker (model, warm-up) now
        finally:
            gc.unfreeze()  # here, in the parent, as before

    def _stop(self, wait: bool = True, terminate: bool = False) -> None:
        """Shut the pool down; with ``terminate``, end its workers first (after a worker died,
        or on an interrupt). ``wait`` joins its threads: a fork while they hold a lock could
        leave the next pool's workers deadlocked."""
        if self.executor is None:
            return
        if terminate:
            for process in list((getattr(self.executor, "_processes", None) or {}).values()):
                process.terminate()
        self.executor.shutdown(wait=wait, cancel_futures=True)
        self.executor = None

    def __enter__(self) -> "WorkerPool":
        if self.jobs > 1:
            self._blas = blas.one_thread_while_forking()  # the workers inherit one BLAS thread
            self._blas.__enter__()
            try:
                self._start()
            except BaseException:
                self._blas.__exit__(None, None, None)
                raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self._stop(wait=True, terminate=exc_type is not None)
        finally:
            if self._blas is not None:
                self._blas.__exit__(None, None, None)
                self._blas = None

    # -- work ---------------------------------------------------------------------------
    def map(self, fn: Callable, items: Iterable, on_lost: Callable, chunk_fn: Optional[Callable] = None) -> Iterator:
        """``fn(item)`` for every item, in input order; ``on_lost(item, message)`` stands in for
        the result of an item whose worker died while working on it alone. ``chunk_fn(items)``,
        if given, returns ``[fn(item) for item in items]`` for a chunk at once (work shared
        between the items of a chunk); a rerun item goes to it alone."""
        items = list(items)
        if self.jobs <= 1:
            if chunk_fn is None:
                yield from map(fn, items)
                return
            for i in range(0, len(items), self.chunksize):
                yield from chunk_fn(items[i:i + self.chunksize])
            return
        chunks = deque((i, items[i:i + n]) for i, n in _chunk_sizes(len(items), self.chunksize, self.jobs))
        done: dict = {}
        next_index = 0
        suspects: deque = deque()  # chunks in flight when a worker died: rerun one item at a time
        while chunks or suspects or done:
            if suspects:
                index, item = suspects.popleft()
                done[index] = [self._alone(fn, item, on_lost, chunk_fn)]
            else:
                in_flight = deque()
                try:
                    self._fill(fn, chunks, in_flight, chunk_fn)
                    while in_flight:
                        index, chunk, future = in_flight[0]
                        done[index] = future.result()
                        in_flight.popleft()
                        self._fill(fn, chunks, in_flight, chunk_fn)
                        while next_index in done:
                            results = done.pop(next_index)
                            yield from results
                            next_index += len(results)
                except BrokenProcessPool:
                    self._restart()
                    for index, chunk, _ in in_flight:
                        suspects.extend((index + k, item) for k, item in enumerate(chunk))
                    continue
            while next_index in done:
                results = done.pop(next_index)
                yield from results
                next_index += len(results)
            if done and not chunks and not suspects and next_index not in done:
                raise RuntimeError(f"batch lost track of item {next_index}")  # a bug, never a hang

    def _fill(self, fn, chunks: deque, in_flight: deque, chunk_fn=None) -> None:
        """Submit chunks until ``2 * jobs`` are in flight; a chunk leaves ``chunks`` only once
        submitted (a broken pool refuses the submission and the chunk stays queued)."""
        while chunks and len(in_flight) < 2 * self.jobs:
            index, chunk = chunks[0]
            future = self.executor.submit(_run_chunk, fn, chunk, chunk_fn)
            chunks.popleft()
            in_flight.append((index, chunk, future))

    def _restart(self) -> None:
        self._stop(wait=True, terminate=True)
        self.restarts += 1
        self._start()

    def _alone(self, fn, item, on_lost, chunk_fn=None):
        """Run one item with nothing else in flight: a death now is this item's doing."""
        try:
            return self.executor.submit(_run_chunk, fn, [item], chunk_fn).result()[0]
        except BrokenProcessPool:
            self._restart()
            return on_lost(item, LOST_MESSAGE)


def output_is_complete(output, inputs) -> bool:
    """Whether a batch may keep ``output`` from an earlier run (``--resume``): it exists, is not
    empty, and was modified no earlier than each of ``inputs`` (paths; None entries are passed
    over). Outputs are written atomically, so one that exists was written whole; an input edited
    after its output was written makes the output stale."""
    try:
        stat = os.stat(output)
    except OSError:
        return False
    if stat.st_size == 0:
        return False
    for path in inputs:
        if path is None:
            continue
        try:
            if os.stat(path).st_mtime_ns > stat.st_mtime_ns:
                return False
        except OSError:
            return False
    return True
