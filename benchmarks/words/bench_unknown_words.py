#!/usr/bin/env python
"""Words the dictionary lacks: the sample's sentences aligned with every word unknown, through the G2P.

A corpus of names, places, dialect words or a language variety CMUdict does not cover sends many
of its words through the G2P, whose first guess is wrong for about a third of held-out dictionary
words (``benchmarks.words.bench_g2p``). The word decoder is offered the G2P's n-best list
(:func:`aligner.words.oov.g2p_pronunciations`) and chooses per token by the acoustics. This
benchmark measures what that recovers, on the worst case: every word of the TIMIT sample's
``.txt`` sentences is treated as unknown (the dictionary answers nothing but annotations), so
each one is aligned from the G2P's pronunciations.

The shipped G2P was trained on CMUdict, which holds the sample's words: its guesses for them
would be unfairly good. The G2P used here (``--g2p DIR``) must have been trained without them:
``--train-g2p`` trains one on CMUdict minus the sample's words and minus ``bench_g2p``'s 2000
held-out words (the shipped settings, about 15-20 minutes on one core) and saves it to ``--g2p``.

Each ``--variants`` value (pronunciations offered per word: 1 is the G2P's best alone) runs
``benchmarks.words.bench_words --tools aligner-cv`` (speaker-disjoint fold models, ``--folds-dir``)
in this process with the dictionary emptied and the G2P replaced; its table is printed per value.
Usage::

    python -m benchmarks.words.bench_unknown_words --folds-dir runs/folds-student --g2p runs/g2p-heldout \\
        [--train-g2p] [--variants 1 4] [--limit N | --skip N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks.words import bench_words


def sample_words(data: Path) -> set:
    """The lookup words of the sample's ``.txt`` sentences (as the aligner normalises them)."""
    from aligner.words.dictionary import load_cmudict
    from aligner.words.normalize import normalize_transcript

    cmu = load_cmudict()
    words = set()
    for utt in bench_words.find_utterances(data):
        text = utt.txt.read_text(encoding="utf-8").split(None, 2)
        words |= {t.word for t in normalize_transcript(text[2] if len(text) == 3 else "", cmu)}
    return words


def train_heldout_g2p(data: Path, out: Path) -> None:
    """Train a G2P on CMUdict minus the sample's words and bench_g2p's held-out words; save it to ``out``."""
    from aligner.words.dictionary import load_cmudict
    from aligner.words.g2p_train import train_g2p, training_entries
    from benchmarks.words.bench_g2p import heldout_words

    excluded = sample_words(data) | set(heldout_words(None))
    t = time.perf_counter()
    entries = training_entries(load_cmudict(), exclude=excluded)
    model, _ = train_g2p(entries, trainer="perceptron",
                         trainer_params={"epochs": 8, "eta0": 1.0, "average": True, "patience": 2},
                         log=lambda m: print(m, flush=True))
    model.training["excluded_words"] = len(excluded)
    model.save(out)
    print(f"trained without {len(excluded)} words in {time.perf_counter() - t:.0f} s; saved to {out}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=bench_words.DEFAULT_DATA, help="TIMIT-layout folder [the sample]")
    ap.add_argument("--folds-dir", type=Path, default=Path("runs/folds"), help="fold models (bench_words)")
    ap.add_argument("--g2p", type=Path, required=True, help="a G2P model trained without the sample's words")
    ap.add_argument("--train-g2p", action="store_true", help="train that G2P first and save it to --g2p")
    ap.add_argument("--variants", type=int, nargs="+", default=[1, 4], help="pronunciations offered per word")
    ap.add_argument("--limit", type=int, default=None, help="only the first N utterances")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N utterances")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here, per --variants value")
    args = ap.parse_args(argv)

    from aligner.words import g2p as g2p_module
    from aligner.words import oov
    from aligner.words.dictionary import PronouncingDictionary

    if args.train_g2p:
        train_heldout_g2p(args.data, args.g2p)
    heldout = g2p_module.G2PModel.load(args.g2p)
    if "excluded_words" not in heldout.training:
        print(f"note: {args.g2p}'s manifest does not say it was trained without the sample's words "
              f"(--train-g2p writes one that was)", file=sys.stderr)
    g2p_module.default_g2p = lambda: heldout  # read at call time by aligner.words.oov
    lookup = PronouncingDictionary.pronunciations
    PronouncingDictionary.pronunciations = (  # every word unknown; annotations keep their entries
        lambda self, word: lookup(self, word) if word[:1] in "[{<" else [])
    find = bench_words.find_utterances
    bench_words.find_utterances = lambda *a, **k: find(*a, **k)[args.skip:]
    rows = {}
    try:
        for n in args.variants:
            oov.G2P_VARIANTS = n
            print(f"== every word unknown, {n} G2P pronunciation(s) offered per word", flush=True)
            out = None if args.json is None else args.json.with_suffix(f".v{n}.json")
            argv_words = ["--data", str(args.data), "--tools", "aligner-cv", "--folds-dir", str(args.folds_dir)]
            argv_words += (["--limit", str(args.limit)] if args.limit else []) + (["--json", str(out)] if out else [])
            if bench_words.main(argv_words) != 0:
                return 1
            if out is not None:
                rows[n] = json.loads(out.read_text())
    finally:
        PronouncingDictionary.pronunciations = lookup
        bench_words.find_utterances = find
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
