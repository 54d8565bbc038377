"""Evaluation costs over integer position arrays (task-agnostic).

The functions here know nothing of speech: ``y`` and ``y_pred`` are integer arrays
of positions (boundary or start indices), and every tolerance ``tau`` is in the
same units as ``y`` (for the alignment task, frames). Tasks call them from their
``cost`` method and decompose them over positions inside loss-augmented decoding.

References: McAllester, Hazan & Keshet 2010 (DLM) eq. 16-17; Karmon & Keshet 2018
(orbit) eq. 37-38; SPEC sections 3 and 4.
"""

from __future__ import annotations

import numpy as np


def _abs_diff(y, y_pred) -> np.ndarray:
    """``|y - y_pred|`` elementwise in int64/float64 (no overflow on small int dtypes)."""
    a = np.asarray(y)
    b = np.asarray(y_pred)
    if a.shape != b.shape:
        raise ValueError(f"cost: y has shape {a.shape} but y_pred has shape {b.shape}")
    if a.size == 0:
        raise ValueError("cost: empty position arrays")
    dtype = np.int64 if (a.dtype.kind in "iub" and b.dtype.kind in "iub") else np.float64
    return np.abs(a.astype(dtype) - b.astype(dtype))


def tau_alignment_cost(y, y_pred, tau: float) -> float:
    """tau-alignment loss (DLM eq. 16): fraction of positions off by more than ``tau``.

    ``(1/K) * |{k : |y_k - y_pred_k| > tau}|`` over the K entries of ``y`` (shape (K,),
    units of ``y``, e.g. frames). In [0, 1]; 0 when ``y == y_pred`` (and also whenever
    every position is within ``tau``: with ``tau >= 1`` it is not 0 *only* at equality).
    """
    d = _abs_diff(y, y_pred)
    return float(np.count_nonzero(d > tau)) / d.size


def tau_insensitive_cost(y, y_pred, tau: float) -> float:
    """tau-insensitive loss (DLM eq. 17, orbit eq. 37): mean error beyond ``tau``.

    ``(1/K) * sum_k max(|y_k - y_pred_k| - tau, 0)`` over the K entries of ``y`` (shape
    (K,)); in units of ``y`` (frames for alignment). Deviations of at most ``tau`` cost 0.
    """
    d = _abs_diff(y, y_pred)
    return float(np.sum(np.maximum(d - tau, 0))) / d.size


def onset_offset_cost(y, y_pred, tau_on: float, tau_off: float) -> float:
    """Onset/offset loss (orbit eq. 38) for a two-position output ``y = (onset, offset)``.

    ``max(|y_0 - y_pred_0| - tau_on, 0) + max(|y_1 - y_pred_1| - tau_off, 0)``, in units
    of ``y`` (frames). Not averaged: the two terms are summed.
    """
    d = _abs_diff(y, y_pred)
    if d.shape != (2,):
        raise ValueError(f"onset_offset_cost: expected two positions (onset, offset), got shape {d.shape}")
    return float(max(d[0] - tau_on, 0) + max(d[1] - tau_off, 0))
