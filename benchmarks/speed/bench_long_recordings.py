#!/usr/bin/env python
"""Long recordings: time, peak memory and accuracy of ``aligner align`` on joined utterances.

The shared TIMIT utterances are joined end to end (repeating the 120 as often as needed) into
recordings of ``--minutes`` each, written as a 16-bit WAV and a TIMIT-61 phone list. For each:

* ``aligner align REC.wav REC.phones`` runs in its own process pinned to one core (``taskset
  -c 0`` when available, one BLAS/numba thread), start-up included; wall time and that
  process's peak resident memory (``os.wait4``);
* with ``--pause S``, S seconds of each utterance's own room tone lie between the utterances (a
  speaker who stops between sentences; the joined ``h#`` of either side covers it);
* its boundaries are scored against the joined ``.phn`` references: % within 20 ms and mean
  absolute error over every boundary except the first of each utterance (a join, absent when
  the utterances are aligned alone), next to the same figure for the same utterances aligned
  one by one (each utterance weighted by how often the recording repeats it);
* up to ``--exact-up-to`` minutes, the exact DP over the whole recording is run in this
  process too (:data:`aligner.alignment.decoding.long_recordings.EXACT_DP_BUDGET_CELLS` lifted) and
  the share of boundaries where both agree is printed.

``--shared`` also forces the chunked path on every shared utterance alone and compares it with
the exact DP (identical boundaries, accuracy).

``--vowels`` also runs ``aligner vowels`` on each recording (its phones beside it), fused and
``--no-fuse``, in the same way: wall time and peak memory.

    python -m benchmarks.speed.bench_long_recordings [--minutes 1 2 10 60] [--model DIR] [--shared] [--vowels]
        [--pause S]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


def _utterances(root: Path) -> list[Path]:
    return [w for w in sorted(root.rglob("*.wav")) if w.with_suffix(".phn").is_file()]


def _load(wavs):
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.transcripts import read_phn

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        for w in wavs:
            starts, _, labels = read_phn(w.with_suffix(".phn"))
            out.append((load_audio(w), starts / 16000.0, list(labels)))
    return out


def room_tone(x: np.ndarray, seconds: float) -> np.ndarray:
    """``seconds`` of an utterance's own first 50 ms (tiled, every other copy reversed), float32."""
    lead = x[:800]
    return np.resize(np.concatenate([lead, lead[::-1]]), int(round(seconds * 16000))).astype(np.float32)


def _joined(utts, minutes: float, pause: float = 0.0):
    """Samples, phone labels, reference starts (s), mask of scored boundaries, utterance counts;
    ``pause`` seconds of each utterance's own room tone (:func:`room_tone`) before every utterance but
    the first."""
    xs, labels, starts, scored, counts = [], [], [], [], np.zeros(len(utts), int)
    offset, i = 0, 0
    while offset < minutes * 60 * 16000:
        x, s, lab = utts[i % len(utts)]
        counts[i % len(utts)] += 1
        if i and pause > 0:
            xs.append(room_tone(x, pause))
            offset += len(xs[-1])
        xs.append(x)
        labels += lab
        starts.append(s + offset / 16000.0)
        scored += [False] + [True] * (len(lab) - 1)
        offset += len(x)
        i += 1
    # the samples the WAV file will hold (16-bit), so the in-process runs see the same audio
    x = np.clip(np.round(np.concatenate(xs) * 32768), -32768, 32767).astype(np.int16)
    return x.astype(np.float32) / 32768, labels, np.concatenate(starts), np.array(scored), counts


#: spawns the command from a small process and reports its exit code, wall time and peak RSS
#: (a child forked straight from this process would count this process's pages in its peak)
_LAUNCHER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage.ru_maxrss]))
"""


def _run_cli(wav: Path, phones: Path, out: Path, model: str | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one ``aligner align`` process on one core (``--model
    model`` when given, else the shipped model)."""
    return _run_aligner(["align", str(wav), str(phones), "-o", str(out)] + (["--model", str(model)] if model else []))


def _run_aligner(args: list) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one ``aligner ARGS...`` process on one core."""
    import json

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1")
    exe = shutil.which("aligner")
    cmd = ([exe] if exe else [sys.executable, "-c", "from aligner.cli import main; main()"]) + list(args)
    if shutil.which("taskset"):
        cmd = [shutil.which("taskset"), "-c", "0"] + cmd
    done = subprocess.run([sys.executable, "-c", _LAUNCHER] + cmd, env=env, capture_output=True, text=True)
    code, wall, peak_kb = json.loads(done.stdout.strip().splitlines()[-1])
    if code != 0:
        raise RuntimeError(f"aligner {args[0]} failed ({code}): {done.stderr.strip()}")
    return wall, peak_kb / 1024.0


def _textgrid_starts(path: Path) -> np.ndarray:
    from aligner.io.textgrids import interval_tier, load_textgrid

    return np.array([iv.start_s for iv in interval_tier(load_textgrid(path), path, "phones")])


def _score(hyp, ref, mask) -> tuple[float, float]:
    err = np.abs(np.asarray(hyp)[mask] - np.asarray(ref)[mask])
    return 100.0 * float(np.mean(err <= 0.02)), 1000.0 * float(np.mean(err))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--minutes", type=float, nargs="+", default=[1, 2, 10, 60])
    ap.add_argument("--exact-up-to", type=float, default=2.0,
                    help="also run the exact DP on recordings up to this many minutes (default: %(default)s)")
    ap.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    ap.add_argument("--shared", action="store_true", help="also force the chunked path on each shared utterance")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds of room tone between the joined utterances (default: %(default)s)")
    ap.add_argument("--vowels", action="store_true",
                    help="also time aligner vowels on each recording (its phones, fused and --no-fuse)")
    args = ap.parse_args(argv)

    from aligner import api
    from aligner.alignment.decoding import long_recordings as LR
    from aligner.features.mfcc import mfcc_features
    from aligner.phones.sets import get_phone_set

    wavs = _utterances(args.data)
    if not wavs:
        print(f"{args.data}: no .wav with a .phn beside it", file=sys.stderr)
        return 1
    model = api.load_model(args.model)
    pset = get_phone_set("timit61")
    utts = _load(wavs)

    # one by one: per-utterance errors, reused with each recording's repetition counts
    alone = []
    for x, s, lab in utts:
        hyp = model.align(x, lab, pset)
        alone.append(np.abs(np.array([iv.start_s for iv in hyp])[1:] - s[1:]))
    print(f"{len(utts)} utterances from {args.data}; model {args.model or 'shipped'}"
          + (f"; {args.pause:g} s of room tone between them" if args.pause else ""))

    if args.shared:
        budget = LR.EXACT_DP_BUDGET_CELLS
        same, n, within_c, within_e = 0, 0, [], []
        for x, s, lab in utts:
            exact = np.array([iv.start_s for iv in model.align(x, lab, pset)])
            LR.EXACT_DP_BUDGET_CELLS = 0
            try:
                chunked = np.array([iv.start_s for iv in model.align(x, lab, pset)])
            finally:
                LR.EXACT_DP_BUDGET_CELLS = budget
            same += int(np.sum(np.abs(chunked - exact) < 1e-9))
            n += len(exact)
            within_c.append(np.abs(chunked[1:] - s[1:]))
            within_e.append(np.abs(exact[1:] - s[1:]))
        c, e = np.concatenate(within_c), np.concatenate(within_e)
        print(f"shared utterances, chunked path forced: {100 * same / n:.2f} % of {n} phone starts equal the "
              f"exact DP's; within 20 ms {100 * np.mean(c <= 0.02):.2f} % (exact {100 * np.mean(e <= 0.02):.2f} %), "
              f"mean {1000 * c.mean():.2f} ms (exact {1000 * e.mean():.2f} ms)")

    head = (f"{'minutes':>7} {'phones':>6} | {'wall s':>7} {'x real time':>11} {'peak MB':>8} | "
            f"{'within 20 ms':>12} {'mean ms':>7} | {'one by one':>10} {'mean ms':>7} | {'= exact DP':>10}")
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for minutes in args.minutes:
            import soundfile as sf

            x, labels, ref, mask, counts = _joined(utts, minutes, args.pause)
            wav, phones, out = tmp / "rec.wav", tmp / "rec.phones", tmp / "rec.TextGrid"
            sf.write(wav, np.clip(np.round(x * 32768), -32768, 32767).astype(np.int16), 16000, subtype="PCM_16")
            phones.write_text(" ".join(labels) + "\n", encoding="utf-8")
            seconds = len(x) / 16000.0
            wall, peak = _run_cli(wav, phones, out, args.model)
            hyp = _textgrid_starts(out)
            within, mean = _score(hyp, ref, mask)
            pooled = np.concatenate([np.tile(e, c) for e, c in zip(alone, counts) if c])
            same = "-"
            if minutes <= args.exact_up_to:
                frames = mfcc_features(x)
                scores = model.classifier.scores(frames)
                classes = pset.class_indices(labels)
                budget = LR.EXACT_DP_BUDGET_CELLS
                LR.EXACT_DP_BUDGET_CELLS = 1 << 62
                try:
                    exact = model.phone_starts(frames, scores, classes, labels, seconds)
                finally:
                    LR.EXACT_DP_BUDGET_CELLS = budget
                ew, em = _score(exact, ref, mask)
                chunked = model.phone_starts(frames, scores, classes, labels, seconds)
                same = f"{100 * np.mean(np.abs(chunked - exact) < 1e-9):.2f} %"
                same += f" (exact: {ew:.2f} %, {em:.1f} ms)"
            print(f"{minutes:7g} {len(labels):6d} | {wall:7.2f} {seconds / wall:11.1f} {peak:8.0f} | "
                  f"{within:11.2f}% {mean:7.2f} | {100 * np.mean(pooled <= 0.02):9.2f}% {1000 * pooled.mean():7.2f} | {same}",
                  flush=True)
            if args.vowels:  # the phones beside the recording, as aligner vowels finds a transcript
                phones.replace(wav.with_suffix(".lab"))
                for flag in ([], ["--no-fuse"]):
                    wall, peak = _run_aligner(["vowels", str(wav), "-o", str(tmp / "vowels.csv"), "--mode", "align"]
                                              + flag + (["--alignment-model", str(args.model)] if args.model else []))
                    rows = (tmp / "vowels.csv").read_text(encoding="utf-8").count("\n") - 1
                    print(f"{'':7} aligner vowels{' ' + flag[0] if flag else ' (fused)':>11}: {wall:7.2f} s, "
                          f"{seconds / wall:7.1f}x real time, peak {peak:5.0f} MB, {rows} vowels", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
