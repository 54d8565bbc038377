#!/usr/bin/env python
"""Recipe: train and evaluate the vowel duration model on CVC tokens of a TIMIT-layout corpus.

    python recipes/vowels/train.py ../shared/data/timit-sample models/timit-vowels

1. Cut the CVC tokens (:mod:`aligner.vowels.cvc`, SPEC section 5) from every utterance with a ``.phn``.
2. Compute each cut's 5 ms acoustics on the cut's own audio, as a user's CVC recording would be
   analysed (:mod:`aligner.features.vowel_acoustics`; the frame classifier comes from the
   alignment model, ``aligner.api.load_model()`` or ``--alignment-model``).
3. Speaker-disjoint evaluation: the speakers are split into ``--folds`` folds. For each test
   fold, two of the remaining speakers are the validation set; every trainer configuration
   of ``--trainers`` is fitted on the rest with early stopping on the validation cost (orbit
   eq. 38 in frames, ``--tau``), and the configuration with the lowest validation cost is
   scored on the test fold. The test fold is never used for a choice.
   The alignment model's frame classifier was trained on every speaker of the shared sample,
   so its vowel/nasal probabilities are optimistic on the test speakers; with
   ``--held-out-classifier`` each fold trains its own classifier (same hyper-parameters) on
   the utterances of the other speakers and computes every token's acoustics with it, so
   the test speakers are unseen by every part of the model (about 80 s more per fold).
4. The shipped model: the configuration with the lowest validation cost summed over folds is
   refitted on every speaker for the median of its chosen epoch counts, and saved to OUT.

Metrics (test folds pooled, in seconds on the original ``.phn`` times): mean |onset error| and
|offset error| (ms), % onsets within 10 ms and offsets within 20 ms, duration MAE (ms), Pearson
r of durations, and the baseline that puts the vowel in the middle third of the cut.
Corrupted audio: 28 of the 120 shared recordings lost bytes to a newline conversion, which
turns the rest of the file into loud noise; :func:`aligner.io.audio.load_audio` repairs them
(:mod:`aligner.io.sphere_repair`). Tokens whose audio still leaves the range the SPHERE header
records are left out of training and of the main scores (``--keep-corrupted`` keeps them) and
are scored separately; on the shared sample, after the repair, there are none.

The numbers go to stdout and, with ``--json-out``, to a JSON file; the model directory holds
no data (weights, settings and the copied frame classifier).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aligner.api import load_model  # noqa: E402
from aligner.io.audio import load_audio  # noqa: E402
from aligner.io.corpus import find_utterances  # noqa: E402
from aligner.vowels.cvc import cvc_tokens  # noqa: E402
from aligner.errors import AlignerError  # noqa: E402
from aligner.io.sphere_repair import read_sphere_header_file, samples_outside_range  # noqa: E402
from aligner.features.vowel_acoustics import (COLUMN_NAMES, SAMPLE_RATE, VOWEL_COLUMNS,  # noqa: E402
                                              frames_to_seconds, seconds_to_frames, vowel_acoustics)
from aligner.learn import make_trainer, seed_averaged  # noqa: E402
from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir  # noqa: E402
from aligner.phonetics import read_phn  # noqa: E402
from aligner.vowels.task import DEFAULT_WIDTHS, fit_vowel_task, make_vowel_input  # noqa: E402
from aligner.vowels.model import VowelModel, duration_limits  # noqa: E402

EDGE_MARGIN = 1


def configs(names, epochs, widths_options=((2, 5, 10),)):
    """Configurations tried: trainer settings x edge widths (frames); the epoch count is chosen by
    early stopping. ``widths`` is a setting of the feature map, not of the trainer."""
    base = {"epochs": epochs, "seed": 0, "eval_train": False}
    grid = {
        "perceptron": [{"average": True}, {"average": False}],
        "svm": [{"eta0": e, "lam": lam, "average": True} for e in (1.0, 10.0) for lam in (0.0, 1e-3)],
        "orbit": [{"eta0": e, "average": a} for e in (0.01, 0.1) for a in (True, False)],
        "ramp": [{"eta0": e, "average": True, "init_epochs": 2} for e in (1.0, 10.0)],
        "direct_toward": [{"eta0": 1.0, "eps": p, "average": True} for p in (1.0, 10.0)],
        "direct_away": [{"eta0": 1.0, "eps": p, "average": True, "init_epochs": 2} for p in (1.0, 10.0)],
        "probit": [{"eta0": 1.0, "noise_scale": 1.0, "n_samples": 20, "average": True}],
    }
    return [(n, {**base, **g, "widths": list(w)}) for w in widths_options for n in names for g in grid[n]]


def corrupted_samples(path, audio):
    """(n,) bool: samples of ``audio`` (as read by :func:`load_audio`, full scale 1) outside the
    range the SPHERE header records for the original recording, by more than the 768 units a
    newline conversion's lone CR -> LF can move a sample.

    :func:`load_audio` repairs the 28 shared recordings that lost bytes to a newline conversion
    (before the repair they read as loud broadband noise from the first lost byte on), so on the
    shared sample this flags nothing; it guards against damage the repair does not undo.
    """
    header = read_sphere_header_file(path)
    if header is None:
        return np.zeros(len(audio), dtype=bool)
    return samples_outside_range(np.round(np.asarray(audio, np.float64) * 32768), header)


def load_tokens(corpus, classifier):
    """Every CVC token: dict with speaker, name, features (T, 22), y (t_b, t_e), true seconds, cut
    seconds, and ``corrupted`` (its cut holds samples outside the SPHERE header's range)."""
    tokens = []
    for utt in find_utterances(corpus):
        audio = load_audio(utt.audio)
        bad = corrupted_samples(utt.audio, audio)
        starts, ends, labels = read_phn(utt.transcript)
        for k, tok in enumerate(cvc_tokens(starts, ends, labels)):
            cut = audio[tok.cut_start:min(tok.cut_end, len(audio))]
            on_s, off_s = tok.onset_in_cut / SAMPLE_RATE, tok.offset_in_cut / SAMPLE_RATE
            try:
                feats = vowel_acoustics(cut, classifier)
            except AlignerError as exc:
                print(f"skipped {utt.name} token {k}: {exc}", file=sys.stderr)
                continue
            y = np.array(seconds_to_frames(on_s, off_s), dtype=np.int64)
            y[1] = min(y[1], len(feats) - 1)
            if not 0 <= y[0] < y[1]:
                print(f"skipped {utt.name} token {k}: vowel shorter than one frame", file=sys.stderr)
                continue
            tokens.append({"speaker": utt.speaker, "name": f"{utt.name}#{k}:{tok.vowel}", "features": feats,
                           "y": y, "true_s": (on_s, off_s), "cut_s": len(cut) / SAMPLE_RATE,
                           "corrupted": bool(bad[tok.cut_start:tok.cut_end].any())})
    return tokens


def make_input(tok, min_dur, max_dur, columns, widths=DEFAULT_WIDTHS):
    T = len(tok["features"])
    m = EDGE_MARGIN
    return make_vowel_input(tok["features"], min_dur, max_dur, (m, T - 1 - m), (m, T - 1 - m),
                            columns=columns, widths=widths, name=tok["name"])


def metrics(pred_s, true_s):
    """Pooled metrics of predicted vs true (onset_s, offset_s) rows."""
    p, t = np.asarray(pred_s), np.asarray(true_s)
    d_on, d_off = np.abs(p[:, 0] - t[:, 0]) * 1000, np.abs(p[:, 1] - t[:, 1]) * 1000
    dur_p, dur_t = (p[:, 1] - p[:, 0]) * 1000, (t[:, 1] - t[:, 0]) * 1000
    return {"n": int(len(p)), "onset_mae_ms": float(d_on.mean()), "offset_mae_ms": float(d_off.mean()),
            "onset_within_10ms_pct": float(100 * np.mean(d_on <= 10)),
            "offset_within_20ms_pct": float(100 * np.mean(d_off <= 20)),
            "duration_mae_ms": float(np.mean(np.abs(dur_p - dur_t))),
            "duration_r": float(np.corrcoef(dur_p, dur_t)[0, 1]) if dur_p.std() > 0 else float("nan")}


def speaker_folds(speakers, n_folds):
    """Speakers sorted, dealt round-robin into folds (sample: one male, one female per region)."""
    uniq = sorted(set(speakers))
    return [uniq[i::n_folds] for i in range(n_folds)]


def build_trainer(name, params):
    """The trainer; with ``--runs R > 1`` the mean weights of R fits over seeds 0..R-1."""
    return seed_averaged(make_trainer(name, **params), ARGS.runs)


def fit_config(name, params, train, val, columns, epochs=None):
    """Fit one configuration; returns (task, fit result, (min_dur, max_dur, widths), best validation cost)."""
    Ytr = [t["y"] for t in train]
    durs = [y[1] - y[0] for y in Ytr]
    min_dur, max_dur = duration_limits(durs)
    p = dict(params) if epochs is None else {**params, "epochs": epochs}
    widths = tuple(p.pop("widths", DEFAULT_WIDTHS))
    Xtr = [make_input(t, min_dur, max_dur, columns, widths) for t in train]
    task = fit_vowel_task(Xtr, Ytr, tau_on=ARGS.tau, tau_off=ARGS.tau, n_jobs=1, prior_form=ARGS.prior,
                          prior_widen=ARGS.prior_widen)
    if val:
        Xva = [make_input(t, min_dur, max_dur, columns, widths) for t in val]
        res = build_trainer(name, p).fit(task, Xtr, Ytr, Xva, [t["y"] for t in val])
        val_cost = min(r.val_cost for r in res.history)
    else:
        res = build_trainer(name, p).fit(task, Xtr, Ytr)
        val_cost = float("nan")
    return task, res, (min_dur, max_dur, widths), val_cost


def predict(task, w, toks, limits, columns):
    out = []
    for t in toks:
        try:
            y = task.decode(make_input(t, limits[0], limits[1], columns, limits[2]), w)
            out.append(frames_to_seconds(int(y[0]), int(y[1])))
        except AlignerError:  # cut too short for min_dur: middle of the cut
            out.append((t["cut_s"] / 3, 2 * t["cut_s"] / 3))
    return out


ARGS = None


def main(argv=None):
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path, help="TIMIT-layout corpus (audio + .phn)")
    ap.add_argument("out", type=Path, nargs="?", help="model directory to write (e.g. models/timit-vowels)")
    ap.add_argument("--alignment-model", type=Path, help="alignment model whose classifier to use [shipped]")
    ap.add_argument("--trainers", nargs="+", default=["perceptron", "svm", "orbit"])
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--widths", nargs="+", default=["2,5,10", "1,2,5,10"],
                    help="edge-width sets (frames) to choose from on validation, e.g. 2,5,10")
    ap.add_argument("--tau", type=float, default=1.0, help="cost tolerance, frames (5 ms)")
    ap.add_argument("--all-columns", action="store_true", help="use all 22 columns instead of the 16 default")
    ap.add_argument("--prior", choices=("full", "lognormal", "off"), default="off",
                    help="form of the duration prior (aligner.vowels.task.DurationPrior): all four dims, "
                         "one log-normal dim, or none [off: a prior fitted on TIMIT's connected speech "
                         "cuts the long vowels of words read in isolation short]")
    ap.add_argument("--prior-widen", type=float, default=1.0,
                    help="multiply the prior's (log) std by this: TIMIT's connected-speech vowels are "
                         "shorter than those of words read in isolation [1]")
    ap.add_argument("--runs", type=int, default=1,
                    help="fits per configuration over seeds 0..R-1 whose weights are averaged "
                         "(aligner.learn.SeedAveragedTrainer), in the folds and for the shipped model [1]")
    ap.add_argument("--keep-corrupted", action="store_true",
                    help="train and score on tokens whose audio exceeds the SPHERE header's sample range too")
    ap.add_argument("--held-out-classifier", action="store_true",
                    help="score each test fold with a frame classifier trained without its speakers "
                         "(about 80 s more per fold); default: the alignment model's classifier, which "
                         "heard every speaker of the shared sample")
    ap.add_argument("--json-out", type=Path)
    ARGS = args = ap.parse_args(argv)
    columns = tuple(range(len(COLUMN_NAMES))) if args.all_columns else VOWEL_COLUMNS

    t0 = time.perf_counter()
    align_model = load_model(args.alignment_model)
    all_tokens = load_tokens(args.corpus, align_model.classifier)
    feat_s = time.perf_counter() - t0
    n_bad = sum(t["corrupted"] for t in all_tokens)
    tokens = all_tokens if args.keep_corrupted else [t for t in all_tokens if not t["corrupted"]]
    speakers = [t["speaker"] for t in tokens]
    print(f"{len(all_tokens)} tokens from {len(set(speakers))} speakers, {n_bad} in corrupted audio "
          f"({'kept' if args.keep_corrupted else 'left out of training and of the main scores'}); "
          f"features {feat_s:.1f} s", flush=True)

    folds = speaker_folds(speakers, args.folds)
    cands = configs(args.trainers, args.epochs, [tuple(int(v) for v in w.split(",")) for w in args.widths])
    val_total = np.zeros(len(cands))
    chosen_epochs = [[] for _ in cands]
    per_trainer_pred = {n: {} for n in args.trainers}
    pred_chosen, truth, baseline, chosen_names = {}, {}, {}, []
    utterance_data = None
    for k, test_spk in enumerate(folds):
        fold_all, fold_tokens = all_tokens, tokens
        if args.held_out_classifier:
            # the frame classifier of this fold never heard the test speakers
            from aligner.alignment.training import fit_classifier, load_utterances

            if utterance_data is None:
                utterance_data = load_utterances(find_utterances(args.corpus))
            t1 = time.perf_counter()
            clf = fit_classifier([d for d in utterance_data if d.speaker not in test_spk],
                                 align_model.classifier.get_params())
            fold_all = load_tokens(args.corpus, clf)
            fold_tokens = fold_all if args.keep_corrupted else [t for t in fold_all if not t["corrupted"]]
            print(f"fold {k + 1}: classifier without {','.join(test_spk)} trained and applied in "
                  f"{time.perf_counter() - t1:.0f} s", flush=True)
        rest = sorted(set(speakers) - set(test_spk))
        val_spk = rest[k % len(rest)::max(len(rest) // 2, 1)][:2]
        train = [t for t in fold_tokens if t["speaker"] in rest and t["speaker"] not in val_spk]
        val = [t for t in fold_tokens if t["speaker"] in val_spk]
        test = [t for t in fold_all if t["speaker"] in test_spk]
        best = None
        best_per_trainer = {}
        for i, (name, params) in enumerate(cands):
            try:
                task, res, limits, vc = fit_config(name, params, train, val, columns)
            except FloatingPointError:
                vc = float("inf")
                val_total[i] += vc
                continue
            val_total[i] += vc
            chosen_epochs[i].append(res.best_epoch)
            if best is None or vc < best[0]:
                best = (vc, i, task, res.w, limits)
            if name not in best_per_trainer or vc < best_per_trainer[name][0]:
                best_per_trainer[name] = (vc, task, res.w, limits)
        vc, i, task, w, limits = best
        chosen_names.append(f"{cands[i][0]} {json.dumps({k2: v for k2, v in cands[i][1].items() if k2 not in ('epochs', 'seed', 'eval_train')})}")
        for t, p in zip(test, predict(task, w, test, limits, columns)):
            pred_chosen[t["name"]] = p
            truth[t["name"]] = t["true_s"]
            baseline[t["name"]] = (t["cut_s"] / 3, 2 * t["cut_s"] / 3)
        for name, (_, tk, wt, lim) in best_per_trainer.items():
            for t, p in zip(test, predict(tk, wt, test, lim, columns)):
                per_trainer_pred[name][t["name"]] = p
        print(f"fold {k + 1}/{len(folds)} test {','.join(test_spk)} val {','.join(val_spk)}: "
              f"chose {chosen_names[-1]} (val cost {vc:.2f} frames)", flush=True)

    clean = {t["name"] for t in tokens}
    names = sorted(n for n in truth if n in clean)
    true_rows = [truth[n] for n in names]
    everything = sorted(truth)
    report = {"seed_runs_averaged": args.runs, "held_out_classifier": bool(args.held_out_classifier), "n_tokens": len(all_tokens), "n_corrupted": n_bad, "n_scored": len(names),
              "speakers": sorted(set(speakers)), "folds": folds,
              "all_tokens_including_corrupted": {
                  "chosen": metrics([pred_chosen[n] for n in everything], [truth[n] for n in everything]),
                  "middle_third_baseline": metrics([baseline[n] for n in everything],
                                                   [truth[n] for n in everything])},
              "columns": [COLUMN_NAMES[c] for c in columns], "tau_frames": args.tau,
              "chosen_per_fold": chosen_names,
              "chosen": metrics([pred_chosen[n] for n in names], true_rows),
              "middle_third_baseline": metrics([baseline[n] for n in names], true_rows),
              "per_trainer": {n: metrics([per_trainer_pred[n][m] for m in names], true_rows)
                              for n in args.trainers if all(m in per_trainer_pred[n] for m in names)}}
    fmt = "{:<28} {:>6} {:>9} {:>10} {:>8} {:>9} {:>7} {:>6}"
    print(fmt.format("speaker-disjoint folds", "n", "onset ms", "offset ms", "on<10%", "off<20%", "dur ms", "r"))
    rows = [("chosen on validation", report["chosen"])] + [(f"  best {n}", m) for n, m in report["per_trainer"].items()]
    rows.append(("middle-third baseline", report["middle_third_baseline"]))
    if n_bad and not args.keep_corrupted:
        rows.append(("chosen, incl. corrupted", report["all_tokens_including_corrupted"]["chosen"]))
        rows.append(("baseline, incl. corrupted", report["all_tokens_including_corrupted"]["middle_third_baseline"]))
    for label, m in rows:
        print(fmt.format(label, m["n"], f"{m['onset_mae_ms']:.1f}", f"{m['offset_mae_ms']:.1f}",
                         f"{m['onset_within_10ms_pct']:.0f}", f"{m['offset_within_20ms_pct']:.0f}",
                         f"{m['duration_mae_ms']:.1f}", f"{m['duration_r']:.3f}"))

    if args.out is not None:
        i = int(np.argmin(val_total))
        name, params = cands[i]
        epochs = int(np.median(chosen_epochs[i])) if chosen_epochs[i] else args.epochs
        task, res, limits, _ = fit_config(name, params, tokens, None, columns, epochs=max(epochs, 1))
        clf_path = Path(align_model_dir(args.alignment_model)) / "classifier.npz"
        training = {"corpus": str(args.corpus), "n_tokens": len(tokens), "n_corrupted_left_out": 0 if args.keep_corrupted else n_bad, "speakers": sorted(set(speakers)),
                    "trainer": name, "trainer_params": {k2: v for k2, v in params.items() if k2 not in ("epochs", "widths")},
                    "widths": list(limits[2]),
                    "epochs": epochs, "tau_frames": args.tau, "seed_runs_averaged": args.runs,
                    "duration_prior": {"form": args.prior, "widen": args.prior_widen},
                    "classifier_source": {"path": _repo_relative(clf_path),
                                          "sha256": hashlib.sha256(clf_path.read_bytes()).hexdigest()
                                          if clf_path.is_file() else None},
                    "cv": {k2: report[k2] for k2 in ("held_out_classifier", "chosen", "middle_third_baseline", "chosen_per_fold")}}
        model = VowelModel(align_model.classifier, res.w, columns, limits[0], limits[1], task.prior, task.center,
                           task.scale, widths=limits[2], edge_margin=EDGE_MARGIN, tau_on=args.tau, tau_off=args.tau, training=training)
        model.save(args.out)
        report["shipped"] = {"trainer": name, "params": training["trainer_params"], "epochs": epochs,
                             "widths": list(limits[2]),
                             "min_dur": limits[0], "max_dur": limits[1]}
        print(f"wrote {args.out}: {name} {training['trainer_params']}, widths {list(limits[2])}, {epochs} epochs, "
              f"durations {limits[0]}-{limits[1]} frames")
    print(f"total {time.perf_counter() - t0:.1f} s")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1) + "\n")


def _repo_relative(path: Path) -> str:
    """``path`` relative to the repository when inside it (no machine paths in shipped manifests)."""
    repo = Path(__file__).resolve().parents[2]
    try:
        return str(Path(path).resolve().relative_to(repo))
    except ValueError:
        return str(path)


def align_model_dir(path):
    return path if path is not None else default_model_dir(ALIGNMENT_KIND)


if __name__ == "__main__":
    main()
