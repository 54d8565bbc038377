#!/usr/bin/env python
"""Speed and memory of ``aligner adapt``: minutes of audio adapted, wall time, peak memory.

Builds a corpus of the requested length in MFA's layout (speaker folders, ``.wav`` + ``.lab``)
from the TIMIT sample's recordings (each written again, with its words, as often as needed:
the 373 s of the sample cycled), then runs the command itself, ``aligner adapt CORPUS OUT
--rounds N``, in a fresh process (start-up included), and reports its wall time, the audio's
length and the process's peak resident memory (``ru_maxrss`` of the child).

    python -m benchmarks.bench_adapt --minutes 2 --minutes 60 [--rounds 2] [--keep runs/adapt-corpora]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import soundfile as sf

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "timit-sample"


def build_corpus(data: Path, out: Path, seconds: float) -> float:
    """Write ``seconds`` of the sample's recordings (cycled) as 16-bit WAV + .lab under
    ``out/<speaker>/``; returns the seconds written."""
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
                y = load_audio(utt.audio)
                words = utt.transcript.read_text().split(maxsplit=2)[2].strip()
                folder = out / utt.speaker
                folder.mkdir(parents=True, exist_ok=True)
                stem = f"{Path(utt.name).name}-{copy}"
                sf.write(folder / f"{stem}.wav", np.clip(y, -1, 1), 16000, subtype="PCM_16")
                (folder / f"{stem}.lab").write_text(words + "\n")
                written += len(y) / 16000
            copy += 1
    return written


#: runs the command given in its arguments and prints the peak memory (KiB) of that child alone
_PEAK = ("import resource, subprocess, sys; status = subprocess.run(sys.argv[1:]).returncode; "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(status)")


def run_adapt(corpus: Path, model_out: Path, rounds: int, extra: list) -> tuple[float, float, int]:
    """``(wall seconds, peak MB of the ``aligner adapt`` process, exit status)`` of one run."""
    command = shutil.which("aligner")
    if command is None:
        sys.exit("error: the aligner command is not on PATH (pip install the project first)")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PEAK, command, "adapt", str(corpus), str(model_out), "--rounds",
                           str(rounds), *extra], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = proc.stderr.strip().splitlines()
    peak_kib = float(lines[-1]) if lines and lines[-1].strip().isdigit() else float("nan")
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    return wall, peak_kib / 1024.0, proc.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--minutes", type=float, action="append", help="corpus length (repeatable) [2]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="runs per length (median reported)")
    ap.add_argument("--keep", type=Path, help="build the corpora here and keep them (reused if there)")
    ap.add_argument("extra", nargs="*", help="more options for aligner adapt (after --)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-adapt-"))
    try:
        for minutes in args.minutes or [2.0]:
            root = (args.keep or work) / f"corpus-{minutes:g}min"
            marker = root / ".seconds"
            if marker.is_file():
                seconds = float(marker.read_text())
            else:
                shutil.rmtree(root, ignore_errors=True)
                seconds = build_corpus(args.data, root, 60.0 * minutes)
                marker.write_text(f"{seconds}\n")
            walls, peaks = [], []
            for k in range(args.repeat):
                wall, peak, status = run_adapt(root, work / f"model-{minutes:g}-{k}", args.rounds, args.extra)
                if status != 0:
                    print(f"{minutes:g} min: aligner adapt exited {status}")
                    return 1
                walls.append(wall)
                peaks.append(peak)
                print(f"{minutes:g} min ({seconds:.0f} s of audio), {args.rounds} rounds: {wall:.1f} s wall "
                      f"({seconds / wall:.0f}x real time), peak {peak:.0f} MB")
            if args.repeat > 1:
                print(f"  median {np.median(walls):.1f} s, peak {max(peaks):.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
