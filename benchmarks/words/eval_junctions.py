#!/usr/bin/env python
"""Where the word-edge errors are: each edge by what the hand labels put between it and its neighbour.

Every TIMIT utterance is aligned from its ``.txt`` words (``aligner.api.align_words``, as ``aligner
align FILE.wav FILE.txt``) by the speaker-fold model that never heard its speaker (``--folds-dir``,
``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``; without it the shipped
model, which heard them all). The words are paired with the ``.wrd`` words
(:func:`aligner.alignment.evaluation.words.pair_words`), and each edge of a paired word is put in
one group by the reference phones (``.phn``) between it and the next word over:

* ``edge``: the utterance's first start or last end;
* ``none``: the two words touch (no gap in ``.wrd``);
* otherwise the labels that fill the gap, joined by ``+``: ``pau`` (a pause), ``epi`` (an
  epenthetic silence), ``q`` (a glottal stop the annotators gave to neither word), ...

Printed per group: edges, mean absolute error (ms), % within 20 ms, % off by more than 50 ms, the
mean signed error (hypothesis minus reference, ms), how often the aligner put a gap (a pause) of its
own there, and the group's share of all the absolute error. ``--first N`` / ``--skip N`` take part of
the utterances (the speaker folds' first 60 are the validation half the word-graph settings were
chosen on).

    python -m benchmarks.words.eval_junctions [--folds-dir runs/folds-n1] [--first 60] [--skip 60]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.words.bench_words import DEFAULT_DATA, _fold_models, audio_int16, find_utterances, speaker_of_utterance

#: a gap between two reference words shorter than this (s) counts as none (the ``.wrd`` times are samples)
GAP_S = 0.005


def junction_of(phones: list, start_s: float, end_s: float) -> str:
    """The labels of the reference ``phones`` [(start_s, end_s, label)] inside ``start_s .. end_s``,
    joined by ``+`` (``none`` for a gap shorter than :data:`GAP_S`)."""
    if end_s - start_s < GAP_S:
        return "none"
    inside = [p for a, b, p in phones if a >= start_s - 1e-4 and b <= end_s + 1e-4]
    return "+".join(inside) or "unlabelled"


def edge_rows(ref: list, hyp: list, phones: list) -> list:
    """``[(group, signed error ms, the aligner put a gap there)]`` of both edges of every word of
    ``hyp`` paired with one of ``ref`` (Intervals)."""
    from aligner.alignment.evaluation.words import pair_words

    p = pair_words(ref, hyp)
    R, H = p.ref, p.hyp
    rows = []
    for i, j in p.pairs:
        for side in ("start", "end"):
            error = 1000.0 * (getattr(H[j], f"{side}_s") - getattr(R[i], f"{side}_s"))
            r_next, h_next = (i - 1, j - 1) if side == "start" else (i + 1, j + 1)
            if not 0 <= r_next < len(R):
                rows.append(("edge", error, False))
                continue
            a, b = (R[r_next].end_s, R[i].start_s) if side == "start" else (R[i].end_s, R[r_next].start_s)
            gap = 0 <= h_next < len(H) and ((H[j].start_s - H[h_next].end_s) if side == "start"
                                            else (H[h_next].start_s - H[j].end_s)) >= GAP_S
            rows.append((junction_of(phones, a, b), error, bool(gap)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout folder (default: %(default)s)")
    ap.add_argument("--folds-dir", type=Path, default=None, help="speaker-fold models (default: the shipped model)")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N utterances")
    ap.add_argument("--first", type=int, default=None, help="only the first N utterances (after --skip)")
    ap.add_argument("--groups", type=int, default=8, help="print the N largest groups (default: %(default)s)")
    args = ap.parse_args(argv)

    from aligner import api
    from aligner.alignment.evaluation.words import read_phone_intervals
    from benchmarks.words.eval_tight_edges import spoken_words

    utterances = find_utterances(args.data)[args.skip:]
    utterances = utterances[:args.first] if args.first else utterances
    if not utterances:
        print(f"{args.data}: no <utt>.wav with .wrd, .phn and .txt beside it", file=sys.stderr)
        return 1
    if args.folds_dir is None:
        model = api.load_model()
        model_of = lambda utt: model  # noqa: E731
    else:
        by_speaker = _fold_models(args.folds_dir)
        model_of = lambda utt: by_speaker[speaker_of_utterance(utt)]  # noqa: E731
    rows = []
    for utt in utterances:
        samples = audio_int16(utt.audio).astype(np.float32) / 32768.0
        words = dict(api.align_words(samples, utt.txt, model_of(utt), sr=16000, name=utt.name).tiers)["words"]
        rows += edge_rows(spoken_words(utt.wrd), words, read_phone_intervals(utt.phn))
    groups = defaultdict(list)
    for group, error, gap in rows:
        groups[group].append((error, gap))
    total = sum(abs(e) for _, e, _ in rows)
    every = np.array([e for _, e, _ in rows])
    which = f"fold models of {args.folds_dir}" if args.folds_dir else "the shipped model, in-sample"
    print(f"{len(utterances)} utterances, {len(rows)} word edges: MAE {np.abs(every).mean():.2f} ms, "
          f"within 20 ms {100 * np.mean(np.abs(every) <= 20):.1f} %, off by more than 50 ms "
          f"{100 * np.mean(np.abs(every) > 50):.2f} % ({which})")
    print(f"{'between the words':<18} {'edges':>5} {'MAE':>6} {'<=20':>6} {'>50':>6} {'signed':>7} "
          f"{'gap ours':>8} {'share':>6}")
    for group, items in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:args.groups]:
        e = np.array([x for x, _ in items])
        print(f"{group:<18} {len(e):>5} {np.abs(e).mean():6.1f} {100 * np.mean(np.abs(e) <= 20):5.1f}% "
              f"{100 * np.mean(np.abs(e) > 50):5.1f}% {e.mean():+7.1f} {100 * np.mean([g for _, g in items]):7.0f}% "
              f"{100 * np.abs(e).sum() / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
