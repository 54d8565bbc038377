"""A trained aligner with a smaller frame classifier: its classifier distilled on a corpus.

:func:`distil_model` replaces a model's (clean) frame classifier by a student of one narrower
hidden layer trained to reproduce it (:func:`aligner.features.distil.distil_network`) on the
frames the teacher was trained on: the recordings of a corpus (without the speakers the model
was tested on, for a speaker-fold model), their vocal-tract-length-perturbed copies and,
optionally, their simulated-condition copies (the clean classifier also scores the degraded
recordings that no gate sends to the expert, and its posteriors' entropy is a gate). Everything
else of the model (durations, the 7 weights, refiner, confidence model, transcript check,
experts and gates) is kept: the student's scores stand in for the teacher's.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Callable, Optional

from aligner.alignment.model import AlignmentModel
from aligner.alignment.training import DEFAULT_WARPS, corpus_augmenter
from aligner.features.band import through_band
from aligner.features.distil import distil_network
from aligner.features.mfcc import mfcc_features
from aligner.io.audio import RepairedAudioWarning, load_audio
from aligner.io.corpus import find_utterances

#: hidden units of a distilled classifier
DEFAULT_STUDENT_UNITS = 256


def distillation_frames(model: AlignmentModel, corpus_dir, speakers=None, warps: tuple = DEFAULT_WARPS,
                        augment=None, progress: Optional[Callable[[int, int], None]] = None) -> tuple[list, list]:
    """``(frames, groups)``: the (T, 42) MFCC frames of the corpus's recordings (of ``speakers``
    when given, else all but the model's ``test_speakers``), through the model's band when it has
    one, with their VTLP copies at ``warps`` and, with an ``augment`` recipe
    (:class:`~aligner.features.augment.AugmentationRecipe`), its degraded copies; ``groups``
    names each array's recording."""
    utterances = find_utterances(corpus_dir)
    excluded = set(model.training.get("test_speakers", []))
    if speakers is not None:
        wanted = set(speakers)
        utterances = [u for u in utterances if u.speaker in wanted]
    else:
        utterances = [u for u in utterances if u.speaker not in excluded]
    if not utterances:
        raise ValueError(f"{corpus_dir}: no recordings of the model's training speakers")
    augmenter = corpus_augmenter(utterances, augment) if augment is not None and augment.copies > 0 else None
    frames, groups = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        for i, utt in enumerate(utterances):
            samples = through_band(load_audio(utt.audio), model.front_band_hz)
            copies = [mfcc_features(samples)] + [mfcc_features(samples, warp=w) for w in warps]
            if augmenter is not None:
                copies += [mfcc_features(c) for c in augmenter.copies(samples, utt.name, utt.speaker)]
            frames += copies
            groups += [utt.name] * len(copies)
            if progress:
                progress(i + 1, len(utterances))
    return frames, groups


def distil_model(model: AlignmentModel, corpus_dir, hidden: int = DEFAULT_STUDENT_UNITS, speakers=None,
                 warps: tuple = DEFAULT_WARPS, augment=None, progress=None, epoch_progress=None,
                 **settings) -> AlignmentModel:
    """``model`` with its frame classifier replaced by a student of ``hidden`` units distilled
    on the corpus at ``corpus_dir`` (:func:`distillation_frames`; ``settings`` go to
    :func:`~aligner.features.distil.distil_network`). The training record gains ``distilled``:
    the teacher's and the student's units, the frames, the epoch kept and its held-out loss."""
    frames, groups = distillation_frames(model, corpus_dir, speakers, warps, augment, progress)
    teacher = model.classifier
    student = distil_network(teacher, frames, hidden, groups=groups, progress=epoch_progress, **settings)
    record = {"teacher_units": int(teacher.hidden_weights.shape[1]), "student_units": int(student.hidden_weights.shape[1]),
              "frames": int(sum(len(f) for f in frames)), "arrays": len(frames),
              "degraded_copies_per_recording": 0 if augment is None else int(augment.copies),
              "vtlp_warps": list(warps), "epoch": int(student.network_epochs_),
              "held_out_loss": round(float(student.distil_loss_), 6), "seconds": round(student.train_seconds_, 1),
              "settings": {k: v for k, v in settings.items() if isinstance(v, (int, float, str))}}
    return replace(model, classifier=student, training={**model.training, "distilled": record})
