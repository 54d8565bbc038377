"""Training the vowel duration model on CVC tokens of a TIMIT-layout corpus (SPEC sections 4-5).

    from aligner.vowels.training import train_vowel_model
    model = train_vowel_model("timit-sample/")           # a VowelModel; model.save("my-vowels/")

1. **Tokens.** :func:`~aligner.vowels.cvc.cvc_tokens` on every utterance with a ``.phn``
   (:func:`~aligner.io.corpus.find_utterances`). Each cut (first consonant of the run before the
   vowel to the last of the run after it) is analysed on its own audio, as a user's CVC
   recording would be: 22 acoustic columns per 5 ms frame
   (:func:`~aligner.features.vowel_acoustics.vowel_acoustics`, the frame classifier of an
   alignment model). The label is ``(t_b, t_e)``, the first and last vowel frame
   (:func:`~aligner.features.vowel_acoustics.seconds_to_frames`).
2. **Inputs.** :func:`vowel_input` builds the decoder's input the way
   :meth:`VowelModel.decode_frames <aligner.vowels.model.VowelModel.decode_frames>` does at
   measuring time (onsets and offsets ``edge_margin`` frames from the cut's ends), with the
   duration limits of :func:`~aligner.vowels.model.duration_limits` (training durations'
   extremes widened by 25 %).
3. **Selection.** Speaker-disjoint folds (:func:`~aligner.io.corpus.speaker_folds`). Within a
   fold, :data:`N_VALIDATION_SPEAKERS` of the other speakers are the validation set
   (:func:`validation_speakers`); every candidate (trainer settings of :data:`TRAINER_GRID` x
   edge-width set) is fitted on the rest with early stopping on the validation cost (the
   vowel task's cost, orbit eq. 38 in frames with tolerance ``tau``;
   :class:`aligner.learn.ValidationSearch`), and the candidate with the lowest validation
   cost is scored on the test speakers, whose tokens are never used for a choice. Scores:
   :mod:`aligner.vowels.evaluation`, in seconds on the ``.phn`` times.
4. **The model.** The candidate with the lowest validation cost summed over the folds, refitted
   on every speaker's tokens for the median of its early-stopped epoch counts.

Units: frames are 5 ms (:data:`~aligner.features.vowel_acoustics.FRAME_SECONDS`), times in
seconds unless a name says ``_ms``, costs in frames.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from aligner.errors import AlignerError
from aligner.features.vowel_acoustics import (SAMPLE_RATE, VOWEL_COLUMNS, frames_to_seconds,
                                              seconds_to_frames, vowel_acoustics)
from aligner.io.audio import load_audio
from aligner.io.corpus import find_utterances, speaker_folds
from aligner.io.sphere_repair import read_sphere_header_file, samples_outside_range
from aligner.io.transcripts import read_phn
from aligner.frames import VOWEL_HOP as HOP
from aligner.vowels.cvc import cvc_tokens
from aligner.vowels.frame_columns import (CUTS_FRONT_END, FRAME_VOWEL_COLUMNS, FRAMES_FRONT_END, column_names_of,
                                         cut_columns, recording_frame_columns)
from aligner.vowels.evaluation import middle_third, vowel_metrics
from aligner.vowels.model import VowelModel, duration_limits
from aligner.vowels.task import PRIOR_FORMS, VowelInput, fit_vowel_task, make_vowel_input

#: ``progress(stage, done, total)``: called as work advances (e.g. ``("features", 12, 120)``)
Progress = Optional[Callable[[str, int, int], None]]

#: trainers tried by default (any name of :data:`aligner.learn.TRAINERS` with a :data:`TRAINER_GRID` entry)
DEFAULT_TRAINERS = ("perceptron", "svm", "orbit")
#: edge-width sets tried by default, frames (10/25/50 ms and 5/10/25/50 ms)
DEFAULT_WIDTH_SETS = ((2, 5, 10), (1, 2, 5, 10))
#: maximum epochs of every fit, with early stopping on the validation cost
DEFAULT_EPOCHS = 15
#: speaker folds of the cross-validation
DEFAULT_FOLDS = 4
#: cost tolerance on onset and offset, frames (5 ms)
DEFAULT_TAU = 1.0
#: validation speakers per fold
N_VALIDATION_SPEAKERS = 2
#: settings shared by every candidate (``seed`` fixes the example order; no training-cost pass)
BASE_TRAINER_PARAMS = {"seed": 0, "eval_train": False}
#: per trainer, the settings tried (each with every width set); the epoch count is chosen by early stopping
TRAINER_GRID = {
    "perceptron": [{"average": True}, {"average": False}],
    "svm": [{"eta0": e, "lam": lam, "average": True} for e in (1.0, 10.0) for lam in (0.0, 1e-3)],
    "orbit": [{"eta0": e, "average": a} for e in (0.01, 0.1) for a in (True, False)],
    "ramp": [{"eta0": e, "average": True, "init_epochs": 2} for e in (1.0, 10.0)],
    "direct_toward": [{"eta0": 1.0, "eps": p, "average": True} for p in (1.0, 10.0)],
    "direct_away": [{"eta0": 1.0, "eps": p, "average": True, "init_epochs": 2} for p in (1.0, 10.0)],
    "probit": [{"eta0": 1.0, "noise_scale": 1.0, "n_samples": 20, "average": True}],
}
#: the decoder's distance from the cut's ends, frames: the measuring model's own default
EDGE_MARGIN = VowelModel.edge_margin


class VowelSettingsError(AlignerError, ValueError):
    """Inconsistent training settings (an unknown trainer, no candidate, too few folds, ...)."""


# --------------------------------------------------------------------------------------
# tokens
# --------------------------------------------------------------------------------------


@dataclass
class CVCExample:
    """One CVC token ready for training: its cut's acoustics and the hand-labelled vowel."""

    speaker: str
    name: str  #: ``<utterance>#<k>:<vowel>``
    features: np.ndarray  #: (T, 22) acoustic frames of the cut, 5 ms apart
    y: np.ndarray  #: (t_b, t_e): first and last vowel frame of the cut
    true_s: tuple  #: (onset, offset) of the vowel, seconds from the start of the cut
    cut_s: float  #: length of the cut, seconds
    corrupted: bool = False  #: the cut holds samples outside the SPHERE header's range


def corrupted_samples(path, audio: np.ndarray) -> np.ndarray:
    """(n,) bool: samples of ``audio`` (as read by :func:`load_audio`, full scale 1) outside the
    range the SPHERE header of ``path`` records, by more than a lone CR -> LF change can move a
    sample; all False for files without a SPHERE header (:mod:`aligner.io.sphere_repair`).

    :func:`load_audio` repairs recordings that lost bytes to a newline conversion, so on the
    shared sample this flags nothing; it guards against damage the repair does not undo.
    """
    header = read_sphere_header_file(path)
    if header is None:
        return np.zeros(len(audio), dtype=bool)
    return samples_outside_range(np.round(np.asarray(audio, np.float64) * 32768), header)


def _add_example(examples: list, skipped: list, utt, what: str, suffix: str, cut: np.ndarray, on_s: float,
                 off_s: float, corrupted: bool, classifier, recording=None) -> None:
    """Append the :class:`CVCExample` of one vowel's ``cut`` (onset and offset in seconds from its
    start) to ``examples``, or why it is left out to ``skipped`` (``what`` names it there).
    ``recording``: for a ``"frames"`` model, ``(columns, first_sample)``: the recording's
    :func:`~aligner.vowels.frame_columns.recording_frame_columns` (or the error computing them
    raised) and the cut's first sample, a multiple of 80 (the cut's frames are the recording's)."""
    try:
        if recording is None:
            feats = vowel_acoustics(cut, classifier)
        else:
            columns, first = recording
            if isinstance(columns, Exception):
                raise columns
            feats = cut_columns(columns, first, first + len(cut))
    except AlignerError as exc:
        skipped.append(f"{utt.name} {what}: {exc}")
        return
    y = np.array(seconds_to_frames(on_s, off_s), dtype=np.int64)
    y[1] = min(y[1], len(feats) - 1)
    if not 0 <= y[0] < y[1]:
        skipped.append(f"{utt.name} {what}: vowel shorter than one frame")
        return
    examples.append(CVCExample(utt.speaker, f"{utt.name}{suffix}", feats, y, (on_s, off_s), len(cut) / SAMPLE_RATE,
                               corrupted))


def _recording_columns(audio: np.ndarray, classifier, front_end: str):
    """The recording's frame columns for a ``"frames"`` model (or the error computing them
    raised), None for a ``"cuts"`` model (each cut is analysed on its own)."""
    if front_end != FRAMES_FRONT_END:
        return None
    try:
        return recording_frame_columns(audio, classifier)
    except AlignerError as exc:
        return exc


def _frame_start(sample: int, not_after: float) -> int:
    """The sample of the 5 ms frame nearest ``sample`` (a multiple of 80), or the frame before it
    where that one would start after sample ``not_after`` (a cut never starts after its vowel)."""
    start = int(round(sample / HOP)) * HOP
    return start if start <= not_after else start - HOP


def load_cvc_examples(corpus, classifier, progress: Progress = None,
                      front_end: str = CUTS_FRONT_END) -> tuple[list, list]:
    """Every CVC token of a corpus, with its cut's acoustics: ``(examples, skipped)``.

    ``corpus``: a TIMIT-layout directory or a list of :class:`~aligner.io.corpus.Utterance`.
    ``classifier``: the frame classifier of the acoustics' vowel/nasal columns. ``examples`` are
    :class:`CVCExample` in corpus order; ``skipped`` lists one message per token left out
    (acoustics failed, or a vowel shorter than one 5 ms frame). Raises
    :class:`~aligner.errors.AlignerError` for unreadable audio or ``.phn`` files.
    ``front_end``: ``"cuts"`` (each cut analysed on its own audio) or ``"frames"`` (the
    recording's :func:`~aligner.vowels.frame_columns.recording_frame_columns` at the cut's frames,
    the cut starting on the 5 ms frame nearest its first consonant's start, as a fused cut does).
    """
    utterances = corpus if isinstance(corpus, list) else find_utterances(corpus)
    examples, skipped = [], []
    for i, utt in enumerate(utterances):
        audio = load_audio(utt.audio)
        bad = corrupted_samples(utt.audio, audio)
        columns = _recording_columns(audio, classifier, front_end)
        starts, ends, labels = read_phn(utt.transcript)
        for k, tok in enumerate(cvc_tokens(starts, ends, labels)):
            a = tok.cut_start
            if columns is not None:  # the cut starts on a frame
                a = _frame_start(a, a + tok.onset_in_cut)
            cut = audio[a:min(tok.cut_end, len(audio))]
            shift = (tok.cut_start - a) / SAMPLE_RATE
            _add_example(examples, skipped, utt, f"token {k}", f"#{k}:{tok.vowel}", cut,
                         tok.onset_in_cut / SAMPLE_RATE + shift, tok.offset_in_cut / SAMPLE_RATE + shift,
                         bool(bad[a:tok.cut_end].any()), classifier, None if columns is None else (columns, a))
        if progress:
            progress("features", i + 1, len(utterances))
    return examples, skipped


#: seconds of audio on either side of a vowel-tier interval in its training cut (``--pad``)
DEFAULT_TIER_PAD_S = 0.1


def load_tier_examples(utterances: list, classifier, tier: str, pad_s: float = DEFAULT_TIER_PAD_S,
                       progress: Progress = None, front_end: str = CUTS_FRONT_END) -> tuple[list, list]:
    """Every vowel of a corpus of TextGrids, with its cut's acoustics: ``(examples, skipped)``.

    Each labelled interval of the interval tier ``tier`` is a vowel (its label the vowel's name,
    any symbols); its cut runs ``pad_s`` seconds before and after it (clipped to the recording),
    as the windows given to ``aligner vowels`` run around a vowel. Raises
    :class:`~aligner.errors.AlignerError` naming the file for unreadable audio, a missing tier or
    an interval past the end of its audio; a tier with no vowel adds nothing. ``front_end`` as
    for :func:`load_cvc_examples`.
    """
    from aligner.errors import TranscriptError
    from aligner.io.textgrids import read_interval_tier

    examples, skipped = [], []
    for i, utt in enumerate(utterances):
        audio = load_audio(utt.audio)
        bad = corrupted_samples(utt.audio, audio)
        duration = len(audio) / SAMPLE_RATE
        columns = _recording_columns(audio, classifier, front_end)
        vowels = [iv for iv in read_interval_tier(utt.transcript, tier) if iv.label.strip()]
        for k, iv in enumerate(vowels):
            if iv.end_s > duration + 0.01:
                raise TranscriptError(f"{utt.transcript}: tier {tier!r}: the interval {iv.start_s:.3f}-{iv.end_s:.3f} s "
                                      f"runs past the end of {utt.audio} ({duration:.3f} s)")
            a = max(0, int(round((iv.start_s - pad_s) * SAMPLE_RATE)))
            if columns is not None:
                a = _frame_start(a, iv.start_s * SAMPLE_RATE)
            b = min(len(audio), int(round((iv.end_s + pad_s) * SAMPLE_RATE)))
            _add_example(examples, skipped, utt, f"vowel {k}", f"#{k}:{iv.label.strip()}", audio[a:b],
                         iv.start_s - a / SAMPLE_RATE, min(iv.end_s, duration) - a / SAMPLE_RATE,
                         bool(bad[a:b].any()), classifier, None if columns is None else (columns, a))
        if progress:
            progress("features", i + 1, len(utterances))
    return examples, skipped


def vowel_input(features: np.ndarray, min_dur: int, max_dur: int, columns: Sequence[int], widths: Sequence[int],
                edge_margin: int = EDGE_MARGIN, name: str = "<cut>") -> VowelInput:
    """The decoder's input for a whole cut, as :meth:`VowelModel.decode_frames` builds it at
    measuring time: onsets and offsets searched from frame ``edge_margin`` to ``T - 1 - edge_margin``.

    ``min_dur``, ``max_dur``: searched durations ``t_e - t_b``, frames; ``widths``: edge widths, frames.
    """
    T = len(features)
    rng = (edge_margin, T - 1 - edge_margin)
    return make_vowel_input(features, min_dur, max_dur, rng, rng, columns=columns, widths=widths, name=name)


# --------------------------------------------------------------------------------------
# candidates and one fit
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VowelCandidate:
    """One configuration tried: a trainer, its settings (epochs excluded) and the edge widths (frames)."""

    trainer: str
    params: dict = field(hash=False)
    widths: tuple

    @property
    def label(self) -> str:
        """``perceptron {"average": true, "widths": [2, 5, 10]}`` (shared settings left out)."""
        shown = {k: v for k, v in self.params.items() if k not in BASE_TRAINER_PARAMS}
        return f"{self.trainer} {json.dumps({**shown, 'widths': list(self.widths)})}"


def candidates(trainers: Sequence[str] = DEFAULT_TRAINERS,
               width_sets: Sequence[Sequence[int]] = DEFAULT_WIDTH_SETS,
               grid: Optional[dict] = None) -> list:
    """The candidates: for each width set (frames), each trainer, each of its settings in ``grid``
    (trainer -> list of settings; default :data:`TRAINER_GRID`), over :data:`BASE_TRAINER_PARAMS`."""
    grid = TRAINER_GRID if grid is None else grid
    if not trainers or not width_sets:
        raise ValueError("need at least one trainer and one width set")
    unknown = [t for t in trainers if t not in grid]
    if unknown:
        raise ValueError(f"no vowel settings for trainer(s) {', '.join(unknown)} (known: {', '.join(grid)})")
    return [VowelCandidate(name, {**BASE_TRAINER_PARAMS, **g}, tuple(int(v) for v in w))
            for w in width_sets for name in trainers for g in grid[name]]


@dataclass
class VowelData:
    """Training (and validation) inputs of one width set, with the task fitted on the training ones."""

    task: object  #: :class:`~aligner.vowels.task.VowelTask` (prior and standardisation from the training inputs)
    X: list
    Y: list
    X_val: list
    Y_val: list
    min_dur: int  #: searched durations, frames (from the training durations: :func:`duration_limits`)
    max_dur: int
    widths: tuple  #: edge widths, frames


def prepare(train: Sequence[CVCExample], val: Sequence[CVCExample] = (), *, widths: Sequence[int],
            columns: Sequence[int] = VOWEL_COLUMNS, tau: float = DEFAULT_TAU, prior_form: str = "off",
            prior_widen: float = 1.0) -> VowelData:
    """Inputs of ``train`` and ``val`` for edge ``widths`` (frames), and the vowel task fitted on
    ``train``: duration limits (frames) from its durations, duration prior and feature
    standardisation from its inputs (:func:`fit_vowel_task`); ``tau``: cost tolerance, frames."""
    widths = tuple(int(w) for w in widths)
    Y = [t.y for t in train]
    min_dur, max_dur = duration_limits([y[1] - y[0] for y in Y])
    X = [vowel_input(t.features, min_dur, max_dur, columns, widths, name=t.name) for t in train]
    task = fit_vowel_task(X, Y, tau_on=tau, tau_off=tau, n_jobs=1, prior_form=prior_form, prior_widen=prior_widen)
    X_val = [vowel_input(t.features, min_dur, max_dur, columns, widths, name=t.name) for t in val]
    return VowelData(task, X, Y, X_val, [t.y for t in val], min_dur, max_dur, widths)


@dataclass
class VowelFit:
    """Fitted weights with what measuring needs besides them (task, duration limits, widths)."""

    data: VowelData
    weights: np.ndarray
    best_epoch: int = 0  #: epoch whose weights were kept (0: the initial weights)

    def model(self, classifier, columns: Sequence[int], training: Optional[dict] = None,
              front_end: str = CUTS_FRONT_END) -> VowelModel:
        """The :class:`VowelModel` measuring with these weights and ``classifier``'s acoustics
        (of ``front_end``)."""
        d = self.data
        return VowelModel(classifier, self.weights, tuple(columns), d.min_dur, d.max_dur, d.task.prior,
                          d.task.center, d.task.scale, widths=d.widths, edge_margin=EDGE_MARGIN,
                          tau_on=d.task.tau_on, tau_off=d.task.tau_off, training=dict(training or {}),
                          front_end=front_end)


# -- the calls into the learning core (aligner.learn) --------------------------------------


def make_vowel_trainer(candidate: VowelCandidate, epochs: int, n_runs: int = 1):
    """The unfitted trainer of ``candidate`` for ``epochs`` epochs; ``n_runs > 1`` averages the
    weights of that many runs over seeds ``seed .. seed + n_runs - 1`` (:func:`aligner.learn.seed_averaged`)."""
    from aligner.learn import make_trainer, seed_averaged

    return seed_averaged(make_trainer(candidate.trainer, **{**candidate.params, "epochs": int(epochs)}), n_runs)


def _check_trainer(candidate: VowelCandidate, epochs: int, n_runs: int) -> None:
    """Raise ``TypeError``/``ValueError`` if the learning core rejects the candidate's settings."""
    trainer = make_vowel_trainer(candidate, epochs, n_runs)
    trainer._check_params()  # what fit checks first, without data


def search(cands: Sequence[VowelCandidate], data: VowelData, epochs: int, n_runs: int = 1):
    """Fit every candidate on ``data`` with early stopping on its validation inputs
    (:class:`aligner.learn.ValidationSearch`); a fit whose weights overflow
    (``FloatingPointError``, e.g. too large a step) scores an infinite validation cost, any
    other failure raises. Returns the fitted search (``candidate_results_[i]["score"]``: lowest
    mean validation cost, frames; ``results_[i]["best_epoch"]``)."""
    from aligner.learn import ValidationSearch

    trainers = [make_vowel_trainer(c, epochs, n_runs) for c in cands]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".* fits failed and scored inf", category=RuntimeWarning)
        found = ValidationSearch(trainers, error_score=float("inf")).fit(
            data.task, data.X, data.Y, data.X_val, data.Y_val)
    for row in found.results_:
        if row["error"] is not None and not row["error"].startswith("FloatingPointError"):
            raise RuntimeError(f"{cands[row['candidate']].label}: the fit failed: {row['error']}")
    return found


def fit_final(candidate: VowelCandidate, data: VowelData, epochs: int, n_runs: int = 1) -> VowelFit:
    """Fit ``candidate`` on all of ``data``'s training inputs for exactly ``epochs`` epochs."""
    try:
        trainer = make_vowel_trainer(candidate, epochs, n_runs).fit(data.task, data.X, data.Y)
    except FloatingPointError as exc:
        raise AlignerError(f"{candidate.label}: {exc}") from None
    return VowelFit(data, np.asarray(trainer.w_, dtype=np.float64), int(trainer.best_epoch_))


def predict_seconds(model: VowelModel, examples: Sequence[CVCExample]) -> list:
    """``(onset_s, offset_s)`` of each example's vowel, seconds from its cut's start, decoded by
    ``model`` on the example's acoustics; the middle third of the cut when no vowel of the
    model's durations fits."""
    out = []
    for t in examples:
        try:
            (t_b, t_e), _ = model.decode_frames(t.features, t.name)
            out.append(frames_to_seconds(t_b, t_e))
        except AlignerError:  # e.g. no vowel of the model's durations fits in the cut
            out.append(middle_third(t.cut_s))
    return out


# --------------------------------------------------------------------------------------
# cross-validation
# --------------------------------------------------------------------------------------


def validation_speakers(rest: Sequence[str], fold: int, n: int = N_VALIDATION_SPEAKERS) -> list:
    """The validation speakers of fold ``fold`` (0-based) among its non-test speakers ``rest``:
    ``n`` of them spread over the sorted list, starting at a different speaker in each fold,
    and never all of ``rest`` (at least one speaker is left to train on)."""
    rest = sorted(rest)
    n = min(n, len(rest) - 1)
    if n < 1:
        raise ValueError(f"fold {fold + 1}: {len(rest)} training speaker(s) leave none for validation")
    return rest[fold % len(rest)::max(len(rest) // 2, 1)][:n]


@dataclass
class VowelCrossValidation:
    """What the speaker-disjoint folds chose and scored (costs in frames, metrics in ms)."""

    candidates: list  #: :class:`VowelCandidate` tried, in order
    folds: list  #: test speakers per fold
    validation: list  #: validation speakers per fold
    val_costs: np.ndarray  #: (n_folds, n_candidates) lowest validation cost (inf: the fit failed)
    best_epochs: list  #: per candidate, its early-stopped epoch in each fold where it fitted
    chosen_per_fold: list  #: index of the candidate each fold chose
    predictions: dict  #: token name -> (onset_s, offset_s) of the fold's chosen candidate
    per_trainer: dict  #: trainer -> {token name -> (onset_s, offset_s)} of its best candidate per fold
    truth: dict  #: token name -> true (onset_s, offset_s)
    baseline: dict  #: token name -> middle third of the cut
    clean: set  #: names of the tokens scored (those in uncorrupted audio unless ``keep_corrupted``)
    epochs: int  #: maximum epochs of the fits
    held_out_classifier: bool = False

    @property
    def chosen(self) -> int:
        """Index of the candidate with the lowest validation cost summed over the folds."""
        return int(np.argmin(self.val_costs.sum(axis=0)))

    @property
    def chosen_epochs(self) -> int:
        """Median (rounded down) of the chosen candidate's early-stopped epochs over the folds
        (:attr:`epochs` if it never fitted)."""
        e = self.best_epochs[self.chosen]
        return int(np.median(e)) if e else self.epochs

    def scores(self, predictions: dict, include_corrupted: bool = False) -> dict:
        """:func:`~aligner.vowels.evaluation.vowel_metrics` of ``predictions`` over the scored tokens."""
        names = sorted(n for n in self.truth if include_corrupted or n in self.clean)
        return vowel_metrics([predictions[n] for n in names], [self.truth[n] for n in names])

    def record(self) -> dict:
        """JSON-able summary: chosen and baseline metrics, per-trainer metrics, choices per fold."""
        names = [n for n in self.truth if n in self.clean]
        per_trainer = {t: self.scores(p) for t, p in self.per_trainer.items() if all(n in p for n in names)}
        rec = {"held_out_classifier": self.held_out_classifier,
               "chosen": self.scores(self.predictions),
               "middle_third_baseline": self.scores(self.baseline),
               "chosen_per_fold": [self.candidates[i].label for i in self.chosen_per_fold],
               "chosen_val_cost_frames": [float(self.val_costs[k, i]) for k, i in enumerate(self.chosen_per_fold)],
               "folds": self.folds, "validation_speakers": self.validation,
               "per_trainer": per_trainer}
        if len(self.clean) < len(self.truth):
            rec["all_tokens_including_corrupted"] = {
                "chosen": self.scores(self.predictions, True),
                "middle_third_baseline": self.scores(self.baseline, True)}
        return rec


def _groups(cands: Sequence[VowelCandidate]) -> list:
    """Indices of ``cands`` in runs of consecutive candidates with the same widths and trainer."""
    groups: list = []
    for i, c in enumerate(cands):
        if groups and (cands[groups[-1][0]].widths, cands[groups[-1][0]].trainer) == (c.widths, c.trainer):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def cross_validate(examples: Sequence[CVCExample], classifier, cands: Sequence[VowelCandidate], *,
                   n_folds: int = DEFAULT_FOLDS, n_val_speakers: int = N_VALIDATION_SPEAKERS,
                   epochs: int = DEFAULT_EPOCHS, columns: Sequence[int] = VOWEL_COLUMNS, tau: float = DEFAULT_TAU,
                   prior_form: str = "off", prior_widen: float = 1.0, n_runs: int = 1,
                   keep_corrupted: bool = False,
                   fold_examples: Optional[Callable[[list], tuple]] = None,
                   progress: Progress = None) -> VowelCrossValidation:
    """Speaker-disjoint folds: in each, every candidate is fitted on the training speakers and
    early-stopped on the validation speakers; the lowest validation cost is scored on the test
    speakers (module docstring, step 3).

    ``classifier``: the frame classifier of the examples' acoustics (copied into each fold's
    model). ``keep_corrupted``: train on tokens in corrupted audio too (they are always
    predicted, and scored separately). ``fold_examples(test_speakers)`` may return
    ``(examples, classifier)`` to use in that fold instead (e.g. acoustics from a classifier
    that never heard the test speakers: :func:`held_out_classifier_examples`).
    """
    usable_all = [t for t in examples if keep_corrupted or not t.corrupted]
    folds = speaker_folds(usable_all, n_folds)
    cands = list(cands)
    val_costs = np.zeros((len(folds), len(cands)))
    best_epochs: list = [[] for _ in cands]
    chosen_per_fold, validation = [], []
    predictions, truth, baseline = {}, {}, {}
    per_trainer: dict = {c.trainer: {} for c in cands}
    all_speakers = sorted({t.speaker for t in usable_all})
    prep_args = dict(columns=columns, tau=tau, prior_form=prior_form, prior_widen=prior_widen)
    for k, test_spk in enumerate(folds):
        fold_all, clf = (examples, classifier) if fold_examples is None else fold_examples(test_spk)
        usable = [t for t in fold_all if keep_corrupted or not t.corrupted]
        rest = [s for s in all_speakers if s not in test_spk]
        val_spk = validation_speakers(rest, k, n_val_speakers)
        validation.append(val_spk)
        train = [t for t in usable if t.speaker in rest and t.speaker not in val_spk]
        val = [t for t in usable if t.speaker in val_spk]
        test = [t for t in fold_all if t.speaker in test_spk]
        best, best_per_trainer, data_of, failure = None, {}, {}, None
        for group in _groups(cands):
            cand = cands[group[0]]
            if cand.widths not in data_of:
                data_of[cand.widths] = prepare(train, val, widths=cand.widths, **prep_args)
            data = data_of[cand.widths]
            found = search([cands[i] for i in group], data, epochs, n_runs)
            for j, i in enumerate(group):
                val_costs[k, i] = found.candidate_results_[j]["score"]
                if found.results_[j]["error"] is None:
                    best_epochs[i].append(int(found.results_[j]["best_epoch"]))
            if progress:
                progress(f"fold {k + 1}/{len(folds)}", group[-1] + 1, len(cands))
            if found.best_estimator_ is None:  # every fit of the group overflowed
                failure = failure or found.results_[0]["error"]
                continue
            fit = VowelFit(data, np.asarray(found.best_estimator_.w_, dtype=np.float64),
                           int(found.best_estimator_.best_epoch_))
            score, i = found.best_score_, group[found.best_index_]
            if best is None or score < best[0]:
                best = (score, i, fit)
            if cand.trainer not in best_per_trainer or score < best_per_trainer[cand.trainer][0]:
                best_per_trainer[cand.trainer] = (score, fit)
        if best is None:
            raise AlignerError(f"fold {k + 1}: every candidate failed to fit ({failure}); try smaller step sizes")
        _, i, fit = best
        chosen_per_fold.append(i)
        for t, p in zip(test, predict_seconds(fit.model(clf, columns), test)):
            predictions[t.name], truth[t.name], baseline[t.name] = p, t.true_s, middle_third(t.cut_s)
        for name, (_, f) in best_per_trainer.items():
            for t, p in zip(test, predict_seconds(f.model(clf, columns), test)):
                per_trainer[name][t.name] = p
    clean = {t.name for t in examples if not t.corrupted} if not keep_corrupted else {t.name for t in examples}
    return VowelCrossValidation(cands, folds, validation, val_costs, best_epochs, chosen_per_fold, predictions,
                                per_trainer, truth, baseline, clean, int(epochs), fold_examples is not None)


def held_out_classifier_examples(utterances: list, classifier_params: dict, progress: Progress = None,
                                 augment=None, front_end: str = CUTS_FRONT_END):
    """A ``fold_examples`` for :func:`cross_validate`: for each fold, a frame classifier trained
    (with ``classifier_params``) on the utterances of the other speakers only, and every
    token's acoustics computed with it, so the test speakers are unseen by every part of the
    model (about 80 s per fold on the 12-speaker sample). ``augment``: the
    :class:`~aligner.features.augment.AugmentationRecipe` the alignment model's classifier was
    trained with; each fold's degraded copies (and their babble) come from its training speakers."""
    from dataclasses import replace

    from aligner.alignment.training import degraded_frames, fit_classifier, load_utterances

    data: list = []

    def fold_examples(test_speakers: list) -> tuple:
        if not data:
            data.extend(load_utterances(utterances))
        train = [d for d in data if d.speaker not in test_speakers]
        if augment is not None and augment.copies > 0:
            copies = degraded_frames([u for u in utterances if u.speaker not in test_speakers], augment)
            train = [replace(d, degraded=copies[d.name]) for d in train]
        clf = fit_classifier(train, classifier_params)
        if progress:
            progress(f"classifier without {','.join(test_speakers)}", 1, 1)
        examples, _ = load_cvc_examples(utterances, clf, progress, front_end)
        return examples, clf

    return fold_examples


# --------------------------------------------------------------------------------------
# the whole recipe
# --------------------------------------------------------------------------------------


def _file_record(path: Path) -> dict:
    """``{"path", "sha256"}`` of a file, the path relative to the working directory when inside it."""
    path = Path(path)
    try:
        shown = str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        shown = str(path)
    return {"path": shown, "sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None}


def check_settings(trainers: Sequence[str] = DEFAULT_TRAINERS, grid: Optional[dict] = None,
                   width_sets: Sequence[Sequence[int]] = DEFAULT_WIDTH_SETS, *, epochs: int = DEFAULT_EPOCHS,
                   n_folds: int = DEFAULT_FOLDS, n_val_speakers: int = N_VALIDATION_SPEAKERS, tau: float = DEFAULT_TAU,
                   columns: Sequence[int] = VOWEL_COLUMNS, prior_form: str = "off", prior_widen: float = 1.0,
                   n_runs: int = 1, held_out_classifier: bool = False, front_end: str = CUTS_FRONT_END) -> list:
    """The candidates of these settings (:func:`candidates`); :class:`VowelSettingsError` naming the
    first inconsistent one. Checks only what needs no data (the number of speakers is checked
    once the corpus is read)."""
    try:
        cands = candidates(trainers, width_sets, grid)
    except ValueError as exc:
        raise VowelSettingsError(str(exc)) from None
    problems = []
    if int(epochs) < 1:
        problems.append(f"epochs must be >= 1, got {epochs}")
    if n_folds == 1 or n_folds < 0:
        problems.append(f"n_folds must be 0 (no cross-validation) or >= 2, got {n_folds}")
    if n_folds == 0 and len(cands) != 1:
        problems.append(f"without cross-validation (n_folds=0) give exactly one candidate, not {len(cands)}")
    if n_folds == 0 and held_out_classifier:
        problems.append("held_out_classifier needs cross-validation folds")
    if n_folds and n_val_speakers < 1:
        problems.append(f"n_val_speakers must be >= 1, got {n_val_speakers}")
    if tau < 0:
        problems.append(f"tau must be >= 0 frames, got {tau}")
    try:
        n_columns = len(column_names_of(front_end))
        if not columns or min(columns) < 0 or max(columns) >= n_columns:
            problems.append(f"columns must be in 0..{n_columns - 1}, got {list(columns)}")
    except ValueError as exc:  # an unknown front end
        problems.append(str(exc))
    if prior_form not in PRIOR_FORMS:
        problems.append(f"prior_form must be one of {', '.join(PRIOR_FORMS)}, got {prior_form!r}")
    if not prior_widen > 0:
        problems.append(f"prior_widen must be > 0, got {prior_widen}")
    if int(n_runs) < 1:
        problems.append(f"n_runs must be >= 1, got {n_runs}")
    for c in cands:
        try:
            _check_trainer(c, epochs, n_runs)
        except (TypeError, ValueError) as exc:
            problems.append(f"{c.label}: {exc}")
            break
    if problems:
        raise VowelSettingsError("; ".join(problems))
    return cands


def train_vowel_model(
    corpus_dir: str | os.PathLike,
    alignment_model=None,
    *,
    trainers: Sequence[str] = DEFAULT_TRAINERS,
    grid: Optional[dict] = None,
    width_sets: Sequence[Sequence[int]] = DEFAULT_WIDTH_SETS,
    epochs: int = DEFAULT_EPOCHS,
    n_folds: int = DEFAULT_FOLDS,
    n_val_speakers: int = N_VALIDATION_SPEAKERS,
    tau: float = DEFAULT_TAU,
    columns: Optional[Sequence[int]] = None,
    prior_form: str = "off",
    prior_widen: float = 1.0,
    n_runs: int = 1,
    keep_corrupted: bool = False,
    held_out_classifier: bool = False,
    blas_threads: Optional[int] = 1,
    progress: Progress = None,
    vowel_tier: Optional[str] = None,
    pad_s: float = DEFAULT_TIER_PAD_S,
    front_end: str = CUTS_FRONT_END,
) -> VowelModel:
    """Train a :class:`VowelModel` on the CVC tokens of a TIMIT-layout corpus (module docstring).

    Args:
        corpus_dir: audio files with a ``.phn`` beside them, one folder per speaker.
        alignment_model: an :class:`~aligner.alignment.model.AlignmentModel` or its directory,
            whose frame classifier computes the vowel/nasal columns and is copied into the
            vowel model; None: the shipped one.
        trainers, grid, width_sets: the candidates (:func:`candidates`; widths in frames of 5 ms).
        epochs: maximum epochs of every fit (early-stopped on validation in the folds).
        n_folds: speaker folds (2 .. number of speakers); 0 skips the cross-validation: the
            single candidate (it is an error to give several) is fitted on every token for
            exactly ``epochs`` epochs, e.g. to refit the settings a model's manifest records.
        n_val_speakers: validation speakers per fold.
        tau: cost tolerance of onset and offset, frames of 5 ms.
        columns: acoustic columns used (None: :data:`~aligner.features.vowel_acoustics.VOWEL_COLUMNS`,
            or for ``front_end="frames"`` all 23 of :data:`~aligner.vowels.frame_columns.FRAME_COLUMN_NAMES`).
        prior_form, prior_widen: the duration prior (:class:`~aligner.vowels.task.DurationPrior`).
        n_runs: fits per candidate whose weights are averaged (seeds 0 .. n_runs - 1).
        keep_corrupted: also train on tokens whose audio leaves the SPHERE header's sample range.
        held_out_classifier: score each test fold with acoustics from a frame classifier trained
            without its speakers (:func:`held_out_classifier_examples`; about 80 s per fold on
            the shared sample); the returned model still uses ``alignment_model``'s classifier.
        blas_threads: BLAS threads while training (None: leave as is). One thread makes the
            weights bit-identical from run to run and machine to machine with the same
            libraries: a multi-threaded BLAS sums in an order that depends on the thread count.
        progress: ``progress(stage, done, total)``.
        vowel_tier: train on the vowels of this interval tier of TextGrids beside the audio (any
            language and symbols; :func:`load_tier_examples`) instead of TIMIT's CVC tokens.
        pad_s: with ``vowel_tier``, seconds of context on either side of each vowel.
        front_end: ``"cuts"`` (the vowel model's own acoustics of each cut) or ``"frames"`` (the
            alignment model's MFCC frames and posteriors with time-domain columns,
            :mod:`aligner.vowels.frame_columns`: for re-measuring aligned vowels).

    The model's ``training`` record holds the settings, the chosen candidate and the
    cross-validation scores (``training["cv"]``, :meth:`VowelCrossValidation.record`).
    Raises :class:`~aligner.errors.AlignerError` when the corpus has no usable token or too
    few speakers for ``n_folds``, ``ValueError`` for inconsistent settings.
    """
    from threadpoolctl import threadpool_limits

    limits = threadpool_limits(limits=int(blas_threads)) if blas_threads is not None else contextlib.nullcontext()
    with limits:
        return _train_vowel_model(
            corpus_dir, alignment_model, trainers=trainers, grid=grid, width_sets=width_sets, epochs=epochs,
            n_folds=n_folds, n_val_speakers=n_val_speakers, tau=tau, columns=columns, prior_form=prior_form,
            prior_widen=prior_widen, n_runs=n_runs, keep_corrupted=keep_corrupted,
            held_out_classifier=held_out_classifier, progress=progress, vowel_tier=vowel_tier, pad_s=pad_s,
            front_end=front_end)


def _train_vowel_model(corpus_dir, alignment_model, *, trainers, grid, width_sets, epochs, n_folds, n_val_speakers,
                       tau, columns, prior_form, prior_widen, n_runs, keep_corrupted, held_out_classifier,
                       progress, vowel_tier=None, pad_s=DEFAULT_TIER_PAD_S, front_end=CUTS_FRONT_END) -> VowelModel:
    from aligner.alignment.model import AlignmentModel
    from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir

    if columns is None:
        columns = FRAME_VOWEL_COLUMNS if front_end == FRAMES_FRONT_END else VOWEL_COLUMNS
    columns = tuple(int(c) for c in columns)
    cands = check_settings(trainers, grid, width_sets, epochs=epochs, n_folds=n_folds, n_val_speakers=n_val_speakers,
                           tau=tau, columns=columns, prior_form=prior_form, prior_widen=prior_widen, n_runs=n_runs,
                           held_out_classifier=held_out_classifier, front_end=front_end)
    if vowel_tier is not None:
        if held_out_classifier:
            raise VowelSettingsError("--held-out-classifier needs TIMIT .phn files (it retrains the frame classifier "
                                     "on their phones); leave it out with --vowel-tier")
        if not pad_s >= 0:
            raise VowelSettingsError(f"pad must be 0 or more seconds, got {pad_s}")
        utterances = find_utterances(corpus_dir, (".TextGrid", ".textgrid"))
        if not utterances:
            raise AlignerError(f"{corpus_dir}: no audio file with a TextGrid beside it")
    else:
        utterances = find_utterances(corpus_dir)
        if not utterances:
            raise AlignerError(f"{corpus_dir}: no audio file with a .phn transcript beside it")
    if isinstance(alignment_model, AlignmentModel):
        source_model, classifier_source = alignment_model, {"path": None, "sha256": None}
    else:
        model_dir = Path(alignment_model) if alignment_model is not None else default_model_dir(ALIGNMENT_KIND)
        source_model = AlignmentModel.load(model_dir)
        classifier_source = _file_record(model_dir / "classifier.npz")
    if source_model.phone_set is not None:
        raise VowelSettingsError("the vowel model's acoustics read the vowel, nasal and glide posteriors of the 39 "
                                 "classes; give --alignment-model a 39-class model (the shipped one), not one "
                                 "trained on its own phones")
    classifier = source_model.classifier
    if vowel_tier is not None:
        all_examples, skipped = load_tier_examples(utterances, classifier, vowel_tier, pad_s, progress, front_end)
    else:
        all_examples, skipped = load_cvc_examples(utterances, classifier, progress, front_end)
    examples = [t for t in all_examples if keep_corrupted or not t.corrupted]
    if not examples:
        what = f"vowel in tier {vowel_tier!r}" if vowel_tier is not None else "CVC token"
        raise AlignerError(f"{corpus_dir}: no usable {what} in {len(utterances)} utterances")
    n_speakers = len({t.speaker for t in examples})
    if n_folds and (n_folds > n_speakers or n_speakers - -(-n_speakers // n_folds) < 2):
        # every fold needs a test speaker, and besides its test speakers one to train on and one for validation
        raise AlignerError(f"{corpus_dir}: CVC tokens of {n_speakers} speaker(s) are too few for {n_folds} speaker "
                           f"folds (each fold needs test speakers and 2 others, for training and validation); "
                           f"use fewer folds, or 0 for no cross-validation")

    cv = None
    if n_folds:
        fold_examples = None
        if held_out_classifier:
            recipe = source_model.training.get("augmentation")
            if recipe is not None:
                from aligner.features.augment import AugmentationRecipe
                recipe = AugmentationRecipe.from_dict(recipe, "the alignment model's training.augmentation")
            fold_examples = held_out_classifier_examples(utterances, classifier.get_params(), progress, recipe,
                                                         front_end)
        cv = cross_validate(all_examples, classifier, cands, n_folds=n_folds, n_val_speakers=n_val_speakers,
                            epochs=epochs, columns=columns, tau=tau, prior_form=prior_form,
                            prior_widen=prior_widen, n_runs=n_runs, keep_corrupted=keep_corrupted,
                            fold_examples=fold_examples, progress=progress)
        chosen, n_epochs = cv.candidates[cv.chosen], cv.chosen_epochs
    else:
        chosen, n_epochs = cands[0], int(epochs)
    data = prepare(examples, widths=chosen.widths, columns=columns, tau=tau, prior_form=prior_form,
                   prior_widen=prior_widen)
    fit = fit_final(chosen, data, max(n_epochs, 1), n_runs)
    if progress:
        progress("final fit", 1, 1)
    training = {
        "corpus": str(corpus_dir),
        "n_tokens": len(examples),
        "n_corrupted_left_out": len(all_examples) - len(examples),
        "n_skipped": len(skipped),
        "speakers": sorted({t.speaker for t in examples}),
        "trainer": chosen.trainer,
        "trainer_params": dict(chosen.params),
        "widths": list(chosen.widths),
        "epochs": n_epochs,
        "tau_frames": tau,
        "seed_runs_averaged": n_runs,
        "duration_prior": {"form": prior_form, "widen": prior_widen},
        "classifier_source": classifier_source,
        "front_end": front_end,
    }
    if vowel_tier is not None:
        training["vowel_tier"], training["pad_s"] = vowel_tier, pad_s
    if cv is not None:
        training["cv"] = cv.record()
    return fit.model(classifier, columns, training, front_end)


def format_report(training: dict) -> str:
    """Lines for a person: each fold's choice, the cross-validation table
    (:func:`~aligner.vowels.evaluation.format_table`) and the model's settings, from a vowel
    model's ``training`` record (:func:`train_vowel_model`)."""
    from aligner.vowels.evaluation import format_table

    lines = []
    cv = training.get("cv")
    if cv:
        n = len(cv["folds"])
        for k, (label, test, val, cost) in enumerate(zip(cv["chosen_per_fold"], cv["folds"], cv["validation_speakers"],
                                                         cv["chosen_val_cost_frames"])):
            lines.append(f"fold {k + 1}/{n} test {','.join(test)} val {','.join(val)}: chose {label} "
                         f"(val cost {cost:.2f} frames)")
        rows = [("chosen on validation", cv["chosen"])]
        rows += [(f"  best {name}", m) for name, m in cv["per_trainer"].items()]
        rows.append(("middle-third baseline", cv["middle_third_baseline"]))
        if "all_tokens_including_corrupted" in cv:
            rows.append(("chosen, incl. corrupted", cv["all_tokens_including_corrupted"]["chosen"]))
            rows.append(("baseline, incl. corrupted", cv["all_tokens_including_corrupted"]["middle_third_baseline"]))
        title = "speaker-disjoint folds" + (" (held-out classifiers)" if cv.get("held_out_classifier") else "")
        lines.append(format_table(rows, title))
    shown = {k: v for k, v in training["trainer_params"].items() if k not in BASE_TRAINER_PARAMS}
    lines.append(f"{training['n_tokens']} tokens of {len(training['speakers'])} speakers"
                 f" ({training['n_corrupted_left_out']} in corrupted audio left out, {training['n_skipped']} skipped): "
                 f"{training['trainer']} {json.dumps(shown)}, widths {training['widths']} frames, "
                 f"{training['epochs']} epochs")
    return "\n".join(lines)
