#!/usr/bin/env python
"""Per-boundary confidence and transcript-mismatch flags, speaker-disjoint (issue 16).

1. Out-of-fold decodes: every utterance of the corpus is aligned (from its ``.phn`` phones) by
   the fold model whose training left its speaker out (``--folds-dir``, the models
   ``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR`` writes; each manifest lists its
   ``test_speakers``). Each boundary's evidence (:func:`aligner.alignment.review.evidence.boundary_evidence`)
   is recorded with whether the decoded (refined) start lies within 20 ms of the hand label.
   Every utterance is also aligned with three transcripts that do not match its audio: the phones
   of the next utterance of the same speaker (cyclically; a different sentence, "swapped"), its own
   phones without the last 30 % ("truncated"), and its own phones with those of its longest word
   replaced by the next utterance's longest word's ("partly_wrong").
2. Rotation over the speaker folds of those models: the confidence model and the utterance
   check are fitted on the decodes of the other folds' speakers and evaluated on the held-out
   fold's; with ``--select`` the settings (L2 penalty, calibration, error thresholds of the
   averaged networks) are chosen per rotation by an inner speaker-fold rotation of the training
   folds only. The utterance check's flag threshold is a rule fixed in advance: the 1 % lower tail
   of a normal distribution fitted to the training folds' correct utterances' out-of-fold (by
   speaker) match logits (:class:`~aligner.alignment.review.confidence.UtteranceCheck`); all mismatch
   kinds of the training folds train it, each kind is reported on the held-out folds. Figures are pooled over the held-out
   folds: AUROC (within 20 ms vs not), expected calibration error (10 equal-width bins), the share
   of the > 20 ms boundaries among the 10 % least confident, mismatch detection and false flags,
   and the time confidence adds to alignment (MFCC + classifier + DP + refiner).

    python -m benchmarks.alignment.eval_confidence --folds-dir runs/folds [--words [threshold|report]] [--save DIR [--attach MODEL_DIR]]

``--words`` also aligns every utterance from its ``.txt`` words (dictionary pronunciations,
as ``aligner align`` does with a words transcript), out of fold: correct transcripts whose
false flags are reported apart, and which train the utterance check with the phone ones
(``--words threshold``: and they alone set its threshold; ``--words report``: reported only);
and from the next utterance's ``.txt`` of the same speaker, mismatched word transcripts whose
detection is reported (never fitted on).

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

from aligner.alignment.review.confidence import (TOLERANCE_S, UTTERANCE_EVIDENCE_NAMES, BoundaryConfidence,
                                                 UtteranceCheck, utterance_evidence)
from aligner.alignment.review.evidence import boundary_evidence
from aligner.errors import AlignmentError
from aligner.frames import SAMPLE_RATE
from aligner.io.audio import RepairedAudioWarning, load_audio
from aligner.io.corpus import find_utterances
from aligner.io.transcripts import read_phn
from aligner.phones.sets import get_phone_set
from benchmarks.alignment.folds import fold_models

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"
DEFAULT_FOLDS = Path(__file__).resolve().parents[3] / "runs" / "folds"
#: error thresholds (ms) of the averaged models of the "multi-threshold" settings
MULTI = (10.0, 20.0, 30.0, 50.0)
#: thresholds of the averaged models that weigh the gross errors more (none below the tolerance)
COARSE = (20.0, 30.0, 50.0, 80.0)
#: settings tried by --select: (hidden units (0 = logistic regression), L2 penalty, calibration map,
#: error thresholds of the averaged models)
GRID = [(16, 10.0, "platt", (20.0,)), (16, 10.0, "platt", MULTI), (16, 10.0, "isotonic", MULTI),
        (16, 30.0, "platt", MULTI), (16, 3.0, "platt", (20.0,)), (16, 3.0, "platt", COARSE)]


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
    starts: np.ndarray = field(repr=False, default=None)  #: (K,) reported (refined) start times, s
    kind: str = "true"  #: "true" or the kind of mismatched transcript (MISMATCH_KINDS)


def align_one(model, samples, labels, phone_set, name):
    """(decoder, frames, scores, classes, y, starts_s, seconds) of one alignment, timed as model.align
    is; the decoder is ``model``, or its condition expert where its gates send the recording."""
    t0 = time.perf_counter()
    model, scores, frames = model.scored(None, samples)
    classes = phone_set.class_indices(labels)
    x = model.make_input(frames, classes, scores, name=name, symbols=labels)
    y = model.align_frames(x)
    starts = model.start_times(x, y, scores, frames, len(samples) / SAMPLE_RATE)
    return model, frames, scores, classes, y, starts, time.perf_counter() - t0


def truncated_transcript(labels: list) -> list:
    """The transcript with its last 30 % of phones dropped (at least one)."""
    keep = max(1, min(len(labels) - 1, int(np.ceil(0.7 * len(labels)))))
    return list(labels[:keep])


def partly_wrong_transcript(labels: list, phn_starts, phn_ends, wrd, other_labels: list, other_phn_starts,
                            other_phn_ends, other_wrd) -> list | None:
    """The transcript with the phones of its longest word (most phones; the earliest on ties)
    replaced by those of the longest word of another utterance whose phones differ (None if
    either has no word)."""

    def words(starts, ends, w):
        out = []
        for ws, we, _ in zip(*w):
            idx = [i for i in range(len(starts)) if starts[i] >= ws and ends[i] <= we]
            if idx:
                out.append((idx[0], idx[-1] + 1))
        return out

    mine = words(phn_starts, phn_ends, wrd)
    theirs = words(other_phn_starts, other_phn_ends, other_wrd)
    if not mine or not theirs:
        return None
    a, b = max(mine, key=lambda ab: (ab[1] - ab[0], -ab[0]))
    for c, d in sorted(theirs, key=lambda cd: (-(cd[1] - cd[0]), cd[0])):
        if list(other_labels[c:d]) != list(labels[a:b]):
            return list(labels[:a]) + list(other_labels[c:d]) + list(labels[b:])
    return None


#: kinds of mismatched transcripts: another sentence of the same speaker, the last 30 % of the
#: phones dropped, one word's phones replaced by another word's
MISMATCH_KINDS = ("swapped", "truncated", "partly_wrong")


def build_decodes(data_dir: Path, folds_dir: Path, log=print, kinds=MISMATCH_KINDS, condition: str = "clean",
                  augment=None, expert_folds: Path | None = None, band_folds: Path | None = None,
                  dereverb: float | None = None, denoise: float | None = None):
    """Out-of-fold decodes of every utterance with its true transcript and with mismatched ones
    (:data:`MISMATCH_KINDS`: the next utterance's phones (same speaker), the last 30 % dropped,
    the longest word's phones replaced by the next utterance's longest word's). Returns (true
    decodes, {kind: mismatched decodes}, {kind: names refused as not fitting}, fold models).
    ``condition``: the recordings degraded first as ``benchmarks.alignment.eval_degraded`` does (seeded by
    the utterance's index); ``augment``: instead, one copy of each recording degraded as that
    :class:`~aligner.features.augment.AugmentationRecipe` makes training copies (its babble left
    out: it would borrow the held-out speakers' voices). ``expert_folds``: fold models trained with
    ``--augment`` that become the fold models' condition experts, gated as
    ``benchmarks.alignment.eval_degraded --expert-folds`` does (gates from the other folds' clean recordings);
    ``band_folds``: phone-line fold models for the recordings below the band gate, as
    ``benchmarks.alignment.eval_degraded --band-folds``; ``dereverb``: the experts dereverberate, as
    ``benchmarks.alignment.eval_degraded --dereverb``; ``denoise``: they suppress noise, as
    ``benchmarks.alignment.eval_degraded --denoise``."""
    from aligner.io.transcripts import read_sample_intervals

    models = fold_models(folds_dir)
    model_of = {s: (f, m) for f, (m, speakers) in enumerate(models) for s in speakers}
    phone_set = get_phone_set("timit61")
    utts = [u for u in find_utterances(data_dir) if u.speaker in model_of]
    with warnings.catch_warnings():  # TIMIT files repaired on loading say so; not this script's concern
        warnings.simplefilter("ignore", RepairedAudioWarning)
        audio = {u.name: load_audio(u.audio) for u in utts}
    if expert_folds is not None:
        from benchmarks.alignment.eval_degraded import attach_fold_experts
        attach_fold_experts(models, fold_models(expert_folds), utts, audio, None, log,
                            band_experts=None if band_folds is None else fold_models(band_folds),
                            dereverb=dereverb, denoise=denoise)
    if condition != "clean":
        from benchmarks.alignment.eval_degraded import degrade
        audio = {u.name: degrade(audio[u.name], condition, seed=i) for i, u in enumerate(utts)}
    if augment is not None:
        from dataclasses import replace as _replace

        from aligner.features.augment import Augmenter
        kinds_left = tuple(k for k in augment.noise_kinds if k != "babble") or ("pink",)
        augmenter = Augmenter(_replace(augment, copies=1, noise_kinds=kinds_left))
        audio = {u.name: augmenter.copy(np.asarray(audio[u.name], np.float64), u.name, u.speaker, 0) for u in utts}
    phn = {u.name: read_phn(u.transcript) for u in utts}
    wrd = {}
    for u in utts:
        path = u.transcript.with_suffix(".wrd")
        wrd[u.name] = read_sample_intervals(path, "word alignment (.wrd)", "word") if path.is_file() else None
    # warm-up (numba caches, first-call overheads) outside the timings
    u0 = utts[0]
    f0, m0 = model_of[u0.speaker]
    d0, fr, sc, cl, y, st, _ = align_one(m0, audio[u0.name], phn[u0.name][2], phone_set, u0.name)
    boundary_evidence(d0, fr, sc, cl, y, st, phn[u0.name][2])

    true, wrong, refused = [], {k: [] for k in kinds}, {k: [] for k in kinds}
    by_speaker = {}
    for u in utts:
        by_speaker.setdefault(u.speaker, []).append(u)
    for u in utts:
        fold, model = model_of[u.speaker]
        starts_ref, ends_ref, labels = phn[u.name]
        decoder, frames, scores, classes, y, starts, secs = align_one(model, audio[u.name], labels, phone_set,
                                                                      u.name)
        t0 = time.perf_counter()
        E = boundary_evidence(decoder, frames, scores, classes, y, starts, labels)
        ev_s = time.perf_counter() - t0
        err = 1000.0 * np.abs(starts[1:] - np.asarray(starts_ref[1:], float) / SAMPLE_RATE)
        true.append(Decode(u.name, u.speaker, fold, E, err <= 1000 * TOLERANCE_S + 1e-6, err, frames, scores,
                           classes, y, list(labels), secs, ev_s, starts))
        group = by_speaker[u.speaker]
        other = group[(group.index(u) + 1) % len(group)]
        o_starts, o_ends, o_labels = phn[other.name]
        for kind in kinds:
            if kind == "swapped":
                bad = list(o_labels)
            elif kind == "truncated":
                bad = truncated_transcript(labels)
            else:
                bad = None
                if wrd[u.name] is not None and wrd[other.name] is not None:
                    bad = partly_wrong_transcript(labels, starts_ref, ends_ref, wrd[u.name], o_labels, o_starts,
                                                  o_ends, wrd[other.name])
            if bad is None or list(bad) == list(labels):
                continue
            try:
                decoder, frames, scores, classes, y, starts, secs = align_one(model, audio[u.name], bad,
                                                                              phone_set, u.name)
            except AlignmentError:
                refused[kind].append(u.name)
                continue
            E = boundary_evidence(decoder, frames, scores, classes, y, starts, bad)
            wrong[kind].append(Decode(u.name, u.speaker, fold, E, np.zeros(len(E), bool),
                                      np.full(len(E), np.nan), frames, scores, classes, y, list(bad), secs, 0.0,
                                      starts, kind))
    log(f"{len(true)} utterances decoded out of fold ({sum(len(d.correct) for d in true)} boundaries); "
        "mismatched transcripts: " + ", ".join(f"{k} {len(wrong[k])} (+{len(refused[k])} refused as not fitting)"
                                               for k in kinds))
    return true, wrong, refused, models


def word_decodes(data_dir: Path, models, log=print) -> tuple[list, list]:
    """Out-of-fold decodes of every utterance aligned from its ``.txt`` words, as ``aligner align``
    aligns words (dictionary pronunciations, the pronunciation graph, the fold model's gates
    and experts as ``build_decodes`` attached them): correct transcripts whose phones are the
    dictionary's, not the annotator's; and the same from the next utterance's ``.txt`` of the
    same speaker (kind ``words_swapped``, mismatched; refused ones left out). Each decode is
    captured where the words path reviews it (:meth:`~aligner.alignment.model.AlignmentModel.review`);
    its boundaries have no reference, so only the utterance check uses them.
    Returns ``(correct, swapped, names of the swapped ones refused as not fitting)``."""
    from aligner.alignment import pipeline
    from aligner.alignment.model import AlignmentModel

    model_of = {s: (f, m) for f, (m, speakers) in enumerate(models) for s in speakers}
    utts = [u for u in find_utterances(data_dir) if u.speaker in model_of
            and u.transcript.with_suffix(".txt").is_file()]
    captured = []

    def capture(decoder, frames, scores, classes, symbols, y, starts_s):
        captured.append((decoder, frames, scores, np.asarray(classes), list(symbols), np.asarray(y),
                         np.asarray(starts_s, np.float64)))
        return None, None

    by_speaker: dict = {}
    for u in utts:
        by_speaker.setdefault(u.speaker, []).append(u)
    out, swapped, refused_swapped = [], [], []
    original = AlignmentModel.review
    AlignmentModel.review = capture
    try:
        for u in utts:
            fold, model = model_of[u.speaker]
            group = by_speaker[u.speaker]
            other = group[(group.index(u) + 1) % len(group)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RepairedAudioWarning)
                samples = load_audio(u.audio)
            for text, kind, into in ((u.transcript, "words", out), (other.transcript, "words_swapped", swapped)):
                if kind == "words_swapped" and other is u:
                    continue
                captured.clear()
                t0 = time.perf_counter()
                try:
                    pipeline.align_words(samples, text.with_suffix(".txt"), model=model, sr=SAMPLE_RATE,
                                         name=u.name)
                except AlignmentError:
                    if kind == "words_swapped":  # refused as not fitting the audio: detected
                        refused_swapped.append(u.name)
                    continue
                secs = time.perf_counter() - t0
                if len(captured) != 1:  # a long recording reviewed in chunks: not in this corpus
                    continue
                decoder, frames, scores, classes, symbols, y, starts = captured[0]
                E = boundary_evidence(decoder, frames, scores, classes, y, starts, symbols)
                into.append(Decode(u.name, u.speaker, fold, E, np.zeros(len(E), bool), np.full(len(E), np.nan),
                                   frames, scores, classes, y, symbols, secs, 0.0, starts, kind))
    finally:
        AlignmentModel.review = original
    log(f"{len(out)} utterances aligned out of fold from their .txt words, {len(swapped)} from the next "
        f"utterance's (swapped; {len(refused_swapped)} more refused as not fitting)")
    return out, swapped, refused_swapped


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
    hidden, alpha, calibration, thresholds = settings
    errors = np.concatenate([d.errors_ms for d in decodes])
    return BoundaryConfidence(hidden=hidden, alpha=alpha, calibration=calibration,
                              thresholds_ms=thresholds).fit(E, c, g, errors_ms=errors)


def select_settings(train, log=None):
    """The settings of :data:`GRID` with the best pooled AUROC + capture - 10 x ECE over an inner
    rotation of the training decodes' folds (the held-out fold never enters)."""
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
        key = fig["auroc"] + fig["capture_low10"] - 10 * fig["ece10"]
        if log:
            log(f"    inner {settings}: AUROC {fig['auroc']:.4f} ECE {fig['ece10']:.4f} "
                f"capture {fig['capture_low10']:.3f}")
        if best is None or key > best[0]:
            best = (key, settings)
    return best[1]


def utt_evidence(decodes, conf: BoundaryConfidence, models):
    """(n, 7) utterance evidence and the confidence time (s) of each decode."""
    rows, secs = [], []
    for d in decodes:
        model = models[d.fold][0]
        t0 = time.perf_counter()
        p = np.concatenate([[1.0], conf.predict_proba(d.evidence)]) if len(d.evidence) else np.ones(1)
        rows.append(utterance_evidence(model, d.frames, d.scores, d.classes, d.y, p, d.symbols))
        secs.append(time.perf_counter() - t0)
    return np.array(rows), np.array(secs)


def fit_check(ok_decodes, bad_decodes, conf, models, threshold_kind: str | None = None) -> UtteranceCheck:
    """The utterance check fitted on these correct and mismatched decodes (its threshold from their
    out-of-fold logits by speaker groups, of the correct decodes of ``threshold_kind`` only when
    given, e.g. ``"words"``; nothing else enters)."""
    ev_ok, _ = utt_evidence(ok_decodes, conf, models)
    ev_bad, _ = utt_evidence(bad_decodes, conf, models)
    mask = None if threshold_kind is None else [d.kind == threshold_kind for d in ok_decodes]
    return UtteranceCheck().fit(ev_ok, ev_bad, [d.speaker for d in ok_decodes], [d.speaker for d in bad_decodes],
                                threshold_from=mask)


def attach_record(args, n_utterances: int, settings: tuple) -> dict:
    """What the bundle records of a ``--save --attach`` run: ``fitted_on`` (the decodes, fold
    models, experts, front ends and word transcripts it was fitted on) and ``command`` (the
    options that reproduce it, directories as DIR)."""
    front = [words for given, words in ((args.dereverb, "rooms dereverberated"), (args.denoise, "noise suppressed"))
             if given is not None]
    fitted_on = (f"out-of-fold decodes of {n_utterances} utterances by the fold models of {args.folds_dir.name}"
                 + (f" with the condition experts of {args.expert_folds.name}" if args.expert_folds is not None else "")
                 + (f" and {args.band_folds.name}" if args.band_folds is not None else "")
                 + (f" ({', '.join(front)})" if front else ""))
    if args.words in ("fit", "threshold"):
        fitted_on += ", the check also on the utterances aligned from their .txt words"
        if args.words == "threshold":
            fitted_on += ", which alone set its threshold"
    options = ["--folds-dir DIR"]
    options += [flag for flag, given in (("--expert-folds DIR", args.expert_folds), ("--band-folds DIR", args.band_folds),
                                         ("--dereverb", args.dereverb), ("--denoise", args.denoise)) if given is not None]
    if args.words in ("fit", "threshold"):
        options.append(f"--words {args.words}")
    if args.select:
        options.append("--select")
    else:
        options.append(f"--hidden {settings[0]} --alpha {settings[1]:g} --calibration {settings[2]} --thresholds "
                       + ",".join(f"{t:g}" for t in settings[3]))
    options.append("--save DIR --attach MODEL_DIR")
    return {"fitted_on": fitted_on, "command": "python -m benchmarks.alignment.eval_confidence " + " ".join(options)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    ap.add_argument("--folds-dir", type=Path, default=DEFAULT_FOLDS, help="fold models (fold0..3)")
    ap.add_argument("--hidden", type=int, default=16, help="hidden units (0 = logistic regression)")
    ap.add_argument("--alpha", type=float, default=10.0, help="L2 penalty")
    ap.add_argument("--calibration", default="platt", choices=["platt", "isotonic", "none"])
    ap.add_argument("--thresholds", default="20", help="comma-separated error thresholds (ms) of the averaged "
                    "models, e.g. 10,20,30,50 (default: 20, the tolerance only)")
    ap.add_argument("--select", action="store_true", help="choose the settings per rotation among GRID by an "
                    "inner speaker-fold rotation of its training folds")
    ap.add_argument("--save", type=Path, help="fit on every out-of-fold decode and write the arrays here")
    ap.add_argument("--attach", type=Path, default=None,
                    help="with --save: also add the fitted arrays to this alignment model bundle")
    ap.add_argument("--test-condition", default="clean", help="fit on clean decodes as always, but evaluate "
                    "the held-out folds on recordings degraded as benchmarks.alignment.eval_degraded's condition NAME")
    ap.add_argument("--train-augment", type=Path, help="also fit the confidence model and the check on one "
                    "degraded copy of every training-fold recording, made as this augmentation recipe (JSON) says")
    ap.add_argument("--band-folds", type=Path, help="phone-line fold models for the recordings below the band "
                    "gate (with --expert-folds), as benchmarks.alignment.eval_degraded --band-folds")
    ap.add_argument("--expert-folds", type=Path, help="fold models trained with --augment: each fold model's "
                    "condition expert, gated as benchmarks.alignment.eval_degraded --expert-folds does")
    from benchmarks.alignment.eval_degraded import add_front_end_arguments
    add_front_end_arguments(ap, note="with --expert-folds: ")
    ap.add_argument("--words", nargs="?", const="fit", default=None, choices=["fit", "threshold", "report"],
                    help="also align every utterance from its .txt words (dictionary pronunciations): correct "
                    "transcripts whose false flags are reported apart and that (fit, the default) also train the "
                    "utterance check with the phone ones, (threshold) also set its threshold alone, or (report) "
                    "do not enter it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print

    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")
    true, wrong, refused, models = build_decodes(args.data, args.folds_dir, log, expert_folds=args.expert_folds,
                                                 band_folds=args.band_folds, dereverb=args.dereverb,
                                                 denoise=args.denoise)
    if args.test_condition != "clean":
        if args.save is not None:
            sys.exit("error: --save fits on clean decodes; use it without --test-condition")
        log(f"held-out folds evaluated on {args.test_condition} recordings")
        true_test, wrong_test, refused, _ = build_decodes(args.data, args.folds_dir, log, condition=args.test_condition,
                                                        expert_folds=args.expert_folds, band_folds=args.band_folds,
                                                        dereverb=args.dereverb, denoise=args.denoise)
    else:
        true_test, wrong_test = true, wrong
    if args.train_augment is not None:
        from aligner.features.augment import AugmentationRecipe
        recipe = AugmentationRecipe.from_json_file(args.train_augment)
        log(f"training folds also decoded on copies degraded as {args.train_augment}")
        true_aug, wrong_aug, _, _ = build_decodes(args.data, args.folds_dir, log, augment=recipe,
                                                 expert_folds=args.expert_folds, band_folds=args.band_folds,
                                                        dereverb=args.dereverb, denoise=args.denoise)
        true_fit = true + true_aug
        wrong = {k: wrong[k] + wrong_aug[k] for k in wrong}
    else:
        true_fit = true
    words_test, words_swapped, words_refused = word_decodes(args.data, models, log) if args.words else ([], [], [])
    words_ok = words_test if args.words in ("fit", "threshold") else []
    threshold_kind = "words" if args.words == "threshold" else None
    folds = sorted({d.fold for d in true})
    fixed = (args.hidden, args.alpha, args.calibration, tuple(float(t) for t in args.thresholds.split(",")))
    kinds = list(wrong)
    all_wrong = [d for k in kinds for d in wrong[k]]
    cs, ps, per_fold = [], [], []
    flags_ok, flags_bad, conf_s, flags_words, flags_words_swapped = [], {k: [] for k in kinds}, [], [], []
    for f in folds:
        train = [d for d in true_fit if d.fold != f]
        test = [d for d in true_test if d.fold == f]
        if args.select:
            log(f"rotation {f}: choosing settings on folds {[g for g in folds if g != f]}")
            settings = select_settings(train, log)
        else:
            settings = fixed
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
        # utterance check: fitted, threshold included, on the training folds' correct and
        # mismatched decodes (every kind) only
        check = fit_check(train + [d for d in words_ok if d.fold != f], [d for d in all_wrong if d.fold != f],
                          conf, models, threshold_kind)
        ev_ok, secs = utt_evidence(test, conf, models)
        flags_ok.append(check.flag(ev_ok))
        test_words = [d for d in words_test if d.fold == f]
        if test_words:
            flags_words.append(check.flag(utt_evidence(test_words, conf, models)[0]))
        test_swapped = [d for d in words_swapped if d.fold == f]
        if test_swapped:
            flags_words_swapped.append(check.flag(utt_evidence(test_swapped, conf, models)[0]))
        for k in kinds:
            test_bad = [d for d in wrong_test[k] if d.fold == f]
            flags_bad[k].append(check.flag(utt_evidence(test_bad, conf, models)[0]) if test_bad
                                else np.zeros(0, bool))
        conf_s.extend(d.evidence_s + s for d, s in zip(test, secs))

    c, p = np.concatenate(cs), np.concatenate(ps)
    pooled = boundary_figures(c, p)
    ok = np.concatenate(flags_ok)
    mismatch = {"correct": int(len(ok)), "false_flags": int(ok.sum()), "false_flag_rate": float(ok.mean())}
    if flags_words:
        ok_words = np.concatenate(flags_words)
        mismatch["correct_words"] = {"correct": int(len(ok_words)), "false_flags": int(ok_words.sum()),
                                     "false_flag_rate": float(ok_words.mean())}
    if flags_words_swapped:
        bad_words = np.concatenate(flags_words_swapped)
        n = len(bad_words) + len(words_refused)
        mismatch["swapped_words"] = {"mismatched": n, "flagged": int(bad_words.sum()),
                                     "refused_as_not_fitting": len(words_refused),
                                     "detected_rate": float((bad_words.sum() + len(words_refused)) / n)}
    for k in kinds:
        bad = np.concatenate(flags_bad[k])
        n_bad_total = len(bad) + len(refused[k])
        mismatch[k] = {"mismatched": n_bad_total, "refused_as_not_fitting": len(refused[k]),
                       "flagged": int(bad.sum()),
                       "detected_rate": float((bad.sum() + len(refused[k])) / max(n_bad_total, 1))}
    align_s = sum(d.align_s for d in true_test)
    report = {
        "boundaries": pooled, "per_fold": per_fold, "mismatch": mismatch,
        "time": {"align_s": align_s, "confidence_s": float(sum(conf_s)),
                 "overhead": float(sum(conf_s) / align_s)},
    }
    if args.save is not None:
        settings = select_settings(true_fit) if args.select else fixed
        conf = fit_confidence(true_fit, settings)
        check = fit_check(true_fit + words_ok, all_wrong, conf, models, threshold_kind)
        args.save.mkdir(parents=True, exist_ok=True)
        np.savez(args.save / "confidence.npz", **conf.to_arrays())
        np.savez(args.save / "utterance_check.npz", **check.to_arrays())
        (args.save / "confidence.json").write_text(json.dumps(
            {"settings": {"hidden": settings[0], "alpha": settings[1], "calibration": settings[2],
                          "thresholds_ms": list(settings[3])},
             "utterance_check": {"columns": list(UTTERANCE_EVIDENCE_NAMES[:check.n_columns]),
                                 "threshold_rule": check.rule, "false_flag_rate": check.false_flag_rate},
             "tolerance_s": TOLERANCE_S, "fitted_on": "out-of-fold decodes of "
             f"{len(true)} utterances by {args.folds_dir}", "evaluation": report}, indent=1) + "\n")
        log(f"wrote {args.save}/confidence.npz, utterance_check.npz, confidence.json")
        if args.attach is not None:
            from aligner.io.bundles import ALIGNMENT_KIND, add_to_bundle

            add_to_bundle(args.attach, ALIGNMENT_KIND,
                          {"confidence": conf.to_arrays(), "utterance_check": check.to_arrays()},
                          {"confidence": {"settings": {"hidden": settings[0], "alpha": settings[1],
                                                       "calibration": settings[2],
                                                       "thresholds_ms": list(settings[3])},
                                          **attach_record(args, len(true), settings)}})
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
    for k in kinds:
        print(f"mismatched transcripts, {k}: {m[k]['detected_rate'] * 100:.1f} % detected ({m[k]['flagged']} "
              f"flagged + {m[k]['refused_as_not_fitting']} refused as not fitting, of {m[k]['mismatched']})"
              f"  (target >= 95 %)")
    print(f"correct transcripts flagged: {m['false_flags']} of {m['correct']} "
          f"({100 * m['false_flag_rate']:.1f} %)  (target <= 2 %)")
    if "correct_words" in m:
        w = m["correct_words"]
        print(f"correct transcripts given as .txt words flagged: {w['false_flags']} of {w['correct']} "
              f"({100 * w['false_flag_rate']:.1f} %)")
    if "swapped_words" in m:
        w = m["swapped_words"]
        print(f"mismatched transcripts, the next utterance's .txt words (not in the fit): "
              f"{100 * w['detected_rate']:.1f} % detected ({w['flagged']} flagged + {w['refused_as_not_fitting']} "
              f"refused as not fitting, of {w['mismatched']})")
    print(f"time: alignment {t['align_s']:.2f} s, confidence {t['confidence_s']:.3f} s: "
          f"+{100 * t['overhead']:.1f} %  (target <= 10 %)")


if __name__ == "__main__":
    main()
