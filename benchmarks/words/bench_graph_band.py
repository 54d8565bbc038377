#!/usr/bin/env python
"""The banded graph decode against the exact one, on words read from the shared ``.txt`` files.

Every shared TIMIT utterance is aligned from its ``.txt`` words as ``aligner align`` does
(CMU dictionary, G2P for unknown words, the default pronunciation variants, optional pauses),
once with the exact graph DP over all states and once with the two-pass banded decode of
:mod:`aligner.alignment.decoding.graph_band` for each half-width given. Printed per band: how many
utterances decode to exactly the same path (nodes and start frames) as the exact DP, how
many phone starts differ, and the median decode time per audio second (graph input built
once, outside the timing; three repeats, warm). Model: the shipped one, or ``--model``
(``--folds-dir``: each utterance by the fold model that never saw its speaker).

    python -m benchmarks.words.bench_graph_band [--bands 5 10 20 40] [--folds-dir DIR] [--condition NAME] [--json]

``--condition NAME``: every recording degraded first as :func:`benchmarks.alignment.eval_degraded.degrade`
makes it (``white5``, ``reverb_far``, ...; seeded by the utterance's name), where the first pass errs more.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np

from benchmarks.words.bench_words import DEFAULT_DATA, _fold_models, audio_int16, find_utterances, speaker_of_utterance


def _inputs(model, utt, dictionary, condition: str | None = None):
    """The graph input and task of one utterance, as :func:`aligner.api.align_words` builds them
    (its audio degraded as ``condition`` says, if given)."""
    from aligner.alignment import pipeline
    from aligner.alignment.decoding import words as W
    from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input
    from aligner.features.mfcc import mfcc_features
    from aligner.words.normalize import normalize_transcript

    samples = audio_int16(utt.audio).astype(np.float32) / 32768.0
    if condition:
        import zlib

        from benchmarks.alignment.eval_degraded import degrade

        samples = np.asarray(degrade(samples, condition, zlib.crc32(utt.name.encode())), dtype=np.float32)
    frames = mfcc_features(samples, 16000)
    scores = model.classifier.scores(frames)
    text = utt.txt.read_text().split(maxsplit=2)[2]
    _, prons = pipeline._pronunciations(normalize_transcript(text, dictionary), dictionary, "g2p", utt.name, {})
    graph, _ = W.word_graph(model, prons)
    x = make_graph_input(scores, frames, graph, model.min_frames, name=utt.name)
    return x, GraphAlignmentTask(phone_bonus=W.PHONE_BONUS), len(samples) / 16000


def _timed(fn, repeats: int = 3):
    out, times = None, []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, float(np.median(times))


def main(argv=None) -> int:
    from aligner import api
    from aligner.alignment.decoding.graph_band import decode_banded

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--model", default=None)
    ap.add_argument("--folds-dir", default=None)
    ap.add_argument("--bands", type=int, nargs="+", default=[5, 10, 20, 40])
    ap.add_argument("--condition", default=None, help="degrade every recording first (eval_degraded's names)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from pathlib import Path

    utterances = find_utterances(Path(args.data))
    if not utterances:
        print(f"no utterances under {args.data}", file=sys.stderr)
        return 1
    by_speaker = _fold_models(Path(args.folds_dir)) if args.folds_dir else None
    shipped = api.load_model(args.model)
    dictionary = api.load_dictionary()
    seconds = 0.0
    exact_time = 0.0
    band_time = {b: 0.0 for b in args.bands}
    same = {b: 0 for b in args.bands}
    starts_differ = {b: 0 for b in args.bands}
    n_starts = 0
    for utt in utterances:
        model = by_speaker[speaker_of_utterance(utt)] if by_speaker else shipped
        x, task, dur = _inputs(model, utt, dictionary, args.condition)
        seconds += dur
        exact, t = _timed(lambda: task.decode(x, model.weights))
        exact_time += t
        n_starts += len(exact)
        for b in args.bands:
            path, t = _timed(lambda: decode_banded(task, x, model.weights, b))
            band_time[b] += t
            if path == exact:
                same[b] += 1
            else:
                ref = dict(zip(exact.nodes.tolist(), exact.starts.tolist()))
                got = dict(zip(path.nodes.tolist(), path.starts.tolist()))
                starts_differ[b] += sum(1 for n, s in ref.items() if got.get(n) != s)
    rows = [{"band_frames": 0, "same_path": len(utterances), "starts_differ": 0,
             "ms_per_audio_s": 1000 * exact_time / seconds, "speed_up": 1.0}]
    for b in args.bands:
        rows.append({"band_frames": b, "same_path": same[b], "starts_differ": starts_differ[b],
                     "ms_per_audio_s": 1000 * band_time[b] / seconds, "speed_up": exact_time / band_time[b]})
    if args.json:
        print(json.dumps({"utterances": len(utterances), "phone_starts": n_starts, "rows": rows}, indent=1))
        return 0
    print(f"{len(utterances)} utterances, {seconds:.1f} s of audio, {n_starts} phone starts on the exact paths")
    print("| band (frames) | same path as exact | phone starts differing | decode ms per audio s | speed-up |")
    print("|---|---|---|---|---|")
    for r in rows:
        name = "exact (all states)" if r["band_frames"] == 0 else f"+-{r['band_frames']}"
        print(f"| {name} | {r['same_path']}/{len(utterances)} | {r['starts_differ']} | "
              f"{r['ms_per_audio_s']:.2f} | {r['speed_up']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
