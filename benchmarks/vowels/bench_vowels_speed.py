#!/usr/bin/env python
"""Speed of ``aligner vowels``: tokens per second once warm, start-up reported separately.

Cuts every CVC token of a TIMIT-layout corpus (:mod:`aligner.vowels.cvc`) into its own 16 kHz WAV file
in a temporary directory (as a phonologist's folder of CVC recordings), then runs
:func:`aligner.api.measure_vowels` over the folder, as ``aligner vowels DIR -o OUT.csv --jobs N``
does, with the CSV written too.

    python -m benchmarks.vowels.bench_vowels_speed ../shared/data/timit-sample --jobs 2 [--repeat 3]
        [--cuts DIR] [--csv OUT.csv]

Start-up = model load + worker start + numba warm-up; tokens/s = tokens / measuring wall time
(audio reading, features, frame classifier, decoding, CSV): median and range over ``--repeat`` runs.
Each run also prints the CPU time per token (this process and its workers, start-up included;
the machine's other jobs do not count in it, so it compares code on a shared machine better
than tokens/s) and the 1-minute load average. ``--cuts DIR`` keeps the cut WAV files in DIR
(written there if it is empty, else reused); ``--csv`` writes the last run's CSV.

Vowels from transcripts (issue 27), fused against not fused:

    python -m benchmarks.vowels.bench_vowels_speed ../shared/data/timit-sample --aligned [--words] --jobs 2 [--repeat 5]

aligns every utterance of the corpus (its ``.phn`` phones, or with ``--words`` its ``.txt`` words)
and measures its vowels as ``aligner vowels CORPUS --mode align --jobs N`` does, with the vowel
model's fusion (the default: the shipped fusion model, ``models/timit-vowels-fusion``), with each
``--fusion-model DIR`` (e.g. ``models/timit-vowels``, whose ``cuts`` front end fused before 0.25.0)
and with ``--no-fuse`` alternated, ``--repeat`` times each. Per run:
x real time (audio seconds / measuring wall time, start-up excluded) and the CPU seconds of the
run (this process and its workers, start-up included); then the medians.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import soundfile as sf  # noqa: E402

from aligner import api  # noqa: E402
from aligner.io.audio import SAMPLE_RATE, load_audio  # noqa: E402
from aligner.io.corpus import find_utterances  # noqa: E402
from aligner.vowels.cvc import cvc_tokens  # noqa: E402
from aligner.io.transcripts import read_phn  # noqa: E402


def write_tokens(corpus: Path, out: Path) -> int:
    n = 0
    for utt in find_utterances(corpus):
        audio = load_audio(utt.audio)
        for k, tok in enumerate(cvc_tokens(*read_phn(utt.transcript))):
            path = out / f"{utt.name.replace('/', '_')}_{k}.wav"
            sf.write(path, audio[tok.cut_start:tok.cut_end], SAMPLE_RATE, subtype="PCM_16")
            n += 1
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cuts", type=Path, help="keep the cut WAV files here (reused if there)")
    ap.add_argument("--csv", type=Path, help="write the last run's CSV here")
    ap.add_argument("--aligned", action="store_true",
                    help="align the corpus's transcripts: fused against --no-fuse (x real time)")
    ap.add_argument("--words", action="store_true", help="with --aligned: the .txt words instead of the .phn phones")
    ap.add_argument("--fusion-model", type=Path, action="append", default=[],
                    help="with --aligned: also fuse with this vowel model (repeatable), alternated with the "
                         "shipped fusion model and --no-fuse (e.g. models/timit-vowels, the 'cuts' front end)")
    args = ap.parse_args(argv)
    if args.aligned:
        return aligned_speed(args.corpus, args.jobs, args.repeat, args.words, args.csv, args.fusion_model)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cuts = args.cuts if args.cuts is not None else tmp / "cuts"
        cuts.mkdir(parents=True, exist_ok=True)
        n = len(list(cuts.glob("*.wav"))) or write_tokens(args.corpus, cuts)
        t0 = time.perf_counter()
        model = api.load_vowel_model(args.model)
        load_s = time.perf_counter() - t0
        rates = []
        for r in range(args.repeat):
            t1, cpu1 = time.perf_counter(), _cpu_seconds()
            report = api.measure_vowels(cuts, model=model, jobs=args.jobs)
            (tmp / "out.csv").write_text(api.vowels_csv(report.records))
            wall = time.perf_counter() - t1
            cpu_ms = 1000 * (_cpu_seconds() - cpu1) / max(len(report.records), 1)
            rate = len(report.records) / (wall - report.startup_seconds)
            print(f"run {r + 1}: {len(report.records)} of {n} tokens measured ({len(report.failed)} failed), "
                  f"{rate:.0f} tokens/s with --jobs {args.jobs}, CPU {cpu_ms:.2f} ms per token; start-up "
                  f"{report.startup_seconds:.2f} s (model load {load_s:.2f} s, first run only); load "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
            rates.append(rate)
        print(f"median {statistics.median(rates):.0f} tokens/s once warm "
              f"(runs {', '.join(f'{r:.0f}' for r in rates)})")
        if args.csv is not None:
            args.csv.write_bytes((tmp / "out.csv").read_bytes())


def aligned_speed(corpus: Path, jobs: int, repeat: int, words: bool = False, csv: Path | None = None,
                  fusion_models=()) -> None:
    """``aligner vowels CORPUS --mode align`` fused and ``--no-fuse``, alternated ``repeat`` times
    each (module docstring); ``csv``: write the last fused run's CSV there; ``fusion_models``:
    more vowel models to fuse with (``--fusion-model``), in the same alternation."""
    import warnings

    from aligner.io.audio import RepairedAudioWarning, audio_duration

    from benchmarks.vowels.corpora import transcript_corpus

    warnings.simplefilter("ignore", RepairedAudioWarning)
    wavs = [u.audio for u in find_utterances(corpus) if u.audio.with_suffix(".txt" if words else ".phn").is_file()]
    audio_s = sum(audio_duration(w) for w in wavs)
    arms = [("fused", True, None)] + [(f"fused {m}", True, m) for m in fusion_models] + [("--no-fuse", False, None)]
    runs: dict = {name: [] for name, _, _ in arms}
    width = max(len(name) for name in runs)
    with tempfile.TemporaryDirectory() as tmp:
        transcript_corpus(wavs, Path(tmp), phones=not words)  # links and one transcript each (.phn would win over .txt)
        api.measure_vowels([tmp], mode="align", jobs=jobs)  # numba's cache and the file system warm
        for r in range(repeat):
            for name, fuse, fusion_model in arms:
                cpu = _cpu_seconds()
                report = api.measure_vowels([tmp], mode="align", jobs=jobs, fuse=fuse, fusion_model=fusion_model)
                cpu = _cpu_seconds() - cpu
                runs[name].append((audio_s / report.seconds, cpu))
                print(f"run {r + 1}, {name:<{width}}: {len(report.records)} vowels of "
                      f"{len(wavs)} files ({len(report.failed)} failed) in {report.seconds:.2f} s: "
                      f"{audio_s / report.seconds:.0f}x real time with --jobs {jobs}; CPU {cpu:.2f} s; load "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
                if name == "fused" and csv is not None:
                    csv.write_text(api.vowels_csv(report.records))
    kind = ".txt words" if words else ".phn phones"
    for name in runs:
        speeds, cpus = [v[0] for v in runs[name]], [v[1] for v in runs[name]]
        print(f"{name}, {kind}, {audio_s:.0f} s of audio: median "
              f"{statistics.median(speeds):.0f}x real time (runs {', '.join(f'{v:.0f}' for v in speeds)}), "
              f"median CPU {statistics.median(cpus):.2f} s")


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children (the workers of a
    pool count once the pool has closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


if __name__ == "__main__":
    main()
