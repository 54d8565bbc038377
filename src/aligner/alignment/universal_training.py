"""Training a :class:`~aligner.alignment.universal.UniversalModel` from hand-aligned phones in IPA.

``aligner train --universal CORPUS_DIR OUT_DIR``: TextGrids (a ``phones``/``phone`` tier, or
``--phones-tier``; empty intervals are silence) in IPA or X-SAMPA beside 16 kHz audio. A
corpus of several languages keeps each in its own folder directly under CORPUS_DIR: that
folder is the recording's *language* (its group), the folder holding the file its speaker.

1. Every phone is read as IPA (:func:`aligner.phones.ipa.read_phone`); a file with a phone that
   cannot be read, no phones tier, an empty tier or phones past its audio is left out, named.
2. Durations and the phone prior by features (:class:`~aligner.alignment.universal.FeatureDurations`,
   :class:`~aligner.alignment.universal.PhonePrior`) from every token.
3. The composed frame scorer is trained on every frame of every recording (and its VTLP copies,
   and degraded ones with :attr:`UniversalSettings.conditions`),
   each frame labelled with its phone's composition vector; its early stopping and temperature
   use held-out *languages*, so it is tuned to phones and voices it has not heard.
4. Out-of-fold scores for the 7 weights and the refiner: the languages are split into
   ``n_folds`` groups, each scored by a scorer trained on the others.
5. The 7 weights by any trainer of the learning core (:mod:`aligner.learn`) on the segmental
   task (:class:`~aligner.alignment.decoding.task.AlignmentTask`) of each recording's view,
   early-stopped on validation languages; then the boundary refiner on their decodes.
6. The model's scorer: the final scorer (step 3, trained on every language) and the ``n_folds``
   out-of-fold scorers of step 4 averaged into one network
   (:func:`~aligner.features.composed_network.averaged_network`), an ensemble of scorers each
   trained without some languages; then the units positive on no training frame left out, and
   all but the :attr:`UniversalSettings.scorer_units` that move the logits most
   (:func:`~aligner.features.composed_network.pruned_network`); with
   :attr:`UniversalSettings.distil_units`, that network is then distilled into one of fewer units
   (:func:`~aligner.features.distil.distil_composed_network`), a cheaper scorer of every frame.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from aligner.alignment.decoding.boundary_evidence import BoundaryDetector
from aligner.alignment.decoding.refinement import BoundaryRefiner, boundary_features
from aligner.alignment.decoding.task import AlignmentTask
from aligner.alignment.training import DEFAULT_TRAINER_PARAMS, DEFAULT_WARPS, INITIAL_WEIGHTS, reference_starts
from aligner.alignment.universal import SILENCE_CLASS, FeatureDurations, PhonePrior, UniversalModel
from aligner.errors import AlignerError, TranscriptError
from aligner.features.composed_network import (ComposedNetwork, averaged_network, mean_activations, pruned_network,
                                               unit_contributions)
from aligner.features.denoise import DenoiseSettings
from aligner.features.distil import distil_composed_network
from aligner.features.mfcc import mfcc_features
from aligner.frames import SAMPLE_RATE, phone_start_times
from aligner.io.audio import load_audio
from aligner.io.corpus import find_utterances
from aligner.io.transcripts import read_reference_phones
from aligner.learn import make_trainer, plain_params
from aligner.phones.ipa import composition_matrix, read_ipa

Progress = Optional[Callable[[str, int, int], None]]
#: the trainer of a universal model's 7 weights (chosen on validation languages, docs/results.md:
#: on the out-of-fold scores of languages it has not heard, the orbit updates did not lower the
#: validation languages' cost, while the structural SVM's did)
UNIVERSAL_TRAINER = "svm"

#: the VTLP warps of the universal scorer's copies of every recording: the English model's two (four, 0.85-1.15,
#: gained on the validation folds but not on the test folds or on English from IPA: CHANGELOG 0.18.0)
UNIVERSAL_WARPS = DEFAULT_WARPS

#: the noise floor (dB below a recording's mean frame energy, :func:`~aligner.features.denoise.noise_floor_db`)
#: from which a universal model's views suppress stationary noise: the English expert's gate (-31.6 dB)
#: takes three in four clean field recordings of the validation languages (words of about a second, a
#: noise floor of -27 dB at the median), this one about one in twenty, and their copies with white
#: noise at 10 and 5 dB all (floors of -11 and -7 dB); with noise at 20 dB (-20 dB) few
UNIVERSAL_DENOISE_GATE_DB = -15.0


@dataclass
class UniversalSettings:
    """The design of a universal model's training (defaults chosen on validation languages,
    docs/results.md): the scorer's ``context`` frames on either side of a frame, ``hidden`` units, L2
    ``alpha`` (``residual_alpha`` > 0: each training phone also a logit of its own,
    :class:`~aligner.features.composed_network.ComposedNetwork`),
    at most ``epochs``, ``refit_scorer``: then trained again on every language, the held-out ones
    included, for the epochs they chose; ``balanced_scorer_groups``: each held-out language weighs
    the same in the loss that chooses them; trained on
    at most ``max_train_frames`` frames; ``warps``: VTLP copies of every recording for the scorer;
    ``conditions``: the recipe (an :class:`~aligner.features.augment.AugmentationRecipe` as a dict) of
    degraded copies it also trains on, made when the corpus is read (:func:`read_universal_corpus`;
    None, the default: none; a mild recipe measured no better, CHANGELOG 0.16.0);
    ``prior``: divide the scores by each phone's prior; ``background``: how many of the commonest
    training phones every view also scores while the weights and the refiner train;
    ``alignment_background``: how many of those the trained model's views still score when they
    align (None: all; 0: the transcript's phones alone, chosen on validation languages: CHANGELOG
    0.15.0); ``duration_spread``: the views' duration deviations
    widened by this factor (:class:`~aligner.alignment.universal.UniversalModel`); ``tempo_range``:
    the views' second pass at a recording's own tempo, clipped to this range (None: one pass);
    ``denoise_gate_db``: the trained model's views suppress the stationary noise of a recording whose
    noise floor (:func:`~aligner.features.denoise.noise_floor_db`) is at least this, dB (None: never;
    :attr:`~aligner.alignment.universal.UniversalModel.front_denoise`; nothing is denoised while it
    trains); ``n_folds`` language folds of the out-of-fold scores;
    ``n_val_groups`` languages of the weights' early stopping; the boundary refiner's largest shift
    ``refiner_max_shift_ms`` and the clip of its training shifts ``refiner_clip_ms``; ``ensemble``:
    the model scores frames by the final scorer and the ``n_folds`` out-of-fold scorers averaged
    (:func:`~aligner.features.composed_network.averaged_network`, one network of ``(n_folds + 1)
    hidden`` units; the weights and the refiner still train on the out-of-fold scores);
    the model's scorer then keeps only the units positive on some training frame (the others
    change no training frame's score), and of those at most ``scorer_units`` (None: all), the
    ones that move the logits most (:func:`~aligner.features.composed_network.unit_contributions`;
    768 chosen on the validation folds, where 512 lost accuracy and every active unit gained none:
    CHANGELOG 0.17.0); ``distil_units``: that network (the teacher) is then distilled into a student of
    at most this many ReLU units (None: not; :func:`~aligner.features.distil.distil_composed_network`),
    trained to reproduce the teacher's image of every training frame and its copies, starting from the
    teacher's ``distil_units`` units that move the logits most, for at most ``distil_epochs`` epochs
    and ``distil_seconds`` seconds, on at most ``distil_max_frames`` frames (None: all); the weights
    and the refiner are those trained on the scorers' out-of-fold scores either way;
    ``boundary_units``: the views' boundary detector (:mod:`aligner.alignment.decoding.boundary_evidence`)
    has this many ReLU units (None: no detector), L2 penalty ``boundary_alpha``, its epochs chosen on
    ``boundary_val_groups`` languages held out, and each boundary's
    score gains ``boundary_weight`` times its log-odds (:func:`fit_boundary_detector`; 256 units
    and weight 1 chosen on validation languages, docs/results.md); ``trainer`` and its parameters."""

    context: int = 4
    hidden: int = 512
    alpha: float = 3.0
    residual_alpha: float = 0.0
    refit_scorer: bool = True
    balanced_scorer_groups: bool = True
    epochs: int = 40
    max_train_frames: int = 200_000
    warps: tuple = UNIVERSAL_WARPS
    conditions: Optional[dict] = None
    prior: bool = True
    background: int = 60
    alignment_background: int | None = 0
    duration_spread: float = 2.0
    tempo_range: tuple | None = (0.7, 1.4)
    denoise_gate_db: Optional[float] = UNIVERSAL_DENOISE_GATE_DB
    n_folds: int = 3
    n_val_groups: int = 4
    refiner_max_shift_ms: float = 20.0
    refiner_clip_ms: float = 25.0
    ensemble: bool = True
    scorer_units: Optional[int] = 768
    distil_units: Optional[int] = None
    distil_epochs: int = 30
    distil_seconds: float = 1800.0
    distil_max_frames: Optional[int] = None
    trainer: str = UNIVERSAL_TRAINER
    trainer_params: dict = field(default_factory=dict)
    seed: int = 0
    boundary_units: Optional[int] = 256
    boundary_alpha: float = 1e-2
    boundary_weight: float = 1.0
    boundary_val_groups: int = 6

    def __post_init__(self):
        if self.boundary_units is not None and (isinstance(self.boundary_units, bool) or self.boundary_units < 1
                                                or int(self.boundary_units) != self.boundary_units):
            raise ValueError(f"boundary_units must be None or a whole number >= 1, got {self.boundary_units!r}")
        if self.distil_units is not None:
            if isinstance(self.distil_units, bool) or int(self.distil_units) != self.distil_units \
                    or self.distil_units < 1:
                raise ValueError(f"distil_units must be None or a whole number >= 1, got {self.distil_units!r}")
            if self.scorer_units is not None and self.distil_units >= self.scorer_units:
                raise ValueError(f"distil_units ({self.distil_units}) must be fewer than scorer_units "
                                 f"({self.scorer_units}), the teacher's")
            if self.residual_alpha > 0:
                raise ValueError("distil_units: a scorer with residual logits (residual_alpha > 0) is not distilled")
        if self.distil_epochs < 1 or not self.distil_seconds > 0:
            raise ValueError("distil_epochs must be >= 1 and distil_seconds > 0")
        if self.distil_max_frames is not None and self.distil_max_frames < 1:
            raise ValueError("distil_max_frames must be None or >= 1")

    def network(self, seed_offset: int = 0) -> ComposedNetwork:
        return ComposedNetwork(context=self.context, hidden=self.hidden, alpha=self.alpha, epochs=self.epochs,
                               max_train_frames=self.max_train_frames, seed=self.seed + seed_offset,
                               residual_alpha=self.residual_alpha, refit=self.refit_scorer,
                               balanced_groups=self.balanced_scorer_groups)


@dataclass
class UniversalUtterance:
    """One hand-aligned recording, in frames: its ``group`` (language), ``symbols`` as written
    (silences as ``sil``), their canonical IPA ``phones``, reference start frames ``y`` (K,) and
    times ``starts_s`` (K,), MFCC ``frames`` (T, 42) and the scorer's further copies ``warped``: VTLP
    copies, then degraded ones (:attr:`UniversalSettings.conditions`)."""

    name: str
    speaker: str
    group: str
    frames: np.ndarray
    symbols: list
    phones: list
    y: np.ndarray
    starts_s: np.ndarray
    duration_s: float
    warped: list = field(default_factory=list)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(np.append(self.y, len(self.frames)))


def utterance_group(name: str, speaker: str) -> str:
    """The language of a corpus recording named ``name`` (its path below the corpus, no suffix):
    the folder directly under the corpus, or the speaker for a file in no folder."""
    parts = Path(name).parts
    return parts[0] if len(parts) > 1 else speaker


def read_universal_utterance(utt, code: str = "ipa", tier: str | None = None,
                             warps: tuple = UNIVERSAL_WARPS, augmenter=None) -> UniversalUtterance:
    """One corpus utterance (:class:`~aligner.io.corpus.Utterance`) read for the universal model;
    a one-line :class:`~aligner.errors.AlignerError` naming the file when it cannot be.
    ``augmenter``: an :class:`~aligner.features.augment.Augmenter` whose degraded copies' MFCC
    frames follow the VTLP copies in ``warped`` (None: none)."""
    starts_s, ends_s, labels = read_reference_phones(utt.transcript, tier)
    symbols = [lab.strip() or SILENCE_CLASS for lab in labels]
    segments = UniversalModel.read_phones(symbols, code, str(utt.transcript))
    samples = load_audio(utt.audio)
    duration = len(samples) / SAMPLE_RATE
    if ends_s[-1] > duration + 0.01:
        raise TranscriptError(f"{utt.transcript}: the phones run to {ends_s[-1]:.3f} s, past the end of {utt.audio} "
                              f"({duration:.3f} s)")
    frames = mfcc_features(samples)
    if len(symbols) > len(frames):
        raise TranscriptError(f"{utt.transcript}: {len(symbols)} phones do not fit {len(frames)} frames of audio")
    y = reference_starts(np.round(starts_s * SAMPLE_RATE), len(frames))
    group = utterance_group(utt.name, utt.speaker)
    copies = [mfcc_features(samples, warp=w) for w in warps]
    if augmenter is not None:
        copies += [mfcc_features(c) for c in augmenter.copies(samples, str(utt.name), group)]
    return UniversalUtterance(utt.name, utt.speaker, group, frames, symbols,
                              [SILENCE_CLASS if s.silence else s.ipa for s in segments], y,
                              np.asarray(starts_s, float), duration, copies)


def read_universal_corpus(corpus_dir, code: str = "ipa", tier: str | None = None, warps: tuple = UNIVERSAL_WARPS,
                          progress: Progress = None, failed: Optional[list] = None,
                          conditions: Optional[dict] = None) -> list:
    """Every readable recording of a TextGrid corpus (:func:`read_universal_utterance`);
    ``failed`` receives ``(utterance, message)`` of the others (None: the first raises);
    ``conditions``: the recipe of the degraded copies (:attr:`UniversalSettings.conditions`), an
    :class:`~aligner.features.augment.AugmentationRecipe` or its dict; None: none. Each copy
    depends on the recipe and the recording's name alone."""
    utterances = find_utterances(corpus_dir, (".TextGrid", ".textgrid"))
    if not utterances:
        raise AlignerError(f"{corpus_dir}: no audio file with a TextGrid of hand-aligned phones beside it")
    augmenter = _augmenter(conditions)
    out = []
    for i, utt in enumerate(utterances):
        try:
            out.append(read_universal_utterance(utt, code, tier, warps, augmenter))
        except AlignerError as exc:
            if failed is None:
                raise
            failed.append((utt, str(exc)))
        if progress:
            progress("features", i + 1, len(utterances))
    if not out:
        raise AlignerError(f"{corpus_dir}: no recording could be read ({failed[0][1] if failed else ''})")
    return out


def _augmenter(conditions):
    """The :class:`~aligner.features.augment.Augmenter` of a recipe (an
    :class:`~aligner.features.augment.AugmentationRecipe` or its dict; a bad one, or rooms without
    pyroomacoustics, is a one-line :class:`~aligner.features.augment.RecipeError`), or None for
    None or a recipe of no copies."""
    if conditions is None:
        return None
    from aligner.features.augment import AugmentationRecipe, Augmenter

    recipe = conditions if isinstance(conditions, AugmentationRecipe) else \
        AugmentationRecipe.from_dict(dict(conditions), "the universal scorer's conditions")
    return Augmenter(recipe) if recipe.copies else None


def phone_statistics(data: list) -> tuple:
    """``(FeatureDurations, PhonePrior)`` of the reference alignments of ``data`` (each token's
    length by its phone and whether a pause, or the end, follows it)."""
    lengths: dict = {}
    frames: dict = {}
    for d in data:
        K = len(d.phones)
        for k, (p, n) in enumerate(zip(d.phones, d.lengths)):
            if p == SILENCE_CLASS:
                final = k == 0 or k == K - 1  # an utterance's edge, not a pause
            else:
                final = k == K - 1 or d.phones[k + 1] == SILENCE_CLASS  # before a pause: lengthened
            lengths.setdefault((p, final), []).append(int(n))
            frames[p] = frames.get(p, 0) + int(n)
    return FeatureDurations.fit(lengths), PhonePrior.fit(frames)


def fit_scorer(data: list, settings: UniversalSettings, seed_offset: int = 0, progress=None) -> ComposedNetwork:
    """A composed frame scorer trained on ``data`` (and their VTLP copies), early-stopped on held-out languages."""
    classes = sorted({p for d in data for p in d.phones})
    index = {c: i for i, c in enumerate(classes)}
    Phi = composition_matrix([read_ipa(c) for c in classes])
    frames, labels, groups = [], [], []
    for d in data:
        frame_labels = np.repeat(np.array([index[p] for p in d.phones]), d.lengths)
        for f in [d.frames] + list(d.warped):
            frames.append(f)
            labels.append(frame_labels)
            groups.append(d.group)
    return settings.network(seed_offset).fit(frames, labels, Phi, groups, progress=progress, class_names=classes)


def group_folds(groups, n_folds: int, seed: int = 0) -> list:
    """The sorted ``groups`` (languages) shuffled by ``seed`` and dealt into ``n_folds`` lists."""
    names = sorted(set(groups))
    if not 2 <= n_folds <= len(names):
        raise ValueError(f"need 2 <= n_folds <= {len(names)} languages, got {n_folds}")
    order = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
    return [sorted(order[i::n_folds]) for i in range(n_folds)]


def _model(network, durations, prior, settings, weights, background) -> UniversalModel:
    return UniversalModel(network, durations, np.asarray(weights, float), prior=prior if settings.prior else None,
                          background=background, duration_spread=settings.duration_spread,
                          tempo_range=None if settings.tempo_range is None else tuple(settings.tempo_range))


def decoding_inputs(model: UniversalModel, data: list) -> tuple:
    """``(inputs, scores, views)`` of each recording of ``data`` under ``model``: the DP input of
    its view (the classifier scores (T, C), its phones' classes and durations)."""
    inputs, scores, views = [], [], []
    for d in data:
        view = model.view(d.symbols)
        s = view.classifier.scores(d.frames)
        classes = view.phone_set.class_indices(d.symbols)
        inputs.append(view.make_input(d.frames, classes, s, name=d.name))
        scores.append(s)
        views.append(view)
    return inputs, scores, views


def train_universal_model(data: list, settings: UniversalSettings | None = None, progress: Progress = None,
                          epoch_callback=None, scorers=None) -> UniversalModel:
    """A :class:`UniversalModel` trained on ``data`` (:class:`UniversalUtterance` of several languages;
    module docstring). ``scorers``: a mapping (e.g. a dict, or a cache on disk) consulted and filled
    with the frame scorers, keyed by the languages each was trained without (``""``: the final
    one), so that designs differing only after the scorers (the prior, the background phones, the
    weights' trainer) share them; None: trained here."""
    settings = settings or UniversalSettings()
    start = time.perf_counter()
    durations, prior = phone_statistics(data)
    frame_counts = dict(zip(prior.classes, np.exp(prior.log_prior)))
    background = tuple(sorted((c for c in frame_counts if c != SILENCE_CLASS), key=lambda c: -frame_counts[c])
                       [:settings.background])
    groups = sorted({d.group for d in data})
    n_folds = min(settings.n_folds, len(groups))
    folds = group_folds(groups, n_folds, settings.seed)
    oof_inputs, oof_scores, oof_views = [None] * len(data), [None] * len(data), [None] * len(data)
    oof_networks = []
    for f, held in enumerate(folds):
        train = [d for d in data if d.group not in held]
        key = " ".join(held)
        net = None if scorers is None else scorers.get(key)
        if net is None:
            net = fit_scorer(train, settings, seed_offset=1 + f)
            if scorers is not None:
                scorers[key] = net
        oof_networks.append(net)
        model = _model(net, durations, prior, settings, INITIAL_WEIGHTS, background)
        idx = [i for i, d in enumerate(data) if d.group in held]
        inputs, scores, views = decoding_inputs(model, [data[i] for i in idx])
        for i, x, s, v in zip(idx, inputs, scores, views):
            oof_inputs[i], oof_scores[i], oof_views[i] = x, s, v
        if progress:
            progress("scorer folds", f + 1, n_folds)
    network = None if scorers is None else scorers.get("")
    if network is None:
        network = fit_scorer(data, settings)
        if scorers is not None:
            scorers[""] = network
    if progress:
        progress("final scorer", 1, 1)
    # the 7 weights, early-stopped on validation languages
    rng = np.random.default_rng(settings.seed + 7)
    val_groups = set(rng.permutation(groups)[:min(settings.n_val_groups, len(groups) - 1)]) \
        if settings.n_val_groups else set()
    train_idx = [i for i, d in enumerate(data) if d.group not in val_groups]
    val_idx = [i for i, d in enumerate(data) if d.group in val_groups]
    trainer = make_trainer(settings.trainer, **dict(DEFAULT_TRAINER_PARAMS, **settings.trainer_params))
    trainer.fit(AlignmentTask(), [oof_inputs[i] for i in train_idx], [data[i].y for i in train_idx],
                [oof_inputs[i] for i in val_idx], [data[i].y for i in val_idx], w0=INITIAL_WEIGHTS,
                callback=epoch_callback)
    weights = trainer.w_
    # the refiner, on the decodes of every recording with its out-of-fold scores
    features, shifts = [], []
    for d, x, s, v in zip(data, oof_inputs, oof_scores, oof_views):
        y = AlignmentTask().decode(x, weights)
        features.append(boundary_features(s, d.frames, x.phone_classes, y, x.dur_mean, x.dur_std,
                                          v.inventory.broad_indices))
        shifts.append(1000.0 * (d.starts_s[1:] - phone_start_times(y)[1:]))
    refiner = BoundaryRefiner(target_clip_ms=settings.refiner_clip_ms,
                              max_shift_ms=settings.refiner_max_shift_ms).fit(features, shifts)
    kept = background if settings.alignment_background is None else background[:settings.alignment_background]
    scorer = averaged_network([network] + oof_networks) if settings.ensemble else network
    activations = mean_activations(scorer, [f for d in data for f in [d.frames, *d.warped]])
    keep = activations > 0
    if settings.scorer_units is not None and keep.sum() > settings.scorer_units:
        keep = _top_units(np.where(keep, unit_contributions(scorer, activations), -np.inf), settings.scorer_units)
    scorer = pruned_network(scorer, keep)
    distilled = None
    if settings.distil_units is not None and scorer.hidden > settings.distil_units:
        scorer, distilled = distilled_scorer(scorer, activations[keep], data, settings, progress)
    model = _model(scorer, durations, prior, settings, weights, kept)
    model.refiner = refiner
    if settings.boundary_units is not None:
        model.boundary_detector = fit_boundary_detector(data, settings)
        if progress:
            progress("boundary detector", 1, 1)
    if settings.denoise_gate_db is not None:  # the aligning model's front end, not the training's
        model.front_denoise = DenoiseSettings(gate_db=float(settings.denoise_gate_db))
    model.training = {
        "utterances": len(data), "languages": groups, "validation_languages": sorted(val_groups),
        "scorer_folds": [sorted(f) for f in folds],
        "audio_seconds": round(float(sum(d.duration_s for d in data)), 2),
        "phones": len(durations.classes), "settings": {k: (list(v) if isinstance(v, tuple) else v)
                                                       for k, v in vars(settings).items()},
        "trainer": trainer.name, "trainer_params": plain_params(trainer), "best_epoch": trainer.best_epoch_,
        "history": trainer.history_dicts(), "scorer_best_epoch": network.best_epoch_,
        "scorer_history": network.history_, "seconds": round(time.perf_counter() - start, 1),
    }
    if distilled is not None:
        model.training["distil"] = distilled
    return model


def fit_boundary_detector(data: list, settings: UniversalSettings) -> BoundaryDetector:
    """The views' :class:`~aligner.alignment.decoding.boundary_evidence.BoundaryDetector`, trained on
    every recording of ``data`` and its copies (their hand-labelled start frames; each language a
    group, :attr:`UniversalSettings.boundary_val_groups` of them held out to choose its epochs), with
    :attr:`UniversalSettings.boundary_units`, ``boundary_alpha`` and ``boundary_weight``. It reads
    frames alone, so it can be fitted to a model trained without one."""
    frames, boundaries, groups = [], [], []
    for d in data:
        for f in [d.frames, *d.warped]:
            frames.append(f)
            boundaries.append(d.y[1:])
            groups.append(d.group)
    detector = BoundaryDetector(hidden=int(settings.boundary_units), alpha=settings.boundary_alpha,
                                n_val_groups=settings.boundary_val_groups, weight=settings.boundary_weight,
                                seed=settings.seed)
    return detector.fit(frames, boundaries, groups)


def distilled_scorer(teacher: ComposedNetwork, activations: np.ndarray, data: list, settings: UniversalSettings,
                     progress: Progress = None) -> tuple:
    """``(student, record)``: ``teacher`` (the model's averaged and pruned scorer) distilled into at
    most :attr:`UniversalSettings.distil_units` units on every frame of ``data`` and its copies
    (each recording's copies a group), starting from the teacher's units that move the logits most
    (``activations`` (hidden,): each unit's mean activation on those frames,
    :func:`~aligner.features.composed_network.mean_activations`); ``record``: a summary for the
    model's training record."""
    first = _top_units(unit_contributions(teacher, activations), settings.distil_units)
    frames, groups = [], []
    for d in data:
        for f in [d.frames, *d.warped]:
            frames.append(f)
            groups.append(d.name)

    def report(epoch, train_loss, held_loss):
        if progress:
            progress("distil", epoch, settings.distil_epochs)

    student = distil_composed_network(teacher, frames, settings.distil_units, groups,
                                      initial=pruned_network(teacher, first), epochs=settings.distil_epochs,
                                      max_frames=settings.distil_max_frames, max_seconds=settings.distil_seconds,
                                      seed=settings.seed, progress=report)
    record = {"units": student.hidden, "teacher_units": teacher.hidden, "epoch": student.distil_epochs_,
              "held_loss": round(student.distil_loss_, 6), "seconds": round(student.distil_seconds_, 1)}
    return student, record


def _top_units(contribution: np.ndarray, n: int) -> np.ndarray:
    """(hidden,) bool: the ``n`` units of largest ``contribution`` (hidden,) (ties in unit order)."""
    keep = np.zeros(contribution.shape[0], bool)
    keep[np.argsort(-contribution, kind="stable")[:n]] = True
    return keep
