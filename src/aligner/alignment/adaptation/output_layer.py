"""The frame classifier's output layer refit on a corpus (:mod:`aligner.alignment.adaptation.rounds`).

Adaptation refits the output layer ``(W, b)`` of a
:class:`~aligner.features.frame_classifier.FrameClassifier` on a corpus's frames, labelled by its
own alignments, with a pull toward the base layer: sufficient statistics accumulated block by
block (:class:`OutputLayerStats`, summed over workers), then one Gauss-Newton step
(:func:`refit_output_layer`) in the space the layer was regularised in when trained (the
Nystroem kernel's whitened features, :func:`whitening`; a network's units as they are).
"""

from __future__ import annotations

import numpy as np

from aligner.features.frame_classifier import FrameClassifier, landmark_eigenbasis
from aligner.phones.sets import CLASSES39

N_CLASSES = len(CLASSES39)


def whitening(clf: FrameClassifier) -> tuple[np.ndarray, np.ndarray]:
    """``(M (m, r), S (r, m))``: the Nystroem whitening ``M = K_LL^{-1/2}`` (rank-truncated as the
    classifier's training truncated it) recomputed from the stored landmarks, and ``S`` with
    ``S @ M = I``, so that the SVM weights in the whitened space are ``S @ clf.weights``.
    Computed once per landmark array (kept while the same landmarks are in use). A network
    feature map (``clf.hidden > 0``) is not whitened: its SVMs were fitted on its units as
    they are, so ``M = S = I``."""
    if clf.hidden:
        eye = np.eye(clf.weights.shape[0])
        return eye, eye
    key = (clf.landmarks.shape, clf.landmarks[:4].tobytes(), float(clf.gamma))
    cached = _WHITENING.get(key)
    if cached is None:
        if len(_WHITENING) >= WHITENING_CACHE:  # (m, m) float64 twice each
            _WHITENING.clear()
        cached = _WHITENING[key] = _whitening(clf)
    return cached


_WHITENING: dict = {}
#: classifiers whose whitening is kept at once
WHITENING_CACHE = 4


def _whitening(clf: FrameClassifier) -> tuple[np.ndarray, np.ndarray]:
    U, w = landmark_eigenbasis(clf.landmarks, clf.gamma / clf.mean.shape[0])
    return U / np.sqrt(w), (U * np.sqrt(w)).T


class OutputLayerStats:
    """Sufficient statistics of the output-layer refit, accumulated block by block.

    For frames with kernel values ``E`` (n, m), labels (n,) and weights ``a`` (n,), and the
    current layer ``(W (m, C), b (C,))`` of ``C = n_classes`` classes (the model's inventory):
    ``H = sum a e e^T`` (m, m), ``s = sum a e`` (m,), ``n = sum a``, ``G = sum a e r^T`` (m, C),
    ``g = sum a r`` (C,), with the squared-hinge
    residuals ``r_c = y_c - f_c`` where ``y_c f_c < 1`` (``y_c = +1`` for the frame's class,
    -1 otherwise; ``f = e W + b``) and 0 elsewhere. All float64.

    With ``loss="softmax"`` (a network classifier's output layer, trained on the softmax log
    loss; :meth:`for_classifier` picks it) the residuals are ``r_c = [c is the frame's class] -
    softmax(f)_c`` and ``H``, ``s``, ``n`` are halved: Boehning's bound on the log loss's
    curvature, so that :func:`refit_output_layer`'s step never increases the penalised loss.
    """

    def __init__(self, m: int, n_classes: int = N_CLASSES, loss: str = "sqhinge"):
        if loss not in ("sqhinge", "softmax"):
            raise ValueError(f"loss must be 'sqhinge' or 'softmax', got {loss!r}")
        self.loss = loss
        self.H = np.zeros((m, m))
        self.s = np.zeros(m)
        self.n = 0.0
        self.G = np.zeros((m, n_classes))
        self.g = np.zeros(n_classes)
        self.frames = 0

    @classmethod
    def for_classifier(cls, clf: FrameClassifier) -> "OutputLayerStats":
        """Empty statistics for refitting ``clf``'s output layer (its landmarks, or network
        units, and classes; the softmax loss for a network)."""
        return cls(clf.weights.shape[0], clf.n_classes, "softmax" if clf.hidden else "sqhinge")

    def add(self, E: np.ndarray, labels: np.ndarray, a: np.ndarray, W: np.ndarray, b: np.ndarray) -> None:
        keep = a > 0
        if not keep.any():
            return
        E, labels, a = E[keep], labels[keep], a[keep].astype(np.float32)
        f = E @ W + b
        rows = np.arange(len(labels))
        if self.loss == "softmax":
            p = np.exp(f - f.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)  # softmax(f)
            R = -p
            R[rows, labels] += 1.0
            R = R.astype(np.float32)
            curvature = 0.5
        else:
            Y = -np.ones_like(f)
            Y[rows, labels] = 1.0
            R = np.where(Y * f < 1.0, Y - f, 0.0).astype(np.float32)
            curvature = 1.0
        Ea = E * a[:, None]
        self.H += curvature * (Ea.T @ E).astype(np.float64)
        self.s += curvature * Ea.sum(0, dtype=np.float64)
        self.n += curvature * float(a.sum())
        self.G += (Ea.T @ R).astype(np.float64)
        self.g += (R * a[:, None]).sum(0, dtype=np.float64)
        self.frames += int(len(labels))

    def merge(self, other: "OutputLayerStats") -> None:
        """Add the statistics of other frames (another batch's, the same layer's): they are sums."""
        if other.loss != self.loss:
            raise ValueError(f"cannot merge {other.loss} statistics into {self.loss} ones")
        self.H += other.H
        self.s += other.s
        self.n += other.n
        self.G += other.G
        self.g += other.g
        self.frames += other.frames


def refit_output_layer(stats: OutputLayerStats, whiten: tuple, W_cur: np.ndarray, b_cur: np.ndarray,
                       W_base: np.ndarray, b_base: np.ndarray, prior: float, bias_prior: float = 1.0) -> tuple:
    """One Gauss-Newton step of ``min lambda ||V - V_base||^2 + bias_prior ||b - b_base||^2 +
    sum_i a_i ||hinge residuals||^2`` in the whitened space (``V = S W``, module docstring) from
    the current layer; returns the new ``(W (m, C) float32, b (C,) float32)`` in the
    classifier's folded form. ``prior`` (lambda) -> infinity returns the base layer."""
    import scipy.linalg

    M, S = whiten
    r = M.shape[1]
    Hz = M.T @ stats.H @ M
    sz = M.T @ stats.s
    A = np.zeros((r + 1, r + 1))
    A[:r, :r], A[:r, r], A[r, :r], A[r, r] = Hz, sz, sz, stats.n
    G = np.vstack([M.T @ stats.G, stats.g[None, :]])
    theta_cur = np.vstack([S @ W_cur.astype(np.float64), b_cur[None, :].astype(np.float64)])
    theta_base = np.vstack([S @ W_base.astype(np.float64), b_base[None, :].astype(np.float64)])
    reg = np.full(r + 1, float(prior))
    reg[r] = float(bias_prior)
    rhs = A @ theta_cur + G + reg[:, None] * theta_base
    A = 0.5 * (A + A.T)
    A[np.diag_indices(r + 1)] += reg
    try:
        theta = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, check_finite=False), rhs, check_finite=False)
    except np.linalg.LinAlgError:  # rounding in M^T H M (large weights, wide range): clip its spectrum
        w, V = np.linalg.eigh(A)
        theta = V @ ((V.T @ rhs) / np.maximum(w, reg.min())[:, None])
    return (M @ theta[:r]).astype(np.float32), theta[r].astype(np.float32)


def with_output_layer(clf: FrameClassifier, W: np.ndarray, b: np.ndarray) -> FrameClassifier:
    """A copy of ``clf`` with output weights ``W`` (m, C) and biases ``b`` (C,)."""
    arrays = dict(clf.to_arrays())
    arrays["weights"] = np.asarray(W, np.float32)
    arrays["bias"] = np.asarray(b, np.float32)
    return FrameClassifier.from_arrays(arrays)
