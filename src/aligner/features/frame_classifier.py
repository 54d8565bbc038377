"""Frame phoneme classifier ``g(s_t, p)`` of the forced aligner (SPEC section 3).

A multiclass SVM on the acoustic vector of frame ``t`` with ``context`` frames
on either side, its RBF kernel approximated by the Nystroem method:

1. stack frames ``t - c .. t + c`` (edges repeated) into one ``d = (2c+1) * 42``
   vector, standardise every dimension with the training set's mean and spread,
   and project it on its first ``pca_dims`` principal components (128 of 378);
2. kernel values against ``n_components`` landmarks (k-means centres of the
   training vectors): ``k_j(x) = exp(-gamma / d * ||x - l_j||^2)``;
3. one-vs-rest linear SVMs (squared hinge, L2, one bias per class) on the
   Nystroem features ``k(x) K_LL^{-1/2}``, trained in the primal with L-BFGS;
4. optionally, the SVM outputs are averaged over ``2 smooth + 1`` frames (off by
   default: it blurs phone boundaries more than it helps frame accuracy).

With ``hidden > 0`` a network replaces steps 2-3: one layer of ``hidden`` ReLU units
``h(x) = max(0, x W_h + b_h)`` and a softmax output layer ``f(x) = h(x) W + b``, trained
together (scikit-learn's ``MLPClassifier``: Adam, L2 penalty ``alpha``, stopped when the log
loss of the held-out calibration utterances stops falling; those utterances are not trained
on). ``f`` takes the place of the SVM outputs: the temperature, the priors and the scores
follow as for the kernel. (One-vs-rest SVMs fitted on the units instead gave worse alignments.)

At prediction time the whitening ``K_LL^{-1/2}`` is folded into the linear
weights, so :meth:`FrameClassifier.scores` is a (T, 378) x (378, 128) product,
a (T, 128) x (128, m) product, an ``exp`` and a (T, m) x (m, n_classes) product
in float32: about 1 ms per second of audio (100 frames) on one core for
m = 2000. No scikit-learn, no per-frame Python at predict time.

``scores`` returns calibrated log-posteriors ``log softmax(a * f(x))`` of the SVM
outputs ``f`` (natural log; temperature ``a`` fitted on held-out utterances),
minus the log class priors when ``prior_division`` is on: the "scaled
likelihood" of hybrid recognisers, which SPEC section 3 found to help the
aligner (whose phone sequence is given) although it lowers frame accuracy.
``predict`` is the argmax of the SVM outputs.

Persistence is pickle-free: :meth:`FrameClassifier.to_arrays` returns a dict of
numpy arrays (hyper-parameters included, as 0-d arrays) for ``np.savez``;
``np.load(..., allow_pickle=False)`` and :meth:`FrameClassifier.from_arrays`
restore an identical predictor.
"""

from __future__ import annotations

import time
from typing import Mapping, Optional, Sequence

import numpy as np
from numba import njit

from aligner.runtime import blas
from aligner.errors import FeatureError, ModelError

#: bump when the meaning of the stored arrays changes
FORMAT_VERSION = 1

#: frames scored at once (with their context); longer recordings are scored block by block
SCORE_BLOCK_FRAMES = 2048
_HYPER = ("n_classes", "n_features", "context", "n_components", "gamma", "C", "seed",
          "max_iter", "kmeans_iter", "calibration_fraction", "prior_division", "smooth",
          "max_train_frames", "blas_threads", "pca_dims")
#: hyper-parameters of the network feature map (``hidden > 0``); files saved before it existed
#: lack them and load as Nystroem classifiers
_NETWORK_HYPER = ("hidden", "alpha", "epochs")
#: saved only when not 1 (files of one network keep their layout; files without it hold one)
_NETWORKS_KEY = "networks"
_LEARNED = ("mean", "inv_std", "projection", "landmarks", "landmark_sqnorm", "weights", "bias",
            "temperature", "log_prior")
#: the network feature map's layer ((k, hidden) and (hidden,); (0, 0) and (0,) for Nystroem)
_NETWORK_LEARNED = ("hidden_weights", "hidden_bias")
#: epochs without a lower held-out log loss after which the network's training stops
NETWORK_PATIENCE = 6


def flush_subnormals(a: np.ndarray) -> np.ndarray:
    """``a`` (float32, any shape) with its subnormal values (0 < |v| < 1.18e-38) set to zero, in
    place; returned for chaining. Training with an L2 penalty leaves many weights there, and
    x86 processors multiply subnormal float32 operands tens of times slower than normal ones
    (BLAS included), while their products (at most about 1e-36 here) change no output."""
    if a.dtype == np.float32 and a.size:
        a[(a != 0) & (np.abs(a) < np.finfo(np.float32).tiny)] = 0
    return a


def stack_context(frames: np.ndarray, context: int) -> np.ndarray:
    """(T, D) frames -> (T, (2 context + 1) D): frames ``t - context .. t + context`` side by side.

    Frames before the first and after the last repeat the edge frame. Column
    block ``j`` holds frame ``t + j - context``.
    """
    frames = np.asarray(frames)
    if context == 0:
        return np.ascontiguousarray(frames)
    T, D = frames.shape
    padded = np.pad(frames, ((context, context), (0, 0)), mode="edge")
    win = np.lib.stride_tricks.sliding_window_view(padded, (2 * context + 1, D))[:, 0]
    return win.reshape(T, (2 * context + 1) * D)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


#: recordings of more frames are smoothed block by block (no (T, C) float64 cumulative sums)
SMOOTH_BLOCK_FRAMES = 100_000


def _smooth(dec: np.ndarray, radius: int) -> np.ndarray:
    """Moving average of (T, C) values over ``2 radius + 1`` frames (the window shrinks at the edges)."""
    T = dec.shape[0]
    if radius <= 0 or T < 2:
        return dec
    if T > SMOOTH_BLOCK_FRAMES:  # a long recording: each block with its radius of context
        out = np.empty_like(dec)
        for a in range(0, T, SMOOTH_BLOCK_FRAMES):
            b = min(T, a + SMOOTH_BLOCK_FRAMES)
            lo, hi = max(0, a - radius), min(T, b + radius)
            out[a:b] = _smooth_block(dec[lo:hi], radius, lo, T)[a - lo:b - lo]
        return out
    return _smooth_block(dec, radius, 0, T)


@njit(cache=True, nogil=True)
def _kernel_exponent(E, g2, g_lsq, g_psq):
    """In place, one pass: ``E[i, j] = min(E[i, j] * g2 - g_lsq[j] - g_psq[i], 0)`` over
    (T, m) float32 dot products ``E`` (frames x landmarks), ``g2`` = 2 gamma / d, ``g_lsq``
    (m,) and ``g_psq`` (T,) gamma / d times the squared norms of the landmarks and of the
    projected frames: the RBF exponent ``-gamma / d ||p - l||^2``, float32, in the order of
    operations of numpy's ``E *= g2; E -= g_lsq; E -= g_psq[:, None]; minimum(E, 0)``."""
    zero = np.float32(0.0)
    for i in range(E.shape[0]):
        row = E[i]
        gp = g_psq[i]
        for j in range(row.shape[0]):
            v = row[j] * g2 - g_lsq[j] - gp
            row[j] = v if v < zero else zero


@njit(cache=True, nogil=True)
def _standardised_context(frames, context, mean, inv_std, out):
    """Fill ``out`` (T, (2 context + 1) D) float32 with the standardised context vectors of
    (T, D) float32 ``frames``: ``out[t, j D + i] = (frames[u, i] - mean[j D + i]) * inv_std[j D
    + i]`` with ``u = clip(t + j - context, 0, T - 1)`` (edge frames repeated), ``mean`` and
    ``inv_std`` ((2 context + 1) D,) float32: :func:`stack_context` then ``(P - mean) *
    inv_std`` in one pass, in numpy's float32 order of operations."""
    T, D = frames.shape
    width = 2 * context + 1
    for t in range(T):
        row = out[t]
        for j in range(width):
            u = min(max(t + j - context, 0), T - 1)
            src = frames[u]
            base = j * D
            for i in range(D):
                row[base + i] = (src[i] - mean[base + i]) * inv_std[base + i]


class FrameClassifier:
    """Nystroem-RBF one-vs-rest squared-hinge SVM over frames with context.

    Parameters
    ----------
    n_classes : number of phone classes; labels are ints ``0 .. n_classes-1``
        (39 for the Lee & Hon classes of :mod:`aligner.phones.sets`).
    context : frames of context on each side (the input is ``2 context + 1`` frames).
    n_components : Nystroem landmarks ``m``; predict cost grows linearly with it.
    gamma : RBF width *relative to the input dimension* ``d``: the kernel is
        ``exp(-gamma / d * ||x - x'||^2)`` on standardised vectors.
    C : weight of the squared-hinge loss (larger = less regularisation).
    seed : seeds the landmark initialisation, the calibration split and the subsample.
    max_iter : L-BFGS iterations of the SVM fit (the refit on all data after the
        calibration uses half as many, warm-started).
    kmeans_iter : Lloyd iterations placing the landmarks (0 = random training vectors).
    calibration_fraction : share of the utterances held out to fit the softmax
        temperature before the final fit on all utterances; 0 fits it on the
        training frames (over-confident) and skips the refit.
    prior_division : ``scores`` subtracts the log class priors (add-one smoothed
        training frame frequencies).
    smooth : radius in frames of the moving average of the SVM outputs (0 = off).
    max_train_frames : train on a random subset of this many frames when given more
        (bounds the training time on large corpora; 0 = no limit).
    n_features : dimension of one input frame (42 for :func:`aligner.features.mfcc.mfcc_features`).
    pca_dims : if > 0, the standardised context vectors are projected on their first
        ``pca_dims`` principal components before the kernel (cuts the predict cost; the
        kernel width stays relative to the full dimension).
    blas_threads : BLAS threads used by :meth:`fit` and :meth:`scores` (0 = the library's
        default). 1 is fastest per core when several files are processed in parallel
        or the cores are shared; it makes no difference to the results.
    hidden : ReLU units of the hidden layer of the network that replaces the Nystroem kernel
        and its SVMs (module docstring); 0 = the kernel (``n_components``, ``gamma``,
        ``kmeans_iter``, ``C`` and ``max_iter`` apply only then).
    alpha : L2 penalty of the network's training (``hidden > 0``).
    epochs : at most this many passes over the training frames when training the network;
        it stops earlier when the held-out log loss has not fallen for
        :data:`NETWORK_PATIENCE` passes, keeping the best pass's layer.
    networks : networks of ``hidden`` units trained (``hidden > 0``), with seeds ``seed``,
        ``seed + 1``, ... (so other training subsamples, calibration splits and initial
        weights), and averaged into one (:func:`averaged_networks`): the layer of a trained
        classifier of several networks holds their live units, at most ``networks * hidden``,
        and their projections (``pca_dims``) folded into those units' input weights.
    """

    def __init__(self, n_classes: int = 39, context: int = 4, n_components: int = 2000,
                 gamma: float = 0.75, C: float = 1.0, seed: int = 0, max_iter: int = 150,
                 kmeans_iter: int = 5, calibration_fraction: float = 0.2,
                 prior_division: bool = True, smooth: int = 0, max_train_frames: int = 60000,
                 n_features: int = 42, blas_threads: int = 1, pca_dims: int = 128,
                 hidden: int = 0, alpha: float = 1.0, epochs: int = 60, networks: int = 1):
        self.n_classes = int(n_classes)
        self.context = int(context)
        self.n_components = int(n_components)
        self.gamma = float(gamma)
        self.C = float(C)
        self.seed = int(seed)
        self.max_iter = int(max_iter)
        self.kmeans_iter = int(kmeans_iter)
        self.calibration_fraction = float(calibration_fraction)
        self.prior_division = bool(prior_division)
        self.smooth = int(smooth)
        self.max_train_frames = int(max_train_frames)
        self.n_features = int(n_features)
        self.blas_threads = int(blas_threads)
        self.pca_dims = int(pca_dims)
        self.hidden = int(hidden)
        self.alpha = float(alpha)
        self.epochs = int(epochs)
        self.networks = int(networks)
        if self.hidden < 0 or self.alpha < 0 or self.epochs < 1:
            raise ValueError(f"hidden and alpha must be >= 0 and epochs >= 1, got {hidden}, {alpha}, {epochs}")
        if not 1 <= self.networks <= 16:
            raise ValueError(f"networks must be 1 to 16, got {networks}")
        #: the network feature map's layer (``hidden > 0``; empty for the Nystroem kernel)
        self.hidden_weights = np.zeros((0, 0), np.float32)
        self.hidden_bias = np.zeros(0, np.float32)
        self._fitted = False
        #: passes over the training frames the last :meth:`fit` trained the network for (0: none)
        self.network_epochs_ = 0
        #: wall-clock seconds the last :meth:`fit` took
        self.train_seconds_ = float("nan")

    def get_params(self) -> dict:
        """The constructor's parameters (plain Python values)."""
        return {k: getattr(self, k) for k in _HYPER + _NETWORK_HYPER + (_NETWORKS_KEY,)}

    # ------------------------------------------------------------------ fit
    def _check_frames(self, frames: np.ndarray) -> np.ndarray:
        frames = np.asarray(frames)
        if frames.ndim != 2 or frames.shape[1] != self.n_features or frames.shape[0] < 1:
            raise FeatureError(
                f"the frame classifier expects (T, {self.n_features}) frames with T >= 1, "
                f"got shape {frames.shape}")
        if not np.all(np.isfinite(frames)):
            raise FeatureError("the frame classifier got NaN or infinite feature values")
        return frames

    def fit(self, frames_list: Sequence[np.ndarray],
            labels_list: Sequence[np.ndarray], groups: Optional[Sequence] = None) -> "FrameClassifier":
        """Train on utterances and return ``self``.

        ``frames_list[i]``: (T_i, n_features) frames of utterance i;
        ``labels_list[i]``: (T_i,) int class of each frame, in ``0 .. n_classes-1``;
        ``groups[i]`` (optional): a key shared by copies of one recording (e.g. its
        vocal-tract-length-perturbed versions), so the calibration hold-out takes whole groups
        and never calibrates on a copy of a training utterance.
        """
        t0 = time.perf_counter()
        if self.hidden and self.networks > 1:
            members = [FrameClassifier(**dict(self.get_params(), networks=1, seed=self.seed + i)).fit(
                frames_list, labels_list, groups) for i in range(self.networks)]
            averaged = averaged_networks(members)
            for k in _LEARNED + _NETWORK_LEARNED:
                setattr(self, k, getattr(averaged, k))
            self.network_epochs_ = max(m.network_epochs_ for m in members)
            self._fitted = True
        else:
            with blas.limit(self.blas_threads):
                self._fit(frames_list, labels_list, groups)
        self.train_seconds_ = time.perf_counter() - t0
        return self

    def _fit(self, frames_list, labels_list, groups=None) -> None:
        if len(frames_list) != len(labels_list) or len(frames_list) == 0:
            raise ValueError(f"fit needs one label array per frame array (at least one), got "
                             f"{len(frames_list)} frame arrays and {len(labels_list)} label arrays")
        xs, ys = [], []
        for i, (f, y) in enumerate(zip(frames_list, labels_list)):
            f = self._check_frames(f)
            y = np.asarray(y)
            if y.shape != (f.shape[0],):
                raise ValueError(f"utterance {i}: labels of shape {y.shape} for {f.shape[0]} frames")
            if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= self.n_classes:
                raise ValueError(f"utterance {i}: labels must be ints in 0..{self.n_classes - 1}")
            xs.append(stack_context(f.astype(np.float32), self.context))
            ys.append(y.astype(np.int64))
        utt = np.concatenate([np.full(len(y), i) for i, y in enumerate(ys)])
        X = np.vstack(xs)
        y = np.concatenate(ys)
        del xs
        rng = np.random.default_rng(self.seed)
        if 0 < self.max_train_frames < len(X):
            keep = np.sort(rng.choice(len(X), self.max_train_frames, replace=False))
            X, y, utt = X[keep], y[keep], utt[keep]
        n, d = X.shape

        # standardise each input dimension
        self.mean = X.mean(axis=0, dtype=np.float64).astype(np.float32)
        self.inv_std = (1.0 / np.maximum(X.std(axis=0, dtype=np.float64), 1e-6)).astype(np.float32)
        P = (X - self.mean) * self.inv_std
        del X
        if 0 < self.pca_dims < d:
            w, V = np.linalg.eigh(P.T.astype(np.float64) @ P / n)
            self.projection = np.ascontiguousarray(V[:, ::-1][:, :self.pca_dims]).astype(np.float32)
            P = P @ self.projection
        else:
            self.projection = np.zeros((0, 0), np.float32)

        counts = np.bincount(y, minlength=self.n_classes).astype(np.float64)
        self.log_prior = np.log((counts + 1.0) / (counts.sum() + self.n_classes)).astype(np.float32)
        if groups is None:
            group_of = np.arange(len(ys))
        else:
            if len(groups) != len(ys):
                raise ValueError(f"{len(groups)} groups for {len(ys)} utterances")
            group_of = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)[1]

        if self.hidden:  # the network, stopped on the held-out utterances, whose softmax is the output
            tr = self._calibration_split(group_of, utt, rng)
            (Wh, bh, W, b), self.network_epochs_ = _fit_relu_network(
                P, y, tr, self.n_classes, self.hidden, self.alpha, self.epochs, self.seed)
            Wh, bh, W, b = (flush_subnormals(a) for a in (Wh, bh, W, b))
            held = slice(None) if tr is None else ~tr  # the training frames when nothing is held out
            dec = _smooth_by_utterance(_relu(P[held], Wh, bh) @ W + b, utt[held], self.smooth)
            self.temperature = np.float32(_fit_temperature(dec, y[held]))
            self.landmarks = np.zeros((0, P.shape[1]), np.float32)
            self.landmark_sqnorm = np.zeros(0, np.float32)
            self.weights, self.bias = W, b
            self.hidden_weights, self.hidden_bias = Wh, bh
            self._fitted = True
            return

        g = self.gamma / d
        L = _kmeans(P, min(self.n_components, n), self.kmeans_iter, rng)
        Z, M = _nystroem_features(P, L, g)
        tr = self._calibration_split(group_of, utt, rng)
        del P

        # temperature from held-out utterances, then the final fit on everything
        if tr is not None:
            W, b = _fit_ovr_sqhinge(Z[tr], y[tr], self.n_classes, self.C, self.max_iter)
            dec = _smooth_by_utterance(Z[~tr] @ W + b, utt[~tr], self.smooth)
            self.temperature = np.float32(_fit_temperature(dec, y[~tr]))
            W, b = _fit_ovr_sqhinge(Z, y, self.n_classes, self.C, max(self.max_iter // 2, 1),
                                    W0=W, b0=b)
        else:
            W, b = _fit_ovr_sqhinge(Z, y, self.n_classes, self.C, self.max_iter)
            dec = _smooth_by_utterance(Z @ W + b, utt, self.smooth)
            self.temperature = np.float32(_fit_temperature(dec, y))

        # fold the whitening into the weights: f(x) = k(x, L) @ (M @ W) + b
        self.landmarks = L.astype(np.float32)
        self.landmark_sqnorm = (L.astype(np.float64) ** 2).sum(axis=1).astype(np.float32)
        self.weights = flush_subnormals((M.astype(np.float64) @ W.astype(np.float64)).astype(np.float32))
        self.bias = flush_subnormals(b.astype(np.float32))
        self._fitted = True

    def _calibration_split(self, group_of: np.ndarray, utt: np.ndarray, rng) -> np.ndarray | None:
        """(n,) bool mask of the training frames outside the calibration hold-out (whole groups,
        ``calibration_fraction`` of them, drawn from ``rng``), or None when nothing is held out."""
        n_grp = int(group_of.max()) + 1
        n_held = min(int(round(self.calibration_fraction * n_grp)), n_grp - 1)
        if not (self.calibration_fraction > 0 and n_held >= 1):
            return None
        held = np.zeros(n_grp, bool)
        held[rng.permutation(n_grp)[:n_held]] = True
        return ~held[group_of[utt]]

    # -------------------------------------------------------------- predict
    def decision_function(self, frames: np.ndarray) -> np.ndarray:
        """(T, n_classes) float32 one-vs-rest SVM outputs of (T, n_features) frames, time-smoothed."""
        if not self._fitted:
            raise ModelError("the frame classifier is not trained: call fit() or from_arrays()")
        frames = self._check_frames(frames).astype(np.float32, copy=False)
        T, c = frames.shape[0], self.context
        if T <= SCORE_BLOCK_FRAMES:
            dec = self._svm_outputs(frames)
        else:  # blocks of frames with their context, so memory does not grow with T
            dec = np.empty((T, self.n_classes), np.float32)
            for a in range(0, T, SCORE_BLOCK_FRAMES):
                b = min(T, a + SCORE_BLOCK_FRAMES)
                lo, hi = max(0, a - c), min(T, b + c)
                dec[a:b] = self._svm_outputs(frames[lo:hi])[a - lo:b - lo]
        return _smooth(dec, self.smooth)

    def _svm_outputs(self, frames: np.ndarray) -> np.ndarray:
        """(T, n_classes) float32 SVM outputs of (T, n_features) float32 frames, unsmoothed
        (edge frames' context padded by repetition)."""
        P = self._standardised(frames)
        with blas.limit(self.blas_threads):
            return self._outputs(P)

    def _outputs(self, P: np.ndarray) -> np.ndarray:
        """(T, n_classes) float32 outputs (the SVMs', or the network's logits) of (T, width)
        float32 standardised context vectors, on the caller's BLAS threads: the feature map,
        then the output layer."""
        dec = self._feature_map(P) @ self.weights
        dec += self.bias
        return dec

    def kernel_values(self, frames: np.ndarray) -> np.ndarray:
        """(T, m) float32 feature map of (T, n_features) float32 frames, the ``E`` of the SVM
        outputs ``E @ weights + bias`` (edge frames' context padded by repetition, the whole
        array one block): the RBF kernel values ``exp(-gamma / d ||p_t - l_j||^2)`` against the
        m landmarks, or with ``hidden > 0`` the m = ``hidden`` ReLU units."""
        P = self._standardised(frames)
        with blas.limit(self.blas_threads):
            return self._feature_map(P)

    def _feature_map(self, P: np.ndarray) -> np.ndarray:
        """(T, m) float32 feature map of (T, width) float32 standardised context vectors
        (:meth:`_standardised`), on the caller's BLAS threads: the projection if any, then the
        kernel values against the landmarks or the network's ReLU units."""
        g = np.float32(self.gamma / P.shape[1])  # relative to the width before the projection
        if self.projection.size:
            P = P @ self.projection
        if self.hidden:
            return _relu(P, self.hidden_weights, self.hidden_bias)
        # -g ||p - l||^2 = 2 g p.l - g ||p||^2 - g ||l||^2
        E = P @ self._landmarks_by_column()
        _kernel_exponent(E, 2 * g, g * self.landmark_sqnorm, g * np.einsum("ij,ij->i", P, P))
        np.exp(E, out=E)
        return E

    def _standardised(self, frames: np.ndarray) -> np.ndarray:
        """(T, (2 context + 1) n_features) float32 standardised context vectors of (T,
        n_features) float32 frames: ``(stack_context(frames) - mean) * inv_std``, the same
        values in one pass (:func:`_standardised_context`) when the stored mean and spread are
        float32 vectors of that width."""
        mean, inv_std = self.mean, self.inv_std
        width = (2 * self.context + 1) * frames.shape[1]
        if (frames.dtype != np.float32 or getattr(mean, "dtype", None) != np.float32
                or getattr(inv_std, "dtype", None) != np.float32 or np.shape(mean) != (width,)
                or np.shape(inv_std) != (width,)):
            return (stack_context(frames, self.context) - mean) * inv_std
        out = np.empty((frames.shape[0], width), np.float32)
        _standardised_context(np.ascontiguousarray(frames), self.context, np.ascontiguousarray(mean),
                              np.ascontiguousarray(inv_std), out)
        return out

    def _landmarks_by_column(self) -> np.ndarray:
        """(k, m) float32 C-contiguous copy of the landmarks' transpose, made once per landmark
        array (BLAS multiplies by it faster than by the transposed view; same products)."""
        cached = getattr(self, "_landmarks_t", None)
        if cached is None or cached[0] is not self.landmarks:
            cached = (self.landmarks, np.ascontiguousarray(self.landmarks.T))
            self._landmarks_t = cached
        return cached[1]

    def log_posteriors(self, frames: np.ndarray) -> np.ndarray:
        """(T, n_classes) float32 calibrated natural-log posteriors ``log softmax(temperature * f)``."""
        dec = self.decision_function(frames)
        if dec.shape[0] <= SMOOTH_BLOCK_FRAMES:
            return _log_softmax(self.temperature * dec)
        for a in range(0, dec.shape[0], SMOOTH_BLOCK_FRAMES):  # row by row anyway: blocks, in place
            b = a + SMOOTH_BLOCK_FRAMES
            dec[a:b] = _log_softmax(self.temperature * dec[a:b])
        return dec

    def scores(self, frames: np.ndarray) -> np.ndarray:
        """(T, n_classes) float32 confidences ``g(s_t, p)`` of (T, n_features) frames.

        :meth:`log_posteriors`, minus the log class priors if ``prior_division``
        (then a log scaled likelihood, ``log p(p | s_t) - log p(p)``).
        """
        s = self.log_posteriors(frames)
        if self.prior_division:
            s -= self.log_prior
        return s.astype(np.float32, copy=False)

    def predict(self, frames: np.ndarray) -> np.ndarray:
        """(T,) int64 most likely class of each frame (argmax of the SVM outputs)."""
        return self.decision_function(frames).argmax(axis=1)

    # ---------------------------------------------------------- persistence
    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every parameter as a plain numpy array (hyper-parameters as 0-d arrays).

        Save with ``np.savez(path, **clf.to_arrays())``; nothing needs pickle, so
        ``np.load(path, allow_pickle=False)`` reads it back.
        """
        if not self._fitted:
            raise ModelError("the frame classifier is not trained: nothing to save")
        out = {"format_version": np.array(FORMAT_VERSION, np.int64)}
        for k in _HYPER + (_NETWORK_HYPER if self.hidden else ()) + ((_NETWORKS_KEY,) if self.networks != 1 else ()):
            v = getattr(self, k)
            dtype = np.bool_ if isinstance(v, bool) else np.int64 if isinstance(v, int) else np.float64
            out[k] = np.array(v, dtype)
        for k in _LEARNED + (_NETWORK_LEARNED if self.hidden else ()):
            out[k] = np.array(getattr(self, k), np.float32)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "FrameClassifier":
        """Rebuild a trained classifier from :meth:`to_arrays` output (or an ``np.load`` result)."""
        missing = [k for k in ("format_version",) + _HYPER + _LEARNED if k not in arrays]
        if missing:
            raise ModelError(f"the frame classifier arrays lack {', '.join(missing)}")
        version = int(np.asarray(arrays["format_version"]))
        if version != FORMAT_VERSION:
            raise ModelError(f"frame classifier format {version}; this aligner reads {FORMAT_VERSION}")
        network = "hidden" in arrays  # files saved before the network feature map lack its keys
        missing = [k for k in _NETWORK_HYPER + _NETWORK_LEARNED if network and k not in arrays]
        if missing:
            raise ModelError(f"the frame classifier arrays lack {', '.join(missing)}")
        hyper = _HYPER + (_NETWORK_HYPER if network else ()) + ((_NETWORKS_KEY,) if _NETWORKS_KEY in arrays else ())
        learned = _LEARNED + (_NETWORK_LEARNED if network else ())
        try:
            clf = cls(**{k: np.asarray(arrays[k]).item() for k in hyper})
        except (TypeError, ValueError) as exc:
            raise ModelError(f"the frame classifier hyper-parameters are malformed: {exc}") from None
        if network and clf.hidden < 1:
            raise ModelError(f"the frame classifier's network has {clf.hidden} hidden units")
        for k in learned:  # a copy (the caller's arrays untouched), its subnormals flushed
            v = flush_subnormals(np.array(arrays[k], np.float32))
            setattr(clf, k, v if v.ndim else np.float32(v))
        d = clf.n_features * (2 * clf.context + 1)
        k = clf.pca_dims if 0 < clf.pca_dims < d else 0
        if clf.hidden and clf.networks > 1:
            k = 0  # averaged networks: their projections are folded into their units
        if clf.hidden:
            m = clf.hidden  # several networks averaged: their live units, at most networks * hidden
            if clf.networks > 1 and np.ndim(clf.hidden_weights) == 2 and \
                    1 <= clf.hidden_weights.shape[1] <= clf.networks * clf.hidden:
                m = clf.hidden_weights.shape[1]
            expected = {"landmarks": (0, k or d), "landmark_sqnorm": (0,), "hidden_weights": (k or d, m),
                        "hidden_bias": (m,)}
        else:
            m = clf.landmarks.shape[0] if clf.landmarks.ndim == 2 else -1
            expected = {"landmarks": (m, k or d), "landmark_sqnorm": (m,)}
        expected.update({"mean": (d,), "inv_std": (d,), "projection": (d, k) if k else (0, 0),
                         "weights": (m, clf.n_classes), "bias": (clf.n_classes,),
                         "log_prior": (clf.n_classes,), "temperature": ()})
        for k, shape in expected.items():
            if np.shape(getattr(clf, k)) != shape:
                raise ModelError(f"frame classifier array {k!r} has shape {np.shape(getattr(clf, k))}, "
                                 f"expected {shape}")
        if not all(np.all(np.isfinite(getattr(clf, k))) for k in learned):
            raise ModelError("the frame classifier arrays hold NaN or infinite values")
        clf._fitted = True
        return clf


def averaged_networks(classifiers: Sequence["FrameClassifier"]) -> "FrameClassifier":
    """One network classifier whose outputs are the mean of the given networks' calibrated
    outputs: ``log_posteriors`` = ``log softmax(mean_i(temperature_i * f_i))``, where ``f_i``
    is network i's (smoothed) output layer. Its hidden layer holds every network's live units
    side by side (each network's input standardisation folded into its units' weights and
    biases, so the first network's is the shared one), its output layer their temperature-scaled
    output weights over the number of networks, and its temperature is 1; a unit none of
    whose input weights is non-zero and whose bias is not positive outputs 0 on every frame and
    is left out. A network's projection, if any, is folded into its units' input weights (the
    result has none). The networks must be trained on frames of the same shape and classes
    (e.g. the same data with other seeds, :func:`aligner.alignment.training.fit_classifier`),
    with the same smoothing and prior division. The class priors the scores divide
    by are the networks' mean log priors (their training subsamples may differ). So its scores
    differ from the mean of the networks' scores by a per-frame constant only, which no forced
    alignment sees."""
    nets = list(classifiers)
    if not nets or not all(c._fitted and c.hidden > 0 for c in nets):
        raise ModelError("averaged_networks needs trained network classifiers (hidden > 0)")
    if len(nets) == 1:  # itself (a copy)
        return FrameClassifier.from_arrays(nets[0].to_arrays())
    first = nets[0]
    same = ("n_classes", "n_features", "context", "smooth", "prior_division")
    for c in nets[1:]:
        differ = [k for k in same if getattr(c, k) != getattr(first, k)]
        if differ:
            raise ModelError(f"averaged_networks: the networks differ in {', '.join(differ)}")
    mean = first.mean.astype(np.float64)
    inv_std = first.inv_std.astype(np.float64)
    blocks, biases, outs = [], [], []
    for c in nets:
        # (x - m_c) s_c = ((x - m) s) (s_c / s) + (m - m_c) s_c
        scale = c.inv_std.astype(np.float64) / inv_std
        shift = (mean - c.mean.astype(np.float64)) * c.inv_std.astype(np.float64)
        W_in = c.hidden_weights.astype(np.float64)  # from the standardised input, through any projection
        if c.projection.size:
            W_in = c.projection.astype(np.float64) @ W_in
        W = scale[:, None] * W_in
        b = c.hidden_bias.astype(np.float64) + shift @ W_in
        live = np.any(W != 0, axis=0) | (b > 0)
        blocks.append(W[:, live])
        biases.append(b[live])
        outs.append(float(c.temperature) / len(nets) * c.weights.astype(np.float64)[live])
    out = FrameClassifier(**dict(first.get_params(), networks=sum(c.networks for c in nets),
                                 hidden=max(c.hidden for c in nets)))
    out.mean, out.inv_std = np.array(first.mean, np.float32), np.array(first.inv_std, np.float32)
    out.projection = np.zeros((0, 0), np.float32)
    out.landmarks = np.zeros((0, first.mean.shape[0]), np.float32)
    out.landmark_sqnorm = np.zeros(0, np.float32)
    out.hidden_weights = flush_subnormals(np.hstack(blocks).astype(np.float32))
    out.hidden_bias = flush_subnormals(np.concatenate(biases).astype(np.float32))
    out.weights = flush_subnormals(np.vstack(outs).astype(np.float32))
    out.bias = flush_subnormals((sum(float(c.temperature) * c.bias.astype(np.float64) for c in nets)
                                 / len(nets)).astype(np.float32))
    out.log_prior = np.mean([c.log_prior.astype(np.float64) for c in nets], axis=0).astype(np.float32)
    out.temperature = np.float32(1.0)
    out._fitted = True
    return out


# ---------------------------------------------------------------- training helpers
def _smooth_block(part: np.ndarray, radius: int, offset: int, T: int) -> np.ndarray:
    """:func:`_smooth` of rows ``offset .. offset + len(part) - 1`` of a (T, C) array, from those
    rows alone (the window clipped at the recording's edges, not the block's; rows within
    ``radius`` of the block's own edges are wrong and dropped by the caller)."""
    n = part.shape[0]
    cs = np.vstack([np.zeros((1, part.shape[1]), np.float64), np.cumsum(part, axis=0, dtype=np.float64)])
    t = np.arange(n) + offset
    lo = np.maximum(t - radius, 0)
    hi = np.minimum(t + radius + 1, T)
    local_lo, local_hi = np.clip(lo - offset, 0, n), np.clip(hi - offset, 0, n)
    return ((cs[local_hi] - cs[local_lo]) / (hi - lo)[:, None]).astype(part.dtype)


def _smooth_by_utterance(dec: np.ndarray, utt: np.ndarray, radius: int) -> np.ndarray:
    if radius <= 0:
        return dec
    out = np.empty_like(dec)
    for u in np.unique(utt):
        i = np.flatnonzero(utt == u)
        out[i] = _smooth(dec[i], radius)
    return out


def _kmeans(P: np.ndarray, m: int, iters: int, rng: np.random.Generator) -> np.ndarray:
    """(m, d) centres of the rows of P: random rows refined by ``iters`` Lloyd iterations."""
    import scipy.sparse  # training only: kept out of the aligner's start-up

    P = P.astype(np.float32, copy=False)
    L = P[rng.choice(len(P), m, replace=False)].copy()
    n = len(P)
    for _ in range(iters):
        assign = np.empty(n, np.int64)
        sq = (L * L).sum(axis=1)
        for s in range(0, n, 8192):
            assign[s:s + 8192] = (sq - 2 * (P[s:s + 8192] @ L.T)).argmin(axis=1)
        members = scipy.sparse.csr_matrix((np.ones(n, np.float32), (assign, np.arange(n))), shape=(m, n))
        counts = np.bincount(assign, minlength=m)
        sums = np.asarray(members @ P)
        used = counts > 0
        L[used] = sums[used] / counts[used, None]
    return L


def _rbf(A: np.ndarray, B: np.ndarray, g: float) -> np.ndarray:
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * (A @ B.T)
    return np.exp(-g * np.maximum(sq, 0))


def landmark_eigenbasis(L: np.ndarray, g: float) -> tuple[np.ndarray, np.ndarray]:
    """``(U (m, r), w (r,))``: the eigenvectors and eigenvalues of the landmarks' float64 RBF
    kernel matrix ``K_LL = exp(-g ||l_i - l_j||^2)`` (m, m) that the Nystroem map keeps (those
    above 1e-6 times the largest): ``K_LL^{-1/2} = U / sqrt(w)`` on their span."""
    K = _rbf(L.astype(np.float64), L.astype(np.float64), g)
    w, U = np.linalg.eigh(K)
    keep = w > 1e-6 * w.max()
    return U[:, keep], w[keep]


def _nystroem_features(P: np.ndarray, L: np.ndarray, g: float) -> tuple[np.ndarray, np.ndarray]:
    """Nystroem features ``Z = k(P, L) M`` (float32) and ``M = K_LL^{-1/2}`` (rank-truncated)."""
    U, w = landmark_eigenbasis(L, g)
    M = (U / np.sqrt(w)).astype(np.float32)
    Z = np.empty((len(P), M.shape[1]), np.float32)
    for s in range(0, len(P), 8192):
        Z[s:s + 8192] = _rbf(P[s:s + 8192], L, g).astype(np.float32) @ M
    return Z, M


def _fit_ovr_sqhinge(Z: np.ndarray, y: np.ndarray, n_classes: int, C: float, max_iter: int,
                     W0: np.ndarray | None = None, b0: np.ndarray | None = None):
    """One-vs-rest L2-regularised squared-hinge SVMs, all classes at once, by L-BFGS.

    Minimises ``sum_c [ ||w_c||^2 / 2 + C sum_i max(0, 1 - y_ic (z_i . w_c + b_c))^2 ]``
    with ``y_ic = +1`` if ``y_i == c`` else ``-1`` (biases not regularised).
    Returns ``W`` (r, n_classes) and ``b`` (n_classes,), float32.
    """
    n, r = Z.shape
    Ys = -np.ones((n, n_classes), np.float32)
    Ys[np.arange(n), y] = 1.0
    nw = r * n_classes

    def objective(theta):
        W = theta[:nw].reshape(r, n_classes).astype(np.float32)
        b = theta[nw:].astype(np.float32)
        slack = np.maximum(1.0 - Ys * (Z @ W + b), 0.0)
        loss = 0.5 * float(np.dot(theta[:nw], theta[:nw])) + C * float(
            np.square(slack, dtype=np.float64).sum())
        dS = (-2.0 * C) * slack * Ys
        gW = (Z.T @ dS).astype(np.float64).ravel() + theta[:nw]
        gb = dS.sum(axis=0, dtype=np.float64)
        return loss, np.concatenate([gW, gb])

    theta0 = np.zeros(nw + n_classes)
    if W0 is not None:
        theta0[:nw] = W0.ravel()
        theta0[nw:] = b0
    import scipy.optimize  # training only

    res = scipy.optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B",
                                  options=dict(maxiter=max_iter))
    return (res.x[:nw].reshape(r, n_classes).astype(np.float32),
            res.x[nw:].astype(np.float32))


def _relu(P: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, h) float32 ReLU units ``max(0, P W + b)`` of (n, k) float32 rows ``P``."""
    H = P @ W
    H += b
    return np.maximum(H, np.float32(0.0), out=H)


def _fit_relu_network(P: np.ndarray, y: np.ndarray, train: np.ndarray | None, n_classes: int, hidden: int,
                      alpha: float, epochs: int, seed: int) -> tuple[tuple, int]:
    """``((W_h (k, hidden), b_h (hidden,), W (hidden, n_classes), b (n_classes,)), epochs run)``,
    all float32: a one-hidden-layer ReLU network with a softmax output trained on the (n, k)
    rows ``P`` and labels ``y`` (n,) by scikit-learn's ``MLPClassifier`` (Adam, L2 penalty
    ``alpha``, one pass over the training rows per epoch). With ``train`` (n,) bool, the rows
    outside it are held out: training stops once their log loss has not fallen for
    :data:`NETWORK_PATIENCE` epochs, and the layers of the best epoch are kept; without it,
    ``epochs`` passes over every row."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier  # training only

    net = MLPClassifier(hidden_layer_sizes=(hidden,), alpha=alpha, batch_size=256, learning_rate_init=1e-3,
                        random_state=seed, max_iter=1, shuffle=True)
    classes = np.arange(n_classes)
    if train is None:
        Ptr, ytr, Pva, yva = P, y, None, None
    else:
        Ptr, ytr, Pva, yva = P[train], y[train], P[~train], y[~train]

    def layers():
        return tuple(np.ascontiguousarray(a, dtype=np.float32)
                     for a in (net.coefs_[0], net.intercepts_[0], net.coefs_[1], net.intercepts_[1]))

    best, best_loss, stale, run = None, np.inf, 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for run in range(1, epochs + 1):
            net.partial_fit(Ptr, ytr, classes=classes)
            _flush_network_state(net)
            if Pva is None:
                continue
            proba = net.predict_proba(Pva)
            loss = -float(np.mean(np.log(np.maximum(proba[np.arange(len(yva)), yva], 1e-12))))
            if loss < best_loss - 1e-4:
                best_loss, stale, best = loss, 0, layers()
            else:
                stale += 1
                if stale >= NETWORK_PATIENCE:
                    break
    return (best if best is not None else layers()), run


def _flush_network_state(net) -> None:
    """:func:`flush_subnormals` on a scikit-learn network's layers and its Adam moments, in
    place, between epochs: dead units' weights and their moments decay into the subnormal range
    under the L2 penalty and would slow every later epoch several times over."""
    optimizer = getattr(net, "_optimizer", None)
    for a in (*net.coefs_, *net.intercepts_, *getattr(optimizer, "ms", ()), *getattr(optimizer, "vs", ())):
        flush_subnormals(a)


def _fit_temperature(dec: np.ndarray, y: np.ndarray) -> float:
    """Scale ``a`` minimising the mean negative log-likelihood of ``softmax(a * dec)``."""
    dec = dec.astype(np.float64)
    idx = np.arange(len(y))

    def nll(log_a):
        return -_log_softmax(np.exp(log_a) * dec)[idx, y].mean()

    import scipy.optimize  # training only

    res = scipy.optimize.minimize_scalar(nll, bounds=(-3.0, 5.0), method="bounded")
    return float(np.exp(res.x))
