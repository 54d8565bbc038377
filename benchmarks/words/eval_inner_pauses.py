#!/usr/bin/env python
"""Long pauses between words: each utterance with seconds of its own room tone put between two of its words,
aligned from its words and from its phones.

A speaker who stops to think, a reader who breathes between phrases: the pause inside an
utterance can last seconds. Each utterance of the TIMIT sample gets ``--pauses`` seconds of its
own first 50 ms (tiled, every other copy reversed) inserted where its middle word starts (by the
``.wrd`` times), is aligned from its ``.txt`` words by the speaker-fold model that never heard its
speaker (``--folds-dir``, ``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``),
and both edges of every word are scored against the hand labels shifted by the pause (the words
paired in order; an utterance whose word count differs is left out and counted). Its ``.phn`` phones,
with a ``pau`` written where the pause is, are aligned too, and every phone start but the first is
scored.

``--joined MINUTES``: instead, each fold's utterances are joined in order (repeated until the
recording lasts that long) with the pause before every utterance but the first, written to a WAV
file with their words in a ``.txt``, and aligned from that file as ``aligner align`` does (past
:data:`aligner.alignment.pipeline.STREAM_SECONDS` the recording is read from its file on demand);
the word edges are paired with the hand labels by their words' sequence.

    python -m benchmarks.words.eval_inner_pauses --folds-dir runs/folds-n1 [--pauses 0 0.5 2 5] [--every 4]
        [--no-pause-cut] [--joined 12]
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


def with_pause(samples: np.ndarray, at: int, seconds: float) -> np.ndarray:
    """``samples`` with ``seconds`` of their first 50 ms (tiled, every other copy reversed) inserted
    before sample ``at``."""
    lead = samples[:800]
    tone = np.resize(np.concatenate([lead, lead[::-1]]), int(round(seconds * 16000))).astype(np.float32)
    return np.concatenate([samples[:at], tone, samples[at:]])


def paired_edge_errors(aligned: list, reference: list) -> np.ndarray:
    """Absolute errors (ms) of both edges of the ``aligned`` words (intervals) against ``reference``
    [(start_s, end_s, word)], the two paired by the longest matching runs of their lower-cased words."""
    import difflib

    ours, theirs = [iv.label.lower() for iv in aligned], [w.lower() for _, _, w in reference]
    errors = []
    for block in difflib.SequenceMatcher(None, ours, theirs, autojunk=False).get_matching_blocks():
        for i in range(block.size):
            iv, (s, e, _) = aligned[block.a + i], reference[block.b + i]
            errors += [abs(iv.start_s - s) * 1000, abs(iv.end_s - e) * 1000]
    return np.array(errors)


def joined_recordings(data: list, pauses: list, minutes: float) -> None:
    """Each fold's utterances of ``data`` joined into a recording of ``minutes`` with each pause of
    ``pauses`` (seconds) before every utterance but the first, aligned from its file; word edges
    scored (:func:`paired_edge_errors`)."""
    import tempfile
    import time

    import soundfile as sf

    from aligner.alignment.pipeline import align_words

    by_model: dict = {}
    for item in data:
        by_model.setdefault(id(item[3]), []).append(item)
    print(f"{'pause':>6s}  {'minutes':>7s}  {'word edges':>10s}  {'of':>6s}  {'MAE':>8s}  {'within 20 ms':>12s}"
          f"  {'off > 50 ms':>11s}  {'x real time':>11s}")
    with tempfile.TemporaryDirectory() as tmp:
        wav, txt = Path(tmp) / "joined.wav", Path(tmp) / "joined.txt"
        for pause in pauses:
            errors, n_ref, seconds, wall = [], 0, 0.0, 0.0
            for items in by_model.values():
                parts, texts, reference, t0, i = [], [], [], 0.0, 0
                while t0 < minutes * 60:
                    samples, words, text, model, _, _, word_labels = items[i % len(items)]
                    if i and pause > 0:
                        parts.append(with_pause(samples, 0, pause)[:int(round(pause * 16000))])
                        t0 += len(parts[-1]) / 16000
                    reference += [(t0 + s, t0 + e, w) for (s, e), w in zip(words, word_labels)]
                    parts.append(samples)
                    texts.append(text)
                    t0 += len(samples) / 16000
                    i += 1
                sf.write(wav, np.clip(np.round(np.concatenate(parts) * 32768), -32768, 32767).astype(np.int16),
                         16000, subtype="PCM_16")
                txt.write_text(" ".join(texts) + "\n", encoding="utf-8")
                start = time.perf_counter()
                aligned = [iv for iv in dict(align_words(str(wav), str(txt), model).tiers)["words"] if iv.label]
                wall += time.perf_counter() - start
                seconds += t0
                errors.append(paired_edge_errors(aligned, reference))
                n_ref += 2 * len(reference)
            e = np.concatenate(errors)
            print(f"{pause:5.1f}s  {seconds / 60 / len(by_model):7.1f}  {len(e):10d}  {n_ref:6d}  {e.mean():5.1f} ms  "
                  f"{np.mean(e <= 20) * 100:10.1f} %  {np.mean(e > 50) * 100:9.1f} %  {seconds / wall:11.0f}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=DEFAULT_DATA)
    p.add_argument("--folds-dir", type=Path, required=True, help="speaker-fold models (held out)")
    p.add_argument("--pauses", type=float, nargs="*", default=[0.0, 0.5, 2.0, 5.0], help="seconds inserted")
    p.add_argument("--every", type=int, default=1, help="every K-th utterance")
    p.add_argument("--no-pause-cut", action="store_true",
                   help="align the pauses whole, as 0.26.1 did (no middle cut out)")
    p.add_argument("--joined", type=float, default=None, metavar="MINUTES",
                   help="join each fold's utterances into one recording of this many minutes, aligned from its file")
    args = p.parse_args(argv)

    if args.no_pause_cut:
        import aligner.alignment.decoding.silent_edges as silent_edges

        silent_edges.inner_silences_cut = lambda *a, **k: None  # noqa: E731 - every caller reads it here

    from aligner.alignment.pipeline import align_words
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn
    from aligner.phones.sets import get_phone_set
    from benchmarks.alignment.folds import fold_models

    warnings.simplefilter("ignore", RepairedAudioWarning)  # the sample's SPHERE files, repaired on reading
    model_of = {s: m for m, speakers in fold_models(args.folds_dir) for s in speakers}
    data = []
    for u in find_utterances(args.corpus)[::args.every]:
        if u.speaker not in model_of:
            continue
        rows = [line.split(maxsplit=2) for line in u.audio.with_suffix(".wrd").read_text().splitlines() if line.strip()]
        words = [(int(a) / 16000, int(b) / 16000) for a, b, _ in rows]
        text = u.audio.with_suffix(".txt").read_text().split(maxsplit=2)[2].strip()
        starts, _, labels = read_phn(u.transcript)
        data.append((load_audio(u.audio), words, text, model_of[u.speaker], np.asarray(starts) / 16000, list(labels),
                     [w.strip() for _, _, w in rows]))
    print(f"{len(data)} utterances of {args.corpus}; fold models {args.folds_dir}")
    if args.joined is not None:
        return joined_recordings(data, args.pauses, args.joined)
    pset = get_phone_set("timit61")
    print(f"{'pause':>6s}  {'word edges':>10s}  {'MAE':>8s}  {'within 20 ms':>12s}  {'off > 50 ms':>11s}"
          f"  {'phones: within 20 ms':>20s}  {'mean':>7s}")
    for pause in args.pauses:
        errors, phone_errors, left_out = [], [], 0
        for samples, words, text, model, phone_starts, labels, _ in data:
            k = len(words) // 2
            shifted = [(s + (pause if i >= k else 0.0), e + (pause if i >= k else 0.0)) for i, (s, e) in enumerate(words)]
            y = with_pause(samples, int(round(words[k][0] * 16000)), pause)
            j = int(np.searchsorted(phone_starts, words[k][0] - 1e-9))  # the first phone after the pause
            symbols = labels[:j] + (["pau"] if pause > 0 else []) + labels[j:]
            ref = np.concatenate([phone_starts[:j], [words[k][0]] if pause > 0 else [], phone_starts[j:] + pause])
            got = np.array([iv.start_s for iv in model.align(y, symbols, pset)])
            phone_errors += list(np.abs(got[1:] - ref[1:]) * 1000)
            aligned = [iv for iv in dict(align_words(y, text, model, sr=16000).tiers)["words"] if iv.label]
            if len(aligned) != len(shifted):
                left_out += 1
                continue
            for iv, (s, e) in zip(aligned, shifted):
                errors += [abs(iv.start_s - s) * 1000, abs(iv.end_s - e) * 1000]
        e, pe = np.array(errors), np.array(phone_errors)
        print(f"{pause:5.1f}s  {len(e):10d}  {e.mean():5.1f} ms  {np.mean(e <= 20) * 100:10.1f} %  "
              f"{np.mean(e > 50) * 100:9.1f} %  {np.mean(pe <= 20) * 100:18.2f} %  {pe.mean():5.1f} ms"
              + (f"  ({left_out} left out)" if left_out else ""), flush=True)


if __name__ == "__main__":
    main()
