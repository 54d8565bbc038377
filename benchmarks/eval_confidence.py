#!/usr/bin/env python
"""Per-boundary confidence and transcript-mismatch flags, speaker-disjoint (issue 16).

1. Out-of-fold decodes: every utterance of the corpus is aligned (from its ``.phn`` phones) by
   the fold model whose training left its speaker out (``--folds-dir``, the models
   ``python -m benchmarks.eval_alignment_cv --save-models DIR`` writes; each manifest lists its
   ``test_speakers``). Each boundary's evidence (:func:`aligner.alignment.confidence.boundary_evidence`)
   is recorded with whether the decoded (refined) start lies within 20 ms of the hand label.
   Every utterance is also aligned with the phones of the next utterance of the same speaker
   (cyclically; a different sentence), a transcript that does not match its audio.
2. Rotation over the speaker folds of those models: the confidence model and the utterance
   check are fitted on the decodes of the other folds' speakers and evaluated on the held-out
   fold's; with ``--select`` the settings (L2 penalty, calibration) are chosen per rotation by an
   inner speaker-fold rotation of the training folds only. Figures are pooled over the held-out
   folds: AUROC (within 20 ms vs not), expected calibration error (10 equal-width bins), the share
   of the > 20 ms boundaries among the 10 % least confident, mismatch detection and false flags,
   and the time confidence adds to alignment (MFCC + classifier + DP + refiner).

    python -m benchmarks.eval_confidence --folds-dir runs/folds [--save DIR [--attach MODEL_DIR]]

``--save DIR`` fits both on every out-of-fold decode and writes ``DIR/confidence.npz``,
``DIR/utterance_check.npz`` (plain arrays, ``np.load(allow_pickle=False)``) and ``DIR/confidence.json``;
``--attach MODEL_DIR`` also adds both to that alignment model bundle (the shipped model's were
made so, from the fold models of the 12 shared speakers).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aligner.alignment.confidence import (TOLERANCE_S, BoundaryConfidence, UtteranceCheck, boundary_evidence,
                                          utterance_evidence)
from aligner.errors import AlignmentError
from aligner.features.mfcc import mfcc_features
from aligner.frames import SAMPLE_RATE
from aligner.io.audio import RepairedAudioWarning, load_audio
from aligner.io.corpus import find_utterances
from aligner.io.transcripts import read_phn
from aligner.phonetics import get_phone_set

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "timit-sample"
DEFAULT_FOLDS = Path(__file__).resolve().parents[2] / "runs" / "folds"
#: settings tried by --select: (hidden units (0 = logistic regression), L2 penalty, calibration map)
GRID = [(16, 10.0, "platt"), (16, 30.0, "platt"), (16, 10.0, "isotonic"), (0, 10.0, "platt")]


@dataclass
class Decode:
    """One utterance aligned by its out-of-fold model."""

    name: str
    speaker: str
    fold: int
    evidence: np.ndarray  #: (K-1, N_EVIDENCE)
    correct: np.ndarray  #: (K-1,) bool, within 20 ms (only for the true transcript)
    errors_ms: np.ndarray  #: (K-1,) absolute boundary errors, ms
    frames: np.ndarray = field(repr=False, default=None)
    scores: np.ndarray = field(repr=False, default=None)
    classes: np.ndarray = field(repr=False, default=None)
    y: np.ndarray = field(repr=False, default=None)
    symbols: list = field(repr=False, default=None)
    align_s: float = 0.0  #: MFCC + classifier + DP + refiner, seconds
    evidence_s: float = 0.0  #: boundary evidence, seconds


def fold_models(folds_dir: Path):
    """[(model, test speakers)] of ``folds_dir/fold*``."""
    from aligner.alignment.model import AlignmentModel

    out = []
    for d in sorted(Path(folds_dir).glob("fold*")):
        model = AlignmentModel.load(d)
        out.append((model, list(model.training.get("test_speakers", []))))
    if not out or not all(s for _, s in out):
        sys.exit(f"error: {folds_dir}: no fold models with test_speakers "
                 f"(python -m benchmarks.eval_alignment_cv --save-models {folds_dir})")
    return out


def align_one(model, samples, labels, phone_set, name):
    """(frames, scores, classes, y, starts_s, seconds) of one alignment, timed as model.align is."""
    t0 = time.perf_counter()
    frames = mfcc_features(samples, SAMPLE_RATE)
    scores = model.classifier.scores(frames)
    classes = phone_set.class_indices(labels)
    x = model.make_input(frames, classes, scores, name=name, symbols=labels)
    y = model.align_frames(x)
    starts = model.start_times(x, y, scores, frames, len(samples) / SAMPLE_RATE)
    return frames, scores, classes, y, starts, time.perf_counter() - t0


def build_decodes(data_dir: Path, folds_dir: Path, log=print):
    """Out-of-fold decodes of every utterance with its true transcript and with the next
    utterance's phones (same speaker). Returns (true decodes, mismatched decodes, refused names)."""
    models = fold_models(folds_dir)
    model_of = {s: (f, m) for f, (m, speakers) in enumerate(models) for s in speakers}
    phone_set = get_phone_set("timit61")
    utts = [u for u in find_utterances(data_dir) if u.speaker in model_of]
    with warnings.catch_warnings():  # TIMIT files repaired on loading say so; not this script's concern
        warnings.simplefilter("ignore", RepairedAudioWarning)
        audio = {u.name: load_audio(u.audio) for u in utts}
    phn = {u.name: read_phn(u.transcript) for u in utts}
    # warm-up (numba caches, first-call overheads) outside the timings
    u0 = utts[0]
    f0, m0 = model_of[u0.speaker]
    fr, sc, cl, y, st, _ = align_one(m0, audio[u0.name], phn[u0.name][2], phone_set, u0.name)
    boundary_evidence(m0, fr, sc, cl, y, st, phn[u0.name][2])

    true, wrong, refused = [], [], []
    by_speaker = {}
    for u in utts:
        by_speaker.setdefault(u.speaker, []).append(u)
    for u in utts:
        fold, model = model_of[u.speaker]
        starts_ref, _, labels = phn[u.name]
        frames, scores, classes, y, starts, secs = align_one(model, audio[u.name], labels, phone_set, u.name)
        t0 = time.perf_counter()
        E = boundary_evidence(model, frames, scores, classes, y, starts, labels)
        ev_s = time.perf_counter() - t0
        err = 1000.0 * np.abs(starts[1:] - np.asarray(starts_ref[1:], float) / SAMPLE_RATE)
        true.append(Decode(u.name, u.speaker, fold, E, err <= 1000 * TOLERANCE_S + 1e-6, err, frames, scores,
                           classes, y, list(labels), secs, ev_s))
        # a mismatched transcript: the next utterance of the same speaker
        group = by_speaker[u.speaker]
        other = group[(group.index(u) + 1) % len(group)]
        other_labels = phn[other.name][2]
        if list(other_labels) == list(labels):
            continue
        try:
            frames, scores, classes, y, starts, secs = align_one(model, audio[u.name], other_labels, phone_set,
                                                                 u.name)
        except AlignmentError:
            refused.append(u.name)
            continue
        E = boundary_evidence(model, frames, scores, classes, y, starts, other_labels)
        wrong.append(Decode(u.name, u.speaker, fold, E, np.zeros(len(E), bool), np.full(len(E), np.nan),
                            frames, scores, classes, y, list(other_labels), secs))
    log(f"{len(true)} utterances decoded out of fold ({sum(len(d.correct) for d in true)} boundaries), "
        f"{len(wrong)} with a mismatched transcript, {len(refused)} mismatched ones refused as not fitting")
    return true, wrong, refused, models


# ---------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------


def auroc(correct: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(correct.astype(int), p))


def ece(correct: np.ndarray, p: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over ``bins`` equal-width probability bins."""
    idx = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() / len(p) * abs(p[m].mean() - correct[m].mean())
    return float(total)


def capture(correct: np.ndarray, p: np.ndarray, share: float = 0.10) -> float:
    """Share of the incorrect boundaries among the ``share`` least confident (ties by order)."""
    n = int(np.ceil(share * len(p)))
    low = np.argsort(p, kind="stable")[:n]
    return float((~correct[low]).sum() / max((~correct).sum(), 1))


def boundary_figures(correct, p) -> dict:
    return {"boundaries": int(len(p)), "share_within_20ms": float(correct.mean()), "auroc": auroc(correct, p),
            "ece10": ece(correct, p), "capture_low10": capture(correct, p), "mean_p": float(p.mean())}


# ---------------------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------------------


def _stack(decodes):
    E = np.vstack([d.evidence for d in decodes])
    c = np.concatenate([d.correct for d in decodes])
    g = np.concatenate([[d.speaker] * len(d.correct) for d in decodes])
    return E, c, g


def fit_confidence(decodes, settings) -> BoundaryConfidence:
    E, c, g = _stack(decodes)
    hidden, alpha, calibration = settings
    return BoundaryConfidence(hidden=hidden, alpha=alpha, calibration=calibration).fit(E, c, g)


def select_settings(train, log=None):
    """The settings of :data:`GRID` with the best pooled AUROC - 10 x ECE over an inner rotation
    of the training decodes' folds (the held-out fold never enters)."""
    folds = sorted({d.fold for d in train})
    best = None
    for settings in GRID:
        cs, ps = [], []
        for f in folds:
            conf = fit_confidence([d for d in train if d.fold != f], settings)
            val = [d for d in train if d.fold == f]
            E, c, _ = _stack(val)
            cs.append(c)
            ps.append(conf.predict_proba(E))
        c, p = np.concatenate(cs), np.concatenate(ps)
        fig = boundary_figures(c, p)
        key = fig["auroc"] - 10 * fig["ece10"]
        if log:
            log(f"    inner {settings}: AUROC {fig['auroc']:.4f} ECE {fig['ece10']:.4f} "
                f"capture {fig['capture_low10']:.3f}")
        if best is None or key > best[0]:
            best = (key, settings)
    return best[1]


def utt_evidence(decodes, conf: BoundaryConfidence, models):
    """(n, 4) utterance evidence and the confidence time (s) of each decode."""
    rows, secs = [], []
    for d in decodes:
        model = models[d.fold][0]
        t0 = time.perf_counter()
        p = np.concatenate([[1.0], conf.predict_proba(d.evidence)]) if len(d.evidence) else np.ones(1)
        rows.append(utterance_evidence(model, d.frames, d.scores, d.classes, d.y, p, d.symbols))
        secs.append(time.perf_counter() - t0)
    return np.array(rows), np.array(secs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    ap.add_argument("--folds-dir", type=Path, default=DEFAULT_FOLDS, help="fold models (fold0..3)")
    ap.add_argument("--hidden", type=int, default=16, help="hidden units (0 = logistic regression)")
    ap.add_argument("--alpha", type=float, default=10.0, help="L2 penalty")
    ap.add_argument("--calibration", default="platt", choices=["platt", "isotonic", "none"])
    ap.add_argument("--select", action="store_true", help="choose the settings per rotation among GRID by an "
                    "inner speaker-fold rotation of its training folds")
    ap.add_argument("--save", type=Path, help="fit on every out-of-fold decode and write the arrays here")
    ap.add_argument("--attach", type=Path, default=None,
                    help="with --save: also add the fitted arrays to this alignment model bundle")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print

    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")
    true, wrong, refused, models = build_decodes(args.data, args.folds_dir, log)
    folds = sorted({d.fold for d in true})
    cs, ps, per_fold = [], [], []
    flags_ok, flags_bad, conf_s = [], [], []
    for f in folds:
        train = [d for d in true if d.fold != f]
        test = [d for d in true if d.fold == f]
        if args.select:
            log(f"rotation {f}: choosing settings on folds {[g for g in folds if g != f]}")
            settings = select_settings(train, log)
        else:
            settings = (args.hidden, args.alpha, args.calibration)
        conf = fit_confidence(train, settings)
        E, c, _ = _stack(test)
        p = conf.predict_proba(E)
        cs.append(c)
        ps.append(p)
        fig = boundary_figures(c, p)
        fig.update(fold=f, settings=list(settings))
        per_fold.append(fig)
        log(f"held-out fold {f} ({', '.join(models[f][1])}): settings {settings}: AUROC {fig['auroc']:.4f}, "
            f"ECE {fig['ece10']:.4f}, capture {fig['capture_low10']:.3f}")
        # utterance check: fitted on the training folds' correct and mismatched decodes
        ev_ok_tr, _ = utt_evidence(train, conf, models)
        ev_bad_tr, _ = utt_evidence([d for d in wrong if d.fold != f], conf, models)
        check = UtteranceCheck().fit(ev_ok_tr, ev_bad_tr)
        ev_ok, secs = utt_evidence(test, conf, models)
        ev_bad, _ = utt_evidence([d for d in wrong if d.fold == f], conf, models)
        flags_ok.append(check.flag(ev_ok))
        flags_bad.append(check.flag(ev_bad))
        conf_s.extend(d.evidence_s + s for d, s in zip(test, secs))

    c, p = np.concatenate(cs), np.concatenate(ps)
    pooled = boundary_figures(c, p)
    ok = np.concatenate(flags_ok)
    bad = np.concatenate(flags_bad)
    n_bad_total = len(bad) + len(refused)
    align_s = sum(d.align_s for d in true)
    report = {
        "boundaries": pooled, "per_fold": per_fold,
        "mismatch": {"mismatched": n_bad_total, "refused_as_not_fitting": len(refused),
                     "flagged": int(bad.sum()), "detected_rate": float((bad.sum() + len(refused)) / n_bad_total),
                     "correct": int(len(ok)), "false_flags": int(ok.sum()), "false_flag_rate": float(ok.mean())},
        "time": {"align_s": align_s, "confidence_s": float(sum(conf_s)),
                 "overhead": float(sum(conf_s) / align_s)},
    }
    if args.save is not None:
        settings = select_settings(true) if args.select else (args.hidden, args.alpha, args.calibration)
        conf = fit_confidence(true, settings)
        ev_ok, _ = utt_evidence(true, conf, models)
        ev_bad, _ = utt_evidence(wrong, conf, models)
        check = UtteranceCheck().fit(ev_ok, ev_bad)
        args.save.mkdir(parents=True, exist_ok=True)
        np.savez(args.save / "confidence.npz", **conf.to_arrays())
        np.savez(args.save / "utterance_check.npz", **check.to_arrays())
        (args.save / "confidence.json").write_text(json.dumps(
            {"settings": {"hidden": settings[0], "alpha": settings[1], "calibration": settings[2]},
             "tolerance_s": TOLERANCE_S, "fitted_on": "out-of-fold decodes of "
             f"{len(true)} utterances by {args.folds_dir}", "evaluation": report}, indent=1) + "\n")
        log(f"wrote {args.save}/confidence.npz, utterance_check.npz, confidence.json")
        if args.attach is not None:
            from aligner.io.bundles import ALIGNMENT_KIND, add_to_bundle

            add_to_bundle(args.attach, ALIGNMENT_KIND,
                          {"confidence": conf.to_arrays(), "utterance_check": check.to_arrays()},
                          {"confidence": {"settings": {"hidden": settings[0], "alpha": settings[1],
                                                       "calibration": settings[2]},
                                          "fitted_on": f"out-of-fold decodes of {len(true)} utterances by "
                                                       f"the fold models of {args.folds_dir.name}",
                                          "command": "python -m benchmarks.eval_confidence --folds-dir DIR "
                                                     "--save DIR --attach MODEL_DIR"}})
            log(f"added confidence.npz and utterance_check.npz to the model bundle {args.attach}")
    if args.json:
        print(json.dumps(report))
        return
    m, t = report["mismatch"], report["time"]
    print(f"\nboundaries (pooled over {len(folds)} held-out speaker folds): {pooled['boundaries']}, "
          f"{100 * pooled['share_within_20ms']:.1f} % within 20 ms")
    print(f"  AUROC (within 20 ms vs not)        {pooled['auroc']:.4f}   (target >= 0.85)")
    print(f"  ECE, 10 bins                        {pooled['ece10']:.4f}   (target <= 0.03)")
    print(f"  >20 ms errors in the 10 % least confident  {100 * pooled['capture_low10']:.1f} %  (target >= 45 %)")
    print(f"mismatched transcripts: {m['detected_rate'] * 100:.1f} % detected ({m['flagged']} flagged + "
          f"{m['refused_as_not_fitting']} refused as not fitting, of {m['mismatched']})  (target >= 95 %)")
    print(f"correct transcripts flagged: {m['false_flags']} of {m['correct']} "
          f"({100 * m['false_flag_rate']:.1f} %)  (target <= 2 %)")
    print(f"time: alignment {t['align_s']:.2f} s, confidence {t['confidence_s']:.3f} s: "
          f"+{100 * t['overhead']:.1f} %  (target <= 10 %)")


if __name__ == "__main__":
    main()
