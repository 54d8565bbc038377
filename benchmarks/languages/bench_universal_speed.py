#!/usr/bin/env python
"""Speed of the universal model: ``align-corpus --phone-set ipa`` over a corpus of IPA phone transcripts.

Writes a corpus of links to the audio and ``.lab`` files of IPA phones (the hand-labelled phones of the
VoxAngeles recordings, or of the TIMIT sample read as IPA, silences left out: the aligner adds them at
the ends), then times :func:`aligner.api.align_corpus` with ``--jobs`` workers (start-up excluded, as
``align-corpus`` reports it) and prints the real-time factor and the machine's load before and after.

    python -m benchmarks.languages.bench_universal_speed --model models/universal --jobs 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from benchmarks.languages.corpus import TIMIT, language_files, languages, reference, timit_ipa_intervals


def lab_corpus(out: Path, which: str) -> Path:
    """``out`` filled with links to the audio and ``.lab`` files of IPA phones (once)."""
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn

    out.mkdir(parents=True, exist_ok=True)
    if which == "voxangeles":
        items = [(wav, [s for s in reference(grid)[1] if s != "sil"], wav.parent.name)
                 for lang in languages() for wav, grid in language_files(lang)]
    else:
        items = []
        for utt in find_utterances(TIMIT):
            starts, ends, labels = read_phn(utt.transcript)
            items.append((utt.audio, [lab for _, _, lab in timit_ipa_intervals(starts, ends, labels) if lab],
                          utt.audio.parent.name))
    for wav, phones, folder in items:
        target = out / folder / wav.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.symlink(wav.resolve(), target)
        target.with_suffix(".lab").write_text(" ".join(phones) + "\n", encoding="utf-8")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="universal model [the shipped one]")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--corpus", choices=["voxangeles", "timit"], default="voxangeles")
    p.add_argument("--out", type=Path, default=Path("runs/speed-universal"))
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)

    from aligner import api

    corpus = lab_corpus(args.out / f"{args.corpus}-lab", args.corpus)
    factors = []
    for r in range(args.repeats):
        aligned = args.out / "aligned"
        shutil.rmtree(aligned, ignore_errors=True)
        load = os.getloadavg()
        t0 = time.perf_counter()
        report = api.align_corpus(corpus, aligned, args.model, jobs=args.jobs, phone_set="ipa")
        wall = time.perf_counter() - t0
        factors.append(report.realtime_factor)
        print(f"run {r + 1}: {len(report.written)} files, {report.audio_seconds:.1f} s of audio in "
              f"{report.seconds:.2f} s ({report.realtime_factor:.0f}x real time, start-up "
              f"{report.startup_seconds:.2f} s, {wall:.1f} s in all); {len(report.failed)} failed; load average "
              f"before {load[0]:.2f}, after {os.getloadavg()[0]:.2f} (1 min)", flush=True)
    factors.sort()
    print(f"median {factors[len(factors) // 2]:.0f}x real time with {args.jobs} jobs on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
