#!/usr/bin/env python
"""Speed and memory of ``aligner adapt``: minutes of audio adapted, wall time, peak memory.

Builds a corpus of the requested length in MFA's layout (speaker folders, ``.wav`` + ``.lab``)
from the TIMIT sample's recordings (each written again, with its words, as often as needed:
the 373 s of the sample cycled), then runs the command itself, ``aligner adapt CORPUS OUT
--rounds N [--jobs J]``, in a fresh process (start-up included), and reports its wall time,
the audio's length, the CPU seconds of the command and its workers (on a shared machine, the
wall time of ``--jobs 2`` depends on what else runs; the CPU seconds show the parallel
overhead) and its peak memory: the largest resident set of one process (``ru_maxrss``
of the children: the command or one of its workers) and, with psutil, the peak of the summed
proportional set sizes of the command and its workers (sampled every 0.5 s; pages shared by
forked workers counted once).

    python -m benchmarks.speed.bench_adapt --minutes 2 --minutes 60 [--rounds 2] [--jobs 1 --jobs 2] [--repeat 3]
                                     [--keep runs/adapt-corpora] [--condition reverb_far]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import soundfile as sf

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


def build_corpus(data: Path, out: Path, seconds: float, condition: str = "clean") -> float:
    """Write ``seconds`` of the sample's recordings (cycled) as 16-bit WAV + .lab under
    ``out/<speaker>/``, each degraded first as ``benchmarks.alignment.eval_degraded`` makes ``condition``
    (seeded by its place in the corpus); returns the seconds written."""
    from benchmarks.alignment.eval_degraded import degrade
    from aligner.io.audio import load_audio
    from aligner.io.corpus import find_utterances

    utterances = find_utterances(data, (".txt",))
    if not utterances:
        sys.exit(f"error: {data}: no TIMIT recordings with .txt words")
    written, copy = 0.0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while written < seconds:
            for utt in utterances:
                if written >= seconds:
                    break
                y = degrade(load_audio(utt.audio), condition, seed=int(written * 1000))
                words = utt.transcript.read_text().split(maxsplit=2)[2].strip()
                folder = out / utt.speaker
                folder.mkdir(parents=True, exist_ok=True)
                stem = f"{Path(utt.name).name}-{copy}"
                sf.write(folder / f"{stem}.wav", np.clip(y, -1, 1), 16000, subtype="PCM_16")
                (folder / f"{stem}.lab").write_text(words + "\n")
                written += len(y) / 16000
            copy += 1
    return written


#: runs the command given in its arguments and prints the peak memory (KiB) of the largest of its
#: processes (it or a worker) and the CPU seconds (user + system) of them all
_PEAK = ("import resource, subprocess, sys; status = subprocess.run(sys.argv[1:]).returncode; "
         "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
         "print(r.ru_maxrss, round(r.ru_utime + r.ru_stime, 1), file=sys.stderr); sys.exit(status)")


def _tree_pss_peak(pid: int, stop: threading.Event, out: list) -> None:
    """Sample the summed PSS (MB) of ``pid``'s descendants every 0.5 s until ``stop``; the peak goes
    to ``out[0]`` (NaN without psutil)."""
    try:
        import psutil
    except ImportError:
        out[0] = float("nan")
        return
    peak = 0.0
    while not stop.wait(0.5):
        try:
            procs = psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            break
        total = 0
        for p in procs:
            try:
                total += p.memory_full_info().pss
            except psutil.Error:
                pass
        peak = max(peak, total / 2 ** 20)
    out[0] = peak


def run_adapt(corpus: Path, model_out: Path, rounds: int, extra: list, jobs: int = 1) -> tuple:
    """``(wall seconds, peak MB of the largest process, peak MB of all processes together, CPU
    seconds of all processes, exit status)`` of one ``aligner adapt`` run."""
    command = shutil.which("aligner")
    if command is None:
        sys.exit("error: the aligner command is not on PATH (pip install the project first)")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _PEAK, command, "adapt", str(corpus), str(model_out), "--rounds",
                             str(rounds), "--jobs", str(jobs), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stop, tree = threading.Event(), [float("nan")]
    sampler = threading.Thread(target=_tree_pss_peak, args=(proc.pid, stop, tree), daemon=True)
    sampler.start()
    _, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    last = (stderr.strip().splitlines() or [""])[-1].split()
    try:
        peak_kib, cpu = float(last[0]), float(last[1])
    except (IndexError, ValueError):
        peak_kib = cpu = float("nan")
    if proc.returncode != 0:
        print(stderr[-2000:], file=sys.stderr)
    return wall, peak_kib / 1024.0, tree[0], cpu, proc.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--minutes", type=float, action="append", help="corpus length (repeatable) [2]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, action="append", help="aligner adapt --jobs (repeatable) [1]")
    ap.add_argument("--repeat", type=int, default=1, help="runs per length and jobs (median reported)")
    ap.add_argument("--keep", type=Path, help="build the corpora here and keep them (reused if there)")
    ap.add_argument("--condition", default="clean",
                    help="degrade every recording as benchmarks.alignment.eval_degraded's condition NAME [clean]")
    ap.add_argument("extra", nargs="*", help="more options for aligner adapt (after --)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-adapt-"))
    try:
        for minutes in args.minutes or [2.0]:
            root = (args.keep or work) / (f"corpus-{minutes:g}min" + ("" if args.condition == "clean"
                                                                       else f"-{args.condition}"))
            marker = root / ".seconds"
            if marker.is_file():
                seconds = float(marker.read_text())
            else:
                shutil.rmtree(root, ignore_errors=True)
                seconds = build_corpus(args.data, root, 60.0 * minutes, args.condition)
                marker.write_text(f"{seconds}\n")
            runs: dict = {jobs: [] for jobs in args.jobs or [1]}
            for k in range(args.repeat):  # the jobs settings taken in turn: a changing load hits them alike
                for jobs, measured in runs.items():
                    wall, peak, tree, cpu, status = run_adapt(root, work / f"model-{minutes:g}-{jobs}-{k}",
                                                              args.rounds, args.extra, jobs)
                    if status != 0:
                        print(f"{minutes:g} min: aligner adapt exited {status}")
                        return 1
                    measured.append((wall, peak, tree, cpu))
                    print(f"{minutes:g} min ({seconds:.0f} s of audio), {args.rounds} rounds, jobs {jobs}: "
                          f"{wall:.1f} s wall ({seconds / wall:.0f}x real time), {cpu:.1f} CPU s, peak {peak:.0f} MB "
                          f"(largest process), {tree:.0f} MB (all processes, PSS)", flush=True)
            if args.repeat > 1:
                for jobs, measured in runs.items():
                    walls, peaks, trees, cpus = zip(*measured)
                    print(f"  jobs {jobs}: median {np.median(walls):.1f} s wall, {np.median(cpus):.1f} CPU s, peak "
                          f"{max(peaks):.0f} MB (largest process), {max(trees):.0f} MB (all)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
