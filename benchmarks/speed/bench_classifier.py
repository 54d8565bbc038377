#!/usr/bin/env python
"""Benchmark of the frame phoneme classifier on the TIMIT sample (speaker-disjoint CV).

4 folds over the sorted list of the 12 speakers, 3 consecutive speakers held out per fold.
Prints, per fold and on average: frame accuracy over the 39 classes, training seconds,
and prediction milliseconds per second of audio (``scores`` on every held-out utterance,
MFCC front end excluded, and separately the front end itself).

As a proxy for what the classifier is for, it also forced-aligns every held-out utterance
with its known phone sequence by a Viterbi pass over the classifier scores alone (each phone
at least one frame, no duration model) and reports the share of phone boundaries within
20 ms, with and without the division by the class priors.

    python -m benchmarks.speed.bench_classifier [--data DIR] [--json] [--n-components 2000] ...

This is a benchmark, not a test; the data is read from ``../shared/data/timit-sample``
next to the repository unless ``--data`` says otherwise and is never copied anywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf
from threadpoolctl import threadpool_limits

from aligner.features.frame_classifier import FrameClassifier
from aligner.features.mfcc import (
    SAMPLE_RATE, boundary_time, mfcc_features, time_to_boundary_frame)
from aligner.phones.sets import CLASSES39, TIMIT61_TO_39

REPO = Path(__file__).resolve().parents[2]

_INDEX = {c: i for i, c in enumerate(CLASSES39)}


def fold39(label: str) -> int:
    return _INDEX[TIMIT61_TO_39[label]]


def load_sample(root: Path, warps: tuple = ()) -> list[dict]:
    """Every utterance: speaker, frames (T, 42), phone classes (K,), start frames (K,),
    start times (K,) in seconds, frame labels (T,), duration in seconds."""
    utts = []
    for spk_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for wav in sorted(spk_dir.glob("*.wav")):
            audio, sr = sf.read(str(wav))
            frames = mfcc_features(audio, sr)
            T = len(frames)
            rows = [ln.split() for ln in wav.with_suffix(".phn").read_text().splitlines() if ln.strip()]
            start_s = np.array([int(r[0]) for r in rows]) / SAMPLE_RATE
            classes = np.array([fold39(r[2]) for r in rows])
            y = np.asarray(time_to_boundary_frame(start_s, T), np.int64)
            y[0] = 0
            for k in range(1, len(y)):  # every phone at least one frame
                y[k] = min(max(y[k], y[k - 1] + 1), T - (len(y) - k))
            labels = np.repeat(classes, np.diff(np.append(y, T)))
            utts.append(dict(speaker=spk_dir.name, name=f"{spk_dir.name}/{wav.stem}", frames=frames,
                             warped=[mfcc_features(audio, sr, warp=w) for w in warps],
                             classes=classes, y=y, start_s=start_s, labels=labels,
                             seconds=len(audio) / sr, audio=audio))
    return utts


def viterbi_align(scores: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Start frames (K,) maximising the summed ``scores[t, classes[k]]`` of a left-to-right
    segmentation of T frames into K phones of at least one frame each."""
    T, K = scores.shape[0], len(classes)
    s = scores[:, classes].astype(np.float64)  # (T, K)
    delta = np.full(K, -np.inf)
    delta[0] = s[0, 0]
    moved = np.zeros((T, K), bool)  # moved[t, k]: phone k starts at frame t
    for t in range(1, T):
        stay = delta
        enter = np.concatenate([[-np.inf], delta[:-1]])
        moved[t] = enter > stay
        delta = np.maximum(stay, enter) + s[t]
    starts = np.zeros(K, np.int64)
    k = K - 1
    for t in range(T - 1, 0, -1):
        if k > 0 and moved[t, k]:
            starts[k] = t
            k -= 1
    return starts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "timit-sample")
    ap.add_argument("--json", action="store_true", help="print one JSON object only")
    ap.add_argument("--folds", type=int, default=4, help="run only the first N of the 4 folds")
    default = FrameClassifier().get_params()  # the benchmark's defaults are the classifier's
    ap.add_argument("--context", type=int, default=default["context"])
    ap.add_argument("--n-components", type=int, default=default["n_components"])
    ap.add_argument("--gamma", type=float, default=default["gamma"])
    ap.add_argument("--C", type=float, default=default["C"])
    ap.add_argument("--max-iter", type=int, default=default["max_iter"])
    ap.add_argument("--kmeans-iter", type=int, default=default["kmeans_iter"])
    ap.add_argument("--smooth", type=int, default=default["smooth"])
    ap.add_argument("--max-train-frames", type=int, default=default["max_train_frames"])
    ap.add_argument("--calibration-fraction", type=float, default=default["calibration_fraction"])
    ap.add_argument("--pca-dims", type=int, default=default["pca_dims"])
    ap.add_argument("--seed", type=int, default=default["seed"])
    ap.add_argument("--vtlp", default="",
                    help="comma-separated warp factors (e.g. 0.9,1.1): add training copies of every "
                         "training utterance with vocal tract length perturbation")
    ap.add_argument("--predict-threads", type=int, default=1,
                    help="BLAS threads while timing prediction (1 = cost per core; the aligner "
                         "runs one file per core)")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        ap.error(f"no TIMIT sample at {args.data} (use --data DIR)")

    log = (lambda *a, **k: None) if args.json else (lambda *a, **k: print(*a, **k, flush=True))
    t0 = time.perf_counter()
    warps = tuple(float(w) for w in args.vtlp.split(",") if w.strip())
    utts = load_sample(args.data, warps)
    load_s = time.perf_counter() - t0
    speakers = sorted({u["speaker"] for u in utts})
    per = len(speakers) // 4
    folds = [speakers[per * i: per * (i + 1)] for i in range(4)][: args.folds]
    params = dict(context=args.context, n_components=args.n_components, gamma=args.gamma, C=args.C,
                  max_iter=args.max_iter, kmeans_iter=args.kmeans_iter, smooth=args.smooth,
                  calibration_fraction=args.calibration_fraction, seed=args.seed,
                  max_train_frames=args.max_train_frames, pca_dims=args.pca_dims,
                  n_classes=len(CLASSES39))
    log(f"VTLP training copies at warps {warps}; " if warps else "", end="")
    log(f"{len(utts)} utterances, {sum(len(u['frames']) for u in utts)} frames, "
        f"{len(speakers)} speakers; features {load_s:.1f} s; params {params}")

    # the MFCC front end's cost, for reference
    with threadpool_limits(args.predict_threads):
        t = time.perf_counter()
        for u in utts[:20]:
            mfcc_features(u["audio"])
    mfcc_ms = (time.perf_counter() - t) * 1000 / sum(u["seconds"] for u in utts[:20])

    results = []
    for f, held in enumerate(folds):
        train = [u for u in utts if u["speaker"] not in held]
        test = [u for u in utts if u["speaker"] in held]
        clf = FrameClassifier(**params).fit(
            [u["frames"] for u in train] + [w for u in train for w in u["warped"]],
            [u["labels"] for u in train] + [u["labels"] for u in train for _ in u["warped"]])
        correct = total = 0
        with threadpool_limits(args.predict_threads):
            for u in test:  # warm-up, then timed
                clf.scores(u["frames"])
            t = time.perf_counter()
            all_scores = [clf.scores(u["frames"]) for u in test]
            pred_s = time.perf_counter() - t
        within = {True: [], False: []}
        for u, sc in zip(test, all_scores):
            pred = clf.predict(u["frames"])
            correct += int((pred == u["labels"]).sum())
            total += len(pred)
            for divided in (True, False):
                s = sc if clf.prior_division == divided else (
                    sc + clf.log_prior if clf.prior_division else sc - clf.log_prior)
                starts = viterbi_align(s, u["classes"])
                err = np.abs(boundary_time(starts[1:]) - u["start_s"][1:])
                within[divided].append(err <= 0.020 + 1e-9)
        audio_s = sum(u["seconds"] for u in test)
        r = dict(fold=f, held_out=held, frame_accuracy=correct / total, train_seconds=clf.train_seconds_,
                 predict_ms_per_audio_second=pred_s * 1000 / audio_s, train_frames=sum(len(u["frames"]) for u in train),
                 test_frames=total, temperature=float(clf.temperature),
                 align_within_20ms_prior_divided=float(np.concatenate(within[True]).mean()),
                 align_within_20ms_posterior=float(np.concatenate(within[False]).mean()))
        results.append(r)
        log(f"fold {f} {held}: frame accuracy {r['frame_accuracy']:.4f}  train {r['train_seconds']:.1f} s  "
            f"predict {r['predict_ms_per_audio_second']:.2f} ms/audio s  "
            f"scores-only Viterbi within 20 ms: prior-divided {r['align_within_20ms_prior_divided']:.3f}, "
            f"posterior {r['align_within_20ms_posterior']:.3f}")

    def mean(key):
        return float(np.mean([r[key] for r in results]))

    summary = dict(params=params, vtlp=list(warps), data=str(args.data), folds=results,
                   mean_frame_accuracy=mean("frame_accuracy"), mean_train_seconds=mean("train_seconds"),
                   mean_predict_ms_per_audio_second=mean("predict_ms_per_audio_second"),
                   mfcc_ms_per_audio_second=mfcc_ms,
                   mean_align_within_20ms_prior_divided=mean("align_within_20ms_prior_divided"),
                   mean_align_within_20ms_posterior=mean("align_within_20ms_posterior"))
    if args.json:
        print(json.dumps(summary))
    else:
        log(f"mean frame accuracy {summary['mean_frame_accuracy']:.4f}  "
            f"train {summary['mean_train_seconds']:.1f} s  "
            f"predict {summary['mean_predict_ms_per_audio_second']:.2f} ms/audio s  "
            f"(MFCC front end {mfcc_ms:.2f} ms/audio s)  "
            f"scores-only Viterbi within 20 ms: prior-divided "
            f"{summary['mean_align_within_20ms_prior_divided']:.3f}, posterior "
            f"{summary['mean_align_within_20ms_posterior']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
