"""Adapting a trained aligner to a user's corpus (issue 24, ``aligner adapt``).

A corpus is a list of :class:`Recording` (16 kHz samples, a transcript of words or of phone
symbols, a speaker, optionally hand-aligned reference phones). :func:`adapt_model` repeats, for
``rounds`` rounds:

1. align every recording with the current model (the words path of
   :mod:`aligner.alignment.decoding.words` or the phones path of
   :meth:`~aligner.alignment.model.AlignmentModel.decode_phones`), with the model's review when
   it has a confidence model (per-boundary confidences, transcript check);
2. turn each alignment into frame labels (classes of the model's inventory: the 39 of
   :data:`~aligner.phones.sets.CLASSES39`, or the classes of a model trained on its own phones), one
   per 10 ms frame, from the decoder's grid starts or (``refined_labels``) from the refiner's
   sub-frame times rounded to the nearest frame boundary; a recording with reference phones is
   labelled from them instead (its frames count ``reference_weight`` times); frames within
   ``guard_frames`` of a boundary whose confidence is below ``confidence_threshold`` are
   dropped (``confidence="drop"``) or weighted by that confidence (``"weight"``), frames within
   ``boundary_guard`` of any boundary dropped; recordings whose transcript the model flags as
   not matching the audio are left out;
3. re-estimate what the settings ask for, each pulled toward the *base* model by a prior:

   * the frame classifier's output layer (:func:`refit_output_layer`): a MAP step of its
     squared-hinge one-vs-rest SVMs in the whitened Nystroem space the classifier was trained
     in, ``min_W  lambda ||W - W_base||^2 + sum_i a_i sum_c hinge_ic(W)^2``, by one
     Gauss-Newton step per round from the current weights (the Hessian shared by the classes,
     an over-estimate of each class's, so the step is conservative). Only its sufficient
     statistics are accumulated (``E^T A E``, ``E^T A R`` over blocks of frames, ``E`` the
     kernel values, ``R`` the hinge residuals): memory ``O(m^2)`` for ``m`` landmarks, whatever
     the corpus length;
   * the duration statistics (:func:`adapt_durations`): per class and per transcript symbol,
     the mean and spread of the decoded lengths with the base statistics counted as
     ``durations_prior`` pseudo-observations;

   a model trained on its own phones keeps its inventory (number of classes, silence class,
   broad classes) and its phone symbols: its transcripts, references and pronunciations are
   in those symbols (:func:`transcript_phone_set`);

4. build the next :class:`~aligner.alignment.model.AlignmentModel` (the base is never changed).

Steps 1-2 and the statistics of step 3 are per recording, and the statistics are sums: a
round's recordings are aligned in batches, each summing its own (:func:`run_batch`), and the
batches' sums added (:func:`gather_round`; the same refit to the rounding of the order of the
sums). :class:`InProcessRounds` runs one batch in this process (the default);
:func:`aligner.alignment.adaptation.corpus.adapt_recordings` runs batches on worker processes or on
Dask. A recording that fails is left out of the round, with the reason, and the round goes on.

Per-speaker vocal-tract-length normalisation is separate:
:func:`~aligner.alignment.adaptation.warps.choose_warps` picks, per
speaker, the MFCC frequency warp whose alignments score highest under the model; the warps then
go to :func:`adapt_model` and must be used again when the adapted model aligns those speakers.

Options beyond the defaults (:class:`AdaptSettings`): keep-or-revert of each round's components on
held-back recordings (``keep_better``, :mod:`aligner.alignment.adaptation.keep`) and per-alternative
pronunciation bonuses from the decoder's choices (``pronunciation_prior``,
:mod:`aligner.alignment.adaptation.pronunciations`). What each setting measured on the speaker folds
(``python -m benchmarks.alignment.eval_adaptation``): docs/results.md and CHANGELOG.md.

Units: samples at 16 kHz; frames of 10 ms (:mod:`aligner.frames`); times in seconds unless a
name says ms.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from aligner.alignment.model import AlignmentModel, DurationStats, duration_key
from aligner.alignment.decoding.stop_closures import expand_stop_closures, pauses_as_two_silences, should_split_stops
from aligner.errors import AlignerError, AlignmentError
from aligner.alignment.adaptation.output_layer import (  # noqa: F401  (re-exported: adapt_corpus, tests)
    OutputLayerStats, refit_output_layer, whitening, with_output_layer)
from aligner.features.frame_classifier import FrameClassifier
from aligner.features.mfcc import mfcc_features
from aligner.frames import SAMPLE_RATE, phone_start_times
from aligner.phones.sets import CLASSES39, PhoneSet, get_phone_set

#: classes of the 39-class models (a model trained on its own phones has ``len(model.inventory)``)
N_CLASSES = len(CLASSES39)
#: frames whose kernel values are computed at once when accumulating statistics
STATS_BLOCK_FRAMES = 2048
#: a boundary "moved" between rounds when it moved more than this, seconds
MOVED_S = 0.020
KINDS = ("phones", "words")
CONFIDENCE_MODES = ("none", "drop", "weight")
DURATION_SPREADS = ("estimated", "scaled")  #: how :func:`adapt_durations` re-estimates a deviation


@dataclass
class Recording:
    """One recording of the corpus to adapt on.

    ``samples``: (n,) float mono audio at 16 kHz. ``transcript``: phone symbols
    (``kind="phones"``, any phone set of :func:`~aligner.phones.sets.get_phone_set`; ``phone_set``
    names it, ``"auto"`` guesses; for a model trained on its own phones, the model's symbols,
    ``phone_set`` ``"auto"`` or ``"model"``) or the orthographic words (``kind="words"``: a
    string or a list of words, normalised and looked up by :func:`word_pronunciations`, unless
    ``pronunciations`` gives each word's alternatives as phone tuples: ARPAbet, or the model's
    own symbols). ``reference``: hand-aligned phones ``[(start_s, end_s, symbol), ...]`` covering
    the recording (symbols as ``transcript``'s), or None.
    ``source``: ``(audio path, first sample, end sample)`` the samples were read from
    (:func:`~aligner.io.audio.load_audio` of the path, cut), or None: a Dask worker then reads
    them itself instead of receiving them.
    """

    samples: np.ndarray
    transcript: object
    speaker: str = ""
    name: str = "<recording>"
    kind: str = "phones"
    phone_set: str = "auto"
    reference: Sequence | None = None
    pronunciations: list | None = None
    source: tuple | None = None

    @property
    def duration_s(self) -> float:
        return len(self.samples) / SAMPLE_RATE


@dataclass(frozen=True)
class AdaptSettings:
    """What :func:`adapt_model` re-estimates, and how.

    ``classifier_prior``: ``lambda`` of the output-layer refit (None: keep the base classifier);
    in units of one frame's squared-hinge loss, the base SVM's own regulariser is 0.5.
    ``durations_prior``: pseudo-count of the base duration statistics (None: keep them).
    ``durations_spread``: ``"estimated"`` or ``"scaled"`` deviations (:func:`adapt_durations`).
    ``confidence``: ``"none"``, ``"drop"`` or ``"weight"`` (module docstring);
    ``confidence_threshold``: probability (0-1); ``guard_frames``: frames either side of a
    boundary (the frames ``y - guard .. y + guard - 1`` around a boundary before frame ``y``).
    ``skip_flagged``: leave out recordings whose transcript the model flags.
    ``reference_weight``: weight of a frame labelled from reference phones.
    ``bias_prior``: ``lambda`` of the output biases (the base SVM leaves them unregularised).
    ``boundary_guard``: frames within this many frames of *every* decoded boundary (``y - g ..
    y + g - 1``) are left out, confident or not (0: none), so that the refit learns the
    speaker's phones from their interiors instead of copying the current boundaries.
    ``refined_labels``: frame labels from the refined boundary times (the refiner's sub-frame
    shifts, rounded to the nearest frame boundary) instead of the decoder's grid starts.
    ``decoded_weight``: weight of a frame labelled from a decode (0: only references count).
    ``refiner_prior``: with reference recordings, refit the boundary refiner's output layer on
    their boundaries (:func:`refit_refiner_output`), pulled toward the base refiner's by this
    ridge penalty (in squared ms per unit of weight; None: keep the base refiner).
    ``pronunciation_prior``: words recordings only: decode them with the dialect forms aligning
    offers too (``--dialect auto``) and re-estimate a bonus per pronunciation alternative from
    the decoder's choices of the round, ``alpha`` pseudo-counts per alternative
    (:mod:`aligner.alignment.adaptation.pronunciations`; None: keep the base's), one per rule
    expansion (``pronunciation_level="expansion"``) or per dictionary variant or dialect form
    (``"phones"``).
    ``keep_better``: hold back every 5th recording and keep each round's re-estimated
    component only where it raises the held-back recordings' mean boundary confidence, judged
    with ``keep_judge`` (``"own"`` or ``"base"`` evidence; :mod:`aligner.alignment.adaptation.keep`).
    """

    classifier_prior: float | None = 10.0
    durations_prior: float | None = None
    durations_spread: str = "estimated"
    confidence: str = "none"
    confidence_threshold: float = 0.5
    guard_frames: int = 2
    skip_flagged: bool = True
    reference_weight: float = 3.0
    bias_prior: float = 1.0
    boundary_guard: int = 0
    refined_labels: bool = True
    decoded_weight: float = 1.0
    refiner_prior: float | None = None
    keep_better: bool = False
    keep_judge: str = "own"
    pronunciation_prior: float | None = None
    pronunciation_level: str = "expansion"

    def check(self) -> "AdaptSettings":
        if self.classifier_prior is not None and not self.classifier_prior > 0:
            raise ValueError(f"classifier_prior must be > 0 or None, got {self.classifier_prior}")
        if self.durations_prior is not None and not self.durations_prior >= 0:
            raise ValueError(f"durations_prior must be >= 0 or None, got {self.durations_prior}")
        if self.durations_spread not in DURATION_SPREADS:
            raise ValueError(f"durations_spread must be one of {DURATION_SPREADS}, got {self.durations_spread!r}")
        if self.confidence not in CONFIDENCE_MODES:
            raise ValueError(f"confidence must be one of {CONFIDENCE_MODES}, got {self.confidence!r}")
        if not 0.0 <= self.confidence_threshold <= 1.0:
            raise ValueError(f"confidence_threshold must lie in [0, 1], got {self.confidence_threshold}")
        if self.guard_frames < 0 or self.boundary_guard < 0 or self.reference_weight <= 0 or self.bias_prior <= 0:
            raise ValueError("guard_frames must be >= 0, reference_weight and bias_prior > 0")
        if self.refiner_prior is not None and not self.refiner_prior > 0:
            raise ValueError(f"refiner_prior must be > 0 or None, got {self.refiner_prior}")
        if not self.decoded_weight >= 0:
            raise ValueError(f"decoded_weight must be >= 0, got {self.decoded_weight}")
        if self.pronunciation_prior is not None and not self.pronunciation_prior > 0:
            raise ValueError(f"pronunciation_prior must be > 0 or None, got {self.pronunciation_prior}")
        from aligner.alignment.adaptation.keep import JUDGES
        from aligner.alignment.decoding.words import LEVELS  # the word decoder's, imported when checked

        if self.pronunciation_level not in LEVELS:
            raise ValueError(f"pronunciation_level must be 'expansion' or 'phones', got {self.pronunciation_level!r}")
        if self.keep_judge not in JUDGES:
            raise ValueError(f"keep_judge must be 'own' or 'base', got {self.keep_judge!r}")
        return self


@dataclass
class RoundReport:
    """What one round of :func:`adapt_model` used and saw (the alignments of the model the round
    started from)."""

    round: int
    files_used: int
    files_left_out: dict = field(default_factory=dict)  #: name -> reason
    frames: int = 0  #: frames with a label
    weighted_frames: float = 0.0  #: sum of the frame weights
    dropped_frames: int = 0  #: frames given weight 0 by the confidence rule
    mean_confidence: float | None = None  #: mean boundary confidence (None: no confidence model)
    boundaries: int = 0  #: boundaries compared with the previous round
    moved_20ms: int = 0  #: of those, moved more than 20 ms since the previous round
    seconds: float = 0.0
    held_back: int = 0  #: recordings held back to judge the round's changes (never re-estimated on)
    kept: dict | None = None  #: what the keep-or-revert judge kept and why (None: everything kept, unjudged)
    pronunciations: dict | None = None  #: words counted and alternatives given a bonus (None: not re-estimated)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Decoded:
    """One recording aligned by one model: its frame labels and what the report needs."""

    labels: np.ndarray  #: (T,) class of every frame
    weights: np.ndarray  #: (T,) frame weights (0 = not used)
    classes: np.ndarray  #: (K,) classes of the decoded (internal) phones
    symbols: list  #: K internal phone symbols (duration keys)
    y: np.ndarray  #: (K,) start frames
    compare_s: np.ndarray  #: boundary times (s) compared between rounds
    confidences: np.ndarray | None  #: (K,) start confidences, or None
    flagged: bool = False
    reference: bool = False
    choices: list = field(default_factory=list)  #: words: (word key, alternative keys, chosen key) per word


# -------------------------------------------------------------------------------------------
# words
# -------------------------------------------------------------------------------------------

def word_pronunciations(text, dictionary=None, model: AlignmentModel | None = None,
                        name: str = "transcript") -> tuple[list, list]:
    """``(labels, pronunciations)`` of an orthographic transcript (a string, or a list of words
    joined by spaces) as ``aligner align`` reads it
    (:func:`aligner.alignment.pipeline._pronunciations`): normalised
    (:func:`aligner.words.normalize.normalize_transcript`), every word's dictionary
    pronunciations (CMU by default), the shipped G2P's for unknown words, non-speech
    annotations the dictionary lacks skipped. For a ``model`` trained on its own phones, the
    ``dictionary`` must be in those phones and unknown words are an error (the shipped G2P
    writes English ARPAbet); ``name`` is named by the errors."""
    from aligner.alignment.pipeline import _pronunciations, load_dictionary, words_dictionary
    from aligner.errors import TranscriptError
    from aligner.words.normalize import normalize_transcript

    if not isinstance(text, str):
        text = " ".join(text)
    oov = "g2p"
    if model is not None and model.phone_set is not None:
        if dictionary is None:
            raise TranscriptError(f"{name}: this model was trained on its own phones ({model.phone_set.description}): "
                                  "word transcripts need a dictionary in those phones")
        words_dict, oov = words_dictionary(model, dictionary), "error"
    else:
        words_dict = load_dictionary(dictionary)
    return _pronunciations(normalize_transcript(text, words_dict), words_dict, oov, name, {})


# -------------------------------------------------------------------------------------------
# aligning one recording
# -------------------------------------------------------------------------------------------

def transcript_phone_set(model: AlignmentModel, name: str, symbols, source: str = "transcript") -> PhoneSet:
    """The phone set ``symbols`` (a transcript's or a reference's) are read in for ``model``: the
    model's own phones for a model trained on them (``name`` ``"auto"`` or ``"model"``, as
    :func:`aligner.alignment.pipeline.model_reading` allows), else the standard set ``name``
    (``"auto"``: detected from ``symbols``). Raises :class:`~aligner.errors.TranscriptError`
    (naming ``source``) for a symbol outside the set."""
    from aligner.alignment.pipeline import model_reading

    pset = model_reading(model, name)
    if not isinstance(pset, PhoneSet):
        return get_phone_set(pset, symbols, source)
    pset.validate(list(symbols), source)
    return pset


def _phone_sequence(rec: Recording, model: AlignmentModel) -> tuple[list, np.ndarray]:
    """``(internal symbols, classes (K,) of the model's inventory)`` the phones path decodes for
    ``rec`` (stops split into closure + release for standard phone sets without closures, as
    ``aligner align`` does; never for a model's own phones; a view's pauses between two phones as
    two silences, as aligning it decodes them)."""
    symbols = list(rec.transcript)
    pset = transcript_phone_set(model, rec.phone_set, symbols, rec.name)
    if should_split_stops(pset, None):
        expanded = expand_stop_closures(symbols, pset)
        return list(expanded.symbols), np.asarray(expanded.classes, np.int64)
    doubled = pauses_as_two_silences(symbols, pset) if model.pauses_unpaced else None
    if doubled is not None:
        return list(doubled.symbols), doubled.classes
    return symbols, np.asarray(pset.class_indices(symbols), np.int64)


def decode_recording(model: AlignmentModel, rec: Recording, frames: np.ndarray, scores: np.ndarray,
                     prons: tuple | None = None, choices: list | None = None, level: str = "expansion") -> tuple:
    """Align ``rec`` with ``model`` from its MFCC frames (T, 42) and classifier scores (T, 39).

    Returns ``(classes (K,), internal symbols (K), start frames y (K,), start times (K,) s,
    confidences (K,) or None, transcript-match probability or None, compare_s)``, where
    ``compare_s`` holds the times (s) compared between rounds: the phone starts (phones) or
    the word starts (words). ``prons``: ``(labels, pronunciations)`` of a words recording.
    ``choices``: a list, extended (words only) by each word's ``(word key, alternative keys,
    chosen alternative key)`` (:func:`~aligner.alignment.adaptation.pronunciations.chosen_alternatives`).

    A recording with long pauses (the classifier's silence posteriors,
    :func:`~aligner.alignment.decoding.silent_edges.pauses_cut_rows`) is aligned with their middles
    cut out of its frames and scores, as aligning it cuts them, and its frames and times mapped back
    (the pause spans what was cut); where the transcript does not fit the cut, whole.
    """
    from aligner.alignment.decoding.silent_edges import pauses_cut_rows

    found = pauses_cut_rows(model, scores, int(round(rec.duration_s * SAMPLE_RATE)))
    if found is not None:
        rows, cut = found
        chosen: list = []
        try:
            classes, symbols, y, starts, conf, match, compare_s = _decode_recording(
                model, rec, frames[rows], scores[rows], cut.duration_s, prons, chosen, level)
        except AlignmentError:
            pass  # the transcript does not fit the cut: the whole recording
        else:
            if choices is not None:
                choices.extend(chosen)
            return (classes, symbols, rows[np.asarray(y)], cut.original_times(starts), conf, match,
                    cut.original_times(compare_s))
    return _decode_recording(model, rec, frames, scores, rec.duration_s, prons, choices, level)


def _decode_recording(model: AlignmentModel, rec: Recording, frames: np.ndarray, scores: np.ndarray,
                      duration_s: float, prons: tuple | None, choices: list | None, level: str) -> tuple:
    """:func:`decode_recording` of frames (T, 42) and scores (T, C) lasting ``duration_s`` seconds."""
    if rec.kind == "phones":
        symbols, classes = _phone_sequence(rec, model)
        y, starts = model.decode_phones(frames, scores, classes, symbols, duration_s, rec.name)
        conf, match = model.review(frames, scores, classes, symbols, y, starts)
        return classes, symbols, y, starts, conf, match, starts
    from aligner.alignment.decoding.long_recordings import needs_long_path
    from aligner.alignment.decoding.task import dp_cells
    from aligner.alignment.decoding.words import decode_word_graph, word_graph

    labels, pronunciations = prons
    built = word_graph(model, pronunciations)
    if needs_long_path(dp_cells(len(frames), built[0].max_frames, model.min_frames)):
        raise AlignmentError(f"{rec.name}: too long for adaptation from words in one piece "
                             f"({len(frames)} frames); cut it into utterances")
    graph, _, _, path, starts = decode_word_graph(model, frames, scores, pronunciations, duration_s, rec.name,
                                                  built=built)
    nodes, y = path.nodes, path.starts
    if choices is not None:
        from aligner.alignment.adaptation.pronunciations import chosen_alternatives

        choices.extend(chosen_alternatives(graph, built[1], path, pronunciations, level))
    classes = np.asarray(graph.classes[nodes], np.int64)
    symbols = [graph.labels[n] for n in nodes]
    conf, match = model.review(frames, scores, classes, symbols, y, starts)
    return classes, symbols, y, starts, conf, match, starts[path.word_start >= 0]


def _prons(rec: Recording, dictionary=None, model: AlignmentModel | None = None) -> tuple:
    """``(labels, pronunciations)`` of a words recording (in ``model``'s phones)."""
    if rec.pronunciations is not None:
        return list(rec.transcript), rec.pronunciations
    return word_pronunciations(rec.transcript, dictionary, model, rec.name)


def _reference_labels(rec: Recording, n_frames_: int, model: AlignmentModel) -> tuple[list, np.ndarray, np.ndarray]:
    """``(symbols, classes (K,) of the model's inventory, start frames (K,))`` of ``rec``'s
    reference phones (in the model's own symbols for a model trained on its own phones)."""
    from aligner.alignment.training import reference_starts

    ref = list(rec.reference)
    if not ref:
        raise ValueError(f"{rec.name}: empty reference")
    symbols = [str(iv[2]) for iv in ref]
    pset = transcript_phone_set(model, "auto", symbols, rec.name)
    starts = np.array([float(iv[0]) for iv in ref])
    if np.any(np.diff(starts) < 0) or starts[0] < 0 or starts[-1] >= rec.duration_s:
        raise ValueError(f"{rec.name}: reference phones must start in order within the recording")
    y = reference_starts(starts * SAMPLE_RATE, n_frames_)
    return symbols, np.asarray(pset.class_indices(symbols), np.int64), y


def frame_weights(T: int, y: np.ndarray, confidences: np.ndarray | None, settings: AdaptSettings) -> np.ndarray:
    """(T,) weights of the frames of a decode with start frames ``y`` (K,) and start
    confidences (K,) or None: 0 within ``boundary_guard`` frames of any boundary; else 1,
    except within ``guard_frames`` of a boundary whose confidence is below the threshold (0 for
    ``"drop"``) and, for ``"weight"``, the lowest confidence of the boundaries within
    ``guard_frames`` (frames far from every boundary keep 1)."""
    w = np.ones(T)
    if settings.boundary_guard > 0:
        for k in range(1, len(y)):
            w[max(int(y[k]) - settings.boundary_guard, 0):int(y[k]) + settings.boundary_guard] = 0.0
    if confidences is None or settings.confidence == "none" or settings.guard_frames == 0:
        return w
    g = settings.guard_frames
    for k in range(1, len(y)):
        c = float(confidences[k])
        lo, hi = max(int(y[k]) - g, 0), min(int(y[k]) + g, T)
        if settings.confidence == "drop":
            if c < settings.confidence_threshold:
                w[lo:hi] = 0.0
        else:
            w[lo:hi] = np.minimum(w[lo:hi], c)
    return w


# -------------------------------------------------------------------------------------------
# the refiner's output layer (the classifier's: aligner.alignment.adaptation.output_layer)
# -------------------------------------------------------------------------------------------

def reference_boundaries(model: AlignmentModel, rec: Recording, frames: np.ndarray) -> tuple:
    """``(boundary features (K-1, F), shifts (K-1,) in ms)`` of a recording with reference phones:
    its reference phone sequence decoded by ``model`` (grid starts ``y``), the refiner's
    features at those boundaries, and how far the annotator's boundary lies from each grid time
    (reference start - grid start, ms), the quantity the refiner predicts."""
    from aligner.alignment.decoding.refinement import boundary_features

    symbols, classes, _ = _reference_labels(rec, len(frames), model)
    scores = model.classifier.scores(frames)
    y, _ = model.decode_phones(frames, scores, classes, symbols, rec.duration_s, name=rec.name)
    mean, std, _ = model.durations.for_phones(classes, symbols)
    features = boundary_features(scores, frames, classes, y, mean, std, model.inventory.broad_indices)
    starts = np.array([float(iv[0]) for iv in rec.reference])
    return features, 1000.0 * (starts[1:] - phone_start_times(y)[1:])


def refit_refiner_output(refiner, features: Sequence[np.ndarray], shifts_ms: Sequence[np.ndarray],
                         prior: float):
    """A copy of ``refiner`` whose output layer (weights and bias over its hidden units, or over
    the standardised features for a linear refiner) is refit on ``features`` (per recording,
    (K-1, F)) and their measured ``shifts_ms`` (clipped as in training), by ridge regression
    toward the base output layer: ``min ||A theta - t||^2 + prior ||theta - theta_base||^2``.
    The hidden layer and the standardisation are kept."""
    import copy

    X = np.vstack([np.asarray(f, np.float64) for f in features])
    t = np.clip(np.concatenate([np.asarray(v, np.float64) for v in shifts_ms]),
                -refiner.target_clip_ms, refiner.target_clip_ms)
    Z = (X - refiner.mean) / refiner.scale
    if refiner.hidden_weights.shape[1]:
        Z = np.maximum(Z @ refiner.hidden_weights + refiner.hidden_bias, 0.0)
    A = np.hstack([Z, np.ones((len(Z), 1))])
    theta0 = np.append(refiner.output_weights, refiner.output_bias)
    theta = np.linalg.solve(A.T @ A + prior * np.eye(A.shape[1]), A.T @ t + prior * theta0)
    out = copy.copy(refiner)
    out.output_weights, out.output_bias = theta[:-1].copy(), float(theta[-1])
    return out


# -------------------------------------------------------------------------------------------
# durations
# -------------------------------------------------------------------------------------------

def adapt_durations(base: DurationStats, lengths_by_class: list, lengths_by_symbol: dict,
                    prior: float, spread: str = "estimated") -> DurationStats:
    """Duration statistics (frames) with the corpus's lengths and the base statistics counted as
    ``prior`` pseudo-observations: ``mean = (prior mu0 + sum l) / (prior + n)``, per class
    (``lengths_by_class[c]``) and per symbol key already in the base table
    (``lengths_by_symbol[key]``). The deviation (>= 1 frame), ``spread`` ``"estimated"``: from the
    second moment merged likewise; ``"scaled"``: ``sd0 mean / mu0`` (decoded lengths spread less
    than true ones, so estimated deviations narrow round after round). The length limits stay
    the base's; before-pause statistics (a universal view's) scale as their class's mean."""
    if spread not in DURATION_SPREADS:
        raise ValueError(f"spread must be one of {DURATION_SPREADS}, got {spread!r}")

    def merge(mu0, sd0, v):
        v = np.asarray(v, float)
        n = len(v)
        mean = (prior * mu0 + v.sum()) / (prior + n)
        if spread == "scaled":
            return mean, max(sd0 * mean / mu0 if mu0 > 0 else sd0, 1.0)
        second = (prior * (sd0 ** 2 + mu0 ** 2) + (v ** 2).sum()) / (prior + n)
        return mean, max(np.sqrt(max(second - mean ** 2, 0.0)), 1.0)

    mean, std = base.mean.copy(), base.std.copy()
    for c, v in enumerate(lengths_by_class):
        if len(v) and prior + len(v) > 0:
            mean[c], std[c] = merge(mean[c], std[c], v)
    s_mean, s_std = base.symbol_mean.copy(), base.symbol_std.copy()
    for i, key in enumerate(base.symbols.tolist()):
        v = lengths_by_symbol.get(key, ())
        if len(v) and prior + len(v) > 0:
            s_mean[i], s_std[i] = merge(s_mean[i], s_std[i], v)
    out = DurationStats(mean, std, base.max_frames.copy(), base.symbols.copy(), s_mean, s_std,
                        base.symbol_max_frames.copy())
    if len(base.final_mean):  # before-pause statistics follow their class's change of tempo
        ratio = mean / base.mean
        out.final_mean, out.final_std = base.final_mean * ratio, np.maximum(base.final_std * ratio, 1.0)
        out.final_max_frames, out.silence_class = base.final_max_frames.copy(), base.silence_class
    return out


# -------------------------------------------------------------------------------------------
# the rounds
# -------------------------------------------------------------------------------------------

#: recordings :func:`corpus_decoder` looks at, evenly spaced through the corpus
DECODER_SAMPLE = 40


def corpus_decoder(model: AlignmentModel, recordings: Sequence[Recording]) -> tuple:
    """``(decoder, share)``: which of ``model`` and its condition experts
    (:mod:`aligner.alignment.conditions`) to adapt on ``recordings``, and the share of their audio
    the experts' gates take (0 for a model without one). An expert (a model of its own: an
    adapted model has no expert) when the gates take more than half of the audio of up to
    :data:`DECODER_SAMPLE` recordings spread through the corpus: the multi-condition expert or
    the band expert, whichever takes more of it; a recording too short to score does not count."""
    if model.condition_expert is None or not recordings:
        return model, 0.0
    picked = np.unique(np.linspace(0, len(recordings) - 1, min(DECODER_SAMPLE, len(recordings))).round().astype(int))
    experts = [e for e in (model.condition_expert, model.condition_band_expert) if e is not None]
    routed, total = [0] * len(experts), 0
    for i in picked:
        rec = recordings[int(i)]
        samples = np.asarray(rec.samples if rec.samples is not None else _source_samples(rec), np.float32)
        try:
            decoder = model.scored(None, samples)[0]  # frames only for the decoder the gates pick
        except AlignerError:
            continue
        total += len(samples)
        for k, expert in enumerate(experts):
            routed[k] += len(samples) if decoder is expert else 0
    share = sum(routed) / total if total else 0.0
    return (experts[int(np.argmax(routed))] if share > 0.5 else model), share


def check_recordings(recordings: Sequence[Recording]) -> None:
    """Raise ValueError for input :func:`adapt_model` cannot use (naming the recording)."""
    if not len(recordings):
        raise ValueError("no recordings to adapt on")
    for rec in recordings:
        s = np.asarray(rec.samples)
        if s.ndim != 1 or s.size < 400:
            raise ValueError(f"{rec.name}: samples must be a 1-d array of at least 400 (25 ms at 16 kHz)")
        if not np.all(np.isfinite(s)):
            raise ValueError(f"{rec.name}: samples hold NaN or infinite values")
        if rec.kind not in KINDS:
            raise ValueError(f"{rec.name}: kind must be one of {KINDS}, got {rec.kind!r}")
        if rec.kind == "phones" and (isinstance(rec.transcript, str) or not len(rec.transcript)):
            raise ValueError(f"{rec.name}: a phones transcript is a non-empty list of symbols")


def adapt_model(base, recordings: Sequence[Recording], rounds: int = 1,
                settings: AdaptSettings | None = None, dictionary=None, progress=None, on_round=None,
                warps: dict | None = None, blas_threads: int = 1, file_progress=None, runner=None) -> tuple:
    """:func:`_adapt_model` with BLAS on ``blas_threads`` threads (0: as it is;
    :func:`aligner.runtime.blas.limit`). One thread is the fastest on a machine whose cores are
    shared: the Cholesky factorisation of the refit took 3.3 s on the default threads and 0.5 s
    on one while two other jobs ran."""
    from aligner.runtime import blas

    with blas.limit(blas_threads):
        return _adapt_model(base, recordings, rounds, settings, dictionary, progress, on_round, warps,
                            file_progress, runner)


def _adapt_model(base, recordings: Sequence[Recording], rounds: int = 1,
                 settings: AdaptSettings | None = None, dictionary=None, progress=None, on_round=None,
                 warps: dict | None = None, file_progress=None, runner=None) -> tuple:
    """Adapt ``base`` to ``recordings`` (module docstring); returns ``(model, [RoundReport])``.

    ``base``: an :class:`~aligner.alignment.model.AlignmentModel`, a model directory, or None
    for the shipped model; it is not modified. ``rounds`` >= 1 re-estimations, each from the
    alignments of the model of the round before. ``dictionary``: pronouncing dictionary of
    words recordings (None: CMU). ``progress``: optional ``callable(str)`` told of each round;
    ``file_progress``: optional ``callable(round, done, total)`` called once per recording of
    each round (a progress bar); ``on_round``: optional ``callable(round, model, report)``
    given each round's new model. ``warps``: ``{speaker: warp}`` of the MFCC front end
    (:func:`~aligner.alignment.adaptation.warps.choose_warps`; the adapted model then expects the
    same warps when it aligns those speakers: ``mfcc_features(samples, warp=...)`` and its
    ``align_scored``).

    ``runner``: where each round's recordings are aligned and its statistics summed, a
    ``callable(recordings, prons_of, warps)`` giving a context manager with the methods of
    :class:`InProcessRounds` (the default: this process);
    :func:`aligner.alignment.adaptation.corpus.adapt_recordings` runs them on worker processes or on
    Dask, with the same model to the rounding of the sums' order.

    Recordings with long silent edges are adapted on whole: cut them first, as aligning them
    cuts them (:func:`~aligner.alignment.adaptation.edges.edges_cut_recordings`, which
    :func:`~aligner.alignment.adaptation.corpus.adapt_corpus` calls).
    """
    from aligner.alignment.pipeline import load_model

    settings = (settings or AdaptSettings()).check()
    if int(rounds) < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    check_recordings(recordings)
    base = load_model(base)
    warps = warps or {}
    all_prons = [None if r.kind == "phones" else _prons(r, dictionary, base) for r in recordings]
    from aligner.alignment.adaptation.keep import split_held_back

    n_recordings = len(recordings)
    recordings, prons_of, judge, not_judged = split_held_back(base, recordings, all_prons, warps, settings,
                                                              frames_of, decode_recording)
    W_base, b_base = base.classifier.weights, base.classifier.bias
    whiten = whitening(base.classifier) if settings.classifier_prior is not None else None
    model = base
    previous: dict = {}
    reports = []
    with (runner or InProcessRounds)(recordings, prons_of, warps, front_end=base) as where:
        for rnd in range(1, int(rounds) + 1):
            t0 = time.perf_counter()
            clf = model.classifier
            stats, files = where.run(rnd, model, settings, whiten is not None, file_progress)
            by_class = [[] for _ in range(len(base.inventory))]
            by_symbol: dict = {}
            report = RoundReport(rnd, 0, held_back=0 if judge is None else len(judge.recordings))
            confs, moved, compared, choices = [], 0, 0, []
            for i, (rec, res) in enumerate(zip(recordings, files)):  # in the recordings' order, always
                if res.confidences is not None:
                    confs.append(res.confidences)
                if res.compare_s is not None:
                    if i in previous and len(previous[i]) == len(res.compare_s):
                        compared += len(res.compare_s)
                        moved += int(np.sum(np.abs(previous[i] - res.compare_s) > MOVED_S + 1e-9))
                    previous[i] = res.compare_s
                if res.left_out is not None:
                    report.files_left_out[rec.name] = res.left_out
                    continue
                report.files_used += 1
                report.frames += res.frames
                report.weighted_frames += res.weighted_frames
                report.dropped_frames += res.dropped_frames
                choices += res.choices or []
                for c, key, n in zip(*(res.durations or ((), (), ()))):
                    by_class[int(c)].append(int(n))
                    by_symbol.setdefault(key, []).append(int(n))
            report.mean_confidence = float(np.concatenate(confs).mean()) if confs else None
            report.boundaries, report.moved_20ms = compared, moved
            if report.files_used == 0:
                first = "".join(f"; {k}: {v}" for k, v in list(report.files_left_out.items())[:1])
                raise AlignmentError(f"round {rnd}: no recording could be used "
                                     f"({len(report.files_left_out)} left out{first})")
            new_clf = clf
            if stats is not None and stats.n > 0:
                W, b = refit_output_layer(stats, whiten, clf.weights, clf.bias, W_base, b_base,
                                          settings.classifier_prior, settings.bias_prior)
                new_clf = with_output_layer(clf, W, b)
            del stats
            durations = model.durations
            if settings.durations_prior is not None:
                durations = adapt_durations(base.durations, by_class, by_symbol, settings.durations_prior,
                                            settings.durations_spread)
            bonus = model.pronunciation_bonus
            if settings.pronunciation_prior is not None and choices:
                from aligner.alignment.adaptation.pronunciations import count_choices, pronunciation_bonuses

                bonus = pronunciation_bonuses(*count_choices(choices), settings.pronunciation_prior)
                report.pronunciations = {"words": len(choices), "alternatives_with_bonus": len(bonus)}
            parts = {"classifier": (clf, new_clf), "durations": (model.durations, durations),
                     "pronunciations": (model.pronunciation_bonus, bonus)}

            def build(chosen: dict, rnd=rnd, parts=parts) -> AlignmentModel:
                c = {name: chosen.get(name, current) for name, (current, _) in parts.items()}
                out = _round_model(base, c["classifier"], c["durations"], rnd, settings, n_recordings)
                out.pronunciation_bonus = c["pronunciations"]
                return out

            changes = {name: new for name, (current, new) in parts.items() if new is not current}
            if judge is not None and changes:
                chosen, report.kept = judge.choose(model, changes, build)
                model = build({name: new for name, new in chosen.items() if new is not None})
            else:
                report.kept = not_judged
                model = build(changes)
            model.training["adapted"]["kept"] = report.kept
            refs = [i for i, r in enumerate(recordings) if r.reference is not None]
            if settings.refiner_prior is not None and base.refiner is not None and refs:
                pairs = [reference_boundaries(model, recordings[i], where.frames(i)) for i in refs]
                model.refiner = refit_refiner_output(base.refiner, [f for f, _ in pairs], [t for _, t in pairs],
                                                     settings.refiner_prior)
            report.seconds = time.perf_counter() - t0
            reports.append(report)
            if on_round is not None:
                on_round(rnd, model, report)
            if progress:
                progress(f"round {rnd}: {report.files_used} files, {report.frames} frames, "
                         f"{report.moved_20ms}/{report.boundaries} boundaries moved > 20 ms, {report.seconds:.1f} s")
    return model, reports


def _round_model(base: AlignmentModel, clf: FrameClassifier, durations: DurationStats, rnd: int,
                 settings: AdaptSettings, n_recordings: int) -> AlignmentModel:
    """The model of round ``rnd`` adapted on ``n_recordings`` recordings (held-back ones
    included): ``base`` with this classifier and these duration statistics (the base's classes,
    symbols, refiner, boundary detector, review and front end kept)."""
    return AlignmentModel(clf, durations, np.array(base.weights, float), base.min_frames,
                          dict(base.training, adapted={"rounds": rnd, "recordings": n_recordings,
                                                       "settings": dict(settings.__dict__)}),
                          base.refiner, base.confidence, base.utterance_check,
                          base.inventory, base.phone_symbols,  # the base's classes and symbols, kept
                          front_band_hz=base.front_band_hz,  # and its front end
                          front_dereverb=base.front_dereverb, front_denoise=base.front_denoise,
                          always_scored=base.always_scored, tempo_range=base.tempo_range,
                          pauses_unpaced=base.pauses_unpaced, boundary_detector=base.boundary_detector)


# -------------------------------------------------------------------------------------------
# a round's recordings: aligned, labelled, their statistics summed (here, or on workers)
# -------------------------------------------------------------------------------------------

@dataclass
class FileResult:
    """What one recording gave in one round (:func:`run_batch`): the reason it was left out
    (None: used), and what the round's report and the duration re-estimate need. Per boundary
    or per recording, never per frame: the frames count in the batch's statistics."""

    index: int
    left_out: str | None = None
    compare_s: np.ndarray | None = None  #: boundary times compared between rounds (None: not decoded)
    confidences: np.ndarray | None = None  #: start confidences but the first (None: none, or one phone)
    frames: int = 0
    weighted_frames: float = 0.0
    dropped_frames: int = 0
    durations: tuple | None = None  #: (classes, duration keys, lengths in frames) of its phones, if asked
    choices: list | None = None  #: words: (word key, alternative keys, chosen key) per word


@dataclass
class BatchResult:
    """:func:`run_batch`'s answer: the statistics of the recordings used (None: not asked for)
    and each recording's :class:`FileResult`; or ``broken`` (why), and then neither counts
    (:func:`gather_round` runs its recordings again one per batch)."""

    stats: OutputLayerStats | None
    files: list
    broken: str | None = None


def frames_of(rec: Recording, warp: float = 1.0, model: AlignmentModel | None = None) -> np.ndarray:
    """The MFCC frames of a recording (its samples read from its ``source`` if it has none), as
    ``model`` reads them (:meth:`AlignmentModel.frames_of`: through its front-end band, and
    dereverberated or denoised, when it has them); None: the plain MFCCs."""
    samples = np.asarray(rec.samples if rec.samples is not None else _source_samples(rec), np.float32)
    if model is None:
        return mfcc_features(samples, SAMPLE_RATE, warp=float(warp))
    return model.frames_of(samples, float(warp))


_SOURCE: tuple = (None, None)  #: (path, samples): the last audio file :func:`_source_samples` read


def _source_samples(rec: Recording) -> np.ndarray:
    """``rec``'s samples read from its ``source`` as the corpus reader read them (the whole
    file, then cut: DC removal and resampling see the whole file); the last file read is kept,
    so the intervals of one TextGrid read it once."""
    global _SOURCE
    import warnings

    from aligner.io.audio import load_audio

    path, a, b = rec.source
    if _SOURCE[0] != path:
        _SOURCE = (None, None)
        with warnings.catch_warnings():  # repairs were reported when the corpus was read
            warnings.simplefilter("ignore")
            _SOURCE = (path, load_audio(path))
    if len(_SOURCE[1]) < b:
        raise AlignmentError(f"{path}: {len(_SOURCE[1])} samples, fewer than when the corpus was read ({b}): "
                             f"changed since?")
    return _SOURCE[1][a:b]


def failure_message(exc: Exception) -> str:
    """Why a recording was left out, from the exception it raised."""
    if isinstance(exc, (AlignerError, ValueError)):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc}"


def run_batch(model: AlignmentModel, entries, settings: AdaptSettings, want_stats: bool, cache=None,
              on_file=None) -> BatchResult:
    """Align the recordings ``entries`` ``[(index, Recording, prons, warp)]`` with ``model``,
    label their frames and sum the output-layer statistics of those used (``want_stats``);
    ``cache``: a list keeping each recording's MFCC frames by index (None: computed each
    time); ``on_file()`` after each recording. Never raises: a recording that fails is left
    out with the reason; if the statistics themselves fail midway the batch is ``broken``."""
    clf = model.classifier
    stats = OutputLayerStats.for_classifier(clf) if want_stats else None
    files = []
    for i, rec, prons, warp in entries:
        dec = frames = None
        try:
            if cache is not None and cache[i] is not None:
                frames = cache[i]
            else:
                if rec.samples is None:
                    rec = dataclasses.replace(rec, samples=_source_samples(rec))
                frames = frames_of(rec, warp, model)
                if cache is not None:
                    cache[i] = frames
            result, dec = _file_result(i, model, rec, frames, prons, settings)
        except Exception as exc:
            result = FileResult(i, failure_message(exc))
        if dec is not None and stats is not None:
            try:
                _add_stats(stats, clf, frames, dec)
            except Exception as exc:
                return BatchResult(None, [], f"{rec.name}: statistics failed: {failure_message(exc)}")
        files.append(result)
        if on_file is not None:
            on_file()
    return BatchResult(stats, files)


def _file_result(i: int, model: AlignmentModel, rec: Recording, frames: np.ndarray, prons,
                 settings: AdaptSettings) -> tuple:
    """``(FileResult, Decoded or None)`` of one recording in a round; the Decoded only when the
    recording is used (its frames then go into the statistics)."""
    dec = _decode_for_round(model, rec, frames, prons, settings)
    if isinstance(dec, str):
        return FileResult(i, dec), None
    res = FileResult(i, compare_s=np.asarray(dec.compare_s))
    if dec.confidences is not None and len(dec.confidences) > 1:
        res.confidences = np.asarray(dec.confidences[1:], float)
    if dec.flagged and settings.skip_flagged:
        res.left_out = "transcript flagged as not matching the audio"
        return res, None
    if not np.any(dec.weights > 0):
        res.left_out = "no frame with a positive weight"
        return res, None
    res.choices = dec.choices
    res.frames = int(np.sum(dec.weights > 0))
    res.weighted_frames = float(dec.weights.sum())
    res.dropped_frames = int(np.sum(dec.weights == 0))
    if settings.durations_prior is not None:
        lengths = np.diff(np.append(dec.y, len(frames)))
        keep = (_within_utterance(np.asarray(dec.classes), model.inventory.silence_index) if rec.kind == "words"
                else np.ones(len(dec.classes), bool))
        res.durations = ([int(c) for c, k in zip(dec.classes, keep) if k],
                         [duration_key(s) for s, k in zip(dec.symbols, keep) if k],
                         [int(n) for n, k in zip(lengths, keep) if k])
    return res, dec


def _within_utterance(classes: np.ndarray, silence: int) -> np.ndarray:
    """(K,) bool: the phones decoded from words whose lengths count toward the within-utterance
    duration statistics: all but a speech phone followed by silence or ending the recording, which
    the words decoder lengthens as phrase-final (:data:`~aligner.alignment.decoding.words.FINAL_LENGTHENING`,
    :data:`~aligner.alignment.decoding.words.PRE_PAUSE_LENGTHENING`), so its length would
    stretch its class's mean."""
    speech = classes != silence
    before_silence = ~np.append(speech[1:], False)  # the recording's end counts as silence
    return ~(speech & before_silence)


def _add_stats(stats: OutputLayerStats, clf: FrameClassifier, frames: np.ndarray, dec: Decoded) -> None:
    """Add a decoded recording's frames to ``stats``, :data:`STATS_BLOCK_FRAMES` at a time."""
    for a in range(0, len(frames), STATS_BLOCK_FRAMES):
        lo, hi = max(0, a - clf.context), min(len(frames), a + STATS_BLOCK_FRAMES + clf.context)
        E = clf.kernel_values(frames[lo:hi])[a - lo:min(a + STATS_BLOCK_FRAMES, len(frames)) - lo]
        b = a + len(E)
        stats.add(E, dec.labels[a:b], dec.weights[a:b], clf.weights, clf.bias)


def gather_round(batches: list, run, n: int, stats: OutputLayerStats | None, tick=None, rewrite=None) -> list:
    """``[FileResult]`` of a round's ``n`` recordings in their order, from ``run(batches)``, which
    yields the :class:`BatchResult` of each batch (a list of recording indices) in order: the
    statistics merged into ``stats``; a broken batch (or a lost one: its worker died) of several
    recordings run again one recording per batch, a recording broken on its own left out with
    the reason. ``tick()`` after each recording taken from a batch (None: the batches tick);
    ``rewrite(index, reason)``: the reason as reported (None: as it is)."""
    files: list = [None] * n
    retry: list = []
    for attempt in (batches, retry):  # retry is filled by the first pass
        for indices, result in zip(attempt, run(attempt) if attempt else ()):
            if result.broken is not None and len(indices) > 1:
                retry.extend([i] for i in indices)
                continue
            results = result.files if result.broken is None else [FileResult(indices[0], result.broken)]
            if stats is not None and result.stats is not None:
                stats.merge(result.stats)
            for res in results:
                if res.left_out is not None and rewrite is not None:
                    res.left_out = rewrite(res.index, res.left_out)
                files[res.index] = res
                if tick is not None:
                    tick()
    return files


class InProcessRounds:
    """Each round's recordings aligned in this process, in one batch (:func:`run_batch`), their
    MFCC frames kept between rounds, read as ``front_end`` (a model, the one adapted) reads them
    (:func:`frames_of`; None: the plain MFCCs);
    ``with InProcessRounds(recordings, prons_of, warps) as where: stats, files = where.run(...)``."""

    def __init__(self, recordings: Sequence[Recording], prons_of: list, warps: dict,
                 front_end: AlignmentModel | None = None):
        self.recordings, self.prons_of, self.warps, self.front_end = recordings, prons_of, warps, front_end
        self.cache: list = [None] * len(recordings)

    def __enter__(self) -> "InProcessRounds":
        return self

    def __exit__(self, *exc) -> None:
        self.cache = [None] * len(self.recordings)

    def entries(self, indices) -> list:
        return [(i, self.recordings[i], self.prons_of[i], float(self.warps.get(self.recordings[i].speaker, 1.0)))
                for i in indices]

    def frames(self, i: int) -> np.ndarray:
        """The MFCC frames of recording ``i``."""
        if self.cache[i] is None:
            rec = self.recordings[i]
            self.cache[i] = frames_of(rec, self.warps.get(rec.speaker, 1.0), self.front_end)
        return self.cache[i]

    def run(self, rnd: int, model: AlignmentModel, settings: AdaptSettings, want_stats: bool,
            file_progress=None) -> tuple:
        """``(summed statistics or None, [FileResult] in the recordings' order)`` of round ``rnd``
        aligned with ``model``; ``file_progress(rnd, done, total)`` after each recording."""
        n, done = len(self.recordings), [0]

        def tick():
            done[0] += 1
            if file_progress is not None:
                file_progress(rnd, done[0], n)

        stats = OutputLayerStats.for_classifier(model.classifier) if want_stats else None
        files = gather_round([list(range(n))], lambda batches: (
            run_batch(model, self.entries(ix), settings, want_stats, self.cache, tick) for ix in batches),
            n, stats)
        return stats, files


def _decode_for_round(model: AlignmentModel, rec: Recording, frames: np.ndarray, prons, settings: AdaptSettings):
    """:class:`Decoded` of one recording in one round, or the reason (str) it is left out."""
    T = len(frames)
    scores = model.classifier.scores(frames)
    if settings.pronunciation_prior is not None and rec.kind == "words" and prons is not None:
        from aligner.alignment.decoding.words import with_dialect  # the alternatives aligning offers

        prons = (prons[0], with_dialect(model, prons[1]))
    try:
        choices: list = []
        classes, symbols, y, starts, conf, match, compare_s = decode_recording(
            model, rec, frames, scores, prons, choices, settings.pronunciation_level)
    except AlignmentError as exc:
        if rec.reference is None:
            return f"not aligned: {exc}"
        classes = symbols = y = conf = match = starts = None
        compare_s = np.zeros(0)
    flagged = bool(match is not None and model.utterance_check is not None
                   and model.utterance_check.flags_probability(match))
    if rec.reference is not None:  # hand-aligned: its boundaries replace the decoded ones
        symbols, classes, y = _reference_labels(rec, T, model)
        weights = np.full(T, settings.reference_weight)
        flagged = False
    else:
        if settings.refined_labels and model.refiner is not None:
            from aligner.alignment.training import reference_starts

            y = reference_starts(np.asarray(starts) * SAMPLE_RATE, T)
        weights = frame_weights(T, y, conf, settings) * settings.decoded_weight
    labels = np.repeat(classes, np.diff(np.append(y, T)))
    return Decoded(labels, weights, classes, list(symbols), np.asarray(y), np.asarray(compare_s), conf, flagged,
                   rec.reference is not None, [] if rec.reference is not None else choices)

