"""Worker pools that survive a dead worker and end with their parent."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from aligner.runtime.batch import LOST_MESSAGE, WorkerPool


def _square_or_die(x):
    if x == 7:
        os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does
    return x * x


@pytest.mark.parametrize("chunksize", [1, 3])
def test_a_killed_worker_loses_only_its_item(chunksize):
    with WorkerPool(2, chunksize=chunksize) as pool:
        out = list(pool.map(_square_or_die, range(20), lambda item, why: ("lost", item, why)))
    assert out[:7] == [x * x for x in range(7)] and out[8:] == [x * x for x in range(8, 20)]
    assert out[7] == ("lost", 7, LOST_MESSAGE)
    assert pool.restarts >= 2  # once in the batch, once for the item alone


def test_one_job_maps_in_process():
    with WorkerPool(1) as pool:
        assert list(pool.map(abs, [-1, 2, -3], None)) == [1, 2, 3]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux only")
def test_workers_end_when_their_parent_is_killed(tmp_path):
    pids = tmp_path / "pids"
    script = textwrap.dedent(f"""
        import os, time
        from aligner.runtime.batch import WorkerPool
        def slow(x):
            with open({str(pids)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            time.sleep(60)
        with WorkerPool(2) as pool:
            list(pool.map(slow, range(4), None))
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 30
    while time.time() < deadline and (not pids.exists() or len(set(pids.read_text().split())) < 2):
        time.sleep(0.1)
    workers = [int(p) for p in set(pids.read_text().split())]
    assert len(workers) == 2
    parent.kill()
    parent.wait()
    deadline = time.time() + 10
    alive = workers
    while time.time() < deadline and alive:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.1)
    assert not alive, f"workers {alive} outlived their parent"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux") or __import__("platform").libc_ver()[0] != "glibc",
                    reason="mallopt(M_TOP_PAD) is glibc's")
def test_keep_heap_top_takes_on_glibc():
    code = "from aligner.runtime.batch import keep_heap_top; print(keep_heap_top(1 << 20))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_keep_heap_top_without_mallopt_changes_nothing(monkeypatch):
    import ctypes

    from aligner.runtime.batch import keep_heap_top

    def no_libc(*args, **kwargs):
        raise OSError("no C library here")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert keep_heap_top() is False


_BLAS_SCRIPT = textwrap.dedent("""
    import json, os
    import numpy as np
    from threadpoolctl import threadpool_info
    from aligner.runtime import blas
    from aligner.runtime.batch import WorkerPool

    def blas_threads():
        return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

    def tasks():
        return len(os.listdir("/proc/self/task"))

    def work(_):
        a = np.ones((300, 300), np.float32)
        before = tasks()
        blas.one_thread_for_good()  # what a worker's initializer does
        with blas.limit(1):
            a @ a
        a @ a
        return blas_threads(), blas.ONE_THREAD, before, tasks()

    before = blas_threads()
    with WorkerPool(2) as pool:
        inside = blas_threads()
        results = list(pool.map(work, range(4), None))
    print(json.dumps({"before": before, "inside": inside, "after": blas_threads(),
                      "flag_after": blas.ONE_THREAD, "workers": results}))
""")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_workers_inherit_one_blas_thread_and_build_no_thread_pool():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", _BLAS_SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    import json

    got = json.loads(out.stdout)
    assert got["inside"] == [1]  # the parent while it has workers
    assert got["after"] == got["before"] and got["flag_after"] is False  # and as before after
    for threads, flag, tasks_before, tasks_after in got["workers"]:
        assert threads == [1] and flag is True
        assert tasks_before == tasks_after == 1  # OpenBLAS rebuilt no thread pool in the worker


def _freeze_count(_):
    import gc

    return gc.get_freeze_count()


def test_workers_inherit_the_parents_objects_frozen_out_of_their_collector():
    import gc

    kept = [object() for _ in range(1000)]  # noqa: F841  objects of the parent the workers inherit
    with WorkerPool(2) as pool:
        counts = list(pool.map(_freeze_count, range(4), None))
    assert all(c > 1000 for c in counts)
    assert gc.get_freeze_count() == 0  # the parent's collector sees its objects again
