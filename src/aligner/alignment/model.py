"""A trained forced aligner: frame classifier + phone-duration statistics + the 7 weights.

:class:`AlignmentModel` turns a recording's samples and its phone symbols into phone
intervals in seconds: 10 ms MFCC frames (:mod:`aligner.features.mfcc`), classifier scores
(:mod:`aligner.features.frame_classifier`), the 7-dim feature map and its segmental DP
(:mod:`aligner.alignment.decoding.task`), then, when the model has one, a sub-frame shift of every
boundary (:mod:`aligner.alignment.decoding.refinement`). It saves to and loads from a model bundle
(:mod:`aligner.io.bundles`), without pickle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from aligner.alignment.conditions import REVERB_ROUTING_MIN_SECONDS, check_gates, level_statistics, posterior_entropy
from aligner.alignment.decoding.boundary_evidence import BoundaryDetector, check_detector, with_boundary_evidence
from aligner.alignment.decoding.refinement import BoundaryRefiner
from aligner.alignment.durations import (  # noqa: F401  (re-exported: a model's duration table)
    MAX_PHONE_FRAMES, MAX_SILENCE_FRAMES, MIN_SYMBOL_COUNT, SILENCE_CLASS, DurationStats, duration_key)
from aligner.alignment.decoding.silent_edges import align_reviewed_pauses_cut
from aligner.features.band import check_band, through_band
from aligner.features.denoise import DenoiseSettings, denoised_samples, is_noisy
from aligner.features.dereverb import DereverbSettings, dereverberated_samples, is_reverberant
from aligner.features.frame_classifier import FrameClassifier
from aligner.errors import AlignmentError, ModelError
from aligner.features.mfcc import mfcc_features
from aligner.frames import FRAME_SHIFT, SAMPLE_RATE, WINDOW, n_frames, phone_start_times
from aligner.io.audio import samples_between
from aligner.io.textgrids import Interval
from aligner.io.bundles import ALIGNMENT_KIND, load_bundle, save_bundle, whole_number
from aligner.phones.sets import TIMIT39_INVENTORY, PhoneInventory, PhoneSet, model_phone_set
from aligner.alignment.decoding.stop_closures import (expand_stop_closures, merge_stop_closures,
                                                     pauses_as_two_silences, should_split_stops)
from aligner.alignment.decoding.task import (FEATURE_NAMES, AlignmentInput, AlignmentTask, check_fits, decode_banded,
                                   dp_cells, make_alignment_input, phrase_final_lengthened, with_durations)

#: recordings longer than this (frames) are reviewed in blocks of phones (:meth:`AlignmentModel.review`)
REVIEW_BLOCK_FRAMES = 60_000
REVIEW_BLOCK_PHONES = 2000
REVIEW_OVERLAP_PHONES = 20
#: a recording of this many phones or more has its transcript checked in stretches of about
#: CHECK_BLOCK_PHONES phones, the size of the check's training utterances
#: (:func:`~aligner.alignment.review.confidence.recording_match`); a shorter one whole
CHECK_WHOLE_MAX_PHONES = 160
CHECK_BLOCK_PHONES = 40
#: half-width (frames) of the band around the first pass's starts within which
#: :meth:`AlignmentModel.decode_phones` first searches (doubled while it binds); None: the exact DP
PHONE_BAND_FRAMES: int | None = 20
#: the score of a class outside a transcript and :attr:`AlignmentModel.always_scored` (log units;
#: far below any log posterior, finite so that cumulative sums stay finite)
UNSCORED = -1.0e4


#: what a condition expert shares with its model (:meth:`AlignmentModel.expert_view`): setting one of
#: them on the model sets it on the expert too
_SHARED_WITH_EXPERT = ("durations", "min_frames", "training", "confidence", "utterance_check", "inventory",
                       "phone_symbols")


def check_tempo_range(value) -> tuple | None:
    """A model file's ``tempo_range`` checked: None, or two numbers ``lowest <= 1 <= highest``
    from 0.25 to 4 (:attr:`AlignmentModel.tempo_range`)."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in value):
        raise ValueError(f"tempo_range must be two numbers, got {value!r}")
    lo, hi = float(value[0]), float(value[1])
    if not 0.25 <= lo <= 1.0 <= hi <= 4.0:
        raise ValueError(f"tempo_range must hold 1 within 0.25 to 4, got {value!r}")
    return lo, hi


@dataclass
class AlignmentModel:
    """Everything needed to align: classifier, duration statistics, weights (7,)."""

    classifier: FrameClassifier
    durations: DurationStats
    weights: np.ndarray
    min_frames: int = 1
    training: dict = field(default_factory=dict)
    refiner: BoundaryRefiner | None = None  #: sub-frame boundary shifts; None = grid times
    #: per-boundary confidence (:class:`~aligner.alignment.review.confidence.BoundaryConfidence`); None = none
    confidence: object = None
    #: transcript-mismatch check (:class:`~aligner.alignment.review.confidence.UtteranceCheck`); None = none
    utterance_check: object = None
    #: the classes the model tells apart (the 39 of the shipped models, or a trained phone set's)
    inventory: PhoneInventory = TIMIT39_INVENTORY
    #: for a model trained on its own phones: transcript symbol -> class name; None = the
    #: standard sets of :func:`~aligner.phones.sets.get_phone_set` (39-class models)
    phone_symbols: dict | None = None
    #: the decoder of recordings unlike the clean training speech (:mod:`aligner.alignment.conditions`):
    #: a model of its own classifier, weights and refiner sharing everything else with this one
    #: (:meth:`expert_view`); None = this model decodes every recording
    condition_expert: "AlignmentModel | None" = None
    #: mean posterior entropy (nats) of this model's classifier above which a recording goes to
    #: :attr:`condition_expert`
    condition_gate: float | None = None
    #: energy range (dB, :func:`~aligner.alignment.conditions.level_statistics`) below which a
    #: recording goes to :attr:`condition_expert`; None = the entropy gate alone
    condition_range_gate: float | None = None
    #: high-band share (dB, :func:`~aligner.alignment.conditions.level_statistics`) below which a
    #: recording goes to :attr:`condition_expert` (a phone line, a muffled microphone); None = no band gate
    condition_band_gate: float | None = None
    #: the decoder of recordings below :attr:`condition_band_gate`: a phone-line model (its own
    #: classifier, weights and refiner, trained on band-limited speech, its front end
    #: :attr:`front_band_hz`) sharing everything else with this one; None = those go to
    #: :attr:`condition_expert`
    condition_band_expert: "AlignmentModel | None" = None
    #: this model hears its recordings through this band (Hz; :func:`aligner.features.band.band_limited`)
    #: before their MFCCs, as its classifier was trained; None = the full band
    front_band_hz: tuple | None = None
    #: this model dereverberates the recordings that pass the settings' gate before their MFCCs
    #: (:func:`aligner.features.dereverb.dereverberated_samples`; a multi-condition expert's front end);
    #: None = never
    front_dereverb: DereverbSettings | None = None
    #: this model suppresses stationary noise in the recordings that pass the settings' gate and
    #: that it does not dereverberate, before their MFCCs (:mod:`aligner.features.denoise`; a
    #: multi-condition expert's front end); None = never
    front_denoise: DenoiseSettings | None = None
    #: (A,) int indices of the classes scored in every transcript besides its own phones (a
    #: universal model's view of a whole corpus, :meth:`~aligner.alignment.universal.UniversalModel.view`:
    #: its background phones and silence): the agreement's maximum then runs over the transcript's
    #: classes and these only, as in a view of the transcript alone (:meth:`transcript_scores`);
    #: None = over every class
    always_scored: np.ndarray | None = None
    #: ``{alternative key: bonus}`` added by the word decoder to a path taking that pronunciation
    #: alternative (path-score units; re-estimated by adaptation,
    #: :mod:`aligner.alignment.adaptation.pronunciations`); None = every alternative 0
    pronunciation_bonus: dict | None = None
    #: ``(lowest, highest)`` tempo factor of a second decoding pass (:meth:`_decode_at_tempo`): the
    #: speech phones' mean durations and deviations scaled by the first pass's own tempo, clipped
    #: to this range; None = one pass (the English models). Recordings decoded in linear passes
    #: (:func:`~aligner.alignment.decoding.long_recordings.align_long`) get one pass either way
    tempo_range: tuple | None = None
    #: silences' lengths left out of the tempo term (dim 7; :attr:`AlignmentInput.paced`): a pause
    #: lasts what the speaker took, seconds around an elicited word, not a change of rate (a universal
    #: model's views); False = every phone in it (the English models, as trained)
    pauses_unpaced: bool = False
    #: a recording with long silent edges is cut to its speech and some silence around it before it
    #: is aligned (:meth:`silent_edges_cut`; a phone transcript must begin and end in silence, a
    #: words transcript's edge silences are optional); False = aligned whole (saved in the bundle only
    #: when False)
    crops_silent_edges: bool = True
    #: a learned boundary detector whose log-odds the decoders add to every boundary's score
    #: (:mod:`aligner.alignment.decoding.boundary_evidence`; a universal model's views); None = none
    boundary_detector: BoundaryDetector | None = None

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name in ("inventory", "phone_symbols"):
            self.__dict__.pop("_phone_set", None)  # :attr:`phone_set` is made again from the new ones
        if name in ("refiner", "confidence", "inventory"):  # however they are set, the refiner and
            inventory = self.__dict__.get("inventory")    # the confidence model read this inventory's
            for part in (self.__dict__.get("refiner"), self.__dict__.get("confidence")):  # broad classes
                if part is not None and inventory is not None:
                    part.broad_of_class = inventory.broad_indices
        if name in _SHARED_WITH_EXPERT:  # the experts keep sharing them (expert_view)
            for key in ("condition_expert", "condition_band_expert"):
                expert = self.__dict__.get(key)
                if expert is not None:
                    setattr(expert, name, value)

    @property
    def phone_set(self) -> PhoneSet | None:
        """The model's own phone set (a model trained on its own phones), or None: a 39-class
        model reads the standard sets (TIMIT-61, the 39 classes, ARPAbet)."""
        if self.phone_symbols is None:
            return None
        cached = self.__dict__.get("_phone_set")
        if cached is None:
            cached = model_phone_set(self.inventory, self.phone_symbols)
            self.__dict__["_phone_set"] = cached
        return cached

    def expert_view(self, classifier: FrameClassifier, weights: np.ndarray,
                    refiner: BoundaryRefiner | None, front_band_hz: tuple | None = None,
                    front_dereverb: DereverbSettings | None = None,
                    front_denoise: DenoiseSettings | None = None) -> "AlignmentModel":
        """A model of ``classifier``, ``weights`` (7,), ``refiner`` and front end ``front_band_hz``,
        ``front_dereverb`` and ``front_denoise`` that shares this model's duration statistics,
        confidence model, transcript check, inventory and symbols."""
        return AlignmentModel(classifier, self.durations, np.asarray(weights, float), self.min_frames,
                              self.training, refiner, self.confidence, self.utterance_check, self.inventory,
                              self.phone_symbols, front_band_hz=None if front_band_hz is None
                              else check_band(front_band_hz), front_dereverb=front_dereverb,
                              front_denoise=front_denoise)

    def transcript_scores(self, scores: np.ndarray, classes) -> np.ndarray:
        """``scores`` (T, C) as the decoders of a transcript of ``classes`` (any int array of class
        indices) read them: with :attr:`always_scored` (a view of a universal model), as a view of
        the transcript's phones alone would score them: every other class's column set to
        :data:`UNSCORED` (its agreement never the frame's maximum), and the transcript's and the
        always-scored classes' posteriors renormalised over those classes (each frame's scores
        minus the log of their summed posterior: the classifier's softmax over fewer classes), so
        that a view of a whole corpus's phones (an adapted model, ``aligner adapt --phone-set
        ipa``) aligns a file as the view of that file's phones does; else ``scores`` itself."""
        if self.always_scored is None:
            return scores
        active = np.zeros(scores.shape[1], bool)
        active[self.always_scored] = True
        active[np.asarray(classes, np.int64).ravel()] = True
        if active.all():
            return scores
        out = np.array(scores, copy=True)
        kept = out[:, active]
        log_post = kept + self.classifier.log_prior[active] if self.classifier.prior_division else kept
        top = log_post.max(axis=1, keepdims=True)
        mass = top + np.log(np.exp(log_post - top).sum(axis=1, keepdims=True))  # log of the kept posterior
        out[:, active] = kept - mass
        out[:, ~active] = UNSCORED
        return out

    def frames_of(self, samples, warp: float = 1.0) -> np.ndarray:
        """The (T, 42) MFCC frames this model's classifier reads from a recording's 16 kHz
        ``samples`` (n,) (an array or a :class:`~aligner.io.audio.FileSamples`): through
        :attr:`front_band_hz` first when the model has one, then as :meth:`cleaned` changes them,
        when it does; ``warp`` as for :func:`~aligner.features.mfcc.mfcc_features`."""
        heard = through_band(samples, self.front_band_hz)
        cleaned = self.cleaned(heard)
        return mfcc_features(heard if cleaned is None else cleaned, SAMPLE_RATE, warp)

    def cleaned(self, samples, reverberant: bool | None = None):
        """A recording's 16 kHz ``samples`` (n,) dereverberated, when the model has
        :attr:`front_dereverb` and the recording passes its gate (``reverberant``: whether it
        does; None: judged here), else with their stationary noise suppressed, when the model has
        :attr:`front_denoise` and the recording passes its gate: an array, or a block-by-block
        reader for a long recording; None when neither changes them."""
        if self.front_dereverb is not None:
            if reverberant is None:
                reverberant = is_reverberant(samples, self.front_dereverb)
            if reverberant:
                return dereverberated_samples(samples, self.front_dereverb)
        if self.front_denoise is not None and is_noisy(samples, self.front_denoise):
            return denoised_samples(samples, self.front_denoise)
        return None

    def _expert_frames(self, expert: "AlignmentModel", samples, frames, reverberant: bool | None = None):
        """The frames ``expert`` (a full-band :attr:`condition_expert`) reads of a recording of
        16 kHz ``samples`` whose frames by this model are ``frames`` (None: not yet computed):
        those frames, unless the expert's front end changes this recording (:meth:`cleaned`;
        ``reverberant`` as there)."""
        return self._expert_reading(expert, samples, frames, reverberant)[0]

    def _expert_reading(self, expert: "AlignmentModel", samples, frames, reverberant: bool | None = None) -> tuple:
        """``(frames, own)``: :meth:`_expert_frames`, and whether they are this model's own
        frames of the recording (the expert's front end left it as it was)."""
        cleaned = None if samples is None else expert.cleaned(samples, reverberant)
        if cleaned is not None:
            return mfcc_features(cleaned, SAMPLE_RATE), False
        return (self.frames_of(samples) if frames is None else frames), True

    def scored(self, frames: np.ndarray | None, samples=None) -> tuple:
        """:meth:`scored_keeping_own` without its last item: ``(decoder, scores, frames)``."""
        return self.scored_keeping_own(frames, samples)[:3]

    def scored_keeping_own(self, frames: np.ndarray | None, samples=None) -> tuple:
        """``(decoder, scores, frames, own)`` of a recording of MFCC ``frames`` (T, 42) (this model's
        :meth:`frames_of` its ``samples``; None: computed here when needed): this model, its
        classifier's scores (T, classes) and those frames; or, when the model has a condition
        expert and the recording passes one of its gates, the expert, the expert classifier's
        scores and the frames it read.

        The gates, in this order, on ``samples`` (n,), the recording's 16 kHz samples:

        * its energy range below :attr:`condition_range_gate`: the multi-condition expert (a
          room, noise; even on a phone line, as the band expert heard no rooms);
        * its high-band share below :attr:`condition_band_gate`: :attr:`condition_band_expert`
          when the model has one (its frames are its :meth:`frames_of` the samples, through its
          band), else the multi-condition expert;
        * for a recording of at least
          :data:`~aligner.alignment.conditions.REVERB_ROUTING_MIN_SECONDS`, its late reverberation
          at least the expert's dereverberation gate (:attr:`front_dereverb` with a ``gate_db``):
          the multi-condition expert;
        * the mean posterior entropy of this model's scores above :attr:`condition_gate`: the
          multi-condition expert.

        The first three are judged before this model scores the recording, so such a recording is
        never scored twice. The multi-condition expert reads frames of the samples its front end
        dereverberated or denoised (:meth:`cleaned`), when it changes them. Without ``samples``
        only the entropy counts (``frames`` must then be given).

        ``own``: this model's own reading of a recording it sent to the expert, for a caller that
        reads it (and need not compute it again): ``(frames, scores)``, (T, 42) and
        (T, classes), when this model scored the recording and its entropy gate then sent it
        there; ``(frames, None)`` when a gate on the samples sent it there and the expert read
        this model's frames (its front end left the recording as it was); else None."""
        expert = self.condition_expert
        if expert is not None and samples is not None and (self.condition_range_gate is not None
                                                            or self.condition_band_gate is not None):
            level_range, band_share = level_statistics(samples, band=self.condition_band_gate is not None)
            below_range = self.condition_range_gate is not None and level_range < self.condition_range_gate
            if not below_range and band_share is not None and band_share < self.condition_band_gate:
                band_expert = self.condition_band_expert
                if band_expert is not None:
                    band_frames = band_expert.frames_of(samples)
                    return band_expert, band_expert.classifier.scores(band_frames), band_frames, None
            if below_range or (band_share is not None and band_share < self.condition_band_gate):
                frames, own = self._expert_reading(expert, samples, frames)
                return expert, expert.classifier.scores(frames), frames, (frames, None) if own else None
        reverberant = None
        settings = None if expert is None else expert.front_dereverb
        if (settings is not None and settings.gate_db is not None and samples is not None
                and len(samples) >= REVERB_ROUTING_MIN_SECONDS * SAMPLE_RATE):
            reverberant = is_reverberant(samples, settings)
            if reverberant:
                frames = self._expert_frames(expert, samples, frames, True)
                return expert, expert.classifier.scores(frames), frames, None
        frames = self.frames_of(samples) if frames is None else frames
        scores = self.classifier.scores(frames)
        if expert is not None and posterior_entropy(self.classifier, scores) > self.condition_gate:
            expert_frames = self._expert_frames(expert, samples, frames, reverberant)
            return expert, expert.classifier.scores(expert_frames), expert_frames, (frames, scores)
        return self, scores, frames, None

    @property
    def task(self) -> AlignmentTask:
        return AlignmentTask()

    def make_input(self, frames: np.ndarray, phone_classes: np.ndarray, scores: np.ndarray | None = None,
                   name: str = "<utterance>", symbols=None) -> AlignmentInput:
        """The DP input of one utterance from its MFCC frames (T, 42) and phone classes (K,);
        ``symbols`` (the K transcript symbols) select per-symbol duration statistics."""
        if scores is None:
            scores = self.classifier.scores(frames)
        scores = self.transcript_scores(scores, phone_classes)
        mean, std, max_frames = self.durations.for_phones(phone_classes, symbols)
        return make_alignment_input(scores, frames, phone_classes, mean, std, max_frames,
                                    self.min_frames, name=name, unpaced=self.unpaced(phone_classes))

    def unpaced(self, classes) -> np.ndarray | None:
        """(K,) bool, the silences among phones ``classes`` (K,) when :attr:`pauses_unpaced`, else None."""
        if not self.pauses_unpaced:
            return None
        return np.asarray(classes) == self.inventory.silence_index

    def with_evidence(self, x, frames: np.ndarray, log_odds: np.ndarray | None = None):
        """The DP input ``x`` of MFCC ``frames`` (T, 42) with :attr:`boundary_detector`'s evidence added to
        every boundary's score (``log_odds`` (T,): the detector's, when worked out already); ``x`` without one."""
        det = self.boundary_detector
        if det is None:
            return x
        return with_boundary_evidence(x, det.log_odds(frames) if log_odds is None else log_odds, det.weight,
                                      self.weights)

    def align_frames(self, x: AlignmentInput) -> np.ndarray:
        """Start frame of every phone (K,), by the DP with this model's weights."""
        return self.task.decode(x, self.weights)

    def start_times(self, x: AlignmentInput, y: np.ndarray, scores: np.ndarray, frames: np.ndarray,
                    duration_s: float) -> np.ndarray:
        """Start times in **seconds** (K,) of phones decoded to start frames ``y`` from ``x``.

        The boundary before frame t is at :func:`~aligner.frames.boundary_time` ``(t)``,
        shifted by the refiner when the model has one; the first phone starts at 0. The refiner
        reads the phone classes and duration statistics the decoder used from ``x``
        (:meth:`make_input`), and ``scores`` (T, 39) and ``frames`` (T, 42) that built it.
        """
        if self.refiner is None:
            return phone_start_times(y)
        return self.refiner.start_times(scores, frames, x.phone_classes, y, x.dur_mean, x.dur_std, duration_s)

    def phone_starts(self, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, symbols,
                     duration_s: float, name: str = "<utterance>") -> np.ndarray:
        """Start times in **seconds** (K,) of phones of ``classes`` (K,) written as ``symbols``,
        from MFCC frames (T, 42) and classifier scores (T, 39), for a recording of any length
        (:meth:`decode_phones`)."""
        return self.decode_phones(frames, scores, classes, symbols, duration_s, name)[1]

    def phone_durations(self, classes: np.ndarray, symbols) -> tuple:
        """``(mean, std, max_frames)`` (K,) the decoder reads for a phone transcript's ``classes``
        written as ``symbols``: the duration table's, with the utterance's last phone lengthened
        as the word graph lengthens it where the table holds no statistics of phones before a
        pause (:func:`~aligner.alignment.decoding.task.phrase_final_lengthened`)."""
        mean, std, max_frames = self.durations.for_phones(classes, symbols)
        if len(self.durations.final_mean):
            return mean, std, max_frames
        return phrase_final_lengthened(self.inventory, classes, mean, std, max_frames)

    def decode_phones(self, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, symbols,
                      duration_s: float, name: str = "<utterance>") -> tuple[np.ndarray, np.ndarray]:
        """``(start frames (K,), start times in seconds (K,))`` of phones of ``classes`` (K,)
        written as ``symbols``, from MFCC frames (T, 42) and classifier scores (T, 39).

        The DP over the whole recording when its table is small
        (:func:`~aligner.alignment.decoding.long_recordings.needs_long_path`), searched within a band
        around the first pass's starts that is widened while it binds
        (:meth:`_decode_near_first_pass`, :data:`PHONE_BAND_FRAMES`), else the two linear passes
        of :func:`~aligner.alignment.decoding.long_recordings.align_long`; the refiner then moves every
        boundary as usual.
        """
        from aligner.alignment.decoding.long_recordings import align_long, needs_long_path

        classes = np.asarray(classes, np.int64)
        scores = self.transcript_scores(scores, classes)
        mean, std, max_frames = self.phone_durations(classes, symbols)
        check_fits(len(frames), len(classes), max_frames, self.min_frames, name)
        if not needs_long_path(dp_cells(len(frames), max_frames, self.min_frames)):
            x = self.with_evidence(make_alignment_input(scores, frames, classes, mean, std, max_frames, self.min_frames,
                                                        name=name, unpaced=self.unpaced(classes)), frames)
            y = self._decode_near_first_pass(x, scores, classes, mean, name)
            if self.tempo_range is not None:
                x, y = self._decode_at_tempo(x, y, classes, mean, std)
            return y, self.start_times(x, y, scores, frames, duration_s)

        unpaced = self.unpaced(classes)
        log_odds = None if self.boundary_detector is None else self.boundary_detector.log_odds(frames)

        def decode_chunk(f_lo, f_hi, p_lo, p_hi, centres, band):
            x = make_alignment_input(scores[f_lo:f_hi], frames[f_lo:f_hi], classes[p_lo:p_hi], mean[p_lo:p_hi],
                                     std[p_lo:p_hi], max_frames[p_lo:p_hi], self.min_frames, band=band,
                                     band_centre=centres, name=name,
                                     unpaced=None if unpaced is None else unpaced[p_lo:p_hi])
            return self.align_frames(x if log_odds is None else self.with_evidence(x, None, log_odds[f_lo:f_hi]))

        y = align_long(decode_chunk, scores, classes, mean, name=name, max_frames=max_frames)
        if self.refiner is None:
            return y, phone_start_times(y)
        mu, sigma = np.maximum(mean, 1.0), np.maximum(std, 1.0)
        return y, self.refiner.start_times(scores, frames, classes, y, mu, sigma, duration_s)

    def _decode_at_tempo(self, x: AlignmentInput, y: np.ndarray, classes: np.ndarray, mean: np.ndarray,
                         std: np.ndarray) -> tuple:
        """``(input, start frames (K,))`` of a second pass at the recording's own tempo, from the first
        pass's input ``x`` and start frames ``y`` (K,) of phones ``classes`` (K,) with durations
        ``mean``, ``std`` (K,) frames.

        The tempo is the first pass's (``y``) total length of the speech phones over the sum of
        their mean durations (frames), clipped to :attr:`tempo_range`; each speech phone's mean and
        deviation are multiplied by it (silences keep theirs: a pause's length is not the
        speaker's rate) and the DP searched again near ``y``
        (:func:`~aligner.alignment.decoding.task.decode_banded`). A speaker slower or faster than
        the training speech (read sentences against word lists) is then decoded with durations of
        their own rate. ``x`` and ``y`` are returned unchanged when the tempo is within 2 % of 1
        or the transcript has no speech phone."""
        speech = classes != self.inventory.silence_index
        if not np.any(speech):
            return x, y
        lengths = np.diff(np.append(y, x.n_frames))
        lo, hi = self.tempo_range
        tempo = float(np.clip(lengths[speech].sum() / max(float(mean[speech].sum()), 1.0), lo, hi))
        if abs(tempo - 1.0) < 0.02:
            return x, y
        factor = np.where(speech, tempo, 1.0)
        x = with_durations(x, mean * factor, std * factor)  # the scores' sums and distances as they were
        return x, decode_banded(self.task, x, self.weights, y, PHONE_BAND_FRAMES or 20)

    def _decode_near_first_pass(self, x: AlignmentInput, scores: np.ndarray, classes: np.ndarray,
                                mean: np.ndarray, name: str) -> np.ndarray:
        """Start frames (K,) of the DP over ``x`` (:meth:`align_frames`), searched within
        +-:data:`PHONE_BAND_FRAMES` frames of the first pass's starts and widened while the band
        binds (:func:`~aligner.alignment.decoding.task.decode_banded`); the exact DP when
        :data:`PHONE_BAND_FRAMES` is None or the first pass finds no path. ``scores``: (T, 39)
        classifier scores; ``classes``, ``mean``: (K,) phone classes and mean durations (frames)."""
        from aligner.alignment.decoding.long_recordings import first_pass_starts

        if PHONE_BAND_FRAMES is None:
            return self.align_frames(x)
        try:
            centre = first_pass_starts(scores, classes, mean, name=name)
        except AlignmentError:
            return self.align_frames(x)
        return decode_banded(self.task, x, self.weights, centre, PHONE_BAND_FRAMES)

    def review(self, frames: np.ndarray, scores: np.ndarray, classes: np.ndarray, symbols, y: np.ndarray,
               starts_s: np.ndarray) -> tuple:
        """``(confidences (K,), transcript-match probability)`` of a decoded utterance: each phone
        start's probability of lying within 20 ms of an annotator's (the first is 1.0), and the
        probability that the transcript belongs to the audio (None without an utterance check).
        ``(None, None)`` for a model without a confidence model.
        (:mod:`aligner.alignment.review.confidence`.) A recording longer than
        :data:`REVIEW_BLOCK_FRAMES` is reviewed in blocks of :data:`REVIEW_BLOCK_PHONES` phones
        (each with :data:`REVIEW_OVERLAP_PHONES` more on either side, on its own frames: memory
        stays bounded). Its transcript is checked in stretches of phones (:data:`CHECK_BLOCK_PHONES`,
        :meth:`recording_match`) from :data:`CHECK_WHOLE_MAX_PHONES` phones on."""
        if self.confidence is None:
            return None, None
        from aligner.alignment.review.confidence import boundary_confidences, utterance_evidence

        classes, y, starts_s = np.asarray(classes), np.asarray(y), np.asarray(starts_s, np.float64)
        symbols = None if symbols is None else list(symbols)
        T, K = len(frames), len(y)
        spans = [(0, K, 0, K)]  # (keep_lo, keep_hi, lo, hi) phone ranges
        if T > REVIEW_BLOCK_FRAMES:  # a long recording: blocks of phones on their own frames
            spans = [(a, min(K, a + REVIEW_BLOCK_PHONES), max(0, a - REVIEW_OVERLAP_PHONES),
                      min(K, a + REVIEW_BLOCK_PHONES + REVIEW_OVERLAP_PHONES))
                     for a in range(0, K, REVIEW_BLOCK_PHONES)]
        conf = np.empty(K)
        for keep_lo, keep_hi, lo, hi in spans:
            f_lo, f_hi = int(y[lo]), int(y[hi]) if hi < K else T
            part_y, part_s = y[lo:hi] - f_lo, starts_s[lo:hi] - f_lo * FRAME_SHIFT / SAMPLE_RATE
            part_sym = None if symbols is None else symbols[lo:hi]
            part = boundary_confidences(self, frames[f_lo:f_hi], scores[f_lo:f_hi], classes[lo:hi], part_y, part_s,
                                        self.confidence, part_sym)
            conf[keep_lo:keep_hi] = part[keep_lo - lo:keep_hi - lo]
        conf[0] = 1.0
        if self.utterance_check is None:
            return conf, None
        # past a few utterances' worth of phones, stretches of the size the check was fitted on
        n_blocks = K // CHECK_BLOCK_PHONES if K >= CHECK_WHOLE_MAX_PHONES else 1
        edges = np.linspace(0, K, n_blocks + 1).round().astype(np.int64)
        matches = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            f_lo, f_hi = int(y[lo]), int(y[hi]) if hi < K else T
            evidence = utterance_evidence(self, frames[f_lo:f_hi], scores[f_lo:f_hi], classes[lo:hi], y[lo:hi] - f_lo,
                                          conf[lo:hi], None if symbols is None else symbols[lo:hi])
            matches.append(float(self.utterance_check.score(evidence[None, :])[0]))
        return conf, self.recording_match(matches)

    @staticmethod
    def recording_match(matches) -> float:
        """P(transcript matches) of a recording from those of its stretches (n,): not its worst one's, which
        falls with the length (:func:`~aligner.alignment.review.confidence.recording_match`)."""
        from aligner.alignment.review.confidence import recording_match

        return recording_match(matches)

    def align(self, samples: np.ndarray, symbols: list, phone_set: PhoneSet,
              name: str = "<utterance>", split_stops: bool | None = None) -> list:
        """Phone intervals ``[(start_s, end_s, symbol), ...]`` covering the whole recording.

        ``samples``: float mono audio at 16 kHz. Phone k's start is the boundary before its
        first frame (:meth:`start_times`); the first phone starts at 0 and the last ends at
        the end of the audio. ``split_stops``: decode every stop and affricate as its TIMIT
        closure + release and merge them back (:mod:`aligner.alignment.decoding.stop_closures`); None = automatic,
        i.e. for phone sets without closure symbols (``arpabet``, ``timit39``).
        """
        return self.align_with_review(samples, symbols, phone_set, name, split_stops, review=False)[0]

    def align_with_review(self, samples: np.ndarray, symbols: list, phone_set: PhoneSet,
                          name: str = "<utterance>", split_stops: bool | None = None, review: bool = True,
                          on_scored=None) -> tuple:
        """:meth:`align` and its review: ``(intervals, confidences (K,) or None, transcript-match
        probability or None)`` (:meth:`align_reviewed`). ``on_scored(frames, decoder, scores, own)``,
        if given, is called after a successful alignment with the model that decoded the
        recording (this one or one of its experts, :meth:`scored_keeping_own`), the (T, 42) MFCC
        frames it read (its :meth:`frames_of` the samples), its classifier scores (T, classes)
        and this model's own reading of the recording (:meth:`scored_keeping_own`), for a caller
        that reuses them."""
        self.check_transcript_fits(n_frames(len(samples)), symbols, phone_set, split_stops, name)  # before features
        model, scores, frames, own = self.scored_keeping_own(None, samples)
        result = self._align_cut(model, scores, samples, symbols, phone_set, name, split_stops, review)
        if result is None:  # the middles of long pauses cut out first, where there are
            result = align_reviewed_pauses_cut(self, model, scores, frames, samples, symbols, phone_set, name,
                                               split_stops, review)
        if on_scored is not None:
            on_scored(frames, model, scores, own)
        return result

    def silent_edges_cut(self, model: "AlignmentModel", scores: np.ndarray, samples: np.ndarray,
                         accept: Callable[[], bool] | None = None, classes=None) -> tuple | None:
        """``(first frame, piece, its decoder, its scores, its frames)``: ``samples`` (n,) cut to the
        speech and some silence around it, where the recording has long silent edges, and scored
        again (``piece``: ``samples[first * FRAME_SHIFT:]`` up to the cut's last frame); None when
        there is nothing to cut, when this model does not cut (:attr:`crops_silent_edges`), or when
        ``accept()`` (asked once a first cut is found, before any scoring again) says no.

        ``model``'s ``scores`` (T, C) of the whole recording find the speech
        (:func:`~aligner.alignment.decoding.silent_edges.speech_span`); the recording's frame
        energies narrow the cut where they leave a second or more of quiet at an end (they find
        the speech where the classifier hears speech everywhere, as in a recording of mostly
        silence whose MFCCs are standardised unlike the training speech's, or in the noise of the
        edges: :func:`~aligner.alignment.decoding.silent_edges.narrowed`); each cut is scored and
        cut again while that finds more silence to cut (at most
        :data:`~aligner.alignment.decoding.silent_edges.MAX_CUTS` times). ``classes``: the
        transcript's classes, for a view of a universal model whose classes are more than the
        transcript's (:attr:`always_scored`): silence is then heard among the transcript's phones
        alone (:meth:`transcript_scores`), as in a view of the transcript's phones."""
        from aligner.alignment.decoding.silent_edges import (ENERGY_MIN_CUT_FRAMES, MARGIN_FRAMES, MAX_CUTS,
                                                             MIN_SPEECH_FRAMES, cut_frames, energy_speech_span,
                                                             model_silence_posteriors, narrowed, speech_span)

        if not self.crops_silent_edges:
            return None
        first, piece, frames = 0, samples, None
        for k in range(MAX_CUTS):
            heard = scores if classes is None else model.transcript_scores(scores, classes)
            p_silence = model_silence_posteriors(model, heard)
            cut = cut_frames(speech_span(p_silence), len(scores))
            if len(scores) > ENERGY_MIN_CUT_FRAMES + MARGIN_FRAMES + MIN_SPEECH_FRAMES:
                cut = narrowed(cut, cut_frames(energy_speech_span(piece), len(scores), min_cut=ENERGY_MIN_CUT_FRAMES))
            if cut is None or (k == 0 and accept is not None and not accept()):
                break
            first += cut[0]
            piece = samples_between(samples, first * FRAME_SHIFT,
                                    (first + cut[1] - cut[0] - 1) * FRAME_SHIFT + WINDOW)
            model, scores, frames = self.scored(None, piece)
        return None if frames is None else (first, piece, model, scores, frames)

    def _align_cut(self, model: "AlignmentModel", scores: np.ndarray, samples: np.ndarray, symbols: list,
                   phone_set: PhoneSet, name: str, split_stops, review: bool) -> tuple | None:
        """:meth:`align_reviewed`'s result for ``samples`` (n,) cut to its speech
        (:meth:`silent_edges_cut`), its times shifted back and its edge silences stretched to the
        recording's ends; None when there is nothing to cut, the transcript does not begin and end
        in silence, or it does not fit the cut."""
        def decoded_classes() -> np.ndarray:
            return self._decoding_sequence(symbols, phone_set, split_stops, len(scores))[2]

        # a view of more phones than the transcript's hears silence among the transcript's
        classes = decoded_classes() if model.always_scored is not None else None

        def edges_silent() -> bool:
            c = classes if classes is not None else decoded_classes()
            return c[0] == self.inventory.silence_index == c[-1]

        found = self.silent_edges_cut(model, scores, samples, edges_silent, classes)
        if found is None:
            return None
        first, piece, model, scores, frames = found
        try:
            intervals, conf, match = align_reviewed_pauses_cut(self, model, scores, frames, piece, symbols, phone_set,
                                                               name, split_stops, review)
        except AlignmentError:
            return None  # the phones do not fit the cut: the whole recording, as before
        offset = first * FRAME_SHIFT / SAMPLE_RATE
        shifted = [iv._replace(start_s=iv.start_s + offset, end_s=iv.end_s + offset) for iv in intervals]
        shifted[0] = shifted[0]._replace(start_s=0.0)
        shifted[-1] = shifted[-1]._replace(end_s=len(samples) / SAMPLE_RATE)
        return shifted, conf, match

    def align_scored(self, frames: np.ndarray, scores: np.ndarray, symbols: list, phone_set: PhoneSet,
                     duration_s: float, name: str = "<utterance>", split_stops: bool | None = None) -> list:
        """:meth:`align` from an utterance's MFCC frames (T, 42), its classifier scores (T, 39)
        and its duration in **seconds** (to decode one utterance several ways, scoring once).

        With the stop split, the intervals still hold exactly ``symbols``, in order: a stop's
        interval starts at its closure's start. In automatic mode (``split_stops`` None) an
        utterance too short for the extra closures is decoded without them.
        """
        return self.align_reviewed(frames, scores, symbols, phone_set, duration_s, name, split_stops,
                                   review=False)[0]

    def align_reviewed(self, frames: np.ndarray, scores: np.ndarray, symbols: list, phone_set: PhoneSet,
                       duration_s: float, name: str = "<utterance>", split_stops: bool | None = None,
                       review: bool = True) -> tuple:
        """:meth:`align_scored` with its review: ``(intervals, confidences (K,) or None,
        transcript-match probability or None)`` (:meth:`review`; a stop decoded as closure +
        release gets the confidence of its closure's start, where its interval starts)."""
        expanded, internal_symbols, classes = self._decoding_sequence(symbols, phone_set, split_stops,
                                                                      len(frames))
        y, starts_s = self.decode_phones(frames, scores, classes, internal_symbols, duration_s, name)
        conf, match = (self.review(frames, scores, classes, internal_symbols, y, starts_s) if review
                       else (None, None))
        if expanded is not None:
            starts_s = merge_stop_closures(starts_s, expanded)
            if conf is not None:
                conf = conf[np.searchsorted(expanded.owner, np.arange(expanded.n_output))]
        return times_to_intervals(starts_s, symbols, duration_s), conf, match

    def check_transcript_fits(self, n_frames_: int, symbols: list, phone_set: PhoneSet, split_stops: bool | None,
                              name: str = "<utterance>") -> None:
        """Raise :class:`~aligner.errors.AlignmentError` (one line naming ``name``) unless the
        phones the DP would decode for ``symbols`` can cover ``n_frames_`` frames; O(K), so it
        runs before any feature is computed (:func:`~aligner.alignment.decoding.task.check_fits`)."""
        _, internal_symbols, classes = self._decoding_sequence(symbols, phone_set, split_stops, n_frames_)
        _, _, max_frames = self.phone_durations(classes, internal_symbols)
        check_fits(n_frames_, len(classes), max_frames, self.min_frames, name)

    def _decoding_sequence(self, symbols: list, phone_set: PhoneSet, split_stops: bool | None,
                           n_frames_: int) -> tuple:
        """``(expanded or None, internal symbols, classes (K,))`` the DP decodes for ``symbols`` over
        ``n_frames_`` frames (stops as :meth:`align_scored` says; a view's :func:`pauses_as_two_silences`)."""
        expanded = None
        if should_split_stops(phone_set, split_stops):
            expanded = expand_stop_closures(symbols, phone_set)
            if split_stops is None and len(expanded.symbols) * self.min_frames > n_frames_:
                expanded = None
        elif self.pauses_unpaced:
            expanded = pauses_as_two_silences(symbols, phone_set)
            expanded = None if expanded is None or len(expanded.symbols) * self.min_frames > n_frames_ else expanded
        if expanded is not None:
            return expanded, expanded.symbols, expanded.classes
        return None, list(symbols), phone_set.class_indices(symbols)

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory) -> None:
        arrays = {"classifier": self.classifier.to_arrays(), "durations": self.durations.to_arrays()}
        if self.refiner is not None:
            arrays["refiner"] = self.refiner.to_arrays()
        if self.boundary_detector is not None:
            arrays["boundary_detector"] = self.boundary_detector.to_arrays()
        if self.confidence is not None:
            arrays["confidence"] = self.confidence.to_arrays()
        if self.utterance_check is not None:
            arrays["utterance_check"] = self.utterance_check.to_arrays()
        params = {"alignment": {"weights": [float(v) for v in self.weights],
                                "feature_names": list(FEATURE_NAMES),
                                "min_frames": int(self.min_frames),
                                **self.inventory.to_json(),
                                "frame_shift_samples": FRAME_SHIFT,
                                "sample_rate": SAMPLE_RATE}}
        if self.inventory == TIMIT39_INVENTORY:
            del params["alignment"]["broad_classes"]  # as saved before inventories were stored
        if self.phone_symbols is not None:
            params["alignment"]["phone_symbols"] = dict(sorted(self.phone_symbols.items()))
        if self.always_scored is not None:
            params["alignment"]["always_scored"] = [self.inventory.classes[i] for i in self.always_scored]
        if self.condition_expert is not None:
            expert = self.condition_expert
            arrays["expert_classifier"] = expert.classifier.to_arrays()
            if expert.refiner is not None:
                arrays["expert_refiner"] = expert.refiner.to_arrays()
            params["alignment"]["condition_expert"] = {"weights": [float(v) for v in expert.weights],
                                                       "gate_entropy_nats": float(self.condition_gate)}
            params["alignment"]["condition_expert"].update(_front_end_json(expert))
            if self.condition_range_gate is not None:
                params["alignment"]["condition_expert"]["gate_energy_range_db"] = float(self.condition_range_gate)
            if self.condition_band_gate is not None:
                params["alignment"]["condition_expert"]["gate_high_band_db"] = float(self.condition_band_gate)
            band_expert = self.condition_band_expert
            if band_expert is not None:
                arrays["band_expert_classifier"] = band_expert.classifier.to_arrays()
                if band_expert.refiner is not None:
                    arrays["band_expert_refiner"] = band_expert.refiner.to_arrays()
                params["alignment"]["condition_expert"]["band_expert"] = {
                    "weights": [float(v) for v in band_expert.weights],
                    "front_band_hz": [float(v) for v in band_expert.front_band_hz]}
        if self.front_band_hz is not None:
            params["alignment"]["front_band_hz"] = [float(v) for v in self.front_band_hz]
        params["alignment"].update(_front_end_json(self))
        if self.tempo_range is not None:
            params["alignment"]["tempo_range"] = [float(v) for v in self.tempo_range]
        if self.pauses_unpaced:  # (saved only when set: the English bundles keep their files)
            params["alignment"]["pauses_unpaced"] = True
        if not self.crops_silent_edges:  # (saved only when unset)
            params["alignment"]["crops_silent_edges"] = False
        if self.pronunciation_bonus:
            params["alignment"]["pronunciation_bonus"] = dict(sorted(self.pronunciation_bonus.items()))
        save_bundle(directory, ALIGNMENT_KIND, arrays, params, self.training)

    @classmethod
    def load(cls, directory) -> "AlignmentModel":
        arrays, params, manifest = load_bundle(directory, ALIGNMENT_KIND)
        try:
            p = params["alignment"]
            weights = np.asarray(p["weights"], dtype=float)
            if weights.shape != (len(FEATURE_NAMES),) or not np.all(np.isfinite(weights)):
                raise ValueError(f"weights must be {len(FEATURE_NAMES)} finite numbers")
            inventory = PhoneInventory.from_json(p)
            phone_symbols = p.get("phone_symbols")
            if phone_symbols is not None:
                if not isinstance(phone_symbols, dict) or not phone_symbols or not all(
                        isinstance(k, str) and k.strip() and v in inventory.classes for k, v in phone_symbols.items()):
                    raise ValueError("phone_symbols must map symbols onto the model's classes")
            elif inventory != TIMIT39_INVENTORY:
                raise ValueError("a model of its own phone classes must list its phone symbols")
            durations = DurationStats.from_arrays(arrays["durations"])
            if durations.mean.shape != (len(inventory),):
                raise ValueError("duration statistics have the wrong shape")
            classifier = FrameClassifier.from_arrays(arrays["classifier"])
            if classifier.n_classes != len(inventory):
                raise ValueError(f"the classifier has {classifier.n_classes} classes, the model {len(inventory)}")
            min_frames = whole_number(p["min_frames"], "min_frames", 1, int(durations.max_frames.min()))
            if whole_number(p.get("frame_shift_samples", FRAME_SHIFT), "frame_shift_samples", 1, 10**6) != FRAME_SHIFT:
                raise ValueError(f"frame_shift_samples {p['frame_shift_samples']} is not this aligner's {FRAME_SHIFT}")
            if whole_number(p.get("sample_rate", SAMPLE_RATE), "sample_rate", 1, 10**7) != SAMPLE_RATE:
                raise ValueError(f"sample_rate {p['sample_rate']} is not this aligner's {SAMPLE_RATE}")
            refiner = BoundaryRefiner.from_arrays(arrays["refiner"]) if "refiner" in arrays else None
            confidence = utterance_check = None
            if "confidence" in arrays or "utterance_check" in arrays:
                from aligner.alignment.review.confidence import BoundaryConfidence, UtteranceCheck

                if "confidence" in arrays:
                    confidence = BoundaryConfidence.from_arrays(arrays["confidence"], inventory.broad_indices)
                if "utterance_check" in arrays:
                    utterance_check = UtteranceCheck.from_arrays(arrays["utterance_check"])
            front_band = p.get("front_band_hz")
            always = p.get("always_scored")
            if always is not None:
                if not isinstance(always, list) or not all(isinstance(c, str) and c in inventory.classes
                                                           for c in always):
                    raise ValueError("always_scored must list classes of the model")
                always = np.array(sorted({inventory.index(c) for c in always}), np.int64)
            model = cls(classifier, durations, weights, min_frames, manifest.get("training", {}), refiner,
                        confidence, utterance_check, inventory, phone_symbols,
                        front_band_hz=None if front_band is None else check_band(front_band),
                        **_front_end_settings(p), always_scored=always,
                        tempo_range=check_tempo_range(p.get("tempo_range")))
            unpaced = p.get("pauses_unpaced", False)
            if not isinstance(unpaced, bool):
                raise ValueError(f"pauses_unpaced must be true or false, got {unpaced!r}")
            model.pauses_unpaced = unpaced
            crops = p.get("crops_silent_edges", True)
            if not isinstance(crops, bool):
                raise ValueError(f"crops_silent_edges must be true or false, got {crops!r}")
            model.crops_silent_edges = crops
            if "boundary_detector" in arrays:
                model.boundary_detector = check_detector(BoundaryDetector.from_arrays(arrays["boundary_detector"]),
                                                         classifier.n_features)
            if p.get("pronunciation_bonus") is not None:
                from aligner.alignment.decoding.words import check_pronunciation_bonus

                model.pronunciation_bonus = check_pronunciation_bonus(p["pronunciation_bonus"])
            expert = p.get("condition_expert")
            if expert is not None or "expert_classifier" in arrays or "band_expert_classifier" in arrays:
                if not isinstance(expert, dict) or "expert_classifier" not in arrays:
                    raise ValueError("a condition expert needs its classifier and its weights and gate")
                gate = expert["gate_entropy_nats"]
                range_gate, band_gate = expert.get("gate_energy_range_db"), expert.get("gate_high_band_db")
                check_gates(gate, range_gate, band_gate, len(inventory))
                model.condition_expert = model.expert_view(
                    *_expert_parts(arrays, "expert", expert, "condition expert", classifier, len(inventory)),
                    **_front_end_settings(expert))
                model.condition_gate = float(gate)
                model.condition_range_gate = None if range_gate is None else float(range_gate)
                model.condition_band_gate = None if band_gate is None else float(band_gate)
                band_expert = expert.get("band_expert")
                if band_expert is not None or "band_expert_classifier" in arrays:
                    if (not isinstance(band_expert, dict) or "band_expert_classifier" not in arrays
                            or band_gate is None):
                        raise ValueError("a band expert needs its classifier, its weights and front-end band, "
                                         "and a band gate")
                    model.condition_band_expert = model.expert_view(
                        *_expert_parts(arrays, "band_expert", band_expert, "band expert", classifier, len(inventory)),
                        check_band(band_expert["front_band_hz"]))
        except (KeyError, ValueError, TypeError, ModelError) as exc:
            raise ModelError(f"{directory}: not a usable alignment model ({exc})") from None
        return model


#: a model's front-end stages saved in its JSON: key and settings class
_FRONT_END_SETTINGS = (("front_dereverb", DereverbSettings), ("front_denoise", DenoiseSettings))


def _front_end_json(model: "AlignmentModel") -> dict:
    """The JSON entries of ``model``'s dereverberation and noise-suppression settings (those it has)."""
    return {key: getattr(model, key).to_dict() for key, _ in _FRONT_END_SETTINGS if getattr(model, key) is not None}


def _front_end_settings(entry: dict) -> dict:
    """``front_dereverb`` and ``front_denoise`` keyword arguments from a model's (or its expert's)
    JSON ``entry``, each validated (None where absent)."""
    return {key: None if entry.get(key) is None else cls.from_dict(entry[key]) for key, cls in _FRONT_END_SETTINGS}


def _expert_parts(arrays: dict, prefix: str, entry: dict, name: str, classifier: FrameClassifier,
                  n_classes: int) -> tuple:
    """``(classifier, weights (7,), refiner or None)`` of an expert saved as ``PREFIX_classifier``
    (and ``PREFIX_refiner``) with its JSON ``entry``; ValueError naming it (``name``) when its
    weights are not 7 finite numbers or its classifier does not fit the model's ``classifier``
    and ``n_classes``."""
    weights = np.asarray(entry["weights"], dtype=float)
    if weights.shape != (len(FEATURE_NAMES),) or not np.all(np.isfinite(weights)):
        raise ValueError(f"the {name}'s weights must be {len(FEATURE_NAMES)} finite numbers")
    expert_classifier = FrameClassifier.from_arrays(arrays[f"{prefix}_classifier"])
    if expert_classifier.n_classes != n_classes or expert_classifier.n_features != classifier.n_features:
        raise ValueError(f"the {name}'s classifier does not fit the model")
    refiner = BoundaryRefiner.from_arrays(arrays[f"{prefix}_refiner"]) if f"{prefix}_refiner" in arrays else None
    return expert_classifier, weights, refiner


def starts_to_intervals(y: np.ndarray, symbols: list, duration_s: float) -> list[Interval]:
    """Phone start frames -> ``[Interval(start_s, end_s, symbol)]``; first start 0, last end ``duration_s``."""
    return times_to_intervals(phone_start_times(y), symbols, duration_s)


def times_to_intervals(starts_s: np.ndarray, symbols: list, duration_s: float) -> list[Interval]:
    """Phone start times (s) -> ``[Interval(start_s, end_s, symbol)]``; the last ends at ``duration_s``."""
    starts = [float(t) for t in starts_s]
    ends = starts[1:] + [float(duration_s)]
    return [Interval(s, e, sym) for s, e, sym in zip(starts, ends, symbols)]
