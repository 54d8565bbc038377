"""A frame scorer whose classes are descriptions: any class described the same way can be scored.

The network reads a frame ``t`` with ``context`` frames on either side (``(2 context + 1) * 42``
values, standardised as :class:`~aligner.features.frame_classifier.FrameClassifier` does),
passes it through one layer of ``hidden`` ReLU units ``h = max(0, x W_h + b_h)`` and maps the
units linearly onto a space of ``D`` description dimensions, ``e = h V + v``. A class ``c``
described by the vector ``phi_c`` (D,) then scores ``e . phi_c``: the logit of every class is
composed from its description, so a class never seen in training is scored as soon as it is
described. In the aligner the descriptions are phonological (:func:`aligner.phones.ipa.composition_vector`:
broad class, each feature's value in a phone's first and last part); this module knows nothing
of phones.

Training: softmax cross-entropy over the training classes (their descriptions ``Phi`` (C, D)
fixed), Adam (learning rate ``learning_rate``), minibatches of ``batch`` frames, an L2 penalty
``alpha`` on the weights as scikit-learn's ``MLPClassifier`` applies it (``alpha / batch`` times the
weights added to their gradient), early stopping on the frames of held-out groups (whole
recordings or, better for new languages, whole languages: ``groups``), keeping the layers of
the epoch of least held-out loss; the softmax temperature is then fitted on those frames.
With ``refit`` the network is then trained again, from the same first values, on every group
for the number of epochs the held-out groups chose.

For any set of classes described by ``Phi'`` (C', D), :meth:`ComposedNetwork.frame_classifier`
returns an ordinary :class:`~aligner.features.frame_classifier.FrameClassifier` (the same
standardisation and ReLU units, the output layer ``V Phi'^T``, bias ``v Phi'^T``) whose
``scores`` the segmental DP reads: the aligner's decoders see nothing new.
"""

from __future__ import annotations

import copy
import time
from typing import Mapping, Optional, Sequence

import numpy as np
from numba import njit

from aligner.errors import ModelError
from aligner.features.frame_classifier import FrameClassifier, flush_subnormals, stack_context
from aligner.runtime import blas

FORMAT_VERSION = 1
_HYPER = ("context", "hidden", "alpha", "epochs", "seed", "max_train_frames", "batch", "learning_rate",
          "calibration_fraction", "n_features", "patience", "residual_alpha", "refit", "balanced_groups")
#: settings that files saved before them lack (their defaults then)
_OPTIONAL = ("residual_alpha", "refit", "balanced_groups")
#: Adam steps between two flushes of its moments' subnormal values (:func:`flush_subnormals`)
FLUSH_STEPS = 8
_LEARNED = ("mean", "inv_std", "hidden_weights", "hidden_bias", "projection", "projection_bias", "temperature")


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


class ComposedNetwork:
    """Frame scorer of described classes (module docstring).

    Parameters: ``context`` frames either side; ``hidden`` ReLU units; ``alpha`` L2 penalty;
    ``epochs`` at most; ``seed``; ``max_train_frames`` (a random subset of at most this many
    frames is trained on); ``batch`` frames per step; ``learning_rate`` of Adam;
    ``calibration_fraction`` of the groups held out for early stopping and the temperature;
    ``n_features`` per frame (42); ``patience``: epochs without a lower held-out loss before
    training stops; ``residual_alpha`` > 0: every training class also gets a logit of its own
    (a column on the ReLU units, L2 penalty ``residual_alpha``) added to its composed logit, which
    a class scored later uses when it is one of them (:meth:`frame_classifier` ``residual_index``);
    ``refit``: once the held-out groups have chosen the number of epochs and the temperature, train
    again from the same first values on every group for that many epochs (else the held-out groups'
    frames, ``calibration_fraction`` of them, never train the network); ``balanced_groups``: the
    held-out loss that chooses the epochs is the mean of each held-out group's mean (else of every
    frame's, so that a group of many frames, a large corpus among small ones, decides alone).
    """

    def __init__(self, context: int = 4, hidden: int = 512, alpha: float = 3.0, epochs: int = 40, seed: int = 0,
                 max_train_frames: int = 200_000, batch: int = 256, learning_rate: float = 1e-3,
                 calibration_fraction: float = 0.2, n_features: int = 42, patience: int = 5,
                 residual_alpha: float = 0.0, refit: bool = False, balanced_groups: bool = False):
        self.context = int(context)
        self.hidden = int(hidden)
        self.alpha = float(alpha)
        self.epochs = int(epochs)
        self.seed = int(seed)
        self.max_train_frames = int(max_train_frames)
        self.batch = int(batch)
        self.learning_rate = float(learning_rate)
        self.calibration_fraction = float(calibration_fraction)
        self.n_features = int(n_features)
        self.patience = int(patience)
        self.residual_alpha = float(residual_alpha)
        self.refit = bool(refit)
        self.balanced_groups = bool(balanced_groups)
        #: with ``residual_alpha > 0``: (hidden, C) weights and (C,) biases of each *training* class's
        #: own logit, added to its composed one (L2 penalty ``residual_alpha``); (0, 0) and (0,) without
        self.residual_weights = np.zeros((0, 0), np.float32)
        self.residual_bias = np.zeros(0, np.float32)
        #: names of the training classes (the rows of the training descriptions), when given to :meth:`fit`
        self.class_names: tuple = ()
        if self.hidden < 1 or self.epochs < 1 or self.batch < 1 or self.alpha < 0:
            raise ValueError("hidden, epochs and batch must be >= 1 and alpha >= 0")
        self._fitted = False
        #: held-out mean cross-entropy (nats) of each epoch of the last fit
        self.history_: list = []
        self.best_epoch_ = 0
        self.train_seconds_ = float("nan")

    def get_params(self) -> dict:
        return {k: getattr(self, k) for k in _HYPER}

    @property
    def n_descriptions(self) -> int:
        """D, the length of a class description."""
        return int(self.projection.shape[1])

    # ------------------------------------------------------------------ fit
    def fit(self, frames_list: Sequence[np.ndarray], labels_list: Sequence[np.ndarray], descriptions: np.ndarray,
            groups: Optional[Sequence] = None, progress=None, class_names: Sequence[str] = ()) -> "ComposedNetwork":
        """Train on utterances: ``frames_list[i]`` (T_i, 42) frames, ``labels_list[i]`` (T_i,) int
        class of each frame (a row of ``descriptions``, (C, D) float); ``groups[i]`` a key shared by
        utterances held out together (a language, a recording and its copies). ``progress(epoch,
        held-out loss)`` after each epoch. ``class_names``: a name per row of ``descriptions``, kept
        (:attr:`class_names`) so that a later class can find its own logit (``residual_alpha``)."""
        t0 = time.perf_counter()
        self.class_names = tuple(str(c) for c in class_names)
        if self.class_names and len(self.class_names) != len(descriptions):
            raise ValueError(f"{len(self.class_names)} class names for {len(descriptions)} descriptions")
        with blas.limit(1):  # minibatch products: one BLAS thread is several times faster than two on a busy machine
            self._fit(frames_list, labels_list, np.asarray(descriptions, np.float32), groups, progress)
        self.train_seconds_ = time.perf_counter() - t0
        return self

    def _fit(self, frames_list, labels_list, Phi, groups, progress) -> None:
        if len(frames_list) != len(labels_list) or not frames_list:
            raise ValueError("fit needs one label array per frame array (at least one)")
        if Phi.ndim != 2 or not np.all(np.isfinite(Phi)):
            raise ValueError("descriptions must be a finite (C, D) array")
        C = Phi.shape[0]
        xs, ys = [], []
        for f, y in zip(frames_list, labels_list):
            f = np.asarray(f, np.float32)
            y = np.asarray(y, np.int64)
            if f.ndim != 2 or f.shape[1] != self.n_features or y.shape != (len(f),):
                raise ValueError(f"frames must be (T, {self.n_features}) with (T,) labels")
            if len(y) and (y.min() < 0 or y.max() >= C):
                raise ValueError(f"labels must be rows of the {C} descriptions")
            xs.append(stack_context(f, self.context))
            ys.append(y)
        utt = np.concatenate([np.full(len(y), i) for i, y in enumerate(ys)])
        X, y = np.vstack(xs), np.concatenate(ys)
        del xs
        rng = np.random.default_rng(self.seed)
        if 0 < self.max_train_frames < len(X):
            keep = np.sort(rng.choice(len(X), self.max_train_frames, replace=False))
            X, y, utt = X[keep], y[keep], utt[keep]
        self.mean = X.mean(axis=0, dtype=np.float64).astype(np.float32)
        self.inv_std = (1.0 / np.maximum(X.std(axis=0, dtype=np.float64), 1e-6)).astype(np.float32)
        X -= self.mean
        X *= self.inv_std
        group_of = np.arange(len(ys)) if groups is None else np.unique(
            np.asarray([str(g) for g in groups]), return_inverse=True)[1]
        n_grp = int(group_of.max()) + 1
        n_held = min(int(round(self.calibration_fraction * n_grp)), n_grp - 1)
        held_groups = np.zeros(n_grp, bool)
        if self.calibration_fraction > 0 and n_held >= 1:
            held_groups[rng.permutation(n_grp)[:n_held]] = True
        held = held_groups[group_of[utt]]
        Xtr, ytr, Xva, yva = X[~held], y[~held], X[held], y[held]
        self._held_weights = None
        if self.balanced_groups and np.any(held):  # each held-out group weighs the same in the loss
            _, inverse, counts = np.unique(group_of[utt][held], return_inverse=True, return_counts=True)
            self._held_weights = (1.0 / counts)[inverse] / len(counts)
        PhiT = np.ascontiguousarray(Phi.T)
        initial = self._initial(X.shape[1], Phi.shape, rng)
        self.history_ = []
        best = self._train(Xtr, ytr, Xva, yva, Phi, PhiT, [p.copy() for p in initial], self.epochs, rng, progress)
        calib_X, calib_y = (Xva, yva) if len(Xva) else (Xtr, ytr)
        temperature = self._fit_temperature(calib_X, calib_y, PhiT, best)
        if self.refit and len(Xva):
            # the held-out groups chose the epochs and the temperature; now every group trains
            best = self._train(X, y, X[:0], y[:0], Phi, PhiT, initial, self.best_epoch_, rng, None)
        self.hidden_weights, self.hidden_bias, self.projection, self.projection_bias = best[:4]
        if self.residual_alpha > 0:
            self.residual_weights, self.residual_bias = best[4], best[5]
        self.temperature = np.float32(temperature)
        self._fitted = True

    def _initial(self, d: int, shape: tuple, rng) -> list:
        """The layers' first values: He initialisation for the (d, hidden) ReLU layer, small for the
        projection onto the D descriptions; with ``residual_alpha`` > 0 zero residual logits of the
        C training classes (``shape`` = (C, D), the training descriptions')."""
        (C, D), m = shape, self.hidden
        params = [rng.normal(0, np.sqrt(2.0 / d), (d, m)).astype(np.float32), np.zeros(m, np.float32),
                  rng.normal(0, np.sqrt(1.0 / m), (m, D)).astype(np.float32) * np.float32(0.5),
                  np.zeros(D, np.float32)]
        if self.residual_alpha > 0:
            params += [np.zeros((m, C), np.float32), np.zeros(C, np.float32)]
        return params

    def _train(self, Xtr, ytr, Xva, yva, Phi, PhiT, params, epochs: int, rng, progress) -> list:
        """Adam on (Xtr, ytr) for at most ``epochs`` epochs from ``params``; with held-out frames
        (Xva, yva) the layers of the epoch of least held-out loss (:attr:`best_epoch_`, stopping
        after ``patience`` epochs without a lower one), without them the last epoch's."""
        residual = self.residual_alpha > 0
        moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
        beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0
        b1, b2, c1, c2, e32 = (np.float32(v) for v in (beta1, beta2, 1 - beta1, 1 - beta2, eps))
        best, best_loss, stale = None, np.inf, 0
        for epoch in range(1, epochs + 1):
            order = rng.permutation(len(Xtr))
            for a in range(0, len(order), self.batch):
                idx = order[a:a + self.batch]
                xb, yb = Xtr[idx], ytr[idx]
                nb = len(idx)
                H = xb @ params[0]
                H += params[1]
                np.maximum(H, 0, out=H)
                E = H @ params[2] + params[3]
                Z = E @ PhiT
                if residual:
                    Z += H @ params[4]
                    Z += params[5]
                Z -= Z.max(axis=1, keepdims=True)
                np.exp(Z, out=Z)
                Z /= Z.sum(axis=1, keepdims=True)
                Z[np.arange(nb), yb] -= 1.0
                Z /= nb  # dLoss/dlogits
                dE = Z @ Phi
                gV = H.T @ dE
                gv = dE.sum(axis=0)
                dH = dE @ params[2].T
                if residual:
                    gR = H.T @ Z
                    gr = Z.sum(axis=0)
                    dH += Z @ params[4].T
                    gR += np.float32(self.residual_alpha / nb) * params[4]
                dH *= H > 0
                gW = xb.T @ dH
                gb = dH.sum(axis=0)
                gW += np.float32(self.alpha / nb) * params[0]
                gV += np.float32(self.alpha / nb) * params[2]
                step += 1
                lr = np.float32(self.learning_rate * np.sqrt(1 - beta2 ** step) / (1 - beta1 ** step))
                grads = (gW, gb, gV, gv, gR, gr) if residual else (gW, gb, gV, gv)
                for p, g, (mo, ve) in zip(params, grads, moments):  # Adam, in place, float32
                    mo *= b1
                    g1 = g * c1
                    mo += g1
                    ve *= b2
                    g *= g
                    g *= c2
                    ve += g
                    np.sqrt(ve, out=g)
                    g += e32
                    np.divide(mo, g, out=g)
                    g *= lr
                    p -= g
                if step % FLUSH_STEPS == 0:  # Adam's moments of near-dead units sink into subnormal
                    for p, (mo, ve) in zip(params, moments):  # values, tens of times slower to
                        flush_subnormals(mo)                  # multiply, and so do the weights
                        flush_subnormals(ve)                  # the L2 penalty shrinks: zero them
                        flush_subnormals(p)
            for p in params:
                flush_subnormals(p)
            if not len(Xva):
                best = [p.copy() for p in params]
                continue
            loss = self._loss(Xva, yva, params, PhiT, self._held_weights)
            self.history_.append(round(loss, 5))
            if progress:
                progress(epoch, loss)
            if loss < best_loss - 1e-4:
                best_loss, best, stale, self.best_epoch_ = loss, [p.copy() for p in params], 0, epoch
            else:
                stale += 1
                if stale >= self.patience:
                    break
        return best

    def _logits(self, X: np.ndarray, params, PhiT: np.ndarray) -> np.ndarray:
        out = []
        for a in range(0, len(X), 8192):
            H = X[a:a + 8192] @ params[0]
            H += params[1]
            np.maximum(H, 0, out=H)
            z = (H @ params[2] + params[3]) @ PhiT
            if len(params) > 4:
                z += H @ params[4] + params[5]
            out.append(z)
        return np.vstack(out)

    def _loss(self, X, y, params, PhiT, weights=None) -> float:
        """Mean cross-entropy of frames X (N, d) of classes y (N,), or its ``weights`` (N,) sum."""
        ls = _log_softmax(self._logits(X, params, PhiT))
        losses = -ls[np.arange(len(y)), y]
        return float(losses.mean() if weights is None else losses @ weights)

    def _fit_temperature(self, X, y, PhiT, params) -> float:
        import scipy.optimize  # training only

        z = self._logits(X, params, PhiT).astype(np.float64)
        idx = np.arange(len(y))
        res = scipy.optimize.minimize_scalar(lambda la: -_log_softmax(np.exp(la) * z)[idx, y].mean(),
                                             bounds=(-3.0, 3.0), method="bounded")
        return float(np.exp(res.x))

    # -------------------------------------------------------------- predict
    def standardised(self, frames: np.ndarray) -> np.ndarray:
        """(T, (2 context + 1) n_features) float32 context vectors of (T, n_features) frames,
        standardised by the network's stored mean and spread: the rows its hidden layer reads."""
        X = stack_context(np.asarray(frames, np.float32), self.context) - self.mean
        X *= self.inv_std
        return X

    def embeddings(self, frames: np.ndarray) -> np.ndarray:
        """(T, D) float32 images ``e`` of (T, 42) frames in the description space."""
        clf = self.frame_classifier(np.eye(self.n_descriptions, dtype=np.float32))
        return clf.decision_function(frames)

    def frame_classifier(self, descriptions: np.ndarray, log_prior: np.ndarray | None = None,
                         residual_index: np.ndarray | None = None) -> FrameClassifier:
        """A :class:`FrameClassifier` of the classes described by ``descriptions`` (C', D): its
        ``scores`` are ``log softmax(temperature * logits)`` over those classes, minus ``log_prior``
        (C',) when given (then a scaled likelihood, as the English model's). ``residual_index`` (C',):
        each class's training class (a row of the training descriptions; -1 for none), whose own
        logit a network trained with ``residual_alpha`` adds."""
        weights, bias = self.output_layer(descriptions, residual_index)
        return self.classifier_of(weights, bias, log_prior)

    def output_layer(self, descriptions: np.ndarray, residual_index: np.ndarray | None = None,
                     parts: str = "both") -> tuple:
        """``(weights (hidden, C') float32, bias (C',) float32)``: the output layer of the classes
        described by ``descriptions`` (C', D), ``V Phi'^T`` and ``v Phi'^T`` plus each class's own
        residual logit (``residual_index``, as for :meth:`frame_classifier`), subnormals flushed;
        ``parts``: ``weights`` or ``bias`` leaves the other out (None). A column of the weights
        depends on its class alone (a caller may keep columns and assemble the layer of another
        set of classes from them, :meth:`classifier_of`), and so does an entry of the bias
        (:func:`_column_products`)."""
        if not self._fitted:
            raise ModelError("the composed network is not trained")
        Phi = np.asarray(descriptions, np.float32)
        if Phi.ndim != 2 or Phi.shape[1] != self.n_descriptions or Phi.shape[0] < 2:
            raise ValueError(f"descriptions must be (C >= 2, {self.n_descriptions}), got {Phi.shape}")
        known = index = None
        if residual_index is not None and self.residual_weights.size:
            index = np.asarray(residual_index, np.int64).reshape(Phi.shape[0])
            known = np.flatnonzero((index >= 0) & (index < self.residual_weights.shape[1]))
        weights = bias = None
        if parts != "bias":
            # not BLAS: its rounding of a column depends on the product's width and the column's place
            # in it, on some CPUs at any width; each column here is its class's own sums, in order
            weights = _column_products(np.ascontiguousarray(self.projection, np.float32), np.ascontiguousarray(Phi))
            if known is not None:
                weights[:, known] += self.residual_weights[:, index[known]]
            flush_subnormals(weights)
        if parts != "weights":
            bias = _column_products(np.ascontiguousarray(self.projection_bias, np.float32).reshape(1, -1),
                                    np.ascontiguousarray(Phi))[0]
            if known is not None:
                bias[known] += self.residual_bias[index[known]]
            flush_subnormals(bias)
        return weights, bias

    def classifier_of(self, weights: np.ndarray, bias: np.ndarray, log_prior: np.ndarray | None = None
                      ) -> FrameClassifier:
        """The :class:`FrameClassifier` of an output layer from :meth:`output_layer` (``weights``
        (hidden, C') float32, ``bias`` (C',) float32, used as given) and ``log_prior`` (C',) or None
        (:meth:`frame_classifier`): the standardisation and the ReLU units shared with every other."""
        if not self._fitted:
            raise ModelError("the composed network is not trained")
        C = weights.shape[1]
        base = self.__dict__.get("_base")
        if base is None:
            base = self.__dict__["_base"] = FrameClassifier.from_arrays(self._classifier_arrays(
                np.zeros((C, self.n_descriptions), np.float32), log_prior))
        clf = copy.copy(base)  # the standardisation and the ReLU units shared, the output layer its own
        clf.n_classes = C
        clf.weights = weights
        clf.bias = bias
        clf.prior_division = log_prior is not None
        clf.log_prior = (np.zeros(C, np.float32) if log_prior is None
                         else np.asarray(log_prior, np.float32).reshape(C))
        return clf

    def _classifier_arrays(self, Phi: np.ndarray, log_prior) -> dict:
        """The :meth:`FrameClassifier.to_arrays` layout of this network's classifier of ``Phi``."""
        d = self.mean.shape[0]
        C = Phi.shape[0]
        return {"format_version": np.array(1, np.int64), "n_classes": np.array(C, np.int64),
                  "n_features": np.array(self.n_features, np.int64), "context": np.array(self.context, np.int64),
                  "n_components": np.array(self.hidden, np.int64), "gamma": np.array(1.0),
                  "C": np.array(1.0), "seed": np.array(self.seed, np.int64), "max_iter": np.array(1, np.int64),
                  "kmeans_iter": np.array(1, np.int64), "calibration_fraction": np.array(self.calibration_fraction),
                  "prior_division": np.array(log_prior is not None), "smooth": np.array(0, np.int64),
                  "max_train_frames": np.array(self.max_train_frames, np.int64),
                  "blas_threads": np.array(1, np.int64), "pca_dims": np.array(0, np.int64),
                  "hidden": np.array(self.hidden, np.int64), "alpha": np.array(self.alpha),
                  "epochs": np.array(self.epochs, np.int64),
                  "mean": self.mean, "inv_std": self.inv_std, "projection": np.zeros((0, 0), np.float32),
                  "landmarks": np.zeros((0, d), np.float32), "landmark_sqnorm": np.zeros(0, np.float32),
                  "weights": (self.projection @ Phi.T).astype(np.float32),
                  "bias": (self.projection_bias @ Phi.T).astype(np.float32),
                  "temperature": np.array(self.temperature, np.float32),
                  "log_prior": np.zeros(C, np.float32) if log_prior is None else np.asarray(log_prior, np.float32),
                  "hidden_weights": self.hidden_weights, "hidden_bias": self.hidden_bias}

    # ---------------------------------------------------------- persistence
    def to_arrays(self) -> dict:
        if not self._fitted:
            raise ModelError("the composed network is not trained: nothing to save")
        out = {"format_version": np.array(FORMAT_VERSION, np.int64)}
        for k in _HYPER:
            v = getattr(self, k)
            out[k] = np.array(v, np.int64 if isinstance(v, int) else np.float64)
        for k in _LEARNED:
            out[k] = np.array(getattr(self, k), np.float32)
        if self.residual_weights.size:
            out["residual_weights"] = self.residual_weights
            out["residual_bias"] = self.residual_bias
        if self.class_names:
            out["class_names"] = np.array(self.class_names, dtype=str)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "ComposedNetwork":
        missing = [k for k in ("format_version",) + _HYPER + _LEARNED if k not in arrays and k not in _OPTIONAL]
        if missing:
            raise ModelError(f"the composed network arrays lack {', '.join(missing)}")
        if int(np.asarray(arrays["format_version"])) != FORMAT_VERSION:
            raise ModelError(f"composed network format {int(np.asarray(arrays['format_version']))}; this aligner "
                             f"reads {FORMAT_VERSION}")
        try:
            net = cls(**{k: np.asarray(arrays[k]).item() for k in _HYPER if k in arrays})
        except (TypeError, ValueError) as exc:
            raise ModelError(f"the composed network's settings are malformed: {exc}") from None
        for k in _LEARNED:
            v = flush_subnormals(np.array(arrays[k], np.float32))
            setattr(net, k, v if v.ndim else np.float32(v))
        d = net.n_features * (2 * net.context + 1)
        m = net.hidden
        D = net.projection.shape[1] if net.projection.ndim == 2 else -1
        if "class_names" in arrays:
            names = np.asarray(arrays["class_names"])
            if names.ndim != 1 or names.dtype.kind != "U":
                raise ModelError("the composed network's class names must be a list of strings")
            net.class_names = tuple(str(n) for n in names)
        if "residual_weights" in arrays:
            net.residual_weights = flush_subnormals(np.array(arrays["residual_weights"], np.float32))
            net.residual_bias = np.array(arrays.get("residual_bias", np.zeros(0)), np.float32)
            C = net.residual_weights.shape[1] if net.residual_weights.ndim == 2 else -1
            if net.residual_weights.shape != (m, C) or net.residual_bias.shape != (C,) or len(net.class_names) != C or not (
                    np.all(np.isfinite(net.residual_weights)) and np.all(np.isfinite(net.residual_bias))):
                raise ModelError("the composed network's residual logits have the wrong shapes or non-finite values")
        expected = {"mean": (d,), "inv_std": (d,), "hidden_weights": (d, m), "hidden_bias": (m,),
                    "projection": (m, D), "projection_bias": (D,), "temperature": ()}
        for k, shape in expected.items():
            if np.shape(getattr(net, k)) != shape or D < 1:
                raise ModelError(f"composed network array {k!r} has shape {np.shape(getattr(net, k))}, expected {shape}")
            if not np.all(np.isfinite(getattr(net, k))):
                raise ModelError(f"composed network array {k!r} holds NaN or infinite values")
        if not net.temperature > 0:
            raise ModelError("the composed network's temperature must be positive")
        net._fitted = True
        return net


def averaged_network(networks: Sequence["ComposedNetwork"]) -> "ComposedNetwork":
    """One :class:`ComposedNetwork` whose logits are the mean of ``networks``' calibrated logits
    (each ``temperature * logits``): their ReLU units side by side (K networks of m units: K m
    units), each network's standardisation folded into its first layer so that all read the first
    network's standardised frames, each output layer scaled by its temperature / K, temperature 1.

    Every class's score (:meth:`~ComposedNetwork.frame_classifier`: log softmax, minus a prior) is
    then the mean of the networks' scores plus a per-frame constant, which the segmental DP's
    agreement (each frame's scores minus their maximum) and the refiner's score differences do
    not see: an ensemble at the cost of one wider network. The networks must read the same
    frames (context, features) and describe classes the same way (D); with residual logits, of
    the same training classes. Raises ``ValueError`` otherwise."""
    nets = list(networks)
    if not nets or not all(n._fitted for n in nets):
        raise ValueError("averaged_network needs one or more trained networks")
    first = nets[0]
    if len(nets) == 1:
        return first
    for n in nets[1:]:
        if (n.context, n.n_features, n.n_descriptions) != (first.context, first.n_features, first.n_descriptions):
            raise ValueError("the networks read different frames or describe classes differently")
        if bool(n.residual_weights.size) != bool(first.residual_weights.size) or (
                first.residual_weights.size and n.class_names != first.class_names):
            raise ValueError("the networks' residual logits are of different training classes")
    K = len(nets)
    mu0, s0 = first.mean.astype(np.float64), first.inv_std.astype(np.float64)
    hidden_w, hidden_b, proj, res_w = [], [], [], []
    proj_b = np.zeros(first.n_descriptions)
    res_b = np.zeros(first.residual_bias.shape)
    for n in nets:
        W = n.hidden_weights.astype(np.float64)
        s = n.inv_std.astype(np.float64)
        # (x - mu_n) s_n = u (s_n / s_0) + (mu_0 - mu_n) s_n, u = (x - mu_0) s_0 the first network's input
        hidden_w.append((s / s0)[:, None] * W)
        hidden_b.append(n.hidden_bias.astype(np.float64) + ((mu0 - n.mean.astype(np.float64)) * s) @ W)
        scale = float(n.temperature) / K
        proj.append(scale * n.projection.astype(np.float64))
        proj_b += scale * n.projection_bias.astype(np.float64)
        if n.residual_weights.size:
            res_w.append(scale * n.residual_weights.astype(np.float64))
            res_b += scale * n.residual_bias.astype(np.float64)
    out = copy.copy(first)
    out.__dict__.pop("_base", None)  # the cached classifier of the first network's layers
    out.hidden = K * first.hidden
    out.hidden_weights = np.hstack(hidden_w).astype(np.float32)
    out.hidden_bias = np.concatenate(hidden_b).astype(np.float32)
    out.projection = np.vstack(proj).astype(np.float32)
    out.projection_bias = proj_b.astype(np.float32)
    out.temperature = np.float32(1.0)
    if res_w:
        out.residual_weights = np.vstack(res_w).astype(np.float32)
        out.residual_bias = res_b.astype(np.float32)
    for k in ("hidden_weights", "hidden_bias", "projection", "projection_bias", "residual_weights"):
        flush_subnormals(getattr(out, k))
    out.history_ = list(first.history_)
    return out


def mean_activations(network: "ComposedNetwork", frames_list: Sequence[np.ndarray], block: int = 8192) -> np.ndarray:
    """(hidden,) float64 mean of each ReLU unit of ``network`` over every frame of ``frames_list``
    ((T_i, n_features) frames each, read with their context as the network reads them), in blocks
    of ``block`` frames: 0 for a unit positive on none of them."""
    total = np.zeros(network.hidden)
    n = 0
    for frames in frames_list:
        X = network.standardised(frames)
        for a in range(0, len(X), block):
            H = X[a:a + block] @ network.hidden_weights
            H += network.hidden_bias
            np.maximum(H, 0, out=H)
            total += H.sum(axis=0, dtype=np.float64)
            n += len(H)
    return total / max(n, 1)


def unit_contributions(network: "ComposedNetwork", activations: np.ndarray) -> np.ndarray:
    """(hidden,) how much each ReLU unit moves the logits: its mean activation
    (:func:`mean_activations`) times the norm of its row of the output map (``projection``)."""
    return np.asarray(activations, np.float64) * np.linalg.norm(network.projection.astype(np.float64), axis=1)


def pruned_network(network: "ComposedNetwork", keep: np.ndarray) -> "ComposedNetwork":
    """``network`` with only the ReLU units ``keep`` ((hidden,) bool): a unit left out contributes
    nothing where it is 0, so a unit never positive on the training frames (:func:`mean_activations`
    0; L2 training leaves many so) can go at no cost to their scores, and saves its share of the
    hidden layer's products on every frame scored; so can, at little cost, units that contribute
    little (:func:`unit_contributions`)."""
    keep = np.asarray(keep, bool)
    if keep.shape != (network.hidden,) or not keep.any():
        raise ValueError(f"keep must be a ({network.hidden},) bool array with a unit kept")
    if keep.all():
        return network
    out = copy.copy(network)
    out.__dict__.pop("_base", None)
    out.hidden = int(keep.sum())
    out.hidden_weights = np.ascontiguousarray(network.hidden_weights[:, keep])
    out.hidden_bias = network.hidden_bias[keep].copy()
    out.projection = np.ascontiguousarray(network.projection[keep])
    if network.residual_weights.size:
        out.residual_weights = np.ascontiguousarray(network.residual_weights[keep])
    return out


@njit(cache=True, nogil=True)
def _column_products(A, Phi):
    """(R, C) float32 ``A @ Phi.T`` of float32 ``A`` (R, D) and ``Phi`` (C, D), each entry summed
    in float64 over d = 0 .. D-1 in order: an entry depends on its row of ``A`` and its class's
    description alone, whatever the other classes or the CPU's BLAS kernels."""
    R, D = A.shape
    C = Phi.shape[0]
    out = np.empty((R, C), np.float32)
    for r in range(R):
        for c in range(C):
            acc = 0.0
            for d in range(D):
                acc += np.float64(A[r, d]) * np.float64(Phi[c, d])
            out[r, c] = np.float32(acc)
    return out
