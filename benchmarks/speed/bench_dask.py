"""align-corpus on a real Dask scheduler: throughput with 1 worker and with 2 workers.

    python -m benchmarks.speed.bench_dask [--corpus ../shared/data/timit-sample] [--minutes 10] [--runs 3]

Copies the corpus into a temporary directory as many times as it takes to reach ``--minutes`` of
audio, starts ``dask scheduler`` and N ``dask worker`` processes (1 process, 1 thread each) on
this machine as subprocesses, runs :func:`aligner.api.align_corpus` through the scheduler
``--runs`` times per N (fresh output directory each time), and prints the throughput (audio
seconds per wall second) of each run, the median per N and the ratio of the medians. "wall" is
the whole call (connecting, start-up tasks, aligning, writing); "work" excludes the start-up.
The first run on fresh workers includes their one-time model load and decoder warm-up.

:func:`running_cluster` (a scheduler and workers as subprocesses) is also what
``tests/house/test_dask.py`` runs against. Needs ``pip install "aligner[dask]"``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "timit-sample"


@contextmanager
def running_cluster(n_workers: int, workdir, start_timeout_s: float = 60.0):
    """Yield the address of a ``dask scheduler`` with ``n_workers`` ``dask worker`` processes (one
    process and one thread each), all subprocesses of this one with ``workdir`` as their working
    directory and their logs in ``workdir/*.log``; ended (SIGTERM, then SIGKILL) on exit. Workers
    are started with ``--death-timeout`` so they also end if the scheduler goes away."""
    from distributed import Client

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    scheduler_file = workdir / "scheduler.json"
    processes = []
    try:
        with open(workdir / "scheduler.log", "wb") as log:
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "scheduler", "--port", "0", "--no-dashboard",
                 "--scheduler-file", str(scheduler_file)], cwd=workdir, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + start_timeout_s
        address = None
        while address is None:
            if processes[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dask scheduler did not start; see {workdir / 'scheduler.log'}")
            try:
                address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        for i in range(n_workers):
            with open(workdir / f"worker-{i}.log", "wb") as log:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "dask", "worker", address, "--nworkers", "1", "--nthreads", "1",
                     "--no-dashboard", "--death-timeout", "30", "--name", f"worker-{i}",
                     "--local-directory", str(workdir / f"worker-{i}")],
                    cwd=workdir, stdout=log, stderr=subprocess.STDOUT))
        with Client(address, set_as_default=False, timeout=f"{start_timeout_s}s") as client:
            client.wait_for_workers(n_workers, timeout=start_timeout_s)
        yield address
    finally:
        for process in reversed(processes):  # workers first, then the scheduler
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def audio_seconds(corpus: Path) -> float:
    """Seconds of audio in the corpus's ``.wav`` files (16 kHz after loading)."""
    from aligner.frames import SAMPLE_RATE
    from aligner.io.audio import load_audio

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sum(len(load_audio(p)) for p in sorted(corpus.rglob("*.wav"))) / SAMPLE_RATE


def copy_corpus(source: Path, target: Path, minutes: float) -> tuple[int, float]:
    """Copy ``source`` into ``target/copy-K`` enough times for ``minutes`` of audio; returns
    ``(copies, audio seconds in all)``."""
    seconds = audio_seconds(source)
    copies = max(1, math.ceil(minutes * 60 / seconds))
    for k in range(copies):
        shutil.copytree(source, target / f"copy-{k}")
    return copies, copies * seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--minutes", type=float, default=10.0, help="audio to align, at least (minutes)")
    parser.add_argument("--runs", type=int, default=3, help="runs per number of workers (median reported)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)

    from aligner import api

    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        tmp = Path(tmp)
        copies, total = copy_corpus(args.corpus, tmp / "corpus", args.minutes)
        print(f"corpus: {args.corpus} x {copies} = {total:.0f} s of audio "
              f"({sum(1 for _ in (tmp / 'corpus').rglob('*.wav'))} files)")
        medians = {}
        for n in args.workers:
            with running_cluster(n, tmp / f"cluster-{n}") as address:
                wall_rates, work_rates = [], []
                for run in range(args.runs):
                    out = tmp / f"out-{n}-{run}"
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        report = api.align_corpus(tmp / "corpus", out, scheduler=address)
                    wall = time.perf_counter() - t0
                    assert not report.failed, report.failed[:3]
                    wall_rates.append(report.audio_seconds / wall)
                    work_rates.append(report.realtime_factor)
                    print(f"{n} worker(s), run {run + 1}: {len(report.written)} files, {report.audio_seconds:.0f} s "
                          f"of audio in {wall:.2f} s wall (start-up {report.startup_seconds:.2f} s): "
                          f"{wall_rates[-1]:.0f} audio s / wall s; work only {work_rates[-1]:.0f}")
                    shutil.rmtree(out)
                medians[n] = (statistics.median(wall_rates), statistics.median(work_rates))
                print(f"{n} worker(s): median {medians[n][0]:.0f} audio s / wall s "
                      f"(work only {medians[n][1]:.0f})")
        if 1 in medians and 2 in medians:
            print(f"2 workers / 1 worker: {medians[2][0] / medians[1][0]:.2f}x wall, "
                  f"{medians[2][1] / medians[1][1]:.2f}x work only (target >= 1.7x)")


if __name__ == "__main__":
    main()
