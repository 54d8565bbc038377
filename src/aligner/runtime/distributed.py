"""Batches on a Dask distributed cluster: one task per file, the same results as the local pool.

:func:`open_pool` gives the pool a batch command runs on: the local :class:`~aligner.runtime.batch.WorkerPool`
(``engine="local"``), or a :class:`DaskPool` on the scheduler at ``scheduler``
(``tcp://HOST:PORT``) or on a local Dask cluster of ``jobs`` worker processes (``engine="dask"``
without an address). Both have the same ``map(fn, items, on_lost)``: results in input order, and
``on_lost(item, message)`` in place of the result of an item no worker could finish.

Tasks carry plain values (paths as strings, settings), never a loaded model: the workers read the
corpus and the model from the file system they share with the client, and write their outputs
there atomically. A task holds a chunk of several items (:func:`dask_chunksize`: a few chunks per
worker, smaller towards the end of a batch), so the scheduler's and the client's cost per task is
spread over several files; a chunk that fails is run again one item per task, so one bad item
never takes its neighbours with it. Each worker process loads the model and warms the numba decoders once, on its
first task or when the pool starts (:func:`_set_up_worker`, a cache keyed by the initializer and
its arguments, the model path among them). A worker killed mid-task (``kill -9``, the
out-of-memory killer) loses nothing: the scheduler gives its tasks to another worker; a task
whose workers die ``distributed.scheduler.allowed-failures`` times (Dask's default: 3) is
reported through ``on_lost``. With no worker left, tasks wait for one to join.

Dask is an optional extra (``pip install "aligner[dask]"``), imported only when a Dask pool
starts: ``import aligner.api`` does not import it.
"""

from __future__ import annotations

import os
import secrets
from typing import Callable, Iterable, Iterator, Optional

from aligner.runtime.batch import LOST_MESSAGE, WorkerPool, _chunk_sizes, _run_chunk
from aligner.errors import AlignerError

ENGINES = ("local", "dask")

#: the one-line error when Dask is needed but not installed
MISSING_DASK = 'the Dask engine needs the dask extra: pip install "aligner[dask]"'

#: seconds to wait for the scheduler to answer before giving up
CONNECT_TIMEOUT_S = 20
#: Dask settings of a local cluster this module starts (a running scheduler keeps its own). The
#: workers' statistical profiler is off: with no dashboard it has no use, and its stack samples every
#: 10 ms take the GIL from the task thread. Work stealing is off: the tasks are alike, a few per
#: worker, and balancing them cost the scheduler's process CPU on the workers' cores. The event
#: loops tick every 200 ms rather than 20 ms, and the nannies do not watch memory to spill or pause
#: (a task holds a few file names; a worker's memory is bounded by the files it aligns), so they
#: leave the cores to the tasks; a worker past 95 % of its memory is still restarted. On 2 cores
#: the tasks' time off the CPU went from 1.7-2.1 to 0.8-1.3 s per 720 files, the involuntary
#: context switches from 3,650-4,450 to 1,940-2,440 and the client process's CPU from 1.0-1.3 to
#: 0.5-0.8 s (a busy, shared host; docs/results.md)
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.scheduler.work-stealing": False,
    "distributed.admin.tick.interval": "200ms",
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
}
#: the most items one Dask task holds, and the chunks each worker should get at least. Each task
#: costs the client's process (scheduler, nannies) and the worker's event loop some milliseconds of
#: the workers' cores: on 2 cores, 720 short recordings (2 workers, timed inside the tasks; one-off
#: script) took 0.27-0.47 s of the client's CPU with chunks of up to 64 against 0.46-0.70 s with 16,
#: and the tasks 0.5-0.9 s off the CPU against 0.7-1.2 s (docs/results.md)
MAX_DASK_CHUNK = 64
CHUNKS_PER_WORKER = 4


def resolve_engine(engine: Optional[str], scheduler: Optional[str]) -> str:
    """The engine a batch runs on: ``engine`` as given (``local`` or ``dask``), else ``dask`` when
    a ``scheduler`` address is given, else ``local``. A scheduler with ``engine="local"`` is refused."""
    if engine is None:
        return "dask" if scheduler else "local"
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "local" and scheduler:
        raise AlignerError(f"{scheduler}: a scheduler address needs the dask engine, not engine 'local'")
    return engine


def import_distributed():
    """``distributed``, or a one-line :class:`AlignerError` naming the extra to install."""
    try:
        import distributed
    except ImportError:
        raise AlignerError(MISSING_DASK) from None
    return distributed


def open_pool(engine: str, scheduler: Optional[str], jobs: int, initializer=None, initargs: tuple = (),
              chunksize: int = 1):
    """The pool a batch runs on, to use as ``with open_pool(...) as pool: pool.map(fn, items, on_lost)``.

    ``engine``: ``local`` (a :class:`WorkerPool` of ``jobs`` processes, ``chunksize`` items per
    submission) or ``dask`` (a :class:`DaskPool` on ``scheduler``, or on a local cluster of
    ``jobs`` single-threaded worker processes when ``scheduler`` is None; ``chunksize`` items per
    task, or with the default of 1 as many as :func:`dask_chunksize` gives for its workers).
    ``initializer(*initargs)`` sets up each worker process; for Dask its arguments must be plain
    values (strings, numbers) and it must be importable by name on the workers.
    """
    if engine == "dask":
        return DaskPool(scheduler, jobs, initializer, initargs, chunksize=None if chunksize == 1 else chunksize)
    return WorkerPool(jobs, initializer, initargs, chunksize=chunksize)


def dask_chunksize(n_items: int, n_workers: int) -> int:
    """Items per Dask task for a batch of ``n_items`` on ``n_workers`` workers: enough tasks that
    every worker gets :data:`CHUNKS_PER_WORKER` of them (load balance, and a lost worker costs
    little), at most :data:`MAX_DASK_CHUNK` items each."""
    return max(1, min(MAX_DASK_CHUNK, n_items // (CHUNKS_PER_WORKER * max(1, n_workers))))


# -- on the workers ----------------------------------------------------------------------------

_WORKERS_SET_UP: set = set()


def _set_up_worker(initializer, initargs: tuple) -> None:
    """Run ``initializer(*initargs)`` once per worker process (keyed by both: the model path is
    one of the arguments), then never again for the same key."""
    if initializer is None:
        return
    key = (initializer.__module__, initializer.__qualname__, initargs)
    if key not in _WORKERS_SET_UP:
        initializer(*initargs)
        _WORKERS_SET_UP.add(key)
        # what the worker holds now (Dask's machinery, numba, the model) lives as long as it does:
        # out of the cyclic collector's passes, which would otherwise walk it every few files
        # (a local pool's workers are forked from a parent that froze it the same way)
        import gc

        gc.freeze()


def _run_task(fn, chunk, initializer, initargs: tuple, chunk_fn=None):
    """One Dask task: the worker set up (once), then ``[fn(item) for item in chunk]`` (or
    ``chunk_fn(chunk)``, which returns the same list)."""
    _set_up_worker(initializer, initargs)
    return _run_chunk(fn, chunk, chunk_fn)


def _warm_worker(initializer, initargs: tuple) -> int:
    """A start-up task: set the worker up now; returns its process id."""
    _set_up_worker(initializer, initargs)
    return os.getpid()


# -- on the client ---------------------------------------------------------------------------

class DaskPool:
    """``with DaskPool(scheduler, jobs, initializer, initargs) as pool: pool.map(fn, items, on_lost)``.

    ``scheduler``: a running scheduler's address (``tcp://HOST:PORT``), or None to start a local
    cluster of ``jobs`` worker processes, one thread each, closed again on exit. On entry every
    worker already connected is set up (model loaded, decoders warmed) by a start-up task.
    ``chunksize``: items per task (None: :func:`dask_chunksize` of the batch and the workers
    connected when it starts).
    """

    def __init__(self, scheduler: Optional[str], jobs: int = 1, initializer=None, initargs: tuple = (),
                 chunksize: Optional[int] = None):
        self.scheduler, self.jobs = scheduler, max(1, int(jobs))
        self.initializer, self.initargs = initializer, tuple(initargs)
        self.chunksize = None if chunksize is None else max(1, int(chunksize))
        self.client = None
        self.cluster = None
        self.lost = 0  #: items reported through on_lost
        self.tasks = 0  #: tasks submitted by :meth:`map` (chunks, and items run again alone)
        self.n_workers = self.jobs  #: workers connected at the start (a running scheduler's own)

    def __enter__(self) -> "DaskPool":
        distributed = import_distributed()
        try:
            if self.scheduler is None:
                import dask

                with dask.config.set(LOCAL_CLUSTER_CONFIG):
                    self.cluster = distributed.LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                                            dashboard_address=None)
                self.client = distributed.Client(self.cluster, set_as_default=False)
            else:
                self.client = distributed.Client(self.scheduler, timeout=f"{CONNECT_TIMEOUT_S}s",
                                                 set_as_default=False)
        except (OSError, TimeoutError) as exc:
            self.__exit__(None, None, None)
            where = self.scheduler or "local Dask cluster"
            raise AlignerError(f"{where}: could not connect to the Dask scheduler ({exc})") from None
        self._warm_workers()
        return self

    def _workers(self) -> list:
        return list(self.client.scheduler_info(n_workers=-1)["workers"]) if _takes_n_workers(self.client) \
            else list(self.client.scheduler_info()["workers"])

    def _warm_workers(self) -> None:
        """Set up every worker connected now, each by a task pinned to it (not in the event loop)."""
        workers = self._workers()
        self.n_workers = max(1, len(workers))
        if self.initializer is None:
            return
        futures = [self.client.submit(_warm_worker, self.initializer, self.initargs, workers=[w],
                                      allow_other_workers=False, pure=False, key=f"aligner-warm-up-{_token()}")
                   for w in workers]
        for future in futures:
            try:
                future.result()
            except Exception:  # the worker left, or the set-up fails there: its tasks will say why
                pass

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def map(self, fn: Callable, items: Iterable, on_lost: Callable, chunk_fn: Optional[Callable] = None) -> Iterator:
        """``fn(item)`` for every item, in input order, a chunk of items per task (``chunk_fn(chunk)``,
        if given, returns ``[fn(item) for item in chunk]`` at once, as for :meth:`WorkerPool.map`).
        A chunk whose task fails (its workers kept dying, or an error escaped) runs again one item
        per task; ``on_lost(item, message)`` stands in for the result of an item Dask gave up on
        alone."""
        from distributed import as_completed

        items = list(items)
        size = self.chunksize or dask_chunksize(len(items), self.n_workers)
        chunks = _chunk_sizes(len(items), size, self.n_workers)
        batch = _token()
        pending: dict = {}  # future key -> (first index, chunk, future) of the tasks not yet done

        def submit(first: int, chunk: list, name: str):
            future = self.client.submit(_run_task, fn, chunk, self.initializer, self.initargs, chunk_fn, pure=False,
                                        key=f"aligner-{batch}-{name}")
            pending[future.key] = (first, chunk, future)
            self.tasks += 1
            return future

        futures = [submit(first, items[first:first + n], str(first)) for first, n in chunks]
        done: dict = {}  # first index -> results of its chunk
        next_index = 0
        queue = as_completed(futures, loop=self.client.loop)
        try:
            for future in queue:
                first, chunk, _ = pending.pop(future.key)
                try:
                    done[first] = future.result()
                except Exception as exc:
                    if len(chunk) > 1:  # find the item that fails: each alone
                        for k, item in enumerate(chunk):
                            queue.add(submit(first + k, [item], f"{first + k}-alone"))
                    else:
                        done[first] = [self._lost(exc, chunk[0], on_lost)]
                future.release()
                while next_index in done:
                    results = done.pop(next_index)
                    yield from results
                    next_index += len(results)
        finally:
            for _, _, future in list(pending.values()):
                if not future.done():
                    future.cancel()

    def _lost(self, exc: Exception, item, on_lost):
        from distributed import KilledWorker

        self.lost += 1
        if isinstance(exc, KilledWorker):
            return on_lost(item, LOST_MESSAGE)
        return on_lost(item, f"Dask could not run it ({type(exc).__name__}: {exc})")


def _token() -> str:
    return secrets.token_hex(4)


def _takes_n_workers(client) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


# -- paths and settings of a batch on Dask ----------------------------------------------------

def as_given(text, paths: Optional[dict]):
    """``text`` with each absolute path of ``paths`` (absolute -> as the user gave it: one task's
    own paths) written as given, longest first, so that messages from Dask workers name files as
    the local pool does; ``text`` itself when ``paths`` is None."""
    if not paths or not isinstance(text, str):
        return text
    for absolute in sorted(paths, key=len, reverse=True):
        if absolute != paths[absolute]:
            text = text.replace(absolute, paths[absolute])
    return text


def dask_path(path) -> Optional[str]:
    """``path`` made absolute for a Dask worker, whose working directory is not ours (symbolic
    links kept: they may be how every machine of the cluster sees the shared file system)."""
    return None if path is None else os.path.abspath(path)


def absolute_paths(paths) -> dict:
    """``{absolute path: path as given}`` of the paths that are not None."""
    return {dask_path(p): str(p) for p in paths if p is not None}


def check_dask_settings(engine: str, scheduler, jobs: int, model, model_class) -> None:
    """Refuse, before any work, a Dask batch that cannot run: the extra not installed, a loaded
    model (of ``model_class``; the workers load theirs from a path), or ``jobs`` with a running
    scheduler. Does nothing for the local engine."""
    if engine != "dask":
        return
    import_distributed()  # a missing extra: one error before any work
    if isinstance(model, model_class):
        raise TypeError("the dask engine needs the model as a directory path (each worker loads it from "
                        "the shared file system), not a loaded model")
    if scheduler and jobs != 1:
        raise AlignerError(f"{scheduler}: jobs (--jobs) sets the worker processes of a local pool or cluster; "
                           f"a running scheduler's workers are its own")
