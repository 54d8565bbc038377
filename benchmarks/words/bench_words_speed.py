#!/usr/bin/env python
"""What aligning from words adds to the alignment time per audio second.

On the shared TIMIT utterances, one process aligns every utterance as ``aligner align`` does
(:func:`aligner.api.align_transcript`: features, classifier, decoder, boundary refiner and the
confidence review) twice: from its ``.phn`` phones and from its ``.txt`` words (text
normalisation, CMU dictionary, G2P, the pronunciation graph and its decode). Model loading,
the dictionary load and numba compilation are done before the timing. Each pass is repeated
``--repeats`` times, alternating phones and words; the medians are printed with their ratio.

Words seen before are cheaper (their graph segments are cached per model), so the words pass
is timed twice: with the cache emptied before every pass (every word new to the process, as
for a first file) and warm (as for the rest of a corpus that repeats its words).

    python -m benchmarks.words.bench_words_speed [--every 2] [--repeats 5] [--json]

Run it pinned to one core (``taskset -c 1``) with ``OPENBLAS_NUM_THREADS=1`` for figures that
do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.words.bench_words import DEFAULT_DATA, audio_int16, find_utterances


def main(argv=None) -> int:
    from aligner import api

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--model", default=None)
    ap.add_argument("--every", type=int, default=1, help="use every N-th utterance")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    utterances = find_utterances(Path(args.data))[::args.every]
    if not utterances:
        print(f"no utterances under {args.data}", file=sys.stderr)
        return 1
    model = api.load_model(args.model)
    api.load_dictionary()
    api.warm_up(model)
    api.warm_up_words(model)
    clips = [(audio_int16(u.audio).astype(np.float32) / 32768.0, u) for u in utterances]
    seconds = sum(len(pcm) for pcm, _ in clips) / 16000

    def phones():
        for pcm, u in clips:
            api.align_transcript(pcm, str(u.phn), model, kind="phones", sr=16000, name=u.name)

    def words(cold: bool):
        if cold:
            model.durations.__dict__.pop("_word_segments", None)
        for pcm, u in clips:
            api.align_transcript(pcm, str(u.txt), model, kind="words", sr=16000, name=u.name)

    def timed(fn, *a):
        t = time.perf_counter()
        fn(*a)
        return time.perf_counter() - t

    phones(), words(False)  # first touches (page cache, lazy imports)
    t_p, t_cold, t_warm = [], [], []
    for _ in range(args.repeats):
        t_p.append(timed(phones))
        t_cold.append(timed(words, True))
        t_warm.append(timed(words, False))
    p, c, w = (statistics.median(v) for v in (t_p, t_cold, t_warm))
    out = {"utterances": len(clips), "audio_seconds": round(seconds, 1), "repeats": args.repeats,
           "phones_ms_per_audio_s": 1000 * p / seconds, "words_cold_ms_per_audio_s": 1000 * c / seconds,
           "words_warm_ms_per_audio_s": 1000 * w / seconds,
           "words_cold_added_pct": 100 * (c / p - 1), "words_warm_added_pct": 100 * (w / p - 1)}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{len(clips)} utterances, {seconds:.1f} s of audio, median of {args.repeats} passes")
    print(f"from phones:                    {out['phones_ms_per_audio_s']:.2f} ms per audio second")
    print(f"from words, every word new:     {out['words_cold_ms_per_audio_s']:.2f} ms "
          f"({out['words_cold_added_pct']:+.1f} %)")
    print(f"from words, words seen before:  {out['words_warm_ms_per_audio_s']:.2f} ms "
          f"({out['words_warm_added_pct']:+.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
