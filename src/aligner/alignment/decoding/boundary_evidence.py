"""A learned boundary detector: how likely a phone boundary is before each frame, added to the DP's boundary term.

The feature map's dims 2-5 (:mod:`aligner.alignment.decoding.task`) measure the spectral change
at a boundary, ``||s_{t-j} - s_{t+j}||``, the same way for every language and every phone pair.
A :class:`BoundaryDetector` learns that evidence from hand-labelled recordings instead: a
network of one hidden layer of ReLU units reads the MFCC frames ``t - 5 .. t + 4``
(:data:`CONTEXT_LEFT`, :data:`CONTEXT_RIGHT`; ``10 x 42`` values, the frames as the model's
front end makes them, standardised per recording) and gives the log-odds that a labelled phone
boundary lies before frame ``t`` (at :func:`~aligner.frames.boundary_time` ``(t)``, the DP's
grid). It knows no phone: trained on many languages, it serves any.

A model with a detector decodes with :func:`with_boundary_evidence`: ``weight * log_odds[t]``
is added to the score of every boundary the DP places before frame ``t`` (dims 2-5 are summed
over the boundaries and divided by K like every term, and so is this), through the boundary
distance of the largest positive weight, so the trained weights and the DP stay as they are.

Training (:meth:`BoundaryDetector.fit`): logistic loss, Adam (scikit-learn's ``MLPClassifier``,
one pass over the frames per epoch); the number of epochs is the one of least held-out loss on
whole groups (languages) held out, then the network is trained again on every group for that
many epochs. Stored as plain arrays (``.npz``, no pickle) and checked on load.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from typing import Mapping, Sequence

import numpy as np

from aligner.errors import ModelError

#: frames read before and after the boundary frame t (frames t-5 .. t+4; the boundary lies between t-1 and t)
CONTEXT_LEFT = 5
CONTEXT_RIGHT = 4
#: frames each row of :func:`context_rows` holds
WINDOW_FRAMES = CONTEXT_LEFT + CONTEXT_RIGHT + 1
#: log-odds are clipped to +- this (probabilities 1e-4 .. 1 - 1e-4)
LOG_ODDS_CLIP = float(np.log(1e4))
#: frames whose log-odds are worked out at once (bounded memory on long recordings)
BLOCK_FRAMES = 8192


def context_rows(frames: np.ndarray, a: int = 0, b: int | None = None) -> np.ndarray:
    """(b - a, (CONTEXT_LEFT + CONTEXT_RIGHT + 1) D) float32: row ``t - a`` holds frames ``t - 5 ..
    t + 4`` of ``frames`` (T, D), the first and last frame repeated beyond the recording's edges."""
    T = frames.shape[0]
    b = T if b is None else b
    idx = np.clip(np.arange(a - CONTEXT_LEFT, b + CONTEXT_RIGHT), 0, T - 1)
    part = np.asarray(frames[idx], np.float32)
    n = b - a
    return np.hstack([part[i:i + n] for i in range(WINDOW_FRAMES)])


def boundary_labels(n_frames: int, boundary_frames: np.ndarray) -> np.ndarray:
    """(T,) int8: 1 at each boundary frame inside ``1 .. T - 1`` (a phone starts there), else 0."""
    y = np.zeros(n_frames, np.int8)
    b = np.asarray(boundary_frames, np.int64)
    y[b[(b > 0) & (b < n_frames)]] = 1
    return y


class BoundaryDetector:
    """Log-odds of a phone boundary before each frame (module docstring).

    Parameters: ``hidden`` ReLU units; ``alpha`` L2 penalty; at most ``max_epochs`` epochs;
    ``n_val_groups`` groups held out to choose them; ``weight``: the DP adds ``weight`` times
    the log-odds to each boundary's score (:func:`with_boundary_evidence`); ``seed``;
    ``max_frames``: it trains on at most this many frames, whole recordings drawn at random when
    there are more (each frame's 10 x 42 float32 values: 600,000 frames take 1 GB, held about
    three times over while it trains; not saved, training alone reads it).
    """

    def __init__(self, hidden: int = 256, alpha: float = 1e-2, max_epochs: int = 12, n_val_groups: int = 6,
                 weight: float = 1.0, seed: int = 0, max_frames: int = 600_000):
        if hidden < 1 or max_epochs < 1 or n_val_groups < 1 or max_frames < 1 or alpha < 0 or not np.isfinite(weight):
            raise ValueError("hidden, max_epochs, n_val_groups and max_frames must be >= 1, alpha >= 0 "
                             "and weight finite")
        self.hidden, self.alpha, self.max_epochs = int(hidden), float(alpha), int(max_epochs)
        self.n_val_groups, self.weight, self.seed = int(n_val_groups), float(weight), int(seed)
        self.max_frames = int(max_frames)
        self.hidden_weights = self.hidden_bias = self.output_weights = None
        self.output_bias = 0.0
        #: held-out log-loss (nats per frame) of each epoch, and the epochs then trained on every group
        self.history_: list = []
        self.epochs_ = 0

    @property
    def n_inputs(self) -> int:
        """Values the network reads per frame (:data:`WINDOW_FRAMES` x frame width)."""
        if self.hidden_weights is None:
            raise ModelError("the boundary detector is not fitted")
        return self.hidden_weights.shape[0]

    # ------------------------------------------------------------------ fit
    def fit(self, frames_list: Sequence[np.ndarray], boundary_frames: Sequence[np.ndarray],
            groups: Sequence) -> "BoundaryDetector":
        """Train on recordings: ``frames_list[i]`` (T_i, D) frames, ``boundary_frames[i]`` the frames
        before which a labelled phone starts (its phones' start frames but the first),
        ``groups[i]`` a key of recordings held out together (a language; a recording and its copies
        share one). Needs more than ``n_val_groups`` groups to hold some out; with fewer, it trains
        for ``max_epochs // 2`` epochs."""
        if not (len(frames_list) == len(boundary_frames) == len(groups)) or not frames_list:
            raise ValueError("the boundary detector needs matching non-empty frames, boundaries and groups")
        sizes = np.array([len(f) for f in frames_list])
        if sizes.sum() > self.max_frames:  # whole recordings at random, up to max_frames frames
            order = np.random.default_rng(self.seed + 1).permutation(len(sizes))
            keep = sorted(order[np.cumsum(sizes[order]) <= self.max_frames]) or [int(np.argmin(sizes))]
            frames_list, boundary_frames, groups = ([seq[i] for i in keep] for seq in
                                                    (frames_list, boundary_frames, groups))
        X = np.vstack([context_rows(f) for f in frames_list])
        y = np.concatenate([boundary_labels(len(f), b) for f, b in zip(frames_list, boundary_frames)])
        keys = np.concatenate([np.full(len(f), str(g), object) for f, g in zip(frames_list, groups)])
        if not 0 < y.sum() < len(y):
            raise ValueError("the boundary detector needs frames with and without a boundary")
        rng = np.random.default_rng(self.seed)
        names = sorted(set(keys))
        if len(names) > self.n_val_groups:
            held = np.isin(keys, rng.choice(names, self.n_val_groups, replace=False))
            _, self.history_ = self._train(X[~held], y[~held], self.max_epochs, rng, X[held], y[held])
            self.epochs_ = int(np.argmin(self.history_)) + 1
        else:
            self.history_, self.epochs_ = [], max(1, self.max_epochs // 2)
        net, _ = self._train(X, y, self.epochs_, rng)
        self.hidden_weights = np.asarray(net.coefs_[0], np.float32)
        self.hidden_bias = np.asarray(net.intercepts_[0], np.float32)
        self.output_weights = np.asarray(net.coefs_[1][:, 0], np.float32)
        self.output_bias = float(net.intercepts_[1][0])
        return self

    def _train(self, X, y, epochs: int, rng, X_held=None, y_held=None) -> tuple:
        """``(network, held-out log-loss per epoch)``: ``epochs`` passes over ``X`` (N, F), ``y``
        (N,); with held-out frames, the network of least held-out loss."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier

        net = MLPClassifier(hidden_layer_sizes=(self.hidden,), alpha=self.alpha, batch_size=min(256, len(X)),
                            random_state=self.seed)
        losses, best = [], None
        for _ in range(epochs):
            order = rng.permutation(len(X))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                net.partial_fit(X[order], y[order], classes=[0, 1])
            if X_held is not None:
                p = np.clip(net.predict_proba(X_held)[:, 1], 1e-6, 1 - 1e-6)
                losses.append(float(-np.mean(y_held * np.log(p) + (1 - y_held) * np.log(1 - p))))
                if losses[-1] <= min(losses):
                    best = copy.deepcopy(net)
        return (best or net), losses

    # ------------------------------------------------------------------ use
    def log_odds(self, frames: np.ndarray) -> np.ndarray:
        """(T,) float64 log-odds of a boundary before each frame of ``frames`` (T, D), clipped to
        +-:data:`LOG_ODDS_CLIP`; worked out :data:`BLOCK_FRAMES` frames at a time."""
        if self.hidden_weights is None:
            raise ModelError("the boundary detector is not fitted")
        if frames.ndim != 2:
            raise ModelError(f"the boundary detector reads frames (T, D), not an array of shape {frames.shape}")
        try:
            check_detector(self, frames.shape[1])
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        T = frames.shape[0]
        out = np.empty(T)
        for a in range(0, T, BLOCK_FRAMES):
            b = min(T, a + BLOCK_FRAMES)
            h = context_rows(frames, a, b) @ self.hidden_weights
            h += self.hidden_bias
            np.maximum(h, 0.0, out=h)
            out[a:b] = h @ self.output_weights + self.output_bias
        return np.clip(out, -LOG_ODDS_CLIP, LOG_ODDS_CLIP)

    # ------------------------------------------------------------------ persistence
    def to_arrays(self) -> dict:
        if self.hidden_weights is None:
            raise ModelError("the boundary detector is not fitted")
        return {"hidden_weights": self.hidden_weights, "hidden_bias": self.hidden_bias,
                "output_weights": self.output_weights, "output_bias": np.float64(self.output_bias),
                "settings": np.array([self.hidden, self.alpha, self.max_epochs, self.n_val_groups, self.weight,
                                      self.seed, self.epochs_], np.float64)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "BoundaryDetector":
        try:
            settings = np.asarray(arrays["settings"], np.float64)
            if settings.shape != (7,) or not np.all(np.isfinite(settings)):
                raise ValueError("its settings must be 7 finite numbers")
            hidden, alpha, max_epochs, n_val, weight, seed, epochs = settings
            det = cls(int(hidden), float(alpha), int(max_epochs), int(n_val), float(weight), int(seed))
            det.epochs_ = int(epochs)
            det.hidden_weights = np.asarray(arrays["hidden_weights"], np.float32)
            det.hidden_bias = np.asarray(arrays["hidden_bias"], np.float32)
            det.output_weights = np.asarray(arrays["output_weights"], np.float32)
            det.output_bias = float(arrays["output_bias"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"boundary detector arrays unusable ({exc})") from None
        h, n = det.hidden, det.hidden_weights.shape[0] if det.hidden_weights.ndim == 2 else -1
        shapes_ok = (det.hidden_weights.shape == (n, h) and n > 0 and n % WINDOW_FRAMES == 0
                     and det.hidden_bias.shape == (h,) and det.output_weights.shape == (h,))
        finite = all(np.all(np.isfinite(a)) for a in (det.hidden_weights, det.hidden_bias, det.output_weights))
        if not shapes_ok or not finite or not np.isfinite(det.output_bias):
            raise ModelError("boundary detector arrays have the wrong shapes or non-finite values")
        return det


def check_detector(detector: BoundaryDetector, n_features: int) -> BoundaryDetector:
    """``detector`` itself when it reads frames of ``n_features`` values (its model's front end);
    else ValueError."""
    if detector.n_inputs != WINDOW_FRAMES * int(n_features):
        raise ValueError(f"the boundary detector reads {detector.n_inputs} values per frame, not {WINDOW_FRAMES} "
                         f"frames of {n_features}")
    return detector


def evidence_column(weights: np.ndarray) -> int | None:
    """The boundary-distance column (0-3 of the DP input's ``dist``) whose weight (dims 2-5 of
    ``weights`` (7,)) is the largest and positive; None when none is positive."""
    w = np.asarray(weights, np.float64)[1:5]
    j = int(np.argmax(w))
    return j if w[j] > 0 else None


def with_boundary_evidence(x, log_odds: np.ndarray, weight: float, weights: np.ndarray):
    """The DP input ``x`` (an :class:`~aligner.alignment.decoding.task.AlignmentInput` or
    :class:`~aligner.alignment.decoding.graph_task.GraphAlignmentInput` of T frames) whose boundary
    before frame t scores ``weight * log_odds[t]`` more (``log_odds`` (T,)), under the model's
    ``weights`` (7,): added to one boundary distance column, divided by its weight
    (:func:`evidence_column`). ``x`` itself is left as it was (its distances are copied); it is
    returned unchanged when ``weight`` is 0 or no distance has a positive weight."""
    j = evidence_column(weights)
    if j is None or weight == 0:
        return x
    if log_odds.shape != (x.dist.shape[0],):
        raise ValueError(f"{log_odds.shape[0]} log-odds for {x.dist.shape[0]} frames")
    dist = x.dist.copy()
    dist[:, j] += (weight / float(weights[1 + j])) * log_odds
    return dataclasses.replace(x, dist=dist)
