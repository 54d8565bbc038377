"""A smaller network frame classifier trained to reproduce a larger one (knowledge distillation).

The shipped frame classifier is several networks averaged into one hidden layer of many ReLU
units (:func:`~aligner.features.frame_classifier.averaged_networks`); every frame of every
recording goes through that layer, so its width sets most of the cost of scoring. A *student*
of one narrower layer is trained on the *teacher*'s outputs instead of the hand labels: on every
training frame (and on the VTLP and simulated-condition copies the teacher learned from), its
outputs ``f_s(x)`` are fitted to the teacher's ``f_t(x)`` (the calibrated output layer, whose
log softmax the scores are). The loss per frame is

    KL(softmax(f_t / tau) || softmax(f_s / tau)) tau^2  +  beta * mean_c (f_s - f_t - m)^2

with ``m`` the per-frame mean difference (the scores ignore a per-frame constant): the KL term
matches the posteriors the decoder reads where they matter, the squared term (``beta``) keeps the
scores of unlikely classes close too, since a forced alignment reads the transcript's phones
whatever their rank. The student keeps the teacher's input standardisation, context, temperature,
smoothing and class priors, so it is a drop-in replacement for the teacher in a model: the 7
weights, refiner, confidence model and gates fitted on the teacher's scores read the student's.

Training: mini-batch Adam in float32 numpy (the frames are shuffled every epoch), its step
halved after every two epochs without a lower loss on the held-out groups (whole recordings with
their copies), stopped after ``patience`` such epochs, the best epoch's layers kept
(:func:`train_student`). Units that never fire on the training frames are dropped.

The universal model's scorer (a :class:`~aligner.features.composed_network.ComposedNetwork`,
several scorers averaged) is distilled the same way by :func:`distil_composed_network`: its
student learns the teacher's image of each frame in the description space (squared error), the
output every phone's logit is composed from, and stays a ``ComposedNetwork`` of fewer units.
"""

from __future__ import annotations

import copy
import time
from typing import Callable, Optional, Sequence

import numpy as np

from aligner.errors import ModelError
from aligner.features.frame_classifier import FrameClassifier, flush_subnormals
from aligner.runtime import blas

#: frames of the teacher's outputs computed at once (bounded memory)
TEACHER_BLOCK_FRAMES = 8192


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


class _Adam:
    """Adam over a list of float32 arrays, updated in place."""

    def __init__(self, params: list, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, b1, b2, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: list) -> None:
        self.t += 1
        c1, c2 = 1.0 - self.b1 ** self.t, 1.0 - self.b2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * (g * g)
            p -= np.float32(self.lr / c1) * m / (np.sqrt(v / np.float32(c2)) + np.float32(self.eps))


def _forward(P, W1, b1, W2, b2) -> tuple:
    """``(H (n, m), F (n, C))``: the ReLU units ``max(0, P W1 + b1)`` of a batch's (n, k)
    standardised inputs ``P`` and the outputs ``H W2 + b2``, float32."""
    H = P @ W1
    H += b1
    np.maximum(H, np.float32(0.0), out=H)
    F = H @ W2
    F += b2
    return H, F


def _backward(P, H, W2, dF) -> list:
    """``[gW1, gb1, gW2, gb2]``: the gradients of the layers of :func:`_forward` from the loss's
    gradient ``dF`` (n, C) with respect to its outputs (no penalty)."""
    gW2 = H.T @ dF
    gb2 = dF.sum(axis=0)
    dH = dF @ W2.T
    dH *= H > 0
    gW1 = P.T @ dH
    gb1 = dH.sum(axis=0)
    return [gW1, gb1, gW2, gb2]


def _loss_and_grad(P, target, target_soft, W1, b1, W2, b2, tau: float, beta: float, alpha: float, n_total: int):
    """Mean distillation loss of a batch and its gradients (module docstring); ``P`` (n, k) the
    standardised inputs, ``target`` (n, C) the teacher's outputs, ``target_soft`` its softmax at
    ``tau``; ``alpha`` the L2 penalty of the weights (scaled by the batch's share of the data)."""
    n = P.shape[0]
    H, F = _forward(P, W1, b1, W2, b2)
    soft = _softmax(F / np.float32(tau))
    diff = F - target
    diff -= diff.mean(axis=1, keepdims=True)
    kl = float(np.sum(target_soft * (np.log(np.maximum(target_soft, 1e-12)) - np.log(np.maximum(soft, 1e-12)))))
    loss = (tau * tau * kl + beta * float(np.sum(diff * diff)) / F.shape[1]) / n
    # d loss / d F: tau (soft - target_soft) for the KL (times tau^2 / tau), 2 beta diff / C for the squares
    dF = (np.float32(tau) * (soft - target_soft) + np.float32(2.0 * beta / F.shape[1]) * diff) / np.float32(n)
    gW1, gb1, gW2, gb2 = _backward(P, H, W2, dF)
    share = np.float32(alpha * n / n_total / n)
    gW1 += share * W1
    gW2 += share * W2
    return loss, [gW1, gb1, gW2, gb2]


def _held_loss(P, targets, params, loss_and_grad) -> float:
    """Mean loss of frames ``P`` (n, k) against ``targets`` (arrays of n rows), in blocks, no penalty."""
    total, n = 0.0, P.shape[0]
    for a in range(0, n, TEACHER_BLOCK_FRAMES):
        b = min(n, a + TEACHER_BLOCK_FRAMES)
        loss, _ = loss_and_grad(P[a:b], [t[a:b] for t in targets], params, 0.0, n)
        total += loss * (b - a)
    return total / max(n, 1)


def held_out_groups(frames_list: Sequence, groups: Optional[Sequence], held_fraction: float, rng) -> tuple:
    """``(group names (one str per array of frames_list), the held-out names (set))``: the groups
    ``groups[i]`` of the arrays (None: each array its own), and ``held_fraction`` of them (at least
    one, never all; none of a single group) drawn by ``rng`` to stop a student's training."""
    group_names = [str(g) for g in (groups if groups is not None else range(len(frames_list)))]
    if len(group_names) != len(frames_list):
        raise ValueError(f"{len(group_names)} groups for {len(frames_list)} frame arrays")
    names = sorted(set(group_names))
    n_held = min(max(1, int(round(held_fraction * len(names)))), len(names) - 1) if len(names) > 1 else 0
    return group_names, set(rng.permutation(names)[:n_held].tolist())


def train_student(params: list, loss_and_grad: Callable, P_tr: np.ndarray, targets_tr: Sequence[np.ndarray],
                  P_va: np.ndarray, targets_va: Sequence[np.ndarray], rng, epochs: int, batch_size: int,
                  learning_rate: float, alpha: float, patience: int,
                  progress: Optional[Callable[[int, float, float], None]] = None,
                  max_seconds: Optional[float] = None) -> tuple:
    """Mini-batch Adam of a student's layers ``params`` (float32 arrays, updated in place) on the
    standardised frames ``P_tr`` (n, k) and their ``targets_tr`` (arrays of n rows: the teacher's
    outputs), the frames shuffled by ``rng`` every epoch; ``loss_and_grad(P, targets, params,
    alpha, n_total)`` returns a batch's mean loss and the gradients of ``params``. After each
    epoch the mean loss on the held-out frames ``P_va`` (m, k), ``targets_va`` (the training
    loss when m = 0) and ``progress(epoch, training loss, held-out loss)``; the step halved
    after every two epochs without a lower held-out loss, stopped after ``patience`` of them, after
    ``epochs``, or after the epoch that ends past ``max_seconds`` of training (None: no bound).
    Returns ``(best params (copies), its epoch, its held-out loss)``."""
    t0 = time.perf_counter()
    adam = _Adam(params, learning_rate)
    best, best_loss, stale, kept = [p.copy() for p in params], np.inf, 0, 0
    n = len(P_tr)
    for epoch in range(1, epochs + 1):
        order = rng.permutation(n)
        total = 0.0
        for a in range(0, n, batch_size):
            idx = np.sort(order[a:a + batch_size])
            loss, grads = loss_and_grad(P_tr[idx], [t[idx] for t in targets_tr], params, alpha, n)
            adam.step(grads)
            total += loss * len(idx)
        held = _held_loss(P_va, targets_va, params, loss_and_grad) if len(P_va) else total / n
        if progress is not None:
            progress(epoch, total / n, held)
        if held < best_loss - 1e-5:
            best_loss, stale, kept = held, 0, epoch
            best = [p.copy() for p in params]
        else:
            stale += 1
            if stale >= patience:
                break
            if stale % 2 == 0:  # on a plateau: smaller steps
                adam.lr *= 0.5
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            break
    return best, kept, float(best_loss)


def fired_units(P: np.ndarray, W1: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """(hidden,) bool: the ReLU units ``max(0, P W1 + b1)`` positive on some row of ``P`` (n, k)
    (a unit that never fires outputs 0 on every such frame and can go), in blocks."""
    fired = np.zeros(W1.shape[1], bool)
    for a in range(0, len(P), TEACHER_BLOCK_FRAMES):
        fired |= np.any(P[a:a + TEACHER_BLOCK_FRAMES] @ W1 + b1 > 0, axis=0)
    return fired


def distil_network(teacher: FrameClassifier, frames_list: Sequence[np.ndarray], hidden: int = 256,
                   groups: Optional[Sequence] = None, epochs: int = 40, batch_size: int = 256,
                   learning_rate: float = 1e-3, tau: float = 2.0, beta: float = 0.05, alpha: float = 1e-4,
                   held_fraction: float = 0.1, patience: int = 4, seed: int = 0,
                   progress: Optional[Callable[[int, float, float], None]] = None) -> FrameClassifier:
    """A network classifier of one layer of ``hidden`` ReLU units trained to reproduce
    ``teacher`` (any trained :class:`FrameClassifier`) on the frames of ``frames_list`` (each
    (T_i, n_features), e.g. a corpus's recordings and their copies), grouped by ``groups[i]``
    (copies of one recording share a group; the held-out ``held_fraction`` of groups stops the
    training). ``tau``: the softmax temperature of the KL term; ``beta``: the weight of the
    squared differences of the outputs; ``alpha``: L2 penalty of the weights; at most ``epochs``
    passes of mini-batch Adam (``batch_size`` frames, ``learning_rate``). ``progress(epoch,
    training loss, held-out loss)`` after each epoch. Returns the student (``network_epochs_``:
    the epoch kept; ``distil_loss_``: its held-out loss)."""
    if not teacher._fitted:
        raise ModelError("distil_network needs a trained teacher classifier")
    if hidden < 1 or not frames_list:
        raise ValueError("distil_network needs hidden >= 1 and at least one frame array")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    group_names, held_names = held_out_groups(frames_list, groups, held_fraction, rng)

    with blas.limit(teacher.blas_threads):
        parts_tr, parts_va, out_tr, out_va = [], [], [], []
        for f, g in zip(frames_list, group_names):
            f = teacher._check_frames(f).astype(np.float32, copy=False)
            P = teacher._standardised(f)
            if teacher.projection.size:
                raise ModelError("distil_network: a teacher with a projection is not supported")
            out = np.empty((len(P), teacher.n_classes), np.float32)
            for a in range(0, len(P), TEACHER_BLOCK_FRAMES):
                b = min(len(P), a + TEACHER_BLOCK_FRAMES)
                out[a:b] = teacher._outputs(P[a:b])
            out *= np.float32(teacher.temperature)
            (parts_va if g in held_names else parts_tr).append(P)
            (out_va if g in held_names else out_tr).append(out)
        P_tr, T_tr = np.vstack(parts_tr), np.vstack(out_tr)
        P_va = np.vstack(parts_va) if parts_va else P_tr[:0]
        T_va = np.vstack(out_va) if out_va else T_tr[:0]
        del parts_tr, parts_va, out_tr, out_va
        S_tr = _softmax(T_tr / np.float32(tau))
        S_va = _softmax(T_va / np.float32(tau))

        k, C = P_tr.shape[1], teacher.n_classes
        W1 = (rng.standard_normal((k, hidden)) * np.sqrt(2.0 / k)).astype(np.float32)
        b1 = np.full(hidden, 0.01, np.float32)
        W2 = (rng.standard_normal((hidden, C)) * np.sqrt(1.0 / hidden)).astype(np.float32)
        b2 = T_tr.mean(axis=0).astype(np.float32)
        params = [W1, b1, W2, b2]
        loss_fn = lambda P, t, p, a, n_total: _loss_and_grad(P, t[0], t[1], *p, tau, beta, a, n_total)  # noqa: E731
        (W1, b1, W2, b2), kept, best_loss = train_student(params, loss_fn, P_tr, [T_tr, S_tr], P_va, [T_va, S_va],
                                                          rng, epochs, batch_size, learning_rate, alpha, patience,
                                                          progress)
        # units that never fire on the training frames output 0 everywhere they were trained
        fired = fired_units(P_tr, W1, b1)
        W1, b1, W2 = W1[:, fired], b1[fired], W2[fired]

    student = FrameClassifier(**dict(teacher.get_params(), hidden=hidden, networks=1, pca_dims=0))
    student.mean = np.array(teacher.mean, np.float32)
    student.inv_std = np.array(teacher.inv_std, np.float32)
    student.projection = np.zeros((0, 0), np.float32)
    student.landmarks = np.zeros((0, student.mean.shape[0]), np.float32)
    student.landmark_sqnorm = np.zeros(0, np.float32)
    student.hidden_weights = flush_subnormals(np.ascontiguousarray(W1, np.float32))
    student.hidden_bias = flush_subnormals(np.ascontiguousarray(b1, np.float32))
    student.weights = flush_subnormals(np.ascontiguousarray(W2, np.float32))
    student.bias = flush_subnormals(np.ascontiguousarray(b2, np.float32))
    student.temperature = np.float32(1.0)  # the outputs were fitted to the teacher's calibrated ones
    student.log_prior = np.array(teacher.log_prior, np.float32)
    student._fitted = True
    student.network_epochs_ = kept
    student.distil_loss_ = float(best_loss)
    student.train_seconds_ = time.perf_counter() - t0
    return student


def _projection_loss_and_grad(P, targets, params, alpha: float, n_total: int):
    """Mean squared error per description dimension of a batch's images ``h V + v`` against the
    teacher's ``targets[0]`` (n, D), and the gradients of ``params`` = [W (k, m), b (m,), V (m, D),
    v (D,)]; ``P`` (n, k) the standardised inputs; ``alpha`` the L2 penalty of W and V (scaled by
    the batch's share of the data, as :func:`_loss_and_grad`)."""
    W1, b1, W2, b2 = params
    n = P.shape[0]
    H, E = _forward(P, W1, b1, W2, b2)
    diff = E - targets[0]
    D = E.shape[1]
    loss = float(np.sum(diff * diff)) / (D * n)
    dE = diff * np.float32(2.0 / (D * n))
    gW1, gb1, gW2, gb2 = _backward(P, H, W2, dE)
    share = np.float32(alpha / n_total)
    gW1 += share * W1
    gW2 += share * W2
    return loss, [gW1, gb1, gW2, gb2]


def distil_composed_network(teacher, frames_list: Sequence[np.ndarray], hidden: int = 256,
                            groups: Optional[Sequence] = None, initial=None, epochs: int = 30,
                            batch_size: int = 256, learning_rate: float = 1e-3, alpha: float = 1e-4,
                            held_fraction: float = 0.1, patience: int = 4, max_frames: Optional[int] = None,
                            max_seconds: Optional[float] = None, seed: int = 0,
                            progress: Optional[Callable[[int, float, float], None]] = None):
    """A :class:`~aligner.features.composed_network.ComposedNetwork` of one layer of at most
    ``hidden`` ReLU units trained to reproduce ``teacher``'s (a trained ``ComposedNetwork``) image
    of each frame in the description space, ``e = h V + v`` (D,), on the frames of
    ``frames_list`` (each (T_i, n_features), read with the teacher's context): mean squared error
    over the D dimensions. The student keeps the teacher's standardisation, context, temperature
    and settings (a drop-in replacement: any class's logit is still ``temperature e . phi_c``).
    ``groups[i]``: copies of one recording share a group, the held-out ``held_fraction`` of the
    groups stops the training; ``max_frames``: a random subset of at most this many training frames
    (None: all); ``initial``: a ``ComposedNetwork`` of ``hidden`` units reading the same
    standardised frames (e.g. the teacher pruned to its ``hidden`` units that matter most,
    :func:`~aligner.features.composed_network.pruned_network`) whose layers the student starts
    from (None: random); Adam as :func:`train_student` (at most ``epochs``, ``max_seconds``);
    ``alpha``: L2 penalty of the weights. Units that fire on no training frame are dropped, so the
    student may have fewer than ``hidden``. ``progress(epoch, training loss, held-out loss)``.
    Returns the student (``distil_epochs_``: the epoch kept, ``distil_loss_``: its held-out loss,
    ``distil_seconds_``)."""
    if not teacher._fitted:
        raise ModelError("distil_composed_network needs a trained teacher network")
    if teacher.residual_weights.size:
        raise ModelError("distil_composed_network: a teacher with residual logits is not supported")
    if hidden < 1 or not frames_list:
        raise ValueError("distil_composed_network needs hidden >= 1 and at least one frame array")
    if initial is not None and (initial.hidden != hidden or initial.hidden_weights.shape != (
            teacher.hidden_weights.shape[0], hidden) or initial.n_descriptions != teacher.n_descriptions
                                or not (np.array_equal(initial.mean, teacher.mean)
                                        and np.array_equal(initial.inv_std, teacher.inv_std))):
        raise ValueError(f"the initial network must have {hidden} units and read the teacher's standardised frames")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    group_names, held_names = held_out_groups(frames_list, groups, held_fraction, rng)
    lengths = np.array([len(f) for f in frames_list])
    is_held = np.array([g in held_names for g in group_names])
    n_train = int(lengths[~is_held].sum())
    chosen = None  # per training array, the frames kept (None: all)
    if max_frames is not None and 0 < max_frames < n_train:
        pick = np.zeros(n_train, bool)
        pick[rng.choice(n_train, max_frames, replace=False)] = True
        chosen = np.split(pick, np.cumsum(lengths[~is_held])[:-1])

    with blas.limit(1):  # mini-batch products: one BLAS thread (as ComposedNetwork.fit)
        parts_tr, parts_va, j = [], [], 0
        for f, held in zip(frames_list, is_held):
            if held:
                parts_va.append(teacher.standardised(f))
            else:
                X = teacher.standardised(f)
                parts_tr.append(X if chosen is None else X[chosen[j]])
                j += 1
        k = teacher.hidden_weights.shape[0]
        P_tr = np.vstack(parts_tr) if parts_tr else np.zeros((0, k), np.float32)
        P_va = np.vstack(parts_va) if parts_va else P_tr[:0]
        del parts_tr, parts_va

        def images(P):  # the teacher's (n, D) images, in blocks
            out = np.empty((len(P), teacher.n_descriptions), np.float32)
            for a in range(0, len(P), TEACHER_BLOCK_FRAMES):
                b = min(len(P), a + TEACHER_BLOCK_FRAMES)
                out[a:b] = _forward(P[a:b], teacher.hidden_weights, teacher.hidden_bias, teacher.projection,
                                    teacher.projection_bias)[1]
            return out

        T_tr, T_va = images(P_tr), images(P_va)
        D = teacher.n_descriptions
        if initial is not None:
            params = [np.array(initial.hidden_weights, np.float32), np.array(initial.hidden_bias, np.float32),
                      np.array(initial.projection, np.float32), np.array(initial.projection_bias, np.float32)]
        else:
            params = [(rng.standard_normal((k, hidden)) * np.sqrt(2.0 / k)).astype(np.float32),
                      np.full(hidden, 0.01, np.float32),
                      (rng.standard_normal((hidden, D)) * np.sqrt(1.0 / hidden)).astype(np.float32),
                      T_tr.mean(axis=0).astype(np.float32)]
        (W1, b1, W2, b2), kept, best_loss = train_student(
            params, _projection_loss_and_grad, P_tr, [T_tr], P_va, [T_va], rng, epochs, batch_size, learning_rate,
            alpha, patience, progress, max_seconds)
        fired = fired_units(P_tr, W1, b1)
        if not fired.any():
            raise ModelError("distil_composed_network: no unit of the student fires on a training frame")
        W1, b1, W2 = W1[:, fired], b1[fired], W2[fired]

    student = copy.copy(teacher)
    student.__dict__.pop("_base", None)  # the cached classifier of the teacher's layers
    student.hidden = int(fired.sum())
    student.hidden_weights = flush_subnormals(np.ascontiguousarray(W1, np.float32))
    student.hidden_bias = flush_subnormals(np.ascontiguousarray(b1, np.float32))
    student.projection = flush_subnormals(np.ascontiguousarray(W2, np.float32))
    student.projection_bias = flush_subnormals(np.ascontiguousarray(b2, np.float32))
    student.history_ = list(teacher.history_)
    student.distil_epochs_ = kept
    student.distil_loss_ = best_loss
    student.distil_seconds_ = time.perf_counter() - t0
    return student
