#!/usr/bin/env python
"""Start-up and throughput of the command line (issue 15): every figure the issue asks for.

    python -m benchmarks.speed.bench_startup [--repeats 5] [--skip-throughput] [--json]

Prints, each with the machine's load (``/proc/loadavg``, 1-minute average; other people's jobs
share the cores, so compare figures taken at similar load):

1. ``aligner align examples/demo.wav examples/demo.phones -o TMP`` per process: wall seconds
   and CPU seconds (user + sys of the process; less sensitive to load than wall), median of
   ``--repeats`` runs after one warm-up run (numba's cache warm). Target: wall <= 0.5 s.
2. ``aligner vowels CUT -o TMP.csv`` on one short CVC cut likewise (the first CVC token of the
   TIMIT sample, cut to its own WAV as ``benchmarks/vowels/bench_vowels_speed.py`` cuts them; the
   vowel tutorial's ``ex_bad.wav`` when the TIMIT sample is absent). Target: wall <= 0.6 s.
3. A breakdown of one ``aligner align`` process (in a child process, stage by stage: imports,
   model load, audio, first MFCC, classifier, numba's target initialisation, the first alignment
   (numba dispatchers loaded from the cache, listed), a warm alignment, the TextGrid write, and
   the interpreter's exit: with its normal teardown and with the command line's fast exit),
   and the largest cumulative imports of ``python -X importtime aligner align ...``.
4. ``align-corpus --jobs 2`` on the TIMIT sample (``../shared/data/timit-sample``: 120
   utterances, 373 s): x real time once warm (start-up excluded, as the API reports it),
   median of ``--repeats``, through :func:`aligner.api.align_corpus` in this process and
   through the command itself (the figure it prints, one process per run). Target: >= 700x.
5. ``vowels --jobs 2`` on the sample's CVC tokens cut to WAVs: tokens/s once warm, median of
   ``--repeats``. Target: >= 1000 tokens/s.

The programs run are the installed ``aligner`` console script beside this Python
(``--script`` to choose another, e.g. a pyenv shim, which adds its own start-up).

The aligner package is byte-compiled first (``compileall``, what ``pip install`` does; the
``__pycache__`` folders are git-ignored): with ``PYTHONDONTWRITEBYTECODE`` set, as in the
development environment, an editable install would otherwise compile every aligner module in
every process (70-80 ms of each ``aligner align``). ``--no-compile`` skips that.

``--ablation`` adds, for ``align`` and ``vowels``, the median wall and CPU seconds with each
start-up measure of ``aligner.cli`` switched off in turn (the fast exit, numba's trimmed start,
one BLAS thread, no cyclic GC for ``align``): what each one is worth, measured the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
TIMIT = SHARED / "timit-sample"
TUTORIAL_CUT = SHARED / "vowel-tutorial" / "wav" / "ex_bad.wav"
DEMO_WAV, DEMO_PHONES = REPO / "examples" / "demo.wav", REPO / "examples" / "demo.phones"


def load() -> float:
    """The 1-minute load average."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def default_script() -> str:
    here = Path(sys.executable).parent / "aligner"
    return str(here) if here.is_file() else (shutil.which("aligner") or "aligner")


def timed(cmd: list) -> tuple[float, float]:
    """``(wall seconds, CPU seconds user + sys)`` of one run of ``cmd`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(map(str, cmd))} failed ({out.returncode}):\n{out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def per_process(cmd: list, repeats: int) -> dict:
    """Median wall and CPU of ``repeats`` runs after one warm-up run, with the load around them."""
    timed(cmd)  # warm-up: numba's cache, the page cache
    load_before = load()
    runs = [timed(cmd) for _ in range(repeats)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
            "walls": [round(w, 3) for w in walls], "load": [load_before, load()]}


#: the command line with some of its start-up measures switched off (argv[1]: their names)
ABLATED = """
import sys
import aligner.cli as c
off = set(sys.argv.pop(1).split(","))
if "numba_trim" in off:
    c._lighten_numba_start_up = lambda: None
if "one_blas_thread" in off:
    c._one_blas_thread = lambda: None
if "no_gc" in off:
    c.NO_GC = frozenset()
sys.argv[0] = "aligner"
if "fast_exit" in off:
    c.main.main()  # click's own exit: SystemExit, then the interpreter's teardown
else:
    c.main()
"""
MEASURES = ("fast_exit", "numba_trim", "one_blas_thread", "no_gc")


def ablation(args_of: dict, repeats: int) -> dict:
    """``{command: {switched off: per_process(...)}}``, "none" = every measure on."""
    out = {}
    for command, args in args_of.items():
        out[command] = {}
        for off in ("none",) + MEASURES:
            out[command][off] = per_process([sys.executable, "-c", ABLATED, off] + args, repeats)
    return out


def first_cvc_cut(tmp: Path) -> Path:
    """One short CVC token as its own WAV (the first of the TIMIT sample), or the tutorial's."""
    if TIMIT.is_dir():
        import soundfile as sf

        from aligner.io.audio import SAMPLE_RATE, load_audio
        from aligner.io.corpus import find_utterances
        from aligner.io.transcripts import read_phn
        from aligner.vowels.cvc import cvc_tokens

        for utt in find_utterances(TIMIT):
            for tok in cvc_tokens(*read_phn(utt.transcript)):
                path = tmp / "cut.wav"
                sf.write(path, load_audio(utt.audio)[tok.cut_start:tok.cut_end], SAMPLE_RATE, subtype="PCM_16")
                return path
    if TUTORIAL_CUT.is_file():
        return TUTORIAL_CUT
    sys.exit("error: no CVC cut: neither the TIMIT sample nor the vowel tutorial is there")


BREAKDOWN = r"""
import json, os, sys, time
T0, C0 = time.perf_counter(), time.process_time()
marks = []
def mark(name):
    marks.append((name, time.perf_counter() - T0, time.process_time() - C0))
import numpy; mark("import numpy")
import click; mark("import click")
import aligner.cli; mark("import aligner.cli")
getattr(aligner.cli, "_lighten_numba_start_up", lambda: None)(); mark("numba start-up trim (cython_blas alone)")
import numba; mark("import numba")
from aligner import api; mark("import aligner.api")
model = api.load_model(None); mark("load model")
from aligner.io.audio import load_audio
samples = load_audio(WAV); mark("read audio")
from aligner.features.mfcc import mfcc_features
frames = mfcc_features(samples); mark("first MFCC")
scores = model.classifier.scores(frames); mark("classifier")
from numba.core.registry import cpu_target
cpu_target.target_context.refresh(); mark("numba target initialisation")
phones = open(PHONES).read()
result = api.align_phones_reviewed(WAV, phones); mark("first alignment (numba cache loads)")
api.align_phones_reviewed(WAV, phones); mark("warm alignment (same file)")
from aligner.io.exports import write_alignment
write_alignment(OUT, result.tiers, result.duration_s, "textgrid", speaker="demo",
                confidences=result.confidences or None); mark("TextGrid write")
from numba.core.dispatcher import Dispatcher
loaded = sorted(f"{m.__name__}.{k}" for m in list(sys.modules.values())
                if getattr(m, "__name__", "").startswith("aligner.")
                for k, v in vars(m).items() if isinstance(v, Dispatcher) and v.overloads)
print(json.dumps({"marks": marks, "dispatchers": loaded, "end": time.time()}), flush=True)
if FAST:  # the command line's exit (os._exit after flushing, where the CLI has no _fast_exit)
    import aligner.cli as c
    getattr(c, "_fast_exit", lambda status: (sys.stdout.flush(), os._exit(status)))(0)
"""


def breakdown(tmp: Path) -> dict:
    out = {}
    for fast in (False, True):
        code = (f"WAV, PHONES, OUT, FAST = {str(DEMO_WAV)!r}, {str(DEMO_PHONES)!r}, "
                f"{str(tmp / 'b.TextGrid')!r}, {fast}\n" + BREAKDOWN)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        done = time.time()
        if proc.returncode != 0:
            sys.exit(f"error: breakdown failed:\n{proc.stderr}")
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        out["fast_exit_s" if fast else "teardown_exit_s"] = done - data["end"]
        if not fast:
            out["marks"], out["dispatchers"] = data["marks"], data["dispatchers"]
    return out


def import_times(script: str, tmp: Path, top: int = 12) -> list:
    """The largest cumulative imports (microseconds) of one ``aligner align`` process."""
    proc = subprocess.run([sys.executable, "-X", "importtime", script, "align", str(DEMO_WAV), str(DEMO_PHONES),
                           "-o", str(tmp / "i.TextGrid")], capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            _, cumulative, name = line.split("|")
            rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def corpus_throughput(repeats: int, tmp: Path) -> dict:
    import warnings

    from aligner import api

    rates = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sample's repaired SPHERE files warn
        loads = [load()]
        for r in range(repeats):
            report = api.align_corpus(TIMIT, tmp / f"corpus{r}", jobs=2)
            if report.failed:
                sys.exit(f"error: align-corpus: {len(report.failed)} files failed")
            rates.append(report.realtime_factor)
        loads.append(load())
    return {"x_realtime": statistics.median(rates), "runs": [round(x, 1) for x in rates],
            "audio_s": round(report.audio_seconds, 1), "load": loads}


def corpus_throughput_command(script: str, repeats: int, tmp: Path) -> dict:
    """``aligner align-corpus TIMIT OUT --jobs 2`` as a user runs it: the x real time the command
    prints (start-up excluded), median of ``repeats`` fresh processes after one warm-up run."""
    import re

    rates, loads = [], [load()]
    for r in range(repeats + 1):
        out = subprocess.run([script, "align-corpus", str(TIMIT), str(tmp / f"cli{r}"), "--jobs", "2"],
                             capture_output=True, text=True)
        found = re.search(r"in [0-9.]+ s: ([0-9.]+)x real time", out.stdout + out.stderr)
        if out.returncode != 0 or found is None:
            sys.exit(f"error: aligner align-corpus failed or printed no throughput:\n{out.stdout}\n{out.stderr}")
        if r > 0:
            rates.append(float(found.group(1)))
    loads.append(load())
    return {"x_realtime": statistics.median(rates), "runs": rates, "load": loads}


def vowel_throughput(repeats: int, tmp: Path) -> dict:
    from benchmarks.vowels.bench_vowels_speed import write_tokens

    from aligner import api

    cuts = tmp / "cuts"
    cuts.mkdir()
    n = write_tokens(TIMIT, cuts)
    model = api.load_vowel_model(None)
    rates, loads = [], [load()]
    for _ in range(repeats):
        t1 = time.perf_counter()
        report = api.measure_vowels([cuts], model=model, jobs=2)
        (tmp / "vowels.csv").write_text(api.vowels_csv(report.records))
        wall = time.perf_counter() - t1
        rates.append(len(report.records) / (wall - report.startup_seconds))
    loads.append(load())
    return {"tokens_per_s": statistics.median(rates), "runs": [round(x) for x in rates], "tokens": n,
            "measured": len(report.records), "load": loads}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--script", default=default_script(), help="the aligner program [%(default)s]")
    ap.add_argument("--skip-throughput", action="store_true", help="per-process figures and breakdown only")
    ap.add_argument("--no-compile", action="store_true", help="do not byte-compile the aligner package first")
    ap.add_argument("--ablation", action="store_true", help="also each start-up measure switched off in turn")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = {"nproc": os.cpu_count(), "script": args.script, "compiled": not args.no_compile}
    if not args.no_compile:
        import compileall

        import aligner

        compileall.compile_dir(os.path.dirname(aligner.__file__), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        res["align"] = per_process([args.script, "align", DEMO_WAV, DEMO_PHONES, "-o", tmp / "a.TextGrid"],
                                   args.repeats)
        cut = first_cvc_cut(tmp)
        res["vowels_cut"] = str(cut)
        res["vowels"] = per_process([args.script, "vowels", cut, "-o", tmp / "v.csv"], args.repeats)
        res["breakdown"] = breakdown(tmp)
        res["imports"] = import_times(args.script, tmp)
        if args.ablation:
            res["ablation"] = ablation({"align": ["align", DEMO_WAV, DEMO_PHONES, "-o", tmp / "x.TextGrid"],
                                        "vowels": ["vowels", cut, "-o", tmp / "x.csv"]}, args.repeats)
        if not args.skip_throughput and TIMIT.is_dir():
            res["align_corpus"] = corpus_throughput(args.repeats, tmp)
            res["align_corpus_command"] = corpus_throughput_command(args.script, args.repeats, tmp)
            res["vowels_jobs2"] = vowel_throughput(args.repeats, tmp)
    if args.json:
        print(json.dumps(res))
        return

    def ld(x):
        return f"load {x[0]:.2f} -> {x[1]:.2f}"

    a, v = res["align"], res["vowels"]
    print(f"{os.cpu_count()} cores; program {args.script}; median of {args.repeats} after a warm-up run; "
          f"aligner {'byte-compiled first' if res['compiled'] else 'not byte-compiled by the benchmark'}")
    print(f"aligner align demo.wav demo.phones: wall {a['wall_s']:.3f} s (target <= 0.5), CPU {a['cpu_s']:.3f} s; "
          f"runs {a['walls']} ({ld(a['load'])})")
    print(f"aligner vowels {Path(res['vowels_cut']).name}: wall {v['wall_s']:.3f} s (target <= 0.6), "
          f"CPU {v['cpu_s']:.3f} s; runs {v['walls']} ({ld(v['load'])})")
    b = res["breakdown"]
    print("breakdown of one align process (wall ms / CPU ms since start of the script, each stage):")
    prev_w = prev_c = 0.0
    for name, w, c in b["marks"]:
        print(f"  {name:42s} {1000 * (w - prev_w):7.1f} {1000 * (c - prev_c):7.1f}")
        prev_w, prev_c = w, c
    print(f"  {'exit with the interpreter teardown':42s} {1000 * b['teardown_exit_s']:7.1f}")
    print(f"  {'exit with the fast exit (the CLI)':42s} {1000 * b['fast_exit_s']:7.1f}")
    print(f"  numba dispatchers loaded: {', '.join(b['dispatchers'])}")
    print("largest cumulative imports of `aligner align` (ms):")
    for us, name in res["imports"]:
        print(f"  {us / 1000:7.1f}  {name.strip()}")
    if "ablation" in res:
        print("each start-up measure switched off in turn (median wall / CPU seconds):")
        for command, rows in res["ablation"].items():
            for off, r in rows.items():
                label = "all measures on" if off == "none" else f"without {off}"
                print(f"  {command:7s} {label:26s} wall {r['wall_s']:.3f}  CPU {r['cpu_s']:.3f}  ({ld(r['load'])})")
    if "align_corpus" in res:
        c = res["align_corpus"]
        print(f"align-corpus --jobs 2, {c['audio_s']} s of audio: {c['x_realtime']:.0f}x real time once warm "
              f"(target >= 700); runs {c['runs']} ({ld(c['load'])})")
        c = res["align_corpus_command"]
        print(f"  the command `aligner align-corpus ... --jobs 2` (x real time it prints): {c['x_realtime']:.0f}x; "
              f"runs {c['runs']} ({ld(c['load'])})")
        w = res["vowels_jobs2"]
        print(f"vowels --jobs 2, {w['measured']} of {w['tokens']} tokens: {w['tokens_per_s']:.0f} tokens/s once warm "
              f"(target >= 1000); runs {w['runs']} ({ld(w['load'])})")


if __name__ == "__main__":
    main()
