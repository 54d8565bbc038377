#!/usr/bin/env python
"""Boundary accuracy on ARPAbet-style transcripts, with and without the stop-closure split.

Each TIMIT reference (``.phn``) is turned into what an ARPAbet user would write and when its
phones start (:func:`aligner.alignment.evaluation.references.arpabet_reference`); the utterance is aligned to those ARPAbet symbols
with the given model twice - stops decoded as one phone, and split into closure + release
(:mod:`aligner.alignment.decoding.stop_closures`) - and both are scored against the converted reference times
with :func:`aligner.alignment.evaluation.phones.score_alignments`.

The figures measure held-out accuracy only for speakers the model did not see: by default the
script tests the speakers missing from the model's ``training.speakers`` and, when the model
saw them all, tests every speaker and says so. Several ``--model`` options pool the results of
models trained on speaker-disjoint folds, each tested on its own held-out speakers.

Two rows per setting: every boundary (all phones but the first), and the starts of stops and
affricates alone (where the split moves the boundary from the burst to the closure).

    python -m benchmarks.alignment.eval_arpabet_style --model models/timit-alignment
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from aligner.alignment.model import AlignmentModel, DurationStats
from aligner.alignment.evaluation.references import arpabet_reference
from aligner.io.audio import SAMPLE_RATE, load_audio
from aligner.io.corpus import find_utterances
from aligner.alignment.evaluation.phones import TOLERANCES_MS, score_alignments
from aligner.features.mfcc import mfcc_features
from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir
from aligner.io.transcripts import read_phn
from aligner.phones.sets import get_phone_set
from aligner.alignment.decoding.stop_closures import CLOSURE_OF_STOP

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"

def stop_start_pairs(pairs_with_symbols: list) -> list:
    """``(ref, hyp)`` start-time pairs restricted to the starts of stops and affricates, each
    with a dummy first phone at 0 (the first start of a pair is not scored)."""
    out = []
    for ref, hyp, symbols in pairs_with_symbols:
        idx = [k for k, s in enumerate(symbols) if k > 0 and s in CLOSURE_OF_STOP]
        if idx:
            out.append((np.concatenate([[0.0], ref[idx]]), np.concatenate([[0.0], hyp[idx]])))
    return out


def format_row(label: str, scores) -> str:
    within = "  ".join(f"{scores.within_ms[t]:5.1f}" for t in TOLERANCES_MS)
    return f"{label:<44} {scores.n_boundaries:6d}  {within}  {scores.mean_ms:7.1f}  {scores.median_ms:6.1f}"


def test_speakers_of(model: AlignmentModel, all_speakers: list, requested: list | None) -> tuple:
    """``(test speakers, those of them the model saw)``: ``requested`` if given, else the
    speakers missing from the model's ``training.speakers``, else (it saw them all) all."""
    seen = set(model.training.get("speakers", []))
    if requested:
        test = list(requested)
    else:
        test = [s for s in all_speakers if seen and s not in seen] or list(all_speakers)
    return test, sorted(set(test) & seen)


def align_both_ways(model: AlignmentModel, utterances: list, rows: dict) -> None:
    """Align every utterance's ARPAbet-style transcript with stops whole and split; append
    ``(ref_starts_s, hyp_starts_s, symbols)`` to ``rows[False]`` and ``rows[True]``."""
    arpabet = get_phone_set("arpabet")
    for utt in utterances:
        samples = load_audio(utt.audio)
        duration_s = len(samples) / SAMPLE_RATE
        phn_starts, _, labels = read_phn(utt.transcript)
        ref_starts, symbols = arpabet_reference(phn_starts / SAMPLE_RATE, labels)
        frames = mfcc_features(samples, SAMPLE_RATE)
        scores = model.classifier.scores(frames)  # once for both decodes
        for split in (False, True):
            intervals = model.align_scored(frames, scores, symbols, arpabet, duration_s,
                                           name=utt.name, split_stops=split)
            assert [s for _, _, s in intervals] == symbols
            rows[split].append((ref_starts, np.array([a for a, _, _ in intervals]), symbols))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    p.add_argument("--model", type=Path, action="append", default=None,
                   help="alignment model bundle (default: shipped); repeat it to pool several models, "
                        "each tested on the speakers it did not see (speaker-disjoint folds)")
    p.add_argument("--speakers", default=None,
                   help="comma-separated test speakers (default: those the model did not see, else all)")
    p.add_argument("--class-durations-only", action="store_true",
                   help="drop the model's per-symbol duration table (as in models that predate it): "
                        "closures then get class sil's statistics")
    args = p.parse_args(argv)

    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")
    utterances = find_utterances(args.data)
    all_speakers = sorted({u.speaker for u in utterances})
    requested = [s.strip() for s in args.speakers.split(",") if s.strip()] if args.speakers else None
    start = time.perf_counter()
    rows = {False: [], True: []}
    for model_dir in args.model or [default_model_dir(ALIGNMENT_KIND)]:
        model = AlignmentModel.load(model_dir)
        if args.class_durations_only:
            d = model.durations
            model.durations = DurationStats(d.mean, d.std, d.max_frames)
        test, seen_test = test_speakers_of(model, all_speakers, requested)
        n_seen = len(model.training.get("speakers", [])) or "?"
        symbol_stats = "yes" if len(model.durations.symbols) else "no (closures use class sil)"
        print(f"model {model_dir}: trained on {n_seen} speakers; per-symbol durations: {symbol_stats}")
        print(f"  test speakers: {', '.join(test)}")
        if seen_test:
            print(f"  WARNING: the model saw {len(seen_test)} of the {len(test)} test speakers "
                  f"({', '.join(seen_test)}): these figures are not held-out accuracy")
        elif not model.training.get("speakers"):
            print("  WARNING: the model does not list its training speakers")
        align_both_ways(model, [u for u in utterances if u.speaker in test], rows)
    if not rows[False]:
        sys.exit("error: no utterance of the test speakers found")

    print(f"\n{len(rows[False])} utterances, {time.perf_counter() - start:.0f} s\n")
    header = "  ".join(f"<={t}ms" for t in TOLERANCES_MS)
    print(f"{'':<44} {'bounds':>6}  {header}  mean ms  median")
    for split in (False, True):
        name = "split stops (closure + release)" if split else "stops as one phone"
        print(format_row(f"{name}: all", score_alignments([(r, h) for r, h, _ in rows[split]])))
    for split in (False, True):
        name = "split stops" if split else "stops as one phone"
        print(format_row(f"{name}: stop/affricate starts", score_alignments(stop_start_pairs(rows[split]))))


if __name__ == "__main__":
    main()
