#!/usr/bin/env python
"""Forced-alignment speed and memory with the shipped (or a given) model.

Prints three figures:

1. start-up: wall seconds for a fresh process to import aligner, load the model and warm the
   decoder (numba's on-disk cache warm: the first run fills it and is reported separately);
2. ``align-corpus`` throughput: audio seconds aligned per wall second over a TIMIT-layout corpus
   (default: the shared TIMIT sample), start-up excluded, with ``--jobs`` worker processes;
   median over ``--repeats`` runs; with it, the CPU time the aligning processes (the workers;
   this process with ``--jobs 1``) spent per second of audio (ms; pool start included), which
   other jobs on the machine inflate less than they lower the throughput;
3. peak memory (max RSS, MB) of a fresh process aligning one ~60-second recording made by
   joining utterances of the corpus end to end (their transcripts joined likewise).

    python -m benchmarks.speed.bench_align_speed --jobs 2
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "timit-sample"

STARTUP = """
import time; t0 = time.perf_counter()
from aligner import api
m = api.load_model({model!r})
api.warm_up(m)
print(time.perf_counter() - t0)
"""

LONG = """
import resource, sys, time
from aligner import api
t0 = time.perf_counter()
intervals = api.align({wav!r}, {phones!r}, {model!r})
print(len(intervals), time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: benchmark subprocess failed:\n{out.stderr}")
    return out.stdout.strip()


def make_long_recording(data_dir: Path, seconds: float, out_dir: Path):
    """Join corpus utterances (and their .phn phones) until ``seconds`` of audio."""
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn

    pieces, phones, total = [], [], 0.0
    for utt in find_utterances(data_dir):
        audio, sr = sf.read(str(utt.audio), dtype="float32")
        _, _, labels = read_phn(utt.transcript)
        pieces.append(audio)
        phones += labels
        total += len(audio) / sr
        if total >= seconds:
            break
    wav = out_dir / "long.wav"
    sf.write(wav, np.concatenate(pieces), 16000)
    txt = out_dir / "long.phones"
    txt.write_text(" ".join(phones) + "\n")
    return wav, txt, total, len(phones)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    p.add_argument("--model", default=None, help="model directory [shipped]")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--long-seconds", type=float, default=60.0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")
    from aligner import api
    from aligner.io.bundles import default_model_dir

    model = str(Path(args.model).resolve()) if args.model else str(default_model_dir())

    first_startup = float(python(STARTUP.format(model=model)))
    startups = [float(python(STARTUP.format(model=model))) for _ in range(3)]

    def children_cpu() -> float:  # seconds of CPU of the ended child processes (the workers)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    rates, walls, cpus, audio = [], [], [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            cpu0 = children_cpu() if args.jobs > 1 else time.process_time()
            report = api.align_corpus(args.data, Path(tmp) / f"run{r}", model, jobs=args.jobs)
            cpus.append((children_cpu() if args.jobs > 1 else time.process_time()) - cpu0)
            if report.failed:
                sys.exit(f"error: {len(report.failed)} files failed: {report.failed[:3]}")
            rates.append(report.realtime_factor)
            walls.append(report.seconds)
            audio = report.audio_seconds
        wav, txt, long_s, long_k = make_long_recording(args.data, args.long_seconds, Path(tmp))
        n, long_wall, rss_mb = python(LONG.format(wav=str(wav), phones=str(txt), model=model)).split()

    result = {
        "startup_seconds_first": round(first_startup, 2),
        "startup_seconds": round(statistics.median(startups), 2),
        "corpus_audio_seconds": round(audio, 1),
        "jobs": args.jobs,
        "corpus_wall_seconds_median": round(statistics.median(walls), 3),
        "realtime_factor_median": round(statistics.median(rates), 1),
        "realtime_factors": [round(x, 1) for x in rates],
        "worker_cpu_ms_per_audio_second_median": round(1000 * statistics.median(cpus) / audio, 3),
        "long_recording_seconds": round(long_s, 1),
        "long_recording_phones": long_k,
        "long_recording_align_seconds": round(float(long_wall), 2),
        "long_recording_peak_rss_mb": round(float(rss_mb), 1),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"start-up (import + model load + warm decoder): {result['startup_seconds']} s median of 3 "
          f"(first run, filling numba's cache: {result['startup_seconds_first']} s)")
    print(f"align-corpus: {result['corpus_audio_seconds']} s of audio in {result['corpus_wall_seconds_median']} s "
          f"with {args.jobs} jobs: {result['realtime_factor_median']}x real time (median; runs "
          f"{result['realtime_factors']}); worker CPU {result['worker_cpu_ms_per_audio_second_median']} ms "
          f"per audio second (median)")
    print(f"{result['long_recording_seconds']} s recording, {long_k} phones: aligned in "
          f"{result['long_recording_align_seconds']} s, peak RSS {result['long_recording_peak_rss_mb']} MB")


if __name__ == "__main__":
    main()
