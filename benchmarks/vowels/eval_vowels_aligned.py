#!/usr/bin/env python
"""Vowels from transcripts: the CVC-context vowels of the TIMIT sample measured by aligning words.

Each of the 120 shared utterances is aligned from its ``.txt`` words (``aligner vowels`` in
align mode: :func:`aligner.api.measure_vowels` with ``mode="align"``) by the speaker-disjoint fold
model that never saw its speaker (``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``
writes them; ``--folds-dir DIR``). The references are the CVC tokens of the ``.phn`` files
(:func:`aligner.vowels.cvc.cvc_tokens`: a vowel between obstruents or nasals, 671 tokens); each
is paired with the aligned vowel that overlaps it most (none: the token is lost). Prints the
onset and offset mean absolute errors (ms), the share within 10 / 20 ms, the duration MAE and
Pearson r, the tokens lost, and the speed (audio seconds per second of measuring, start-up
excluded) with ``--jobs``.

    python -m benchmarks.vowels.eval_vowels_aligned [--data DIR] [--folds-dir DIR] [--phones] [--jobs 2]
        [--vowel-models DIR]

``--phones`` aligns the ``.phn`` phone sequence instead of the words (the upper bound).
The vowels are reported as aligned (``fuse=False``) unless ``--vowel-models DIR`` gives fold
vowel models (``DIR/foldK``, trained without fold K's test speakers:
``python -m benchmarks.vowels.eval_vowels_fused`` writes them): then each vowel is re-measured by its
fold's vowel model as ``aligner vowels`` does by default (:mod:`aligner.vowels.fused`), and the
speed runs fuse with the shipped vowel model.
``--speed-runs N`` then also measures the throughput as a corpus run sees it: all utterances in
one call with the shipped model (one pool for the whole corpus, not one per fold), N times,
median printed.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--folds-dir", type=Path, default=Path("runs/folds"))
    ap.add_argument("--phones", action="store_true", help="align the .phn phones instead of the .txt words")
    ap.add_argument("--speed-runs", type=int, default=0,
                    help="also time one call over every utterance with the shipped model, N times")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes per fold model")
    ap.add_argument("--vowel-models", type=Path, help="fold vowel models DIR/foldK: fuse the aligned vowels with them")
    args = ap.parse_args(argv)

    from aligner import api
    from aligner.alignment.model import AlignmentModel
    from aligner.io.audio import RepairedAudioWarning, audio_duration
    from aligner.io.corpus import speaker_of
    from aligner.io.transcripts import read_phn
    from aligner.vowels.cvc import cvc_tokens

    wavs = [w for w in sorted(args.data.rglob("*.wav")) if w.with_suffix(".phn").is_file()]
    folds = sorted(args.folds_dir.glob("fold*"))
    if not wavs or not folds:
        print(f"need utterances under {args.data} and fold models under {args.folds_dir}", file=sys.stderr)
        return 1
    by_speaker = {}
    for d in folds:
        for s in AlignmentModel.load(d).training.get("test_speakers", []):
            by_speaker[s] = d
    warnings.simplefilter("ignore", RepairedAudioWarning)
    records, seconds, failed = {}, 0.0, []
    audio_s = 0.0
    for fold in folds:
        mine = [w for w in wavs if by_speaker.get(speaker_of(w)) == fold]
        if not mine:
            continue
        transcripts = {w: (w.with_suffix(".phn") if args.phones else w.with_suffix(".txt")) for w in mine}
        # one call per fold (its model); each file's own transcript is passed through a temp layout
        import shutil
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            for w in mine:
                d = Path(tmp) / w.parent.name
                d.mkdir(exist_ok=True)
                (d / w.name).symlink_to(w.resolve())
                shutil.copy(transcripts[w], d / transcripts[w].name)
            fuse = args.vowel_models is not None
            vowel_model = str(args.vowel_models / fold.name) if fuse else None
            report = api.measure_vowels([tmp], vowel_model, mode="align", jobs=args.jobs, alignment_model=str(fold),
                                        fuse=fuse)
            seconds += report.seconds
            failed += report.failed
            for r in report.records:
                records.setdefault(r.file, []).append(r)
        audio_s += sum(audio_duration(w) for w in mine)

    on, off, dur_ref, dur_hyp, lost = [], [], [], [], 0
    for w in wavs:
        starts, ends, labels = read_phn(w.with_suffix(".phn"))
        hyp = records.get(f"{w.parent.name}/{w.name}", [])
        for tok in cvc_tokens(starts, ends, labels):
            ref_on, ref_off = tok.vowel_start / 16000, tok.vowel_end / 16000
            best, overlap = None, 0.0
            for r in hyp:
                o = min(r.offset_s, ref_off) - max(r.onset_s, ref_on)
                if o > overlap:
                    best, overlap = r, o
            if best is None:
                lost += 1
                continue
            on.append(best.onset_s - ref_on)
            off.append(best.offset_s - ref_off)
            dur_ref.append(ref_off - ref_on)
            dur_hyp.append(best.offset_s - best.onset_s)
    on, off = np.abs(np.array(on)) * 1000, np.abs(np.array(off)) * 1000
    dur_ref, dur_hyp = np.array(dur_ref), np.array(dur_hyp)
    source = ".phn phones" if args.phones else ".txt words"
    print(f"{len(on) + lost} CVC tokens of {len(wavs)} utterances, aligned from their {source} by speaker-disjoint "
          f"fold models ({args.folds_dir})" + (f", fused with the fold vowel models of {args.vowel_models}"
                                               if args.vowel_models is not None else ", as aligned"))
    print(f"onset MAE {on.mean():.1f} ms (within 10 ms {100 * np.mean(on <= 10):.0f} %, 20 ms "
          f"{100 * np.mean(on <= 20):.0f} %); offset MAE {off.mean():.1f} ms (within 10 ms "
          f"{100 * np.mean(off <= 10):.0f} %, 20 ms {100 * np.mean(off <= 20):.0f} %)")
    print(f"duration MAE {1000 * np.abs(dur_hyp - dur_ref).mean():.1f} ms, r {np.corrcoef(dur_ref, dur_hyp)[0, 1]:.3f}; "
          f"tokens lost (no aligned vowel overlaps them) {lost}; files failed {len(failed)}")
    if seconds > 0 and audio_s > 0:
        print(f"speed: {audio_s:.1f} s of audio in {seconds:.2f} s of measuring ({audio_s / seconds:.0f}x real time, "
              f"--jobs {args.jobs}, start-up excluded)")
    for name, message in failed[:5]:
        print(f"failed: {message}", file=sys.stderr)
    if args.speed_runs > 0:
        import shutil
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            for w in wavs:
                d = Path(tmp) / w.parent.name
                d.mkdir(exist_ok=True)
                (d / w.name).symlink_to(w.resolve())
                source_file = w.with_suffix(".phn") if args.phones else w.with_suffix(".txt")
                shutil.copy(source_file, d / source_file.name)
            runs = [audio_s / api.measure_vowels([tmp], mode="align", jobs=args.jobs,
                                                 fuse=args.vowel_models is not None).seconds
                    for _ in range(args.speed_runs)]
        print(f"one call over all {len(wavs)} utterances, shipped model, --jobs {args.jobs}: "
              f"{float(np.median(runs)):.0f}x real time (median; runs {[round(r) for r in runs]}; start-up excluded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
