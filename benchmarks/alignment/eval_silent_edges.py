#!/usr/bin/env python
"""Recordings with long silent edges: each utterance with seconds of room tone added at both ends.

Each utterance of a TIMIT-layout corpus gets ``--pads`` seconds of its own first 50 ms (its room tone,
tiled, every other copy reversed) added at the start and at the end, optionally degraded as a whole
(``--conditions``, the conditions of :mod:`benchmarks.alignment.eval_degraded`), and is aligned from
its ``.phn`` phones and from its ``.txt`` words, with the long edges cut off before aligning (the
models' default, :mod:`aligner.alignment.decoding.silent_edges`) and aligned whole
(``crops_silent_edges`` off). Scored against the hand labels shifted by the padding: phones as
``aligner evaluate`` scores them (every boundary but the first), words as both edges of every word
(the words paired in order; an utterance whose word count differs is left out and counted).

``--edge zeros`` pads with digital silence instead (an editor's zeros), which reading a recording
replaces by its room tone (:mod:`aligner.io.room_tone`; here applied to the padded samples as
reading a padded file would); ``--no-room-tone`` aligns the zeros as they are.

With ``--folds-dir`` each utterance is aligned by the speaker-fold model that never heard its
speaker (``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``, then
``recipes/distil/distil.py``); without, by ``--model`` (the shipped one: its speakers are the
sample's, so in-sample). ``--every K`` takes every K-th utterance.

    python -m benchmarks.alignment.eval_silent_edges --folds-dir runs/folds-student [--pads 0 1 3]
        [--conditions clean,reverb_far] [--every 1]
    python -m benchmarks.alignment.eval_silent_edges --folds-dir runs/folds-student --pads 0.3 1 --edge zeros \
        [--no-room-tone]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


def padded(samples: np.ndarray, seconds: float, edge: str = "room") -> np.ndarray:
    """``samples`` with ``seconds`` of their first 50 ms (tiled, every other copy reversed) at both ends
    (``edge`` "room"), or of zeros ("zeros")."""
    n = int(round(seconds * 16000))
    if n == 0:
        return samples
    if edge == "zeros":
        pad = np.zeros(n, np.float32)
    else:
        lead = samples[:800]
        pad = np.resize(np.concatenate([lead, lead[::-1]]), n).astype(np.float32)
    return np.concatenate([pad, samples, pad])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=DEFAULT_DATA)
    p.add_argument("--folds-dir", type=Path, default=None, help="speaker-fold models (held out)")
    p.add_argument("--model", default=None, help="one model for every utterance [the shipped English model]")
    p.add_argument("--pads", type=float, nargs="*", default=[0.0, 1.0, 3.0], help="seconds added at each end")
    p.add_argument("--conditions", default="clean", help="comma-separated (benchmarks.alignment.eval_degraded)")
    p.add_argument("--every", type=int, default=1, help="every K-th utterance")
    p.add_argument("--edge", choices=("room", "zeros"), default="room",
                   help="what is added: the utterance's own room tone, or digital silence")
    p.add_argument("--no-room-tone", action="store_true",
                   help="align digital silence as it is (not read as the recording's room tone)")
    args = p.parse_args(argv)

    import aligner.io.room_tone as room_tone

    if args.no_room_tone:  # no recording has this many windows of sound: nothing is replaced
        room_tone.MIN_HEARD_WINDOWS = 1 << 62

    import warnings

    from aligner.alignment.pipeline import align_words, load_model
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn
    from aligner.phones.sets import get_phone_set
    from benchmarks.alignment.eval_degraded import degrade
    from benchmarks.alignment.folds import fold_models

    warnings.simplefilter("ignore", RepairedAudioWarning)  # the sample's SPHERE files, repaired on reading
    pset = get_phone_set("timit61")
    utts = find_utterances(args.corpus)[::args.every]
    if args.folds_dir is not None:
        folds = fold_models(args.folds_dir)
        model_of = {}
        for model, speakers in folds:
            for s in speakers:
                model_of[s] = model
        models = [model for model, _ in folds]
    else:
        single = load_model(args.model)
        model_of, models = None, [single]
    data = []
    for u in utts:
        starts, _, labels = read_phn(u.transcript)
        rows = [line.split(maxsplit=2) for line in u.audio.with_suffix(".wrd").read_text().splitlines() if line.strip()]
        words = [(int(a) / 16000, int(b) / 16000) for a, b, _ in rows]
        text = u.audio.with_suffix(".txt").read_text().split(maxsplit=2)[2].strip()
        if model_of is not None and u.speaker not in model_of:
            continue
        model = single if model_of is None else model_of[u.speaker]
        data.append((load_audio(u.audio), np.asarray(starts, float) / 16000, list(labels), words, text, model))
    print(f"{len(data)} utterances of {args.corpus}; {'fold models ' + str(args.folds_dir) if model_of else 'one model'}")
    print(f"{'condition':10s} {'pad':>4s}  {'phones within 20 ms / mean':>34s}  {'word edges within 20 ms / MAE':>36s}")
    for condition in args.conditions.split(","):
        for pad in args.pads:
            cells = []
            for crop in (False, True):
                for m in models:
                    m.crops_silent_edges = crop
                phone_err, word_err, left_out = [], [], 0
                for i, (y, ref, labels, words, text, model) in enumerate(data):
                    samples = padded(y, pad, args.edge)
                    if condition != "clean":
                        samples = degrade(samples, condition, i)
                    samples = room_tone.with_room_tone(samples)  # as reading the padded file does
                    got = np.array([iv.start_s for iv in model.align(samples, labels, pset)])
                    phone_err += list(np.abs(got[1:] - (ref[1:] + pad)) * 1000)
                    aligned = [iv for iv in dict(align_words(samples, text, model, sr=16000).tiers)["words"]
                               if iv.label]
                    if len(aligned) != len(words):
                        left_out += 1
                        continue
                    for iv, (s, e) in zip(aligned, words):
                        word_err += [abs(iv.start_s - s - pad) * 1000, abs(iv.end_s - e - pad) * 1000]
                pe, we = np.array(phone_err), np.array(word_err)
                cells.append(f"{np.mean(pe <= 20) * 100:6.2f} % / {pe.mean():6.1f} ms"
                             f"  {np.mean(we <= 20) * 100:6.2f} % / {we.mean():6.1f} ms"
                             + (f" ({left_out} left out)" if left_out else ""))
            for m in models:
                m.crops_silent_edges = True
            print(f"{condition:10s} {pad:4.1f}  whole: {cells[0]}")
            print(f"{'':10s} {'':4s}  cut:   {cells[1]}", flush=True)


if __name__ == "__main__":
    main()
