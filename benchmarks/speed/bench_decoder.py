"""Benchmark the forced-alignment decoder on random inputs.

Prints the median time of ``AlignmentTask.decode`` for a 3 s utterance (T = 300 frames,
K = 35 phones) and a 60 s recording (T = 6000, K = 700), both with max_frames ~ 30, the
time of ``decode_many`` with 100 weight vectors on the 3 s case, and the peak memory
(RSS) of the 60 s decode. Usage::

    python -m benchmarks.speed.bench_decoder [--repeats 20] [--band FRAMES]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from aligner.alignment.decoding.task import AlignmentTask, make_alignment_input


def random_input(rng, T, K, P=39, D=42, band=None):
    scores = rng.normal(size=(T, P))
    frames = rng.normal(size=(T, D))
    classes = rng.integers(0, P, size=K)
    mean = np.full(K, T / K) * rng.uniform(0.6, 1.4, size=K)
    std = mean * 0.4
    max_frames = np.maximum(np.rint(mean + 3 * std), 30).astype(int)  # ~30 frames
    return make_alignment_input(scores, frames, classes, mean, std, max_frames, band=band)


def median_ms(fn, repeats):
    """Median wall-clock and CPU (all threads of this process) milliseconds of ``fn()``.

    On a loaded machine the CPU time is the fairer number for one thread; for
    ``decode_many`` CPU / wall shows how many cores it kept busy.
    """
    wall, cpu = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return 1000 * float(np.median(wall)), 1000 * float(np.median(cpu))


def peak_rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 / 1024 if sys.platform == "darwin" else r / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--band", type=int, default=None, help="search band in frames (default: exact)")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    task = AlignmentTask()
    w = np.array([1.0, 0.5, 0.5, 0.5, 0.5, 0.3, -0.5])

    x_small = random_input(rng, 300, 35, band=args.band)
    t0 = time.perf_counter()
    task.decode(x_small, w)  # compile or load the numba cache
    print(f"first call (numba compile/cache load): {1000 * (time.perf_counter() - t0):.0f} ms")
    ms, cpu = median_ms(lambda: task.decode(x_small, w), args.repeats)
    print(f"T=300  K=35  L={int(x_small.max_len.max())}: decode median {ms:.2f} ms wall, {cpu:.2f} ms CPU "
          f"({x_small.n_dp_cells} DP states)")
    ws = w + rng.normal(size=(100, 7))
    ms_serial, cpu_serial = median_ms(lambda: [task.decode(x_small, v) for v in ws], 5)
    ms_many, cpu_many = median_ms(lambda: task.decode_many(x_small, ws), 5)
    print(f"T=300  K=35: 100 decodes in a loop {ms_serial:.1f} ms wall ({cpu_serial:.1f} CPU); "
          f"decode_many ({task.n_jobs} threads) {ms_many:.1f} ms wall ({cpu_many:.1f} CPU)")

    rss_before = peak_rss_mb()
    x_big = random_input(rng, 6000, 700, band=args.band)
    ms, cpu = median_ms(lambda: task.decode(x_big, w), max(3, args.repeats // 5))
    print(f"T=6000 K=700 L={int(x_big.max_len.max())}: decode median {ms:.1f} ms wall, {cpu:.1f} ms CPU "
          f"({x_big.n_dp_cells} DP states, back-pointers {x_big.n_dp_cells / 1e6:.0f} MB)")
    print(f"peak RSS {peak_rss_mb():.0f} MB (before the 60 s case: {rss_before:.0f} MB)")


if __name__ == "__main__":
    main()
