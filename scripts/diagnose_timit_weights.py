#!/usr/bin/env python
"""Iterate on the TIMIT recipe's weight training without retraining classifiers.

The first call runs the ``--quick`` recipe's preparation (features, speaker folds, out-of-fold
classifier scores; about 90 s on the shared sample) and caches every fold's weight-training,
validation and test inputs in ``--cache`` (default ``runs/timit-quick-folds.pkl``, gitignored).
Then, for one trainer and a grid, it runs the recipe's protocol (every grid point with seed 0,
the lowest validation cost wins, refitted with seeds 1..) and prints, per fold, the validation
cost of every seed of the chosen point; with ``--test``, the test figures pooled over folds as
in the recipe's table. For orbit it also counts the updates whose Gaussian factor
``exp(-(w.u/s)^2/2)`` is below 0.01 (the rule has stopped moving) and the largest cost met.

    python scripts/diagnose_timit_weights.py orbit                       # the recipe's quick grid
    python scripts/diagnose_timit_weights.py orbit --grid '{"eta0": [0.3, 1.0]}' --test
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from aligner.alignment.model import AlignmentModel  # noqa: E402
from aligner.alignment.evaluation import score_alignments  # noqa: E402
from aligner.features.mfcc import phone_start_times  # noqa: E402
from aligner.learn import make_trainer  # noqa: E402
from aligner.learn.trainers import OrbitTrainer  # noqa: E402
from aligner.alignment.task import AlignmentTask  # noqa: E402
from aligner.alignment.training import INITIAL_WEIGHTS, load_utterances, prepare_weight_training  # noqa: E402
from recipes.timit.recipe import (  # noqa: E402
    BASE_PARAMS, GRIDS, SETTINGS, grid_points, make_splits, reference_starts_s)


def build_cache(corpus: Path, path: Path) -> list:
    settings = SETTINGS["quick"]
    _, _, splits = make_splits(corpus, settings["folds"], False, "core")
    needed = {u.name: u for s in splits for part in ("train", "test") for u in s[part]}
    data = {d.name: d for d in load_utterances(list(needed.values()), warps=())}
    folds = []
    for split in splits:
        prepared = prepare_weight_training([data[u.name] for u in split["train"]], settings["classifier"],
                                           n_folds=settings["classifier_folds"], n_val_speakers=2)
        scorer = AlignmentModel(prepared.classifier, prepared.durations, np.zeros(7))
        test = [data[u.name] for u in split["test"]]
        folds.append({
            "name": split["name"],
            "X": [prepared.inputs[i] for i in prepared.train_idx], "Y": [prepared.data[i].y for i in prepared.train_idx],
            "Xv": [prepared.inputs[i] for i in prepared.val_idx], "Yv": [prepared.data[i].y for i in prepared.val_idx],
            "Xt": [scorer.make_input(d.frames, d.classes, name=d.name, symbols=d.symbols) for d in test],
            "refs": [reference_starts_s(u) for u in split["test"]]})
        print(f"{split['name']}: prepared in {prepared.seconds:.0f} s", file=sys.stderr, flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(folds))
    return folds


class _OrbitWatch:
    """Wraps OrbitTrainer.update to record the Gaussian factor and cost of every update."""

    def __init__(self):
        self.factors, self.costs = [], []
        self._update = OrbitTrainer.update
        watch = self

        def update(trainer, task, x, y, w, eta, rng):
            y_hat = task.decode(x, w)
            if not task.same(y, y_hat):
                dphi = task.phi(x, y) - task.phi(x, y_hat)
                norm = np.linalg.norm(dphi)
                margin = float(w @ dphi) / norm / trainer.noise_scale if norm else 0.0
                watch.factors.append(np.exp(-0.5 * margin * margin))
                watch.costs.append(task.cost(y, y_hat))
            return watch._update(trainer, task, x, y, w, eta, rng)

        OrbitTrainer.update = update


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trainer")
    p.add_argument("--grid", help="JSON dict of value lists (default: the recipe's quick grid)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--test", action="store_true", help="also score the test speakers (as the recipe)")
    p.add_argument("--corpus", type=Path, default=Path("../shared/data/timit-sample"))
    p.add_argument("--cache", type=Path, default=Path("runs/timit-quick-folds.pkl"))
    args = p.parse_args()
    folds = pickle.loads(args.cache.read_bytes()) if args.cache.exists() else build_cache(args.corpus, args.cache)
    grid = json.loads(args.grid) if args.grid else GRIDS["quick"][args.trainer]
    watch = _OrbitWatch() if args.trainer == "orbit" else None
    task = AlignmentTask(n_jobs=2)
    base = dict(BASE_PARAMS, epochs=SETTINGS["quick"]["epochs"], patience=SETTINGS["quick"]["patience"])
    pairs = {s: [] for s in range(args.seeds)}
    val_all = []
    t0 = time.perf_counter()
    for f in folds:
        fit = lambda point, seed: make_trainer(args.trainer, **dict(base, **point, seed=seed)).fit(  # noqa: E731
            task, f["X"], f["Y"], f["Xv"], f["Yv"], w0=INITIAL_WEIGHTS)
        candidates = [(task.mean_cost(f["Xv"], f["Yv"], r.w), point, r)
                      for point in grid_points(grid) for r in [fit(point, 0)]]
        cost, point, first = min(candidates, key=lambda c: c[0])
        vals = []
        for seed in range(args.seeds):
            r = first if seed == 0 else fit(point, seed)
            vals.append(task.mean_cost(f["Xv"], f["Yv"], r.w))
            pairs[seed].extend(zip(f["refs"], [phone_start_times(task.decode(x, r.w)) for x in f["Xt"]]))
        val_all += vals
        print(f"{f['name']}: grid {[round(c[0], 4) for c in candidates]}; chose {point}; validation cost per "
              f"seed {np.round(vals, 4).tolist()}", flush=True)
    print(f"validation cost of the chosen points, mean over folds and seeds: {np.mean(val_all):.4f} "
          f"({time.perf_counter() - t0:.0f} s)")
    if watch is not None and watch.factors:
        factors = np.array(watch.factors)
        print(f"orbit updates (all fits): {len(factors)}, Gaussian factor < 0.01 in {np.mean(factors < 0.01):.1%}, "
              f"median factor {np.median(factors):.2f}; cost median {np.median(watch.costs):.2f}, "
              f"max {np.max(watch.costs):.1f} frames per phone")
    if args.test:
        w20 = [score_alignments(pairs[s]).within_ms[20] for s in range(args.seeds)]
        tau = [score_alignments(pairs[s]).tau_insensitive for s in range(args.seeds)]
        print(f"test: {np.mean(w20):.2f} ± {np.std(w20, ddof=1):.2f} % within 20 ms, "
              f"tau-insensitive {np.mean(tau):.4f} ± {np.std(tau, ddof=1):.4f} frames")


if __name__ == "__main__":
    main()
