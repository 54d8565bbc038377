"""ValidationSearch and param_grid: choosing trainers by their validation cost, on the multiclass task."""

import numpy as np
import pytest
from sklearn.base import clone

from aligner.learn import (
    MulticlassTask,
    OrbitTrainer,
    PerceptronTrainer,
    SeedAveragedTrainer,
    SVMTrainer,
    ValidationSearch,
    param_grid,
    parameter_key,
    plain_params,
)

from tests.conftest import noisy_problem


COSTS = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])


@pytest.fixture
def data():
    X, Y = noisy_problem(seed=0, n=60)
    Xv, Yv = noisy_problem(seed=1, n=30)
    return MulticlassTask(3, 3, COSTS), X, Y, Xv, Yv


def test_param_grid_follows_parameter_grid_order():
    base = SVMTrainer(epochs=3, seed=5)
    grid = param_grid(base, {"lam": [0.0, 0.1], "eta0": [1.0, 0.5, 0.25]})
    assert [(t.eta0, t.lam) for t in grid] == [(1.0, 0.0), (1.0, 0.1), (0.5, 0.0), (0.5, 0.1),
                                                (0.25, 0.0), (0.25, 0.1)]  # keys sorted, last fastest
    assert all(t.epochs == 3 and t.seed == 5 and t is not base for t in grid)
    assert base.eta0 == 1.0 and base.lam == 0.0  # the template is not changed
    assert len(param_grid(base, [{"eta0": [1.0]}, {"lam": [0.1, 0.2]}])) == 3
    nested = param_grid(SeedAveragedTrainer(SVMTrainer(), n_runs=2), {"trainer__eta0": [0.1, 0.2]})
    assert [t.trainer.eta0 for t in nested] == [0.1, 0.2]


def test_plain_params_and_parameter_key():
    sa = SeedAveragedTrainer(SVMTrainer(eta0=0.3), n_runs=2)
    params = plain_params(sa)
    assert "trainer" not in params and params["trainer__eta0"] == 0.3 and params["n_runs"] == 2
    assert clone(sa).set_params(**params).get_params()["trainer__eta0"] == 0.3
    assert parameter_key(sa, "seed") == "trainer__seed" and parameter_key(SVMTrainer(), "seed") == "seed"
    with pytest.raises(ValueError, match="no parameter"):
        parameter_key(SVMTrainer(), "momentum")


def test_search_picks_the_lowest_validation_cost(data):
    task, X, Y, Xv, Yv = data
    candidates = param_grid(SVMTrainer(epochs=3, eval_train=False), {"eta0": [0.01, 0.3, 3.0], "lam": [0.0, 0.1]})
    search = ValidationSearch(candidates).fit(task, X, Y, Xv, Yv)
    assert search.best_estimator_ is not None and search.best_estimator_ is not candidates[search.best_index_]
    assert all(not hasattr(c, "w_") for c in candidates)  # candidates are cloned, never fitted
    # every fit's validation cost is that of the weights it kept, and the best is the minimum
    assert len(search.results_) == 6
    for row, cand in zip(search.results_, candidates):
        refit = clone(cand).fit(task, X, Y, Xv, Yv)
        assert row["val_cost"] == pytest.approx(task.mean_cost(Xv, Yv, refit.w_))
        assert row["trainer"] == "svm" and row["seed"] == 0 and row["error"] is None
        assert row["params"] == plain_params(cand) and row["best_epoch"] == refit.best_epoch_
        assert row["decodes_per_update"] == 1.0 and row["seconds"] > 0 and np.isnan(row["train_cost"])
        assert len(row["val_costs"]) == 3
    costs = [r["val_cost"] for r in search.results_]
    assert search.best_index_ == int(np.argmin(costs))  # first of equal costs
    assert search.best_score_ == min(costs)
    assert search.best_params_ == plain_params(candidates[search.best_index_])
    np.testing.assert_array_equal(search.best_estimator_.w_,
                                  clone(candidates[search.best_index_]).fit(task, X, Y, Xv, Yv).w_)


def test_seeds_give_mean_and_std_per_candidate(data):
    task, X, Y, Xv, Yv = data
    candidates = [PerceptronTrainer(epochs=2), OrbitTrainer(epochs=2, eta0=0.3)]
    seen = []
    search = ValidationSearch(candidates, seeds=(3, 4, 5), return_train_score=True).fit(
        task, X, Y, Xv, Yv, progress=seen.append)
    assert [(r["candidate"], r["seed"]) for r in search.results_] == [(0, 3), (0, 4), (0, 5), (1, 3), (1, 4), (1, 5)]
    assert seen == search.results_
    for summary in search.candidate_results_:
        rows = [r for r in search.results_ if r["candidate"] == summary["candidate"]]
        vals = [r["val_cost"] for r in rows]
        assert summary["n_fits"] == 3 and summary["n_errors"] == 0
        assert summary["val_cost_mean"] == pytest.approx(np.mean(vals)) == summary["score"]
        assert summary["val_cost_std"] == pytest.approx(np.std(vals))
        assert summary["train_cost_mean"] == pytest.approx(np.mean([r["train_cost"] for r in rows]))
    for row in search.results_:  # the train cost is that of the kept weights
        fit = clone(candidates[row["candidate"]]).set_params(seed=row["seed"]).fit(task, X, Y, Xv, Yv)
        assert row["train_cost"] == pytest.approx(task.mean_cost(X, Y, fit.w_))
    best = search.candidate_results_[search.best_index_]
    assert best["score"] == min(c["score"] for c in search.candidate_results_)
    assert [e.seed for e in search.best_estimators_] == [3, 4, 5]
    assert search.best_estimator_ is search.best_estimators_[0]
    assert candidates[0].seed == 0  # the seeds are set on clones


def test_seeds_reach_the_runs_of_a_seed_averaged_trainer(data):
    task, X, Y, Xv, Yv = data
    sa = SeedAveragedTrainer(SVMTrainer(epochs=2, eta0=0.5), n_runs=2)
    search = ValidationSearch([sa], seeds=(7,)).fit(task, X, Y, Xv, Yv)
    assert search.results_[0]["seed"] == 7 and search.best_estimator_.trainer.seed == 7
    expected = SeedAveragedTrainer(SVMTrainer(epochs=2, eta0=0.5, seed=7), n_runs=2).fit(task, X, Y, Xv, Yv)
    np.testing.assert_array_equal(search.best_estimator_.w_, expected.w_)


def test_select_epochs_uses_the_mean_validation_curve(data):
    task, X, Y, Xv, Yv = data
    X2, Y2 = noisy_problem(seed=2, n=50)
    splits = [(task, X, Y, Xv, Yv), (MulticlassTask(3, 3), X2, Y2, Xv, Yv)]
    candidates = param_grid(SVMTrainer(epochs=5, eval_train=False), {"eta0": [0.05, 2.0]})
    search = ValidationSearch(candidates, select_epochs=True).fit_splits(splits)
    assert [(r["candidate"], r["split"]) for r in search.results_] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for summary in search.candidate_results_:
        i = summary["candidate"]
        curves = [[r.val_cost for r in clone(candidates[i]).fit(t, x, y, xv, yv).history_]
                  for t, x, y, xv, yv in splits]
        mean_curve = np.mean(curves, axis=0)
        assert summary["epochs"] == int(np.argmin(mean_curve)) + 1
        assert summary["score"] == pytest.approx(mean_curve.min())
    best = search.candidate_results_[search.best_index_]
    assert search.best_params_["epochs"] == best["epochs"]
    assert search.best_params_["eta0"] == candidates[search.best_index_].eta0
    # nested trainers: the epoch count goes to trainer__epochs
    nested = ValidationSearch([SeedAveragedTrainer(SVMTrainer(epochs=3), n_runs=2)], select_epochs=True)
    assert "trainer__epochs" in nested.fit(task, X, Y, Xv, Yv).best_params_


def test_failed_fits_score_error_score_or_raise(data):
    task, X, Y, Xv, Yv = data
    candidates = [SVMTrainer(epochs=2, eta0=-1.0), SVMTrainer(epochs=2, eta0=0.5)]  # the first is invalid
    with pytest.raises(ValueError, match="eta0"):
        ValidationSearch(candidates).fit(task, X, Y, Xv, Yv)
    with pytest.warns(RuntimeWarning, match="1 of 2 fits failed"):
        search = ValidationSearch(candidates, error_score=float("inf")).fit(task, X, Y, Xv, Yv)
    assert search.results_[0]["val_cost"] == float("inf") and "eta0" in search.results_[0]["error"]
    assert search.best_index_ == 1 and search.best_estimator_.eta0 == 0.5


def test_bad_search_arguments(data):
    task, X, Y, Xv, Yv = data
    with pytest.raises(ValueError, match="no candidates"):
        ValidationSearch([]).fit(task, X, Y, Xv, Yv)
    with pytest.raises(TypeError, match="Trainers"):
        ValidationSearch(["svm"]).fit(task, X, Y, Xv, Yv)
    with pytest.raises(ValueError, match="error_score"):
        ValidationSearch([SVMTrainer()], error_score="ignore").fit(task, X, Y, Xv, Yv)
    with pytest.raises(ValueError, match="seeds"):
        ValidationSearch([SVMTrainer()], seeds=()).fit(task, X, Y, Xv, Yv)


def test_search_is_an_estimator():
    search = ValidationSearch([SVMTrainer(eta0=0.2)], seeds=(1, 2))
    copy = clone(search)
    assert copy.seeds == (1, 2) and copy.candidates[0].eta0 == 0.2 and copy.candidates[0] is not search.candidates[0]
    assert not hasattr(copy, "best_estimator_")
