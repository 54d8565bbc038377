"""Which decoder aligns a recording: the clean model, or its multi-condition expert.

A classifier trained on degraded copies (``aligner train --augment``) aligns reverberant rooms,
phone lines and noise better than the clean one, and clean studio speech slightly worse. An
alignment model may therefore carry a *condition expert*: a second frame classifier with its own
7 weights and boundary refiner (trained with augmentation), sharing the model's duration
statistics, confidence model, transcript check and phone inventory. A recording goes to the
expert when the clean classifier is unsure of it (the mean entropy of its frame posteriors, in
nats, exceeds the model's entropy gate), when its level barely rises above its floor (the range
between the 10th and 95th percentiles of its frame energies, in dB, falls below the model's range
gate: noise fills the pauses, reverberation the gaps between sounds), or when it holds almost
nothing above 3.4 kHz (the high-band share of its louder frames, in dB, falls below the model's
band gate: a phone line, a muffled microphone).

A model may also carry a *band expert* (:attr:`~aligner.alignment.model.AlignmentModel.condition_band_expert`):
a phone-line model, trained on speech through the band a telephone keeps and hearing every
recording through it (:mod:`aligner.features.band`). It takes the recordings below the band gate
that the range gate leaves alone (a phone line without a room or much noise); those below both
still go to the multi-condition expert, which heard rooms and noise on phone lines too.

Each gate is set from recordings of speakers the clean classifier never heard (the out-of-fold
decodes of ``benchmarks.alignment.eval_alignment_cv`` fold models): as the value that only a chosen share
of those clean recordings lies beyond (:func:`gate_for_false_alarm`). Two to three times that
share of clean recordings goes to the expert, and recordings less like the clean training speech
go there more often.
"""

from __future__ import annotations

import numbers

import numpy as np

from aligner.frames import FRAME_SHIFT, SAMPLE_RATE, WINDOW, n_frames

#: samples per piece of :func:`level_statistics`' frame powers (5 ms): a frame is 5 pieces, a frame shift 2
_PIECE = 80
assert WINDOW % _PIECE == 0 and FRAME_SHIFT % _PIECE == 0
#: frames whose energies :func:`level_statistics` computes at once
ENERGY_BLOCK_FRAMES = 20_000
#: frames whose posteriors :func:`posterior_entropy` exponentiates at once
ENTROPY_BLOCK_FRAMES = 8192
#: floor of a frame's mean power (full-scale units squared): digital silence counts as -200 dB, far
#: below any recorded noise floor, so a quiet recording's range is its own (a floor near real
#: levels, e.g. -100 dB, would narrow the range of a recording made 30-40 dB too quietly)
ENERGY_FLOOR = 1e-20
#: the largest range gate a model may hold (dB): more than the floor allows
MAX_RANGE_GATE_DB = 200.0
#: the band a phone line keeps (Hz): :func:`level_statistics` compares the energy above its top
#: edge (up to 8 kHz) with the energy inside it
SPEECH_BAND_HZ, HIGH_BAND_HZ = 300.0, 3400.0
_BIN_HZ = SAMPLE_RATE / WINDOW
_MID_BINS = slice(int(np.ceil(SPEECH_BAND_HZ / _BIN_HZ)), int(np.ceil(HIGH_BAND_HZ / _BIN_HZ)))
_HIGH_BINS = slice(int(np.ceil(HIGH_BAND_HZ / _BIN_HZ)), WINDOW // 2 + 1)
#: :func:`level_statistics` reads the spectrum of every this-many-th loud frame
BAND_STRIDE = 4
#: (WINDOW,) periodic Hann window of :func:`level_statistics`' spectra
_HANN = (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(WINDOW) / WINDOW)).astype(np.float32)
_WINDOW_OFFSETS = np.arange(WINDOW)
#: the band gate a model may hold lies within +-this (dB)
MAX_BAND_GATE_DB = 200.0
#: share of clean recordings of unseen speakers that the shipped gate sends to the expert
DEFAULT_FALSE_ALARM = 0.1
#: share of clean recordings of unseen speakers whose late-reverberation statistic passes the
#: dereverberation gate of the multi-condition expert (:mod:`aligner.features.dereverb`): on
#: validation copies 10, 5 and 2 % gave the same accuracy, and 2 % dereverberates the fewest
DEREVERB_FALSE_ALARM = 0.02
#: a recording at least this long (seconds) that passes the multi-condition expert's
#: dereverberation gate goes to the expert even when no other gate sends it there: the gates were
#: set on utterances of a few seconds, and the statistic reads at most its first 30 s, so on a
#: recording this long it costs a few per cent of aligning it (on every short utterance it would
#: cost about 10 %)
REVERB_ROUTING_MIN_SECONDS = 60.0
#: share of clean recordings of unseen speakers whose noise-floor statistic passes the noise
#: suppression gate of the multi-condition expert (:mod:`aligner.features.denoise`): on validation
#: copies 2 and 1 % gave the same accuracy in noise, and 1 % left clean recordings as they were
#: (2 % cost 0.1 points)
DENOISE_FALSE_ALARM = 0.01


def posterior_entropy(classifier, scores: np.ndarray) -> float:
    """Mean over frames of the entropy (nats) of ``classifier``'s posteriors, from its
    (T, n_classes) ``scores`` (:meth:`~aligner.features.frame_classifier.FrameClassifier.scores`:
    the log posteriors, minus the log class priors when the classifier divides by them)."""
    scores = np.asarray(scores, np.float32)
    T = scores.shape[0]
    if T == 0:
        return 0.0
    entropy = np.empty(T)  # each frame's in float64; the (T, n_classes) temporaries a block at a time
    for a in range(0, T, ENTROPY_BLOCK_FRAMES):
        log_post = scores[a:a + ENTROPY_BLOCK_FRAMES]
        if classifier.prior_division:
            log_post = log_post + classifier.log_prior
        entropy[a:a + ENTROPY_BLOCK_FRAMES] = -(np.exp(log_post) * log_post).sum(axis=1, dtype=np.float64)
    return float(entropy.mean())


def level_statistics(samples, band: bool = True) -> tuple:
    """``(energy range in dB, high-band share in dB)`` of a recording's samples (n,) at 16 kHz (an
    array or a :class:`~aligner.io.audio.FileSamples`, read ``ENERGY_BLOCK_FRAMES`` frames at a
    time), over its frames (25 ms every 10 ms, :mod:`aligner.frames`):

    - the energy range: the 95th minus the 10th percentile of the frames' mean powers (dB);
    - the high-band share: the energy between ``HIGH_BAND_HZ`` and 8 kHz over that between
      ``SPEECH_BAND_HZ`` and ``HIGH_BAND_HZ`` (dB), summed over every ``BAND_STRIDE``-th frame of the
      louder half of each block's frames (Hann-windowed spectra). A phone line or a muffled
      microphone leaves almost nothing above 3.4 kHz; clean speech's fricatives and bursts do.
      None when ``band`` is false (only the range is computed)."""
    T = n_frames(len(samples))
    if T < 1:
        return 0.0, (0.0 if band else None)
    power = np.empty(T)
    high = mid = 0.0
    per_window, per_shift = WINDOW // _PIECE, FRAME_SHIFT // _PIECE
    for a in range(0, T, ENERGY_BLOCK_FRAMES):
        b = min(T, a + ENERGY_BLOCK_FRAMES)
        flat = np.asarray(samples[FRAME_SHIFT * a:FRAME_SHIFT * (b - 1) + WINDOW], np.float32)
        seg = flat.reshape(-1, _PIECE)
        pieces = np.einsum("ij,ij->i", seg, seg)  # energy of each 5 ms piece (float32: 80 squares)
        running = np.concatenate(([0.0], np.cumsum(pieces, dtype=np.float64)))
        starts = per_shift * np.arange(b - a)  # frame t spans pieces [2 t, 2 t + 5)
        block = (running[starts + per_window] - running[starts]) / WINDOW
        power[a:b] = block
        if band:
            half = (b - a) // 2
            loud = np.flatnonzero(block >= np.partition(block, half)[half])[::BAND_STRIDE]  # median, cheaply
            frames = flat[FRAME_SHIFT * loud[:, None] + _WINDOW_OFFSETS]  # (loud frames, WINDOW)
            spectra = np.abs(np.fft.rfft(frames * _HANN, axis=1)) ** 2  # (frames, WINDOW / 2 + 1)
            mid += float(spectra[:, _MID_BINS].sum())
            high += float(spectra[:, _HIGH_BINS].sum())
    level = np.sort(10.0 * np.log10(np.maximum(power, ENERGY_FLOOR)))
    rank = np.arange(T)
    low, top = np.interp([0.10 * (T - 1), 0.95 * (T - 1)], rank, level)  # np.percentile's, without its overhead
    share = None
    if band:
        share = float(10.0 * np.log10(max(high, ENERGY_FLOOR) / max(mid, ENERGY_FLOOR)))
    return float(top - low), share


def gate_statistics(classifier, samples: np.ndarray) -> tuple:
    """``(mean posterior entropy in nats, energy range in dB, high-band share in dB)`` of a 16 kHz
    recording (n,), the three statistics the gates read, with ``classifier`` scoring its
    :func:`~aligner.features.mfcc.mfcc_features` (for setting gates on recordings of speakers a
    fold model never heard)."""
    from aligner.features.mfcc import mfcc_features

    entropy = posterior_entropy(classifier, classifier.scores(mfcc_features(samples)))
    return (entropy, *level_statistics(samples))


def gate_for_false_alarm(clean_values, false_alarm: float = DEFAULT_FALSE_ALARM, below: bool = False) -> float:
    """The gate that a share ``false_alarm`` (0 < share < 1) of ``clean_values`` (a statistic of
    clean recordings of unseen speakers, e.g. their mean posterior entropies) lies above, or
    with ``below``, below (e.g. their energy ranges)."""
    values = np.asarray(clean_values, np.float64)
    if values.ndim != 1 or values.size < 10 or not np.all(np.isfinite(values)):
        raise ValueError(f"the gate needs at least 10 finite values, got {values.size}")
    if not 0.0 < false_alarm < 1.0:
        raise ValueError(f"false_alarm must lie strictly between 0 and 1, got {false_alarm}")
    return float(np.quantile(values, false_alarm if below else 1.0 - false_alarm))


def check_gates(gate, range_gate, band_gate, n_classes: int) -> None:
    """Raise ValueError unless ``gate`` is an entropy in (0, log ``n_classes``) nats (above that
    no recording could pass it), ``range_gate`` None or in (0, :data:`MAX_RANGE_GATE_DB`) dB,
    and ``band_gate`` None or within +-:data:`MAX_BAND_GATE_DB` dB; each a real number (not a
    bool or a string, as a damaged model file might hold)."""
    def number(value):
        return isinstance(value, numbers.Real) and not isinstance(value, bool)

    if not number(gate) or not 0 < gate < np.log(n_classes):
        raise ValueError(f"the condition expert's gate must be an entropy in (0, log {n_classes}) nats, got {gate!r}")
    if range_gate is not None and (not number(range_gate) or not 0 < range_gate < MAX_RANGE_GATE_DB):
        raise ValueError(f"the condition expert's range gate must lie in (0, {MAX_RANGE_GATE_DB}) dB, "
                         f"got {range_gate!r}")
    if band_gate is not None and (not number(band_gate) or not -MAX_BAND_GATE_DB < band_gate < MAX_BAND_GATE_DB):
        raise ValueError(f"the condition expert's band gate must lie within +-{MAX_BAND_GATE_DB} dB, got {band_gate!r}")


def attach_condition_expert(model, expert, gate: float, range_gate: float | None = None,
                            record: dict | None = None, band_gate: float | None = None,
                            band_expert=None, dereverb=None, denoise=None) -> None:
    """Give ``model`` (an :class:`~aligner.alignment.model.AlignmentModel`) the classifier, weights
    and refiner of ``expert`` (a model of the same inventory, trained with augmentation) as its
    condition expert, used for recordings whose posterior entropy exceeds ``gate`` (nats), whose
    energy range lies below ``range_gate`` (dB) or whose high-band share lies below ``band_gate``
    (dB; None = no such gate). ``band_expert``: a phone-line model (its ``front_band_hz`` set,
    trained on band-limited speech) that takes the recordings below ``band_gate`` instead (None:
    the expert takes them). ``dereverb``: :class:`~aligner.features.dereverb.DereverbSettings` with
    which the expert dereverberates the recordings it takes that pass their gate (None: never);
    ``denoise``: :class:`~aligner.features.denoise.DenoiseSettings` with which it suppresses the
    noise of those it does not dereverberate that pass theirs (None: never).
    ``record`` (JSON-able) is kept in ``model.training['condition_expert']``."""
    for name, other in (("condition expert", expert), ("band expert", band_expert)):
        if other is None:
            continue
        if other.inventory != model.inventory or other.phone_symbols != model.phone_symbols:
            raise ValueError(f"the {name} must tell apart the same classes and symbols as the model")
        if other.classifier.n_features != model.classifier.n_features:
            raise ValueError(f"the {name} reads other acoustic vectors than the model")
    if band_expert is not None and (band_expert.front_band_hz is None or band_gate is None):
        raise ValueError("a band expert needs its front-end band (front_band_hz) and a band gate")
    check_gates(gate, range_gate, band_gate, len(model.inventory))
    model.condition_expert = model.expert_view(expert.classifier, expert.weights, expert.refiner,
                                               front_dereverb=dereverb, front_denoise=denoise)
    model.condition_band_expert = (None if band_expert is None else model.expert_view(
        band_expert.classifier, band_expert.weights, band_expert.refiner, band_expert.front_band_hz))
    model.condition_gate = float(gate)
    model.condition_range_gate = None if range_gate is None else float(range_gate)
    model.condition_band_gate = None if band_gate is None else float(band_gate)
    model.training = dict(model.training, condition_expert=dict(
        record or {}, gate_entropy_nats=float(gate),
        gate_energy_range_db=None if range_gate is None else float(range_gate),
        gate_high_band_db=None if band_gate is None else float(band_gate),
        band_expert_front_band_hz=None if band_expert is None else list(band_expert.front_band_hz),
        front_dereverb=None if dereverb is None else dereverb.to_dict(),
        front_denoise=None if denoise is None else denoise.to_dict()))
