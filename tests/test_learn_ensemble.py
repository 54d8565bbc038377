"""SeedAveragedTrainer: the mean of a trainer's fits over consecutive seeds."""

import numpy as np
import pytest

from aligner.learn import MulticlassTask, OrbitTrainer, PerceptronTrainer, SeedAveragedTrainer, SVMTrainer


def noisy_problem(seed=0, n=40):
    """Three overlapping classes: fits depend on the example order."""
    rng = np.random.default_rng(seed)
    centres = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    y = rng.integers(0, 3, size=n)
    X = centres[y] + rng.normal(scale=0.8, size=(n, 2))
    return [np.append(x, 1.0) for x in X], [int(v) for v in y]


def test_epoch_weights_are_the_weights_of_each_epoch_end():
    X, Y = noisy_problem()
    task = MulticlassTask(3, 3)
    full = SVMTrainer(epochs=4, eta0=0.5, seed=3).fit(task, X, Y, keep_epoch_weights=True)
    assert len(full.epoch_weights) == 4
    np.testing.assert_array_equal(full.epoch_weights[-1], full.w)
    two = SVMTrainer(epochs=2, eta0=0.5, seed=3).fit(task, X, Y)
    np.testing.assert_array_equal(full.epoch_weights[1], two.w)
    assert SVMTrainer(epochs=2, seed=3).fit(task, X, Y).epoch_weights is None


@pytest.mark.parametrize("average", [False, True])
def test_mean_of_the_seeds_fits(average):
    X, Y = noisy_problem()
    task = MulticlassTask(3, 3)
    base = PerceptronTrainer(epochs=3, eta0=1.0, seed=7, average=average)
    got = SeedAveragedTrainer(base, n_runs=3).fit(task, X, Y)
    fits = [PerceptronTrainer(epochs=3, eta0=1.0, seed=s, average=average).fit(task, X, Y) for s in (7, 8, 9)]
    assert not np.allclose(fits[0].w, fits[1].w)  # the order matters on this problem
    np.testing.assert_allclose(got.w, np.mean([f.w for f in fits], axis=0))
    assert got.decodes == sum(f.decodes for f in fits)
    assert got.updates == sum(f.updates for f in fits) == 3 * 3 * len(X)
    assert base.seed == 7  # the given trainer is not changed


def test_one_run_is_the_trainer_itself():
    X, Y = noisy_problem(seed=1)
    task = MulticlassTask(3, 3)
    a = OrbitTrainer(epochs=3, eta0=0.3, seed=2).fit(task, X, Y).w
    b = SeedAveragedTrainer(OrbitTrainer(epochs=3, eta0=0.3, seed=2), n_runs=1).fit(task, X, Y).w
    np.testing.assert_array_equal(a, b)


def test_validation_picks_the_best_epoch_of_the_mean():
    X, Y = noisy_problem(seed=2)
    Xv, Yv = noisy_problem(seed=3, n=30)
    task = MulticlassTask(3, 3)
    seen = []
    res = SeedAveragedTrainer(SVMTrainer(epochs=5, eta0=1.0, seed=0), n_runs=4).fit(
        task, X, Y, Xv, Yv, callback=seen.append, keep_epoch_weights=True)
    assert [r.epoch for r in seen] == [1, 2, 3, 4, 5]
    costs = [r.val_cost for r in res.history]
    for w, c in zip(res.epoch_weights, costs):
        assert task.mean_cost(Xv, Yv, w) == pytest.approx(c)
    if res.best_epoch:
        assert costs[res.best_epoch - 1] == min(costs)
        np.testing.assert_array_equal(res.w, res.epoch_weights[res.best_epoch - 1])
    assert task.mean_cost(Xv, Yv, res.w) <= min(costs)


def test_bad_parameters():
    with pytest.raises(ValueError, match="n_runs"):
        SeedAveragedTrainer(SVMTrainer(), n_runs=0)
    with pytest.raises(TypeError, match="Trainer"):
        SeedAveragedTrainer("svm")
    assert "n_runs=2" in repr(SeedAveragedTrainer(SVMTrainer(), n_runs=2))
