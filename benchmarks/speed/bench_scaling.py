#!/usr/bin/env python
"""How ``align-corpus`` scales with worker processes, on the local pool and on a local Dask cluster.

    python -m benchmarks.speed.bench_scaling [--jobs 1,2,4,...] [--copies N] [--repeats 3] [--no-dask]

Builds a corpus of ``--copies`` copies of a TIMIT-layout corpus (default: the shared sample, 120
utterances, 373 s), its audio rewritten once as plain 16-bit WAV (so no run pays the SPHERE repair
of the sample's damaged files) beside its ``.phn`` phones, then runs ``aligner align-corpus CORPUS
OUT --jobs J`` for every ``J`` (default: 1, 2, 4, ... up to the cores this process may use, and
that number itself), as a user would, one fresh process per run, and reads the throughput the
command prints (audio seconds per wall second, start-up excluded). With Dask installed, the same
with ``--engine dask`` (a local cluster of ``J`` single-threaded worker processes).

Prints one row per ``J``: the median x real time of ``--repeats`` runs (local, then Dask), the
speed-up over ``J = 1`` and the parallel efficiency (speed-up / J), Dask's throughput over the
local pool's at the same ``J``, and the machine's 1-minute load before the runs of that row. The
default corpus grows with the cores (``4 x`` their number copies, at least 6) so that every
worker has a few seconds of work.

``--env KEY=VALUE`` (repeatable) sets a variable for the aligner processes only, e.g.
``OPENBLAS_CORETYPE=Haswell`` to keep OpenBLAS off its AVX-512 kernels.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "timit-sample"
THROUGHPUT = re.compile(r"^aligned (\d+) files \(([\d.]+) s of audio\) in ([\d.]+) s: (\d+)x real time", re.M)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_jobs(cores: int) -> list[int]:
    jobs, j = [], 1
    while j < cores:
        jobs.append(j)
        j *= 2
    return jobs + [cores]


def build_corpus(data: Path, copies: int, root: Path) -> tuple[Path, float, int]:
    """``(corpus, seconds of audio, files)``: ``copies`` copies of ``data``'s utterances that have
    a ``.phn``, each copy a folder of links to one set of plain WAVs written here."""
    import numpy as np
    import soundfile as sf

    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import find_utterances

    base = root / "base"
    seconds, files = 0.0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        for utt in find_utterances(data):
            if utt.transcript is None or utt.transcript.suffix != ".phn":
                continue
            rel = utt.audio.relative_to(data).with_suffix(".wav")
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            y = np.asarray(load_audio(utt.audio))
            sf.write(base / rel, np.clip(np.round(y * 32768.0), -32768, 32767).astype(np.int16), 16000,
                     subtype="PCM_16")
            shutil.copy(utt.transcript, (base / rel).with_suffix(".phn"))
            seconds += len(y) / 16000.0
            files += 1
    if files == 0:
        sys.exit(f"error: {data}: no audio with a .phn transcript (a TIMIT-layout corpus is needed)")
    corpus = root / "corpus"
    for k in range(copies):
        for path in base.rglob("*"):
            if path.is_file():
                link = corpus / f"copy{k:03d}" / path.relative_to(base)
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(path)
    return corpus, seconds * copies, files * copies


def load() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


def run_once(program: list[str], corpus: Path, out: Path, jobs: int, engine: str, env: dict) -> float:
    """x real time of one ``align-corpus`` run (the figure the command prints)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = program + ["align-corpus", str(corpus), str(out), "--jobs", str(jobs), "--engine", engine]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    match = THROUGHPUT.search(done.stdout + done.stderr)
    if done.returncode != 0 or match is None:
        tail = (done.stdout + done.stderr)[-600:]
        sys.exit(f"error: {' '.join(cmd)} failed (exit {done.returncode}):\n{tail}")
    return float(match.group(2)) / float(match.group(3))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a TIMIT-layout corpus [the shared sample]")
    ap.add_argument("--jobs", default=None, help="comma-separated worker counts [1,2,4,... and the cores]")
    ap.add_argument("--copies", type=int, default=None, help="copies of the corpus [4 x cores, at least 6]")
    ap.add_argument("--repeats", type=int, default=3, help="runs per setting; the median is reported")
    ap.add_argument("--no-dask", action="store_true", help="only the local pool")
    ap.add_argument("--dask-jobs", default=None, help="comma-separated worker counts of the Dask runs [as --jobs]")
    ap.add_argument("--program", default=None,
                    help="the aligner command [the console script beside this Python, else python -m aligner]")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="an environment variable for the aligner processes (repeatable)")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args(argv)

    cores = usable_cores()
    jobs = [int(j) for j in args.jobs.split(",")] if args.jobs else default_jobs(cores)
    copies = args.copies or max(6, 4 * cores)
    script = Path(sys.executable).with_name("aligner")
    program = shlex.split(args.program) if args.program else ([str(script)] if script.exists()
                                                          else [sys.executable, "-m", "aligner"])
    env = dict(os.environ)
    for item in args.env:
        key, _, value = item.partition("=")
        env[key] = value
    dask = not args.no_dask
    dask_jobs = [int(j) for j in args.dask_jobs.split(",")] if args.dask_jobs else jobs
    if dask:
        try:
            import distributed  # noqa: F401
        except ImportError:
            print("Dask is not installed (pip install \"aligner[dask]\"): local pool only")
            dask = False

    with tempfile.TemporaryDirectory() as tmp:
        corpus, seconds, files = build_corpus(args.data, copies, Path(tmp))
        print(f"{cores} usable cores; {files} files, {seconds:.0f} s of audio ({copies} copies of {args.data}); "
              f"median of {args.repeats} runs; program {' '.join(program)}"
              + (f"; env {' '.join(args.env)}" if args.env else ""), flush=True)
        # numba's cache and the page cache warm: one copy is enough (every copy links to the same WAVs)
        run_once(program, corpus / "copy000", Path(tmp) / "out", 1, "local", env)
        rows = []
        for j in jobs:
            row = {"jobs": j, "load": load()}
            for engine in ("local", "dask") if dask else ("local",):
                if engine == "dask" and j not in dask_jobs:
                    continue
                runs = [run_once(program, corpus, Path(tmp) / "out", j, engine, env) for _ in range(args.repeats)]
                row[engine] = statistics.median(runs)
                row[f"{engine}_runs"] = runs
            rows.append(row)
            print(f"  jobs {j:3d}: local {row['local']:7.0f}x" + (f", dask {row['dask']:7.0f}x" if "dask" in row else "")
                  + f" (load {row['load']:.2f})", flush=True)

    base = rows[0]["local"] if rows and rows[0]["jobs"] == 1 else None
    print()
    print("| jobs | local x real time | speed-up | efficiency |" + (" Dask x real time | Dask / local |" if dask else "")
          + " load |")
    print("|---|---|---|---|" + ("---|---|" if dask else "") + "---|")
    for row in rows:
        up = row["local"] / base if base else float("nan")
        line = f"| {row['jobs']} | {row['local']:.0f}x | {up:.2f}x | {up / row['jobs']:.2f} |"
        if dask:
            line += (f" {row['dask']:.0f}x | {row['dask'] / row['local']:.2f} |" if "dask" in row else " - | - |")
        print(line + f" {row['load']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"cores": cores, "seconds": seconds, "files": files, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
