"""A trained forced aligner: frame classifier + phone-duration statistics + the 7 weights.

:class:`AlignmentModel` turns a recording's samples and its phone symbols into phone
intervals in seconds: 10 ms MFCC frames (:mod:`aligner.features.mfcc`), classifier scores
(:mod:`aligner.classifier`), the 7-dim feature map and its segmental DP
(:mod:`aligner.tasks.alignment`). It saves to and loads from a model bundle
(:mod:`aligner.models`), without pickle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .classifier import FrameClassifier
from .errors import ModelError
from .features.mfcc import FRAME_SHIFT, SAMPLE_RATE, boundary_time, mfcc_features
from .models import ALIGNMENT_KIND, load_bundle, save_bundle
from .phones import CLASSES39, PhoneSet
from .tasks.alignment import FEATURE_NAMES, AlignmentInput, AlignmentTask, make_alignment_input

#: longest phone the decoder considers by default (frames; 10 ms each), except silence
MAX_PHONE_FRAMES = 60
#: longest silence the decoder considers (frames)
MAX_SILENCE_FRAMES = 200
SILENCE_CLASS = CLASSES39.index("sil")


@dataclass
class DurationStats:
    """Per-class phone durations, in frames: mean, std, and the longest length the decoder tries."""

    mean: np.ndarray
    std: np.ndarray
    max_frames: np.ndarray

    @classmethod
    def fit(cls, lengths_by_class: list, n_classes: int = len(CLASSES39),
            max_phone_frames: int = MAX_PHONE_FRAMES, max_silence_frames: int = MAX_SILENCE_FRAMES):
        """Statistics from observed lengths: ``lengths_by_class[c]`` is a list of lengths (frames).

        A class never seen gets the mean and std of all phones. ``max_frames`` is twice the
        longest observed length, at least 15 frames, capped at ``max_phone_frames``
        (``max_silence_frames`` for silence; an unseen class gets the cap). The decoder's time
        grows with these lengths: on the TIMIT sample, silences of up to 99 frames give 198.
        """
        every = np.concatenate([np.asarray(v, float) for v in lengths_by_class if len(v)])
        mean = np.full(n_classes, every.mean())
        std = np.full(n_classes, every.std())
        caps = np.full(n_classes, max_phone_frames, dtype=np.int64)
        caps[SILENCE_CLASS] = max_silence_frames
        max_frames = caps.copy()
        for c in range(n_classes):
            v = np.asarray(lengths_by_class[c], float)
            if len(v):
                mean[c] = v.mean()
                if len(v) > 1:
                    std[c] = v.std()
                max_frames[c] = int(np.clip(2 * v.max(), 15, caps[c]))
        return cls(mean, np.maximum(std, 1.0), max_frames)

    def to_arrays(self) -> dict:
        return {"mean": self.mean, "std": self.std, "max_frames": self.max_frames}

    @classmethod
    def from_arrays(cls, d: dict):
        return cls(np.asarray(d["mean"], float), np.asarray(d["std"], float),
                   np.asarray(d["max_frames"], np.int64))


@dataclass
class AlignmentModel:
    """Everything needed to align: classifier, duration statistics, weights (7,)."""

    classifier: FrameClassifier
    durations: DurationStats
    weights: np.ndarray
    min_frames: int = 1
    training: dict = field(default_factory=dict)

    @property
    def task(self) -> AlignmentTask:
        return AlignmentTask()

    def make_input(self, frames: np.ndarray, phone_classes: np.ndarray, scores: np.ndarray | None = None,
                   name: str = "<utterance>") -> AlignmentInput:
        """The DP input of one utterance from its MFCC frames (T, 42) and phone classes (K,)."""
        if scores is None:
            scores = self.classifier.scores(frames)
        d = self.durations
        return make_alignment_input(scores, frames, phone_classes, d.mean[phone_classes],
                                    d.std[phone_classes], d.max_frames[phone_classes],
                                    self.min_frames, name=name)

    def align_frames(self, x: AlignmentInput) -> np.ndarray:
        """Start frame of every phone (K,), by the DP with this model's weights."""
        return self.task.decode(x, self.weights)

    def align(self, samples: np.ndarray, symbols: list, phone_set: PhoneSet,
              name: str = "<utterance>") -> list:
        """Phone intervals ``[(start_s, end_s, symbol), ...]`` covering the whole recording.

        ``samples``: float mono audio at 16 kHz. Phone k's start is the boundary before its
        first frame (:func:`~aligner.features.mfcc.boundary_time`); the first phone starts at 0
        and the last ends at the end of the audio.
        """
        frames = mfcc_features(samples, SAMPLE_RATE)
        classes = phone_set.class_indices(symbols)
        y = self.align_frames(self.make_input(frames, classes, name=name))
        return starts_to_intervals(y, symbols, len(samples) / SAMPLE_RATE)

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory) -> None:
        arrays = {"classifier": self.classifier.to_arrays(), "durations": self.durations.to_arrays()}
        params = {"alignment": {"weights": [float(v) for v in self.weights],
                                "feature_names": list(FEATURE_NAMES),
                                "min_frames": int(self.min_frames),
                                "classes": list(CLASSES39),
                                "frame_shift_samples": FRAME_SHIFT,
                                "sample_rate": SAMPLE_RATE}}
        save_bundle(directory, ALIGNMENT_KIND, arrays, params, self.training)

    @classmethod
    def load(cls, directory) -> "AlignmentModel":
        arrays, params, manifest = load_bundle(directory, ALIGNMENT_KIND)
        try:
            p = params["alignment"]
            weights = np.asarray(p["weights"], dtype=float)
            if weights.shape != (len(FEATURE_NAMES),) or not np.all(np.isfinite(weights)):
                raise ValueError(f"weights must be {len(FEATURE_NAMES)} finite numbers")
            if list(p["classes"]) != list(CLASSES39):
                raise ValueError("phone classes differ from this aligner's")
            durations = DurationStats.from_arrays(arrays["durations"])
            if durations.mean.shape != (len(CLASSES39),):
                raise ValueError("duration statistics have the wrong shape")
            classifier = FrameClassifier.from_arrays(arrays["classifier"])
            min_frames = int(p["min_frames"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelError(f"{directory}: not a usable alignment model ({exc})") from None
        return cls(classifier, durations, weights, min_frames, manifest.get("training", {}))


def starts_to_intervals(y: np.ndarray, symbols: list, duration_s: float) -> list:
    """Phone start frames -> ``[(start_s, end_s, symbol)]``; first start 0, last end ``duration_s``."""
    starts = [0.0] + [float(boundary_time(int(t))) for t in y[1:]]
    ends = starts[1:] + [float(duration_s)]
    return [(s, e, sym) for s, e, sym in zip(starts, ends, symbols)]
