#!/usr/bin/env python
"""Every trainer of the learning core on the peer's (AutoVowelDuration) vowel features.

Data: ``../shared/data/vowel-tutorial`` (the peer's own front-end features, 22 columns per
5 ms frame, and its manual labels), with the peer's split: 20 training examples (all of
speaker C01) and 10 test examples (C01B1 and nine other speakers). The vowel task
(:mod:`aligner.vowels.task`) uses the peer's columns 0-10, 13, 16-19 (116 dims) and the
peer's search space (onsets in [11, T-10], durations 9-91 frames).

Protocol. For each trainer, hyper-parameters (including the number of epochs) are chosen
by K-fold cross-validation inside the 20 training examples: in every fold the duration
prior and the feature standardisation are fitted on the fold's training part only, the
trainer runs ``--epochs`` epochs and the held-out part's mean cost is recorded after every
epoch; the (design, configuration, epoch count) with the lowest mean held-out cost wins
(designs, :data:`DESIGNS`: the duration prior's form - full four dims, one log-normal dim
with its log std doubled, or off - each with or without per-cut z-scoring of the acoustic
columns; 6 in all, chosen per trainer). The
trainer is then refitted on all 20 examples for that many epochs (no validation set, the
last weights are kept) and scored once on the 10 test examples. The test split is never
used for any choice.

Options beyond the protocol above. ``--columns no-nasal`` leaves the nasal probability
(column 10) out of the map (15 columns, 109 dims). ``--crops K`` adds K shorter cuts of each
training file to training (:func:`benchmarks.vowels.avd.random_avd_crops`: the peer's
front end z-scores or [0, 1]-scales some columns over each recording, and the test files
are 225-440 frames long while every training file is 440, so a cut with those columns
normalised again over it is what the front end would give for a shorter recording); CV
validates on the held-out files plus ``--val-crops`` cuts each (default K); the cuts of an
example stay on its side of every fold. ``--cv-repeats R`` repeats the K-fold split with R
seeds.

Reported per trainer (test split): mean |onset error| and |offset error| (ms), % of
onsets within 10 ms and offsets within 20 ms, duration MAE (ms), Pearson r between
predicted and manual durations, mean task cost (orbit eq. 38, frames, with
``--tau-on/--tau-off``), the CV cost that chose it, and every test example's onset and
offset error. The peer's published rows (its back end run on the same 10 test examples)
are printed beside ours. The whole-recording example ``wav/ex_bad.{data,labels}`` (20
columns: the peer's selection fits) is decoded by every trainer's final model too.

``--order-seeds K`` refits each trainer's chosen setting with seeds ``seed .. seed+K-1`` (one
run each, only the example order differs) and reports every fit's test errors and those of
the mean of their weights. ``--runs R`` fits every setting R times (seeds ``seed .. seed+R-1``, other example orders)
and averages the weights (:class:`aligner.learn.SeedAveragedTrainer`), in CV and in the
final fit: R times the time.

Measured figures, with the CV seeds and ``--runs`` they depend on, are in docs/results.md
("On the peer's own features"), with the finding of a one-off check of where the energy
rises relative to the manual onset for the training speaker and for the nine other test
speakers, whose onsets every model places early.

    python -m benchmarks.vowels.bench_vowels_peer               # about 40 minutes on a loaded 2-core machine
    python -m benchmarks.vowels.bench_vowels_peer --columns no-nasal   # docs/results.md's no-nasal column
    python -m benchmarks.vowels.bench_vowels_peer --designs full   # one design: about 5 minutes
    python -m benchmarks.vowels.bench_vowels_peer --columns no-nasal --trainers svm perceptron --runs 5  # 10 min
    python -m benchmarks.vowels.bench_vowels_peer --json          # or --json-out FILE beside the tables
"""

from __future__ import annotations

import os

# small matrix products: BLAS threads only fight the decoder (and other jobs) for cores
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from aligner.learn import TRAINERS, ValidationSearch, make_trainer, seed_averaged  # noqa: E402
from aligner.vowels.task import fit_vowel_task, make_vowel_input  # noqa: E402
from benchmarks.vowels.avd import (PEER_COLUMNS, PEER_COLUMNS_NO_NASAL, PEER_SEARCH,  # noqa: E402
                            peer_ranges, random_avd_crops, read_avd_example, read_avd_list)

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "vowel-tutorial"
FRAME_MS = 5.0

#: the peer's own results on the 10 test examples (../shared/data/README.md)
PEER_ROWS = {
    "peer: passive-aggressive (shipped)": {"onset_mae_ms": 6.5, "offset_mae_ms": 39.5, "duration_r": 0.876},
    "peer: direct loss (best shipped, probably trained on the test speakers)":
        {"onset_mae_ms": 2.5, "offset_mae_ms": 9.5, "duration_r": 0.888},
}


#: feature-map / prior designs the CV chooses among (per trainer, on the training examples only):
#: the duration prior's form and widening (:class:`~aligner.vowels.task.DurationPrior`) and
#: per-cut z-scoring of the acoustic columns (``make_vowel_input(cut_norm=True)``)
DESIGNS = {
    "full": {"prior_form": "full", "prior_widen": 1.0, "cut_norm": False},
    "full+cutnorm": {"prior_form": "full", "prior_widen": 1.0, "cut_norm": True},
    "lognormal_x2": {"prior_form": "lognormal", "prior_widen": 2.0, "cut_norm": False},
    "lognormal_x2+cutnorm": {"prior_form": "lognormal", "prior_widen": 2.0, "cut_norm": True},
    "off": {"prior_form": "off", "prior_widen": 1.0, "cut_norm": False},
    "off+cutnorm": {"prior_form": "off", "prior_widen": 1.0, "cut_norm": True},
}


#: the acoustic columns the feature map uses (``--columns``)
COLUMN_SETS = {"peer": PEER_COLUMNS, "no-nasal": PEER_COLUMNS_NO_NASAL}


def _input(feats, name, cut_norm, columns):
    return make_vowel_input(feats, PEER_SEARCH["min_dur"], PEER_SEARCH["max_dur"], peer_ranges(len(feats)),
                            columns=columns, name=name, cut_norm=cut_norm)


def load(pairs, name_prefix="", cut_norm=False, columns=PEER_COLUMNS):
    X, Y, names = [], [], []
    for data, labels in pairs:
        feats, y = read_avd_example(data, labels)
        X.append(_input(feats, str(data), cut_norm, columns))
        Y.append(np.array(y, dtype=np.int64))
        names.append(name_prefix + Path(data).stem)
    return X, Y, names


def load_groups(pairs, n_crops, seed, cut_norm=False, columns=PEER_COLUMNS):
    """Per training example, ``[(x, y), ...]``: the file itself, then ``n_crops`` shorter cuts
    of it (:func:`~benchmarks.vowels.avd.random_avd_crops`, seeded per example by ``seed``)."""
    groups = []
    for i, (data, labels) in enumerate(pairs):
        feats, y = read_avd_example(data, labels)
        cuts = [(feats, y)] + random_avd_crops(feats, y, n_crops, np.random.default_rng([seed, i]))
        groups.append([(_input(f, f"{data}#{j}" if j else str(data), cut_norm, columns),
                        np.array(yy, dtype=np.int64)) for j, (f, yy) in enumerate(cuts)])
    return groups


def flatten(groups, n_crops):
    """``(X, Y)`` of each group's file and its first ``n_crops`` cuts."""
    items = [item for g in groups for item in g[:1 + n_crops]]
    return [x for x, _ in items], [y for _, y in items]


def param_grid(name: str, epochs: int, probit_samples: int, seed: int = 0) -> list[dict]:
    """Hyper-parameter candidates of one trainer (the epoch count is chosen by CV on top)."""
    base = {"epochs": epochs, "seed": seed, "eval_train": False}
    avg = (False, True)
    sch = ("invsqrt", "constant")
    if name == "perceptron":
        grid = [{"average": a, "schedule": s} for a, s in itertools.product(avg, sch)]
    elif name in ("svm", "ramp"):  # costs are in frames (tens): large steps
        grid = [{"eta0": e, "lam": l, "average": a, "schedule": s}
                for e, l, a, s in itertools.product((1.0, 10.0, 100.0), (0.0, 1e-3, 1e-2), avg, sch)
                if e * l < 1.0]
    elif name in ("direct_toward", "direct_away"):
        grid = [{"eta0": e, "eps": p, "average": a, "schedule": s}
                for e, p, a, s in itertools.product((0.1, 1.0, 10.0), (1.0, 10.0, 100.0), avg, sch)]
    elif name == "probit":  # N decodes per update: a smaller grid, averaging on
        grid = [{"eta0": e, "noise_scale": n, "average": True, "schedule": s, "n_samples": probit_samples}
                for e, n, s in itertools.product((0.1, 1.0, 10.0), (0.1, 1.0), sch)]
    elif name == "orbit":  # large steps saturate exp(-(w.u)^2/2): small ones
        grid = [{"eta0": e, "lam": l, "average": a, "schedule": s}
                for e, l, a, s in itertools.product((0.001, 0.01, 0.03, 0.1), (0.0, 1e-3), avg, sch)]
    else:
        raise ValueError(name)
    return [{**base, **g} for g in grid]


def make_task(X, Y, args, design="full"):
    d = DESIGNS[design]
    return fit_vowel_task(X, Y, tau_on=args.tau_on, tau_off=args.tau_off, n_jobs=args.jobs, seed=0,
                          prior_form=d["prior_form"], prior_widen=d["prior_widen"])


def make_folds(groups, args, design):
    """The CV folds of one design: (task fitted on the fold's training part, Xtr, Ytr, Xva, Yva).

    ``groups``: per training example its file and cuts (:func:`load_groups`); a fold trains on
    the other examples' files and ``--crops`` cuts each, and validates on the held-out files
    and ``--val-crops`` cuts each. ``--cv-repeats`` repeats the K-fold split with other seeds.
    """
    n = len(groups)
    fold_tasks = []
    for rep in range(args.cv_repeats):
        for held in np.array_split(np.random.default_rng(args.seed + rep).permutation(n), args.folds):
            keep = np.setdiff1d(np.arange(n), held)
            Xtr, Ytr = flatten([groups[i] for i in keep], args.crops)
            Xva, Yva = flatten([groups[i] for i in held], args.val_crops)
            fold_tasks.append((make_task(Xtr, Ytr, args, design), Xtr, Ytr, Xva, Yva))
    return fold_tasks


def build_trainer(name, params, args):
    """The trainer of ``name`` with ``params``; with ``--runs R > 1`` the mean of R seeds' fits."""
    return seed_averaged(make_trainer(name, **params), args.runs)


def cross_validate(name, fold_tasks, args):
    """Choose (params, epochs) by K-fold CV inside the training examples (one design's folds).

    Every candidate is fitted on every fold for ``--epochs`` epochs; its held-out cost after each
    epoch is averaged over the folds, and the (candidate, epoch count) with the lowest mean wins
    (:class:`aligner.learn.ValidationSearch` with ``select_epochs``; a fit whose weights blow up
    counts as an infinite cost). Returns ``(cv_cost, params, epochs)``.
    """
    grid = param_grid(name, args.epochs, args.probit_samples, args.seed)
    search = ValidationSearch([build_trainer(name, params, args) for params in grid], select_epochs=True,
                              error_score=np.inf).fit_splits(fold_tasks)
    return search.best_score_, grid[search.best_index_], search.candidate_results_[search.best_index_]["epochs"]


def evaluate(task, w, X, Y):
    pred = np.array([task.decode(x, w) for x in X])
    true = np.array(Y)
    d_on = np.abs(pred[:, 0] - true[:, 0])
    d_off = np.abs(pred[:, 1] - true[:, 1])
    dur_p = (pred[:, 1] - pred[:, 0]) * FRAME_MS
    dur_t = (true[:, 1] - true[:, 0]) * FRAME_MS
    r = float(np.corrcoef(dur_p, dur_t)[0, 1]) if np.std(dur_p) > 0 else float("nan")
    return {
        "onset_mae_ms": float(d_on.mean() * FRAME_MS),
        "offset_mae_ms": float(d_off.mean() * FRAME_MS),
        "onset_within_10ms_pct": float(100 * np.mean(d_on * FRAME_MS <= 10)),
        "offset_within_20ms_pct": float(100 * np.mean(d_off * FRAME_MS <= 20)),
        "duration_mae_ms": float(np.mean(np.abs(dur_p - dur_t))),
        "duration_r": r,
        "mean_cost": float(np.mean([task.cost(y, p) for y, p in zip(true, pred)])),
        "predictions": pred.tolist(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the vowel-tutorial directory")
    ap.add_argument("--trainers", nargs="+", default=list(TRAINERS), choices=list(TRAINERS))
    ap.add_argument("--folds", type=int, default=5, help="CV folds inside the 20 training examples")
    ap.add_argument("--epochs", type=int, default=50, help="maximum epochs (CV picks the count)")
    ap.add_argument("--probit-samples", type=int, default=50)
    ap.add_argument("--tau-on", type=float, default=0.0, help="cost tolerance at the onset, frames")
    ap.add_argument("--tau-off", type=float, default=0.0, help="cost tolerance at the offset, frames")
    ap.add_argument("--jobs", type=int, default=1, help="threads for probit's decode_many")
    ap.add_argument("--seed", type=int, default=0, help="seeds the CV folds and the trainers")
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS),
                    help="feature/prior designs; CV inside the training examples picks one per trainer")
    ap.add_argument("--columns", choices=list(COLUMN_SETS), default="peer",
                    help="acoustic columns of the feature map: the peer's 16, or without the nasal probability")
    ap.add_argument("--crops", type=int, default=0,
                    help="shorter cuts of each training file added to training (front-end normalisation redone)")
    ap.add_argument("--val-crops", type=int, default=None,
                    help="cuts of each held-out file added to CV validation (default: --crops)")
    ap.add_argument("--cv-repeats", type=int, default=1, help="repetitions of the K-fold split")
    ap.add_argument("--runs", type=int, default=1,
                    help="fits per trainer setting, seeds seed..seed+R-1, whose weights are averaged "
                         "(in CV and in the final fit)")
    ap.add_argument("--order-seeds", type=int, default=0,
                    help="also refit each trainer's chosen setting (one run) with seeds seed..seed+K-1 "
                         "and report every fit's test errors and those of their mean weights")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    ap.add_argument("--json-out", type=Path, help="also write the JSON object to this file")
    args = ap.parse_args(argv)
    if args.val_crops is None:
        args.val_crops = args.crops
    columns = COLUMN_SETS[args.columns]

    if not args.data.is_dir():
        sys.exit(f"vowel-tutorial data not found at {args.data} (pass --data)")
    # per design: training inputs, CV folds (test inputs are built only for the chosen designs)
    train_pairs = read_avd_list(args.data / "train.txt")
    data = {}
    for design in args.designs:
        groups = load_groups(train_pairs, max(args.crops, args.val_crops), args.seed,
                             cut_norm=DESIGNS[design]["cut_norm"], columns=columns)
        X, Y = flatten(groups, args.crops)
        data[design] = (X, Y, make_folds(groups, args, design))

    results = {}
    for name in args.trainers:
        t0 = time.perf_counter()
        cv_by_design = {}
        best = None
        for design in args.designs:
            cv_cost, params, epochs = cross_validate(name, data[design][2], args)
            cv_by_design[design] = cv_cost
            if best is None or cv_cost < best[0]:
                best = (cv_cost, params, epochs, design)
        cv_cost, params, epochs, design = best
        cv_seconds = time.perf_counter() - t0
        cut_norm = DESIGNS[design]["cut_norm"]
        X, Y, _ = data[design]
        task = make_task(X, Y, args, design)
        Xt, Yt, test_names = load(read_avd_list(args.data / "test.txt"), cut_norm=cut_norm, columns=columns)
        bad_path = args.data / "wav" / "ex_bad.data"
        ex_bad = None
        if bad_path.is_file():
            Xb, Yb, _ = load([(bad_path, args.data / "wav" / "ex_bad.labels")], cut_norm=cut_norm,
                             columns=columns)
            ex_bad = (Xb, Yb)
        final = build_trainer(name, {**params, "epochs": epochs}, args)
        fit = final.fit(task, X, Y)
        row = evaluate(task, fit.w_, Xt, Yt)
        row.update({
            "cv_cost": cv_cost, "design": design, "cv_cost_by_design": cv_by_design, "epochs": epochs,
            "params": {k: v for k, v in params.items() if k not in ("epochs", "seed", "eval_train")},
            "seed": args.seed,
            "decodes_per_update": fit.decodes_per_update_, "fit_seconds": fit.fit_seconds_,
            "cv_seconds": cv_seconds, "train_cost": task.mean_cost(X, Y, fit.w_),
        })
        if args.order_seeds:
            # the chosen setting refitted with other example orders: each one's test errors, and the mean weights'
            ws = [make_trainer(name, **{**params, "epochs": epochs, "seed": args.seed + k}).fit(task, X, Y).w_
                  for k in range(args.order_seeds)]
            each = [evaluate(task, w, Xt, Yt) for w in ws]
            mean = evaluate(task, np.mean(ws, axis=0), Xt, Yt)
            row["order_seeds"] = {
                "each": [{k: r[k] for k in ("onset_mae_ms", "offset_mae_ms", "duration_r")} for r in each],
                "mean_weights": {k: mean[k] for k in ("onset_mae_ms", "offset_mae_ms", "duration_r")}}
        if ex_bad is not None:
            pb = task.decode(ex_bad[0][0], fit.w_)
            row["ex_bad"] = {"pred": pb.tolist(), "true": ex_bad[1][0].tolist(),
                             "onset_err_ms": float(abs(pb[0] - ex_bad[1][0][0]) * FRAME_MS),
                             "offset_err_ms": float(abs(pb[1] - ex_bad[1][0][1]) * FRAME_MS)}
        results[name] = row
        if not args.json:
            print(f"# {name}: cv cost {cv_cost:.2f} frames, design {design} "
                  f"(CV by design: {', '.join(f'{k} {v:.2f}' for k, v in cv_by_design.items())}), "
                  f"{epochs} epochs, {row['params']} "
                  f"({cv_seconds:.0f} s)", file=sys.stderr)

    # decode speed of one cut (T = 440 frames, the peer's search space)
    x0 = X[0]
    wv = np.random.default_rng(0).normal(size=task.n_features)
    task.decode(x0, wv)
    t0 = time.perf_counter()
    reps = 200
    for _ in range(reps):
        task.decode(x0, wv)
    speed = {"frames": x0.n_frames, "candidates": x0.n_candidates,
             "ms_per_decode": (time.perf_counter() - t0) / reps * 1000}

    out = {"test_examples": test_names, "decode_speed": speed, "trainers": results,
           "peer": PEER_ROWS, "tau_on": args.tau_on, "tau_off": args.tau_off,
           "folds": args.folds, "cv_repeats": args.cv_repeats, "runs": args.runs, "max_epochs": args.epochs,
           "columns": args.columns, "crops": args.crops, "val_crops": args.val_crops,
           "designs": {k: DESIGNS[k] for k in args.designs}}
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(out, indent=1))
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print("| trainer | onset MAE ms | offset MAE ms | onsets <=10 ms % | offsets <=20 ms % "
          "| dur MAE ms | dur r | test cost | CV cost | design (by CV) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in PEER_ROWS.items():
        print(f"| {name} | {r['onset_mae_ms']:.1f} | {r['offset_mae_ms']:.1f} | - | - | - "
              f"| {r['duration_r']:.3f} | - | - | - |")
    for name, r in results.items():
        print(f"| {name} | {r['onset_mae_ms']:.1f} | {r['offset_mae_ms']:.1f} "
              f"| {r['onset_within_10ms_pct']:.0f} | {r['offset_within_20ms_pct']:.0f} "
              f"| {r['duration_mae_ms']:.1f} | {r['duration_r']:.3f} | {r['mean_cost']:.2f} "
              f"| {r['cv_cost']:.2f} | {r['design']} |")
    print(f"\nTest cost: orbit eq. 38 in frames (tau_on = {args.tau_on:g}, tau_off = {args.tau_off:g}); "
          f"columns {args.columns}; {args.crops} training cuts per file ({args.val_crops} in CV validation); "
          f"CV: {args.cv_repeats} x {args.folds} folds inside the 20 training examples, up to {args.epochs} epochs; "
          f"weights averaged over {args.runs} seed(s) per fit; "
          f"{len(args.designs)} designs compared ({', '.join(args.designs)}).")
    Yt_arr = np.array(Yt)
    print("\nPer test example, predicted minus manual onset / offset (ms):")
    print("| trainer | " + " | ".join(test_names) + " |")
    print("|---|" + "---|" * len(test_names))
    for name, r in results.items():
        d = (np.array(r["predictions"]) - Yt_arr) * FRAME_MS
        print(f"| {name} | " + " | ".join(f"{a:+.0f} / {b:+.0f}" for a, b in d) + " |")
    for name, r in results.items():
        if "order_seeds" in r:
            o = r["order_seeds"]
            print(f"\n{name}, chosen setting refitted with {len(o['each'])} example orders, onset / offset MAE ms: "
                  + ", ".join(f"{e['onset_mae_ms']:.1f} / {e['offset_mae_ms']:.1f}" for e in o["each"])
                  + f"; their mean weights: {o['mean_weights']['onset_mae_ms']:.1f} / "
                  f"{o['mean_weights']['offset_mae_ms']:.1f}, r {o['mean_weights']['duration_r']:.3f}")
    if ex_bad is not None:
        print(f"\nwav/ex_bad (whole recording, 20 columns, manual {ex_bad[1][0].tolist()}):")
        for name, r in results.items():
            e = r["ex_bad"]
            print(f"- {name}: predicted {e['pred']} (onset error {e['onset_err_ms']:.0f} ms, "
                  f"offset error {e['offset_err_ms']:.0f} ms)")
    print(f"\nDecode: {speed['ms_per_decode']:.3f} ms per cut of {speed['frames']} frames "
          f"({speed['candidates']} candidates).")


if __name__ == "__main__":
    main()
