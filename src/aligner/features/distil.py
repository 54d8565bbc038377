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
their copies), stopped after ``patience`` such epochs, the best epoch's layers kept. Units that never fire on the training frames are dropped.
"""

from __future__ import annotations

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


def _loss_and_grad(P, target, target_soft, W1, b1, W2, b2, tau: float, beta: float, alpha: float, n_total: int):
    """Mean distillation loss of a batch and its gradients (module docstring); ``P`` (n, k) the
    standardised inputs, ``target`` (n, C) the teacher's outputs, ``target_soft`` its softmax at
    ``tau``; ``alpha`` the L2 penalty of the weights (scaled by the batch's share of the data)."""
    n = P.shape[0]
    H = P @ W1
    H += b1
    np.maximum(H, np.float32(0.0), out=H)
    F = H @ W2
    F += b2
    soft = _softmax(F / np.float32(tau))
    diff = F - target
    diff -= diff.mean(axis=1, keepdims=True)
    kl = float(np.sum(target_soft * (np.log(np.maximum(target_soft, 1e-12)) - np.log(np.maximum(soft, 1e-12)))))
    loss = (tau * tau * kl + beta * float(np.sum(diff * diff)) / F.shape[1]) / n
    # d loss / d F: tau (soft - target_soft) for the KL (times tau^2 / tau), 2 beta diff / C for the squares
    dF = (np.float32(tau) * (soft - target_soft) + np.float32(2.0 * beta / F.shape[1]) * diff) / np.float32(n)
    gW2 = H.T @ dF
    gb2 = dF.sum(axis=0)
    dH = dF @ W2.T
    dH *= H > 0
    gW1 = P.T @ dH
    gb1 = dH.sum(axis=0)
    share = np.float32(alpha * n / n_total / n)
    gW1 += share * W1
    gW2 += share * W2
    return loss, [gW1, gb1, gW2, gb2]


def _held_loss(P, target, target_soft, W1, b1, W2, b2, tau, beta) -> float:
    total, n = 0.0, P.shape[0]
    for a in range(0, n, TEACHER_BLOCK_FRAMES):
        b = min(n, a + TEACHER_BLOCK_FRAMES)
        loss, _ = _loss_and_grad(P[a:b], target[a:b], target_soft[a:b], W1, b1, W2, b2, tau, beta, 0.0, n)
        total += loss * (b - a)
    return total / max(n, 1)


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
    group_names = [str(g) for g in (groups if groups is not None else range(len(frames_list)))]
    if len(group_names) != len(frames_list):
        raise ValueError(f"{len(group_names)} groups for {len(frames_list)} frame arrays")
    names = sorted(set(group_names))
    n_held = min(max(1, int(round(held_fraction * len(names)))), len(names) - 1) if len(names) > 1 else 0
    held_names = set(rng.permutation(names)[:n_held].tolist())

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
        adam = _Adam(params, learning_rate)
        best, best_loss, stale, kept = None, np.inf, 0, 0
        n = len(P_tr)
        for epoch in range(1, epochs + 1):
            order = rng.permutation(n)
            total = 0.0
            for a in range(0, n, batch_size):
                idx = np.sort(order[a:a + batch_size])
                loss, grads = _loss_and_grad(P_tr[idx], T_tr[idx], S_tr[idx], W1, b1, W2, b2, tau, beta, alpha, n)
                adam.step(grads)
                total += loss * len(idx)
            held = _held_loss(P_va, T_va, S_va, W1, b1, W2, b2, tau, beta) if len(P_va) else total / n
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
        W1, b1, W2, b2 = best
        # units that never fire on the training frames output 0 everywhere they were trained
        fired = np.zeros(hidden, bool)
        for a in range(0, n, TEACHER_BLOCK_FRAMES):
            fired |= np.any(P_tr[a:a + TEACHER_BLOCK_FRAMES] @ W1 + b1 > 0, axis=0)
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
