"""The universal aligner: any language from its IPA phones, scored by phonological features.

A :class:`UniversalModel` has no fixed list of phone classes. Every phone of a transcript is read
as IPA (:func:`aligner.phones.ipa.read_ipa`: diacritics, length, tie bars and tone as features)
and described by its :func:`~aligner.phones.ipa.composition_vector` (broad class; each
phonological feature of its first and last part). From that description alone the model composes
what the 39-class English model keeps per class:

* the **frame scores**: a :class:`~aligner.features.composed_network.ComposedNetwork` maps each
  frame into the description space, and a phone's score is the inner product with its
  description, so a phone never heard in training (``ʕʷ``, ``ɓ̥``, ``t͡ɬʼ``) is scored by the
  features it shares with phones that were (a trained model's network is several scorers
  averaged, :mod:`aligner.alignment.universal_training`);
* the **durations** (:class:`FeatureDurations`): a phone seen in training keeps its own
  statistics, pulled toward those its features predict; an unseen one gets the prediction;
* the **boundary refiner** reads the broad classes (manner) of the two phones of a boundary, as
  the English model's does, with the universal model's own weights.

For one transcript, :meth:`UniversalModel.view` builds an ordinary
:class:`~aligner.alignment.model.AlignmentModel` whose classes are the transcript's distinct
phones (and silence): the 7-dim feature map, the segmental DP, the trainers and the refiner
are the English model's, unchanged. Views are cached per set of phones.

Saved as a bundle of kind ``universal-alignment`` (:mod:`aligner.io.bundles`), without pickle.
"""

from __future__ import annotations

import copy
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from aligner.alignment.decoding.boundary_evidence import BoundaryDetector, check_detector
from aligner.alignment.decoding.refinement import BoundaryRefiner
from aligner.alignment.decoding.task import FEATURE_NAMES
from aligner.alignment.model import MAX_PHONE_FRAMES, AlignmentModel, DurationStats, check_tempo_range
from aligner.errors import ModelError, TranscriptError
from aligner.features.composed_network import ComposedNetwork
from aligner.features.denoise import DenoiseSettings
from aligner.frames import FRAME_SHIFT, SAMPLE_RATE
from aligner.io.bundles import UNIVERSAL_KIND, load_bundle, save_bundle, whole_number
from aligner.phones.ipa import (BROAD_ORDER, COMPOSITION_DIMS, CODES, IpaError, Segment, broad_class,
                                composition_matrix, read_phone, read_ipa)
from aligner.phones.sets import PhoneInventory

#: the class name of silence in a view (every silence spelling maps onto it)
SILENCE_CLASS = "sil"
#: how many training tokens weigh as much as the features' prediction of a phone's duration
DURATION_PRIOR_TOKENS = 5.0
#: views kept per model (each shares the network's units; its output layer is (units, its phones))
VIEW_CACHE_SIZE = 64
#: classes a model's table keeps (:meth:`UniversalModel._class_rows`; past them it starts again)
CLASS_TABLE_SIZE = 4096
#: longest silence a view's decoder considers (frames): field recordings hold longer pauses than
#: read sentences (up to 2.4 s in the 40 languages), a word cut from a session may keep seconds of
#: room tone around it, and a recording must fit its transcript
UNIVERSAL_MAX_SILENCE_FRAMES = 3000


def _ridge(X: np.ndarray, t: np.ndarray, w: np.ndarray, alpha: float) -> np.ndarray:
    """Weighted ridge regression coefficients (D,) of ``t`` (n,) on ``X`` (n, D), weights ``w`` (n,);
    the first column (the constant) is not penalised."""
    Xw = X * w[:, None]
    penalty = alpha * np.eye(X.shape[1])
    penalty[0, 0] = 1e-6
    return np.linalg.solve(X.T @ Xw + penalty, Xw.T @ t)


def _row_products(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(n,) inner products of the rows of ``X`` (n, D) with ``w`` (D,), each summed on its own: a
    matrix-vector product may order a row's sums by its position among the others, and a phone's
    prediction must not depend on the phones predicted with it (nor a view on the views before)."""
    return (X * w).sum(axis=1)


@dataclass
class FeatureDurations:
    """Phone durations (frames) by phonological features and position.

    ``classes`` (C,) the training phones' canonical IPA (``sil`` for silence); per position (row 0:
    within the utterance; row 1: before a pause or at the end, where phones lengthen, and for
    silence the utterance's edges rather than a pause) their token ``counts``, ``mean``, ``std`` and
    ``longest`` (frames), each (2, C); ``mean_coef`` (D + 1,) a ridge regression of a phone's mean
    duration on its composition vector and the position; ``spread`` (2, 7) the typical std / mean of
    each broad class (:data:`~aligner.phones.ipa.BROAD_ORDER`) per position.
    A phone's statistics (:meth:`predict`): ``(n mean + k pred) / (n + k)`` for a training phone of
    n tokens in that position (k = :data:`DURATION_PRIOR_TOKENS`), the prediction ``pred`` for an
    unseen one; the std alike from ``spread``; the longest length the decoder tries is twice the
    longest seen (or predicted: mean + 4 std), at least 15 frames, at most :data:`MAX_PHONE_FRAMES`;
    a silence's is :data:`UNIVERSAL_MAX_SILENCE_FRAMES`.
    """

    classes: tuple
    counts: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    longest: np.ndarray
    mean_coef: np.ndarray
    spread: np.ndarray
    _index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._index = {c: i for i, c in enumerate(self.classes)}

    @classmethod
    def fit(cls, lengths_by_class: dict, alpha: float = 3.0) -> "FeatureDurations":
        """From ``{(canonical IPA, before a pause): list of lengths in frames}`` of the training tokens."""
        classes = tuple(sorted({c for c, _ in lengths_by_class}))
        if SILENCE_CLASS not in classes:
            raise ValueError("duration statistics need the training data's silences")
        C = len(classes)
        counts, mean, std, longest = (np.zeros((2, C)) for _ in range(4))
        for (c, final), v in lengths_by_class.items():
            v = np.asarray(v, float)
            j, r = classes.index(c), int(bool(final))
            counts[r, j], mean[r, j], longest[r, j] = len(v), v.mean(), v.max()
            std[r, j] = v.std() if len(v) > 1 else 0.0
        segments = [read_ipa(c) for c in classes]
        Phi = composition_matrix(segments).astype(np.float64)
        X = np.vstack([np.hstack([Phi, np.zeros((C, 1))]), np.hstack([Phi, np.ones((C, 1))])])
        seen = counts.ravel() > 0
        mean_coef = _ridge(X[seen], mean.ravel()[seen], counts.ravel()[seen], alpha)
        spread = np.full((2, len(BROAD_ORDER)), 0.4)
        broad = np.array([BROAD_ORDER.index(broad_class(s)) for s in segments])
        for r in range(2):
            for b in range(len(BROAD_ORDER)):
                rows = (broad == b) & (counts[r] > 1)
                if rows.any():
                    spread[r, b] = np.sum(counts[r, rows] * std[r, rows] / mean[r, rows]) / counts[r, rows].sum()
        return cls(classes, counts, mean, std, longest, mean_coef, spread)

    def predict(self, segments: Sequence[Segment], final: bool = False) -> tuple:
        """``(mean, std, max_frames)``, each (K,), of phones ``segments`` within an utterance or
        (``final``) before a pause (module docstring); each phone's independent of the others'
        (a view's model keeps them per class, :meth:`UniversalModel._class_rows`)."""
        r = int(bool(final))
        if not len(segments):
            return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
        Phi = composition_matrix(list(segments)).astype(np.float64)
        pred = np.maximum(_row_products(np.hstack([Phi, np.full((len(Phi), 1), float(r))]), self.mean_coef), 2.0)
        k = DURATION_PRIOR_TOKENS
        mean, std, mx = np.empty(len(segments)), np.empty(len(segments)), np.empty(len(segments), np.int64)
        for i, seg in enumerate(segments):
            b = BROAD_ORDER.index(broad_class(seg))
            pred_std = self.spread[r, b] * pred[i]
            j = self._index.get(SILENCE_CLASS if seg.silence else seg.ipa)
            cap = UNIVERSAL_MAX_SILENCE_FRAMES if seg.silence else MAX_PHONE_FRAMES
            n = 0.0 if j is None else self.counts[r, j]
            if n == 0:
                mean[i], std[i] = pred[i], pred_std
                longest = pred[i] + 4 * pred_std
            else:
                mean[i] = (n * self.mean[r, j] + k * pred[i]) / (n + k)
                std[i] = (n * self.std[r, j] + k * pred_std) / (n + k)
                longest = max(self.longest[r, j], pred[i] + 4 * pred_std)
            # a silence may last as long as any recording's pause (its duration score still weighs it)
            mx[i] = cap if seg.silence else int(min(max(2.0 * float(longest), 15.0), cap))
        return np.maximum(mean, 1.0), np.maximum(std, 1.0), mx

    def within_and_final(self, segments: Sequence[Segment]) -> tuple:
        """``((mean, std, max_frames) within an utterance, the same before a pause)`` of phones
        ``segments`` (:meth:`predict`), except that a silence takes the statistics of the training
        recordings' edge silences in both: a pause written inside a transcript lasts what the
        speaker took (seconds between the words of an elicitation session), not what a pause
        inside a read sentence takes."""
        within, final = self.predict(segments, False), self.predict(segments, True)
        silent = np.array([seg.silence for seg in segments], bool)
        return tuple(np.where(silent, f, w) for w, f in zip(within, final)), final

    def stats(self, segments: Sequence[Segment], silence_class: int) -> DurationStats:
        """The :class:`~aligner.alignment.model.DurationStats` of a view's classes ``segments``
        (:meth:`within_and_final`), silence the class ``silence_class``."""
        (mean, std, mx), (f_mean, f_std, f_mx) = self.within_and_final(segments)
        return DurationStats(mean, std, mx, final_mean=f_mean, final_std=f_std, final_max_frames=f_mx,
                             silence_class=silence_class)

    def to_arrays(self) -> dict:
        return {"counts": self.counts, "mean": self.mean, "std": self.std, "longest": self.longest,
                "mean_coef": self.mean_coef, "spread": self.spread}

    @classmethod
    def from_arrays(cls, classes: list, d: dict) -> "FeatureDurations":
        out = cls(tuple(classes), *(np.asarray(d[k], float) for k in ("counts", "mean", "std", "longest",
                                                                       "mean_coef", "spread")))
        C = len(out.classes)
        if not (out.counts.shape == out.mean.shape == out.std.shape == out.longest.shape == (2, C)
                and out.mean_coef.shape == (COMPOSITION_DIMS + 1,) and out.spread.shape == (2, len(BROAD_ORDER))):
            raise ValueError("duration statistics have the wrong shapes")
        if not all(np.all(np.isfinite(a)) for a in out.to_arrays().values()) or np.any(out.mean < 0):
            raise ValueError("duration statistics hold invalid values")
        return out


@dataclass
class PhonePrior:
    """Log frame share of each phone (for the scores' prior division): the training phones'
    own (``classes``, ``log_prior``), and a ridge regression on the composition vector
    (``coef`` (D,)) for phones never seen."""

    classes: tuple
    log_prior: np.ndarray
    coef: np.ndarray

    @classmethod
    def fit(cls, frames_by_class: dict, alpha: float = 3.0) -> "PhonePrior":
        classes = tuple(sorted(frames_by_class))
        counts = np.array([frames_by_class[c] for c in classes], float)
        log_prior = np.log((counts + 1.0) / (counts.sum() + len(counts)))
        Phi = composition_matrix([read_ipa(c) for c in classes]).astype(np.float64)
        return cls(classes, log_prior, _ridge(Phi, log_prior, np.ones(len(classes)), alpha))

    def predict(self, segments: Sequence[Segment]) -> np.ndarray:
        """(K,) float32 log prior of each of ``segments``: a training phone's own, else predicted
        from its composition vector (a view's model keeps them per class, :meth:`UniversalModel._class_rows`)."""
        index = {c: i for i, c in enumerate(self.classes)}
        pred = _row_products(composition_matrix(list(segments)).astype(np.float64), self.coef)
        out = [float(self.log_prior[index[k]]) if (k := SILENCE_CLASS if s.silence else s.ipa) in index else float(pred[i])
               for i, s in enumerate(segments)]
        return np.array(out, np.float32)


class _ClassTable:
    """What a universal model's views need of each class met so far, a row per class (by its
    canonical IPA, from which its features follow): ``broad`` class names, ``residual`` (R,) its
    training class in the network (-1 for none), ``log_prior`` (R,) float32, ``weights`` (hidden, R)
    float32 output-layer columns (room for more beyond R), ``descriptions`` (R, D) float32 composition vectors, ``spans`` (R, 4)
    float64 duration mean and std within an utterance and before a pause, ``longest`` (R, 2) int64
    max frames likewise. Rows are filled by :meth:`UniversalModel._class_rows`."""

    def __init__(self, owners: tuple, hidden: int):
        self.owners = owners
        self.row: dict = {}
        self.broad: list = []
        n = 256
        self.residual = np.empty(n, np.int64)
        self.log_prior = np.empty(n, np.float32)
        self.weights = np.empty((hidden, n), np.float32)
        self.descriptions = np.empty((n, COMPOSITION_DIMS), np.float32)
        self.spans = np.empty((n, 4))
        self.longest = np.empty((n, 2), np.int64)

    def add(self, names, broad, residual, log_prior, weights, descriptions, spans, longest) -> None:
        """Append rows for the classes ``names`` (each array's rows in the same order; ``weights``
        (hidden, k) their columns)."""
        at, k = len(self.broad), len(names)
        if at + k > len(self.residual):
            grow = max(2 * len(self.residual), at + k)
            for key in ("residual", "log_prior", "descriptions", "spans", "longest"):
                old = getattr(self, key)
                new = np.empty((grow,) + old.shape[1:], old.dtype)
                new[:at] = old[:at]
                setattr(self, key, new)
            columns = np.empty((self.weights.shape[0], grow), np.float32)
            columns[:, :at] = self.weights[:, :at]
            self.weights = columns
        self.residual[at:at + k] = residual
        self.log_prior[at:at + k] = log_prior
        self.weights[:, at:at + k] = weights
        self.descriptions[at:at + k] = descriptions
        self.spans[at:at + k] = spans
        self.longest[at:at + k] = longest
        self.broad.extend(broad)
        self.row.update((c, at + j) for j, c in enumerate(names))


@dataclass
class UniversalModel:
    """A forced aligner of any IPA phones (module docstring): the composed frame scorer, the
    durations by features, the 7 weights, the refiner; ``prior``: divide the scores by each
    phone's prior (None: plain log posteriors over the transcript's phones); ``background``:
    canonical IPA of training phones every view also scores (the softmax and the agreement's
    maximum then run over them too; empty: over the transcript's phones alone); ``duration_spread``:
    each view's duration standard deviations are the features' prediction times this (> 1: tempo
    may differ more between languages and speakers than within the training data); ``tempo_range``:
    each view decodes a second time at the recording's own tempo, clipped to this range
    (:attr:`AlignmentModel.tempo_range`); None: once; ``front_denoise``: each view suppresses the
    stationary noise of a recording whose noise floor passes its gate before scoring it
    (:attr:`AlignmentModel.front_denoise`); None: never; ``boundary_detector``: the views add its
    evidence of a boundary to every boundary's score (:mod:`aligner.alignment.decoding.boundary_evidence`)."""

    network: ComposedNetwork
    durations: FeatureDurations
    weights: np.ndarray
    refiner: BoundaryRefiner | None = None
    prior: PhonePrior | None = None
    background: tuple = ()
    min_frames: int = 1
    training: dict = field(default_factory=dict)
    duration_spread: float = 1.0
    tempo_range: tuple | None = None
    front_denoise: DenoiseSettings | None = None
    #: the views' boundary detector (:attr:`AlignmentModel.boundary_detector`); None: none
    boundary_detector: BoundaryDetector | None = None
    _views: OrderedDict = field(default_factory=OrderedDict, repr=False)

    # -- phones -----------------------------------------------------------------------------------------------
    @staticmethod
    def read_phones(symbols: Sequence[str], code: str = "ipa", source: str = "transcript") -> list[Segment]:
        """Each of ``symbols`` read in ``code`` (``ipa`` or ``xsampa``); a symbol that cannot be
        is a one-line :class:`~aligner.errors.TranscriptError` naming it, its position and ``source``."""
        out = []
        for i, s in enumerate(symbols):
            try:
                out.append(read_phone(s, code))
            except IpaError as exc:
                raise TranscriptError(f"{source}: {exc} (symbol {i + 1} of {len(symbols)})") from None
        return out

    def view(self, symbols: Sequence[str], code: str = "ipa", source: str = "transcript") -> AlignmentModel:
        """An :class:`AlignmentModel` of the phones ``symbols`` (as written, in ``code``): one class
        per distinct phone (its canonical IPA; every silence spelling is ``sil``), silence last,
        the composed classifier, durations and this model's weights and refiner. Its phone set reads
        exactly these symbols. Cached per set of symbols."""
        if code not in CODES:
            raise ValueError(f"unknown phone code {code!r}; choose from {', '.join(CODES)}")
        written = sorted({unicodedata.normalize("NFC", s.strip()) for s in symbols} | {SILENCE_CLASS})
        key = (code, tuple(written))
        cached = self._views.get(key)
        if cached is not None:
            self._views.move_to_end(key)
            return cached
        segments = self.read_phones(written, code, source)
        by_class: dict = {}
        for s, seg in zip(written, segments):
            by_class.setdefault(SILENCE_CLASS if seg.silence else seg.ipa, seg)
        names = sorted(c for c in by_class if c != SILENCE_CLASS)
        names += [c for c in self.background if c not in by_class and c != SILENCE_CLASS]
        names.append(SILENCE_CLASS)
        rows = self._class_rows(names, [by_class.get(c) or read_ipa(c) for c in names])
        table = self.__dict__["_classes"]
        inventory = PhoneInventory(names, [table.broad[r] for r in rows])
        log_prior = None if self.prior is None else table.log_prior[rows]
        residual = table.residual[rows] if self.network.class_names else None
        _, bias = self.network.output_layer(table.descriptions[rows], residual, "bias")
        classifier = self.network.classifier_of(np.take(table.weights, rows, axis=1), bias, log_prior)
        spans, longest = table.spans[rows].T.copy(), table.longest[rows].T.copy()  # a row per statistic
        durations = DurationStats(spans[0], spans[1], longest[0], final_mean=spans[2], final_std=spans[3],
                                  final_max_frames=longest[1], silence_class=len(names) - 1)
        if self.duration_spread != 1.0:
            durations.std = durations.std * self.duration_spread
            durations.final_std = durations.final_std * self.duration_spread
        phone_symbols = {s: (SILENCE_CLASS if seg.silence else seg.ipa) for s, seg in zip(written, segments)}
        refiner = copy.copy(self.refiner) if self.refiner is not None else None  # its own broad classes
        # the background phones and silence: with the transcript's phones, what a view of any one
        # transcript of these symbols scores (the agreement's maximum runs over them alone)
        background = set(self.background) | {SILENCE_CLASS}
        always = np.array([i for i, c in enumerate(names) if c in background], np.int64)
        view = AlignmentModel(classifier, durations, np.asarray(self.weights, float), self.min_frames,
                              self.training, refiner, inventory=inventory, phone_symbols=phone_symbols,
                              always_scored=always, tempo_range=self.tempo_range, pauses_unpaced=True,
                              front_denoise=self.front_denoise, boundary_detector=self.boundary_detector)
        self._views[key] = view
        while len(self._views) > VIEW_CACHE_SIZE:
            self._views.popitem(last=False)
        return view

    def _class_rows(self, names: Sequence[str], segments: Sequence[Segment]) -> np.ndarray:
        """(C,) int64 rows of the classes ``names`` (read as ``segments``) in this model's
        :class:`_ClassTable`, each class worked out once while the network, durations and prior
        stay the same: the output-layer columns of new classes from one product with the
        background phones and silence beside them, the shape of a view's own."""
        owners = (self.network, self.durations, self.prior)
        table = self.__dict__.get("_classes")
        if table is None or any(a is not b for a, b in zip(table.owners, owners)) or \
                len(table.broad) > CLASS_TABLE_SIZE:
            table = self.__dict__["_classes"] = _ClassTable(owners, self.network.hidden_weights.shape[1])
        todo = [i for i, c in enumerate(names) if c not in table.row]
        if todo:
            new = set(todo)
            fill = [i for i, c in enumerate(names) if i not in new and
                    (c == SILENCE_CLASS or c in self.background)]  # the background's, worked out again
            rows = todo + fill
            Phi = composition_matrix([segments[i] for i in rows])
            own = {c: i for i, c in enumerate(self.network.class_names)}
            residual = np.array([own.get(names[i], -1) for i in rows], np.int64)
            weights, _ = self.network.output_layer(Phi, residual if own else None, "weights")
            k = len(todo)
            todo_segments = [segments[i] for i in todo]
            log_prior = np.zeros(k, np.float32) if self.prior is None else self.prior.predict(todo_segments)
            within, final = self.durations.within_and_final(todo_segments)
            table.add([names[i] for i in todo], [broad_class(seg) for seg in todo_segments], residual[:k], log_prior,
                      weights[:, :k], Phi[:k], np.column_stack([within[0], within[1], final[0], final[1]]),
                      np.column_stack([within[2], final[2]]))
        return np.array([table.row[c] for c in names], np.int64)

    # -- persistence ----------------------------------------------------------------------------------------
    def save(self, directory) -> None:
        arrays = {"network": self.network.to_arrays(), "durations": self.durations.to_arrays()}
        if self.refiner is not None:
            arrays["refiner"] = self.refiner.to_arrays()
        if self.boundary_detector is not None:
            arrays["boundary_detector"] = self.boundary_detector.to_arrays()
        params = {"universal": {"weights": [float(v) for v in self.weights], "feature_names": list(FEATURE_NAMES),
                                "min_frames": int(self.min_frames), "duration_classes": list(self.durations.classes),
                                "background": list(self.background), "duration_spread": float(self.duration_spread),
                                "frame_shift_samples": FRAME_SHIFT,
                                "sample_rate": SAMPLE_RATE}}
        if self.prior is not None:
            arrays["prior"] = {"log_prior": self.prior.log_prior, "coef": self.prior.coef}
            params["universal"]["prior_classes"] = list(self.prior.classes)
        if self.tempo_range is not None:
            params["universal"]["tempo_range"] = [float(v) for v in self.tempo_range]
        if self.front_denoise is not None:
            params["universal"]["front_denoise"] = self.front_denoise.to_dict()
        save_bundle(directory, UNIVERSAL_KIND, arrays, params, self.training)

    @classmethod
    def load(cls, directory) -> "UniversalModel":
        arrays, params, manifest = load_bundle(directory, UNIVERSAL_KIND)
        try:
            p = params["universal"]
            weights = np.asarray(p["weights"], float)
            if weights.shape != (len(FEATURE_NAMES),) or not np.all(np.isfinite(weights)):
                raise ValueError(f"weights must be {len(FEATURE_NAMES)} finite numbers")
            if whole_number(p.get("frame_shift_samples", FRAME_SHIFT), "frame_shift_samples", 1, 10**6) != FRAME_SHIFT:
                raise ValueError(f"frame_shift_samples is not this aligner's {FRAME_SHIFT}")
            if whole_number(p.get("sample_rate", SAMPLE_RATE), "sample_rate", 1, 10**7) != SAMPLE_RATE:
                raise ValueError(f"sample_rate is not this aligner's {SAMPLE_RATE}")
            network = ComposedNetwork.from_arrays(arrays["network"])
            if network.n_descriptions != COMPOSITION_DIMS:
                raise ValueError(f"the network describes phones in {network.n_descriptions} dimensions, this "
                                 f"aligner in {COMPOSITION_DIMS}")
            names = _phone_names(p["duration_classes"], "duration_classes")
            durations = FeatureDurations.from_arrays(names, arrays["durations"])
            prior = None
            if "prior" in arrays:
                prior_names = _phone_names(p["prior_classes"], "prior_classes")
                prior = PhonePrior(tuple(prior_names), np.asarray(arrays["prior"]["log_prior"], float),
                                   np.asarray(arrays["prior"]["coef"], float))
                if prior.log_prior.shape != (len(prior_names),) or prior.coef.shape != (COMPOSITION_DIMS,) or \
                        not (np.all(np.isfinite(prior.log_prior)) and np.all(np.isfinite(prior.coef))):
                    raise ValueError("the phone prior has the wrong shapes or non-finite values")
            background = tuple(_phone_names(p.get("background", []), "background"))
            refiner = BoundaryRefiner.from_arrays(arrays["refiner"]) if "refiner" in arrays else None
            min_frames = whole_number(p["min_frames"], "min_frames", 1, 10)
            spread = p.get("duration_spread", 1.0)
            if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not 0.25 <= spread <= 10:
                raise ValueError(f"duration_spread must be a number from 0.25 to 10, got {spread!r}")
            tempo = check_tempo_range(p.get("tempo_range"))
            front_denoise = None if p.get("front_denoise") is None else DenoiseSettings.from_dict(p["front_denoise"])
            detector = None
            if "boundary_detector" in arrays:
                detector = check_detector(BoundaryDetector.from_arrays(arrays["boundary_detector"]), network.n_features)
        except (KeyError, ValueError, TypeError, ModelError, TranscriptError) as exc:
            raise ModelError(f"{directory}: not a usable universal alignment model ({exc})") from None
        return cls(network, durations, weights, refiner, prior, background, min_frames, manifest.get("training", {}),
                   float(spread), tempo, front_denoise, detector)


def _phone_names(names, what: str) -> list:
    """``names`` (a model file's list of canonical IPA phones) checked: strings IPA reads."""
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise ValueError(f"{what} must be a list of phone names")
    for n in names:
        read_ipa(n)  # IpaError (a TranscriptError) for a name that is no phone
    return names
