"""Batches on a Dask distributed cluster: one task per file, the same results as the local pool.

:func:`open_pool` gives the pool a batch command runs on: the local :class:`~aligner.runtime.batch.WorkerPool`
(``engine="local"``), or a :class:`DaskPool` on the scheduler at ``scheduler``
(``tcp://HOST:PORT``) or on a local Dask cluster of ``jobs`` worker processes (``engine="dask"``
without an address). Both have the same ``map(fn, items, on_lost)``: results in input order, and
``on_lost(item, message)`` in place of the result of an item no worker could finish.

Tasks carry plain values (paths as strings, settings), never a loaded model: the workers read the
corpus and the model from the file system they share with the client, and write their outputs
there atomically. Each worker process loads the model and warms the numba decoders once, on its
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

from aligner.runtime.batch import LOST_MESSAGE, WorkerPool
from aligner.errors import AlignerError

ENGINES = ("local", "dask")

#: the one-line error when Dask is needed but not installed
MISSING_DASK = 'the Dask engine needs the dask extra: pip install "aligner[dask]"'

#: seconds to wait for the scheduler to answer before giving up
CONNECT_TIMEOUT_S = 20


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
    ``jobs`` single-threaded worker processes when ``scheduler`` is None; one task per item).
    ``initializer(*initargs)`` sets up each worker process; for Dask its arguments must be plain
    values (strings, numbers) and it must be importable by name on the workers.
    """
    if engine == "dask":
        return DaskPool(scheduler, jobs, initializer, initargs)
    return WorkerPool(jobs, initializer, initargs, chunksize=chunksize)


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


def _run_task(fn, item, initializer, initargs: tuple):
    """One Dask task: the worker set up (once), then ``fn(item)``."""
    _set_up_worker(initializer, initargs)
    return fn(item)


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
    """

    def __init__(self, scheduler: Optional[str], jobs: int = 1, initializer=None, initargs: tuple = ()):
        self.scheduler, self.jobs = scheduler, max(1, int(jobs))
        self.initializer, self.initargs = initializer, tuple(initargs)
        self.client = None
        self.cluster = None
        self.lost = 0  #: items reported through on_lost

    def __enter__(self) -> "DaskPool":
        distributed = import_distributed()
        try:
            if self.scheduler is None:
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

    def _warm_workers(self) -> None:
        """Set up every worker connected now, each by a task pinned to it (not in the event loop)."""
        if self.initializer is None:
            return
        workers = list(self.client.scheduler_info(n_workers=-1)["workers"]) if _takes_n_workers(self.client) \
            else list(self.client.scheduler_info()["workers"])
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
        """``fn(item)`` for every item, one task each, in input order; ``on_lost(item, message)``
        stands in for the result of an item Dask gave up on (its workers kept dying, or the
        cluster went away). ``chunk_fn`` (:meth:`WorkerPool.map`'s) is not used: one task per item."""
        from distributed import as_completed

        items = list(items)
        batch = _token()
        futures = [self.client.submit(_run_task, fn, item, self.initializer, self.initargs, pure=False,
                                      key=f"aligner-{batch}-{i}") for i, item in enumerate(items)]
        index_of = {future.key: i for i, future in enumerate(futures)}
        done: dict = {}
        next_index = 0
        try:
            for future in as_completed(futures, loop=self.client.loop):
                i = index_of[future.key]
                done[i] = self._result(future, items[i], on_lost)
                future.release()
                while next_index in done:
                    yield done.pop(next_index)
                    next_index += 1
        finally:
            for future in futures:
                if not future.done():
                    future.cancel()

    def _result(self, future, item, on_lost):
        try:
            return future.result()
        except Exception as exc:
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
