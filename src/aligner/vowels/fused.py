"""Vowels from an alignment, re-measured by the vowel model: the two fused (issue 27).

A forced alignment knows which vowel to measure and roughly where; the transcript-free vowel
model (:mod:`aligner.vowels.model`) is precise at onsets and offsets but must find the vowel on
its own. Here each aligned vowel (onset ``a_on``, offset ``a_off``, seconds) is re-measured by
the vowel model's exact decoder, pulled toward the aligned boundaries:

1. **Cut.** The vowel with the aligned runs of obstruents and nasals that touch it
   (:func:`consonant_runs`: the span a CVC token's cut covers, :mod:`aligner.vowels.cvc`),
   widened by ``extend`` frames (5 ms) on either side (and at least ``extend`` frames beyond
   the vowel), is analysed on its own as the vowel model's training cuts were: 22 acoustic
   columns per 5 ms frame, levels z-scored over the cut. All cuts of a recording are analysed
   at once (:func:`~aligner.features.vowel_acoustics.vowel_acoustics_cuts`): the frames they
   share are framed and transformed once, the rest per cut, which gives what analysing each
   cut alone gives (to rounding in the cepstral columns). With ``recording_posteriors`` (the
   shipped settings) the classifier's columns (9-13) are the whole recording's, scored once
   (its MFCC input standardised over the recording, as the aligner scores it) rather than once
   per cut (standardised over the cut). On held-out speakers it measured about as accurate
   from words and better from phones (``python -m benchmarks.vowels.eval_vowels_fused
   --recording-posteriors no|yes``); it costs about what the per-cut calls cost, but it is
   the aligner's own scoring of the recording, so a caller that has those log posteriors can
   pass them (:func:`~aligner.features.vowel_acoustics.vowel_acoustics_cuts`) and save it:
   ``aligner vowels`` passes the aligner's (:func:`shared_log_posteriors`) when the aligner
   decoded the recording with the classifier the vowel model reads.
   A vowel model of front end ``"frames"`` (the shipped fusion model,
   ``models/timit-vowels-fusion``) analyses nothing per cut: the recording's 23 columns
   (:func:`~aligner.vowels.frame_columns.span_frame_columns`, from the aligner's MFCC frames and
   log posteriors where the caller passes them) are computed once, a stretch of consecutive cuts
   at a time, and each cut is their rows with the levels z-scored over the cut.
2. **Relocate** (``relocate``). A vowel aligned where the recording's classifier hears
   silence (a word alignment sometimes puts a word in a pause) is cut afresh from the stretch
   between its aligned neighbour vowels (:func:`neighbour_bounds`, at most
   :data:`RELOCATE_SPAN_S` beyond its aligned ends) and decoded there with a capped pull
   (``relocate_cap``) or none; it is reported as decoded. Off in the shipped settings since
   0.25.0 (with the ``frames`` fusion model it changed nothing on clean speech and lost vowels
   under noise).
3. **Joint decode.** Every ``(t_b, t_e)`` of the cut (``margin``: only within that many frames
   of the aligned frames ``a_b``, ``a_e``) scores the vowel model's ``w . phi(t_b, t_e)``
   (:mod:`aligner.vowels.task`) minus ``pull * |w| * (min([|t_b - a_b| - tau_on]_+, cap) +
   min([|t_e - a_e| - tau_off]_+, cap))``: a penalty per frame of distance from the aligned
   boundaries (the hinge of the training cost, its tolerances ``tau``; ``cap`` bounds it, so
   strong acoustic evidence can still move a boundary far), in units of the weight vector's
   norm ``|w|`` (the features are standardised, so ``|w|`` is the scale of score differences
   and ``pull`` means the same for every model). With several ``pulls`` the decoded
   boundaries are averaged. The exact argmax is the numba loop of :mod:`aligner.vowels.task`.
4. **Mix.** The reported boundary is ``a + mix * (decoded - a)`` (``mix = 1``: the decoded
   boundary; ``0``: the aligned one), onset and offset alike.

A vowel the vowel model cannot measure (no voiced frame near it, no voiced frame that looks
like a vowel, or no candidate of its durations inside the window), or, with ``overlap``, whose
fused interval would not overlap its aligned one at all (the decoder took a neighbour), keeps
its aligned interval and is reported with mode ``align``; the others with mode ``fused``. With
``cvc_only`` only vowels whose aligned neighbours on both sides are obstruents or nasals are
fused (off by default: it measured worse, results in docs/results.md).

The settings (:class:`FusionSettings`; :data:`DEFAULT_FUSION` for words and for phone
transcripts) were chosen on speakers the models never saw: ``python -m
benchmarks.vowels.eval_vowels_fused`` (its docstring gives the protocol; ``--condition`` runs it
on degraded copies, which chose ``overlap`` on and relocation off).

Units: frames are 5 ms (frame ``f`` is the audio around sample ``80 f``), times in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from aligner.errors import AlignerError
from aligner.features.vowel_acoustics import HOP, frames_to_seconds, n_frames, seconds_to_frames
from aligner.frames import SAMPLE_RATE
from aligner.phones.sets import ARPABET_TO_39, BROAD_CLASS_OF, TIMIT61_TO_39
from aligner.vowels.cvc import TIMIT_FLANKS
from aligner.vowels.frame_columns import FRAMES_FRONT_END

#: the mode of a row measured by fusing the alignment with the vowel model
FUSED_MODE = "fused"
#: the mode of a row measured by the alignment alone
ALIGN_MODE = "align"


@dataclass(frozen=True)
class FusionSettings:
    """How an aligned vowel is re-measured (module docstring).

    Attributes:
        extend: frames of audio analysed beyond the aligned consonant runs around the vowel
            (and at least this many beyond the vowel itself) on either side.
        margin: onsets and offsets are searched within this many 5 ms frames of the aligned
            ones; None: anywhere in the cut (``edge_margin`` frames from its ends).
        pulls: penalties per frame of distance from the aligned boundaries, in units of
            ``|w|``; one decode per value, the decoded boundaries averaged (0: no pull).
        cap: each boundary's penalty counts at most this many frames (None: no cap).
        mix: share of the decoded boundary in the reported one, 0..1.
        cvc_only: fuse only vowels whose aligned neighbours are obstruents or nasals.
        recording_posteriors: the classifier's columns of each cut are the whole recording's
            (one classifier call per recording, its input standardised over the recording as
            the aligner's), not the cut's own (a call per cut, its input standardised over
            the cut, as the vowel model's training cuts were):
            :func:`~aligner.features.vowel_acoustics.vowel_acoustics_cuts`.
        overlap: a fused interval that does not overlap the aligned vowel's (the decoder took
            a neighbouring vowel, or a stretch beside it) is not kept: the row keeps its aligned
            interval (mode ``align``).
        relocate: a vowel aligned where the classifier hears silence (the recording's silence
            posterior, column 13, averaged over its aligned 5 ms frames, above this value) is
            looked for afresh between its aligned neighbour vowels (at most
            :data:`RELOCATE_SPAN_S` beyond either aligned end); None: never.
        relocate_cap: how a relocated vowel is decoded: None, by the vowel model alone (no
            pull); else with ``pulls``, each boundary's penalty capped at this many frames (a
            bounded pull: the aligned place wins unless the acoustics clearly prefer another).
    """

    extend: int = 8
    margin: Optional[int] = None
    pulls: tuple = (0.05, 0.1)
    cap: Optional[float] = None
    mix: float = 1.0
    cvc_only: bool = False
    recording_posteriors: bool = False
    overlap: bool = False
    relocate: Optional[float] = None
    relocate_cap: Optional[float] = None

    def __post_init__(self):
        if int(self.extend) < 0 or (self.margin is not None and int(self.margin) < 0):
            raise ValueError(f"extend and margin must be >= 0 frames, got {self.extend}, {self.margin}")
        pulls = tuple(float(p) for p in self.pulls)
        if not pulls or not all(p >= 0 and np.isfinite(p) for p in pulls):
            raise ValueError(f"pulls must be one or more finite numbers >= 0, got {self.pulls}")
        object.__setattr__(self, "pulls", pulls)
        if self.cap is not None and not self.cap > 0:
            raise ValueError(f"cap must be > 0 frames or None, got {self.cap}")
        if not 0.0 <= self.mix <= 1.0:
            raise ValueError(f"mix must be in 0..1, got {self.mix}")
        if self.relocate is not None and not 0.0 <= self.relocate <= 1.0:
            raise ValueError(f"relocate must be a probability in 0..1 or None, got {self.relocate}")
        if self.relocate_cap is not None and not self.relocate_cap > 0:
            raise ValueError(f"relocate_cap must be > 0 frames or None, got {self.relocate_cap}")


#: a relocated vowel (:attr:`FusionSettings.relocate`) is looked for at most this far (seconds)
#: beyond either end of its aligned interval
RELOCATE_SPAN_S = 0.5


#: the settings for vowels aligned from words (module docstring; since 0.25.0, with the ``frames``
#: fusion model: a fused interval must overlap its aligned one, and no relocation, which on clean
#: speech changed nothing and under noise or a far room lost 2-3 times as many tokens)
WORDS_FUSION = FusionSettings(extend=4, pulls=(0.1,), cap=10.0, mix=1.0, cvc_only=False, recording_posteriors=True,
                              overlap=True, relocate=None, relocate_cap=10.0)
#: the settings for vowels aligned from phones (a phone transcript, or an alignment the user brings)
PHONES_FUSION = FusionSettings(extend=4, pulls=(0.1, 0.2), cap=10.0, mix=0.9, cvc_only=False, recording_posteriors=True,
                               overlap=True, relocate=None, relocate_cap=10.0)
#: what ``aligner vowels`` fuses with, by the alignment's transcript kind
DEFAULT_FUSION = {"words": WORDS_FUSION, "phones": PHONES_FUSION}


@dataclass(frozen=True)
class FusedVowel:
    """One re-measured vowel (seconds from the start of the recording)."""

    onset_s: float
    offset_s: float
    mode: str  #: :data:`FUSED_MODE`, or :data:`ALIGN_MODE` when the aligned interval was kept
    score: float = float("nan")  #: the decoder's objective, averaged over the pulls (NaN for ``align``)
    note: str = ""  #: why the aligned interval was kept ("" when fused)


def _base(symbol: str) -> str:
    """Lower-case phone symbol without its stress digit: ``AE1`` -> ``ae``."""
    s = symbol.strip().lower()
    return s[:-1] if s[-1:] in "012" and len(s) > 1 else s


def is_flank(symbol: Optional[str], broad_of=None) -> bool:
    """True for an obstruent or nasal (TIMIT-61 or ARPAbet, any case, stress digit ignored):
    the consonants that may flank a CVC token's vowel (:data:`aligner.vowels.cvc.TIMIT_FLANKS`).
    ``broad_of``: symbol -> its broad class or None, for a model's own phones (then any
    stop, affricate, fricative or nasal flanks)."""
    if not symbol or not symbol.strip():
        return False
    if broad_of is not None:
        return broad_of(symbol) in ("stop", "affricate", "fricative", "nasal")
    s = _base(symbol)
    if s in TIMIT_FLANKS:
        return True
    c = ARPABET_TO_39.get(s) or TIMIT61_TO_39.get(s)
    return c is not None and c != "hh" and BROAD_CLASS_OF.get(c) in ("stop", "affricate", "fricative", "nasal")


def _touch(a, b) -> bool:
    return abs(float(a[1]) - float(b[0])) < 1e-6


def cvc_context(phones: Sequence, i: int, broad_of=None) -> bool:
    """Whether phone ``i`` of ``phones`` ([(start_s, end_s, label)]) sits between obstruents or
    nasals that touch it (a pause between them breaks the context); ``broad_of`` as for
    :func:`is_flank`."""
    if i == 0 or i + 1 >= len(phones):
        return False
    return (_touch(phones[i - 1], phones[i]) and _touch(phones[i], phones[i + 1])
            and is_flank(phones[i - 1][2], broad_of) and is_flank(phones[i + 1][2], broad_of))


def consonant_runs(phones: Sequence, i: int, broad_of=None) -> tuple:
    """``(start_s, end_s)`` of phone ``i`` with the runs of obstruents and nasals that touch it on
    either side (:func:`is_flank`, ``broad_of`` as there): the span a CVC token's cut covers
    (:mod:`aligner.vowels.cvc`); the phone's own interval when neither neighbour is one."""
    a = b = i
    while a > 0 and is_flank(phones[a - 1][2], broad_of) and _touch(phones[a - 1], phones[a]):
        a -= 1
    while b + 1 < len(phones) and is_flank(phones[b + 1][2], broad_of) and _touch(phones[b], phones[b + 1]):
        b += 1
    return float(phones[a][0]), float(phones[b][1])


def fusion_cut(vowel: tuple, n_samples: int, settings: FusionSettings) -> tuple:
    """``(first sample, end sample (exclusive), aligned (a_b, a_e) frames of the cut)`` analysed
    for an aligned vowel ``(onset_s, offset_s, runs_start_s, runs_end_s)`` (its interval and
    :func:`consonant_runs`): the runs widened by ``settings.extend`` frames, and at least that
    many frames beyond the vowel, clipped to the recording. The cut starts on a frame (a
    multiple of 80 samples), so its frames are the recording's frames shifted."""
    onset_s, offset_s, run_a, run_b = (float(v) for v in vowel)
    a_b, a_e = seconds_to_frames(max(onset_s, 0.0), max(offset_s, onset_s))
    a_e = max(a_e, a_b)
    ext = int(settings.extend)
    T = n_frames(n_samples)
    f0 = max(0, min(int(np.floor(min(run_a, onset_s) * SAMPLE_RATE / HOP)), a_b) - ext)
    f1 = min(T - 1, max(int(np.ceil(max(run_b, offset_s) * SAMPLE_RATE / HOP)), a_e) + ext)
    return f0 * HOP, min(n_samples, f1 * HOP + 1), (a_b - f0, a_e - f0)


def decode_fused(model, features: np.ndarray, aligned: tuple, settings: FusionSettings,
                 name: str = "<vowel>") -> tuple:
    """``((t_b, t_e), objective)``: the vowel of a cut's (T, 22) ``features`` decoded jointly with
    its aligned frames ``aligned = (a_b, a_e)`` (module docstring, step 2), frames of the cut
    (floats: the average over ``settings.pulls``, rounded to 0.5 frame).

    Raises :class:`~aligner.errors.AlignerError` when nothing voiced is near the aligned vowel,
    when its voiced frames never look like a vowel, or when no vowel of the model's durations
    fits the window."""
    T = features.shape[0]
    a_b = min(max(int(aligned[0]), 0), T - 1)
    a_e = min(max(int(aligned[1]), 0), T - 1)
    lo, hi = model.edge_margin, T - 1 - model.edge_margin
    m = T if settings.margin is None else int(settings.margin)
    on = (max(a_b - m, lo), min(a_b + m, hi))
    off = (max(a_e - m, lo), min(a_e + m, hi))
    if on[0] > on[1] or off[0] > off[1]:
        raise AlignerError(f"{name}: the aligned vowel lies at the edge of the recording")
    if model.vowel_like_flag(features[on[0]:off[1] + 1], name):  # raises when nothing is voiced
        raise AlignerError(f"{name}: no vowel-like frame near the aligned vowel")
    norm = float(np.linalg.norm(model.weights))
    pulled = a_b < a_e
    decoded = model.task.decode_cut_pulls(features, model.weights, (a_b, a_e) if pulled else None,
                                          [-pull * norm if pull > 0 and pulled else 0.0 for pull in settings.pulls],
                                          settings.cap, columns=model.columns, widths=model.widths,
                                          outside_width=model.outside_width, min_dur=model.min_dur,
                                          max_dur=model.max_dur, onset_range=on, offset_range=off, name=name)
    ons = [float(y[0]) for y, _ in decoded]
    offs = [float(y[1]) for y, _ in decoded]
    return (_mean(ons), _mean(offs)), _mean([value for _, value in decoded])


def _mean(values: list) -> float:
    """``np.mean`` of a few floats (fewer than 8: numpy adds them one by one, as here)."""
    if len(values) >= 8:
        return float(np.mean(np.asarray(values, dtype=np.float64)))
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


def neighbour_bounds(vowels: Sequence[tuple], end_s: float) -> np.ndarray:
    """(n, 2) seconds: for each aligned vowel ``(onset_s, offset_s, ...)`` of ``vowels``, the
    latest offset of another vowel that ends by its onset (0 if none) and the earliest onset of
    one that starts at or after its offset (``end_s`` if none): the stretch it must lie in if
    the vowels' order is right."""
    iv = np.array([(float(v[0]), float(v[1])) for v in vowels], dtype=np.float64).reshape(-1, 2)
    offs, ons = np.sort(iv[:, 1]), np.sort(iv[:, 0])
    k = np.searchsorted(offs, iv[:, 0] + 1e-9, side="right") - 1
    lo = np.where(k >= 0, offs[np.maximum(k, 0)], 0.0)
    j = np.searchsorted(ons, iv[:, 1] - 1e-9, side="left")
    hi = np.where(j < ons.shape[0], ons[np.minimum(j, ons.shape[0] - 1)], float(end_s))
    return np.column_stack([lo, hi])


def fusion_features(model, samples: np.ndarray, vowels: Sequence[tuple], settings: FusionSettings,
                    log_posteriors: Optional[np.ndarray] = None, mfcc_frames: Optional[np.ndarray] = None) -> tuple:
    """``(cuts, features)`` of :func:`fuse_vowels`'s first step: each vowel's cut
    (:func:`fusion_cut`; for a vowel to relocate, :attr:`FusionSettings.relocate`, the stretch
    between its aligned neighbours, :func:`neighbour_bounds`, as ``(first sample, end sample,
    aligned frames, True)``) and its (T, 22) acoustics (or the
    :class:`~aligner.errors.FeatureError` computing them raised), analysed together
    (:func:`~aligner.features.vowel_acoustics.vowel_acoustics_cuts`). Depends on
    ``settings.extend``, ``settings.recording_posteriors`` and ``settings.relocate`` alone.
    ``log_posteriors``: the recording's (Tc, n_classes) log posteriors by the vowel model's
    classifier (``log_posteriors`` of its :func:`~aligner.features.mfcc.mfcc_features`), if the
    caller has them; else computed here when the settings need them, from ``mfcc_frames``, the
    recording's (Tc, 42) :func:`~aligner.features.mfcc.mfcc_features` if the caller has those
    (:func:`shared_mfcc_frames`). The recording's classifier columns are computed once, for
    the relocation and the cuts alike. For a ``"frames"`` vowel model
    (:mod:`aligner.vowels.frame_columns`) the recording's columns are computed a stretch of cuts
    at a time (from ``log_posteriors`` and ``mfcc_frames`` where given) and each cut is its rows,
    levels z-scored over the cut; ``settings.recording_posteriors`` does not apply. ``samples``: (n,) float
    samples, or a long recording read from its file on demand
    (:class:`~aligner.io.audio.SampleReader`: a ``"frames"`` model reads it a stretch at a time)."""
    from aligner.errors import FeatureError
    from aligner.features.vowel_acoustics import recording_classifier_columns, vowel_acoustics_cuts

    if getattr(model, "front_end", None) == FRAMES_FRONT_END:
        pairs = list(_frames_fusion_features(model, samples, vowels, settings, log_posteriors, mfcc_frames))
        return [c for c, _ in pairs], [f for _, f in pairs]
    samples = _in_memory(samples)
    n = samples.shape[0]
    cuts = [fusion_cut(v, n, settings) for v in vowels]
    if log_posteriors is None and cuts and (settings.relocate is not None or settings.recording_posteriors):
        log_posteriors = _recording_log_posteriors(model.classifier, samples, mfcc_frames)
    columns = None
    if settings.relocate is not None and log_posteriors is not None:
        columns = recording_classifier_columns(model.classifier, samples, log_posteriors)
        cuts = _relocated_cuts(n, vowels, cuts, columns, settings)
    elif settings.recording_posteriors and log_posteriors is not None and cuts:
        try:
            columns = recording_classifier_columns(model.classifier, samples, log_posteriors)
        except FeatureError as exc:  # vowel_acoustics_cuts reports it for every cut
            columns = exc
    feats = vowel_acoustics_cuts(samples, [c[:2] for c in cuts], model.classifier,
                                 recording_posteriors=settings.recording_posteriors,
                                 log_posteriors=log_posteriors if settings.recording_posteriors else None,
                                 recording_columns=columns if settings.recording_posteriors else None
                                 ) if cuts else []
    return cuts, feats


#: a long recording's vowels are measured in stretches of at most this many samples of cuts
#: (:func:`_frames_fusion_features`), so the columns in memory do not grow with its length
FUSION_SPAN_SAMPLES = 30 * SAMPLE_RATE


def _is_reader(samples) -> bool:
    """Whether ``samples`` are a :class:`~aligner.io.audio.SampleReader` (read by slices), not an array."""
    from aligner.io.audio import SampleReader

    return isinstance(samples, SampleReader)


def _in_memory(samples) -> np.ndarray:
    """(n,) float32 samples of an array, or of a :class:`~aligner.io.audio.SampleReader` read whole."""
    return np.asarray(samples[0:len(samples)] if _is_reader(samples) else samples, dtype=np.float32)


def _frames_fusion_features(model, samples, vowels, settings, log_posteriors, mfcc_frames):
    """Each vowel's ``(cut, features)`` of :func:`fusion_features` for a ``"frames"`` vowel
    model, in order, as they are computed: the recording's MFCC frames and log posteriors (the
    caller's, or computed once here; a :class:`~aligner.io.audio.SampleReader` is read block by
    block), then the columns of one stretch of consecutive cuts at a time
    (:data:`FUSION_SPAN_SAMPLES`; :func:`~aligner.vowels.frame_columns.span_frame_columns`),
    the same rows as the whole recording's."""
    from aligner.errors import FeatureError
    from aligner.features.mfcc import mfcc_features
    from aligner.vowels.frame_columns import CLASSIFIER_COLUMNS, check_recording, cut_columns, span_frame_columns

    reader = _is_reader(samples)
    if not reader:
        samples = np.asarray(samples, dtype=np.float32)
    n = len(samples)
    cuts = [fusion_cut(v, n, settings) for v in vowels]
    if not cuts:
        return
    try:
        if not reader:  # a reader's file was checked when it was opened
            samples = check_recording(samples)
        if mfcc_frames is None:
            mfcc_frames = mfcc_features(samples)
        if log_posteriors is None:
            log_posteriors = model.classifier.log_posteriors(mfcc_frames)
    except FeatureError as exc:
        yield from ((c, exc) for c in cuts)
        return
    relocating = settings.relocate is not None
    # a relocated cut lies within RELOCATE_SPAN_S and the extension of its vowel's aligned ends
    reach = int(RELOCATE_SPAN_S * SAMPLE_RATE) + (int(settings.extend) + 1) * HOP if relocating else 0
    bounds = neighbour_bounds(vowels, n / SAMPLE_RATE) if relocating else None
    i = 0
    while i < len(cuts):
        first, end, j = cuts[i][0], cuts[i][1], i + 1
        while j < len(cuts) and max(end, cuts[j][1]) - min(first, cuts[j][0]) <= FUSION_SPAN_SAMPLES:
            first, end, j = min(first, cuts[j][0]), max(end, cuts[j][1]), j + 1
        group = cuts[i:j]
        try:
            lo, columns = span_frame_columns(samples, max(first - reach, 0), min(end + reach, n),
                                             log_posteriors, mfcc_frames)
        except FeatureError as exc:
            yield from ((c, exc) for c in group)
            i = j
            continue
        if relocating:
            group = _relocated_cuts(n, vowels[i:j], group, columns[:, CLASSIFIER_COLUMNS], settings,
                                    bounds[i:j], lo // HOP)
        for c in group:
            yield c, cut_columns(columns, c[0] - lo, c[1] - lo)
        i = j


#: (first classifier, second classifier, equal) of the pairs :func:`same_classifier` compared
_COMPARED: list = []


def same_classifier(a, b) -> bool:
    """Whether frame classifiers ``a`` and ``b`` give the same scores: the same object, or the
    same class with equal parameters (every array of ``to_arrays``, values and dtypes; the
    vowel model's classifier is a copy of the alignment model's, :mod:`aligner.vowels.model`).
    Each pair is compared once per process."""
    if a is b:
        return True
    for x, y, equal in _COMPARED:
        if x is a and y is b:
            return equal
    try:
        pa, pb = a.to_arrays(), b.to_arrays()
        equal = (type(a) is type(b) and pa.keys() == pb.keys()
                 and all(pa[k].dtype == pb[k].dtype and np.array_equal(pa[k], pb[k]) for k in pa))
    except Exception:  # not a FrameClassifier, or not trained: not shared
        equal = False
    del _COMPARED[:-7]  # the last few pairs: a process holds one or two models
    _COMPARED.append((a, b, equal))
    return equal


def _own_reading(scored, aligner_model) -> Optional[tuple]:
    """``(frames, scores)`` of ``aligner_model``'s own reading of a recording ``scored`` (a
    :class:`~aligner.alignment.pipeline.ScoredRecording` or None): those it decoded with, or its
    reading of a recording it sent to its expert
    (:attr:`~aligner.alignment.pipeline.ScoredRecording.own`: the scores None where a gate on the
    samples sent it there before it scored it); None when it has none of its own."""
    if scored is None or aligner_model is None:
        return None
    if scored.decoder is aligner_model:
        return scored.frames, scored.scores
    return getattr(scored, "own", None)


def shared_log_posteriors(scored, aligner_model, classifier) -> Optional[np.ndarray]:
    """The recording's (Tc, n_classes) float32 log posteriors by ``classifier`` (the vowel
    model's) from the aligner's scoring of it, or None when they are not the same: ``scored``
    (a :class:`~aligner.alignment.pipeline.ScoredRecording` or None) never scored by
    ``aligner_model`` itself (a gate on the samples sent it to an expert first:
    :func:`_own_reading`), or ``aligner_model``'s classifier not the same as ``classifier``
    (:func:`same_classifier`).
    The scores are the log posteriors minus the log class priors when the classifier divides
    by them (:meth:`~aligner.features.frame_classifier.FrameClassifier.scores`); the priors are
    added back, in float32 as they were taken off, which gives the classifier's own log
    posteriors to the rounding of the float32 scores (half a unit in their last place)."""
    own = _own_reading(scored, aligner_model)
    if own is None or own[1] is None or not same_classifier(aligner_model.classifier, classifier):
        return None
    scores = np.asarray(own[1])
    if not classifier.prior_division:
        return scores
    return (scores + classifier.log_prior).astype(np.float32, copy=False)


def shared_mfcc_frames(scored, aligner_model) -> Optional[np.ndarray]:
    """The recording's (Tc, 42) float32 :func:`~aligner.features.mfcc.mfcc_features` of its
    samples as the aligner computed them, or None when the frames it read are not those:
    ``scored`` (a :class:`~aligner.alignment.pipeline.ScoredRecording` or None) not read by
    ``aligner_model`` itself (:func:`_own_reading`: an expert that cleaned the audio read it), or
    ``aligner_model`` hearing the recording through a front end of its own (a band, a
    dereverberation or a denoiser: :meth:`~aligner.alignment.model.AlignmentModel.frames_of`).
    The vowel model's classifier reads these frames when it is not the aligner's
    (:func:`shared_log_posteriors`), so the recording's MFCC is computed once."""
    from aligner.features import mfcc as mf

    own = _own_reading(scored, aligner_model)
    if own is None:
        return None
    if any(getattr(aligner_model, a, None) is not None for a in ("front_band_hz", "front_dereverb", "front_denoise")):
        return None
    frames = own[0]
    samples = scored.samples
    if (not isinstance(frames, np.ndarray) or not isinstance(samples, np.ndarray) or samples.ndim != 1
            or frames.dtype != np.float32 or frames.shape != (mf.n_frames(samples.shape[0]), mf.N_FEATURES)):
        return None
    return frames


def _recording_log_posteriors(classifier, samples: np.ndarray,
                              mfcc_frames: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """(Tc, n_classes) log posteriors of a whole recording's MFCC frames (one classifier call),
    or None when it has none (shorter than 25 ms, not finite). ``mfcc_frames``: the recording's
    :func:`~aligner.features.mfcc.mfcc_features` if the caller has them (:func:`shared_mfcc_frames`)."""
    from aligner.errors import FeatureError
    from aligner.features.mfcc import mfcc_features

    if not np.isfinite(samples).all():
        return None
    try:
        return classifier.log_posteriors(mfcc_features(samples) if mfcc_frames is None else mfcc_frames)
    except FeatureError:
        return None


def _relocated_cuts(n: int, vowels, cuts, columns, settings, bounds=None, first_frame: int = 0) -> list:
    """``cuts`` with those of the vowels aligned in silence (:attr:`FusionSettings.relocate`)
    replaced by the stretch between their aligned neighbours (flagged ``True``) in a recording
    of ``n`` samples; ``columns``: its (T, 5) classifier columns
    (:func:`~aligner.features.vowel_acoustics.recording_classifier_columns`) from its 5 ms frame
    ``first_frame`` on; ``bounds``: the vowels' :func:`neighbour_bounds` among all the recording's
    vowels (None: among ``vowels``)."""
    silence = columns[:, 4]
    if bounds is None:
        bounds = neighbour_bounds(vowels, n / SAMPLE_RATE)
    out = list(cuts)
    for i, (v, (a, _, (a_b, a_e))) in enumerate(zip(vowels, cuts)):
        f0 = a // HOP
        heard = silence[f0 - first_frame + a_b:f0 - first_frame + a_e + 1]
        if not heard.size or not heard.mean() > settings.relocate:
            continue
        on_s, off_s = float(v[0]), float(v[1])
        lo = min(max(bounds[i, 0], on_s - RELOCATE_SPAN_S), on_s)
        hi = max(min(bounds[i, 1], off_s + RELOCATE_SPAN_S), off_s)
        a2, b2, _ = fusion_cut((lo, hi, lo, hi), n, settings)
        f2 = a2 // HOP
        out[i] = (a2, b2, (f0 + a_b - f2, f0 + a_e - f2), True)
    return out


def _relocated_settings(settings: FusionSettings) -> FusionSettings:
    """How a relocated vowel is decoded over the stretch it was cut from
    (:attr:`FusionSettings.relocate_cap`): the whole cut searched, no pull or a capped one."""
    if settings.relocate_cap is None:
        return FusionSettings(pulls=(0.0,))
    return FusionSettings(pulls=settings.pulls, cap=settings.relocate_cap)


def fuse_vowels(model, samples: np.ndarray, vowels: Sequence[tuple], settings: FusionSettings,
                name: str = "<recording>", features: Optional[tuple] = None,
                log_posteriors: Optional[np.ndarray] = None, mfcc_frames: Optional[np.ndarray] = None) -> list:
    """Re-measure each aligned vowel of a 16 kHz recording with the vowel model.

    ``samples``: (n,) float audio at 16 kHz (or a :class:`~aligner.io.audio.SampleReader` of a
    long recording, read on demand); ``vowels``: ``[(onset_s, offset_s, runs_start_s,
    runs_end_s), ...]``, each aligned vowel's interval and :func:`consonant_runs` (seconds);
    ``model``: a :class:`~aligner.vowels.model.VowelModel`. Returns one :class:`FusedVowel` per
    vowel, in order (the aligned interval with mode ``align`` where the vowel model cannot
    measure it). ``features``: :func:`fusion_features` of these vowels with the same ``extend``,
    ``recording_posteriors`` and ``relocate``, if already computed (a settings search reuses
    them). A relocated vowel (:attr:`FusionSettings.relocate`) is decoded over its stretch
    (:attr:`FusionSettings.relocate_cap`) and reported as decoded (``mix``, ``overlap`` do not
    apply). ``log_posteriors``, ``mfcc_frames``: as for :func:`fusion_features`. A ``"frames"``
    model's vowels are measured as their columns are computed, a stretch of the recording at a
    time, so the memory held does not grow with the recording's length beyond its 10 ms frames."""
    n = len(samples)
    relocated_settings = _relocated_settings(settings)
    if features is not None:
        pairs = zip(*features)
    elif getattr(model, "front_end", None) == FRAMES_FRONT_END:  # a stretch of cuts at a time
        pairs = _frames_fusion_features(model, samples, vowels, settings, log_posteriors, mfcc_frames)
    else:
        pairs = zip(*fusion_features(model, samples, vowels, settings, log_posteriors, mfcc_frames))
    out = []
    end_s = n / SAMPLE_RATE
    for v, (cut, f) in zip(vowels, pairs):
        a, aligned = cut[0], cut[2]
        relocated = len(cut) > 3 and bool(cut[3])
        mix = 1.0 if relocated else float(settings.mix)
        on_s, off_s = float(v[0]), float(v[1])
        where = f"{name} [{on_s:.3f}-{off_s:.3f} s]"
        try:
            if isinstance(f, Exception):
                raise f
            (t_b, t_e), value = decode_fused(model, f, aligned, relocated_settings if relocated else settings, where)
        except AlignerError as exc:
            out.append(FusedVowel(on_s, off_s, ALIGN_MODE, note=str(exc)))
            continue
        d_on, d_off = frames_to_seconds(t_b, t_e)  # linear: fractional frames map the same way
        shift = a / SAMPLE_RATE
        d_on, d_off = d_on + shift, min(d_off + shift, end_s)
        f_on = on_s + mix * (d_on - on_s)
        f_off = off_s + mix * (d_off - off_s)
        if not f_off > f_on:
            out.append(FusedVowel(on_s, off_s, ALIGN_MODE, note=f"{where}: empty fused interval"))
            continue
        if settings.overlap and not relocated and not (f_on < off_s and f_off > on_s):
            out.append(FusedVowel(on_s, off_s, ALIGN_MODE,
                                  note=f"{where}: the fused interval {f_on:.3f}-{f_off:.3f} s misses the aligned one"))
            continue
        out.append(FusedVowel(float(f_on), float(f_off), FUSED_MODE, value))
    return out
