"""Per-boundary confidence and a transcript-mismatch check for decoded alignments.

Boundary confidence
    For every phone start of a decoded alignment, the estimated probability that it lies within
    :data:`TOLERANCE_S` (20 ms) of where an annotator would put it. The first phone starts at 0 s
    by construction (as the annotator's does) and gets probability 1; every later start is scored
    from the evidence columns of :func:`~aligner.alignment.review.evidence.boundary_evidence`.

    :class:`BoundaryConfidence` maps the evidence to probabilities: standardised columns, a
    small L2-penalised network (or a logistic regression; optionally one per error threshold, e.g. 10, 20, 30
    and 50 ms, their logits averaged), then a calibration map fitted on out-of-fold predictions
    of the training material (speaker groups): Platt scaling of the logit (2 numbers) or isotonic
    regression (a monotone piecewise-linear map stored as its knots). Everything it learns is a
    plain float array (:meth:`BoundaryConfidence.to_arrays`), checked on load
    (:meth:`BoundaryConfidence.from_arrays`).

Transcript mismatch
    :func:`utterance_evidence` summarises a decoded utterance: the mean per-frame agreement of
    the decoded phones (a log likelihood ratio against the best class of each frame, <= 0), the
    mean boundary confidence, the share of boundaries below 0.5 confidence, the mean absolute
    duration z-score, and three local statistics of the agreement that a mismatch confined to
    one word still moves (its mean over all frames barely does): the lowest mean of the
    per-phone mean agreements of :data:`RUN_PHONES` consecutive phones, the mean of the
    :data:`WORST_PHONES` lowest per-phone mean agreements, and the lowest mean agreement over
    :data:`WINDOW_FRAMES` consecutive frames. A transcript that does not belong to the audio
    forces phones onto frames the classifier reads as something else, so the agreement drops.
    :class:`UtteranceCheck` turns them into one score (a logistic regression fitted on correct
    and deliberately mismatched transcripts of training utterances) and flags an utterance whose
    score falls below a threshold set from the training material alone: by default the
    ``false_flag_rate`` (1 %) lower tail of a normal distribution fitted (mean, standard
    deviation) to the out-of-fold (speaker-group) logits of the correct training utterances.
    The fitted tail is steadier than their empirical 1 % quantile, which rests on the one or two
    lowest of some hundred logits (rule ``"quantile"``, the first checks' rule, is kept).

Typical use (a fitted ``BoundaryConfidence`` ``conf`` and ``AlignmentModel`` ``model``)::

    x = model.make_input(frames, classes, scores, symbols=symbols)
    y = model.align_frames(x)
    starts_s = model.start_times(x, y, scores, frames, duration_s)
    p = boundary_confidences(model, frames, scores, classes, y, starts_s, confidence=conf,
                             symbols=symbols)          # (K,) probabilities, p[0] = 1
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from aligner.alignment.decoding.refinement import _BROAD_OF_CLASS, N_BROAD
from aligner.alignment.review.evidence import (MAX_MOVE, N_EVIDENCE, N_NUMERIC, NEIGHBOUR_MOVES,
                                               boundary_evidence)
from aligner.errors import ModelError

#: a boundary counts as correct within this distance of the annotator's, seconds
TOLERANCE_S = 0.020
#: columns of the design matrix of :class:`BoundaryConfidence`: the numeric evidence, the
#: smoothed error logits of the broad-class pair, of the left class and of the right class, and
#: one-hot codes of the left and the right broad class
N_DESIGN = N_NUMERIC + 3 + 2 * N_BROAD
#: version 2: one network per error threshold (``thresholds_ms``), weights stacked per threshold
_FORMAT_VERSION = 2
_CALIBRATIONS = ("none", "platt", "isotonic")


# --------------------------------------------------------------------------------------
# the calibrated classifier
# --------------------------------------------------------------------------------------


def _logit(p):
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, np.float64)))


class BoundaryConfidence:
    """Probability that a decoded boundary lies within :data:`TOLERANCE_S` of the annotator's.

    The design matrix (:data:`N_DESIGN` columns) holds the numeric evidence, the logits of the
    smoothed training rate of correct boundaries of the boundary's broad-class pair, of its left
    class and of its right class, and one-hot codes of the left and right broad class; it is
    standardised and fed to a network with one layer of ``hidden`` ReLU units and a logistic
    output (L2 penalty ``alpha``; scikit-learn's ``MLPClassifier``, stored as plain weight
    arrays), or to a logistic regression with ``hidden=0``. A calibration map of its logit is
    then fitted on out-of-fold predictions over the ``groups`` given to :meth:`fit`.

    With several ``thresholds_ms`` one such model is fitted per threshold (target: the boundary's
    error is at most that many ms; :meth:`fit` then needs the errors) and the raw logit is their
    mean: the neighbouring thresholds (10, 30, 50 ms) carry ranking information the 20 ms label
    alone throws away (an error of 19 ms and one of 21 ms are labelled apart, one of 21 ms and
    one of 80 ms alike). The calibration map always targets :data:`TOLERANCE_S`.

    Parameters
    ----------
    hidden : ReLU units; 0 = logistic regression.
    alpha : L2 penalty (the network's ``alpha``; for the logistic regression ``C = 1 / alpha``).
    calibration : ``"platt"`` (logistic map of the logit, 2 numbers), ``"isotonic"`` (monotone
        piecewise-linear map, stored as its knots) or ``"none"``.
    prior : pseudo-count of the smoothing of each pair's and class's rate towards the overall rate.
    cal_folds : group folds of the out-of-fold predictions for the calibration map.
    seed : seeds the network's initialisation.
    thresholds_ms : error thresholds (ms) of the averaged models; ``(20,)`` = the tolerance only.
    """

    def __init__(self, hidden: int = 16, alpha: float = 10.0, calibration: str = "platt",
                 prior: float = 20.0, cal_folds: int = 3, seed: int = 0, thresholds_ms=(1000.0 * TOLERANCE_S,)):
        if calibration not in _CALIBRATIONS:
            raise ValueError(f"calibration must be one of {_CALIBRATIONS}, got {calibration!r}")
        th = np.atleast_1d(np.asarray(thresholds_ms, np.float64))
        if th.ndim != 1 or len(th) == 0 or not np.all(np.isfinite(th)) or np.any(th <= 0):
            raise ValueError(f"thresholds_ms must be positive numbers, got {thresholds_ms!r}")
        self.thresholds_ms = tuple(float(t) for t in th)
        self.hidden = int(hidden)
        self.alpha = float(alpha)
        self.calibration = calibration
        self.prior = float(prior)
        self.cal_folds = int(cal_folds)
        self.seed = int(seed)
        self._params = None
        #: (C,) broad-class index of every class of the model's inventory (the 39 by default;
        #: :meth:`from_arrays` takes the model's)
        self.broad_of_class: np.ndarray = _BROAD_OF_CLASS

    # -- design ----------------------------------------------------------------------------
    @staticmethod
    def _split(evidence: np.ndarray, broad_of_class: np.ndarray | None = None) -> tuple:
        E = np.asarray(evidence, np.float64)
        if E.ndim != 2 or E.shape[1] != N_EVIDENCE:
            raise ValueError(f"evidence must be (n, {N_EVIDENCE}), got shape {E.shape}")
        broad = _BROAD_OF_CLASS if broad_of_class is None else broad_of_class
        cls = E[:, N_NUMERIC:]
        if np.any(cls != np.round(cls)) or np.any(cls < 0) or np.any(cls >= len(broad)):
            raise ValueError("class columns of the evidence must hold class indices")
        left, right = cls[:, 0].astype(np.int64), cls[:, 1].astype(np.int64)
        return E[:, :N_NUMERIC], left, right, broad[left] * N_BROAD + broad[right]

    @staticmethod
    def _design(evidence, tables, broad_of_class: np.ndarray | None = None) -> np.ndarray:
        numeric, left, right, pair = BoundaryConfidence._split(evidence, broad_of_class)
        n = len(numeric)
        X = np.zeros((n, N_DESIGN))
        X[:, :N_NUMERIC] = numeric
        X[:, N_NUMERIC] = tables["pair_logit"][pair]
        X[:, N_NUMERIC + 1] = tables["left_logit"][left]
        X[:, N_NUMERIC + 2] = tables["right_logit"][right]
        X[np.arange(n), N_NUMERIC + 3 + pair // N_BROAD] = 1.0
        X[np.arange(n), N_NUMERIC + 3 + N_BROAD + pair % N_BROAD] = 1.0
        return X

    def _rate_logits(self, index, correct, size):
        count = np.bincount(index, minlength=size).astype(np.float64)
        hits = np.bincount(index, weights=correct.astype(np.float64), minlength=size)
        return _logit((hits + self.prior * correct.mean()) / (count + self.prior))

    def _fit_raw(self, E: np.ndarray, c: np.ndarray, labels: np.ndarray) -> dict:
        """The uncalibrated model's arrays, fitted on evidence E (n, N_EVIDENCE), the tolerance
        labels c (n,) (the class-rate tables) and one label column per threshold (n, M)."""
        _, left, right, pair = self._split(E, self.broad_of_class)
        n_classes = len(self.broad_of_class)
        p = {"pair_logit": self._rate_logits(pair, c, N_BROAD * N_BROAD),
             "left_logit": self._rate_logits(left, c, n_classes),
             "right_logit": self._rate_logits(right, c, n_classes)}
        X = self._design(E, p, self.broad_of_class)
        p["mean"] = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale < 1e-9] = 1.0
        p["scale"] = scale
        Z = (X - p["mean"]) / scale
        M, h = labels.shape[1], self.hidden
        p["hidden_weights"], p["hidden_bias"] = np.zeros((M, N_DESIGN, h)), np.zeros((M, h))
        p["output_weights"], p["output_bias"] = np.zeros((M, h if h else N_DESIGN)), np.zeros(M)
        for i in range(M):
            target = labels[:, i].astype(int)
            if target.min() == target.max():
                raise ValueError(f"no boundary on one side of the {self.thresholds_ms[i]:g} ms threshold")
            if h == 0:
                from sklearn.linear_model import LogisticRegression

                lr = LogisticRegression(C=1.0 / self.alpha, max_iter=3000).fit(Z, target)
                p["output_weights"][i] = lr.coef_[0]
                p["output_bias"][i] = lr.intercept_[0]
                continue
            import warnings

            from sklearn.exceptions import ConvergenceWarning
            from sklearn.neural_network import MLPClassifier

            net = MLPClassifier(hidden_layer_sizes=(h,), alpha=self.alpha, max_iter=500, random_state=self.seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                net.fit(Z, target)
            p["hidden_weights"][i] = net.coefs_[0]
            p["hidden_bias"][i] = net.intercepts_[0]
            p["output_weights"][i] = net.coefs_[1][:, 0]
            p["output_bias"][i] = net.intercepts_[1][0]
        return p

    @staticmethod
    def _raw_logit(E: np.ndarray, p: dict, broad_of_class: np.ndarray | None = None) -> np.ndarray:
        """Mean over the thresholds' models of their logits."""
        Z = (BoundaryConfidence._design(E, p, broad_of_class) - p["mean"]) / p["scale"]
        total = np.zeros(len(Z))
        M = p["output_bias"].shape[0]
        for i in range(M):
            H = np.maximum(Z @ p["hidden_weights"][i] + p["hidden_bias"][i], 0.0) if p["hidden_weights"].shape[2] \
                else Z
            total += H @ p["output_weights"][i] + p["output_bias"][i]
        return total / M

    def _labels(self, c: np.ndarray, errors_ms) -> np.ndarray:
        """(n, M) labels: error <= each threshold (the tolerance labels ``c`` for 20 ms without errors)."""
        tol_ms = 1000.0 * TOLERANCE_S
        if errors_ms is None:
            if any(abs(t - tol_ms) > 1e-9 for t in self.thresholds_ms):
                raise ValueError("thresholds other than the tolerance need the boundaries' errors (errors_ms)")
            return np.repeat(c[:, None], len(self.thresholds_ms), axis=1)
        e = np.asarray(errors_ms, np.float64)
        if e.shape != c.shape or not np.all(np.isfinite(e)):
            raise ValueError(f"errors_ms must hold {len(c)} finite errors")
        return e[:, None] <= np.asarray(self.thresholds_ms)[None, :] + 1e-6

    def fit(self, evidence, correct, groups=None, errors_ms=None) -> "BoundaryConfidence":
        """Fit on boundary evidence (n, :data:`N_EVIDENCE`) (or a list of per-utterance blocks)
        and whether each boundary was within tolerance (n,) bool; ``groups`` (n,) (e.g. the
        speaker of each boundary) split the out-of-fold predictions the calibration map is
        fitted on (None: boundaries are dealt round robin); ``errors_ms`` (n,) the boundaries'
        absolute errors, needed for ``thresholds_ms`` other than the tolerance."""
        E = np.vstack(evidence) if isinstance(evidence, (list, tuple)) else np.asarray(evidence, np.float64)
        c = (np.concatenate(correct) if isinstance(correct, (list, tuple)) else np.asarray(correct)).astype(bool)
        if isinstance(errors_ms, (list, tuple)):
            errors_ms = np.concatenate(errors_ms)
        if E.ndim != 2 or E.shape[0] != c.shape[0] or E.shape[0] == 0:
            raise ValueError(f"evidence ({E.shape}) and labels ({c.shape}) must match and be non-empty")
        if c.all() or not c.any():
            raise ValueError("need both correct and incorrect boundaries to fit a confidence model")
        if not np.all(np.isfinite(E)):
            raise ValueError("boundary evidence holds NaN or infinite values")
        labels = self._labels(c, errors_ms)
        params = self._fit_raw(E, c, labels)
        params["platt"] = np.array([1.0, 0.0])
        params["cal_x"], params["cal_y"] = np.zeros(0), np.zeros(0)
        if self.calibration != "none":
            groups = np.arange(len(c)) if groups is None else np.asarray(groups)
            names = np.unique(groups)
            n_folds = min(max(self.cal_folds, 2), len(names))
            fold_of = {g: i % n_folds for i, g in enumerate(names)}
            fold = np.array([fold_of[g] for g in groups])
            oof = np.zeros(len(c))
            for f in range(n_folds):
                tr, te = fold != f, fold == f
                if c[tr].all() or not c[tr].any():
                    raise ValueError("a calibration fold holds one kind of boundary only; give more groups")
                oof[te] = self._raw_logit(E[te], self._fit_raw(E[tr], c[tr], labels[tr]), self.broad_of_class)
            if self.calibration == "platt":
                from sklearn.linear_model import LogisticRegression

                lr = LogisticRegression(C=1e6, max_iter=1000).fit(oof[:, None], c.astype(int))
                params["platt"] = np.array([float(lr.coef_[0, 0]), float(lr.intercept_[0])])
            else:
                from sklearn.isotonic import IsotonicRegression

                iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(oof, c.astype(float))
                params["cal_x"] = np.asarray(iso.X_thresholds_, np.float64)
                params["cal_y"] = np.asarray(iso.y_thresholds_, np.float64)
        self._params = params
        return self

    def decision_function(self, evidence: np.ndarray) -> np.ndarray:
        """The uncalibrated logit (n,) of evidence (n, :data:`N_EVIDENCE`)."""
        if self._params is None:
            raise ModelError("the boundary confidence model is not fitted")
        return self._raw_logit(np.asarray(evidence, np.float64), self._params, self.broad_of_class)

    def predict_proba(self, evidence: np.ndarray) -> np.ndarray:
        """P(within tolerance) (n,) of boundaries with evidence (n, :data:`N_EVIDENCE`);
        non-decreasing in :meth:`decision_function`."""
        z = self.decision_function(evidence)
        if self.calibration == "platt":
            a, b = self._params["platt"]
            return _sigmoid(a * z + b)
        if self.calibration == "isotonic":
            return np.interp(z, self._params["cal_x"], self._params["cal_y"])
        return _sigmoid(z)

    # -- persistence -----------------------------------------------------------------------
    _ARRAYS = ("pair_logit", "left_logit", "right_logit", "mean", "scale", "hidden_weights", "hidden_bias",
               "output_weights", "output_bias", "platt", "cal_x", "cal_y")

    def to_arrays(self) -> dict:
        """Every parameter as a plain float64 (or int64) array: ``np.savez`` them, read them back
        with ``np.load(allow_pickle=False)`` and :meth:`from_arrays`."""
        if self._params is None:
            raise ModelError("the boundary confidence model is not fitted")
        out = {k: np.asarray(self._params[k], np.float64) for k in self._ARRAYS}
        out["format_version"] = np.array(_FORMAT_VERSION, np.int64)
        out["thresholds_ms"] = np.asarray(self.thresholds_ms, np.float64)
        out["settings"] = np.array([self.hidden, self.alpha, _CALIBRATIONS.index(self.calibration), self.prior,
                                    self.cal_folds, self.seed, MAX_MOVE, NEIGHBOUR_MOVES, TOLERANCE_S,
                                    N_EVIDENCE], np.float64)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray],
                    broad_of_class: np.ndarray | None = None) -> "BoundaryConfidence":
        """Rebuild from :meth:`to_arrays`; raises :class:`ModelError` (one line) on a missing,
        mis-shaped, non-finite or inconsistent array, or one made for other evidence.
        ``broad_of_class``: (C,) the broad-class index of each class of the model's inventory
        (None: the 39 classes')."""
        broad = _BROAD_OF_CLASS if broad_of_class is None else np.asarray(broad_of_class, np.int64)
        try:
            version = int(np.asarray(arrays["format_version"]))
            if version != _FORMAT_VERSION:
                raise ValueError(f"format {version}, this aligner reads format {_FORMAT_VERSION} only; refit it with "
                                 "python -m benchmarks.alignment.eval_confidence --save DIR")
            thresholds = np.asarray(arrays["thresholds_ms"], np.float64)
            if thresholds.ndim != 1 or len(thresholds) == 0 or not np.all(np.isfinite(thresholds)) \
                    or np.any(thresholds <= 0):
                raise ValueError("thresholds_ms must be 1-d positive numbers")
            settings = np.asarray(arrays["settings"], np.float64)
            if settings.shape != (10,) or not np.all(np.isfinite(settings)):
                raise ValueError("settings must be 10 finite numbers")
            hidden, alpha, cal, prior, folds, seed, max_move, neighbours, tol, n_evidence = settings
            if (int(max_move), int(neighbours), int(n_evidence)) != (MAX_MOVE, NEIGHBOUR_MOVES, N_EVIDENCE) \
                    or abs(tol - TOLERANCE_S) > 1e-12:
                raise ValueError(f"made for other evidence ({int(n_evidence)} columns, moves of {int(max_move)} "
                                 f"frames, {tol * 1000:g} ms)")
            if hidden < 0 or hidden != int(hidden) or alpha <= 0 or prior < 0 \
                    or cal != int(cal) or not 0 <= cal < len(_CALIBRATIONS):
                raise ValueError("invalid settings")
            conf = cls(int(hidden), alpha, _CALIBRATIONS[int(cal)], prior, int(folds), int(seed), thresholds)
            p = {k: np.asarray(arrays[k], np.float64) for k in cls._ARRAYS}
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"boundary confidence arrays unusable ({exc})") from None
        h, M = conf.hidden, len(conf.thresholds_ms)
        conf.broad_of_class = broad
        n_classes = len(broad)
        expect = {"pair_logit": (N_BROAD * N_BROAD,), "left_logit": (n_classes,), "right_logit": (n_classes,),
                  "mean": (N_DESIGN,), "scale": (N_DESIGN,), "hidden_weights": (M, N_DESIGN, h),
                  "hidden_bias": (M, h), "output_weights": (M, h) if h else (M, N_DESIGN), "output_bias": (M,),
                  "platt": (2,)}
        problems = [f"{k} has shape {p[k].shape}, expected {v}" for k, v in expect.items() if p[k].shape != v]
        if p["cal_x"].ndim != 1 or p["cal_x"].shape != p["cal_y"].shape:
            problems.append("cal_x and cal_y must be 1-d of one length")
        if not problems:
            if not all(np.all(np.isfinite(v)) for v in p.values()):
                problems.append("non-finite values")
            elif not np.all(p["scale"] > 0):
                problems.append("scale must be positive")
            elif conf.calibration == "platt" and not p["platt"][0] > 0:
                problems.append("the Platt map must increase (positive slope)")
            elif conf.calibration == "isotonic" and (
                    len(p["cal_x"]) < 2 or np.any(np.diff(p["cal_x"]) < 0) or np.any(np.diff(p["cal_y"]) < 0)
                    or p["cal_y"].min() < 0 or p["cal_y"].max() > 1):
                problems.append("the isotonic map must have >= 2 ascending knots with probabilities "
                                "non-decreasing in [0, 1]")
        if problems:
            raise ModelError(f"boundary confidence arrays unusable ({'; '.join(problems)})")
        conf._params = p
        return conf


def boundary_confidences(model, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, y: np.ndarray,
                         starts_s: np.ndarray | None = None, confidence: BoundaryConfidence | None = None,
                         symbols=None) -> np.ndarray:
    """P(within 20 ms of the annotator's) of every phone start: (K,), the first one 1.0.

    Arguments as for :func:`boundary_evidence`; ``confidence`` defaults to ``model.confidence``
    (a fitted :class:`BoundaryConfidence`).
    """
    confidence = confidence if confidence is not None else getattr(model, "confidence", None)
    if confidence is None:
        raise ModelError("this model has no boundary confidence model")
    E = boundary_evidence(model, frames, scores, classes, y, starts_s, symbols)
    return np.concatenate([[1.0], confidence.predict_proba(E)]) if len(E) else np.ones(1)


# --------------------------------------------------------------------------------------
# transcript mismatch
# --------------------------------------------------------------------------------------

#: columns of :func:`utterance_evidence`; checks of format 1 read the first four
UTTERANCE_EVIDENCE_NAMES = ("mean_frame_agreement", "mean_confidence", "share_below_half",
                            "mean_abs_z", "worst_run_agreement", "worst_phones_agreement",
                            "worst_window_agreement")
#: consecutive phones of the ``worst_run_agreement`` column
RUN_PHONES = 4
#: lowest per-phone agreements averaged in the ``worst_phones_agreement`` column
WORST_PHONES = 5
#: frames (0.4 s) of the ``worst_window_agreement`` column
WINDOW_FRAMES = 40
#: columns an utterance check of each format reads
_UTTERANCE_COLUMNS = {1: 4, 2: len(UTTERANCE_EVIDENCE_NAMES)}
_THRESHOLD_RULES = ("quantile", "gaussian")


def utterance_evidence(model, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, y: np.ndarray,
                       confidences: np.ndarray, symbols=None) -> np.ndarray:
    """Summary (7,) of a decoded utterance (:data:`UTTERANCE_EVIDENCE_NAMES`): mean over frames
    of the decoded phone's agreement ``A[t, p]`` (<= 0, log-likelihood ratio units per frame),
    mean boundary confidence and share of boundaries below 0.5 over phones 1 .. K-1 (1 and 0 for
    a single phone), mean absolute duration z-score of the phones, the lowest mean of the
    per-phone mean agreements of :data:`RUN_PHONES` consecutive phones, the mean of the
    :data:`WORST_PHONES` lowest per-phone mean agreements and the lowest mean agreement over
    :data:`WINDOW_FRAMES` consecutive frames (all phones or frames when there are fewer).
    ``confidences`` (K,) as returned by :func:`boundary_confidences`; other arguments as for
    :func:`boundary_evidence`.
    """
    classes = np.asarray(classes, np.int64)
    y = np.asarray(y, np.int64)
    T = len(frames)
    lengths = np.diff(np.append(y, T))
    frame_class = np.repeat(classes, lengths)
    s = np.asarray(scores)
    agree = s[np.arange(T), frame_class].astype(np.float64) - s.max(axis=1)
    mean, std, _ = model.durations.for_phones(classes, symbols)
    z = (lengths - np.maximum(mean, 1.0)) / np.maximum(std, 1.0)
    p = np.asarray(confidences, np.float64)[1:]
    cum = np.concatenate([[0.0], np.cumsum(agree)])
    phone_mean = (cum[np.append(y[1:], T)] - cum[y]) / lengths
    run = min(RUN_PHONES, len(y))
    worst_run = np.convolve(phone_mean, np.full(run, 1.0 / run), mode="valid").min()
    worst_phones = np.sort(phone_mean)[:WORST_PHONES].mean()
    w = min(WINDOW_FRAMES, T)
    worst_window = ((cum[w:] - cum[:-w]) / w).min()
    return np.array([agree.mean(), p.mean() if len(p) else 1.0, np.mean(p < 0.5) if len(p) else 0.0,
                     np.mean(np.abs(z)), worst_run, worst_phones, worst_window])


#: a recording checked in stretches (:func:`recording_match`) has the match logit of this quantile of theirs
CHECK_BLOCK_QUANTILE = 0.25


def recording_match(probabilities) -> float:
    """P(transcript matches) of a recording checked in stretches of about an utterance's size, from
    theirs (n,): the :data:`CHECK_BLOCK_QUANTILE` quantile of their logits, so that a long recording
    is not flagged by its single worst stretch (the check's evidence holds worst runs, which fall with
    the length) while a transcript wrong over a quarter of its stretches or more still is."""
    p = np.clip(np.asarray(probabilities, np.float64), 1e-300, 1.0 - 1e-16)
    if p.size == 1:
        return float(p[0])
    logit = float(np.quantile(np.log(p) - np.log1p(-p), CHECK_BLOCK_QUANTILE))
    return float(_sigmoid(np.array([logit]))[0])


class UtteranceCheck:
    """Flags an utterance whose transcript does not match its audio.

    ``score = sigmoid(coef . standardised evidence + intercept)`` (:func:`utterance_evidence`),
    a logistic regression of P(transcript matches) fitted on correct and mismatched training
    utterances. An utterance is flagged when its logit is below ``threshold_logit``, set from the
    correct training utterances' out-of-fold logits (each predicted by a regression fitted
    without its group, e.g. its speaker): a rule fixed in advance that sees the training
    material only. ``rule="gaussian"`` (default): ``mean - z sd`` of those logits, ``z`` the
    standard normal's upper ``false_flag_rate`` quantile (the tail of a normal fitted to them);
    ``rule="quantile"``: their empirical ``false_flag_rate`` quantile.

    Fitted on evidence of 4 columns (the first four of :data:`UTTERANCE_EVIDENCE_NAMES`, format
    1) or of all 7 (format 2); :meth:`logit` reads the columns its format uses, so checks saved
    before the last three columns existed still load and score as they did.
    """

    def __init__(self, C: float = 1.0, false_flag_rate: float = 0.01, rule: str = "gaussian"):
        if not 0.0 < false_flag_rate < 1.0:
            raise ValueError(f"false_flag_rate must lie in (0, 1), got {false_flag_rate}")
        if rule not in _THRESHOLD_RULES:
            raise ValueError(f"rule must be one of {_THRESHOLD_RULES}, got {rule!r}")
        self.C = float(C)
        self.false_flag_rate = float(false_flag_rate)
        self.rule = rule
        self.mean = self.scale = self.coef = None
        self.intercept = 0.0
        self.threshold_logit = 0.0

    @property
    def n_columns(self) -> int:
        """Evidence columns the fitted check reads (4 or 7)."""
        if self.coef is None:
            raise ModelError("the utterance check is not fitted")
        return len(self.coef)

    @staticmethod
    def _regression(X, c, C):
        from sklearn.linear_model import LogisticRegression

        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale < 1e-9] = 1.0
        lr = LogisticRegression(C=C, max_iter=2000).fit((X - mean) / scale, c)
        return mean, scale, lr.coef_[0].astype(np.float64), float(lr.intercept_[0])

    def _threshold(self, oof: np.ndarray) -> float:
        if self.rule == "quantile":
            return float(np.quantile(oof, self.false_flag_rate))
        from scipy.stats import norm

        sd = float(np.std(oof, ddof=1)) if len(oof) > 1 else 0.0
        return float(np.mean(oof) - norm.isf(self.false_flag_rate) * sd)

    def fit(self, evidence_ok: np.ndarray, evidence_bad: np.ndarray, groups_ok=None, groups_bad=None,
            n_folds: int = 5, threshold_from=None) -> "UtteranceCheck":
        """``evidence_ok`` (n, 7) (or (n, 4), format 1) of correctly transcribed utterances,
        ``evidence_bad`` (m, same) of mismatched ones; ``groups_ok``/``groups_bad`` (e.g.
        speakers) split the out-of-fold logits the threshold is set from (None: utterances dealt
        round robin into ``n_folds``). ``threshold_from``: (n,) bool, the correct utterances
        whose out-of-fold logits set the threshold (None: all of them), e.g. those given as words."""
        ok = np.asarray(evidence_ok, np.float64)
        bad = np.asarray(evidence_bad, np.float64)
        if len(ok) < 2 or len(bad) < 2:
            raise ValueError("need at least 2 correct and 2 mismatched utterances")
        if ok.ndim != 2 or bad.ndim != 2 or ok.shape[1] != bad.shape[1] \
                or ok.shape[1] not in _UTTERANCE_COLUMNS.values():
            raise ValueError(f"utterance evidence must have {sorted(set(_UTTERANCE_COLUMNS.values()))} columns, "
                             f"got shapes {ok.shape} and {bad.shape}")
        X = np.vstack([ok, bad])
        c = np.r_[np.ones(len(ok)), np.zeros(len(bad))]
        self.mean, self.scale, self.coef, self.intercept = self._regression(X, c, self.C)
        g_ok = np.arange(len(ok)) if groups_ok is None else np.asarray(groups_ok)
        g_bad = np.arange(len(bad)) if groups_bad is None else np.asarray(groups_bad)
        g = np.r_[g_ok, g_bad]
        names = list(dict.fromkeys(g_ok.tolist()))
        k = min(max(n_folds, 2), len(names))
        fold_of = {name: i % k for i, name in enumerate(names)}
        fold = np.array([fold_of.get(v, -1) for v in g.tolist()])
        sets = np.r_[np.ones(len(ok), bool) if threshold_from is None else np.asarray(threshold_from, bool),
                     np.zeros(len(bad), bool)]
        if sets.shape != c.shape or not sets.any():
            raise ValueError("threshold_from must mark at least one of the correct utterances")
        oof = []
        for f in range(k):
            tr, te = fold != f, (fold == f) & sets
            if not te.any():
                continue
            if c[tr].min() == c[tr].max():
                raise ValueError("an out-of-fold split holds one kind of utterance only; give more groups")
            mean, scale, coef, icpt = self._regression(X[tr], c[tr], self.C)
            oof.append(((X[te] - mean) / scale) @ coef + icpt)
        self.threshold_logit = self._threshold(np.concatenate(oof))
        return self

    def logit(self, evidence: np.ndarray) -> np.ndarray:
        """Match logit (n,) of utterance evidence (n, 7) (format-1 checks read its first 4
        columns and take (n, 4) too); higher = transcript more likely right."""
        if self.coef is None:
            raise ModelError("the utterance check is not fitted")
        E = np.atleast_2d(np.asarray(evidence, np.float64))
        n = len(self.coef)
        if E.shape[1] < n:
            raise ValueError(f"utterance evidence must have at least {n} columns, got {E.shape[1]}")
        return ((E[:, :n] - self.mean) / self.scale) @ self.coef + self.intercept

    def score(self, evidence: np.ndarray) -> np.ndarray:
        """P(transcript matches) (n,) by the fitted logistic regression."""
        return _sigmoid(self.logit(evidence))

    def flags_probability(self, p: float) -> bool:
        """True if an utterance scored ``p`` = P(transcript matches) (:meth:`score`) is flagged."""
        p = min(max(float(p), 1e-300), 1.0 - 1e-16)
        return bool(np.log(p) - np.log1p(-p) < self.threshold_logit)

    def flag(self, evidence: np.ndarray) -> np.ndarray:
        """True (n,) for utterances whose transcript probably does not match their audio."""
        return self.logit(evidence) < self.threshold_logit

    def to_arrays(self) -> dict:
        if self.coef is None:
            raise ModelError("the utterance check is not fitted")
        version = {v: k for k, v in _UTTERANCE_COLUMNS.items()}[len(self.coef)]
        return {"format_version": np.array(version, np.int64), "mean": self.mean, "scale": self.scale,
                "coef": self.coef, "intercept": np.float64(self.intercept),
                "threshold_logit": np.float64(self.threshold_logit),
                "settings": np.array([self.C, self.false_flag_rate, _THRESHOLD_RULES.index(self.rule)], np.float64)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "UtteranceCheck":
        """Rebuild from :meth:`to_arrays` (format 2) or from a check saved before
        ``format_version`` existed (format 1: 4 evidence columns, 1 or 2 settings, quantile
        rule); raises :class:`ModelError` (one line) on anything else."""
        try:
            version = int(np.asarray(arrays["format_version"])) if "format_version" in arrays else 1
            if version not in _UTTERANCE_COLUMNS:
                raise ValueError(f"format {version}, this aligner reads formats "
                                 f"{', '.join(map(str, sorted(_UTTERANCE_COLUMNS)))}; refit it with "
                                 "python -m benchmarks.alignment.eval_confidence --save DIR")
            settings = np.asarray(arrays["settings"], np.float64)
            if settings.shape not in ((1,), (2,), (3,)):
                raise ValueError("settings must hold 1 to 3 numbers")
            if not np.all(np.isfinite(settings)):
                raise ValueError("non-finite settings")
            rule = 0 if len(settings) < 3 else settings[2]
            if rule != int(rule) or not 0 <= rule < len(_THRESHOLD_RULES):
                raise ValueError(f"threshold rule {rule:g} unknown")
            chk = cls(float(settings[0]), float(settings[1]) if len(settings) >= 2 else 0.01,
                      _THRESHOLD_RULES[int(rule)])
            chk.mean = np.asarray(arrays["mean"], np.float64)
            chk.scale = np.asarray(arrays["scale"], np.float64)
            chk.coef = np.asarray(arrays["coef"], np.float64)
            chk.intercept = float(np.asarray(arrays["intercept"], np.float64))
            chk.threshold_logit = float(np.asarray(arrays["threshold_logit"], np.float64))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"utterance check arrays unusable ({exc})") from None
        n = _UTTERANCE_COLUMNS[version]
        if not (chk.mean.shape == chk.scale.shape == chk.coef.shape == (n,)):
            raise ModelError(f"utterance check arrays unusable (format {version}: mean, scale and coef must hold "
                             f"{n} values)")
        if not all(np.all(np.isfinite(a)) for a in (chk.mean, chk.scale, chk.coef)) \
                or not (math.isfinite(chk.intercept) and math.isfinite(chk.threshold_logit)) \
                or not np.all(chk.scale > 0):
            raise ModelError("utterance check arrays unusable (non-finite values or non-positive scale)")
        return chk
