#!/usr/bin/env python
"""Adapting the aligner to a corpus (issue 24), speaker-disjoint.

Protocol. The fold models of ``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR`` (each
trained on 9 speakers; its manifest lists its 3 test speakers). For every fold, the fold model
is adapted (:func:`aligner.alignment.adaptation.rounds.adapt_model`) on its test speakers' audio and
transcripts, never their times, and those same recordings are aligned with the adapted model:

* ``phones``: transcripts are the ``.phn`` symbols without times; scored as
  ``aligner evaluate`` scores (% of boundaries within 10/20/30/40 ms, mean error);
* ``words``: transcripts are the ``.txt`` sentences; aligned as ``aligner align`` does
  (:func:`aligner.api.align_words`) and scored as ``benchmarks.words.bench_words`` scores (word MAE,
  F1@20 over word edges);
* ``references``: phones, with 3 files per test speaker (seeded choice) given with their
  hand-aligned ``.phn`` times as references; the other 7 files are scored;
* ``noharm``: phones, adapted on the fold model's own 9 training speakers and scored on them.

The fold models carry no confidence model; each fold gets one (and a transcript check) fitted
on the out-of-fold decodes of the *other* folds' speakers only (``benchmarks.alignment.eval_confidence``'s
functions, fixed settings: 16 hidden units, alpha 10, Platt, 20 ms), cached under ``--work``.

Every setting of ``--settings`` is run on every fold for rounds 1..``--rounds`` (round 0 is the
fold model itself). Settings are chosen without looking at the test speakers by
cross-validation over folds: for fold k, the (setting, round) with the best pooled figure on
the other folds' speakers (phones/references/noharm: % within 20 ms; words: word MAE) is applied
to fold k; the pooled selected figure is printed beside the per-setting table. Results per
(mode, fold, setting) are cached as JSON under ``--work`` (delete to recompute), so folds can
run in separate processes (``--folds 0,1``) and ``--summary`` prints from the cache alone.

    python -m benchmarks.alignment.eval_adaptation --folds-dir runs/folds --modes phones words --rounds 3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from aligner.alignment.adaptation.edges import edges_cut_recordings
from aligner.alignment.adaptation.rounds import AdaptSettings, Recording, adapt_model, corpus_decoder
from aligner.alignment.adaptation.warps import choose_warps
from aligner.alignment.evaluation.words import score_word_alignments
from aligner.io.audio import RepairedAudioWarning, load_audio
from aligner.io.corpus import find_utterances
from aligner.io.textgrids import Interval
from aligner.io.transcripts import read_phn, read_word_segments
from aligner.phones.sets import get_phone_set

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"
MODES = ("phones", "words", "references", "noharm")
#: settings by name (``--settings``); "none" adapts nothing (the fold model re-aligned)
_NONE = dict(classifier_prior=None, durations_prior=None, confidence="none", refined_labels=False)
SETTINGS = {
    # output layer refit (prior lambda), labels from the decoder's 10 ms grid starts
    "clf10": AdaptSettings(classifier_prior=10.0, confidence="none", refined_labels=False),
    # ... labels from the refined (sub-frame shifted, rounded) starts
    "clf3r": AdaptSettings(classifier_prior=3.0, confidence="none", refined_labels=True),
    "clf10r": AdaptSettings(classifier_prior=10.0, confidence="none", refined_labels=True),
    "clf30r": AdaptSettings(classifier_prior=30.0, confidence="none", refined_labels=True),
    "clf10r-drop": AdaptSettings(classifier_prior=10.0, confidence="drop", refined_labels=True),
    # ... frames within 1 of every boundary left out
    "clf10r-guard1": AdaptSettings(classifier_prior=10.0, confidence="none", refined_labels=True, boundary_guard=1),
    # ... frames within 2 of a boundary below 0.5 confidence dropped / weighted by it
    "clf3r-drop": AdaptSettings(classifier_prior=3.0, confidence="drop", refined_labels=True),
    "clf3r-weight": AdaptSettings(classifier_prior=3.0, confidence="weight", refined_labels=True),
    # duration statistics, the base's as 30 pseudo-observations
    "dur30": AdaptSettings(**dict(_NONE, durations_prior=30.0)),
    "clf3r+dur30": AdaptSettings(classifier_prior=3.0, durations_prior=30.0, confidence="none", refined_labels=True),
    "clf10r+dur10": AdaptSettings(classifier_prior=10.0, durations_prior=10.0, confidence="none", refined_labels=True),
    "clf10r+dur30": AdaptSettings(classifier_prior=10.0, durations_prior=30.0, confidence="none", refined_labels=True),
    "clf10r+dur100": AdaptSettings(classifier_prior=10.0, durations_prior=100.0, confidence="none", refined_labels=True),
    "clf30r+dur30": AdaptSettings(classifier_prior=30.0, durations_prior=30.0, confidence="none", refined_labels=True),
    "clf100r+dur30": AdaptSettings(classifier_prior=100.0, durations_prior=30.0, confidence="none", refined_labels=True),
    "clf10r-drop+dur30": AdaptSettings(classifier_prior=10.0, durations_prior=30.0, confidence="drop", refined_labels=True),
    # a vocal-tract-length warp per speaker, alone and with the refit
    "vtln": AdaptSettings(**_NONE),
    "vtln+clf3r": AdaptSettings(classifier_prior=3.0, confidence="none", refined_labels=True),
    "vtln+clf3r-drop": AdaptSettings(classifier_prior=3.0, confidence="drop", refined_labels=True),
    # references (hand-aligned files) counted 1x / 3x / 10x
    "clf3r-ref1": AdaptSettings(classifier_prior=3.0, confidence="none", refined_labels=True, reference_weight=1.0),
    "clf3r-ref3": AdaptSettings(classifier_prior=3.0, confidence="none", refined_labels=True, reference_weight=3.0),
    "clf3r-ref10": AdaptSettings(classifier_prior=3.0, confidence="none", refined_labels=True, reference_weight=10.0),
    "clf3r-ref30": AdaptSettings(classifier_prior=3.0, confidence="none", refined_labels=True, reference_weight=30.0),
    # ... and the boundary refiner's output layer refit on the references (ridge toward the base)
    "clf10r-ref3-rf30": AdaptSettings(classifier_prior=10.0, refined_labels=True, reference_weight=3.0,
                                      refiner_prior=30.0),
    "clf10r-ref3-rf100": AdaptSettings(classifier_prior=10.0, refined_labels=True, reference_weight=3.0,
                                       refiner_prior=100.0),
    "clf10r-ref3-rf300": AdaptSettings(classifier_prior=10.0, refined_labels=True, reference_weight=3.0,
                                       refiner_prior=300.0),
    "clf10r-ref3": AdaptSettings(classifier_prior=10.0, refined_labels=True, reference_weight=3.0),
    # references alone (decoded files not used)
    "clf3-refonly": AdaptSettings(classifier_prior=3.0, confidence="none", reference_weight=1.0, decoded_weight=0.0),
    "clf1-refonly": AdaptSettings(classifier_prior=1.0, confidence="none", reference_weight=1.0, decoded_weight=0.0),
}
# "...dur30s": the deviations scaled as their means changed, not re-estimated (issue 46)
for _name in ("dur30", "clf10r+dur30", "clf30r+dur30", "clf100r+dur30", "clf10r-drop+dur30"):
    SETTINGS[f"{_name}s"] = dataclasses.replace(SETTINGS[_name], durations_spread="scaled")
for _alpha in (1, 3):  # ... with pronunciation bonuses from the decoder's choices
    SETTINGS[f"dur30s+pron{_alpha}"] = dataclasses.replace(SETTINGS["dur30s"], pronunciation_prior=float(_alpha))
# ... and the output biases held near the base's (bias prior 100; the default 1 leaves them nearly free)
for _name in ("clf10r+dur30s", "clf30r+dur30s"):
    SETTINGS[_name.replace("+", "-b100+")] = dataclasses.replace(SETTINGS[_name], bias_prior=100.0)
# keep-or-revert (issue 46): every 5th recording held back; each round's change kept only where
# it raises their mean boundary confidence ("-keep": the candidate's own evidence, "-keepb": the base's)
for _name in ("dur30s", "clf10r+dur30s"):  # ... 100 pseudo-observations (0.20.0's default for words)
    SETTINGS[_name.replace("dur30s", "dur100s")] = dataclasses.replace(SETTINGS[_name], durations_prior=100.0)
for _name in ("clf10r", "clf3r", "dur30", "clf3r+dur30", "clf10r+dur30", "clf10r-drop+dur30", "dur30s", "dur100s", "clf10r+dur100s"):
    SETTINGS[f"{_name}-keep"] = dataclasses.replace(SETTINGS[_name], keep_better=True, keep_judge="own")
    SETTINGS[f"{_name}-keepb"] = dataclasses.replace(SETTINGS[_name], keep_better=True, keep_judge="base")
# pronunciation bonuses from the decoder's choices (alpha pseudo-counts per alternative), alone and with the refit
for _alpha in (0.3, 1, 3, 10):
    SETTINGS[f"pron{_alpha:g}"] = AdaptSettings(**dict(_NONE, pronunciation_prior=float(_alpha)))
    SETTINGS[f"clf3r+dur30+pron{_alpha:g}"] = dataclasses.replace(SETTINGS["clf3r+dur30"],
                                                                pronunciation_prior=float(_alpha))
    SETTINGS[f"pronv{_alpha:g}"] = AdaptSettings(**dict(_NONE, pronunciation_prior=float(_alpha),
                                                        pronunciation_level="phones"))
for _name in ("pron1", "pron3", "pronv0.3", "pronv1", "pronv3", "clf3r+dur30+pron1"):  # ... judged on held-back recordings
    SETTINGS[f"{_name}-keep"] = dataclasses.replace(SETTINGS[_name], keep_better=True, keep_judge="own")
    SETTINGS[f"{_name}-keepb"] = dataclasses.replace(SETTINGS[_name], keep_better=True, keep_judge="base")
#: settings that first choose a frequency warp per speaker (:func:`choose_warps`) with the fold model
VTLN = {"vtln", "vtln+clf3r", "vtln+clf3r-drop"}
CONFIDENCE_SETTINGS = (16, 10.0, "platt", (20.0,))
REFERENCES_PER_SPEAKER = 3


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# -------------------------------------------------------------------------------------------
# data
# -------------------------------------------------------------------------------------------

def load_corpus(data: Path) -> list[dict]:
    """Every utterance: name, speaker, samples, .phn (starts s, symbols), .txt sentence, paths."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        for u in find_utterances(data):
            starts, ends, labels = read_phn(u.transcript)
            txt = u.transcript.with_suffix(".txt")
            out.append({"name": u.name, "speaker": u.speaker, "samples": load_audio(u.audio),
                        "phn_starts": np.asarray(starts, float) / 16000.0,
                        "phn_ends": np.asarray(ends, float) / 16000.0,
                        "symbols": list(labels), "txt": txt, "wrd": u.transcript.with_suffix(".wrd"),
                        "phn": u.transcript, "text": read_word_segments(txt)[0].text})
    return out


def reference_choice(utts: list[dict], seed: int = 0) -> set:
    """Names of :data:`REFERENCES_PER_SPEAKER` utterances per speaker (seeded)."""
    chosen = set()
    for spk in sorted({u["speaker"] for u in utts}):
        names = sorted(u["name"] for u in utts if u["speaker"] == spk)
        chosen |= set(random.Random(f"{seed}-{spk}").sample(names, REFERENCES_PER_SPEAKER))
    return chosen


def fold_models_with_review(data: Path, folds_dir: Path, work: Path, review: bool = True,
                            expert_folds: Path | None = None, band_folds: Path | None = None,
                            dereverb: float | None = None, denoise: float | None = None) -> list:
    """[(fold model with a confidence model and transcript check fitted on the other folds'
    out-of-fold decodes, its test speakers)]; without ``review``, the fold models as saved.
    ``expert_folds``, ``band_folds``, ``dereverb``, ``denoise``: the decodes are made with these condition
    experts (``build_decodes``)."""
    from aligner.alignment.review.confidence import BoundaryConfidence, UtteranceCheck
    from benchmarks.alignment.eval_confidence import build_decodes, fit_check, fit_confidence
    from benchmarks.alignment.folds import fold_models

    models = fold_models(folds_dir)
    if not review:
        return models
    paths = [work / f"review_fold{k}.npz" for k in range(len(models))]
    if not all(p.is_file() for p in paths):
        log("fitting per-fold confidence models on the other folds' decodes ...")
        true, wrong, _, dec_models = build_decodes(data, folds_dir, log, expert_folds=expert_folds,
                                                   band_folds=band_folds, dereverb=dereverb,
                                                   denoise=denoise)
        all_wrong = [d for k in wrong for d in wrong[k]]
        for k in range(len(models)):
            train = [d for d in true if d.fold != k]
            conf = fit_confidence(train, CONFIDENCE_SETTINGS)
            check = fit_check(train, [d for d in all_wrong if d.fold != k], conf, dec_models)
            arrays = {f"c_{n}": v for n, v in conf.to_arrays().items()}
            arrays.update({f"u_{n}": v for n, v in check.to_arrays().items()})
            np.savez(paths[k], **arrays)
    out = []
    for (model, speakers), p in zip(models, paths):
        z = np.load(p, allow_pickle=False)
        model.confidence = BoundaryConfidence.from_arrays({n[2:]: z[n] for n in z.files if n.startswith("c_")})
        model.utterance_check = UtteranceCheck.from_arrays({n[2:]: z[n] for n in z.files if n.startswith("u_")})
        out.append((model, speakers))
    return out


# -------------------------------------------------------------------------------------------
# scoring
# -------------------------------------------------------------------------------------------

def _frames_scores(model, u: dict, warps: dict | None):
    """``(decoder, frames, scores)``: ``model``, or its condition expert where its gates send the
    recording (:meth:`~aligner.alignment.model.AlignmentModel.scored`)."""
    frames = model.frames_of(u["samples"], warp=float((warps or {}).get(u["speaker"], 1.0)))
    decoder, scores, frames = model.scored(frames, u["samples"])
    return decoder, frames, scores


def phone_rows(model, utts: list[dict], warps: dict | None = None) -> list:
    """Per utterance ``[errors ms (K-1,) as a list]`` of ``model`` aligning its ``.phn`` symbols
    (as :meth:`AlignmentModel.align` does; ``warps``: ``{speaker: MFCC warp}``)."""
    pset = get_phone_set("timit61")
    rows = []
    for u in utts:
        decoder, frames, scores = _frames_scores(model, u, warps)
        hyp = decoder.align_scored(frames, scores, u["symbols"], pset, len(u["samples"]) / 16000.0, name=u["name"])
        rows.append([float(s) for s in 1000 * np.abs(np.array([iv.start_s for iv in hyp])[1:] - u["phn_starts"][1:])])
    return rows


def word_rows(model, utts: list[dict], warps: dict | None = None, via_api: bool = False) -> list:
    """Per utterance ``[ref words, hyp words, ref phones, hyp phones]`` as ``benchmarks.words.bench_words``
    builds them: the ``.txt`` sentence normalised and looked up as ``aligner align`` does
    (:func:`~aligner.alignment.adaptation.rounds.word_pronunciations`), aligned by
    :func:`~aligner.alignment.decoding.words.align_words_scored` with the speakers' ``warps``; without
    warps (or with ``via_api``) by :func:`aligner.api.align_words` itself, which reads the ``.txt``
    file exactly as ``benchmarks.words.bench_words`` does (the two paths differ by about 0.02 ms of
    word MAE on fold 0, from float rounding in the refined times)."""
    from aligner import api
    from aligner.alignment.adaptation.rounds import word_pronunciations
    from aligner.alignment.evaluation.words import read_wrd
    from aligner.alignment.decoding.words import align_words_scored
    from benchmarks.words.bench_words import reference_phones

    rows = []
    for u in utts:
        samples = np.clip(np.round(u["samples"] * 32768.0), -32768, 32767).astype(np.int16).astype(np.float32) / 32768.0
        if via_api or not warps:
            tiers = dict(api.align_words(samples, u["txt"], model, sr=16000, name=u["name"]).tiers)
            words, phones = tiers["words"], tiers["phones"]
        else:
            labels, prons = word_pronunciations(u["text"], api.load_dictionary())
            decoder, frames, scores = _frames_scores(model, dict(u, samples=samples), warps)
            res = align_words_scored(decoder, frames, scores, labels, prons, len(samples) / 16000.0, name=u["name"])
            words, phones = res.words, res.phones
        rows.append([_shifted([list(iv) for iv in read_wrd(u["wrd"])], u.get("pause")), [list(iv) for iv in words],
                     _shifted([list(iv) for iv in reference_phones(u["phn"])], u.get("pause")),
                     [list(iv) for iv in phones]])
    return rows


def phone_figures(rows: list) -> dict:
    err = np.concatenate([np.asarray(r, float) for r in rows]) if rows else np.zeros(0)
    return {"boundaries": int(err.size), "within10": float(100 * np.mean(err <= 10 + 1e-6)),
            "within20": float(100 * np.mean(err <= 20 + 1e-6)), "within40": float(100 * np.mean(err <= 40 + 1e-6)),
            "mean_ms": float(err.mean()), "median_ms": float(np.median(err))}


def word_figures(rows: list) -> dict:
    iv = lambda xs: [Interval(float(a), float(b), str(c)) for a, b, c in xs]  # noqa: E731
    w = score_word_alignments([(iv(r[0]), iv(r[1])) for r in rows])
    return {"words": len(rows), "word_mae_ms": float(w.mean_ms), "word_median_ms": float(w.median_ms),
            "f1_20": float(w.f1), "within20": float(w.within_ms[20])}


def base_mode(mode: str) -> str:
    """``phones`` of ``phones@white5``: a mode, without the degradation its recordings get."""
    return mode.split("@")[0]


#: ``words@pauseN``: N seconds of each recording's own first 50 ms (tiled, every other copy reversed) put
#: where its middle word starts (a speaker who stops to think), the word references shifted
PAUSE_CONDITIONS = {"pause1": 1.0, "pause2": 2.0, "pause5": 5.0}
#: ``words@edgesN``: N seconds of each recording's own first 50 ms (tiled, every other copy reversed) at
#: both ends (a lab prompt, a generous cut: ``benchmarks.alignment.eval_silent_edges``), the references shifted
EDGE_CONDITIONS = {"edges1": 1.0, "edges3": 3.0}


def check_mode(mode: str) -> str:
    """argparse type: one of :data:`MODES`, optionally ``@CONDITION`` of
    :data:`benchmarks.alignment.eval_degraded.CONDITIONS` (the test speakers' recordings degraded, adapted
    on and scored as degraded copies), or ``words@`` one of :data:`PAUSE_CONDITIONS` or :data:`EDGE_CONDITIONS`."""
    from benchmarks.alignment.eval_degraded import CONDITIONS

    base, _, cond = mode.partition("@")
    if base == "words" and (cond in PAUSE_CONDITIONS or cond in EDGE_CONDITIONS):
        return mode
    if base not in MODES or (cond and cond not in CONDITIONS):
        raise argparse.ArgumentTypeError(f"{mode!r}: a mode is one of {', '.join(MODES)}, optionally "
                                         f"@CONDITION ({', '.join(CONDITIONS)}), or words@ "
                                         f"{', '.join([*PAUSE_CONDITIONS, *EDGE_CONDITIONS])}")
    return mode


def degraded(utts: list[dict], mode: str) -> list[dict]:
    """``utts`` with their samples degraded as ``mode``'s ``@CONDITION`` says (each recording
    seeded by its name), or as they are."""
    import zlib

    from benchmarks.alignment.eval_degraded import degrade

    cond = mode.partition("@")[2]
    if not cond:
        return utts
    if cond in PAUSE_CONDITIONS:
        from aligner.alignment.evaluation.words import read_wrd
        from benchmarks.words.eval_inner_pauses import with_pause

        out = []
        for u in utts:
            words = read_wrd(u["wrd"])
            at = words[len(words) // 2].start_s
            seconds = PAUSE_CONDITIONS[cond]
            out.append(dict(u, samples=with_pause(u["samples"], int(round(at * 16000)), seconds),
                            pause=(at, seconds)))
        return out
    if cond in EDGE_CONDITIONS:
        from benchmarks.alignment.eval_silent_edges import padded

        seconds = EDGE_CONDITIONS[cond]
        return [dict(u, samples=padded(u["samples"], seconds), pause=(0.0, seconds)) for u in utts]
    return [dict(u, samples=degrade(u["samples"], cond, zlib.crc32(u["name"].encode()))) for u in utts]


def _shifted(intervals: list, pause: tuple | None) -> list:
    """``[[start, end, label], ...]`` of ``intervals``, those from ``pause[0]`` (s) on later by ``pause[1]`` s."""
    at, seconds = pause if pause else (np.inf, 0.0)
    return [[a + seconds if a >= at - 1e-9 else a, b + seconds if b > at + 1e-9 else b, c] for a, b, c in intervals]


def figures(mode: str, rows: list) -> dict:
    return word_figures(rows) if base_mode(mode) == "words" else phone_figures(rows)


#: (key, larger is better) of the figure settings are selected by
SELECT_BY = {"words": ("word_mae_ms", False), "phones": ("within20", True), "references": ("within20", True),
             "noharm": ("within20", True)}


# -------------------------------------------------------------------------------------------
# one fold
# -------------------------------------------------------------------------------------------

def run_fold(mode: str, k: int, model, test_speakers: list, utts: list[dict], setting: str, rounds: int,
             cache: Path) -> dict:
    """Adapt fold ``k``'s model with ``setting`` and score rounds 0..``rounds`` (cached)."""
    path = cache / f"{mode}_fold{k}_{setting}.json"
    if path.is_file():
        got = json.loads(path.read_text())
        if got["rounds"] >= rounds:
            return got
    base = base_mode(mode)
    if base == "noharm":
        own = degraded([u for u in utts if u["speaker"] not in test_speakers], mode)
        adapt_on, score_on = own, own
    else:
        own = degraded([u for u in utts if u["speaker"] in test_speakers], mode)
        adapt_on = own
        refs = reference_choice(own) if base == "references" else set()
        score_on = [u for u in own if u["name"] not in refs]
    recordings = []
    for u in adapt_on:
        if base == "words":
            recordings.append(Recording(u["samples"], u["text"], u["speaker"], u["name"], "words"))
        else:
            ref = None
            if base == "references" and u["name"] in refs:
                ref = list(zip(u["phn_starts"], u["phn_ends"], u["symbols"]))
            recordings.append(Recording(u["samples"], u["symbols"], u["speaker"], u["name"], "phones",
                                        "timit61", ref))
    score = word_rows if base == "words" else phone_rows
    out = {"mode": mode, "fold": k, "setting": setting, "rounds": rounds, "test_speakers": test_speakers,
           "audio_s": float(sum(len(u["samples"]) for u in adapt_on) / 16000.0), "by_round": {}}
    base_path = cache / f"{mode}_fold{k}_round0.json"
    if base_path.is_file():
        out["by_round"]["0"] = json.loads(base_path.read_text())
    else:
        out["by_round"]["0"] = {"rows": score(model, score_on), "report": None}
        base_path.write_text(json.dumps(out["by_round"]["0"]))
    recordings = edges_cut_recordings(model, recordings)[0]  # as aligner adapt cuts them (adapt_corpus)
    adapted_base, share = corpus_decoder(model, recordings)
    if model.condition_expert is not None:
        out["expert_share"], out["expert_adapted"] = share, adapted_base is not model
        log(f"  {mode} fold {k}: {share:.0%} of the audio through the condition gates: adapting the "
            + ("clean classifier" if adapted_base is model else "phone-line expert"
               if adapted_base is model.condition_band_expert else "multi-condition expert"))
    warps = None
    if setting in VTLN:
        t0 = time.perf_counter()
        chosen = choose_warps(model, recordings)
        warps = {spk: w for spk, (w, _) in chosen.items()}
        out["warps"] = {spk: [w, means] for spk, (w, means) in chosen.items()}
        out["warp_seconds"] = time.perf_counter() - t0
        log(f"  {mode} fold {k}: warps {warps} ({out['warp_seconds']:.1f} s)")
    if setting != "none":
        def on_round(rnd, adapted, report):
            out["by_round"][str(rnd)] = {"rows": score(adapted, score_on, warps), "report": report.to_dict()}
            fig = figures(mode, out["by_round"][str(rnd)]["rows"])
            log(f"  {mode} fold {k} {setting} round {rnd}: {fmt(mode, fig)} ({report.seconds:.1f} s adapting, "
                f"{report.files_used} files, {len(report.files_left_out)} left out, {report.frames} frames, "
                f"moved {report.moved_20ms}/{report.boundaries})")

        adapt_model(adapted_base, recordings, rounds, SETTINGS[setting], on_round=on_round, warps=warps)
    path.write_text(json.dumps(out))
    return out


def fmt(mode: str, f: dict) -> str:
    if base_mode(mode) == "words":
        return f"word MAE {f['word_mae_ms']:.1f} ms, F1@20 {f['f1_20']:.1f} %, within 20 {f['within20']:.1f} %"
    return f"{f['within20']:.1f} % within 20 ms, mean {f['mean_ms']:.2f} ms, within 10 {f['within10']:.1f} %"


# -------------------------------------------------------------------------------------------
# summary
# -------------------------------------------------------------------------------------------

def summarize(mode: str, results: dict, folds: list) -> dict:
    """Per-(setting, round) pooled figures, and the cross-validated selection over folds.
    ``results[(fold, setting)]`` is :func:`run_fold`'s output."""
    settings = sorted({s for _, s in results})
    candidates = [("none", "0")] + [(s, r) for s in settings for r in
                                    sorted({r for (f, s2), v in results.items() if s2 == s for r in v["by_round"]})
                                    if r != "0"]

    def rows_of(fold, cand):
        s, r = cand
        for (f, s2), v in results.items():
            if f == fold and (s2 == s or (s == "none" and r == "0")) and r in v["by_round"]:
                return v["by_round"][r]["rows"]
        return None

    table = {}
    for cand in candidates:
        per = [rows_of(f, cand) for f in folds]
        if all(p is not None for p in per):
            table[f"{cand[0]} r{cand[1]}"] = figures(mode, [row for p in per for row in p])
    key, larger = SELECT_BY[base_mode(mode)]
    chosen, selected_rows = {}, []
    for f in folds:
        others = [g for g in folds if g != f]
        best = None
        for cand in candidates:
            rows = [rows_of(g, cand) for g in others]
            own = rows_of(f, cand)
            if own is None or any(r is None for r in rows):
                continue
            v = figures(mode, [row for r in rows for row in r])[key]
            if best is None or (v > best[0] if larger else v < best[0]):
                best = (v, cand)
        chosen[f] = f"{best[1][0]} r{best[1][1]}"
        selected_rows += rows_of(f, best[1])
    return {"table": table, "chosen": chosen, "selected": figures(mode, selected_rows) if selected_rows else None}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    ap.add_argument("--folds-dir", type=Path, default=Path("runs/folds"), help="fold models (fold0..3)")
    ap.add_argument("--work", type=Path, default=Path("runs/adapt"), help="cache of results and review models")
    ap.add_argument("--modes", nargs="+", default=["phones", "words"], type=check_mode,
                    help=f"of {', '.join(MODES)}; MODE@CONDITION adapts on and scores degraded copies "
                         f"(conditions of benchmarks.alignment.eval_degraded)")
    ap.add_argument("--settings", default="clf10r", help=f"comma-separated, of {', '.join(SETTINGS)}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--folds", default="", help="only these folds (comma-separated), e.g. to split the work")
    ap.add_argument("--summary", action="store_true", help="print from the cache only")
    ap.add_argument("--no-review", action="store_true", help="fold models without confidence models (the "
                    "confidence rules and the transcript check then do nothing; results go to WORK/noreview)")
    ap.add_argument("--json", type=Path, help="also write the summary here")
    ap.add_argument("--expert-folds", type=Path, help="fold models trained with --augment: each fold model's "
                    "condition expert (gated as benchmarks.alignment.eval_degraded --expert-folds does); a corpus most of "
                    "whose audio passes the gates adapts the expert, as aligner adapt does. Use its own --work")
    ap.add_argument("--band-folds", type=Path, help="with --expert-folds: phone-line fold models for the recordings "
                    "below the band gate (as benchmarks.alignment.eval_degraded --band-folds). Use its own --work")
    from benchmarks.alignment.eval_degraded import add_front_end_arguments
    add_front_end_arguments(ap, note="with --expert-folds and its own --work: ")
    args = ap.parse_args(argv)

    names = [s for s in args.settings.split(",") if s]
    unknown = [s for s in names if s not in SETTINGS]
    if unknown:
        sys.exit(f"error: unknown settings {unknown}; known: {', '.join(SETTINGS)}")
    cache = args.work / ("noreview" if args.no_review else "results")
    cache.mkdir(parents=True, exist_ok=True)
    n_folds = len(list(args.folds_dir.glob("fold*")))
    folds = [int(f) for f in args.folds.split(",") if f] or list(range(n_folds))
    if not args.summary:
        t0 = time.perf_counter()
        utts = load_corpus(args.data)
        models = fold_models_with_review(args.data, args.folds_dir, args.work, not args.no_review,
                                         args.expert_folds, args.band_folds, args.dereverb, args.denoise)
        if args.expert_folds is not None:
            from types import SimpleNamespace

            from benchmarks.alignment.folds import fold_models
            from benchmarks.alignment.eval_degraded import attach_fold_experts
            attach_fold_experts(models, fold_models(args.expert_folds),
                                [SimpleNamespace(name=u["name"], speaker=u["speaker"]) for u in utts],
                                {u["name"]: u["samples"] for u in utts}, None, log,
                                band_experts=None if args.band_folds is None else fold_models(args.band_folds),
                                dereverb=args.dereverb, denoise=args.denoise)
        for mode in args.modes:
            for k in folds:
                model, speakers = models[k]
                for s in names:
                    run_fold(mode, k, model, speakers, utts, s, args.rounds, cache)
        log(f"done in {time.perf_counter() - t0:.0f} s")
    summary = {}
    for mode in args.modes:
        results = {}
        for p in sorted(cache.glob(f"{mode}_fold*_*.json")):
            if p.stem.endswith("_round0"):
                continue
            v = json.loads(p.read_text())
            if v["setting"] in names or not names:
                results[(v["fold"], v["setting"])] = v
        all_folds = sorted({f for f, _ in results})
        if not results:
            continue
        s = summarize(mode, results, all_folds)
        summary[mode] = s
        print(f"\n== {mode} (folds {all_folds}) ==")
        for cand, f in s["table"].items():
            print(f"  {cand:<22} {fmt(mode, f)}")
        if len(all_folds) > 1 and s["selected"]:
            print(f"  cross-validated selection: {fmt(mode, s['selected'])}; chosen per fold {s['chosen']}")
        secs = [v["by_round"][r]["report"]["seconds"] for v in results.values() for r in v["by_round"]
                if r != "0" and v["by_round"][r]["report"]]
        audio = [v["audio_s"] for v in results.values()]
        if secs:
            print(f"  adaptation time per round: median {np.median(secs):.1f} s for {np.median(audio):.0f} s of audio")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
