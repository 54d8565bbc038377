#!/usr/bin/env python
"""Recipe: train and evaluate the vowel duration model on CVC tokens of a TIMIT-layout corpus.

    python recipes/vowels/train.py ../shared/data/timit-sample models/timit-vowels
    python recipes/vowels/train.py ../shared/data/timit-sample --held-out-classifier   # scores only

A thin entry point: the work is :func:`aligner.vowels.training.train_vowel_model` (the same as
``aligner train-vowels CORPUS MODEL_DIR``). Tokens are cut from every utterance with a
``.phn`` (:mod:`aligner.vowels.cvc`); the speakers are split into ``--folds`` folds, and in each
fold every trainer setting of ``--trainers`` x edge-width set of ``--widths`` is fitted with
early stopping on two validation speakers, the lowest validation cost being scored on the test
speakers; the candidate with the lowest validation cost summed over the folds is refitted on
every speaker for the median of its early-stopped epochs and saved to OUT. The metrics (test
folds pooled, ms on the ``.phn`` times) go to stdout and, with ``--json-out``, with the whole
training record, to a JSON file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from aligner.errors import AlignerError
from aligner.features.vowel_acoustics import N_COLUMNS, VOWEL_COLUMNS
from aligner.vowels.training import (DEFAULT_EPOCHS, DEFAULT_FOLDS, DEFAULT_TAU, DEFAULT_TRAINERS,
                                     DEFAULT_WIDTH_SETS, format_report, train_vowel_model)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path, help="TIMIT-layout corpus (audio + .phn)")
    ap.add_argument("out", type=Path, nargs="?", help="model directory to write (e.g. models/timit-vowels); "
                                                      "without it, scores only")
    ap.add_argument("--alignment-model", type=Path, help="alignment model whose classifier to use [shipped]")
    ap.add_argument("--trainers", nargs="+", default=list(DEFAULT_TRAINERS))
    ap.add_argument("--folds", type=int, default=DEFAULT_FOLDS)
    ap.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    ap.add_argument("--widths", nargs="+", default=[",".join(map(str, w)) for w in DEFAULT_WIDTH_SETS],
                    help="edge-width sets (frames) to choose from on validation, e.g. 2,5,10")
    ap.add_argument("--tau", type=float, default=DEFAULT_TAU, help="cost tolerance, frames (5 ms)")
    ap.add_argument("--all-columns", action="store_true", help="use all 22 columns instead of the 16 default")
    ap.add_argument("--prior", choices=("full", "lognormal", "gamma", "off"), default="off",
                    help="form of the duration prior (aligner.vowels.task.DurationPrior) [off: a prior fitted "
                         "on TIMIT's connected speech cuts the long vowels of words read in isolation short]")
    ap.add_argument("--prior-widen", type=float, default=1.0, help="multiply the prior's (log) std by this [1]")
    ap.add_argument("--runs", type=int, default=1,
                    help="fits per configuration over seeds 0..R-1 whose weights are averaged [1]")
    ap.add_argument("--keep-corrupted", action="store_true",
                    help="train and score on tokens whose audio exceeds the SPHERE header's sample range too")
    ap.add_argument("--held-out-classifier", action="store_true",
                    help="score each test fold with a frame classifier trained without its speakers "
                         "(about 80 s more per fold); the saved model keeps the alignment model's classifier")
    ap.add_argument("--json-out", type=Path, help="write the training record (settings, scores) here")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    try:
        model = train_vowel_model(
            args.corpus, args.alignment_model, trainers=args.trainers,
            width_sets=[tuple(int(v) for v in w.split(",")) for w in args.widths], epochs=args.epochs,
            n_folds=args.folds, tau=args.tau, columns=tuple(range(N_COLUMNS)) if args.all_columns else VOWEL_COLUMNS,
            prior_form=args.prior, prior_widen=args.prior_widen, n_runs=args.runs,
            keep_corrupted=args.keep_corrupted, held_out_classifier=args.held_out_classifier,
            progress=lambda stage, done, total: print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)
            if done == total else None)
    except AlignerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(format_report(model.training))
    if args.out is not None:
        model.save(args.out)
        print(f"wrote {args.out}: durations {model.min_dur}-{model.max_dur} frames")
    print(f"total {time.perf_counter() - t0:.1f} s")
    if args.json_out:
        args.json_out.write_text(json.dumps(model.training, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
