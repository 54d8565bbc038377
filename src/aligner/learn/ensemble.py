"""Averaging the weights of several runs of one trainer that differ only in their seed.

A stochastic trainer's result depends on the order it visits the examples (and, for
probit, on its noise samples). On a small training set that dependence is large: on the
peer's 20 vowel examples one structural-SVM setting gave test onset errors from 3.5 to
57 ms over ten seeds (``scripts/bench_vowels_peer.py``). :class:`SeedAveragedTrainer` runs
the trainer ``n_runs`` times, with seeds ``seed, seed + 1, ...``, and returns the mean of
their weight vectors. For a linear scorer the mean is one weight vector of the same kind
(no ensemble at prediction time), and since every run solves the same problem it is an
estimate of that problem's solution with the order noise averaged out (as weight averaging
within one run, ``average=True``, averages the noise of one run's iterates).

Like every trainer here it knows nothing of the task::

    trainer = SeedAveragedTrainer(SVMTrainer(epochs=15, eta0=10.0, lam=1e-3), n_runs=10)
    result = trainer.fit(task, X, Y, X_val, Y_val)
"""

from __future__ import annotations

import copy
import time
from typing import Callable, Optional, Sequence

import numpy as np

from aligner.learn.task import StructuredTask
from aligner.learn.trainers import EpochRecord, FitResult, Trainer


class SeedAveragedTrainer:
    """``n_runs`` fits of ``trainer`` with seeds ``trainer.seed + r``; returns their mean weights.

    Parameters
    ----------
    trainer : any :class:`~aligner.learn.trainers.Trainer`; its ``epochs`` are each run's epochs
        (a run never early-stops: validation, if given, is done on the mean weights).
    n_runs : number of runs (1 gives the trainer's own result, evaluated the same way).

    :meth:`fit` has the trainer's signature. After every epoch the runs' weights at that
    epoch are averaged and evaluated (validation cost, training cost if ``trainer.eval_train``);
    the returned ``w`` is the mean with the lowest validation cost at an epoch end (the
    last epoch's without a validation set), and ``history`` holds one
    :class:`~aligner.learn.trainers.EpochRecord` per epoch for the mean weights, with the
    decodes and updates of all runs summed. The runs are done one after the other.
    """

    def __init__(self, trainer: Trainer, n_runs: int = 5):
        if n_runs < 1:
            raise ValueError(f"n_runs must be >= 1, got {n_runs}")
        if not isinstance(trainer, Trainer):
            raise TypeError(f"trainer must be a Trainer, got {type(trainer).__name__}")
        self.trainer = trainer
        self.n_runs = n_runs

    @property
    def name(self) -> str:
        return self.trainer.name

    def get_params(self) -> dict:
        return {"trainer": self.trainer, "n_runs": self.n_runs}

    def __repr__(self) -> str:
        return f"SeedAveragedTrainer({self.trainer!r}, n_runs={self.n_runs})"

    def run(self, r: int) -> Trainer:
        """The trainer of run ``r`` (0-based): a copy with seed ``trainer.seed + r``, no patience."""
        t = copy.copy(self.trainer)
        t.seed = self.trainer.seed + r
        t.patience = None
        t.eval_train = False
        return t

    def fit(
        self,
        task: StructuredTask,
        X: Sequence,
        Y: Sequence,
        X_val: Optional[Sequence] = None,
        Y_val: Optional[Sequence] = None,
        w0: Optional[np.ndarray] = None,
        callback: Optional[Callable[[EpochRecord], None]] = None,
        keep_epoch_weights: bool = False,
    ) -> FitResult:
        start = time.perf_counter()
        runs = [self.run(r).fit(task, X, Y, w0=w0, keep_epoch_weights=True) for r in range(self.n_runs)]
        has_val = X_val is not None and len(X_val) > 0
        w_init = np.zeros(task.n_features) if w0 is None else np.array(w0, dtype=float)
        best_w = w_init
        best_val = task.mean_cost(X_val, Y_val, w_init) if has_val else float("inf")
        best_epoch = 0
        history, means = [], []
        n_epochs = min(len(r.epoch_weights) for r in runs)
        for e in range(n_epochs):
            w = np.mean([r.epoch_weights[e] for r in runs], axis=0)
            if keep_epoch_weights:
                means.append(w)
            rec = [r.history[e] for r in runs]  # cumulative counts of each run at this epoch
            train_cost = task.mean_cost(X, Y, w) if self.trainer.eval_train else float("nan")
            val_cost = task.mean_cost(X_val, Y_val, w) if has_val else float("nan")
            record = EpochRecord(e + 1, train_cost, val_cost, sum(h.decodes for h in rec),
                                 sum(h.updates for h in rec), time.perf_counter() - start,
                                 sum(h.update_seconds for h in rec))
            history.append(record)
            if callback is not None:
                callback(record)
            if not has_val or val_cost < best_val:
                best_val, best_w, best_epoch = val_cost, w, e + 1
        return FitResult(np.array(best_w, dtype=float), history, best_epoch,
                         sum(r.decodes for r in runs), sum(r.updates for r in runs),
                         time.perf_counter() - start, sum(r.update_seconds for r in runs),
                         means if keep_epoch_weights else None)


def seed_averaged(trainer: Trainer, n_runs: int):
    """``trainer`` itself for ``n_runs == 1``, else :class:`SeedAveragedTrainer` ``(trainer, n_runs)``."""
    return trainer if n_runs == 1 else SeedAveragedTrainer(trainer, n_runs=n_runs)
