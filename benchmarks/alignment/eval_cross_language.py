#!/usr/bin/env python
"""Aligning a language the model never heard, measured on hand-segmented Czech.

The data: the recordings of the Czech Festival diphone voice ``brailcom/voice-czech-ph``
(GPL-2 or later; one male speaker, isolated carrier words and logatomes, 44.1 kHz), whose phone
labels were segmented by hand ("the automated splitting ... resulted in mostly incorrect
labels, hand splitting was done", its ``doc/README``). It is not part of this project and is
never committed; get it from its public repository (a ~190 MB clone) and point ``--data`` at a
folder with its ``wav/`` and ``lab/`` (Festival xlabel: ``<end time s> 26 <phone>`` lines).

Each file's phones (Czech SAMPA, read as IPA by :data:`CZECH_SAMPA_IPA`) are mapped to the
model's closest phones by phonological features (:func:`aligner.phones.languages.phone_mapping`,
the route of ``aligner align --language``), aligned by the model as ARPAbet phones, and the
phone starts are scored against the hand labels (every boundary but the first; pauses ``#``
are phones like any other). Nothing is trained or tuned on this data. A duration-only baseline
(each phone a share of the file proportional to the model's mean duration of its class) puts
the figures in context.

With ``--adapt-rounds N`` the model is then adapted on the same recordings, as ``aligner adapt``
adapts it (:func:`aligner.alignment.adaptation.rounds.adapt_model`, its default settings): each file's
phone transcript, mapped to the model's phones as above, is aligned by the model and the model
re-estimated on those alignments; the hand times are never used. The phone starts are scored
again after each round 1..N.

    python -m benchmarks.alignment.eval_cross_language --data /work/scratch-data/czech-ph-sample
    python -m benchmarks.alignment.eval_cross_language --data /work/scratch-data/czech-ph-sample --adapt-rounds 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

#: Czech SAMPA of the voice's phone list (``doc/recording/phonemes``) -> IPA
CZECH_SAMPA_IPA = {
    "_": "ʔ", "a": "a", "a:": "aː", "b": "b", "c": "t͡s", "ch": "x", "ch*": "ɣ", "c~": "t͡ʃ", "d": "d",
    "dz": "d͡z", "dz~": "d͡ʒ", "d~": "ɟ", "e": "e", "e:": "eː", "f": "f", "g": "ɡ", "h": "ɦ", "i": "ɪ",
    "i:": "iː", "j": "j", "k": "k", "l": "l", "m": "m", "n": "n", "n*": "ŋ", "n~": "ɲ", "o": "o", "o:": "oː",
    "p": "p", "r": "r", "r~": "r̝", "r~*": "r̝̊", "s": "s", "s~": "ʃ", "t": "t", "t~": "c", "u": "u",
    "u:": "uː", "v": "v", "z": "z", "z~": "ʒ",
}
PAUSE = "#"


def read_xlabel(path: Path) -> tuple[np.ndarray, list]:
    """``(starts_s (K,), labels)`` of a Festival xlabel file: after the ``#`` header line, one
    ``<end time> <colour> <label>`` line per segment, each starting where the previous ended."""
    ends, labels, body = [], [], False
    for line in path.read_text(encoding="latin-1").splitlines():
        if not body:
            body = line.strip() == "#"
            continue
        fields = line.split()
        if len(fields) >= 3:
            ends.append(float(fields[0]))
            labels.append(fields[2])
    ends = np.array(ends)
    return np.concatenate([[0.0], ends[:-1]]), labels


def score_model(model, files: list, mapping: dict) -> tuple:
    """``(scores, duration-only baseline scores, failed, compute seconds)`` of ``model`` aligning
    ``files`` ``[(lab path, hand starts (K,) s, Czech labels, 16 kHz samples)]`` as the mapped
    ARPAbet phones (``mapping``: Czech IPA -> model phone; pauses as ``sil``)."""
    from aligner import api
    from aligner.alignment.evaluation.phones import score_alignments
    from aligner.phones.sets import get_phone_set

    arpabet = get_phone_set("arpabet")
    pairs, base_pairs, failed, seconds = [], [], [], 0.0
    for lab, starts, labels, samples in files:
        symbols = model_symbols(labels, mapping)
        t0 = time.perf_counter()
        try:
            hyp = api.align(samples, symbols, model, phone_set="arpabet", sr=16000, name=lab.stem)
        except Exception as exc:  # noqa: BLE001 - reported and counted
            failed.append(f"{lab.name}: {exc}")
            continue
        seconds += time.perf_counter() - t0
        pairs.append((starts, np.array([iv.start_s for iv in hyp])))
        classes = arpabet.class_indices(symbols)
        mu = model.durations.mean[classes]
        dur = len(samples) / 16000
        base_pairs.append((starts, dur * np.concatenate([[0.0], np.cumsum(mu)[:-1]]) / mu.sum()))
    return score_alignments(pairs), score_alignments(base_pairs), failed, seconds


def model_symbols(labels: list, mapping: dict) -> list:
    """The model phones (ARPAbet) a file's Czech SAMPA ``labels`` are aligned as."""
    return ["sil" if s == PAUSE else mapping[CZECH_SAMPA_IPA[s]] for s in labels]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="folder with wav/ and lab/")
    p.add_argument("--model", help="alignment model directory [the shipped model]")
    p.add_argument("--limit", type=int)
    p.add_argument("--adapt-rounds", type=int, default=0,
                   help="then adapt the model on the recordings (mapped phone transcripts, no hand times) for "
                        "this many rounds, scoring after each")
    args = p.parse_args(argv)

    from aligner.phones.languages import phone_mapping
    from aligner.alignment.pipeline import load_model
    from aligner.io.audio import load_audio

    labs = sorted((args.data / "lab").glob("*.lab"))[: args.limit]
    if not labs:
        sys.exit(f"error: {args.data}/lab: no .lab files")
    model = load_model(args.model)
    every = sorted({CZECH_SAMPA_IPA[s] for lab in labs for s in read_xlabel(lab)[1] if s != PAUSE})
    mapping = phone_mapping(every, model)
    print("Czech phone (IPA) -> model phone: " + ", ".join(f"{k} {mapping[k]}" for k in every), file=sys.stderr)
    files, unread = [], []
    for lab in labs:
        starts, labels = read_xlabel(lab)
        if np.any(np.diff(starts) <= 0):
            unread.append(f"{lab.name}: boundaries out of order")
            continue
        files.append((lab, starts, labels, load_audio(args.data / "wav" / f"{lab.stem}.wav")))
    audio_s = sum(len(f[3]) for f in files) / 16000

    def report(title, scores, base=None, failed=(), seconds=None):
        scored = len(files) - len(failed)
        failed = unread + list(failed)
        print(f"{scored} files ({audio_s / 60:.1f} min), {scores.n_boundaries} hand-labelled boundaries; "
              f"{len(failed)} failed{': ' + '; '.join(failed[:5]) if failed else ''}")
        print(f"{title}:\n{scores.format()}\n")
        if base is not None:
            print(f"duration-only baseline (same phones):\n{base.format()}\n")
        if seconds is not None:
            print(f"{seconds / max(audio_s, 1e-9):.4f} s of compute per audio second")

    scores, base, failed, seconds = score_model(model, files, mapping)
    report("English model through the feature mapping", scores, base, failed, seconds)
    if args.adapt_rounds > 0:
        from aligner.alignment.adaptation.rounds import Recording, adapt_model

        recordings = [Recording(samples, model_symbols(labels, mapping), "czech-ph", lab.stem, "phones", "arpabet")
                      for lab, _, labels, samples in files]

        def on_round(rnd, adapted, round_report):
            print(f"round {rnd}: {round_report.files_used} files used, {len(round_report.files_left_out)} left out, "
                  f"{round_report.frames} frames ({round_report.seconds:.1f} s)", file=sys.stderr)
            after, _, after_failed, _ = score_model(adapted, files, mapping)
            report(f"adapted on these recordings, round {rnd} (no hand times used)", after, failed=after_failed)

        adapt_model(model, recordings, args.adapt_rounds, on_round=on_round)


if __name__ == "__main__":
    main()
