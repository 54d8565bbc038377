"""Multiclass classification as a structured task (Kesler construction), with a cost matrix.

This is the check the learning core must pass before it touches speech (SPEC section 2):
the answer is known, decoding is exact and cheap, and an arbitrary cost matrix lets a
risk-minimising trainer show that it minimises that cost rather than the error rate.

``x`` is a feature vector of shape (d,), ``y`` an int class in ``0..n_classes-1``.
``phi(x, y)`` places ``x`` in the ``y``-th block of a vector of length ``n_classes * d``
(Kesler's construction; Crammer & Singer 2001), so ``w`` holds one weight vector per class.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from aligner.learn.task import StructuredTask


class MulticlassTask(StructuredTask):
    """Multiclass task with ``cost(y, y') = cost_matrix[y, y']`` (0/1 cost by default)."""

    def __init__(self, n_classes: int, n_dims: int, cost_matrix: Optional[np.ndarray] = None):
        if cost_matrix is None:
            cost_matrix = 1.0 - np.eye(n_classes)
        cost_matrix = np.asarray(cost_matrix, dtype=float)
        if cost_matrix.shape != (n_classes, n_classes):
            raise ValueError(f"cost_matrix must be {n_classes}x{n_classes}, got {cost_matrix.shape}")
        if np.any(np.diag(cost_matrix) != 0) or np.any(cost_matrix[~np.eye(n_classes, dtype=bool)] <= 0):
            raise ValueError("cost_matrix needs zeros on the diagonal and positive costs elsewhere")
        self.n_classes = n_classes
        self.n_dims = n_dims
        self.cost_matrix = cost_matrix
        self.n_features = n_classes * n_dims

    def _class_weights(self, w: np.ndarray) -> np.ndarray:
        return w.reshape(self.n_classes, self.n_dims)

    def phi(self, x, y):
        out = np.zeros(self.n_features)
        out[int(y) * self.n_dims:(int(y) + 1) * self.n_dims] = x
        return out

    def decode(self, x, w):
        return int(np.argmax(self._class_weights(w) @ x))

    def decode_augmented(self, x, y, w, eps):
        return int(np.argmax(self._class_weights(w) @ x + eps * self.cost_matrix[int(y)]))

    def decode_many(self, x, ws):
        scores = ws.reshape(len(ws), self.n_classes, self.n_dims) @ x
        return [int(c) for c in np.argmax(scores, axis=1)]

    def cost(self, y, y_pred):
        return float(self.cost_matrix[int(y), int(y_pred)])

    def same(self, y, y_other):
        return int(y) == int(y_other)

    def predict(self, X: Sequence, w: np.ndarray) -> np.ndarray:
        """Class of every row of ``X`` (shape (n, d)) under ``w``, vectorised."""
        return np.argmax(np.asarray(X) @ self._class_weights(w).T, axis=1)

    def mean_cost(self, X, Y, w):
        if len(X) == 0:
            return float("nan")
        return float(self.cost_matrix[np.asarray(Y, dtype=int), self.predict(X, w)].mean())


def random_cost_matrix(n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """0 on the diagonal, 1 or 2 (uniformly at random) elsewhere: the orbit paper's table 2 costs."""
    costs = rng.integers(1, 3, size=(n_classes, n_classes)).astype(float)
    np.fill_diagonal(costs, 0.0)
    return costs
