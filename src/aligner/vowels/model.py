"""The vowel duration model: weights, column selection, duration limits and prior, classifier.

A :class:`VowelModel` measures the vowel of a CVC recording (or of a window of a longer one):
5 ms acoustic frames (:mod:`aligner.features.vowel_acoustics`), the onset/offset feature map
and exact decoder of :mod:`aligner.vowels.task`, and trained weights.

The frame classifier whose vowel/nasal probabilities feed columns 9-13 is **copied into the
bundle** (``classifier.npz``, about 1.7 MB) rather than referenced: the weights were learned
on that classifier's outputs, so retraining the alignment model's classifier must not
silently change what the vowel model sees. The bundle records the SHA-256 of the alignment
bundle's ``classifier.npz`` it copied (``training["classifier_source"]``).

Front ends. A model reads the columns of its front end: ``"cuts"`` (22 columns,
:mod:`aligner.features.vowel_acoustics`: each cut or recording analysed afresh, with the copied
classifier) or ``"frames"`` (23 columns, :mod:`aligner.vowels.frame_columns`: the forced aligner's
MFCC frames and classifier posteriors interpolated to 5 ms, plus time-domain measures; for
re-measuring the vowels of an alignment, :mod:`aligner.vowels.fused`, where the aligner has
computed those). A ``"frames"`` bundle is written as format 2, which readers of format 1 refuse.

Bundle layout (:mod:`aligner.io.bundles` conventions: ``np.load(allow_pickle=False)``, JSON, a
SHA-256 manifest; kind ``"vowels"``)::

    vowels.json       weights, columns, widths, outside width, duration limits and prior,
                      standardisation (center/scale), tolerances
    classifier.npz    FrameClassifier.to_arrays()
    manifest.json
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from aligner.features.frame_classifier import FrameClassifier
from aligner.errors import AlignerError, AlignmentError, FeatureError, ModelError
from aligner.features.vowel_acoustics import (BLOCK_FRAMES, FRAME_SECONDS,
                                       SAMPLE_RATE, frames_to_seconds, n_frames, seconds_to_frames, vowel_acoustics,
                                       vowel_acoustics_many)
from aligner.vowels.frame_columns import (CUTS_FRONT_END, FRAMES_FRONT_END, FRONT_ENDS, VOICING_COLUMN,
                                         VOWEL_SUM_COLUMN, column_names_of, frame_acoustics)
from aligner.io.bundles import VOWEL_KIND, load_bundle, save_bundle, whole_number
from aligner.vowels.task import (DEFAULT_OUTSIDE_WIDTH, DEFAULT_WIDTHS, DurationPrior, VowelTask,
                           make_vowel_input, n_vowel_features, vowel_feature_names)

#: bump when the meaning of ``vowels.json`` changes (2: the ``front_end`` key, for ``"frames"`` models)
VOWEL_FORMAT = 2


@dataclass(frozen=True)
class VowelMeasurement:
    """One measured vowel, seconds from the start of the recording."""

    onset_s: float
    offset_s: float
    score: float  #: the decoder's objective ``w . phi(x, y_hat)`` (higher = more confident)
    onset_frame: int  #: first vowel frame (5 ms frames of the whole recording)
    offset_frame: int  #: last vowel frame
    #: "" or ``low_confidence``: the window's voiced frames never looked like a vowel in the same
    #: frame (:meth:`VowelModel.vowel_like_flag`); the best candidate is measured all the same
    flag: str = ""

    @property
    def duration_s(self) -> float:
        return self.offset_s - self.onset_s


@dataclass
class VowelModel:
    """Everything :meth:`measure` needs.

    Attributes:
        classifier: the frame classifier (columns 9-13 of the acoustics).
        weights: (n_features,) weights on the standardised feature map.
        columns: acoustic columns used (indices into
            :data:`~aligner.features.vowel_acoustics.COLUMN_NAMES`).
        widths: edge widths, frames; outside_width: frames.
        min_dur, max_dur: searched durations ``t_e - t_b``, frames (5 ms).
        edge_margin: onsets and offsets are searched at least this many frames from the
            window's ends (the edge windows need context).
        prior: duration prior; center, scale: standardisation of the feature map.
        min_voicing, min_vowel_sum, min_vowel_like_frames: a window needs at least
            ``min_vowel_like_frames`` frames whose voicing (column 7) and summed vowel
            probability (column 11) reach these values, or it is reported as holding no vowel
            (white noise and silence fail it; so do some devoiced vowels such as TIMIT's
            ``ax-h``).
        tau_on, tau_off: tolerances of the training cost, frames.
        training: JSON-able record of how it was trained.
        front_end: ``"cuts"`` or ``"frames"`` (module docstring): which columns ``columns``
            index (:data:`~aligner.features.vowel_acoustics.COLUMN_NAMES` or
            :data:`~aligner.vowels.frame_columns.FRAME_COLUMN_NAMES`).
    """

    classifier: FrameClassifier
    weights: np.ndarray
    columns: tuple
    min_dur: int
    max_dur: int
    prior: DurationPrior
    center: np.ndarray
    scale: np.ndarray
    widths: tuple = DEFAULT_WIDTHS
    outside_width: int = DEFAULT_OUTSIDE_WIDTH
    edge_margin: int = 1
    min_voicing: float = 0.4
    min_vowel_sum: float = 0.2
    min_vowel_like_frames: int = 2
    tau_on: float = 0.0
    tau_off: float = 0.0
    training: dict = field(default_factory=dict)
    front_end: str = CUTS_FRONT_END

    def __post_init__(self):
        if self.front_end not in FRONT_ENDS:
            raise ModelError(f"vowel model front end must be one of {', '.join(FRONT_ENDS)}, got {self.front_end!r}")
        self.columns = tuple(int(c) for c in self.columns)
        self.widths = tuple(int(w) for w in self.widths)
        self.weights = np.asarray(self.weights, dtype=np.float64)
        self.task = VowelTask(self.tau_on, self.tau_off, n_columns=len(self.columns), n_widths=len(self.widths),
                              prior=self.prior, center=self.center, scale=self.scale, n_jobs=1)
        if self.weights.shape != (self.task.n_features,):
            raise ModelError(f"vowel model weights have shape {self.weights.shape}, "
                             f"expected ({self.task.n_features},)")

    # -- measuring ------------------------------------------------------------------------
    @property
    def column_names(self) -> tuple:
        """The names of the columns of this model's front end (22 or 23)."""
        return column_names_of(self.front_end)

    def acoustics(self, samples: np.ndarray) -> np.ndarray:
        """(T, 22) (or (T, 23)) acoustic frames of 16 kHz ``samples`` (:func:`vowel_acoustics`, or
        :func:`~aligner.vowels.frame_columns.frame_acoustics` for a ``"frames"`` model)."""
        if self.front_end == FRAMES_FRONT_END:
            return frame_acoustics(np.asarray(samples, dtype=np.float32), self.classifier)
        return vowel_acoustics(samples, self.classifier)

    def vowel_like_flag(self, features: np.ndarray, name: str = "<cut>") -> str:
        """``""`` when ``features`` (T, 22) hold vowel-like frames (voiced and vowel-like in the
        same frame), ``"low_confidence"`` when they hold voiced frames but none of those;
        raises :class:`AlignmentError` (naming ``name``) when nothing is voiced: silence or
        noise, where no vowel can be measured."""
        frames = self.front_end == FRAMES_FRONT_END
        voicing = features[:, VOICING_COLUMN if frames else 7]
        vowel_sum = features[:, VOWEL_SUM_COLUMN if frames else 11]
        n = int(np.count_nonzero((voicing >= self.min_voicing) & (vowel_sum >= self.min_vowel_sum)))
        if n >= self.min_vowel_like_frames:
            return ""
        if int(np.count_nonzero(voicing >= self.min_voicing)) < max(self.min_vowel_like_frames, 1):
            raise AlignmentError(
                f"{name}: no voiced frames (voicing >= {self.min_voicing:g} in fewer than "
                f"{max(self.min_vowel_like_frames, 1)} frames of 5 ms; highest voicing {float(voicing.max()):.2f}): "
                f"silence or noise, no vowel to measure")
        return "low_confidence"

    def decode_frames(self, features: np.ndarray, name: str = "<cut>", first: int = 0, last: int | None = None):
        """``((t_b, t_e), score)`` for (T, 22) frames, the vowel searched within frames ``first..last``.

        Onsets and offsets keep ``edge_margin`` frames from the ends of the recording; the edge
        and outside windows may look past ``first``/``last`` into the rest of the recording.
        """
        T = features.shape[0]
        last = T - 1 if last is None else min(int(last), T - 1)
        lo, hi = max(int(first), self.edge_margin), min(last, T - 1 - self.edge_margin)
        # only the frames the windows can read: a window of a long recording costs its own length
        context = max(int(np.max(self.widths)), int(self.outside_width)) + 1
        a, b = max(0, lo - context), min(T, hi + context + 1)
        x = make_vowel_input(features[a:b], self.min_dur, self.max_dur, (lo - a, hi - a), (lo - a, hi - a),
                             columns=self.columns, widths=self.widths, outside_width=self.outside_width,
                             name=name)
        y, value = self.task.decode_with_value(x, self.weights)
        return (int(y[0]) + a, int(y[1]) + a), value

    def measure(self, samples: np.ndarray, window: Optional[tuple] = None, name: str = "<recording>"
                ) -> VowelMeasurement:
        """Measure the vowel in 16 kHz ``samples``, or within ``window = (start_s, end_s)`` of them.

        Raises :class:`~aligner.errors.AlignmentError` when no vowel of ``min_dur..max_dur`` fits or
        the window holds no voiced frames (:meth:`vowel_like_flag`; voiced frames that never look
        like a vowel give the best candidate, flagged ``low_confidence``),
        :class:`~aligner.errors.FeatureError` for audio shorter than 25 ms or a window outside the
        recording.
        """
        result = self.measure_windows(samples, [window], [name])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def measure_windows(self, samples: np.ndarray, windows: Sequence, names: Sequence[str]) -> list:
        """One :class:`VowelMeasurement` (or the :class:`~aligner.errors.AlignerError` explaining why
        not) per window ``(start_s, end_s)`` (``None`` = the whole recording), in order.

        The acoustics are computed once, over the whole recording (levels are z-scored over it),
        and each vowel is searched with its onset and offset inside its window.
        """
        return self.measure_many([(samples, windows, names)])[0]

    def measure_many(self, recordings: Sequence) -> list:
        """:meth:`measure_windows` of each ``(samples, windows, names)`` of ``recordings``, in
        order (a list of result lists; the same results as one call each): the acoustics of the
        recordings of up to :data:`~aligner.features.vowel_acoustics.BLOCK_FRAMES` frames are
        computed together (:func:`~aligner.features.vowel_acoustics.vowel_acoustics_many`);
        longer ones are measured one at a time, their frames dropped before the next."""
        arrays = [np.asarray(samples, dtype=np.float32) for samples, _, _ in recordings]
        out: list = [None] * len(arrays)
        if self.front_end == FRAMES_FRONT_END:
            for i, a in enumerate(arrays):
                try:
                    features = self.acoustics(a)
                except FeatureError as exc:
                    features = exc
                out[i] = self._measure_frames(features, a.shape[0] / SAMPLE_RATE, *recordings[i][1:])
            return out
        short = [i for i, a in enumerate(arrays) if a.ndim == 1 and n_frames(a.shape[0]) <= BLOCK_FRAMES]
        for i, features in zip(short, vowel_acoustics_many([arrays[i] for i in short], self.classifier)):
            out[i] = self._measure_frames(features, arrays[i].shape[0] / SAMPLE_RATE, *recordings[i][1:])
        for i in sorted(set(range(len(arrays))) - set(short)):  # long: one at a time (memory)
            features = vowel_acoustics_many([arrays[i]], self.classifier)[0]
            out[i] = self._measure_frames(features, arrays[i].shape[0] / SAMPLE_RATE, *recordings[i][1:])
        return out

    def _measure_frames(self, features, duration: float, windows: Sequence, names: Sequence[str]) -> list:
        """:meth:`measure_windows` given the recording's (T, 22) frames (or the
        :class:`FeatureError` computing them raised) and its duration, seconds."""
        if isinstance(features, FeatureError):
            return [FeatureError(f"{name}: {features}") for name in names]
        T = features.shape[0]
        out = []
        for window, name in zip(windows, names):
            try:
                if window is None:
                    first, last = 0, T - 1
                else:
                    start_s, end_s = float(window[0]), float(window[1])
                    if end_s <= start_s:
                        raise FeatureError(f"{name}: empty search window {start_s:.3f}-{end_s:.3f} s")
                    if start_s >= duration:
                        raise FeatureError(f"{name}: search window {start_s:.3f}-{end_s:.3f} s starts after "
                                           f"the end of the audio ({duration:.3f} s)")
                    first, last = seconds_to_frames(max(start_s, 0.0), min(end_s, duration))
                flag = self.vowel_like_flag(features[first:last + 1], name)
                (t_b, t_e), value = self.decode_frames(features, name, first, last)
                on, off = frames_to_seconds(t_b, t_e)
                out.append(VowelMeasurement(on, min(off, duration), float(value), t_b, t_e, flag))
            except AlignerError as exc:
                out.append(exc)
        return out

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory) -> None:
        names = self.column_names
        params = {"vowels": {
            # a "cuts" model stays readable by format-1 readers
            "format": VOWEL_FORMAT if self.front_end == FRAMES_FRONT_END else 1,
            "front_end": self.front_end,
            "weights": [float(v) for v in self.weights],
            "feature_names": vowel_feature_names([names[c] for c in self.columns], self.widths),
            "columns": list(self.columns),
            "column_names": [names[c] for c in self.columns],
            "widths": list(self.widths),
            "outside_width": int(self.outside_width),
            "min_dur": int(self.min_dur),
            "max_dur": int(self.max_dur),
            "edge_margin": int(self.edge_margin),
            "vowel_like": {"min_voicing": self.min_voicing, "min_vowel_sum": self.min_vowel_sum,
                           "min_frames": int(self.min_vowel_like_frames)},
            "prior": {"mean": self.prior.mean, "std": self.prior.std, "log_mean": self.prior.log_mean,
                      "log_std": self.prior.log_std},
            "center": [float(v) for v in self.center],
            "scale": [float(v) for v in self.scale],
            "tau_on": self.tau_on, "tau_off": self.tau_off,
            "frame_seconds": FRAME_SECONDS, "sample_rate": SAMPLE_RATE,
        }}
        save_bundle(directory, VOWEL_KIND, {"classifier": self.classifier.to_arrays()}, params, self.training)

    @classmethod
    def load(cls, directory) -> "VowelModel":
        """Read and verify a bundle; :class:`ModelError` naming the directory if it is unusable."""
        arrays, params, manifest = load_bundle(directory, VOWEL_KIND)
        try:
            p = params["vowels"]
            if int(p["format"]) > VOWEL_FORMAT:
                raise ValueError(f"vowel model format {p['format']} is newer than this aligner reads")
            front_end = p.get("front_end", CUTS_FRONT_END)
            n_columns = len(column_names_of(front_end))  # ValueError for an unknown front end
            columns = tuple(int(c) for c in p["columns"])
            if not columns or min(columns) < 0 or max(columns) >= n_columns:
                raise ValueError(f"columns {list(columns)} outside 0..{n_columns - 1}")
            widths = tuple(int(w) for w in p["widths"])
            n = n_vowel_features(len(columns), len(widths))
            vectors = {k: np.asarray(p[k], dtype=np.float64) for k in ("weights", "center", "scale")}
            for k, v in vectors.items():
                if v.shape != (n,) or not np.all(np.isfinite(v)):
                    raise ValueError(f"{k} must be {n} finite numbers")
            pr = p["prior"]
            prior = DurationPrior(float(pr["mean"]), float(pr["std"]), float(pr["log_mean"]), float(pr["log_std"]))
            min_dur = whole_number(p["min_dur"], "min_dur", 1, 2000)
            max_dur = whole_number(p["max_dur"], "max_dur", 1, 2000)
            if not 1 <= min_dur <= max_dur:
                raise ValueError(f"duration limits {min_dur}-{max_dur} frames are inconsistent")
            for w in widths:
                whole_number(w, "widths", 1, 400)
            outside_width = whole_number(p["outside_width"], "outside_width", 1, 400)
            edge_margin = whole_number(p.get("edge_margin", 1), "edge_margin", 0, 400)
            for name, value in (("prior mean", prior.mean), ("prior std", prior.std),
                                ("prior log_mean", prior.log_mean), ("prior log_std", prior.log_std)):
                if not np.isfinite(value):
                    raise ValueError(f"{name} must be a finite number, got {value!r}")
            classifier = FrameClassifier.from_arrays(arrays["classifier"])
            vl = p.get("vowel_like", {})
            min_voicing, min_vowel_sum = float(vl.get("min_voicing", 0.4)), float(vl.get("min_vowel_sum", 0.2))
            if not (0.0 <= min_voicing <= 1.0 and 0.0 <= min_vowel_sum <= 1.0):
                raise ValueError(f"vowel_like thresholds {min_voicing}, {min_vowel_sum} outside 0..1")
            tau_on, tau_off = float(p.get("tau_on", 0.0)), float(p.get("tau_off", 0.0))
            if not (np.isfinite(tau_on) and np.isfinite(tau_off) and tau_on >= 0 and tau_off >= 0):
                raise ValueError(f"tau_on, tau_off must be finite and >= 0, got {tau_on}, {tau_off}")
            return cls(classifier, vectors["weights"], columns, min_dur, max_dur, prior, vectors["center"],
                       vectors["scale"], widths, outside_width, edge_margin, min_voicing, min_vowel_sum,
                       whole_number(vl.get("min_frames", 2), "vowel_like min_frames", 0, 10**6), tau_on, tau_off,
                       manifest.get("training", {}), front_end)
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelError(f"{directory}: not a usable vowel model ({exc})") from None


def duration_limits(durations: Sequence[int], low_quantile: float = 0.0, slack: float = 0.25) -> tuple[int, int]:
    """``(min_dur, max_dur)`` frames from training durations ``t_e - t_b``: the extremes widened by ``slack``."""
    d = np.asarray(durations, dtype=np.float64)
    lo = max(1, int(np.floor(np.quantile(d, low_quantile) * (1 - slack))))
    hi = int(np.ceil(d.max() * (1 + slack)))
    return lo, max(hi, lo)
