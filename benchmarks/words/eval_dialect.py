#!/usr/bin/env python
"""Dialect variants on TIMIT's (rhotic, American) speech: accuracy and how often r-less is chosen.

Every utterance is aligned from its ``.txt`` words once per ``--dialects`` choice
(``aligner.api.align_words(..., dialect=...)``; :mod:`aligner.words.dialects`) and scored as
``benchmarks.words.bench_words`` scores it: words against ``.wrd`` (label-paired edges, MAE,
F1@20), phones against the ``.phn`` rewritten as ARPAbet. For ``auto`` (the dictionary's and the
r-less pronunciations both offered), it counts the word tokens that have an r-less form the
dictionary does not list, and how many of them the decoder aligned as r-less; the words it chose
r-less are listed with their counts. On rhotic speech ``auto`` should rarely choose r-less.

``--folds-dir DIR``: each utterance aligned by the fold model that never heard its speaker
(``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``); default: the shipped
model (which heard every speaker of the sample)::

    python -m benchmarks.words.eval_dialect [--dialects rhotic auto non-rhotic] [--folds-dir DIR]
        [--audio-dir DIR] [--json out.json]

``--audio-dir DIR``: a folder of ``<name>.wav`` + ``<name>.txt`` without references (synthetic
or recorded development speech, e.g. non-rhotic readings): only the r-less counts are printed.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import numpy as np

from aligner.alignment.evaluation.words import read_wrd, score_phone_alignments, score_word_alignments
from aligner.io.audio import SAMPLE_RATE
from benchmarks.words.bench_words import (DEFAULT_DATA, _fold_models, audio_int16, find_utterances, reference_phones,
                                          speaker_of_utterance)


def word_phones(words: list, phones: list) -> list:
    """Per word interval, the labels of the phones inside it (times in seconds)."""
    out, k = [], 0
    for w in words:
        while k < len(phones) and phones[k].start_s < w.start_s - 1e-6:
            k += 1
        labels = []
        while k < len(phones) and phones[k].end_s <= w.end_s + 1e-6:
            labels.append(phones[k].label.upper())
            k += 1
        out.append(tuple(labels))
    return out


def rless_choices(words: list, phones: list, dictionary) -> tuple:
    """``(tokens with an r-less form the dictionary lacks, [words aligned r-less])``."""
    from aligner.words.dialects import non_rhotic

    n, chosen = 0, []
    for w, pron in zip(words, word_phones(words, phones)):
        own = {tuple(p.upper() for p in alt) for alt in dictionary.pronunciations(w.label)}
        rless = {non_rhotic(alt) for alt in own} - own
        if not rless:
            continue
        n += 1
        if pron in rless or (pron not in own and pron[:-1] in rless and pron[-1:] == ("R",)):
            chosen.append(w.label.lower())
    return n, chosen


def run(items: list, model_of, dialect: str, dictionary, scored: bool) -> dict:
    """Align every ``(name, samples, txt, ref_words, ref_phones, utt)`` with ``dialect``."""
    from aligner import api

    word_pairs, phone_pairs, tokens, chosen, failed = [], [], 0, [], []
    for name, samples, txt, ref_words, ref_phones, utt in items:
        try:
            result = api.align_words(samples, txt, model_of(utt), sr=SAMPLE_RATE, name=name, dialect=dialect)
            tiers = dict(result.tiers)
            words, phones = tiers["words"], tiers["phones"]
        except Exception as exc:  # noqa: BLE001 - a failure is a result
            print(f"{name} ({dialect}): failed: {' '.join(str(exc).split())}", file=sys.stderr)
            failed.append(name)
            words, phones = [], []
        n, c = rless_choices(words, phones, dictionary)
        tokens += n
        chosen += c
        if scored:
            word_pairs.append((ref_words, words))
            phone_pairs.append((ref_phones, phones))
    out = {"dialect": dialect, "utterances": len(items), "failed": failed, "r_tokens": tokens,
           "rless_chosen": len(chosen), "rless_words": collections.Counter(chosen).most_common()}
    if scored:
        w = score_word_alignments(word_pairs)
        p = score_phone_alignments(phone_pairs)
        out.update(word_mae=w.mean_ms, word_f1=w.f1, word_within_50=w.within_ms[50], phone_mae=p.mean_ms,
                   phone_within_20=p.within_ms[20], per=p.error_rate)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="TIMIT-layout folder of <utt>.wav/.wrd/.phn/.txt (default: %(default)s)")
    ap.add_argument("--audio-dir", type=Path, default=None,
                    help="instead: <name>.wav + <name>.txt without references (r-less counts only)")
    ap.add_argument("--dialects", nargs="+", default=["rhotic", "auto"], choices=["rhotic", "auto", "non-rhotic"])
    ap.add_argument("--folds-dir", type=Path, default=None,
                    help="speaker-fold models (default: the shipped model, which heard these speakers)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N utterances")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)

    from aligner import api

    dictionary = api.load_dictionary()
    if args.folds_dir is not None and args.audio_dir is None:
        by_speaker = _fold_models(args.folds_dir)
        model_of, which = (lambda utt: by_speaker[speaker_of_utterance(utt)]), f"fold models of {args.folds_dir}"
    else:
        model = api.load_model()
        model_of, which = (lambda utt: model), "the shipped model"
    if args.audio_dir is not None:
        from aligner.io.audio import load_audio

        wavs = sorted(args.audio_dir.glob("*.wav"))
        items = [(w.stem, load_audio(w, SAMPLE_RATE), w.with_suffix(".txt"), None, None, None)
                 for w in wavs if w.with_suffix(".txt").is_file()]
        scored, source = False, f"{len(items)} recordings of {args.audio_dir} (no references)"
    else:
        utts = find_utterances(args.data)
        utts = utts[: args.limit] if args.limit else utts
        items = [(u.name, audio_int16(u.audio).astype(np.float32) / 32768.0, u.txt, read_wrd(u.wrd),
                  reference_phones(u.phn), u) for u in utts]
        scored, source = True, f"{len(items)} TIMIT utterances of {args.data}, {which}"
    if not items:
        print("nothing to align", file=sys.stderr)
        return 1
    rows = [run(items, model_of, d, dictionary, scored) for d in args.dialects]
    print(f"{source}; words from .txt")
    head = f"{'dialect':<11} | {'r-words':>7} {'r-less chosen':>13}"
    if scored:
        head += f" | {'word MAE':>8} {'<=50':>5} {'F1@20':>5} | {'phone MAE':>9} {'<=20':>5} {'PER':>5}"
    print(head)
    print("-" * len(head))
    for r in rows:
        share = 100.0 * r["rless_chosen"] / max(r["r_tokens"], 1)
        line = f"{r['dialect']:<11} | {r['r_tokens']:>7} {r['rless_chosen']:>5} ({share:4.1f} %)"
        if scored:
            line += (f" | {r['word_mae']:8.1f} {r['word_within_50']:5.1f} {r['word_f1']:5.1f} | {r['phone_mae']:9.1f} "
                     f"{r['phone_within_20']:5.1f} {r['per']:5.1f}")
        print(line)
    for r in rows:
        if r["rless_words"]:
            print(f"{r['dialect']}: aligned r-less: " + ", ".join(f"{w} {n}" for w, n in r["rless_words"]))
        if r["failed"]:
            print(f"{r['dialect']}: {len(r['failed'])} failed: {', '.join(r['failed'])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
