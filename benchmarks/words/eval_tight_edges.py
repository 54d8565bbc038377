#!/usr/bin/env python
"""Tightly cut recordings: how early or late the first word starts and the last word ends.

Each TIMIT utterance is cut so that only ``N`` ms of its recording remain before the first
word's reference start (``.wrd``) and after the last word's reference end, the reference word
times shifted by the cut; the untouched recording is the ``orig`` condition. Every copy is
aligned from its ``.txt`` words (``aligner.api.align_words``, as ``aligner align FILE.wav
FILE.txt``) and scored against the shifted ``.wrd`` words with
:mod:`aligner.alignment.evaluation.words` (label-paired word edges, boundary F1 at 20 ms).

Printed per condition (times in ms): the first word's start error (hypothesis minus reference:
mean, mean of the absolute value, median absolute, the % within 20 ms, the worst), the last
word's end error (the same), and the word-edge MAE and F1@20 of all words.

The shipped English model was trained on these 12 speakers (in-sample figures); ``--folds-dir
DIR`` aligns each utterance with the fold model that never heard its speaker instead (the
models of ``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``)::

    python -m benchmarks.words.eval_tight_edges [--margins-ms 0 5 12 30] [--folds-dir DIR]
        [--limit N] [--json out.json]

A cut inside the recording's first (last) sample leaves what there is (TIMIT's edge silences
last well over 30 ms, so every margin here is exact).

``prevoiced``: the utterances whose first reference phone is a voiced stop (``b d g``) voiced
more than :data:`PREVOICING_MS` before its release, cut :data:`PREVOICED_MARGIN_MS` before the
voicing starts (the end kept whole). TIMIT's annotators leave an utterance-initial stop's
closure and its prevoicing in ``h#``, so the word starts at the release. The voicing onset is
where the 60-400 Hz band's energy (20 ms windows, 5 ms steps) last rises more than 15 dB above
the recording's first 50 ms before the release.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from aligner.alignment.evaluation.words import score_word_alignments
from aligner.io.audio import SAMPLE_RATE
from aligner.io.textgrids import Interval
from benchmarks.words.bench_words import DEFAULT_DATA, _fold_models, audio_int16, find_utterances, speaker_of_utterance

#: the edge margins (ms) measured by default
DEFAULT_MARGINS_MS = (0, 5, 12, 30)
#: the tolerance (ms) of the "first word within" figure (the issue's target)
WITHIN_MS = 20.0
#: the least voicing (ms) before an utterance-initial voiced stop's release that counts as prevoicing
PREVOICING_MS = 20.0
#: recording kept before the prevoicing (ms) in the ``prevoiced`` condition
PREVOICED_MARGIN_MS = 12.0


def voicing_onset_s(pcm: np.ndarray, release_s: float) -> float:
    """Where the voicing before ``release_s`` starts (seconds; module docstring)."""
    from scipy.signal import butter, sosfilt

    band = sosfilt(butter(4, [60, 400], btype="band", fs=SAMPLE_RATE, output="sos"), pcm.astype(np.float64))
    hop, win = SAMPLE_RATE // 200, SAMPLE_RATE // 50
    stop = int(release_s * SAMPLE_RATE)
    level = np.array([10 * np.log10(np.mean(band[i:i + win] ** 2) + 1e-12) for i in range(0, max(stop - hop, 1), hop)])
    floor = np.median(level[:10])
    k = len(level) - 1
    while k >= 0 and level[k] > floor + 15.0:
        k -= 1
    return (k + 1) * hop / SAMPLE_RATE


def prevoiced_cut(utt, pcm: np.ndarray):
    """The first sample of the ``prevoiced`` copy of ``utt``, or None if it has no prevoicing."""
    from aligner.io.transcripts import read_phn

    starts, _, labels = read_phn(utt.phn)
    if len(labels) < 2 or labels[0] != "h#" or labels[1] not in ("b", "d", "g"):
        return None
    release_s = starts[1] / SAMPLE_RATE
    onset_s = voicing_onset_s(pcm, release_s)
    if release_s - onset_s < PREVOICING_MS / 1000.0:
        return None
    return max(0, int(round((onset_s - PREVOICED_MARGIN_MS / 1000.0) * SAMPLE_RATE)))


def cut_bounds(ref_words: list, n_samples: int, margin_ms: float | None) -> tuple:
    """``(first, end)`` sample indices of the copy that keeps ``margin_ms`` of the recording
    before the first reference word and after the last (None: the whole recording)."""
    if margin_ms is None:
        return 0, n_samples
    margin = margin_ms / 1000.0
    first = max(0, int(round((ref_words[0].start_s - margin) * SAMPLE_RATE)))
    end = min(n_samples, int(round((ref_words[-1].end_s + margin) * SAMPLE_RATE)))
    return first, end


def shifted(words: list, offset_s: float, duration_s: float) -> list:
    """``words`` moved ``offset_s`` earlier, clipped to ``[0, duration_s]``."""
    return [Interval(min(max(w.start_s - offset_s, 0.0), duration_s), min(max(w.end_s - offset_s, 0.0), duration_s),
                     w.label) for w in words]


def spoken_words(wrd: Path) -> list:
    """Every word of a TIMIT ``.wrd`` file as Intervals in seconds, the English word "silence"
    among them (:func:`~aligner.alignment.evaluation.words.read_wrd` drops it as a silence label,
    which would cut a recording ending in it before its last word; the scoring drops it from
    both sides alike)."""
    from aligner.io.transcripts import read_sample_intervals

    starts, ends, labels = read_sample_intervals(wrd, "word alignment (.wrd)", "word")
    return [Interval(a / SAMPLE_RATE, b / SAMPLE_RATE, w) for a, b, w in zip(starts.tolist(), ends.tolist(), labels)]


def edge_figures(errors_ms: np.ndarray) -> dict:
    """Mean, mean absolute, median absolute, % within :data:`WITHIN_MS` and worst absolute (ms)."""
    a = np.abs(errors_ms)
    return {"mean": float(errors_ms.mean()), "mae": float(a.mean()), "median_abs": float(np.median(a)),
            "within": float(100.0 * np.mean(a <= WITHIN_MS + 1e-6)), "worst": float(a.max())}


def run_condition(utterances: list, model_of, margin_ms, align) -> dict:
    """Align every utterance's copy with ``margin_ms`` (None: untouched; ``"prevoiced"``: the
    prevoiced utterances' copies, module docstring) and score it; None if no copy was aligned."""
    pairs, first_err, last_err, failed, names = [], [], [], [], []
    for utt in utterances:
        pcm = audio_int16(utt.audio)
        ref = spoken_words(utt.wrd)
        if margin_ms == "prevoiced":
            a, b = prevoiced_cut(utt, pcm), len(pcm)
            if a is None:
                continue
            names.append(utt.name)
        else:
            a, b = cut_bounds(ref, len(pcm), margin_ms)
        samples = pcm[a:b].astype(np.float32) / 32768.0
        ref = shifted(ref, a / SAMPLE_RATE, (b - a) / SAMPLE_RATE)
        try:
            hyp = align(samples, utt, model_of(utt))
        except Exception as exc:  # noqa: BLE001 - a failure is a result
            print(f"{utt.name} ({margin_ms} ms): failed: {' '.join(str(exc).split())}", file=sys.stderr)
            hyp = []
        pairs.append((ref, hyp))
        if hyp:
            first_err.append(1000.0 * (hyp[0].start_s - ref[0].start_s))
            last_err.append(1000.0 * (hyp[-1].end_s - ref[-1].end_s))
        else:
            failed.append(utt.name)
    if not first_err:
        return None  # no copy (no prevoiced utterance), or every one failed
    scores = score_word_alignments(pairs)
    condition = "orig" if margin_ms is None else margin_ms if isinstance(margin_ms, str) else f"{margin_ms:g} ms"
    return {"condition": condition, "utterances": len(pairs), "names": names,
            "failed": failed, "first_start": edge_figures(np.array(first_err)),
            "last_end": edge_figures(np.array(last_err)), "word_mae": scores.mean_ms, "word_f1": scores.f1,
            "within_50": scores.within_ms[50]}


def align_from_txt(samples: np.ndarray, utt, model) -> list:
    """The words tier of ``aligner.api.align_words`` from the utterance's ``.txt`` file."""
    from aligner import api

    result = api.align_words(samples, utt.txt, model, sr=SAMPLE_RATE, name=utt.name)
    return dict(result.tiers)["words"]


def format_rows(rows: list) -> str:
    head = (f"{'condition':<9} {'utts':>4} | {'first start: mean':>17} {'|err|':>6} {'med':>5} {'<=20':>5} "
            f"{'worst':>6} | "
            f"{'last end: mean':>14} {'|err|':>6} {'med':>5} {'<=20':>5} {'worst':>6} | "
            f"{'word MAE':>8} {'<=50':>5} {'F1@20':>5}")
    lines = [head, "-" * len(head)]
    for r in rows:
        f, e = r["first_start"], r["last_end"]
        lines.append(f"{r['condition']:<9} {r['utterances']:>4} | {f['mean']:17.1f} {f['mae']:6.1f} "
                     f"{f['median_abs']:5.1f} "
                     f"{f['within']:5.1f} {f['worst']:6.1f} | {e['mean']:14.1f} {e['mae']:6.1f} "
                     f"{e['median_abs']:5.1f} {e['within']:5.1f} {e['worst']:6.1f} | {r['word_mae']:8.1f} "
                     f"{r['within_50']:5.1f} {r['word_f1']:5.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="TIMIT-layout folder of <utt>.wav/.wrd/.phn/.txt (default: %(default)s)")
    ap.add_argument("--margins-ms", type=float, nargs="+", default=list(DEFAULT_MARGINS_MS),
                    help="recording kept before the first and after the last word, ms (default: %(default)s)")
    ap.add_argument("--no-orig", action="store_true", help="leave out the untouched recordings")
    ap.add_argument("--folds-dir", type=Path, default=None,
                    help="speaker-fold models (each utterance aligned by the one that never heard its speaker); "
                         "default: the shipped model, which heard every speaker of the sample")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N utterances")
    ap.add_argument("--limit", type=int, default=None, help="only the first N utterances (after --skip)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)

    utterances = find_utterances(args.data)
    if not utterances:
        print(f"{args.data}: no <utt>.wav with .wrd, .phn and .txt beside it", file=sys.stderr)
        return 1
    utterances = utterances[args.skip:]
    utterances = utterances[: args.limit] if args.limit else utterances
    from aligner import api

    api.load_dictionary()
    if args.folds_dir is None:
        model = api.load_model()
        model_of, which = (lambda utt: model), "the shipped model (it heard these speakers: in-sample)"
    else:
        by_speaker = _fold_models(args.folds_dir)
        model_of, which = (lambda utt: by_speaker[speaker_of_utterance(utt)]), f"fold models of {args.folds_dir}"
    conditions = ([] if args.no_orig else [None]) + list(args.margins_ms) + ["prevoiced"]
    rows = [r for r in (run_condition(utterances, model_of, c, align_from_txt) for c in conditions) if r is not None]
    print(f"{len(utterances)} utterances from {args.data}, words from .txt, {which}")
    print("condition: N ms of recording left before the first and after the last word (orig: untouched); "
          "errors hypothesis - reference in ms; <=20: % within 20 ms; word MAE over both edges of every "
          "paired word; <=50: % of edges within 50 ms; F1@20 in %")
    print(format_rows(rows))
    names = [n for r in rows if r["condition"] == "prevoiced" for n in r["names"]]
    print(f"prevoiced: {PREVOICED_MARGIN_MS:g} ms before the voicing of an utterance-initial voiced stop voiced "
          f"over {PREVOICING_MS:g} ms before its release: {', '.join(names) or 'none'}")
    for r in rows:
        if r["failed"]:
            print(f"{r['condition']}: {len(r['failed'])} utterance(s) returned no words: {', '.join(r['failed'])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
