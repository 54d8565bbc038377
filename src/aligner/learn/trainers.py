"""Structured trainers: one class per update rule, one shared training loop (SPEC section 2).

Every trainer is a plain-parameter estimator in the scikit-learn manner::

    trainer = OrbitTrainer(epochs=10, eta0=0.5, lam=1e-3, seed=0)
    result = trainer.fit(task, X, Y, X_val, Y_val)
    result.w, result.history

``task`` is any :class:`~aligner.learn.task.StructuredTask`; the trainer only calls
``phi``, ``decode``, ``decode_augmented``, ``decode_many`` and ``cost``.

The loop (:meth:`Trainer.fit`) runs stochastic (sub)gradient steps over the examples
in a fresh random order each epoch, with step size ``eta_t = eta0 / sqrt(t)``
(``schedule="invsqrt"``, t counts updates from 1) or ``eta0`` (``"constant"``), an
optional L2 penalty ``lam`` (the factor ``1 - eta_t * lam`` shrinks ``w`` at each
step), optional averaging of the weight iterates, and early stopping on a
validation set's mean cost (the best weights seen at an epoch end are kept). Decodes
are counted by wrapping the task in :class:`~aligner.learn.task.CountingTask`, so
the reported decodes per update are measured.

Update rules (one example, ``y_hat = decode(x, w)``, ``eta = eta_t``):

=================  ============================================================  =========
trainer            update                                                        decodes
=================  ============================================================  =========
perceptron         ``w += eta (phi(y) - phi(y_hat))``                             1
svm                ``y_l = decode_aug(+1)``; ``w += eta (phi(y) - phi(y_l))``     1 (aug.)
ramp               ``w += eta (phi(y_hat) - phi(y_l))``                           2
direct_toward      ``y_b = decode_aug(-eps)``; ``w += eta/eps (phi(y_b)-phi(y_hat))``  2
direct_away        ``y_w = decode_aug(+eps)``; ``w += eta/eps (phi(y_hat)-phi(y_w))``  2
probit             ``w -= eta mean_n e_n (cost(y, decode(w + s e_n)) - b_n) / s``  N
orbit              ``w += eta exp(-(w.u/s)^2/2) min(cost(y, y_hat), c) u``, ``u = dphi/|dphi|``  1
=================  ============================================================  =========

(all with ``w`` first shrunk by ``1 - eta * lam``; ``s`` is ``noise_scale``, default 1, and
orbit's ``c`` is ``max_cost``, default none).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from aligner.learn.task import CountingTask, StructuredTask

SCHEDULES = ("invsqrt", "constant")


@dataclass
class EpochRecord:
    """What one epoch did. Costs are the task's own cost, averaged over examples."""

    epoch: int
    train_cost: float  #: mean cost on the training set with the epoch-end weights (nan if not evaluated)
    val_cost: float  #: mean cost on the validation set (nan without one)
    decodes: int  #: decodes used by updates so far (plain + loss-augmented)
    updates: int  #: updates so far
    seconds: float  #: wall time since fit began, seconds (evaluation included)
    update_seconds: float  #: wall time spent in updates so far, seconds


@dataclass
class FitResult:
    """Weights and history of a fit."""

    w: np.ndarray
    history: list = field(default_factory=list)
    best_epoch: int = 0  #: epoch (1-based) whose weights ``w`` are; 0 means the initial weights
    decodes: int = 0
    updates: int = 0
    seconds: float = 0.0
    update_seconds: float = 0.0
    #: the returned weights at every epoch end, in order (only with ``fit(keep_epoch_weights=True)``)
    epoch_weights: Optional[list] = None

    @property
    def decodes_per_update(self) -> float:
        return self.decodes / self.updates if self.updates else float("nan")

    def history_dicts(self) -> list:
        return [asdict(r) for r in self.history]


class Trainer:
    """Shared training loop; subclasses implement :meth:`update`.

    Parameters
    ----------
    epochs : passes over the training set.
    eta0 : initial step size.
    schedule : ``"invsqrt"`` (``eta0 / sqrt(t)``) or ``"constant"``.
    lam : L2 regularisation strength (``lambda`` of SPEC section 2).
    average : return (and validate) the running average of the weight iterates.
    seed : seeds the example order and any sampling the rule does.
    patience : stop after this many epochs without a validation improvement (None: run all epochs).
    eval_train : evaluate the mean training cost at each epoch end (costs one decode per example,
        not counted as update decodes).
    init_epochs : epochs of the structural SVM (a convex surrogate) run first to initialise ``w``
        when no ``w0`` is given. Ramp and away-from-worse direct loss need it: at ``w = 0`` every
        decode ties, and neither rule ever moves ``w`` toward the true output, so from zero they
        do not learn. Those updates and decodes count in the result; the history records only
        the rule's own epochs.
    """

    name = "trainer"

    def __init__(
        self,
        epochs: int = 10,
        eta0: float = 1.0,
        schedule: str = "invsqrt",
        lam: float = 0.0,
        average: bool = False,
        seed: int = 0,
        patience: Optional[int] = None,
        eval_train: bool = True,
        init_epochs: int = 0,
    ):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        if epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {epochs}")
        if eta0 <= 0:
            raise ValueError(f"eta0 must be > 0, got {eta0}")
        if lam < 0:
            raise ValueError(f"lam must be >= 0, got {lam}")
        self.epochs = epochs
        self.eta0 = eta0
        self.schedule = schedule
        self.lam = lam
        self.average = average
        self.seed = seed
        self.patience = patience
        self.eval_train = eval_train
        if init_epochs < 0:
            raise ValueError(f"init_epochs must be >= 0, got {init_epochs}")
        self.init_epochs = init_epochs

    # -- parameters, scikit-learn style -------------------------------------------------
    def get_params(self) -> dict:
        import inspect

        names = []
        for klass in type(self).__mro__:
            if klass is object:
                continue
            sig = inspect.signature(klass.__init__)
            names += [name for name, p in sig.parameters.items()
                      if name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD and name not in names]
        return {n: getattr(self, n) for n in names}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    # -- the rule ---------------------------------------------------------------------
    def step_size(self, t: int) -> float:
        """Step size of update number ``t`` (1-based)."""
        if self.schedule == "constant":
            return self.eta0
        return self.eta0 / np.sqrt(t)

    def update(self, task: StructuredTask, x: Any, y: Any, w: np.ndarray, eta: float,
               rng: np.random.Generator) -> np.ndarray:
        """Return the weights after one update on example ``(x, y)``. ``w`` is not modified."""
        raise NotImplementedError

    def _shrink(self, w: np.ndarray, eta: float) -> np.ndarray:
        return (1.0 - eta * self.lam) * w if self.lam else w.copy()

    def _step(self, task, x, w, eta, toward, away, scale: float = 1.0) -> np.ndarray:
        """``(1 - eta lam) w + scale eta (phi(x, toward) - phi(x, away))``; no step if the two agree."""
        w_new = self._shrink(w, eta)
        if not task.same(toward, away):
            w_new += scale * eta * (task.phi(x, toward) - task.phi(x, away))
        return w_new

    # -- the loop -----------------------------------------------------------------------
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
        """Train on ``(X, Y)``; early-stop on ``(X_val, Y_val)`` if given.

        ``callback(record)`` is called after every epoch with its :class:`EpochRecord`
        (use it for progress bars or logging). Returns a :class:`FitResult` whose ``w`` is
        the weight vector with the lowest validation cost at an epoch end (the last one
        without a validation set). With ``keep_epoch_weights`` the result also holds the
        weights of every epoch end (``epoch_weights``; averaged ones if ``average``).
        """
        if len(X) != len(Y):
            raise ValueError(f"X and Y differ in length: {len(X)} vs {len(Y)}")
        if len(X) == 0:
            raise ValueError("no training examples")
        has_val = X_val is not None and len(X_val) > 0
        rng = np.random.default_rng(self.seed)
        counter = CountingTask(task)
        start = time.perf_counter()
        w = np.zeros(task.n_features) if w0 is None else np.array(w0, dtype=float)
        if w.shape != (task.n_features,):
            raise ValueError(f"w0 must have shape ({task.n_features},), got {w.shape}")
        n_init_decodes = n_init_updates = 0
        if w0 is None and self.init_epochs:
            init = SVMTrainer(epochs=self.init_epochs, eta0=self.eta0, schedule=self.schedule,
                              lam=self.lam, seed=self.seed, eval_train=False)
            init_result = init.fit(task, X, Y)
            w = init_result.w
            n_init_decodes, n_init_updates = init_result.decodes, init_result.updates
        counter.augmented_decodes = n_init_decodes
        w_sum = np.zeros_like(w)
        t = 0
        update_seconds = time.perf_counter() - start

        best_w = w.copy()
        best_val = task.mean_cost(X_val, Y_val, w) if has_val else float("inf")
        best_epoch = 0
        history = []
        epoch_weights = [] if keep_epoch_weights else None
        stale = 0
        for epoch in range(1, self.epochs + 1):
            order = rng.permutation(len(X))
            t0 = time.perf_counter()
            for i in order:
                t += 1
                w = self.update(counter, X[i], Y[i], w, self.step_size(t), rng)
                if self.average:
                    w_sum += w
            update_seconds += time.perf_counter() - t0
            if not np.all(np.isfinite(w)):
                raise FloatingPointError(
                    f"{self.name}: weights became non-finite in epoch {epoch}; lower eta0")
            w_out = w_sum / t if self.average else w
            if epoch_weights is not None:
                epoch_weights.append(w_out.copy())
            train_cost = task.mean_cost(X, Y, w_out) if self.eval_train else float("nan")
            val_cost = task.mean_cost(X_val, Y_val, w_out) if has_val else float("nan")
            record = EpochRecord(epoch, train_cost, val_cost, counter.total, t + n_init_updates,
                                 time.perf_counter() - start, update_seconds)
            history.append(record)
            if callback is not None:
                callback(record)
            if not has_val or val_cost < best_val:
                best_val, best_w, best_epoch, stale = val_cost, w_out.copy(), epoch, 0
            else:
                stale += 1
                if self.patience is not None and stale >= self.patience:
                    break
        return FitResult(best_w, history, best_epoch, counter.total, t + n_init_updates,
                         time.perf_counter() - start, update_seconds, epoch_weights)


class PerceptronTrainer(Trainer):
    """Structured perceptron (chapter eq. 1.5): ``w += eta (phi(y) - phi(y_hat))``.

    Defaults to the classic constant step 1 with no regularisation.
    """

    name = "perceptron"

    def __init__(self, epochs=10, eta0=1.0, schedule="constant", lam=0.0, **kw):
        super().__init__(epochs=epochs, eta0=eta0, schedule=schedule, lam=lam, **kw)

    def update(self, task, x, y, w, eta, rng):
        return self._step(task, x, w, eta, y, task.decode(x, w))


class SVMTrainer(Trainer):
    """Structural SVM, margin-rescaled hinge, by SGD (chapter eq. 1.17-1.18).

    ``y_l = decode_augmented(x, y, w, +1)``; ``w = (1 - eta lam) w + eta (phi(y) - phi(y_l))``.
    """

    name = "svm"

    def update(self, task, x, y, w, eta, rng):
        return self._step(task, x, w, eta, y, task.decode_augmented(x, y, w, 1.0))


class RampTrainer(Trainer):
    """Structured ramp loss (chapter eq. 1.31-1.32).

    ``w = (1 - eta lam) w + eta (phi(y_hat) - phi(y_l))`` with ``y_l`` the loss-augmented decode.
    """

    name = "ramp"

    def __init__(self, epochs=10, eta0=1.0, init_epochs=1, **kw):
        super().__init__(epochs=epochs, eta0=eta0, init_epochs=init_epochs, **kw)

    def update(self, task, x, y, w, eta, rng):
        y_hat = task.decode(x, w)
        return self._step(task, x, w, eta, y_hat, task.decode_augmented(x, y, w, 1.0))


class _DirectLossTrainer(Trainer):
    """Direct loss minimisation (McAllester, Hazan & Keshet 2010); ``eps > 0`` sets the perturbation."""

    def __init__(self, epochs=10, eta0=1.0, eps=1.0, **kw):
        super().__init__(epochs=epochs, eta0=eta0, **kw)
        if eps <= 0:
            raise ValueError(f"eps must be > 0 (the direction is the trainer's), got {eps}")
        self.eps = eps


class DirectTowardTrainer(_DirectLossTrainer):
    """Direct loss, toward-better (DLM sec. 5, chapter eq. 1.30).

    ``y_b = decode_augmented(x, y, w, -eps)``; ``w += (eta/eps) (phi(y_b) - phi(y_hat))``.
    """

    name = "direct_toward"

    def update(self, task, x, y, w, eta, rng):
        y_hat = task.decode(x, w)
        y_better = task.decode_augmented(x, y, w, -self.eps)
        return self._step(task, x, w, eta, y_better, y_hat, scale=1.0 / self.eps)


class DirectAwayTrainer(_DirectLossTrainer):
    """Direct loss, away-from-worse (DLM eq. 6-7, chapter eq. 1.29).

    ``y_w = decode_augmented(x, y, w, +eps)``; ``w += (eta/eps) (phi(y_hat) - phi(y_w))``.
    """

    name = "direct_away"

    def __init__(self, epochs=10, eta0=1.0, eps=1.0, init_epochs=1, **kw):
        super().__init__(epochs=epochs, eta0=eta0, eps=eps, init_epochs=init_epochs, **kw)

    def update(self, task, x, y, w, eta, rng):
        y_hat = task.decode(x, w)
        y_worse = task.decode_augmented(x, y, w, self.eps)
        return self._step(task, x, w, eta, y_hat, y_worse, scale=1.0 / self.eps)


class ProbitTrainer(Trainer):
    """Structured probit loss by sampled gradients (chapter eq. 1.34-1.43).

    Draws ``e_1..e_N ~ N(0, I)``, decodes ``x`` under every ``w + noise_scale * e_n`` (in one
    ``task.decode_many`` call, which tasks may run in parallel), and steps along
    ``-g`` with ``g = mean_n e_n (cost_n - b_n) / noise_scale`` — descent on
    ``E[cost(y, y_{w + s e})] + lam/2 |w|^2`` (SPEC notes the chapter's sign).

    ``baseline`` lowers the variance without changing the expectation:
    ``"loo"`` (default) uses the mean cost of the other N-1 samples (independent of
    ``e_n``, so unbiased, and free: N decodes per update); ``"prediction"`` uses
    ``cost(y, decode(x, w))`` as SPEC section 2 suggests, at one extra decode;
    ``"none"`` uses no baseline.
    """

    name = "probit"
    BASELINES = ("loo", "prediction", "none")

    def __init__(self, epochs=10, eta0=1.0, n_samples=100, noise_scale=1.0, baseline="loo", **kw):
        super().__init__(epochs=epochs, eta0=eta0, **kw)
        if n_samples < 2 and baseline == "loo":
            raise ValueError("the leave-one-out baseline needs n_samples >= 2")
        if baseline not in self.BASELINES:
            raise ValueError(f"baseline must be one of {self.BASELINES}, got {baseline!r}")
        if noise_scale <= 0:
            raise ValueError(f"noise_scale must be > 0, got {noise_scale}")
        self.n_samples = n_samples
        self.noise_scale = noise_scale
        self.baseline = baseline

    def gradient_estimate(self, task, x, y, w, rng) -> np.ndarray:
        """Monte-Carlo estimate of ``d/dw E_e[cost(y, decode(x, w + s e))]``."""
        noise = rng.standard_normal((self.n_samples, w.shape[0]))
        outputs = task.decode_many(x, w[None, :] + self.noise_scale * noise)
        costs = np.array([task.cost(y, y_n) for y_n in outputs], dtype=float)
        if self.baseline == "loo":
            n = len(costs)
            baselines = (costs.sum() - costs) / (n - 1)
        elif self.baseline == "prediction":
            baselines = task.cost(y, task.decode(x, w))
        else:
            baselines = 0.0
        return (noise * (costs - baselines)[:, None]).mean(axis=0) / self.noise_scale

    def update(self, task, x, y, w, eta, rng):
        grad = self.gradient_estimate(task, x, y, w, rng)
        return self._shrink(w, eta) - eta * grad


class OrbitTrainer(Trainer):
    """Orbit loss (Karmon & Keshet 2018, eq. 8).

    ``dphi = phi(y) - phi(y_hat)``, ``u = dphi / |dphi|`` (0 if ``y_hat == y``);
    ``w = (1 - eta lam) w + eta exp(-(w.u)^2 / (2 s^2)) cost(y, y_hat) u`` with
    ``s = noise_scale``. This is minus the gradient of the orbit loss
    ``cost * P[s N(0,1) > w.u]`` for a fixed ``y_hat``, with its ``1/(s sqrt(2 pi))``
    absorbed into ``eta`` (see :func:`orbit_loss`), so a step moves ``w`` by ``eta * cost``
    times the Gaussian factor whatever ``s``.

    ``noise_scale`` (default 1: the paper's unit noise) is the std of the score noise the
    loss smooths over, as ``ProbitTrainer``'s ``noise_scale`` is that of the weight noise
    (the orbit loss is the probit loss with the noise projected on ``u``, eq. 12-14). Unlike
    the perceptron's, the rule is not invariant to the scale of ``w``: orbit with noise
    ``s``, step ``eta``, penalty ``lam`` and start ``w0`` makes exactly the decodes of orbit
    with unit noise, step ``eta / s``, penalty ``lam * s`` and start ``w0 / s`` (its weights
    are ``w / s``). So ``noise_scale`` is the scale of ``w`` relative to the unit Gaussian --
    a hyper-parameter the paper fixes implicitly through its features and ``w0``.

    ``max_cost`` (default None: the task's cost as is) caps the cost in the step at
    ``min(cost, max_cost)``, i.e. trains on the orbit loss of the bounded cost. The paper's
    analysis assumes a cost in [0, 1] (Lemma 2); an unbounded cost such as the
    tau-insensitive alignment loss (frames per phone) is heavy-tailed -- a degenerate decode
    costs 40-100 frames per phone against a typical 0.5 -- and since the step is proportional
    to the cost (the perceptron's is bounded by ``|dphi|``), one such decode throws ``|w|``
    far out, where ``exp(-(w.u/s)^2/2)`` vanishes for every later example and the rule
    stops moving. With ``max_cost`` a step is at most ``eta``.
    """

    name = "orbit"

    def __init__(self, epochs=10, eta0=1.0, noise_scale=1.0, max_cost=None, **kw):
        super().__init__(epochs=epochs, eta0=eta0, **kw)
        if noise_scale <= 0:
            raise ValueError(f"noise_scale must be > 0, got {noise_scale}")
        if max_cost is not None and max_cost <= 0:
            raise ValueError(f"max_cost must be > 0 or None, got {max_cost}")
        self.noise_scale = noise_scale
        self.max_cost = max_cost

    def update(self, task, x, y, w, eta, rng):
        y_hat = task.decode(x, w)
        w_new = self._shrink(w, eta)
        if task.same(y, y_hat):
            return w_new
        dphi = task.phi(x, y) - task.phi(x, y_hat)
        norm = np.linalg.norm(dphi)
        if norm == 0.0:  # a different output with identical features: no direction to move
            return w_new
        u = dphi / norm
        margin = float(w @ u) / self.noise_scale
        cost = task.cost(y, y_hat)
        if self.max_cost is not None:
            cost = min(cost, self.max_cost)
        w_new += eta * np.exp(-0.5 * margin * margin) * cost * u
        return w_new


def orbit_loss(w: np.ndarray, phi_true: np.ndarray, phi_pred: np.ndarray, cost: float,
               noise_scale: float = 1.0) -> float:
    """The orbit loss ``cost * P[s e > w.u]``, ``e ~ N(0, 1)``, ``s = noise_scale``,
    ``u = (phi_true - phi_pred)/|.|`` (eq. 5; the paper's ``s = 1``)."""
    from scipy.stats import norm

    dphi = phi_true - phi_pred
    length = np.linalg.norm(dphi)
    if length == 0.0:
        return 0.0
    return float(cost * norm.sf(w @ (dphi / length) / noise_scale))


TRAINERS = {
    cls.name: cls
    for cls in (PerceptronTrainer, SVMTrainer, RampTrainer, DirectTowardTrainer,
                DirectAwayTrainer, ProbitTrainer, OrbitTrainer)
}


def make_trainer(name: str, **params) -> Trainer:
    """Build a trainer by its name (``perceptron, svm, ramp, direct_toward, direct_away, probit, orbit``)."""
    try:
        cls = TRAINERS[name]
    except KeyError:
        raise ValueError(f"unknown trainer {name!r}; choose from {', '.join(TRAINERS)}") from None
    return cls(**params)
