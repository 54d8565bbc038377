#!/usr/bin/env python
"""Speaker-disjoint cross-validation of the forced aligner on a TIMIT-layout corpus.

For each of ``--folds`` speaker folds, trains a model (classifier, durations, weights) on the
other speakers, aligns the held-out speakers' utterances and writes their TextGrids to
``OUT/hyp/<relative path>.TextGrid``; also writes the duration-only baseline (each phone's
share of the utterance proportional to its class's mean duration) to ``OUT/baseline/``.
Then scores both exactly as ``aligner evaluate CORPUS OUT/hyp`` does, and prints the figures.

    python -m benchmarks.alignment.eval_alignment_cv --data ../shared/data/timit-sample --out runs/cv
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from aligner.alignment.model import starts_to_intervals, times_to_intervals
from aligner.io.corpus import speaker_folds
from aligner.alignment.evaluation.phones import evaluate_directories
from aligner.io.textgrids import write_textgrid
from aligner.alignment.evaluation.phones import score_alignments
from aligner.alignment.training import (degraded_frames, load_utterances, read_training_corpus,
                                        train_alignment_model)

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


def duration_only_starts(classes: np.ndarray, mean_frames: np.ndarray, n_frames: int) -> np.ndarray:
    """Baseline: phone k starts at T * (sum of mean durations before k) / (sum of all)."""
    mu = mean_frames[classes]
    y = np.floor(n_frames * np.concatenate([[0.0], np.cumsum(mu)[:-1]]) / mu.sum()).astype(np.int64)
    for i in range(1, len(y)):
        y[i] = min(max(y[i], y[i - 1] + 1), n_frames - (len(y) - i))
    return y


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    p.add_argument("--out", type=Path, default=Path("runs/cv"), help="where TextGrids go")
    p.add_argument("--folds", type=int, default=4, help="outer speaker folds")
    p.add_argument("--save-models", type=Path, help="also save each fold's model as DIR/fold<k> (its "
                   "manifest lists the test speakers), e.g. for benchmarks.eval_words_cv")
    p.add_argument("--inner-folds", type=int, default=3, help="speaker folds for out-of-fold scores")
    p.add_argument("--trainer", default="orbit")
    p.add_argument("--params", default="{}", help="trainer parameters, JSON")
    p.add_argument("--classifier", default="{}", help="classifier parameters, JSON")
    p.add_argument("--val-speakers", type=int, default=2)
    p.add_argument("--warps", default="0.9,1.1", help="VTLP factors of the classifier's training copies ('' = none)")
    p.add_argument("--no-refine", action="store_true", help="no sub-frame boundary refinement")
    p.add_argument("--phones-tier", help="train on the data's own phones, read from this TextGrid tier "
                   "(as `aligner train --phones-tier`)")
    p.add_argument("--phone-classes", type=Path, help="as `aligner train --phone-classes`")
    p.add_argument("--phone-code", default="auto", help="as `aligner train --phone-code`")
    p.add_argument("--augment", type=Path, help="multi-condition training: an augmentation recipe (JSON, as "
                   "`aligner train --augment`); each fold's copies and babble come from its training speakers only")
    p.add_argument("--phone-line", action="store_true",
                   help="phone-line fold models (as `aligner train --phone-line`): every recording through "
                        "aligner.features.band.PHONE_BAND_HZ before its features and degraded copies")
    p.add_argument("--matched-front-end", type=Path, metavar="MODEL",
                   help="with --augment: every degraded copy through the front end of MODEL's multi-condition "
                        "expert first (dereverberated or denoised past its gates), and the fold models keep that "
                        "front end")
    p.add_argument("--only-fold", type=int, action="append", metavar="K",
                   help="train and score only fold K (0-based; repeatable), e.g. to run folds in parallel processes")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")
    start = time.perf_counter()
    # the phone inventory is chosen from every utterance's labels (no times), as a user's
    # transcripts would show it; the classifier, weights and refiner see training speakers only
    corpus = read_training_corpus(args.data, args.phones_tier, args.phone_classes, args.phone_code)
    if corpus.choice is not None:
        print(f"{len(corpus.choice.inventory)} phone classes; folded: {corpus.choice.folded}", file=sys.stderr)
    from aligner.features.band import PHONE_BAND_HZ

    band = PHONE_BAND_HZ if args.phone_line else None
    data = load_utterances(corpus.utterances, warps=tuple(float(w) for w in args.warps.split(',') if w.strip()),
                           phone_set=corpus.phone_set, tier=corpus.tier, front_band_hz=band)
    by_name = {d.name: d for d in data}
    folds = speaker_folds(data, args.folds)
    recipe = front_end = None
    if args.augment is not None:
        from aligner.features.augment import AugmentationRecipe
        recipe = AugmentationRecipe.from_json_file(args.augment)
    if args.matched_front_end is not None:
        from aligner.alignment.model import AlignmentModel
        if recipe is None:
            sys.exit("error: --matched-front-end needs --augment")
        front_end = AlignmentModel.load(args.matched_front_end).condition_expert
        if front_end is None:
            sys.exit(f"error: {args.matched_front_end}: no multi-condition expert")
    histories, pairs = [], []
    for f, test_speakers in enumerate(folds):
        if args.only_fold and f not in args.only_fold:
            continue
        train = [d for d in data if d.speaker not in test_speakers]
        if recipe is not None:
            copies = degraded_frames([u for u in corpus.utterances if u.speaker not in test_speakers], recipe,
                                     front_band_hz=band, front_end=front_end)
            train = [replace(d, degraded=copies[d.name]) for d in train]
        test = [d for d in data if d.speaker in test_speakers]
        t0 = time.perf_counter()
        model, result = train_alignment_model(
            train, args.trainer, json.loads(args.params), json.loads(args.classifier),
            n_folds=args.inner_folds, n_val_speakers=args.val_speakers, refine=not args.no_refine,
            phone_set=corpus.phone_set)
        if recipe is not None:
            model.training["augmentation"] = recipe.to_dict()
        model.front_band_hz = band
        if front_end is not None:
            model.front_dereverb, model.front_denoise = front_end.front_dereverb, front_end.front_denoise
            model.training["matched_front_end"] = str(args.matched_front_end)
        if args.save_models is not None:
            model.training["test_speakers"] = list(test_speakers)
            model.save(args.save_models / f"fold{f}")
        histories.append({"fold": f, "test_speakers": test_speakers, "weights": model.weights.tolist(),
                          "best_epoch": result.best_epoch_, "seconds": round(time.perf_counter() - t0, 1)})
        for d in test:
            scores = model.classifier.scores(d.frames)
            x = model.make_input(d.frames, d.classes, scores, name=d.name, symbols=d.symbols)
            y = model.align_frames(x)
            times = model.start_times(x, y, scores, d.frames, d.duration_s)
            pairs.append((d.starts_s, times))
            write_textgrid(args.out / "hyp" / f"{d.name}.TextGrid",
                           [("phones", times_to_intervals(times, d.symbols, d.duration_s))], d.duration_s)
            if model.refiner is not None:  # the same decode without the sub-frame shifts
                write_textgrid(args.out / "grid" / f"{d.name}.TextGrid",
                               [("phones", starts_to_intervals(y, d.symbols, d.duration_s))], d.duration_s)
            yb = duration_only_starts(d.classes, model.durations.mean, len(d.frames))
            write_textgrid(args.out / "baseline" / f"{d.name}.TextGrid",
                           [("phones", starts_to_intervals(yb, d.symbols, d.duration_s))], d.duration_s)
        print(f"fold {f + 1}/{len(folds)} (test {', '.join(test_speakers)}): trained in "
              f"{histories[-1]['seconds']} s, weights {np.round(model.weights, 3).tolist()}", file=sys.stderr)

    # every boundary of the hand-aligned intervals, scored as `aligner evaluate` scores a .phn
    scores = score_alignments(pairs)
    if corpus.choice is None and not args.only_fold:  # the same through the files, as a user would score them
        by_files, problems = evaluate_directories(args.data, args.out / "hyp")
        assert not problems, problems
        assert abs(by_files.mean_ms - scores.mean_ms) < 1e-3, (by_files.mean_ms, scores.mean_ms)  # TextGrid rounding
        base, _ = evaluate_directories(args.data, args.out / "baseline")
        grid = evaluate_directories(args.data, args.out / "grid")[0] if (args.out / "grid").is_dir() else None
    else:
        base = grid = None
    report = {"aligner": scores.to_dict(), "duration_only": base.to_dict() if base else None,
              "without_refinement": grid.to_dict() if grid else None, "folds": histories,
              "trainer": args.trainer, "utterances": len(by_name), "seconds": round(time.perf_counter() - start, 1)}
    if args.json:
        print(json.dumps(report))
        return
    print(f"{len(data)} utterances, {len(folds)} speaker folds, trainer {args.trainer}, "
          f"{report['seconds']} s\n")
    print(f"aligner ({args.trainer}):\n{scores.format()}\n")
    if grid:
        print(f"the same decodes on the 10 ms grid (no boundary refinement):\n{grid.format()}\n")
    if base:
        print(f"duration-only baseline:\n{base.format()}\n")
        print(f"same figures: aligner evaluate {args.data} {args.out / 'hyp'}")


if __name__ == "__main__":
    main()
