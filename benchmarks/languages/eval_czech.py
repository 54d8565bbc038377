#!/usr/bin/env python
"""Hand-segmented Czech through the universal model: a language, an archive and a speaker it never heard.

The data, as for :mod:`benchmarks.alignment.eval_cross_language`: the recordings of the Czech
Festival diphone voice ``brailcom/voice-czech-ph`` (GPL-2 or later; one male speaker, isolated
carrier words and logatomes, segmented by hand), every 12th ``.lab`` of its sorted list (193 files);
never committed. ``--data`` holds its ``wav/`` and ``lab/``.

Each file's phones (Czech SAMPA read as IPA by :data:`~benchmarks.alignment.eval_cross_language.CZECH_SAMPA_IPA`,
the pauses ``#`` as silences) are aligned by the universal model (the view of exactly those phones)
and every boundary but the first is scored against the hand labels. With ``--english`` the shipped
English model through the feature mapping is scored too. With ``--adapt-rounds N`` the universal
model's view of the Czech phones is then adapted on the same recordings (their phones, never their
times), as ``aligner adapt --phone-set ipa`` adapts it, and scored after each round. Nothing is
trained or tuned on this data.

    python -m benchmarks.languages.eval_czech --data runs/czech-ph-sample --model models/universal --english
    python -m benchmarks.languages.eval_czech --data runs/czech-ph-sample --adapt-rounds 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def czech_symbols(labels: list) -> list:
    """The IPA phones (pauses as ``sil``) of a file's Czech SAMPA labels."""
    from benchmarks.alignment.eval_cross_language import CZECH_SAMPA_IPA, PAUSE

    return ["sil" if s == PAUSE else CZECH_SAMPA_IPA[s] for s in labels]


def score(align, files: list) -> tuple:
    """``(scores, failed, compute seconds, by position)`` of ``align(samples, symbols) -> start times
    (K,)`` over ``files``; by position: :func:`by_position` of the scored files."""
    from aligner.alignment.evaluation.phones import score_alignments

    pairs, failed, seconds = [], [], 0.0
    for lab, starts, symbols, samples in files:
        t0 = time.perf_counter()
        try:
            hyp = align(samples, symbols)
        except Exception as exc:  # noqa: BLE001 - reported and counted
            failed.append(f"{lab.name}: {exc}")
            continue
        seconds += time.perf_counter() - t0
        pairs.append((starts, hyp))
    return score_alignments(pairs), failed, seconds, by_position(pairs)


def by_position(pairs: list) -> str:
    """One line: the share of boundaries within 20 ms and the median signed error (ms, positive:
    late) of the first scored boundary (the first pause into the first phone), the last (the last
    phone into the final pause) and the others, over ``(reference starts, hypothesis starts)``
    pairs (seconds). This voice's files start their first phone at 0.200 s and end their last 0.200 s
    before the file's end (its builders' padding); the last phone ends, as labelled, where the level
    has fallen to about 10 dB above the recording's floor (docs/results.md)."""
    groups: dict = {"first": [], "inner": [], "last": []}
    for ref, hyp in pairs:
        err = 1000.0 * (np.asarray(hyp, float)[1:] - np.asarray(ref, float)[1:])
        if err.size:
            groups["first"].append(err[:1])
            groups["last"].append(err[-1:] if err.size > 1 else err[:0])
            groups["inner"].append(err[1:-1])
    parts = []
    for name, chunks in groups.items():
        e = np.concatenate(chunks) if chunks else np.zeros(0)
        if e.size:
            parts.append(f"{name} {np.mean(np.abs(e) <= 20 + 1e-6) * 100:.1f} % "
                         f"(n {e.size}, median {np.median(e):+.1f} ms)")
    return "within 20 ms by position: " + "; ".join(parts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="folder with wav/ and lab/")
    p.add_argument("--model", default=None, help="universal model directory [the shipped one]")
    p.add_argument("--english", action="store_true", help="also the English model through the feature mapping")
    p.add_argument("--adapt-rounds", type=int, default=0)
    p.add_argument("--adapt-settings", default="{}",
                   help="AdaptSettings fields, JSON ({}: those of aligner adapt for a universal model)")
    args = p.parse_args(argv)

    from aligner.alignment.pipeline import load_model
    from aligner.io.audio import load_audio
    from benchmarks.alignment.eval_cross_language import read_xlabel

    labs = sorted((args.data / "lab").glob("*.lab"))
    if not labs:
        sys.exit(f"error: {args.data}/lab: no .lab files")
    files = []
    for lab in labs:
        starts, labels = read_xlabel(lab)
        if np.any(np.diff(starts) <= 0):
            print(f"left out {lab.name}: boundaries out of order", file=sys.stderr)
            continue
        files.append((lab, starts, czech_symbols(labels), load_audio(args.data / "wav" / f"{lab.stem}.wav")))
    audio_s = sum(len(f[3]) for f in files) / 16000
    model = load_model(args.model, universal=True)
    print(f"{len(files)} files, {audio_s / 60:.1f} min; universal model {args.model or '(shipped)'}")

    def universal(samples, symbols, m=model):
        view = m.view(symbols)
        return np.array([iv.start_s for iv in view.align(samples, symbols, view.phone_set)])

    def report(title, result):
        scores, failed, seconds, positions = result
        print(f"{title}: {len(failed)} failed{': ' + '; '.join(failed[:3]) if failed else ''}; "
              f"{seconds / audio_s:.4f} s of compute per audio second\n{scores.format()}\n{positions}\n", flush=True)

    report("universal model", score(universal, files))
    if args.english:
        from aligner import api

        english = load_model(None)

        def mapped(samples, symbols):
            return np.array([iv.start_s for iv in api.align(samples, symbols, english, phone_set="ipa", sr=16000)])

        report("English model through the feature mapping", score(mapped, files))
    if args.adapt_rounds > 0:
        from aligner.alignment.adaptation.corpus import UNIVERSAL_ADAPT_SETTINGS
        from aligner.alignment.adaptation.rounds import AdaptSettings, Recording, adapt_model

        base = model.view(sorted({s for f in files for s in f[2]}))
        recordings = [Recording(samples, symbols, "czech-ph", lab.stem, "phones", "model")
                      for lab, _, symbols, samples in files]

        def on_round(rnd, adapted, round_report):
            def aligned(samples, symbols):
                return np.array([iv.start_s for iv in adapted.align(samples, symbols, adapted.phone_set)])

            print(f"round {rnd}: {round_report.files_used} files used ({round_report.seconds:.1f} s)", file=sys.stderr)
            report(f"adapted on these recordings, round {rnd} (no hand times used)", score(aligned, files))

        adapt_model(base, recordings, args.adapt_rounds,
                    AdaptSettings(**(json.loads(args.adapt_settings) or UNIVERSAL_ADAPT_SETTINGS)),
                    on_round=on_round)


if __name__ == "__main__":
    main()
