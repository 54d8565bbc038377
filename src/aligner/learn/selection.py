"""Choosing a trainer's hyper-parameters by its cost on held-out examples.

:class:`ValidationSearch` fits every candidate trainer (unfitted trainers, typically from
:func:`param_grid`) on a training set, once per seed, scores every fit by the task's mean
cost on a validation set, and keeps the candidate with the lowest mean over its fits (the
first in order on ties). The validation set is also every fit's early-stopping set, so a
score is that of the weights the fit kept. It plays the part of scikit-learn's
``GridSearchCV`` for structured trainers: a task's cost instead of a scorer, an explicit
training/validation split instead of internal cross-validation (:meth:`ValidationSearch.fit`;
:meth:`ValidationSearch.fit_splits` takes several splits, e.g. the folds of a
cross-validation, each with a task of its own), and, on request, the number of epochs chosen
from the fits' per-epoch validation costs::

    candidates = param_grid(SVMTrainer(epochs=10), {"eta0": [0.1, 1.0], "lam": [0.0, 1e-3]})
    search = ValidationSearch(candidates, seeds=(0, 1, 2)).fit(task, X, Y, X_val, Y_val)
    search.best_estimator_.w_, search.best_params_, search.candidate_results_

Like the rest of :mod:`aligner.learn` it knows nothing of the task.
"""

from __future__ import annotations

import time
import warnings
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid

from aligner.learn.task import StructuredTask
from aligner.learn.trainers import Trainer


def param_grid(trainer: Trainer, grid) -> list:
    """Unfitted clones of ``trainer``, one per point of ``grid``, with that point's parameters set.

    ``grid`` is a dict of lists of values (crossed) or a list of such dicts, as for
    :class:`sklearn.model_selection.ParameterGrid`, whose order the clones follow (keys
    sorted, the last key varying fastest). Nested parameters work as in ``set_params``
    (``{"trainer__eta0": [...]}`` for a :class:`~aligner.learn.ensemble.SeedAveragedTrainer`).
    """
    return [clone(trainer).set_params(**point) for point in ParameterGrid(grid)]


def plain_params(trainer: Trainer) -> dict:
    """``trainer.get_params(deep=True)`` without the values that are estimators themselves.

    Plain values only (JSON-friendly for the built-in trainers), with nested keys such as
    ``trainer__eta0``, so ``clone(trainer).set_params(**plain_params(trainer))`` is ``trainer`` again.
    """
    return {k: v for k, v in trainer.get_params(deep=True).items() if not isinstance(v, BaseEstimator)}


def parameter_key(trainer: Trainer, name: str) -> str:
    """The key of parameter ``name`` in ``trainer.get_params()``: ``name`` itself or, for a
    trainer that wraps another, the least nested ``...__name`` (e.g. ``trainer__seed``)."""
    params = trainer.get_params(deep=True)
    if name in params:
        return name
    nested = sorted((k for k in params if k.endswith("__" + name)), key=lambda k: k.count("__"))
    if not nested:
        raise ValueError(f"{type(trainer).__name__} has no parameter {name!r}")
    return nested[0]


def _finite_or_inf(value: float) -> float:
    return float(value) if np.isfinite(value) else float("inf")


class ValidationSearch(BaseEstimator):
    """Fit every candidate on a training set and keep the one with the lowest validation cost.

    Parameters
    ----------
    candidates : unfitted trainers (any :class:`~aligner.learn.trainers.Trainer`); each fit
        is on a clone, so they stay unfitted.
    seeds : fit every candidate once per seed, with its ``seed`` parameter (``trainer__seed``
        for a wrapping trainer) set to it; None fits each once with its own seed.
    select_epochs : also choose the number of epochs: the candidate's per-epoch validation
        costs (every fit's ``history_``, a fit that stopped early padded with inf) are
        averaged over its fits, and its score is the lowest of these means, at the epoch count
        it reaches first; ``best_params_`` then hold that count as ``epochs``. For a fit of
        that many epochs, refit ``clone(search.best_estimator_).set_params(**search.best_params_)``.
    return_train_score : also record every fit's mean training cost (from its history when it
        evaluated it, else one more decode per training example).
    error_score : ``"raise"`` to let a failing fit raise, or the validation cost recorded for a
        fit that raised (e.g. ``float("inf")`` for a step size that makes the weights blow up);
        failed fits are counted in one warning.

    Attributes (after :meth:`fit`)
    ------------------------------
    results_ : one dict per fit, in order (candidate, then seed, then split): ``candidate``
        (index), ``trainer`` (name), ``params`` (:func:`plain_params` of the candidate),
        ``seed``, ``split``, ``val_cost``, ``train_cost`` (nan unless ``return_train_score``),
        ``seconds``, ``decodes_per_update``, ``best_epoch``, ``val_costs`` (the per-epoch
        validation costs) and ``error`` (None, or the exception of a failed fit).
    candidate_results_ : one dict per candidate: ``candidate``, ``trainer``, ``params``,
        ``n_fits``, ``n_errors``, ``val_cost_mean``, ``val_cost_std``, ``train_cost_mean``,
        ``train_cost_std``, ``seconds_mean`` (means and population standard deviations over
        the candidate's fits), ``score`` (what the choice compares: ``val_cost_mean``, or with
        ``select_epochs`` the lowest mean per-epoch cost) and, with ``select_epochs``, ``epochs``.
    best_index_, best_score_ : the chosen candidate's index and score.
    best_params_ : :func:`plain_params` of the chosen candidate (with ``select_epochs``, its
        ``epochs`` set to the chosen count).
    best_estimators_ : the chosen candidate's successful fits, in order.
    best_estimator_ : the first of them (its first seed on the first split); None if all failed.
    """

    def __init__(
        self,
        candidates: Sequence[Trainer],
        seeds: Optional[Sequence[int]] = None,
        select_epochs: bool = False,
        return_train_score: bool = False,
        error_score="raise",
    ):
        self.candidates = candidates
        self.seeds = seeds
        self.select_epochs = select_epochs
        self.return_train_score = return_train_score
        self.error_score = error_score

    def fit(self, task: StructuredTask, X: Sequence, Y: Sequence, X_val: Sequence, Y_val: Sequence,
            w0: Optional[np.ndarray] = None, progress: Optional[Callable[[dict], None]] = None
            ) -> "ValidationSearch":
        """Fit and score every candidate (x seed) on one split. Returns ``self``.

        ``w0`` is every fit's starting weights; ``progress(row)`` is called after every fit
        with its ``results_`` row.
        """
        return self.fit_splits([(task, X, Y, X_val, Y_val)], w0=w0, progress=progress)

    def fit_splits(self, splits: Iterable[tuple], w0: Optional[np.ndarray] = None,
                   progress: Optional[Callable[[dict], None]] = None) -> "ValidationSearch":
        """Like :meth:`fit` on several splits ``(task, X, Y, X_val, Y_val)``; a candidate's score
        is over all its fits (every seed on every split). Returns ``self``."""
        splits = list(splits)
        candidates = list(self.candidates)
        if not candidates:
            raise ValueError("no candidates")
        if not splits:
            raise ValueError("no splits")
        bad = [c for c in candidates if not isinstance(c, Trainer)]
        if bad:
            raise TypeError(f"candidates must be Trainers, got {type(bad[0]).__name__}")
        if not (isinstance(self.error_score, str) and self.error_score == "raise"
                or isinstance(self.error_score, (int, float))):
            raise ValueError(f"error_score must be 'raise' or a number, got {self.error_score!r}")
        seeds = [None] if self.seeds is None else list(self.seeds)
        if not seeds:
            raise ValueError("seeds must be None or non-empty")

        self.results_, self.candidate_results_ = [], []
        best = None  # (score, index, params, fitted)
        for i, candidate in enumerate(candidates):
            params = plain_params(candidate)
            rows, fitted = [], []
            for seed in seeds:
                seeded = clone(candidate)
                if seed is not None:
                    seeded.set_params(**{parameter_key(candidate, "seed"): seed})
                for k, (task, X, Y, X_val, Y_val) in enumerate(splits):
                    estimator = clone(seeded)
                    row = self._fit_one(estimator, task, X, Y, X_val, Y_val, w0)
                    row.update(candidate=i, params=params, split=k)
                    rows.append(row)
                    if row["error"] is None:
                        fitted.append(estimator)
                    if progress is not None:
                        progress(row)
            summary = self._summarise(i, candidate, params, rows)
            self.results_ += rows
            self.candidate_results_.append(summary)
            if best is None or summary["score"] < best[0]:
                chosen = dict(params)
                if self.select_epochs:
                    chosen[parameter_key(candidate, "epochs")] = summary["epochs"]
                best = (summary["score"], i, chosen, fitted)
        self.best_score_, self.best_index_, self.best_params_, self.best_estimators_ = best
        self.best_estimator_ = self.best_estimators_[0] if self.best_estimators_ else None
        n_failed = sum(r["error"] is not None for r in self.results_)
        if n_failed:
            first = next(r for r in self.results_ if r["error"] is not None)
            warnings.warn(f"{n_failed} of {len(self.results_)} fits failed and scored {self.error_score}; "
                          f"the first (candidate {first['candidate']}): {first['error']}", RuntimeWarning,
                          stacklevel=2)
        return self

    # -- one fit, one candidate ------------------------------------------------------------
    def _fit_one(self, estimator: Trainer, task, X, Y, X_val, Y_val, w0) -> dict:
        seed_key = parameter_key(estimator, "seed") if self._has_param(estimator, "seed") else None
        row = {"trainer": estimator.name,
               "seed": estimator.get_params(deep=True)[seed_key] if seed_key else None}
        t0 = time.perf_counter()
        try:
            estimator.fit(task, X, Y, X_val, Y_val, w0=w0)
        except Exception as exc:
            if isinstance(self.error_score, str):
                raise
            row.update(val_cost=float(self.error_score), train_cost=float("nan"),
                       seconds=time.perf_counter() - t0, decodes_per_update=float("nan"),
                       best_epoch=None, val_costs=[], error=f"{type(exc).__name__}: {exc}")
            return row
        val_cost = self._cost_of_fit(estimator, task, X_val, Y_val, "val_cost")
        train_cost = (self._cost_of_fit(estimator, task, X, Y, "train_cost") if self.return_train_score
                      else float("nan"))
        row.update(val_cost=val_cost, train_cost=train_cost, seconds=estimator.fit_seconds_,
                   decodes_per_update=estimator.decodes_per_update_, best_epoch=estimator.best_epoch_,
                   val_costs=[r.val_cost for r in estimator.history_], error=None)
        return row

    @staticmethod
    def _has_param(estimator: Trainer, name: str) -> bool:
        try:
            parameter_key(estimator, name)
        except ValueError:
            return False
        return True

    @staticmethod
    def _cost_of_fit(estimator: Trainer, task, X, Y, field: str) -> float:
        """Mean cost of ``estimator.w_`` on ``(X, Y)``: the fit's own record of it when it has
        one (the weights of its best epoch, evaluated on these examples), else decoded."""
        if X is None or len(X) == 0:
            return float("nan")
        if estimator.best_epoch_ >= 1:
            recorded = getattr(estimator.history_[estimator.best_epoch_ - 1], field)
            if not np.isnan(recorded):
                return float(recorded)
        return float(task.mean_cost(X, Y, estimator.w_))

    def _summarise(self, index: int, candidate: Trainer, params: dict, rows: list) -> dict:
        val = np.array([r["val_cost"] for r in rows], dtype=float)
        train = np.array([r["train_cost"] for r in rows], dtype=float)
        with np.errstate(invalid="ignore"):  # the std of costs that include inf (failed fits) is nan
            summary = {
                "candidate": index, "trainer": candidate.name, "params": params,
                "n_fits": len(rows), "n_errors": sum(r["error"] is not None for r in rows),
                "val_cost_mean": float(val.mean()), "val_cost_std": float(val.std()),
                "train_cost_mean": float(train.mean()), "train_cost_std": float(train.std()),
                "seconds_mean": float(np.mean([r["seconds"] for r in rows])),
            }
        if self.select_epochs:
            n = max(1, max(len(r["val_costs"]) for r in rows))
            curves = np.array([[_finite_or_inf(c) for c in r["val_costs"]] + [np.inf] * (n - len(r["val_costs"]))
                               for r in rows])
            mean_curve = curves.mean(axis=0)
            epoch = int(np.argmin(mean_curve))
            summary.update(score=_finite_or_inf(mean_curve[epoch]), epochs=epoch + 1)
        else:
            summary["score"] = _finite_or_inf(summary["val_cost_mean"])
        return summary
