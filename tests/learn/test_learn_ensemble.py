"""SeedAveragedTrainer: the mean of a trainer's fits over consecutive seeds."""

import numpy as np
import pytest
from sklearn.base import clone

from aligner.learn import (MulticlassTask, OrbitTrainer, PerceptronTrainer, SeedAveragedTrainer, SVMTrainer,
                           Trainer, seed_averaged)

from tests.conftest import noisy_problem


def test_epoch_weights_are_the_weights_of_each_epoch_end():
    X, Y = noisy_problem()
    task = MulticlassTask(3, 3)
    full = SVMTrainer(epochs=4, eta0=0.5, seed=3).fit(task, X, Y, keep_epoch_weights=True)
    assert len(full.epoch_weights_) == 4
    np.testing.assert_array_equal(full.epoch_weights_[-1], full.w_)
    two = SVMTrainer(epochs=2, eta0=0.5, seed=3).fit(task, X, Y)
    np.testing.assert_array_equal(full.epoch_weights_[1], two.w_)
    assert SVMTrainer(epochs=2, seed=3).fit(task, X, Y).epoch_weights_ is None


@pytest.mark.parametrize("average", [False, True])
def test_mean_of_the_seeds_fits(average):
    X, Y = noisy_problem()
    task = MulticlassTask(3, 3)
    base = PerceptronTrainer(epochs=3, eta0=1.0, seed=7, average=average)
    got = SeedAveragedTrainer(base, n_runs=3).fit(task, X, Y)
    fits = [PerceptronTrainer(epochs=3, eta0=1.0, seed=s, average=average).fit(task, X, Y) for s in (7, 8, 9)]
    assert not np.allclose(fits[0].w_, fits[1].w_)  # the order matters on this problem
    np.testing.assert_allclose(got.w_, np.mean([f.w_ for f in fits], axis=0))
    assert got.n_decodes_ == sum(f.n_decodes_ for f in fits)
    assert got.n_updates_ == sum(f.n_updates_ for f in fits) == 3 * 3 * len(X)
    assert base.seed == 7  # the given trainer is not changed


def test_one_run_is_the_trainer_itself():
    X, Y = noisy_problem(seed=1)
    task = MulticlassTask(3, 3)
    a = OrbitTrainer(epochs=3, eta0=0.3, seed=2).fit(task, X, Y).w_
    b = SeedAveragedTrainer(OrbitTrainer(epochs=3, eta0=0.3, seed=2), n_runs=1).fit(task, X, Y).w_
    np.testing.assert_array_equal(a, b)


def test_validation_picks_the_best_epoch_of_the_mean():
    X, Y = noisy_problem(seed=2)
    Xv, Yv = noisy_problem(seed=3, n=30)
    task = MulticlassTask(3, 3)
    seen = []
    res = SeedAveragedTrainer(SVMTrainer(epochs=5, eta0=1.0, seed=0), n_runs=4).fit(
        task, X, Y, Xv, Yv, callback=seen.append, keep_epoch_weights=True)
    assert [r.epoch for r in seen] == [1, 2, 3, 4, 5]
    costs = [r.val_cost for r in res.history_]
    for w, c in zip(res.epoch_weights_, costs):
        assert task.mean_cost(Xv, Yv, w) == pytest.approx(c)
    if res.best_epoch_:
        assert costs[res.best_epoch_ - 1] == min(costs)
        np.testing.assert_array_equal(res.w_, res.epoch_weights_[res.best_epoch_ - 1])
    assert task.mean_cost(Xv, Yv, res.w_) <= min(costs)


def test_bad_parameters():
    X, Y = noisy_problem(n=5)
    task = MulticlassTask(3, 3)
    with pytest.raises(ValueError, match="n_runs"):
        SeedAveragedTrainer(SVMTrainer(), n_runs=0).fit(task, X, Y)
    with pytest.raises(TypeError, match="Trainer"):
        SeedAveragedTrainer("svm").fit(task, X, Y)
    with pytest.raises(TypeError, match="Trainer"):  # runs need a seed of their own
        SeedAveragedTrainer(SeedAveragedTrainer(SVMTrainer())).fit(task, X, Y)
    assert "n_runs=2" in repr(SeedAveragedTrainer(SVMTrainer(), n_runs=2))


def test_is_an_estimator_with_nested_params():
    X, Y = noisy_problem()
    task = MulticlassTask(3, 3)
    trainer = SeedAveragedTrainer(SVMTrainer(epochs=2, eta0=0.5, seed=1), n_runs=3)
    assert isinstance(trainer, Trainer) and trainer.name == "svm"
    params = trainer.get_params()
    assert params["n_runs"] == 3 and params["trainer__eta0"] == 0.5 and params["trainer__seed"] == 1
    assert params["trainer__epochs"] == 2 and isinstance(params["trainer"], SVMTrainer)
    trainer.set_params(trainer__eta0=0.25, n_runs=2)
    assert trainer.trainer.eta0 == 0.25 and trainer.n_runs == 2
    copy = clone(trainer)
    assert copy.trainer is not trainer.trainer and copy.get_params(deep=False).keys() == {"trainer", "n_runs"}
    assert copy.trainer.get_params() == trainer.trainer.get_params() and copy.n_runs == 2
    assert not hasattr(trainer, "w_")
    assert trainer.fit(task, X, Y) is trainer
    np.testing.assert_array_equal(copy.fit(task, X, Y).w_, trainer.w_)
    assert trainer.decodes_per_update_ == 1.0 and trainer.n_updates_ == 2 * 2 * len(X)
    assert not hasattr(trainer.trainer, "w_")  # the wrapped trainer is cloned for every run, never fitted


def test_seed_averaged():
    base = SVMTrainer(seed=3)
    assert seed_averaged(base, 1) is base
    many = seed_averaged(base, 4)
    assert isinstance(many, SeedAveragedTrainer) and many.trainer is base and many.n_runs == 4
