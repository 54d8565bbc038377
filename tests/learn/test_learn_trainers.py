"""The learning core's update rules, checked against hand-computed steps and analytic gradients."""

import inspect
import math

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from aligner.learn import (
    TRAINERS,
    CountingTask,
    DirectAwayTrainer,
    DirectTowardTrainer,
    MulticlassTask,
    OrbitTrainer,
    PerceptronTrainer,
    ProbitTrainer,
    RampTrainer,
    StructuredTask,
    SVMTrainer,
    make_trainer,
    orbit_loss,
)

# A 3-class toy in 2 dimensions. Class weights W (rows) give scores W @ x = [0, 1, 0.5]:
# the prediction is class 1 while the truth is class 0.
COSTS = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
X = np.array([1.0, 2.0])
Y = 0
W = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.25]])


def toy():
    return MulticlassTask(3, 2, COSTS), W.ravel().copy()


def step(trainer, eta, w=None):
    task, w0 = toy()
    w = w0 if w is None else w
    out = trainer.update(task, X, Y, w, eta, np.random.default_rng(0))
    return out.reshape(3, 2)


def test_toy_setup():
    task, w = toy()
    assert task.decode(X, w) == 1
    # augmented scores [0, 1, 0.5] + eps * costs[0] = [0, 1 + eps, 0.5 + 2 eps]
    assert task.decode_augmented(X, Y, w, 1.0) == 2
    assert task.decode_augmented(X, Y, w, -2.0) == 0


def test_perceptron_step():
    got = step(PerceptronTrainer(), eta=1.0)
    np.testing.assert_allclose(got, [[1, 2], [0, -2], [0, 0.25]])


def test_svm_step():
    # y_l = class 2; w = 0.95 W + 0.5 (phi(0) - phi(2))
    got = step(SVMTrainer(lam=0.1), eta=0.5)
    np.testing.assert_allclose(got, [[0.5, 1.0], [0.95, 0.0], [-0.5, 0.95 * 0.25 - 1.0]])


def test_ramp_step():
    # y_hat = 1, y_l = 2; w = 0.95 W + 0.5 (phi(1) - phi(2))
    got = step(RampTrainer(lam=0.1), eta=0.5)
    np.testing.assert_allclose(got, [[0.0, 0.0], [1.45, 1.0], [-0.5, 0.95 * 0.25 - 1.0]])


def test_direct_toward_step():
    # eps = 2: scores - 2 costs = [0, -1, -3.5] -> y_b = 0; w += (1/2) (phi(0) - phi(1))
    got = step(DirectTowardTrainer(eps=2.0), eta=1.0)
    np.testing.assert_allclose(got, [[0.5, 1.0], [0.5, -1.0], [0.0, 0.25]])


def test_direct_away_step():
    # eps = 1: scores + costs = [0, 2, 2.5] -> y_w = 2; w += (1/1) (phi(1) - phi(2))
    got = step(DirectAwayTrainer(eps=1.0), eta=1.0)
    np.testing.assert_allclose(got, [[0.0, 0.0], [2.0, 2.0], [-1.0, -1.75]])


def test_direct_loss_no_move_when_perturbed_decode_agrees():
    # eps = 0.5 toward-better: scores - 0.5 costs = [0, 0.5, -0.5] -> y_b = y_hat = 1: no step
    got = step(DirectTowardTrainer(eps=0.5), eta=1.0)
    np.testing.assert_allclose(got, W)


def test_orbit_step():
    # dphi = phi(0) - phi(1) = [x, -x, 0], |dphi| = sqrt(10); w.u = -1/sqrt(10); cost(0, 1) = 1
    got = step(OrbitTrainer(), eta=1.0)
    u = np.concatenate([X, -X, [0.0, 0.0]]) / math.sqrt(10.0)
    expected = W.ravel() + math.exp(-0.5 * 0.1) * 1.0 * u
    np.testing.assert_allclose(got.ravel(), expected)


def test_orbit_step_scales_with_cost_and_shrinks():
    task = MulticlassTask(3, 2, COSTS)
    w = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]).ravel()  # predicts class 2, cost(0, 2) = 2
    got = OrbitTrainer(lam=0.5).update(task, X, Y, w, 0.2, np.random.default_rng(0))
    dphi = np.concatenate([X, [0.0, 0.0], -X])
    u = dphi / np.linalg.norm(dphi)
    expected = 0.9 * w + 0.2 * math.exp(-0.5 * (w @ u) ** 2) * 2.0 * u
    np.testing.assert_allclose(got, expected)


def test_no_update_when_correct():
    task = MulticlassTask(3, 2, COSTS)
    w = np.array([[5.0, 0.0], [0.0, 0.0], [0.0, 0.0]]).ravel()
    for trainer in (PerceptronTrainer(), OrbitTrainer()):
        np.testing.assert_array_equal(trainer.update(task, X, Y, w, 1.0, np.random.default_rng(0)), w)


def test_probit_step_matches_its_formula():
    """The probit step, recomputed by hand from the same noise draws."""
    task, w = toy()
    trainer = ProbitTrainer(n_samples=7, noise_scale=0.5, lam=0.1)
    got = trainer.update(task, X, Y, w, 0.3, np.random.default_rng(42))
    noise = np.random.default_rng(42).standard_normal((7, 6))
    costs = np.array([COSTS[Y, task.decode(X, w + 0.5 * e)] for e in noise])
    baselines = (costs.sum() - costs) / 6
    grad = np.mean(noise * (costs - baselines)[:, None], axis=0) / 0.5
    np.testing.assert_allclose(got, (1 - 0.03) * w - 0.3 * grad)


def test_orbit_update_is_minus_gradient_of_orbit_loss():
    """With y_hat held fixed, the orbit step is -sqrt(2 pi) * d(orbit loss)/dw (eq. 7-8)."""
    rng = np.random.default_rng(3)
    costs = np.array([[0, 1, 2, 1], [2, 0, 1, 1], [1, 1, 0, 2], [1, 2, 2, 0]], dtype=float)
    task = MulticlassTask(4, 3, costs)
    checked = 0
    for _ in range(20):
        x = rng.normal(size=3)
        y = int(rng.integers(4))
        w = rng.normal(scale=0.7, size=12)
        y_hat = task.decode(x, w)
        if y_hat == y:
            continue
        phi_true, phi_pred, cost = task.phi(x, y), task.phi(x, y_hat), task.cost(y, y_hat)
        h = 1e-6
        grad = np.array([
            (orbit_loss(w + h * e, phi_true, phi_pred, cost)
             - orbit_loss(w - h * e, phi_true, phi_pred, cost)) / (2 * h)
            for e in np.eye(12)
        ])
        step_ = OrbitTrainer().update(task, x, y, w, 1.0, rng) - w
        np.testing.assert_allclose(step_, -math.sqrt(2 * math.pi) * grad, rtol=1e-5, atol=1e-8)
        checked += 1
    assert checked >= 5


def test_orbit_noise_scale_step_and_gradient():
    """With noise s the step is eta exp(-(w.u/s)^2/2) cost u = -s sqrt(2 pi) d(orbit loss_s)/dw."""
    got = step(OrbitTrainer(noise_scale=0.5), eta=1.0)
    u = np.concatenate([X, -X, [0.0, 0.0]]) / math.sqrt(10.0)
    expected = W.ravel() + math.exp(-0.5 * 0.1 / 0.25) * 1.0 * u
    np.testing.assert_allclose(got.ravel(), expected)
    task, w = toy()
    phi_true, phi_pred = task.phi(X, Y), task.phi(X, task.decode(X, w))
    h = 1e-6
    grad = np.array([(orbit_loss(w + h * e, phi_true, phi_pred, 1.0, noise_scale=0.5)
                      - orbit_loss(w - h * e, phi_true, phi_pred, 1.0, noise_scale=0.5)) / (2 * h)
                     for e in np.eye(6)])
    np.testing.assert_allclose(got.ravel() - w, -0.5 * math.sqrt(2 * math.pi) * grad, rtol=1e-5, atol=1e-8)
    assert OrbitTrainer().noise_scale == 1.0  # the paper's unit noise by default
    with pytest.raises(ValueError, match="noise_scale"):
        OrbitTrainer(noise_scale=0.0).fit(task, [X], [Y])


@pytest.mark.parametrize("schedule, average", [("invsqrt", False), ("constant", True)])
def test_orbit_noise_scale_is_a_rescaling_of_w(schedule, average):
    """Orbit with noise s, step eta, penalty lam from w0 = orbit with unit noise, step eta/s,
    penalty lam s from w0/s: the same decodes, weights divided by s (the trainer's docstring)."""
    X_, Y_ = separable_problem(seed=3, n=40)
    costs = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    task = MulticlassTask(3, 3, costs)
    w0 = np.random.default_rng(1).normal(size=9)
    s = 4.0
    common = dict(epochs=3, schedule=schedule, average=average, seed=2)
    a = OrbitTrainer(eta0=0.8, lam=0.05, noise_scale=s, **common).fit(task, X_, Y_, w0=w0)
    b = OrbitTrainer(eta0=0.8 / s, lam=0.05 * s, **common).fit(task, X_, Y_, w0=w0 / s)
    np.testing.assert_allclose(a.w_ / s, b.w_, rtol=1e-9, atol=1e-12)
    assert [r.train_cost for r in a.history_] == [r.train_cost for r in b.history_]


def test_orbit_max_cost_caps_the_cost_in_the_step():
    task = MulticlassTask(3, 2, COSTS)
    w = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]).ravel()  # predicts class 2, cost(0, 2) = 2
    dphi = np.concatenate([X, [0.0, 0.0], -X])
    u = dphi / np.linalg.norm(dphi)
    factor = math.exp(-0.5 * (w @ u) ** 2)
    for max_cost, used in ((None, 2.0), (5.0, 2.0), (1.5, 1.5)):
        got = OrbitTrainer(max_cost=max_cost).update(task, X, Y, w, 0.2, np.random.default_rng(0))
        np.testing.assert_allclose(got, w + 0.2 * factor * used * u)
    assert OrbitTrainer().max_cost is None
    with pytest.raises(ValueError, match="max_cost"):
        OrbitTrainer(max_cost=0.0).fit(task, [X], [Y])


class OneDimThreshold(StructuredTask):
    """y in {0, 1}; phi(x, 1) = [x], phi(x, 0) = [0]: predicts 1 iff w x > 0. 0/1 cost."""

    n_features = 1

    def phi(self, x, y):
        return np.array([x if y == 1 else 0.0])

    def decode(self, x, w):
        return int(w[0] * x > 0)

    def decode_augmented(self, x, y, w, eps):
        scores = [0.0 + eps * (y != 0), w[0] * x + eps * (y != 1)]
        return int(np.argmax(scores))

    def cost(self, y, y_pred):
        return float(y != y_pred)


@pytest.mark.parametrize("w_value,scale", [(0.3, 1.0), (-0.8, 1.0), (0.5, 2.0)])
@pytest.mark.parametrize("baseline", ["loo", "none", "prediction"])
def test_probit_gradient_matches_closed_form(w_value, scale, baseline):
    """E[cost(1, decode(w + s e))] = P(w + s e <= 0) = Phi(-w/s); its derivative is -pdf(w/s)/s."""
    task = OneDimThreshold()
    trainer = ProbitTrainer(n_samples=200_000, noise_scale=scale, baseline=baseline)
    grad = trainer.gradient_estimate(task, 1.0, 1, np.array([w_value]), np.random.default_rng(7))
    assert grad[0] == pytest.approx(-norm.pdf(w_value / scale) / scale, abs=4e-3)


@pytest.mark.parametrize("name,expected", [
    ("perceptron", 1), ("orbit", 1), ("svm", 1), ("ramp", 2),
    ("direct_toward", 2), ("direct_away", 2), ("probit", 13),
])
def test_decodes_per_update(name, expected):
    task, w = toy()
    counter = CountingTask(task)
    params = {"n_samples": 13} if name == "probit" else {}
    make_trainer(name, **params).update(counter, X, Y, w, 0.5, np.random.default_rng(0))
    assert counter.total == expected
    # and as reported by a fit (from zeros, no warm start)
    params["init_epochs"] = 0
    result = make_trainer(name, epochs=2, **params).fit(task, [X, X + 1], [0, 2])
    assert result.decodes_per_update_ == expected


def separable_problem(seed=0, n=60):
    rng = np.random.default_rng(seed)
    centres = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 3.0]])
    y = rng.integers(0, 3, size=n)
    X_ = centres[y] + rng.normal(scale=0.5, size=(n, 2))
    return [np.append(x, 1.0) for x in X_], [int(v) for v in y]


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_every_trainer_learns_a_separable_problem(name):
    X_, Y_ = separable_problem()
    task = MulticlassTask(3, 3)
    params = {"n_samples": 20} if name == "probit" else {}
    result = make_trainer(name, epochs=8, eta0=0.5, seed=1, **params).fit(task, X_, Y_)
    assert task.mean_cost(X_, Y_, result.w_) <= 0.05
    assert len(result.history_) == 8
    assert result.history_[-1].train_cost == pytest.approx(task.mean_cost(X_, Y_, result.w_))


def test_early_stopping_keeps_best_validation_weights():
    X_, Y_ = separable_problem(seed=1, n=40)
    Xv, Yv = separable_problem(seed=2, n=40)
    flip = [(y + 1) % 3 for y in Yv[:15]] + Yv[15:]  # a noisy validation set makes epochs differ
    task = MulticlassTask(3, 3)
    seen = []
    result = OrbitTrainer(epochs=6, eta0=0.3).fit(task, X_, Y_, Xv, flip, callback=seen.append)
    assert [r.epoch for r in seen] == list(range(1, 7))
    val_costs = [r.val_cost for r in result.history_]
    assert task.mean_cost(Xv, flip, result.w_) == pytest.approx(min(val_costs))
    assert result.history_[result.best_epoch_ - 1].val_cost == min(val_costs)


def test_patience_stops_early():
    X_, Y_ = separable_problem()
    task = MulticlassTask(3, 3)
    # a validation set the model can never improve on after the first epoch
    result = PerceptronTrainer(epochs=20, patience=2).fit(task, X_, Y_, X_[:5], Y_[:5])
    assert len(result.history_) < 20


def test_fit_is_deterministic_per_seed():
    X_, Y_ = separable_problem()
    task = MulticlassTask(3, 3)
    a = ProbitTrainer(epochs=2, n_samples=5, seed=4).fit(task, X_, Y_).w_
    b = ProbitTrainer(epochs=2, n_samples=5, seed=4).fit(task, X_, Y_).w_
    c = ProbitTrainer(epochs=2, n_samples=5, seed=5).fit(task, X_, Y_).w_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_averaging_returns_mean_of_iterates():
    X_, Y_ = separable_problem(n=10)
    task = MulticlassTask(3, 3)
    iterates = []

    class Recording(PerceptronTrainer):
        def update(self, *args):
            w = super().update(*args)
            iterates.append(w)
            return w

    result = Recording(epochs=1, average=True).fit(task, X_, Y_)
    np.testing.assert_allclose(result.w_, np.mean(iterates, axis=0))


def test_step_size_schedules():
    assert OrbitTrainer(eta0=2.0).step_size(4) == pytest.approx(1.0)
    assert OrbitTrainer(eta0=2.0, schedule="constant").step_size(4) == 2.0


def test_bad_parameters_are_rejected_by_fit():
    task = MulticlassTask(3, 3)
    X_, Y_ = [np.ones(3)], [0]
    # constructors only store (scikit-learn's rule); fit checks
    bad = [(OrbitTrainer(schedule="cosine"), "schedule"), (DirectAwayTrainer(eps=-1.0), "eps"),
           (SVMTrainer(epochs=0), "epochs"), (SVMTrainer(eta0=0.0), "eta0"), (SVMTrainer(lam=-1.0), "lam"),
           (RampTrainer(init_epochs=-1), "init_epochs"), (ProbitTrainer(n_samples=1), "leave-one-out"),
           (ProbitTrainer(baseline="mean"), "baseline"), (ProbitTrainer(noise_scale=-1.0), "noise_scale")]
    for trainer, message in bad:
        with pytest.raises(ValueError, match=message):
            trainer.fit(task, X_, Y_)
        assert not hasattr(trainer, "w_")
    with pytest.raises(ValueError, match="unknown trainer"):
        make_trainer("adam")
    with pytest.raises(ValueError, match="differ in length"):
        OrbitTrainer().fit(task, [np.ones(3)], [0, 1])
    with pytest.raises(ValueError, match="w0 must have shape"):
        OrbitTrainer().fit(task, X_, Y_, w0=np.zeros(4))


def test_multiclass_task_rejects_bad_cost_matrix():
    with pytest.raises(ValueError, match="diagonal"):
        MulticlassTask(2, 1, np.array([[1.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="2x2"):
        MulticlassTask(2, 1, np.zeros((3, 3)))


def test_multiclass_decode_many_matches_decode():
    rng = np.random.default_rng(0)
    task = MulticlassTask(4, 3)
    ws = rng.normal(size=(9, 12))
    x = rng.normal(size=3)
    assert task.decode_many(x, ws) == [task.decode(x, w) for w in ws]


def test_warm_start_lets_ramp_learn():
    """Without the SVM warm start, ramp cannot leave w = 0 toward the truth (see Trainer doc)."""
    X_, Y_ = separable_problem()
    task = MulticlassTask(3, 3)
    cold = RampTrainer(epochs=5, eta0=0.5, init_epochs=0).fit(task, X_, Y_)
    warm = RampTrainer(epochs=5, eta0=0.5).fit(task, X_, Y_)
    assert task.mean_cost(X_, Y_, warm.w_) < task.mean_cost(X_, Y_, cold.w_)
    assert warm.n_updates_ == 6 * len(X_)  # 1 warm-start epoch + 5 epochs


# -- the estimator contract ---------------------------------------------------------------

def _all_trainers():
    """Every trainer class with some non-default parameters."""
    return [make_trainer(name, epochs=3, eta0=0.25, seed=4, lam=1e-3) for name in TRAINERS]


@pytest.mark.parametrize("trainer", _all_trainers(), ids=lambda t: t.name)
def test_clone_keeps_params_and_drops_fitted_state(trainer):
    X_, Y_ = separable_problem(n=12)
    task = MulticlassTask(3, 3)
    if trainer.name == "probit":
        trainer.set_params(n_samples=4)
    params = trainer.get_params()
    assert trainer.fit(task, X_, Y_) is trainer  # fit returns the trainer itself
    copy = clone(trainer)
    assert type(copy) is type(trainer) and copy is not trainer
    assert copy.get_params() == params
    assert not hasattr(copy, "w_")
    np.testing.assert_array_equal(copy.fit(task, X_, Y_).w_, trainer.w_)  # same params, same weights


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_constructor_params_are_explicit(name):
    cls = TRAINERS[name]
    sig = inspect.signature(cls.__init__)
    assert not any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in sig.parameters.values())
    names = set(cls().get_params())
    assert {"epochs", "eta0", "schedule", "lam", "average", "seed", "patience", "eval_train",
            "init_epochs"} <= names
    assert cls.name == name


def test_defaults_of_each_rule():
    assert PerceptronTrainer().schedule == "constant" and SVMTrainer().schedule == "invsqrt"
    assert RampTrainer().init_epochs == 1 and DirectAwayTrainer().init_epochs == 1
    assert DirectTowardTrainer().init_epochs == 0 and ProbitTrainer().n_samples == 100


def test_set_params_changes_the_fit():
    X_, Y_ = separable_problem(n=20)
    task = MulticlassTask(3, 3)
    trainer = OrbitTrainer(epochs=2, eta0=0.5)
    assert trainer.set_params(eta0=0.1, seed=3) is trainer
    assert trainer.eta0 == 0.1 and trainer.get_params()["seed"] == 3
    np.testing.assert_array_equal(trainer.fit(task, X_, Y_).w_,
                                  OrbitTrainer(epochs=2, eta0=0.1, seed=3).fit(task, X_, Y_).w_)
    with pytest.raises(ValueError, match="Invalid parameter"):
        trainer.set_params(step=1.0)


def test_unfitted_trainer_has_no_fitted_attributes():
    trainer = SVMTrainer()
    for attribute in ("w_", "history_", "best_epoch_", "n_decodes_", "n_updates_", "fit_seconds_",
                      "update_seconds_", "epoch_weights_", "decodes_per_update_"):
        assert not hasattr(trainer, attribute), attribute
    with pytest.raises(NotFittedError):
        check_is_fitted(trainer)


def test_fitted_attributes():
    X_, Y_ = separable_problem(n=15)
    Xv, Yv = separable_problem(seed=5, n=10)
    task = MulticlassTask(3, 3)
    trainer = SVMTrainer(epochs=3, eta0=0.5).fit(task, X_, Y_, Xv, Yv, keep_epoch_weights=True)
    check_is_fitted(trainer)
    assert trainer.w_.shape == (9,) and len(trainer.history_) == 3 and 0 <= trainer.best_epoch_ <= 3
    assert trainer.n_updates_ == 3 * 15 == trainer.history_[-1].updates
    assert trainer.n_decodes_ == trainer.history_[-1].decodes
    assert trainer.decodes_per_update_ == 1.0
    assert trainer.fit_seconds_ >= trainer.update_seconds_ > 0
    assert len(trainer.epoch_weights_) == 3
    assert [d["epoch"] for d in trainer.history_dicts()] == [1, 2, 3]
    # a refit replaces the fitted state
    trainer.set_params(epochs=1).fit(task, X_, Y_)
    assert len(trainer.history_) == 1 and trainer.epoch_weights_ is None
