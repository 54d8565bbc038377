"""Structured trainers as scikit-learn estimators: one class per update rule, one shared loop (SPEC section 2).

A trainer is an estimator in scikit-learn's sense. Its constructor takes keyword parameters
and only stores them, so ``get_params``, ``set_params`` and :func:`sklearn.base.clone` work
and a trainer can be copied with other parameters; the parameters are checked when
:meth:`Trainer.fit` runs. ``fit`` returns the trainer, which then holds its fitted state in
attributes ending in an underscore::

    trainer = OrbitTrainer(epochs=10, eta0=0.5, lam=1e-3, seed=0)
    trainer.fit(task, X, Y, X_val, Y_val)
    trainer.w_, trainer.history_, trainer.best_epoch_, trainer.decodes_per_update_

``task`` is any :class:`~aligner.learn.task.StructuredTask`; a trainer only calls
``phi``, ``decode``, ``decode_augmented``, ``decode_many``, ``cost`` and ``mean_cost``.

Classes. :class:`Trainer` is the fit contract shared by every trainer: it checks the data,
runs the subclass's epochs, evaluates the weights at every epoch end on the validation set
(and the training set), keeps the best of them and sets the fitted attributes.
:class:`OnlineTrainer` is the trainer of a per-example update rule, the seven subclasses
below; :class:`~aligner.learn.ensemble.SeedAveragedTrainer` is a trainer whose epoch-end
weights are the mean of several online trainers' runs.

The online loop runs stochastic (sub)gradient steps over the examples in a fresh random
order each epoch, with step size ``eta_t = eta0 / sqrt(t)`` (``schedule="invsqrt"``, t
counts updates from 1) or ``eta0`` (``"constant"``), an optional L2 penalty ``lam`` (the
factor ``1 - eta_t * lam`` shrinks ``w`` at each step), optional averaging of the weight
iterates, and early stopping on a validation set's mean cost (the best weights seen at an
epoch end are kept). Decodes are counted by wrapping the task in
:class:`~aligner.learn.task.CountingTask`, so the reported decodes per update are measured.

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
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence

import numpy as np
from sklearn.base import BaseEstimator

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


class EpochEnd(NamedTuple):
    """The state a trainer's epochs reach at one epoch end (epoch 0: the starting weights)."""

    epoch: int
    w: np.ndarray  #: the weights the epoch returns (averaged ones if the trainer averages)
    decodes: int  #: decodes used by updates so far
    updates: int  #: updates so far
    update_seconds: float  #: wall time spent in updates so far, seconds


class Trainer(BaseEstimator):
    """The fit contract of every trainer: epochs, then the best epoch-end weights.

    A subclass implements :meth:`_epoch_ends` (the training itself, as the weights at every
    epoch end) and :meth:`_check_params`; :meth:`fit` evaluates and selects. Fitted
    attributes (set by :meth:`fit`):

    ``w_``
        the weights with the lowest validation cost at an epoch end (the starting weights
        count as epoch 0); without a validation set, the last epoch's.
    ``history_``
        one :class:`EpochRecord` per epoch run.
    ``best_epoch_``
        the epoch (1-based) whose weights ``w_`` are; 0 means the starting weights.
    ``n_decodes_``, ``n_updates_``
        decodes used by the updates and updates made (warm-start ones included).
    ``fit_seconds_``, ``update_seconds_``
        wall time of the fit (evaluation included) and of the updates alone, seconds.
    ``epoch_weights_``
        the weights of every epoch end, in order, with ``fit(keep_epoch_weights=True)``; else None.
    """

    name = "trainer"

    # -- what a subclass implements ------------------------------------------------------
    def _check_params(self) -> None:
        """Raise ``ValueError`` for a bad parameter (called at the start of :meth:`fit`)."""

    def _epoch_ends(self, task: StructuredTask, X: Sequence, Y: Sequence, w0: Optional[np.ndarray],
                    start: float) -> Iterator[EpochEnd]:
        """Train on ``(X, Y)`` from ``w0`` (None: the trainer's own start), yielding the start
        (epoch 0) and then every epoch end. ``start`` is the ``time.perf_counter()`` of the fit's
        beginning. The caller may stop iterating early (patience)."""
        raise NotImplementedError

    def _evaluates_train_cost(self) -> bool:
        """Whether :meth:`fit` records the mean training cost at every epoch end."""
        return True

    def _patience(self) -> Optional[int]:
        """Epochs without a validation improvement after which :meth:`fit` stops (None: never)."""
        return None

    # -- the shared fit ------------------------------------------------------------------
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
    ) -> "Trainer":
        """Train on ``(X, Y)``; early-stop on ``(X_val, Y_val)`` if given. Returns ``self``.

        ``w0`` is the starting weights (default zeros). ``callback(record)`` is called after
        every epoch with its :class:`EpochRecord` (use it for progress bars or logging). With
        ``keep_epoch_weights`` the weights of every epoch end are kept in ``epoch_weights_``
        (averaged ones if the trainer averages).
        """
        self._check_params()
        if len(X) != len(Y):
            raise ValueError(f"X and Y differ in length: {len(X)} vs {len(Y)}")
        if len(X) == 0:
            raise ValueError("no training examples")
        start = time.perf_counter()
        if w0 is not None:
            w0 = np.array(w0, dtype=float)
            if w0.shape != (task.n_features,):
                raise ValueError(f"w0 must have shape ({task.n_features},), got {w0.shape}")
        has_val = X_val is not None and len(X_val) > 0
        eval_train = self._evaluates_train_cost()
        patience = self._patience()
        epoch_ends = self._epoch_ends(task, X, Y, w0, start)

        last = next(epoch_ends)
        best_w = last.w.copy()
        best_val = task.mean_cost(X_val, Y_val, last.w) if has_val else float("inf")
        best_epoch = 0
        history = []
        epoch_weights = [] if keep_epoch_weights else None
        stale = 0
        for last in epoch_ends:
            if epoch_weights is not None:
                epoch_weights.append(last.w.copy())
            train_cost = task.mean_cost(X, Y, last.w) if eval_train else float("nan")
            val_cost = task.mean_cost(X_val, Y_val, last.w) if has_val else float("nan")
            record = EpochRecord(last.epoch, train_cost, val_cost, last.decodes, last.updates,
                                 time.perf_counter() - start, last.update_seconds)
            history.append(record)
            if callback is not None:
                callback(record)
            if not has_val or val_cost < best_val:
                best_val, best_w, best_epoch, stale = val_cost, last.w.copy(), last.epoch, 0
            else:
                stale += 1
                if patience is not None and stale >= patience:
                    break
        epoch_ends.close()
        self.w_ = best_w
        self.history_ = history
        self.best_epoch_ = best_epoch
        self.n_decodes_ = last.decodes
        self.n_updates_ = last.updates
        self.fit_seconds_ = time.perf_counter() - start
        self.update_seconds_ = last.update_seconds
        self.epoch_weights_ = epoch_weights
        return self

    @property
    def decodes_per_update_(self) -> float:
        """Decodes per update of the fit (nan if it made no update)."""
        return self.n_decodes_ / self.n_updates_ if self.n_updates_ else float("nan")

    def history_dicts(self) -> list:
        """``history_`` as a list of plain dicts (for JSON)."""
        return [asdict(r) for r in self.history_]


class OnlineTrainer(Trainer):
    """The trainer of a per-example update rule; subclasses implement :meth:`update`.

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
        do not learn. Those updates and decodes count in the fitted totals; the history records
        only the rule's own epochs.
    """

    name = "online"

    def __init__(
        self,
        *,
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
        self.epochs = epochs
        self.eta0 = eta0
        self.schedule = schedule
        self.lam = lam
        self.average = average
        self.seed = seed
        self.patience = patience
        self.eval_train = eval_train
        self.init_epochs = init_epochs

    def _check_params(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.eta0 <= 0:
            raise ValueError(f"eta0 must be > 0, got {self.eta0}")
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam}")
        if self.init_epochs < 0:
            raise ValueError(f"init_epochs must be >= 0, got {self.init_epochs}")

    def _evaluates_train_cost(self) -> bool:
        return bool(self.eval_train)

    def _patience(self) -> Optional[int]:
        return self.patience

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
    def _epoch_ends(self, task, X, Y, w0, start):
        rng = np.random.default_rng(self.seed)
        counter = CountingTask(task)
        w = np.zeros(task.n_features) if w0 is None else w0
        n_init_decodes = n_init_updates = 0
        if w0 is None and self.init_epochs:
            init = SVMTrainer(epochs=self.init_epochs, eta0=self.eta0, schedule=self.schedule,
                              lam=self.lam, seed=self.seed, eval_train=False).fit(task, X, Y)
            w = init.w_
            n_init_decodes, n_init_updates = init.n_decodes_, init.n_updates_
        counter.augmented_decodes = n_init_decodes
        w_sum = np.zeros_like(w)
        t = 0
        update_seconds = time.perf_counter() - start
        yield EpochEnd(0, w, counter.total, n_init_updates, update_seconds)
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
            yield EpochEnd(epoch, w_out, counter.total, t + n_init_updates, update_seconds)


class PerceptronTrainer(OnlineTrainer):
    """Structured perceptron (chapter eq. 1.5): ``w += eta (phi(y) - phi(y_hat))``.

    Defaults to the classic constant step 1 with no regularisation.
    """

    name = "perceptron"

    def __init__(
        self,
        *,
        epochs: int = 10,
        eta0: float = 1.0,
        schedule: str = "constant",
        lam: float = 0.0,
        average: bool = False,
        seed: int = 0,
        patience: Optional[int] = None,
        eval_train: bool = True,
        init_epochs: int = 0,
    ):
        super().__init__(epochs=epochs, eta0=eta0, schedule=schedule, lam=lam, average=average, seed=seed,
                         patience=patience, eval_train=eval_train,
                         init_epochs=init_epochs)

    def update(self, task, x, y, w, eta, rng):
        return self._step(task, x, w, eta, y, task.decode(x, w))


class SVMTrainer(OnlineTrainer):
    """Structural SVM, margin-rescaled hinge, by SGD (chapter eq. 1.17-1.18).

    ``y_l = decode_augmented(x, y, w, +1)``; ``w = (1 - eta lam) w + eta (phi(y) - phi(y_l))``.
    """

    name = "svm"

    def update(self, task, x, y, w, eta, rng):
        return self._step(task, x, w, eta, y, task.decode_augmented(x, y, w, 1.0))


class RampTrainer(OnlineTrainer):
    """Structured ramp loss (chapter eq. 1.31-1.32).

    ``w = (1 - eta lam) w + eta (phi(y_hat) - phi(y_l))`` with ``y_l`` the loss-augmented decode.
    """

    name = "ramp"

    def __init__(
        self,
        *,
        epochs: int = 10,
        eta0: float = 1.0,
        schedule: str = "invsqrt",
        lam: float = 0.0,
        average: bool = False,
        seed: int = 0,
        patience: Optional[int] = None,
        eval_train: bool = True,
        init_epochs: int = 1,
    ):
        super().__init__(epochs=epochs, eta0=eta0, schedule=schedule, lam=lam, average=average, seed=seed,
                         patience=patience, eval_train=eval_train,
                         init_epochs=init_epochs)

    def update(self, task, x, y, w, eta, rng):
        y_hat = task.decode(x, w)
        return self._step(task, x, w, eta, y_hat, task.decode_augmented(x, y, w, 1.0))


class _DirectLossTrainer(OnlineTrainer):
    """Direct loss minimisation (McAllester, Hazan & Keshet 2010); ``eps > 0`` sets the perturbation."""

    def __init__(
        self,
        *,
        epochs: int = 10,
        eta0: float = 1.0,
        eps: float = 1.0,
        schedule: str = "invsqrt",
        lam: float = 0.0,
        average: bool = False,
        seed: int = 0,
        patience: Optional[int] = None,
        eval_train: bool = True,
        init_epochs: int = 0,
    ):
        super().__init__(epochs=epochs, eta0=eta0, schedule=schedule, lam=lam, average=average, seed=seed,
                         patience=patience, eval_train=eval_train,
                         init_epochs=init_epochs)
        self.eps = eps

    def _check_params(self) -> None:
        super()._check_params()
        if self.eps <= 0:
            raise ValueError(f"eps must be > 0 (the direction is the trainer's), got {self.eps}")


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

    def __init__(
        self,
        *,
        epochs: int = 10,
        eta0: float = 1.0,
        eps: float = 1.0,
        schedule: str = "invsqrt",
        lam: float = 0.0,
        average: bool = False,
        seed: int = 0,
        patience: Optional[int] = None,
        eval_train: bool = True,
        init_epochs: int = 1,
    ):
        super().__init__(epochs=epochs, eta0=eta0, eps=eps, schedule=schedule, lam=lam, average=average, seed=seed,
                         patience=patience, eval_train=eval_train,
                         init_epochs=init_epochs)

    def update(self, task, x, y, w, eta, rng):
        y_hat = task.decode(x, w)
        y_worse = task.decode_augmented(x, y, w, self.eps)
        return self._step(task, x, w, eta, y_hat, y_worse, scale=1.0 / self.eps)


class ProbitTrainer(OnlineTrainer):
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

    def __init__(
        self,
        *,
        epochs: int = 10,
        eta0: float = 1.0,
        n_samples: int = 100,
        noise_scale: float = 1.0,
        baseline: str = "loo",
        schedule: str = "invsqrt",
        lam: float = 0.0,
        average: bool = False,
        seed: int = 0,
        patience: Optional[int] = None,
        eval_train: bool = True,
        init_epochs: int = 0,
    ):
        super().__init__(epochs=epochs, eta0=eta0, schedule=schedule, lam=lam, average=average, seed=seed,
                         patience=patience, eval_train=eval_train,
                         init_epochs=init_epochs)
        self.n_samples = n_samples
        self.noise_scale = noise_scale
        self.baseline = baseline

    def _check_params(self) -> None:
        super()._check_params()
        if self.n_samples < 2 and self.baseline == "loo":
            raise ValueError("the leave-one-out baseline needs n_samples >= 2")
        if self.n_samples < 1:
            raise ValueError(f"n_samples must be >= 1, got {self.n_samples}")
        if self.baseline not in self.BASELINES:
            raise ValueError(f"baseline must be one of {self.BASELINES}, got {self.baseline!r}")
        if self.noise_scale <= 0:
            raise ValueError(f"noise_scale must be > 0, got {self.noise_scale}")

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


class OrbitTrainer(OnlineTrainer):
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

    def __init__(
        self,
        *,
        epochs: int = 10,
        eta0: float = 1.0,
        noise_scale: float = 1.0,
        max_cost: Optional[float] = None,
        schedule: str = "invsqrt",
        lam: float = 0.0,
        average: bool = False,
        seed: int = 0,
        patience: Optional[int] = None,
        eval_train: bool = True,
        init_epochs: int = 0,
    ):
        super().__init__(epochs=epochs, eta0=eta0, schedule=schedule, lam=lam, average=average, seed=seed,
                         patience=patience, eval_train=eval_train,
                         init_epochs=init_epochs)
        self.noise_scale = noise_scale
        self.max_cost = max_cost

    def _check_params(self) -> None:
        super()._check_params()
        if self.noise_scale <= 0:
            raise ValueError(f"noise_scale must be > 0, got {self.noise_scale}")
        if self.max_cost is not None and self.max_cost <= 0:
            raise ValueError(f"max_cost must be > 0 or None, got {self.max_cost}")

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


def make_trainer(name: str, **params) -> OnlineTrainer:
    """An unfitted trainer by its name (``perceptron, svm, ramp, direct_toward, direct_away, probit,
    orbit``) with the given parameters."""
    try:
        cls = TRAINERS[name]
    except KeyError:
        raise ValueError(f"unknown trainer {name!r}; choose from {', '.join(TRAINERS)}") from None
    return cls(**params)
