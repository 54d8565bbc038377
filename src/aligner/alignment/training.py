"""Training a forced aligner from hand-aligned utterances (SPEC section 3).

1. Read every utterance: 16 kHz audio -> MFCC frames; its ``.phn`` -> phone classes and the
   reference start frame of every phone (:func:`reference_starts`).
2. Phone-duration statistics per class, from the reference alignments.
3. Frame-classifier scores for the weight training are *out of fold*: the speakers are split
   into ``n_folds`` groups, and each group is scored by a classifier trained on the other
   groups, so the agreement feature is as (un)reliable on training utterances as on new ones.
4. The 7 weights are trained with any trainer of the learning core; a speaker-disjoint part of
   the training speakers is the validation set for early stopping.
5. A boundary refiner learns the sub-frame shifts of the decodes; utterances that carry
   simulated-condition copies (``aligner train --augment``) bring those copies to its training
   too, scored by the same out-of-fold classifiers.
6. The shipped classifier is trained on every utterance.
"""

from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from aligner.alignment.model import AlignmentModel, DurationStats, duration_key
from aligner.alignment.decoding.refinement import BoundaryRefiner, boundary_features
from aligner.io.audio import load_audio
from aligner.features.band import through_band
from aligner.features.frame_classifier import FrameClassifier
from aligner.io.corpus import Utterance, speaker_folds
from aligner.features.mfcc import mfcc_features
from aligner.frames import SAMPLE_RATE, phone_start_times, time_to_boundary_frame
from aligner.learn import Trainer, ValidationSearch, make_trainer, param_grid, plain_params
from aligner.io.transcripts import read_phn, read_reference_phones
from aligner.phones.sets import TIMIT39_INVENTORY, PhoneInventory, PhoneSet, get_phone_set
from aligner.alignment.decoding.task import AlignmentTask

Progress = Optional[Callable[[str, int, int], None]]

#: Where every trainer starts: classifier agreement and duration prior at equal weight (the
#: SPEC prototype's hand-set form). From w = 0 the first decodes are arbitrary and, with costs
#: of several frames, orbit's first step is so large that exp(-(w.u)^2/2) then freezes it.
INITIAL_WEIGHTS = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0])
#: Trainer defaults for the 7 weights (chosen on validation speakers of the TIMIT sample);
#: parameters given by the caller override them.
DEFAULT_TRAINER_PARAMS = {"epochs": 8, "eta0": 0.01, "schedule": "constant", "average": True}
#: the trainer of the 7 weights of ``aligner train`` (a universal model has its own:
#: :data:`aligner.alignment.universal_training.UNIVERSAL_TRAINER`)
DEFAULT_TRAINER = "orbit"
#: A step-size grid to pass as ``train_alignment_model(eta0_grid=...)``: each is fitted and the one
#: with the lowest validation cost kept. Off by default: in speaker-fold CV on the TIMIT sample
#: it did not beat the fixed 0.01 (figures in docs/results.md).
ETA0_GRID = (0.01, 0.1, 1.0)
#: Frame-classifier settings of the network classifier (512 ReLU units, L2 penalty 3, no PCA),
#: chosen on validation speakers over the kernel and other widths and penalties (docs/results.md,
#: "A network frame classifier"); three such networks (seeds 0, 1, 2) averaged into one, as the
#: shipped clean model's ("Averaged networks"; the out-of-fold classifiers stay one network).
NETWORK_CLASSIFIER_PARAMS: dict = {"hidden": 512, "alpha": 3.0, "pca_dims": 0, "networks": 3}
#: Those of the Nystroem kernel and its SVMs, the classifier of the models shipped before the
#: network: the :class:`FrameClassifier` defaults of the settings the network changes.
KERNEL_CLASSIFIER_PARAMS: dict = {name: inspect.signature(FrameClassifier).parameters[name].default
                                  for name in NETWORK_CLASSIFIER_PARAMS}
#: Frame-classifier defaults of training (overridable per call): the network.
DEFAULT_CLASSIFIER_PARAMS: dict = dict(NETWORK_CLASSIFIER_PARAMS)
#: Vocal-tract-length perturbation factors of the extra classifier training copies of every
#: utterance (same labels, spectrum warped; :func:`aligner.features.mfcc.mfcc_features`).
#: Their effect on frame accuracy is measured by ``python -m benchmarks.speed.bench_classifier``.
DEFAULT_WARPS = (0.9, 1.1)


@dataclass
class UtteranceData:
    """One hand-aligned utterance, in frames."""

    name: str
    speaker: str
    frames: np.ndarray  #: (T, 42) MFCC frames
    classes: np.ndarray  #: (K,) phone classes
    symbols: list  #: K phone symbols as written in the transcript
    y: np.ndarray  #: (K,) reference start frames
    duration_s: float
    warped: list = field(default_factory=list)  #: (T, 42) frames of VTLP copies (classifier training only)
    starts_s: Optional[np.ndarray] = None  #: (K,) hand-labelled start times, seconds
    #: (T, 42) frames of simulated-condition copies (classifier training only; :func:`degraded_frames`)
    degraded: list = field(default_factory=list)

    @property
    def frame_labels(self) -> np.ndarray:
        """Class of every frame (T,), from the reference starts."""
        lengths = np.diff(np.append(self.y, len(self.frames)))
        return np.repeat(self.classes, lengths)


def reference_starts(starts_samples: np.ndarray, n_frames: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Start frames (K,) of hand-labelled phones starting at ``starts_samples``.

    Each start goes to the frame whose boundary is nearest (:func:`time_to_boundary_frame`);
    the first phone starts at frame 0; phones shorter than a frame after rounding are pushed
    to length 1 so the starts stay strictly increasing and within ``n_frames``.
    """
    y = np.asarray(time_to_boundary_frame(np.asarray(starts_samples) / sample_rate, n_frames), np.int64)
    k = len(y)
    if k > n_frames:
        raise ValueError(f"{k} phones do not fit in {n_frames} frames")
    y[0] = 0
    for i in range(1, k):  # at least one frame each, leaving room for the phones after
        y[i] = min(max(y[i], y[i - 1] + 1), n_frames - (k - i))
    return y


def load_utterance(utt: Utterance, warps: tuple = (), phone_set: PhoneSet | None = None,
                   tier: str | None = None, augmenter=None, front_band_hz=None) -> UtteranceData:
    """Read one corpus utterance (audio + hand-aligned phones); ``warps``: VTLP copies to add;
    ``augmenter``: an :class:`~aligner.features.augment.Augmenter` whose degraded copies to add
    (:func:`corpus_augmenter`).

    Without ``phone_set`` the transcript is a TIMIT ``.phn`` in a standard phone set (the 39
    classes); with one (a model's own, :func:`~aligner.phones.inventory.build_inventory`) it is
    a ``.phn`` or the interval tier ``tier`` of a TextGrid
    (:func:`~aligner.io.transcripts.read_reference_phones`), every label read in that set.
    ``front_band_hz``: hear the recording through this band first (a phone-line model,
    :func:`aligner.features.band.band_limited`); its degraded copies are made from that.
    """
    samples = through_band(load_audio(utt.audio), front_band_hz)
    frames = mfcc_features(samples)
    if phone_set is None:
        starts, _, labels = read_phn(utt.transcript)
        phone_set = get_phone_set("auto", labels, source=str(utt.transcript))
    else:
        from aligner.phones.inventory import normalize_symbol
        from aligner.errors import TranscriptError

        starts_s, ends_s, labels = read_reference_phones(utt.transcript, tier)
        labels = [normalize_symbol(s) for s in labels]
        duration = len(samples) / SAMPLE_RATE
        if ends_s[-1] > duration + 0.01:
            raise TranscriptError(f"{utt.transcript}: the phones run to {ends_s[-1]:.3f} s, past the end of "
                                  f"{utt.audio} ({duration:.3f} s)")
        if len(labels) > len(frames):
            raise TranscriptError(f"{utt.transcript}: {len(labels)} phones do not fit {len(frames)} frames of audio")
        phone_set.validate(labels, str(utt.transcript))
        starts = np.round(starts_s * SAMPLE_RATE)
    y = reference_starts(starts, len(frames))
    warped = [mfcc_features(samples, warp=w) for w in warps]
    degraded = [] if augmenter is None else [mfcc_features(c) for c in augmenter.copies(samples, utt.name, utt.speaker)]
    return UtteranceData(utt.name, utt.speaker, frames, phone_set.class_indices(labels), list(labels), y,
                         len(samples) / SAMPLE_RATE, warped, np.asarray(starts, np.float64) / SAMPLE_RATE,
                         degraded)


def load_utterances(utterances: list, progress: Progress = None, warps: tuple = DEFAULT_WARPS,
                    phone_set: PhoneSet | None = None, tier: str | None = None, augment=None,
                    front_band_hz=None, failed: Optional[list] = None) -> list:
    """Read every utterance, with its VTLP copies at ``warps`` for the classifier
    (``phone_set``, ``tier``: as for :func:`load_utterance`) and, with an ``augment``
    :class:`~aligner.features.augment.AugmentationRecipe`, its simulated-condition copies
    (:func:`corpus_augmenter` over these utterances); ``front_band_hz`` as for :func:`load_utterance`.
    ``failed``: a list that receives ``(utterance, one-line message)`` of every utterance that
    cannot be read (its audio, its phones, phones that do not fit it), which is then left out;
    None: the first such utterance raises its :class:`~aligner.errors.AlignerError`."""
    from aligner.errors import AlignerError

    augmenter = corpus_augmenter(utterances, augment) if augment is not None and augment.copies > 0 else None
    out = []
    for i, utt in enumerate(utterances):
        try:
            out.append(load_utterance(utt, tuple(warps), phone_set, tier, augmenter, front_band_hz))
        except AlignerError as exc:
            if failed is None:
                raise
            failed.append((utt, str(exc)))
        if progress:
            progress("features", i + 1, len(utterances))
    return out


def _read_again(utt: Utterance) -> np.ndarray:
    """An utterance's samples, read without a second warning of a repair (reading its clean
    copy warns)."""
    import warnings

    from aligner.io.audio import RepairedAudioWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        return load_audio(utt.audio)


def corpus_augmenter(utterances: list, recipe):
    """The :class:`~aligner.features.augment.Augmenter` of ``recipe`` whose babble talkers and
    speech spectrum come from these utterances only (a seeded choice of at most
    :data:`~aligner.features.augment.BABBLE_POOL_SIZE`), so held-out speakers never leak in."""
    from aligner.features.augment import BABBLE_POOL_SIZE, Augmenter, SpeechPool

    ordered = sorted(utterances, key=lambda u: u.name)
    rng = np.random.default_rng([recipe.seed, 2])
    chosen = sorted(rng.choice(len(ordered), min(BABBLE_POOL_SIZE, len(ordered)), replace=False))
    pool = SpeechPool.build([ordered[i].speaker for i in chosen], [_read_again(ordered[i]) for i in chosen])
    return Augmenter(recipe, pool)


def degraded_frames(utterances: list, recipe, progress: Progress = None, front_band_hz=None,
                    front_end=None) -> dict:
    """MFCC frames of the degraded copies ``recipe`` makes of every utterance (name -> list of
    (T, 42) arrays, T as the clean recording's), for utterances already read (e.g. one fold's
    training utterances); babble and speech spectrum as :func:`corpus_augmenter`'s;
    ``front_band_hz`` as for :func:`load_utterance` (the copies are made of the band-limited samples).
    ``front_end``: a model whose frames of each copy are taken
    (:meth:`~aligner.alignment.model.AlignmentModel.frames_of`: its band, dereverberation and
    noise suppression past their gates), as that front end will treat the recordings the
    trained classifier hears."""
    augmenter = corpus_augmenter(utterances, recipe)
    frames_of = mfcc_features if front_end is None else front_end.frames_of
    out = {}
    for i, utt in enumerate(utterances):
        samples = through_band(_read_again(utt), front_band_hz)
        out[utt.name] = [frames_of(c) for c in augmenter.copies(samples, utt.name, utt.speaker)]
        if progress:
            progress("simulated conditions", i + 1, len(utterances))
    return out


def duration_stats(data: list, inventory: PhoneInventory = TIMIT39_INVENTORY) -> DurationStats:
    """Per-class and per-symbol duration statistics (frames) of the reference alignments in ``data``,
    for the classes of ``inventory``."""
    by_class = [[] for _ in inventory.classes]
    by_symbol = {}
    for d in data:
        lengths = np.diff(np.append(d.y, len(d.frames)))
        for c, sym, n in zip(d.classes, d.symbols, lengths):
            by_class[c].append(int(n))
            by_symbol.setdefault(duration_key(sym), (int(c), []))[1].append(int(n))
    return DurationStats.fit(by_class, len(inventory), lengths_by_symbol=by_symbol,
                             silence_class=inventory.silence_index)


def fit_classifier(data: list, classifier_params: dict) -> FrameClassifier:
    """A frame classifier trained on ``data`` and the VTLP and simulated-condition copies the
    utterances carry."""
    clf = FrameClassifier(**classifier_params)
    frames, labels, groups = [], [], []
    for d in data:
        for f in [d.frames] + list(d.warped) + list(d.degraded):
            frames.append(f)
            labels.append(d.frame_labels)
            groups.append(d.name)
    clf.fit(frames, labels, groups)
    return clf


def out_of_fold_scores(data: list, n_folds: int, classifier_params: dict, progress: Progress = None,
                       copies: bool = False) -> tuple:
    """``(scores, copy_scores)``: the classifier scores (T, P) of every utterance from a classifier
    that did not see its speaker, and with ``copies`` those of each utterance's simulated-condition
    copies by the same classifier (``copy_scores[i]``, one per ``data[i].degraded``; empty lists
    without)."""
    folds = speaker_folds(data, n_folds)
    scores = [None] * len(data)
    copy_scores = [[] for _ in data]
    for f, held_out in enumerate(folds):
        train = [d for d in data if d.speaker not in held_out]
        clf = fit_classifier(train, classifier_params)
        for i, d in enumerate(data):
            if d.speaker in held_out:
                scores[i] = clf.scores(d.frames)
                if copies:
                    copy_scores[i] = [clf.scores(c) for c in d.degraded]
        if progress:
            progress("classifier folds", f + 1, len(folds))
    return scores, copy_scores


def condition_copy_rows(data: list, copy_scores: list) -> tuple:
    """``(rows, scores)``: each simulated-condition copy of ``data`` (``d.degraded``) as an
    utterance of its own for the refiner training: its frames, the same phones,
    reference starts and speaker, named ``NAME+copyJ``; ``copy_scores[i][j]``: the (T, P)
    scores of copy j of ``data[i]``."""
    rows, scores = [], []
    for d, cs in zip(data, copy_scores):
        for j, (frames, s) in enumerate(zip(d.degraded, cs)):
            rows.append(replace(d, name=f"{d.name}+copy{j}", frames=frames, warped=[], degraded=[]))
            scores.append(s)
    return rows, scores


def fit_boundary_refiner(model: AlignmentModel, prepared: "PreparedWeightTraining") -> BoundaryRefiner:
    """A :class:`BoundaryRefiner` fitted on every utterance of ``prepared`` decoded by ``model``
    from its DP input, built from out-of-fold scores (as for the weights), so the refiner learns
    the shifts the decoder needs on speakers the classifier has not seen.
    """
    features, shifts = [], []
    for d, x, s in zip(prepared.data, prepared.inputs, prepared.scores):
        if d.starts_s is None:
            raise ValueError(f"{d.name}: no hand-labelled times to fit the boundary refiner on")
        y = model.align_frames(x)
        features.append(boundary_features(s, d.frames, x.phone_classes, y, x.dur_mean, x.dur_std,
                                          model.inventory.broad_indices))
        shifts.append(1000.0 * (d.starts_s[1:] - phone_start_times(y)[1:]))
    return BoundaryRefiner().fit(features, shifts)


@dataclass
class PreparedWeightTraining:
    """Everything the weight training needs, computed once for any number of trainers.

    ``inputs[i]`` is the DP input of ``data[i]`` built from its out-of-fold classifier scores;
    ``train_idx`` / ``val_idx`` index the weight-training and validation utterances (speaker
    disjoint). ``classifier`` (trained on every utterance of ``data``) and ``durations`` are
    those of the models :func:`fit_weights` returns.
    """

    data: list
    inputs: list
    train_idx: list
    val_idx: list
    classifier: FrameClassifier
    durations: DurationStats
    classifier_params: dict
    n_folds: int  #: classifier folds of the out-of-fold scores (0: a separate classifier part)
    seconds: float  #: wall time of the preparation (classifiers and inputs), seconds
    scores: list = field(default_factory=list)  #: (T, C) out-of-fold classifier scores of ``data``
    inventory: PhoneInventory = TIMIT39_INVENTORY  #: the classes of ``data``'s labels
    phone_symbols: Optional[dict] = None  #: a model's own phone set (symbol -> class), or None
    #: the last ``copies`` rows of ``data`` (and ``inputs``, ``scores``) are simulated-condition
    #: copies of the recordings before them (:func:`condition_copy_rows`): the refiner trains on
    #: them too; ``train_idx`` and ``val_idx`` index recordings only
    copies: int = 0

    @property
    def recordings(self) -> list:
        """The rows of ``data`` that are recordings, not simulated-condition copies."""
        return self.data[:len(self.data) - self.copies]

    @property
    def speakers(self) -> list:
        return sorted({d.speaker for d in self.data})

    @property
    def validation_speakers(self) -> list:
        return sorted({self.data[i].speaker for i in self.val_idx})


def prepare_weight_training(
    data: list,
    classifier_params: Optional[dict] = None,
    n_folds: int = 4,
    n_val_speakers: int = 2,
    progress: Progress = None,
    classifier_data: Optional[list] = None,
    validation_speakers: Optional[set] = None,
    phone_set: Optional[PhoneSet] = None,
    condition_copies: bool = True,
) -> PreparedWeightTraining:
    """Duration statistics, out-of-fold scores and the final classifier of ``data``, once.

    ``n_val_speakers`` speakers (the last in sorted order) form the early-stopping validation
    set of the weight training; 0 disables it. ``validation_speakers`` names them instead.

    With ``classifier_data`` (utterances of other speakers, as in the orbit and DLM papers'
    TIMIT split) the classifier is trained once on those and scores every utterance of
    ``data``, instead of out-of-fold scores over ``data``; the duration statistics then come
    from both. ``phone_set``: the model's own phone set the utterances were read in
    (:func:`load_utterance`); None: the 39 classes.

    ``condition_copies``: the simulated-condition copies the utterances carry (``d.degraded``,
    ``aligner train --augment``) join the boundary refiner's training as utterances of their own
    (:func:`condition_copy_rows`), scored by the classifier that scores their recording, so a
    multi-condition model's refiner learns the shifts its decodes need in those conditions.
    The 7 weights still learn from the recordings only: on the copies too, their validation
    cost rose from the first epoch and the chosen epoch swung between folds (docs/results.md).
    False: the copies train the classifier alone. The duration statistics come from the
    recordings either way.
    """
    start = time.perf_counter()
    inventory = TIMIT39_INVENTORY if phone_set is None else phone_set.inventory
    phone_symbols = None if phone_set is None else {s: phone_set.class_of(s) for s in phone_set.symbols}
    classifier_params = dict(DEFAULT_CLASSIFIER_PARAMS, **(classifier_params or {}))
    if inventory is not TIMIT39_INVENTORY:
        classifier_params["n_classes"] = len(inventory)
    with_copies = condition_copies and any(d.degraded for d in data)
    if classifier_data:
        durations = duration_stats(list(classifier_data) + list(data), inventory)
        final_classifier = fit_classifier(classifier_data, classifier_params)
        scores = [final_classifier.scores(d.frames) for d in data]
        copy_scores = [[final_classifier.scores(c) for c in d.degraded] if with_copies else [] for d in data]
    else:
        durations = duration_stats(data, inventory)
        # the out-of-fold classifiers only score the training utterances for the weights and the
        # refiner: one network each, whatever the final classifier averages (a design measured so)
        scores, copy_scores = out_of_fold_scores(data, n_folds, dict(classifier_params, networks=1), progress,
                                                 copies=with_copies)
        final_classifier = fit_classifier(data, classifier_params)
    n_recordings = len(data)
    copy_rows, copy_row_scores = condition_copy_rows(data, copy_scores)
    data, scores = list(data) + copy_rows, list(scores) + copy_row_scores
    if progress:
        progress("final classifier", 1, 1)
    model = AlignmentModel(final_classifier, durations, np.zeros(7), inventory=inventory, phone_symbols=phone_symbols)
    inputs = [model.make_input(d.frames, d.classes, s, name=d.name, symbols=d.symbols)
              for d, s in zip(data, scores)]
    speakers = sorted({d.speaker for d in data})
    if validation_speakers is not None:
        val_speakers = set(validation_speakers)
    else:
        val_speakers = set(speakers[len(speakers) - n_val_speakers:]) if n_val_speakers else set()
    return PreparedWeightTraining(
        data, inputs,
        [i for i, d in enumerate(data[:n_recordings]) if d.speaker not in val_speakers],
        [i for i, d in enumerate(data[:n_recordings]) if d.speaker in val_speakers],
        final_classifier, durations, classifier_params, 0 if classifier_data else n_folds,
        time.perf_counter() - start, scores, inventory, phone_symbols, len(copy_rows))


def fit_weights(
    prepared: PreparedWeightTraining,
    trainer: str | Trainer = DEFAULT_TRAINER,
    trainer_params: Optional[dict] = None,
    task_params: Optional[dict] = None,
    epoch_callback=None,
    refine: bool = True,
) -> tuple:
    """Learn the 7 weights on ``prepared`` with ``trainer`` (any trainer of the learning core).

    ``trainer`` is a trainer's name, built with :data:`DEFAULT_TRAINER_PARAMS` overridden by
    ``trainer_params``, or an unfitted trainer, fitted with its own parameters (and
    ``trainer_params`` set on it). Every trainer starts from :data:`INITIAL_WEIGHTS` and
    early-stops on ``prepared``'s validation utterances. Returns ``(model, fitted_trainer)``;
    the model is :func:`weights_model`'s.
    """
    if isinstance(trainer, str):
        fitter = make_trainer(trainer, **dict(DEFAULT_TRAINER_PARAMS, **(trainer_params or {})))
    else:
        fitter = trainer.set_params(**(trainer_params or {}))
    data, inputs = prepared.data, prepared.inputs
    task = AlignmentTask(**(task_params or {}))
    fitter.fit(
        task,
        [inputs[i] for i in prepared.train_idx], [data[i].y for i in prepared.train_idx],
        [inputs[i] for i in prepared.val_idx], [data[i].y for i in prepared.val_idx],
        w0=INITIAL_WEIGHTS,
        callback=epoch_callback,
    )
    return weights_model(prepared, fitter, refine), fitter


def weights_model(prepared: PreparedWeightTraining, fitted: Trainer, refine: bool = True) -> AlignmentModel:
    """The alignment model of weights ``fitted.w_`` learnt on ``prepared`` (by :func:`fit_weights`
    or by any search over trainers fitted on the same data), with its training record.

    The model shares ``prepared``'s classifier and duration statistics. With ``refine``, a
    :class:`BoundaryRefiner` is fitted on the decodes of every utterance of ``prepared`` with its
    out-of-fold scores.
    """
    start = time.perf_counter()
    data = prepared.recordings
    model = AlignmentModel(prepared.classifier, prepared.durations, fitted.w_, inventory=prepared.inventory,
                           phone_symbols=prepared.phone_symbols)
    if refine:
        model.refiner = fit_boundary_refiner(model, prepared)
    model.training = {
        "utterances": len(data),
        "speakers": prepared.speakers,
        "validation_speakers": prepared.validation_speakers,
        "audio_seconds": round(float(sum(d.duration_s for d in data)), 2),
        "trainer": fitted.name,
        "trainer_params": plain_params(fitted),
        "classifier_params": prepared.classifier_params,
        "classifier_folds": prepared.n_folds,
        "vtlp_copies_per_utterance": len(data[0].warped) if data else 0,
        "degraded_copies_per_utterance": len(data[0].degraded) if data else 0,
        "refiner_training_copies": prepared.copies,
        "boundary_refinement": bool(refine),
        "best_epoch": fitted.best_epoch_,
        "history": fitted.history_dicts(),
        "decodes_per_update": fitted.decodes_per_update_,
        "seconds": round(prepared.seconds + fitted.fit_seconds_ + time.perf_counter() - start, 2),
    }
    return model


def train_alignment_model(
    data: list,
    trainer: str = DEFAULT_TRAINER,
    trainer_params: Optional[dict] = None,
    classifier_params: Optional[dict] = None,
    n_folds: int = 4,
    n_val_speakers: int = 2,
    task_params: Optional[dict] = None,
    progress: Progress = None,
    epoch_callback=None,
    refine: bool = True,
    eta0_grid: tuple = (),
    phone_set: Optional[PhoneSet] = None,
) -> tuple:
    """Train an :class:`AlignmentModel` on ``data`` (list of :class:`UtteranceData`).

    Returns ``(model, fitted_trainer)``. ``n_val_speakers`` speakers (the last in sorted order)
    form the early-stopping validation set of the weight training; 0 disables it. Equivalent
    to :func:`prepare_weight_training` then :func:`fit_weights` (``refine``: fit a
    :class:`BoundaryRefiner` too), except that when ``eta0_grid`` holds several step sizes,
    ``trainer_params`` leave ``eta0`` open and there are validation speakers, every step size of
    the grid is fitted and the one with the lowest validation cost kept. ``phone_set``: the
    model's own phone set ``data`` was read in (:func:`load_utterance`); None: the 39 classes.
    """
    prepared = prepare_weight_training(data, classifier_params, n_folds, n_val_speakers, progress,
                                       phone_set=phone_set)
    params = dict(trainer_params or {})
    if "eta0" in params or not prepared.val_idx or len(eta0_grid) < 2:
        return fit_weights(prepared, trainer, params, task_params, epoch_callback, refine)
    inputs, data = prepared.inputs, prepared.data
    candidates = param_grid(make_trainer(trainer, **dict(DEFAULT_TRAINER_PARAMS, **params)), {"eta0": list(eta0_grid)})
    search = ValidationSearch(candidates).fit(
        AlignmentTask(**(task_params or {})),
        [inputs[i] for i in prepared.train_idx], [data[i].y for i in prepared.train_idx],
        [inputs[i] for i in prepared.val_idx], [data[i].y for i in prepared.val_idx],
        w0=INITIAL_WEIGHTS,
        progress=(lambda row: progress("step sizes", row["candidate"] + 1, len(eta0_grid))) if progress else None,
    )
    fitted = search.best_estimator_
    model = weights_model(prepared, fitted, refine)
    model.training["eta0_validation_costs"] = {
        str(r["params"]["eta0"]): round(float(r["val_cost_mean"]), 5) for r in search.candidate_results_}
    return model, fitted


@dataclass
class TrainingCorpus:
    """The utterances of a training corpus and how their phones are read: ``phone_set`` None
    for TIMIT ``.phn`` in a standard phone set (the 39 classes); else the model's own set, and
    ``choice`` the :class:`~aligner.phones.inventory.InventoryChoice` that made it."""

    utterances: list
    phone_set: Optional[PhoneSet] = None
    choice: object = None
    tier: Optional[str] = None
    #: ``(utterance, one-line message)`` of the files left out: no phones tier, an empty tier, a
    #: file that is no readable TextGrid
    failed: list = field(default_factory=list)


def read_training_corpus(corpus_dir, phones_tier: Optional[str] = None, phone_classes=None,
                         phone_code: str = "auto", min_class_tokens: Optional[int] = None) -> TrainingCorpus:
    """Find a corpus's hand-aligned utterances and decide how to read their phones.

    TIMIT ``.phn`` files whose symbols are TIMIT-61 (or ARPAbet, or the 39 classes) train a
    39-class model, as the shipped one. TextGrids (the interval tier ``phones_tier``, default
    ``phones``; MFA's layout, speakers from folders), or any transcripts when ``phone_classes``
    (a file path or a :func:`~aligner.phones.inventory.read_phone_classes` table) or a
    ``phone_code`` other than ``auto`` is given, train a model of the data's own phones
    (:func:`~aligner.phones.inventory.build_inventory`). Raises an
    :class:`~aligner.errors.AlignerError` naming the corpus or the file at fault; a TextGrid
    that cannot be read, has no phones tier or an empty one is left out and listed in
    :attr:`TrainingCorpus.failed` (an error when no file is left).
    """
    from aligner.phones.inventory import (MIN_CLASS_TOKENS, build_inventory, count_symbols, normalize_symbol,
                                             read_phone_classes)
    from aligner.errors import AlignerError, TranscriptError
    from aligner.io.corpus import find_utterances
    from aligner.phones.sets import model_phone_set

    textgrid = (".TextGrid", ".textgrid")
    utterances = [] if phones_tier is not None else find_utterances(corpus_dir, (".phn",))
    if not utterances:
        utterances = find_utterances(corpus_dir, textgrid)
    if not utterances:
        raise AlignerError(f"{corpus_dir}: no audio file with a .phn or TextGrid of hand-aligned phones beside it")
    own = phone_classes is not None or phone_code != "auto" or utterances[0].transcript.suffix.lower() != ".phn"
    if not own:
        try:
            for u in utterances:
                get_phone_set("auto", read_phn(u.transcript)[2], source=str(u.transcript))
        except TranscriptError:
            own = True  # symbols of no standard set: the data's own phones
    if not own:
        return TrainingCorpus(utterances)
    where, label_lists, readable, failed = {}, [], [], []
    for u in utterances:
        try:
            label_lists.append(read_reference_phones(u.transcript, phones_tier)[2])
        except TranscriptError as exc:  # the file is left out, named; the others train
            failed.append((u, str(exc)))
            continue
        readable.append(u)
        for s in label_lists[-1]:
            where.setdefault(normalize_symbol(s), str(u.transcript))
    if not readable:
        raise AlignerError(f"{corpus_dir}: no file's phones can be read ({failed[0][1]})")
    counts = count_symbols(label_lists)
    table = read_phone_classes(phone_classes) if isinstance(phone_classes, (str, os.PathLike)) else phone_classes
    choice = build_inventory(counts, phone_code, table,
                             MIN_CLASS_TOKENS if min_class_tokens is None else min_class_tokens, where)
    return TrainingCorpus(readable, model_phone_set(choice.inventory, choice.symbol_class), choice, phones_tier,
                          failed)
