"""Which decoder aligns a recording: the clean model, or its multi-condition expert.

A classifier trained on degraded copies (``aligner train --augment``) aligns reverberant rooms,
phone lines and noise better than the clean one, and clean studio speech slightly worse. An
alignment model may therefore carry a *condition expert*: a second frame classifier with its own
7 weights and boundary refiner (trained with augmentation), sharing the model's duration
statistics, confidence model, transcript check and phone inventory. A recording goes to the
expert when the clean classifier is unsure of it (the mean entropy of its frame posteriors, in
nats, exceeds the model's entropy gate) or when its level barely rises above its floor (the range
between the 10th and 95th percentiles of its frame energies, in dB, falls below the model's range
gate: noise fills the pauses, reverberation the gaps between sounds).

Both gates are set from recordings of speakers the clean classifier never heard (the out-of-fold
decodes of ``benchmarks.eval_alignment_cv`` fold models): each as the value that only a chosen
share of those clean recordings lies beyond (:func:`gate_for_false_alarm`). About twice that
share of clean recordings goes to the expert, and recordings less like the clean training speech
go there more often.
"""

from __future__ import annotations

import numpy as np

from aligner.frames import FRAME_SHIFT, WINDOW, n_frames

#: samples per piece of :func:`energy_range_db` (5 ms): a frame is 5 pieces, a frame shift 2
_PIECE = 80
assert WINDOW % _PIECE == 0 and FRAME_SHIFT % _PIECE == 0
#: frames whose energies :func:`energy_range_db` computes at once
ENERGY_BLOCK_FRAMES = 20_000
#: floor of a frame's mean power (full-scale units squared): digital silence counts as -200 dB, far
#: below any recorded noise floor, so a quiet recording's range is its own (a floor near real
#: levels, e.g. -100 dB, would narrow the range of a recording made 30-40 dB too quietly)
ENERGY_FLOOR = 1e-20
#: the largest range gate a model may hold (dB): more than the floor allows
MAX_RANGE_GATE_DB = 200.0
#: share of clean recordings of unseen speakers that the shipped gate sends to the expert
DEFAULT_FALSE_ALARM = 0.1


def posterior_entropy(classifier, scores: np.ndarray) -> float:
    """Mean over frames of the entropy (nats) of ``classifier``'s posteriors, from its
    (T, n_classes) ``scores`` (:meth:`~aligner.features.frame_classifier.FrameClassifier.scores`:
    the log posteriors, minus the log class priors when the classifier divides by them)."""
    log_post = np.asarray(scores, np.float32)
    if log_post.shape[0] == 0:
        return 0.0
    if classifier.prior_division:
        log_post = log_post + classifier.log_prior
    return float(-(np.exp(log_post) * log_post).sum(axis=1, dtype=np.float64).mean())


def energy_range_db(samples) -> float:
    """The 95th minus the 10th percentile (dB) of the mean power of a recording's frames (25 ms
    every 10 ms, :mod:`aligner.frames`), for samples (n,) at 16 kHz: an array or a
    :class:`~aligner.io.audio.FileSamples`, read ``ENERGY_BLOCK_FRAMES`` frames at a time."""
    T = n_frames(len(samples))
    if T < 1:
        return 0.0
    power = np.empty(T)
    per_window, per_shift = WINDOW // _PIECE, FRAME_SHIFT // _PIECE
    for a in range(0, T, ENERGY_BLOCK_FRAMES):
        b = min(T, a + ENERGY_BLOCK_FRAMES)
        seg = np.asarray(samples[FRAME_SHIFT * a:FRAME_SHIFT * (b - 1) + WINDOW], np.float32).reshape(-1, _PIECE)
        pieces = np.einsum("ij,ij->i", seg, seg)  # energy of each 5 ms piece (float32: 80 squares)
        running = np.concatenate(([0.0], np.cumsum(pieces, dtype=np.float64)))
        starts = per_shift * np.arange(b - a)  # frame t spans pieces [2 t, 2 t + 5)
        power[a:b] = (running[starts + per_window] - running[starts]) / WINDOW
    level = np.sort(10.0 * np.log10(np.maximum(power, ENERGY_FLOOR)))
    rank = np.arange(T)
    low, high = np.interp([0.10 * (T - 1), 0.95 * (T - 1)], rank, level)  # np.percentile's, without its overhead
    return float(high - low)


def gate_statistics(classifier, samples: np.ndarray) -> tuple:
    """``(mean posterior entropy in nats, energy range in dB)`` of a 16 kHz recording (n,), the
    two statistics the gates read, with ``classifier`` scoring its
    :func:`~aligner.features.mfcc.mfcc_features` (for setting gates on recordings of speakers a
    fold model never heard)."""
    from aligner.features.mfcc import mfcc_features

    return posterior_entropy(classifier, classifier.scores(mfcc_features(samples))), energy_range_db(samples)


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


def attach_condition_expert(model, expert, gate: float, range_gate: float | None = None,
                            record: dict | None = None) -> None:
    """Give ``model`` (an :class:`~aligner.alignment.model.AlignmentModel`) the classifier, weights
    and refiner of ``expert`` (a model of the same inventory, trained with augmentation) as its
    condition expert, used for recordings whose posterior entropy exceeds ``gate`` (nats) or whose
    energy range lies below ``range_gate`` (dB; None = entropy only).
    ``record`` (JSON-able) is kept in ``model.training['condition_expert']``."""
    if expert.inventory != model.inventory or expert.phone_symbols != model.phone_symbols:
        raise ValueError("the condition expert must tell apart the same classes and symbols as the model")
    if expert.classifier.n_features != model.classifier.n_features:
        raise ValueError("the condition expert reads other acoustic vectors than the model")
    if not np.isfinite(gate) or gate <= 0:
        raise ValueError(f"the gate must be a positive entropy in nats, got {gate}")
    if range_gate is not None and not 0 < range_gate < MAX_RANGE_GATE_DB:
        raise ValueError(f"the range gate must lie in (0, {MAX_RANGE_GATE_DB}) dB, got {range_gate}")
    model.condition_expert = model.expert_view(expert.classifier, expert.weights, expert.refiner)
    model.condition_gate = float(gate)
    model.condition_range_gate = None if range_gate is None else float(range_gate)
    model.training = dict(model.training, condition_expert=dict(
        record or {}, gate_entropy_nats=float(gate),
        gate_energy_range_db=None if range_gate is None else float(range_gate)))
