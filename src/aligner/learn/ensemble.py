"""Averaging the weights of several runs of one trainer that differ only in their seed.

A stochastic trainer's result depends on the order it visits the examples (and, for
probit, on its noise samples), and on a small training set that dependence can be large
(``benchmarks/vowels/bench_vowels_peer.py --order-seeds`` shows it). :class:`SeedAveragedTrainer` runs
the trainer ``n_runs`` times, with seeds ``seed, seed + 1, ...``, and returns the mean of
their weight vectors. For a linear scorer the mean is one weight vector of the same kind
(no ensemble at prediction time), and since every run solves the same problem it is an
estimate of that problem's solution with the order noise averaged out (as weight averaging
within one run, ``average=True``, averages the noise of one run's iterates).

Like every trainer here it knows nothing of the task, and it is a
:class:`~aligner.learn.trainers.Trainer` with the same fit contract and fitted attributes::

    trainer = SeedAveragedTrainer(SVMTrainer(epochs=15, eta0=10.0, lam=1e-3), n_runs=10)
    trainer.fit(task, X, Y, X_val, Y_val).w_

Its parameters are ``trainer`` and ``n_runs``; the wrapped trainer's parameters are reached
as nested ones (``trainer__eta0``), as in any scikit-learn meta-estimator.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from aligner.learn.trainers import EpochEnd, OnlineTrainer, Trainer


class SeedAveragedTrainer(Trainer):
    """``n_runs`` fits of ``trainer`` with seeds ``trainer.seed + r``, averaged at every epoch end.

    Parameters
    ----------
    trainer : any :class:`~aligner.learn.trainers.OnlineTrainer` (not fitted by this one: each run
        is a clone); its ``epochs`` are each run's epochs (a run never early-stops: validation,
        if given, is done on the mean weights).
    n_runs : number of runs (1 gives the trainer's own result, evaluated the same way).

    :meth:`fit` has every trainer's signature. After every epoch the runs' weights at that
    epoch are averaged and evaluated (validation cost, training cost if ``trainer.eval_train``);
    ``w_`` is the mean with the lowest validation cost at an epoch end (the last epoch's
    without a validation set), and ``history_`` holds one
    :class:`~aligner.learn.trainers.EpochRecord` per epoch for the mean weights, with the
    decodes and updates of all runs summed. The runs are done one after the other.
    """

    def __init__(self, trainer: OnlineTrainer, n_runs: int = 5):
        self.trainer = trainer
        self.n_runs = n_runs

    @property
    def name(self) -> str:
        return self.trainer.name

    def _check_params(self) -> None:
        if not isinstance(self.trainer, OnlineTrainer):
            raise TypeError(f"trainer must be an OnlineTrainer (one update rule), got {type(self.trainer).__name__}")
        if self.n_runs < 1:
            raise ValueError(f"n_runs must be >= 1, got {self.n_runs}")

    def _evaluates_train_cost(self) -> bool:
        return bool(self.trainer.eval_train)

    def run(self, r: int) -> OnlineTrainer:
        """The (unfitted) trainer of run ``r`` (0-based): a clone with seed ``trainer.seed + r``,
        no patience and no training-cost evaluation."""
        return clone(self.trainer).set_params(seed=self.trainer.seed + r, patience=None, eval_train=False)

    def _epoch_ends(self, task, X, Y, w0, start):
        runs = [self.run(r).fit(task, X, Y, w0=w0, keep_epoch_weights=True) for r in range(self.n_runs)]
        yield EpochEnd(0, np.zeros(task.n_features) if w0 is None else w0, 0, 0, 0.0)
        for e in range(min(len(r.epoch_weights_) for r in runs)):
            rec = [r.history_[e] for r in runs]  # cumulative counts of each run at this epoch
            yield EpochEnd(e + 1, np.mean([r.epoch_weights_[e] for r in runs], axis=0),
                           sum(h.decodes for h in rec), sum(h.updates for h in rec),
                           sum(h.update_seconds for h in rec))


def seed_averaged(trainer: OnlineTrainer, n_runs: int) -> Trainer:
    """``trainer`` itself for ``n_runs == 1``, else :class:`SeedAveragedTrainer` ``(trainer, n_runs)``."""
    return trainer if n_runs == 1 else SeedAveragedTrainer(trainer, n_runs=n_runs)
