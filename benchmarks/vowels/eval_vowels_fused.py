#!/usr/bin/env python
"""Vowels from transcripts fused with the vowel model (issue 27), speaker-disjoint.

For each of the 4 fold alignment models of ``python -m benchmarks.alignment.eval_alignment_cv
--save-models DIR`` (``--folds-dir``; each never saw its 3 test speakers), a fold vowel model
is trained on the same 9 training speakers only (``--vowel-models DIR``, trained there when
missing: CVC tokens of the 9 speakers, acoustics from that fold alignment model's classifier,
or with ``--vowel-classifier-folds DIR`` from the classifier of DIR's fold model of the same
speakers, e.g. kernel folds beside network alignment folds, as shipped,
the candidate chosen by 3 inner speaker folds inside the 9 as ``aligner train-vowels`` does,
then refitted on the 9). Each test utterance is aligned from its ``.txt`` words (``--phones``:
its ``.phn`` phones) by its fold's alignment model; its vowels are re-measured by
:func:`aligner.vowels.fused.fuse_vowels` with that fold's vowel model.

Choosing the fusion settings (:class:`~aligner.vowels.fused.FusionSettings`: cut extension,
pulls, cap, mix, whether only CVC-context vowels are fused, whether a fused interval must overlap
its aligned one, and with ``--relocate P`` whether and how the vowels aligned in silence are
looked for afresh: off, no pull, or a pull capped at 10 frames) without the test speakers: for each
test fold, the grid point with the lowest onset + offset MAE on the **other three folds'** test
speakers (all among this fold's 9 training speakers, each measured by models that never saw
it) is applied to this fold's test speakers ("cross-fitted"). Between grid points of equal cost
the one with ``overlap`` is chosen: equal costs mean the rule never fired on those speakers, and
it only keeps a row on its aligned vowel. Caveat: the other folds' models
were trained with this fold's speakers among their training data (their errors, never this
fold's, are what the choice looks at). The grid point with the lowest cost over all 12
speakers is what ``aligner vowels`` ships (:data:`aligner.vowels.fused.DEFAULT_FUSION`); its
pooled figure is printed too but is not a held-out figure.

References: the CVC tokens of the ``.phn`` files (:func:`aligner.vowels.cvc.cvc_tokens`, 671),
each paired with the aligned vowel that overlaps it most (none: lost). "Transcript-free" is each
fold's vowel model measuring each token's own CVC cut (the ``.phn`` cut, as the vowel recipe
scores it), on the same tokens.

    python -m benchmarks.vowels.eval_vowels_fused [--phones] [--folds-dir runs/folds] [--vowel-models DIR]
        [--recording-posteriors no|yes|shipped] [--relocate P|none|shipped]
        [--end-to-end] [--speed-runs N --jobs 2] [--condition white10|reverb_far|...]

``--recording-posteriors``: the cuts' classifier columns from one classifier call over the
whole recording (:attr:`~aligner.vowels.fused.FusionSettings.recording_posteriors`) or from
each cut's own, throughout the grid (default: as the shipped settings). ``--relocate``: the
silence probability of :attr:`~aligner.vowels.fused.FusionSettings.relocate` the grid's
relocation choices use (default: the shipped one; ``none``: no relocation in the grid). The
tokens the cross-fitted settings lose are listed.

``--condition``: every test recording degraded first (``benchmarks.alignment.eval_degraded.degrade``),
then aligned and fused (the fold models as they are; the transcript-free row measures the
degraded cuts too).

``--end-to-end`` also runs ``aligner vowels`` itself (:func:`aligner.api.measure_vowels`, mode
``align``, the shipped settings) with each fold's two models and scores its CSV rows as
``benchmarks.vowels.eval_vowels_aligned`` does (each token paired with the row that overlaps it
most). ``--speed-runs N``: one call over every utterance with the shipped models and ``--jobs``
workers, fused and not fused alternated N times each (x real time, start-up excluded; CPU
seconds): :func:`benchmarks.vowels.bench_vowels_speed.aligned_speed`, which ``python -m
benchmarks.vowels.bench_vowels_speed CORPUS --aligned [--words]`` runs without the evaluation.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.vowels.corpora import transcript_corpus

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"

#: the grid searched: cut extensions (frames), single pulls (|w| per frame), caps (frames), mixes
EXTENDS = (4, 8, 12)
EXTEND_SETS = ((4,), (8,), (12,), (4, 12), (4, 8, 12))
#: what a lost token counts in the selection cost (onset + offset, ms)
LOST_COST_MS = 200.0
PULLS = (0.0, 0.05, 0.1, 0.2, 0.4)
PULL_SETS = ((0.0,), (0.05,), (0.1,), (0.2,), (0.4,), (0.0, 0.1), (0.05, 0.1), (0.1, 0.2), (0.2, 0.4))
CAPS = (None, 6.0, 10.0)
#: how the vowels aligned in silence are decoded with --relocate (FusionSettings.relocate_cap)
RELOCATE_CAPS = (None, 10.0)
MIXES = (0.75, 0.9, 1.0)


def train_fold_vowel_model(fold_dir: Path, data: Path, out: Path, classifier_dir: Path | None = None,
                           front_end: str = "cuts"):
    """A vowel model trained on the CVC tokens of the training speakers of the fold alignment model
    at ``fold_dir`` (its manifest's ``test_speakers`` left out), with its classifier, or with the
    classifier of the fold model at ``classifier_dir`` (the same test speakers); the candidate
    chosen by 3 inner speaker folds; saved to ``out``. ``front_end``: the vowel model's
    (``cuts`` or ``frames``, :mod:`aligner.vowels.frame_columns`; all 23 columns of ``frames``)."""
    from threadpoolctl import threadpool_limits

    from aligner.alignment.model import AlignmentModel
    from aligner.io.corpus import find_utterances
    from aligner.vowels import training as T

    am = AlignmentModel.load(fold_dir)
    test = set(am.training["test_speakers"])
    if classifier_dir is not None:
        am = AlignmentModel.load(classifier_dir)
        if set(am.training["test_speakers"]) != test:
            raise SystemExit(f"{classifier_dir}: its test speakers differ from {fold_dir}'s")
    utts = [u for u in find_utterances(data) if u.speaker not in test]
    with threadpool_limits(1):
        columns = T.FRAME_VOWEL_COLUMNS if front_end == "frames" else T.VOWEL_COLUMNS
        examples, _ = T.load_cvc_examples(utts, am.classifier, front_end=front_end)
        cv = T.cross_validate(examples, am.classifier, T.candidates(), n_folds=3, columns=columns)
        chosen, n_epochs = cv.candidates[cv.chosen], cv.chosen_epochs
        fit = T.fit_final(chosen, T.prepare(examples, widths=chosen.widths, columns=columns), max(n_epochs, 1))
    model = fit.model(am.classifier, columns, {
        "test_speakers": sorted(test), "speakers": sorted({u.speaker for u in utts}), "trainer": chosen.trainer,
        "trainer_params": dict(chosen.params), "widths": list(chosen.widths), "epochs": n_epochs,
        "alignment_fold": str(fold_dir), "classifier_fold": str(classifier_dir or fold_dir), "cv": cv.record(),
        "front_end": front_end}, front_end)
    model.save(out)
    return model


def metrics(hyp: np.ndarray, ref: np.ndarray) -> tuple:
    """``(onset MAE ms, offset MAE ms, duration MAE ms, duration r, n)`` over rows with a hypothesis;
    ``hyp``, ``ref``: (n, 2) seconds (NaN rows skipped)."""
    ok = ~np.isnan(hyp[:, 0])
    e = np.abs(hyp[ok] - ref[ok]) * 1000
    dh, dr = hyp[ok, 1] - hyp[ok, 0], ref[ok, 1] - ref[ok, 0]
    return (float(e[:, 0].mean()), float(e[:, 1].mean()), float(np.abs(dh - dr).mean() * 1000),
            float(np.corrcoef(dh, dr)[0, 1]), int(ok.sum()))


def fmt(m: tuple) -> str:
    return f"onset {m[0]:.2f} ms, offset {m[1]:.2f} ms, duration MAE {m[2]:.1f} ms, r {m[3]:.3f} (n {m[4]})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--folds-dir", type=Path, default=Path("runs/folds"))
    ap.add_argument("--vowel-models", type=Path, default=Path("runs/vowelfusion/vowel-folds"),
                    help="fold vowel models (DIR/foldK), trained here when missing")
    ap.add_argument("--vowel-classifier-folds", type=Path, default=None,
                    help="fold models (DIR/foldK) whose classifier new fold vowel models read, e.g. kernel folds "
                         "as the shipped vowel model keeps a kernel classifier [--folds-dir]")
    ap.add_argument("--front-end", choices=("cuts", "frames"), default="cuts",
                    help="the front end of fold vowel models trained here (aligner.vowels.frame_columns)")
    ap.add_argument("--phones", action="store_true", help="align the .phn phones instead of the .txt words")
    ap.add_argument("--end-to-end", action="store_true", help="also score aligner vowels' own rows (shipped settings)")
    ap.add_argument("--recording-posteriors", choices=("no", "yes", "shipped"), default="shipped",
                    help="the cuts' classifier columns from the whole recording (FusionSettings."
                         "recording_posteriors) in the grid: no, yes, or as the shipped settings")
    ap.add_argument("--relocate", default="shipped",
                    help="FusionSettings.relocate in the grid: a silence probability, 'none', or 'shipped'")
    ap.add_argument("--condition", default="clean",
                    help="degrade every test recording first (benchmarks.alignment.eval_degraded.degrade, seeded by "
                         "its index): white10, reverb_far, ...")
    ap.add_argument("--speed-runs", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)

    from aligner import api
    from aligner.alignment.model import AlignmentModel
    from aligner.alignment.pipeline import align_transcript
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import speaker_of
    from aligner.io.transcripts import read_phn
    from aligner.vowels.cvc import cvc_tokens
    from aligner.vowels.from_alignment import aligned_vowels
    from aligner.vowels.fused import DEFAULT_FUSION, FusionSettings, fuse_vowels, fusion_features
    from aligner.vowels.model import VowelModel

    warnings.simplefilter("ignore", RepairedAudioWarning)
    wavs = [w for w in sorted(args.data.rglob("*.wav")) if w.with_suffix(".phn").is_file()]
    folds = sorted(args.folds_dir.glob("fold*"))
    if not wavs or not folds:
        print(f"need utterances under {args.data} and fold models under {args.folds_dir}", file=sys.stderr)
        return 1
    kind = "phones" if args.phones else "words"
    rec_post = {"no": False, "yes": True}.get(args.recording_posteriors, DEFAULT_FUSION[kind].recording_posteriors)
    relocate = {"shipped": DEFAULT_FUSION[kind].relocate, "none": None}.get(args.relocate)
    relocate = float(args.relocate) if relocate is None and args.relocate not in ("shipped", "none") else relocate
    print(f"recording_posteriors {rec_post}, relocate {relocate}", file=sys.stderr)
    t0 = time.perf_counter()
    rows = []  # per reference token: dict
    files = {}  # audio path -> (fold name, samples, aligned vowels, indices of its rows)
    vowel_models, fold_of = {}, {}
    degrade = None
    if args.condition != "clean":
        from benchmarks.alignment.eval_degraded import degrade
    for fold in folds:
        am = AlignmentModel.load(fold)
        vdir = args.vowel_models / fold.name
        if not (vdir / "manifest.json").is_file():
            print(f"training the vowel model of {fold.name} (its 9 training speakers) -> {vdir}", file=sys.stderr)
            train_fold_vowel_model(fold, args.data, vdir, None if args.vowel_classifier_folds is None
                                   else args.vowel_classifier_folds / fold.name, args.front_end)
        vm = VowelModel.load(vdir)
        if set(vm.training.get("test_speakers", [])) != set(am.training["test_speakers"]):
            print(f"{vdir}: its test speakers differ from {fold}'s", file=sys.stderr)
            return 1
        vowel_models[fold.name] = vm
        for w in wavs:
            if speaker_of(w) not in am.training["test_speakers"]:
                continue
            fold_of[w] = fold
            samples = load_audio(w)
            if degrade is not None:
                samples = degrade(samples, args.condition, wavs.index(w)).astype(np.float32)
            transcript = w.with_suffix(".phn" if args.phones else ".txt")
            result = (align_transcript(w, transcript, am) if degrade is None
                      else align_transcript(samples, transcript, am, sr=16000, name=str(w)))
            vowels = aligned_vowels(result.tiers, result.confidences)
            starts, ends, labels = read_phn(w.with_suffix(".phn"))
            mine = []
            for tok in cvc_tokens(starts, ends, labels):
                mine.append(len(rows))
                rows.append(dict(file=w, fold=fold.name, ref=(tok.vowel_start / 16000, tok.vowel_end / 16000),
                                 cut=(tok.cut_start, tok.cut_end), samples=samples))
            files[w] = (fold.name, samples, vowels, mine)
    print(f"{len(rows)} CVC tokens of {len(wavs)} utterances aligned from their {'.phn phones' if args.phones else '.txt words'} "
          f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    ref = np.array([r["ref"] for r in rows])
    folds_of_row = np.array([r["fold"] for r in rows])

    def intervals_of(fused) -> np.ndarray:
        """(n, 2) seconds of fused rows, NaN where the aligned interval was kept."""
        return np.array([(fv.onset_s, fv.offset_s) if fv.mode == "fused" else (np.nan, np.nan) for fv in fused]
                        ).reshape(-1, 2)

    def paired(intervals: dict) -> np.ndarray:
        """(n rows, 2) seconds: each token's hypothesis, the interval of its file that overlaps it
        most (as benchmarks.vowels.eval_vowels_aligned pairs them); NaN when none overlaps it."""
        out = np.full((len(rows), 2), np.nan)
        for w, (_, _, _, idx) in files.items():
            hyp = intervals[w]
            if not idx or not len(hyp):
                continue
            r = ref[idx]
            overlap = np.minimum(hyp[None, :, 1], r[:, None, 1]) - np.maximum(hyp[None, :, 0], r[:, None, 0])
            best = np.argmax(overlap, axis=1)
            ok = overlap[np.arange(len(idx)), best] > 0
            out[np.array(idx)[ok]] = hyp[best[ok]]
        return out

    aligned_iv = {w: np.array([(v.onset_s, v.offset_s) for v in f[2]]).reshape(-1, 2) for w, f in files.items()}
    cvc_of = {w: np.array([v.cvc for v in f[2]], dtype=bool) for w, f in files.items()}
    aligned = paired(aligned_iv)
    lost = np.isnan(aligned[:, 0])

    # transcript-free: each fold's vowel model on each token's own CVC cut
    free = np.full((len(rows), 2), np.nan)
    for name, vm in vowel_models.items():
        idx = [i for i, r in enumerate(rows) if r["fold"] == name]
        got = vm.measure_many([(rows[i]["samples"][rows[i]["cut"][0]:rows[i]["cut"][1]], [None], ["cut"]) for i in idx])
        for i, m in zip(idx, got):
            if not isinstance(m[0], Exception):
                free[i] = (rows[i]["cut"][0] / 16000 + m[0].onset_s, rows[i]["cut"][0] / 16000 + m[0].offset_s)

    # the grid: every aligned vowel of every file decoded per (extend, single pull, cap) with mix 1,
    # and with --relocate the vowels aligned in silence decoded per FusionSettings.relocate_cap too
    t1 = time.perf_counter()
    decoded, relocated = {}, {}
    rmodes = ("off",) if relocate is None else ("off",) + RELOCATE_CAPS
    for ext in EXTENDS:
        feats, moved = {}, {}
        for w, (name, samples, vowels, _) in files.items():
            spans = [(v.onset_s, v.offset_s, v.runs_start_s, v.runs_end_s) for v in vowels]
            settings = FusionSettings(extend=ext, recording_posteriors=rec_post)
            feats[w] = (spans, fusion_features(vowel_models[name], samples, spans, settings))
            if relocate is not None:
                cuts, fe = fusion_features(vowel_models[name], samples, spans, replace(settings, relocate=relocate))
                idx = [i for i, c in enumerate(cuts) if len(c) > 3 and c[3]]
                moved[w] = (idx, [spans[i] for i in idx], ([cuts[i] for i in idx], [fe[i] for i in idx]))
                flags = np.zeros(len(spans), dtype=bool)
                flags[idx] = True
                relocated[w] = flags if w not in relocated else relocated[w] | flags
            else:
                relocated[w] = np.zeros(len(spans), dtype=bool)
        for pull, cap in itertools.product(PULLS, CAPS):
            if pull == 0 and cap is not None:
                continue
            s = FusionSettings(extend=ext, pulls=(pull,), cap=cap, mix=1.0, recording_posteriors=rec_post)
            out = {}
            for w, (name, samples, vowels, _) in files.items():
                spans, fe = feats[w]
                out[w] = intervals_of(fuse_vowels(vowel_models[name], samples, spans, s, features=fe))
            decoded[(ext, pull, cap, "off")] = out
            for rcap in rmodes[1:]:
                sr = replace(s, relocate=relocate, relocate_cap=rcap)
                out_r = {}
                for w, (name, samples, vowels, _) in files.items():
                    idx, spans_r, fe_r = moved[w]
                    out_r[w] = out[w].copy()
                    if idx:
                        out_r[w][idx] = intervals_of(fuse_vowels(vowel_models[name], samples, spans_r, sr, features=fe_r))
                decoded[(ext, pull, cap, rcap)] = out_r
    configs, table = [], {}
    for exts, pulls, cap, mix, cvc_only, overlap, rmode in itertools.product(
            EXTEND_SETS, PULL_SETS, CAPS, MIXES, (False, True), (False, True), rmodes):
        if all(p == 0 for p in pulls) and cap is not None:
            continue
        intervals = {}
        for w in files:
            d = np.mean([decoded[(e, p, None if p == 0 else cap, rmode)][w] for e in exts for p in pulls], axis=0)
            a = aligned_iv[w]
            moved_here = relocated[w] if rmode != "off" else np.zeros(len(a), dtype=bool)
            use = ~np.isnan(d[:, 0]) & (cvc_of[w] if cvc_only else True)
            h = a.copy()
            m = np.where(moved_here, 1.0, mix)[:, None]  # a relocated vowel: as decoded
            h[use] = a[use] + m[use] * (d[use] - a[use])
            bad = h[:, 1] <= h[:, 0]
            if overlap:  # FusionSettings.overlap: a fused interval that misses the aligned one is not kept
                bad |= ((h[:, 0] >= a[:, 1]) | (h[:, 1] <= a[:, 0])) & ~moved_here
            h[bad] = a[bad]
            intervals[w] = h
        c = (exts, pulls, cap, mix, cvc_only, overlap, rmode)
        configs.append(c)
        table[c] = paired(intervals)
    print(f"grid of {len(configs)} settings in {time.perf_counter() - t1:.0f} s", file=sys.stderr)

    def cost(h, sel):
        """Mean onset + offset error (ms) over the tokens of ``sel``, a lost token counting
        :data:`LOST_COST_MS` (a setting must not buy its accuracy by losing hard tokens)."""
        e = np.abs(h[sel] - ref[sel]).sum(axis=1) * 1000
        return float(np.where(np.isnan(e), LOST_COST_MS, e).mean())

    def choice_key(c, sel):
        """What a setting is chosen by: its :func:`cost` on the tokens of ``sel``; between
        settings of the same cost (the rule never fired on those tokens), the one with
        ``overlap`` (a fused interval that misses its aligned vowel keeps the aligned one)."""
        return cost(table[c], sel), not c[5]

    def label(c):
        exts, pulls, cap, mix, cvc_only, overlap, rmode = c
        return (f"extend {'+'.join(map(str, exts))}, pulls {pulls}, cap {cap}, mix {mix}, cvc_only {cvc_only}, "
                f"overlap {overlap}, relocate {'off' if rmode == 'off' else f'{relocate} (cap {rmode})'}")

    final = np.full((len(rows), 2), np.nan)
    print(f"\n{len(rows)} CVC tokens; {int(lost.sum())} lost as aligned (no aligned vowel overlaps them)")
    for name in sorted(vowel_models):
        sel = folds_of_row == name
        best = min(configs, key=lambda c: choice_key(c, ~sel))
        final[sel] = table[best][sel]
        print(f"{name}: chosen on the other folds: {label(best)}; its test speakers: "
              f"{fmt(metrics(table[best][sel], ref[sel]))}; lost {int(np.isnan(table[best][sel, 0]).sum())}")
    print(f"aligned only (the vowels as aligned):   {fmt(metrics(aligned, ref))}")
    print(f"transcript-free, same tokens:           {fmt(metrics(np.where(lost[:, None], np.nan, free), ref))}")
    print(f"transcript-free, all tokens:            {fmt(metrics(free, ref))}")
    print(f"FUSED, settings cross-fitted per fold:  {fmt(metrics(final, ref))}; lost {int(np.isnan(final[:, 0]).sum())}")
    for i in np.flatnonzero(np.isnan(final[:, 0])):
        r = rows[i]
        print(f"  lost: {r['file'].parent.name}/{r['file'].name} reference vowel {r['ref'][0]:.3f}-{r['ref'][1]:.3f} s")
    print(f"transcript-free on the fused tokens:    {fmt(metrics(np.where(np.isnan(final[:, :1]), np.nan, free), ref))}")
    ranked = sorted(configs, key=lambda c: choice_key(c, np.ones(len(rows), bool)))
    for c in ranked[:5]:
        print(f"pooled over the 12 speakers (not held out): {label(c)}: {fmt(metrics(table[c], ref))}; "
              f"lost {int(np.isnan(table[c][:, 0]).sum())}")
    sh = DEFAULT_FUSION[kind]
    key = ((sh.extend,), sh.pulls, sh.cap, sh.mix, sh.cvc_only, sh.overlap,
           "off" if sh.relocate is None or sh.relocate != relocate else sh.relocate_cap)
    if key in table:
        print(f"shipped settings {label(key)}: {fmt(metrics(table[key], ref))}; lost {int(np.isnan(table[key][:, 0]).sum())}")
        for variant in sorted({key[:5] + (o, r) for o in (False, True) for r in rmodes} - {key}, key=str):
            if variant in table:  # the shipped settings with overlap and relocation toggled
                print(f"  variant {label(variant)}: {fmt(metrics(table[variant], ref))}; "
                      f"lost {int(np.isnan(table[variant][:, 0]).sum())}")

    if args.end_to_end:
        records = {}
        for fold in folds:
            mine = [w for w in wavs if fold_of.get(w) == fold]
            with tempfile.TemporaryDirectory() as tmp:
                transcript_corpus(mine, Path(tmp), args.phones)
                report = api.measure_vowels([tmp], str(args.vowel_models / fold.name), mode="align", jobs=args.jobs,
                                            alignment_model=str(fold))
                for r in report.records:
                    records.setdefault(r.file, []).append(r)
        hyp, modes, n_lost = np.full((len(rows), 2), np.nan), {}, 0
        for i, r in enumerate(rows):
            w = r["file"]
            best, overlap = None, 0.0
            for rec in records.get(f"{w.parent.name}/{w.name}", []):
                o = min(rec.offset_s, r["ref"][1]) - max(rec.onset_s, r["ref"][0])
                if o > overlap:
                    best, overlap = rec, o
            if best is None:
                n_lost += 1
                continue
            hyp[i] = (best.onset_s, best.offset_s)
            modes[best.mode] = modes.get(best.mode, 0) + 1
        print(f"aligner vowels --mode align, shipped settings, fold models: {fmt(metrics(hyp, ref))}; tokens lost "
              f"{n_lost}; rows by mode {modes}; all rows by mode "
              f"{ {m: sum(x.mode == m for v in records.values() for x in v) for m in ('fused', 'align')} }")

    if args.speed_runs > 0:
        from benchmarks.vowels.bench_vowels_speed import aligned_speed

        aligned_speed(args.data, args.jobs, args.speed_runs, words=not args.phones)
    return 0


if __name__ == "__main__":
    sys.exit(main())
