#!/usr/bin/env python
"""Benchmark every trainer of the learning core on a cost-sensitive multiclass problem.

scikit-learn's bundled ``load_digits`` (1797 8x8 images, no download), standardised and
PCA-reduced on the training part, with a constant bias feature; a fixed stratified
60/20/20 train/validation/test split. For each trainer, hyper-parameters are chosen
on the validation split (:class:`aligner.learn.ValidationSearch`: lowest mean validation
cost, first in grid order on ties; early stopping also on validation), then the test split
is scored once with the chosen fit. Two settings, as the orbit paper's
MNIST tables 1 and 2:

  (a) zero_one: the 0/1 cost;
  (b) random_cost: 10 random cost matrices (0 on the diagonal, 1 or 2 elsewhere),
      hyper-parameters chosen per matrix, figures averaged over the 10.

Prints a Markdown table (or one JSON object with ``--json``):
``{"zero_one": {TRAINER: {"error", "cost", "decodes_per_update", "seconds"}}, "random_cost": {...}}``.
``seconds`` is the wall time of the selected fit (updates and per-epoch evaluation).

    python -m benchmarks.alignment.bench_trainers            # ~10 minutes on 2 cores
    python -m benchmarks.alignment.bench_trainers --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from aligner.learn import TRAINERS, MulticlassTask, ValidationSearch, make_trainer, random_cost_matrix

N_MATRICES = 10


def load_split(n_components: int, seed: int):
    """Digits, standardised and PCA-reduced (fitted on train only), plus a bias column."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X_rest, X_test, y_rest, y_test = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
    X_train, X_val, y_train, y_val = train_test_split(
        X_rest, y_rest, test_size=0.25, random_state=seed, stratify=y_rest)
    scaler = StandardScaler().fit(X_train)
    pca = PCA(n_components=n_components, random_state=seed).fit(scaler.transform(X_train))

    def transform(A):
        Z = pca.transform(scaler.transform(A))
        return np.hstack([Z, np.ones((len(Z), 1))])

    return {
        "train": (transform(X_train), y_train),
        "val": (transform(X_val), y_val),
        "test": (transform(X_test), y_test),
    }


def param_grid(name: str, probit_samples: int, epochs: int):
    """Hyper-parameter candidates for one trainer, as a list of keyword dicts."""
    base = {"epochs": epochs, "seed": 0}
    averages = (False, True)
    schedules = ("invsqrt", "constant")
    if name == "perceptron":  # scale-free from w = 0 with a constant step: only averaging matters
        grids = [{"average": a} for a in averages]
    elif name in ("direct_toward", "direct_away"):
        grids = [{"eta0": e, "eps": p, "average": a, "schedule": s}
                 for e, p, a, s in itertools.product((0.01, 0.1, 1.0), (0.1, 1.0, 10.0), averages, schedules)]
    elif name == "probit":  # N decodes per update: constant steps only, but the noise scale varies
        grids = [{"eta0": e, "noise_scale": n, "average": a, "schedule": "constant",
                  "n_samples": probit_samples}
                 for e, n, a in itertools.product((0.1, 1.0, 10.0), (0.1, 1.0), averages)]
    else:  # svm, ramp, orbit
        grids = [{"eta0": e, "lam": l, "average": a, "schedule": s}
                 for e, l, a, s in itertools.product((0.01, 0.1, 1.0), (0.0, 1e-3), averages, schedules)]
    return [dict(base, **g) for g in grids]


def run_one(job):
    """Choose one (setting, trainer)'s candidate on validation; return its validation and test figures."""
    setting, cost_matrix, name, grid, data = job
    X_tr, y_tr = data["train"]
    X_va, y_va = data["val"]
    X_te, y_te = data["test"]
    task = MulticlassTask(10, X_tr.shape[1], cost_matrix)
    search = ValidationSearch([make_trainer(name, **params) for params in grid]).fit(
        task, list(X_tr), list(y_tr), list(X_va), list(y_va))
    best = search.best_estimator_
    pred = task.predict(X_te, best.w_)
    return {
        "setting": setting, "trainer": name, "params": grid[search.best_index_],
        "val_cost": search.best_score_,
        "error": float(np.mean(pred != y_te)),
        "cost": task.mean_cost(X_te, y_te, best.w_),
        "decodes_per_update": best.decodes_per_update_,
        "seconds": best.fit_seconds_,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--pca", type=int, default=30, help="PCA dimensions")
    parser.add_argument("--probit-samples", type=int, default=50, help="perturbations per probit update")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split")
    parser.add_argument("--trainers", default=",".join(TRAINERS), help="comma-separated subset")
    args = parser.parse_args(argv)

    data = load_split(args.pca, args.seed)
    settings = [("zero_one", 0, None)]
    settings += [("random_cost", i, random_cost_matrix(10, np.random.default_rng(1000 + i)))
                 for i in range(N_MATRICES)]
    names = [n.strip() for n in args.trainers.split(",") if n.strip()]
    jobs = [((kind, idx), matrix, name, param_grid(name, args.probit_samples, args.epochs), data)
            for kind, idx, matrix in settings
            for name in names]
    n_fits = sum(len(job[3]) for job in jobs)

    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(run_one, jobs))
    wall = time.perf_counter() - start
    best = {(r["setting"], r["trainer"]): r for r in results}

    report = {"zero_one": {}, "random_cost": {}}
    chosen = {"zero_one": {}, "random_cost": {}}
    for name in names:
        rows = {kind: [best[((kind, idx), name)] for k2, idx, _ in settings if k2 == kind]
                for kind in report}
        for kind, picked in rows.items():
            report[kind][name] = {
                field: float(np.mean([p[field] for p in picked]))
                for field in ("error", "cost", "decodes_per_update", "seconds")
            }
            chosen[kind][name] = [p["params"] for p in picked]

    if args.json:
        print(json.dumps(report))
        return
    print(f"digits: {len(data['train'][1])} train / {len(data['val'][1])} validation / "
          f"{len(data['test'][1])} test, PCA {args.pca} + bias, {args.epochs} epochs, "
          f"probit N={args.probit_samples}; {n_fits} fits in {wall:.0f} s on {args.jobs} processes\n")
    header = ("| trainer | (a) 0/1: test error | (b) random cost: test error | (b) mean test cost "
              "| decodes / update | train s (b) |")
    print(header)
    print("|" + "---|" * 6)
    for name in names:
        a, b = report["zero_one"][name], report["random_cost"][name]
        print(f"| {name} | {100 * a['error']:.2f} % | {100 * b['error']:.2f} % | {b['cost']:.4f} "
              f"| {b['decodes_per_update']:.2f} | {b['seconds']:.2f} |")
    print("\nchosen on validation (zero_one):")
    for name in names:
        print(f"  {name}: {chosen['zero_one'][name][0]}")


if __name__ == "__main__":
    main()
