"""The Python API: what the CLI, the recipes and users call.

    from aligner import api
    intervals = api.align("rec.wav", "sil HH AH0 L OW1 sil")       # [Interval(start_s, end_s, label)]
    intervals = api.align(y, "sil HH AH0 L OW1 sil", sr=44100)    # samples in memory, any rate
    api.align_file("rec.wav", "rec.phn", "rec.TextGrid")
    report = api.align_corpus("corpus/", "out/", jobs=2)           # CorpusReport
    report = api.align_corpus("corpus/", "out/", scheduler="tcp://host:8786", resume=True)  # on Dask
    scores, problems = api.evaluate("corpus/", "out/")             # Evaluation
    model = api.train("corpus/", "my-model/", trainer="orbit")
    records, failed = api.measure_vowels(["cvc/"], jobs=2)          # VowelRecord rows
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import numpy as np

from aligner.alignment.model import AlignmentModel
from aligner.batch import output_is_complete
from aligner.distributed import open_pool, resolve_engine
from aligner.frames import SAMPLE_RATE
from aligner.io.audio import load_audio, samples_at_model_rate
from aligner.io.corpus import find_audio_files, find_utterances
from aligner.errors import AlignerError, AlignmentError
from aligner.alignment.evaluation import AlignmentScores, evaluate_directories
from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir
from aligner.io.transcripts import read_transcript
from aligner.io.textgrids import Interval, write_textgrid

PHONE_TIER = "phones"


@lru_cache(maxsize=4)
def _load_model_cached(path: str) -> AlignmentModel:
    return AlignmentModel.load(path)


def load_model(model: str | os.PathLike | AlignmentModel | None = None) -> AlignmentModel:
    """An :class:`AlignmentModel`: ``model`` itself, the bundle at that path, or the shipped default."""
    if isinstance(model, AlignmentModel):
        return model
    path = Path(model) if model is not None else default_model_dir(ALIGNMENT_KIND)
    return _load_model_cached(str(path.resolve()))


#: a recording longer than this (seconds) is read from its file block by block, not loaded whole
STREAM_SECONDS = 600.0


def _samples_any_length(audio, sr: int | None, name: str | None) -> tuple:
    """:func:`_samples`, except that a long 16 kHz recording given by path comes back as a
    :class:`~aligner.io.audio.FileSamples` (read on demand, not held in memory)."""
    if isinstance(audio, (str, os.PathLike)):
        from aligner.io.audio import audio_duration, file_samples

        if audio_duration(audio) > STREAM_SECONDS:
            source = file_samples(audio)
            if source is not None:
                return source, name or str(audio)
    return _samples(audio, sr, name)


def _samples(audio, sr: int | None, name: str | None) -> tuple[np.ndarray, str]:
    """``(16 kHz mono float32 samples, name for messages)`` of a path, or of samples in memory
    with their rate ``sr`` (required then)."""
    if isinstance(audio, (str, os.PathLike)):
        return load_audio(audio), name or str(audio)
    if sr is None:
        raise TypeError("samples in memory need their sample rate: pass sr=, e.g. align(y, text, sr=16000)")
    name = name or "<samples>"
    return samples_at_model_rate(audio, sr, name), name


def _check_fits_header(m: AlignmentModel, audio, symbols, pset, split_stops, name: str) -> None:
    """For an audio path: refuse, from its header alone (no samples read), a phone transcript
    that cannot fit the recording (too many phones, or too few to cover it)."""
    if not isinstance(audio, (str, os.PathLike)):
        return
    from aligner.frames import n_frames
    from aligner.io.audio import audio_duration

    m.check_transcript_fits(n_frames(int(audio_duration(audio) * SAMPLE_RATE)), symbols, pset, split_stops, name)


def _check_words_fit(m: AlignmentModel, prons, seconds: float, label: str) -> None:
    """Refuse words whose pronunciations cannot fit ``seconds`` of audio: too many phones even
    in their shortest pronunciations, or too few to cover it with pauses at their longest."""
    from aligner.alignment.task import check_fits
    from aligner.alignment.words import EDGE_SYMBOL, PAUSE_SYMBOL
    from aligner.frames import n_frames
    from aligner.phonetics import CLASSES39, SILENCE

    T = n_frames(int(seconds * SAMPLE_RATE))
    if T < 1 or not prons:
        return
    fewest = sum(min(len(p) for p in alternatives) for alternatives in prons)
    # the most the words can cover: a pause between (and around) the words and every phone at
    # its longest (stops and affricates decode as two phones)
    sil = np.array([CLASSES39.index(SILENCE)])
    pause = int(m.durations.for_phones(sil, [PAUSE_SYMBOL])[2][0])
    edge = int(m.durations.for_phones(sil, [EDGE_SYMBOL])[2][0])
    longest = int(m.durations.max_frames.max())
    most = 2 * edge + pause * (len(prons) - 1)
    most += longest * sum(2 * max(len(p) for p in alternatives) for alternatives in prons)
    check_fits(T, fewest, np.full(fewest, T), m.min_frames, label)  # the phones needed at least
    if most < T:
        raise AlignmentError(
            f"{label}: {len(prons)} words cover at most {most} frames even with pauses, got {T} frames: the "
            f"audio ({T / 100:.2f} s) is far too long for the transcript; check that it belongs to this "
            f"recording, or cut the recording")


def _flagged(m: AlignmentModel, match: Optional[float]) -> bool:
    return match is not None and m.utterance_check is not None and m.utterance_check.flags_probability(match)


def align_phones_reviewed(audio, phones, model=None, phone_set: str = "auto", name: str | None = None,
                          split_stops: bool | None = None, sr: int | None = None) -> Alignment:
    """:func:`align` as an :class:`Alignment` (one ``phones`` tier) with its review: every
    phone start's confidence and the transcript check, when the model has them."""
    m = load_model(model)
    intervals, conf, match = _align_phones(m, audio, phones, phone_set, name, split_stops, sr, review=True)
    confidences = {} if conf is None else {PHONE_TIER: [float(c) for c in conf]}
    return Alignment([(PHONE_TIER, intervals)], intervals[-1].end_s, confidences=confidences,
                     transcript_match=match, transcript_flagged=_flagged(m, match))


def align(audio, phones, model=None, phone_set: str = "auto", name: str | None = None,
          split_stops: bool | None = None, sr: int | None = None) -> list[Interval]:
    """Align a recording to its phones; returns ``[Interval(start_s, end_s, symbol), ...]`` in seconds.

    ``audio``: a path, or samples in memory with their sample rate ``sr`` in Hz (librosa's
    ``(y, sr)``: shape (n,) or (channels, n); resampled to 16 kHz, channels averaged).
    ``model``: an :class:`AlignmentModel`, a model directory, or None for the shipped model.
    ``phones``: a transcript path (TIMIT ``.phn``
    or whitespace-separated symbols), an inline string of symbols, or a list of symbols.
    ``phone_set``: ``auto``, ``timit61``, ``timit39`` or ``arpabet``. ``split_stops``: decode
    each stop/affricate as TIMIT closure + release and merge them back into the one input
    symbol (:mod:`aligner.alignment.stop_closures`); None = automatic (for ``arpabet`` and ``timit39``,
    whose stops include their closure; not for ``timit61``, which writes closures).
    """
    return _align_phones(load_model(model), audio, phones, phone_set, name, split_stops, sr, review=False)[0]


def _align_phones(m: AlignmentModel, audio, phones, phone_set, name, split_stops, sr, review: bool) -> tuple:
    """:func:`align`'s work: ``(intervals, confidences or None, transcript match or None)``.
    The transcript must fit the audio (checked from a file's header before its samples are
    read); an alignment error names the recording."""
    if isinstance(phones, (list, tuple)):
        phones = " ".join(phones)
    symbols, pset = read_transcript(phones, phone_set)
    if name is None and isinstance(audio, (str, os.PathLike)):
        name = str(audio)
    try:
        _check_fits_header(m, audio, symbols, pset, split_stops, name)
        samples, name = _samples_any_length(audio, sr, name)
        return m.align_with_review(samples, symbols, pset, name=name, split_stops=split_stops, review=review)
    except AlignmentError as exc:
        msg = str(exc)
        raise AlignmentError(msg if name in msg else f"{name}: {msg}") from None


@lru_cache(maxsize=4)
def _dictionary_cached(user: str | None):
    from aligner.words.dictionary import load_dictionary

    return load_dictionary(user)


def load_dictionary(dictionary=None):
    """The pronouncing dictionary: ``dictionary`` itself (a
    :class:`~aligner.words.dictionary.PronouncingDictionary`), or the CMU Pronouncing Dictionary
    with the user dictionary at that path (MFA format) on top, or CMU alone for None."""
    from aligner.words.dictionary import PronouncingDictionary

    if isinstance(dictionary, PronouncingDictionary):
        return dictionary
    return _dictionary_cached(None if dictionary is None else str(Path(dictionary).resolve()))


@dataclass
class Alignment:
    """One recording's alignment: tiers in output order, and the words no dictionary knew.

    ``tiers``: ``[(tier name, [Interval, ...]), ...]``: ``words`` and ``phones`` (``SPEAKER -
    words``, ``SPEAKER - phones`` for a TextGrid transcript with several speaker tiers), or
    ``phones`` alone for a phone transcript. ``duration_s``: the recording's length.
    ``oovs``: unknown word -> the pronunciation used (from the G2P). With a model that has a
    confidence model: ``confidences``, ``transcript_match``, ``transcript_flagged``.
    """

    tiers: list
    duration_s: float
    oovs: dict = field(default_factory=dict)
    #: tier name -> each interval's start confidence (P within 20 ms of an annotator's), for a
    #: model with a confidence model (:mod:`aligner.alignment.confidence`); empty otherwise
    confidences: dict = field(default_factory=dict)
    #: probability that the transcript belongs to the audio (the lowest over a TextGrid's
    #: intervals or a long recording's chunks); None without a transcript check in the model
    transcript_match: Optional[float] = None
    #: the model's check says the transcript probably does not match the audio
    transcript_flagged: bool = False

    def review(self) -> tuple[int, int, float]:
        """``(boundaries, boundaries with confidence below 0.5, lowest confidence)`` over the
        tiers (the recording's first start, always 1.0, left out; ``(0, 0, 1.0)`` without
        confidences)."""
        values = [c for conf in self.confidences.values() for c in conf[1:]]
        if not values:
            return 0, 0, 1.0
        return len(values), sum(c < 0.5 for c in values), float(min(values))


def _pronunciations(tokens, dictionary, oov: str, name: str, oovs: dict) -> tuple[list, list]:
    """Labels and pronunciation alternatives of the tokens to align (annotations the dictionary
    lacks are skipped); unknown words go through the G2P or, with ``oov="error"``, fail."""
    from aligner.errors import TranscriptError

    labels, prons, unknown = [], [], []
    for token in tokens:
        alternatives = dictionary.pronunciations(token.word)
        if not alternatives:
            if token.annotation:
                continue
            if oov == "error":
                unknown.append(token.word)
                continue
            alternatives = [_g2p_pronunciation(token.word)]
            oovs[token.word] = " ".join(alternatives[0])
        labels.append(token.word)
        prons.append(alternatives)
    if unknown:
        listed = ", ".join(sorted(set(unknown)))
        raise TranscriptError(f"{name}: {len(set(unknown))} word(s) not in the dictionary: {listed} "
                              f"(add them with --dictionary FILE, or use --oov g2p)")
    if not labels:
        raise TranscriptError(f"{name}: transcript has no words to align")
    return labels, prons


def _g2p_pronunciation(word: str) -> tuple:
    """The shipped G2P's pronunciation (ARPAbet with stress) of an unknown word."""
    from aligner.words.g2p import default_g2p

    return tuple(default_g2p().predict(word))


def align_words(audio, transcript, model=None, dictionary=None, oov: str = "g2p", sr: int | None = None,
                name: str | None = None, tier: str | None = None) -> Alignment:
    """Align a recording to its orthographic transcript; returns an :class:`Alignment` with
    ``words`` and ``phones`` tiers (MFA's names and order).

    ``audio``: a path, or samples with their rate ``sr`` (as :func:`align`). ``transcript``: a
    ``.lab``/``.txt`` file, an inline string, or a TextGrid whose interval tiers hold utterance
    transcripts (each non-empty interval is aligned within its own span; one pair of tiers per
    speaker tier). ``dictionary``: None (CMU), a user dictionary path (MFA format, on top of
    CMU) or a loaded dictionary. ``oov``: ``"g2p"`` (unknown words get the G2P's
    pronunciation, listed in ``oovs``) or ``"error"``. ``tier``: of a TextGrid transcript, that
    interval tier alone. Text normalisation: :mod:`aligner.words.normalize`.
    """
    from aligner.alignment.words import align_words_scored
    from aligner.errors import TranscriptError
    from aligner.features.mfcc import mfcc_features
    from aligner.io.exports import tier_name
    from aligner.io.transcripts import read_word_segments
    from aligner.words.normalize import normalize_transcript

    if oov not in ("g2p", "error"):
        raise ValueError(f"oov must be 'g2p' or 'error', got {oov!r}")
    m = load_model(model)
    words_dict = load_dictionary(dictionary)
    if isinstance(audio, (str, os.PathLike)):  # checks from the header first: no samples read yet
        from aligner.io.audio import audio_duration

        name = name or str(audio)
        samples, duration = None, audio_duration(audio)
    else:
        samples, name = _samples(audio, sr, name)
        duration = len(samples) / SAMPLE_RATE
    where = str(transcript) if isinstance(transcript, (str, os.PathLike)) and os.path.exists(transcript) else name
    segments = read_word_segments(transcript, tier)
    speakers = list(dict.fromkeys(s.speaker for s in segments))
    by_speaker = {s: ([], []) for s in speakers}
    conf_by_speaker = {s: ([], []) for s in speakers}
    matches: list = []
    oovs: dict = {}
    work = []
    for seg in segments:
        start = 0.0 if seg.start_s is None else seg.start_s
        end = duration if seg.end_s is None else seg.end_s
        if end > duration + TIER_OVERRUN_TOLERANCE:
            raise TranscriptError(f"{where}: the interval {start:.3f}-{end:.3f} s runs past the end of "
                                  f"{name} ({duration:.3f} s)")
        end = min(end, duration)
        label = name if seg.start_s is None else f"{name} [{start:.3f}-{end:.3f} s]"
        tokens = normalize_transcript(seg.text, words_dict)
        labels, prons = _pronunciations(tokens, words_dict, oov, where, oovs)
        _check_words_fit(m, prons, end - start, label)
        work.append((seg, start, end, label, labels, prons))
    if samples is None:
        samples, name = _samples_any_length(audio, sr, name)
    for seg, start, end, label, labels, prons in work:
        a, b = int(round(start * SAMPLE_RATE)), int(round(end * SAMPLE_RATE))
        cut = samples if (a, b) == (0, len(samples)) else samples[a:b]  # a whole long file stays on disk
        frames = mfcc_features(cut, SAMPLE_RATE)
        scores = m.classifier.scores(frames)
        try:
            result = align_words_scored(m, frames, scores, labels, prons, len(cut) / SAMPLE_RATE, name=label,
                                        review=True)
        except AlignmentError as exc:
            msg = str(exc)
            raise AlignmentError(msg if label in msg else f"{label}: {msg}") from None
        result = result.shifted(start)
        by_speaker[seg.speaker][0].extend(result.words)
        by_speaker[seg.speaker][1].extend(result.phones)
        if result.word_confidences is not None:
            conf_by_speaker[seg.speaker][0].extend(result.word_confidences)
            conf_by_speaker[seg.speaker][1].extend(result.phone_confidences)
        if result.transcript_match is not None:
            matches.append(result.transcript_match)
    tiers, confidences = [], {}
    for speaker, (words, phones) in by_speaker.items():
        tiers += [(tier_name("words", speaker), words), (tier_name("phones", speaker), phones)]
        word_conf, phone_conf = conf_by_speaker[speaker]
        if m.confidence is not None and len(word_conf) == len(words) and len(phone_conf) == len(phones):
            confidences[tier_name("words", speaker)] = word_conf
            confidences[tier_name("phones", speaker)] = phone_conf
    match = min(matches) if matches else None
    return Alignment(tiers, duration, oovs, confidences, match, _flagged(m, match))


def align_transcript(audio, transcript, model=None, kind: str = "auto", phone_set: str = "auto",
                     split_stops: bool | None = None, dictionary=None, oov: str = "g2p",
                     sr: int | None = None, name: str | None = None) -> Alignment:
    """Align ``audio`` to a phone or words transcript (``kind``: ``auto``, ``phones``, ``words``;
    see :func:`aligner.io.transcripts.transcript_kind`): :func:`align` or :func:`align_words`,
    as an :class:`Alignment`."""
    from aligner.io.transcripts import transcript_kind

    if transcript_kind(transcript, kind) == "words":
        return align_words(audio, transcript, model, dictionary, oov, sr=sr, name=name)
    return align_phones_reviewed(audio, transcript, model, phone_set, name=name, split_stops=split_stops, sr=sr)


def output_path(audio, fmt: str = "textgrid") -> Path:
    """The default output beside ``audio``: its stem with the format's suffix (``.TextGrid``,
    ``.json``, ``.csv``)."""
    from aligner.io.exports import SUFFIXES

    return Path(audio).with_suffix(SUFFIXES[fmt])


def check_output_not_input(out, *inputs) -> None:
    """Refuse (one-line :class:`AlignerError`) an output path that is, or resolves to, an input.
    A new output (nothing there yet) is no existing input, so the inputs are not resolved then."""
    target = Path(out).resolve()
    if not target.exists():
        return
    for item in inputs:
        if isinstance(item, (str, os.PathLike)) and os.path.exists(item) and Path(item).resolve() == target:
            raise AlignerError(f"{out}: the output would overwrite the input {item}; choose another -o")


def align_file(audio, transcript, out=None, model=None, phone_set: str = "auto",
               split_stops: bool | None = None, kind: str = "auto", fmt: str = "textgrid",
               dictionary=None, oov: str = "g2p", oovs: dict | None = None,
               confidence_tiers: bool = False) -> Path:
    """Align one file and write its alignment (``fmt``: ``textgrid``, ``json`` or ``csv``);
    ``out`` defaults to :func:`output_path`. A phone transcript gives a ``phones`` tier, a words
    transcript ``words`` and ``phones`` tiers (:func:`align_transcript`). Refuses an ``out``
    that is the audio, the transcript or the dictionary. ``oovs``, if given, receives the unknown
    words and the pronunciations the G2P gave them. CSV and JSON carry each interval's start
    confidence when the model has a confidence model; a TextGrid does with ``confidence_tiers``
    (point tiers). See :func:`align_file_reviewed` for the review itself.
    """
    out, result = _align_and_write(audio, transcript, out, model, phone_set, split_stops, kind, fmt,
                                   dictionary, oov, confidence_tiers)
    if oovs is not None:
        oovs.update(result.oovs)
    return out


def align_file_reviewed(audio, transcript, out=None, model=None, phone_set: str = "auto",
                        split_stops: bool | None = None, kind: str = "auto", fmt: str = "textgrid",
                        dictionary=None, oov: str = "g2p", confidence_tiers: bool = False) -> tuple[Path, Alignment]:
    """:func:`align_file`, returning ``(path written, the Alignment written there)`` (its
    confidences, transcript check and unknown words)."""
    return _align_and_write(audio, transcript, out, model, phone_set, split_stops, kind, fmt, dictionary, oov,
                            confidence_tiers)


def _align_and_write(audio, transcript, out, model, phone_set, split_stops, kind, fmt, dictionary,
                     oov, confidence_tiers: bool = False) -> tuple[Path, Alignment]:
    """:func:`align_file`'s work: the path written and the :class:`Alignment` written there."""
    from aligner.io.exports import write_alignment

    out = Path(out) if out is not None else output_path(audio, fmt)
    check_output_not_input(out, audio, transcript, dictionary)
    result = align_transcript(audio, transcript, model, kind, phone_set, split_stops, dictionary, oov)
    return write_alignment(out, result.tiers, result.duration_s, fmt, speaker=Path(audio).stem,
                           confidences=result.confidences or None, confidence_tiers=confidence_tiers), result


# -- corpus ------------------------------------------------------------------------------------

class FileReview(NamedTuple):
    """One aligned file's review (:meth:`Alignment.review`): its boundaries, those below 0.5
    confidence, the lowest confidence, the transcript-match probability and flag."""

    n_boundaries: int
    n_low: int
    lowest: float
    transcript_match: Optional[float]
    transcript_flagged: bool


@dataclass
class CorpusReport:
    """What :func:`align_corpus` did."""

    written: list = field(default_factory=list)  #: output paths
    resumed: list = field(default_factory=list)  #: complete outputs of an earlier run, kept (``resume``)
    failed: list = field(default_factory=list)  #: (audio path, error message)
    skipped: list = field(default_factory=list)  #: audio files with no transcript beside them
    audio_seconds: float = 0.0  #: audio aligned (successful files)
    seconds: float = 0.0  #: wall time of the alignment work, start-up excluded
    startup_seconds: float = 0.0  #: model load, worker start and numba warm-up
    oovs: dict = field(default_factory=dict)  #: unknown word -> (files it is in, pronunciation used)
    reviews: dict = field(default_factory=dict)  #: output path -> :class:`FileReview` (aligned files)
    plot_problems: list = field(default_factory=list)  #: (audio path, why its picture was not drawn)

    def least_confident(self, n: int = 5) -> list:
        """The ``n`` outputs with the largest share of boundaries below 0.5 confidence (those with
        any), as ``(output path, FileReview)``, worst first."""
        rows = [(out, r) for out, r in self.reviews.items() if r.n_low > 0]
        rows.sort(key=lambda item: (-item[1].n_low / item[1].n_boundaries, item[1].lowest))
        return rows[:n]

    def flagged(self) -> list:
        """``(output path, FileReview)`` of the files whose transcript probably does not match."""
        return [(out, r) for out, r in self.reviews.items() if r.transcript_flagged]

    @property
    def realtime_factor(self) -> float:
        return self.audio_seconds / self.seconds if self.seconds > 0 else float("nan")


#: transcript suffixes looked for beside each audio file, per transcript kind, in order
CORPUS_TRANSCRIPTS = {"auto": (".phn", ".lab", ".txt", ".textgrid"), "phones": (".phn", ".phones"),
                      "words": (".lab", ".txt", ".textgrid")}


_WORKER_MODEL: Optional[AlignmentModel] = None
_WORKER_MODEL_PATH: Optional[str] = None


def _worker_init(model: str | AlignmentModel, blas_threads: Optional[int] = None) -> None:
    """Set this process's model (a loaded one, or the bundle at a path) and warm the decoder,
    unless it already has that model (inherited by fork); optionally cap BLAS threads (with
    several worker processes, one BLAS thread each avoids oversubscribing the cores)."""
    global _WORKER_MODEL, _WORKER_MODEL_PATH
    if blas_threads is not None:
        _cap_blas(blas_threads)
    from aligner.io import exports  # noqa: F401  the writers: imported before workers fork, not in each
    if isinstance(model, AlignmentModel):
        if _WORKER_MODEL is not model:
            _WORKER_MODEL, _WORKER_MODEL_PATH = model, None
            warm_up(model)
            _warm_up_sphere_repair()
    elif _WORKER_MODEL is None or _WORKER_MODEL_PATH != model:
        _WORKER_MODEL = AlignmentModel.load(model)
        _WORKER_MODEL_PATH = model
        warm_up(_WORKER_MODEL)
        _warm_up_sphere_repair()


def _cap_blas(threads: int) -> None:
    """A worker process's BLAS threads: one for good (:func:`aligner.blas.one_thread_for_good`;
    then the per-product caps are skipped), or at most ``threads``."""
    if threads == 1:
        from aligner import blas

        blas.one_thread_for_good()
    else:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)


def _warm_up_sphere_repair() -> None:
    """Load the SPHERE repair's numba functions (TIMIT corpora hold damaged files) before corpus
    workers fork, so none loads them at its first damaged file."""
    from aligner.io import sphere_repair

    sphere_repair.warm_up()


def _align_one(job) -> tuple:
    """Align one corpus file: ``(audio, error or None, seconds of audio, oovs)``; never raises."""
    audio, transcript, out, kind, fmt, dictionary, oov, confidence_tiers, plot_png = job
    try:
        _, result = _align_and_write(audio, transcript, out, _WORKER_MODEL, "auto", None, kind, fmt,
                                     dictionary, oov, confidence_tiers)
        review = FileReview(*result.review(), result.transcript_match, result.transcript_flagged)
    except AlignerError as exc:
        return str(audio), str(exc), 0.0, {}, None, None
    except Exception as exc:  # a bug or an unexpected library error: report it, go on
        return str(audio), f"{audio}: unexpected {type(exc).__name__}: {exc}", 0.0, {}, None, None
    plot_problem = None
    if plot_png is not None:
        try:
            _plot_result(audio, out, plot_png, result)
        except AlignerError as exc:
            plot_problem = str(exc)
    return str(audio), None, result.duration_s, result.oovs, review, plot_problem


def _plot_result(audio, textgrid, png, result: "Alignment") -> None:
    """The review picture of a written TextGrid (the first :data:`aligner.plotting.MAX_DURATION_S`
    seconds of a longer recording), boundaries coloured by ``result``'s confidences."""
    from aligner.plotting import MAX_DURATION_S, plot_alignment

    import warnings

    confidences = {tier: [(iv.start_s, c) for iv, c in zip(intervals, result.confidences[tier])
                          if iv.label and iv.start_s > 0]
                   for tier, intervals in result.tiers if tier in result.confidences} or None
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    end = min(result.duration_s, MAX_DURATION_S)
    with warnings.catch_warnings():  # the alignment has said what there was to say about the audio
        warnings.simplefilter("ignore")
        plot_alignment(audio, textgrid, png, start_s=0.0, end_s=end, confidences=confidences)


def plot(audio, textgrid, out=None, start_s: float | None = None, end_s: float | None = None, tiers=None,
         confidences=None) -> Path:
    """The review picture of an alignment (:func:`aligner.plotting.plot_alignment`: waveform,
    spectrogram, tiers, boundaries coloured by confidence) written to ``out`` (PNG); needs the
    ``plot`` extra (matplotlib)."""
    from aligner.plotting import plot_alignment

    return plot_alignment(audio, textgrid, out, start_s, end_s, tiers, confidences)


_WORDS_WARM: set = set()


def _corpus_worker_init(model_path: Optional[str], blas_threads: Optional[int], dictionary: Optional[str],
                        words: bool) -> None:
    """Set up a Dask worker for a corpus: the model at ``model_path`` (None: the worker's own
    shipped model) loaded and its decoder warmed (:func:`_worker_init`), and, for word
    transcripts (``words``), the pronouncing dictionary (CMU plus the one at ``dictionary``)
    loaded and the word decoder warmed, once per process and model."""
    model_path = model_path or str(default_model_dir(ALIGNMENT_KIND).resolve())
    _worker_init(model_path, blas_threads)
    if words:
        load_dictionary(dictionary)
        if model_path not in _WORDS_WARM:
            warm_up_words(_WORKER_MODEL)
            _WORDS_WARM.add(model_path)


def _as_given(text, paths: Optional[dict]):
    """``text`` with each absolute path of ``paths`` (absolute -> as the user gave it: one task's
    own paths) written as given, longest first, so that messages from Dask workers name files as
    the local pool does; ``text`` itself when ``paths`` is None."""
    if not paths or not isinstance(text, str):
        return text
    for absolute in sorted(paths, key=len, reverse=True):
        if absolute != paths[absolute]:
            text = text.replace(absolute, paths[absolute])
    return text


def _dask_path(path) -> Optional[str]:
    """``path`` made absolute for a Dask worker, whose working directory is not ours (symbolic
    links kept: they may be how every machine of the cluster sees the shared file system)."""
    return None if path is None else os.path.abspath(path)


def _absolute_paths(paths) -> dict:
    """``{absolute path: path as given}`` of the paths that are not None."""
    return {_dask_path(p): str(p) for p in paths if p is not None}


def _check_dask_settings(engine: str, scheduler, jobs: int, model, model_class) -> None:
    if engine != "dask":
        return
    from aligner.distributed import import_distributed

    import_distributed()  # a missing extra: one error before any work
    if isinstance(model, model_class):
        raise TypeError("the dask engine needs the model as a directory path (each worker loads it from "
                        "the shared file system), not a loaded model")
    if scheduler and jobs != 1:
        raise AlignerError(f"{scheduler}: jobs (--jobs) sets the worker processes of a local pool or cluster; "
                           f"a running scheduler's workers are its own")


def warm_up(model: AlignmentModel) -> None:
    """Compile (or load from numba's cache) the decoder once, on a tiny synthetic utterance,
    with its review (the boundary confidences' numba functions) when the model has a
    confidence model, as every corpus file is aligned: forked workers then inherit all of it
    and no file pays a cache load."""
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(SAMPLE_RATE // 2)).astype(np.float32)
    from aligner.phonetics import get_phone_set

    model.align_with_review(samples, ["h#", "aa", "h#"], get_phone_set("timit61"), name="<warm-up>",
                            review=model.confidence is not None)


def warm_up_words(model: AlignmentModel) -> None:
    """Compile (or load from numba's cache) the pronunciation-graph decoder once."""
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(SAMPLE_RATE // 2)).astype(np.float32)
    align_words(samples, "a", model, sr=SAMPLE_RATE, name="<warm-up>")


def align_corpus(corpus_dir, out_dir, model=None, jobs: int = 1,
                 progress: Optional[Callable[[int, int], None]] = None, kind: str = "auto",
                 fmt: str = "textgrid", dictionary=None, oov: str = "g2p", engine: Optional[str] = None,
                 scheduler: Optional[str] = None, resume: bool = False,
                 confidence_tiers: bool = False, plot_dir=None) -> CorpusReport:
    """Align every audio file under ``corpus_dir`` that has a transcript of the same stem beside it.

    Montreal Forced Aligner's corpus layout (flat, or one folder per speaker; ``.lab``, ``.txt``
    or ``.TextGrid`` transcripts) and TIMIT's (``.phn``, read as phones when both are there) are
    read; ``kind`` (``auto``, ``words``, ``phones``) narrows the transcripts looked for
    (:data:`CORPUS_TRANSCRIPTS`). Writes ``out_dir/<relative path>`` with the format's suffix
    (``fmt``). ``model``: an :class:`AlignmentModel`, a model directory, or None for the
    shipped model; ``dictionary``, ``oov``: as for :func:`align_words`. Goes on past bad files:
    they are listed in ``report.failed``. ``progress(done, total)`` is called after each file.

    ``engine``: ``local`` (``jobs`` worker processes of a :class:`~aligner.batch.WorkerPool`) or
    ``dask``: one Dask task per file, on the scheduler at ``scheduler`` (``tcp://HOST:PORT``;
    its workers must see the corpus, the model and OUT_DIR at the same paths: a shared file
    system) or, without one, on a local cluster of ``jobs`` processes; None: ``dask`` when a
    scheduler is given, else ``local``. With ``dask``, ``model`` must be a directory path or None
    (each worker's own shipped model). The outputs and the failures listed are the same either
    way (:mod:`aligner.distributed`). With ``resume``, a file whose output is already complete
    (:func:`aligner.batch.output_is_complete`: there, non-empty and no older than its audio,
    transcript and ``dictionary``) is not aligned again and is listed in ``report.resumed``.
    ``confidence_tiers``: TextGrids get the confidence point tiers (:func:`align_file`); each
    aligned file's review is in ``report.reviews`` (:meth:`CorpusReport.least_confident`).
    ``plot_dir``: also draw each TextGrid's review picture (:func:`plot`) to
    ``plot_dir/<relative path>.png`` (the first 60 s of longer recordings; needs the ``plot``
    extra); a picture that cannot be drawn is listed in ``report.plot_problems``.
    """
    from aligner.io.exports import SUFFIXES

    corpus_dir, out_dir = Path(corpus_dir), Path(out_dir)
    if not corpus_dir.is_dir():
        raise AlignerError(f"{corpus_dir}: corpus directory not found")
    if kind not in CORPUS_TRANSCRIPTS:
        raise ValueError(f"kind must be one of {', '.join(CORPUS_TRANSCRIPTS)}, got {kind!r}")
    engine = resolve_engine(engine, scheduler)
    _check_dask_settings(engine, scheduler, jobs, model, AlignmentModel)
    t0 = time.perf_counter()
    model_ref = model if isinstance(model, AlignmentModel) else str(
        (Path(model) if model is not None else default_model_dir(ALIGNMENT_KIND)).resolve())
    utterances = find_utterances(corpus_dir, CORPUS_TRANSCRIPTS[kind])
    with_transcript = {u.audio for u in utterances}
    report = CorpusReport(skipped=[p for p in find_audio_files(corpus_dir) if p not in with_transcript])
    suffix = SUFFIXES[fmt]
    if plot_dir is not None:
        if fmt != "textgrid":
            raise AlignerError(f"{plot_dir}: review pictures are drawn from TextGrids; use the textgrid format")
        from aligner.plotting import _matplotlib

        _matplotlib()  # a missing extra: one error before any work
    jobs_list, outputs = [], {}
    for u in utterances:
        out = out_dir / (u.name + suffix)
        if out in outputs:  # dup.wav and dup.flac beside one transcript: one output name
            report.failed.append((u.audio, f"{u.audio}: its output {out} is also that of {outputs[out]}; "
                                           f"rename one of the two recordings"))
            continue
        outputs[out] = u.audio
        if resume and output_is_complete(out, (u.audio, u.transcript, dictionary)):
            report.resumed.append(out)
            continue
        png = None if plot_dir is None else Path(plot_dir) / (u.name + ".png")
        jobs_list.append((u.audio, u.transcript, out, kind, fmt, dictionary, oov, confidence_tiers, png))
    jobs = max(1, min(jobs, len(jobs_list) or 1))
    words = any(Path(job[1]).suffix.lower() != ".phn" for job in jobs_list)
    given = [None] * len(jobs_list)  # per task, its absolute paths -> as given (Dask messages)
    if engine == "dask":
        load_model(model_ref)  # a damaged model: one error here, not one per file on the workers
        if words:
            load_dictionary(dictionary)
        given = [_absolute_paths(job[:3] + (dictionary,)) for job in jobs_list]
        tasks = [(_dask_path(a), _dask_path(t), _dask_path(o), k, f, _dask_path(d), v, c, _dask_path(p))
                 for a, t, o, k, f, d, v, c, p in jobs_list]
        worker_model = None if model is None else _dask_path(model)  # None: each worker's shipped model
        initializer, initargs = _corpus_worker_init, (worker_model, 1, _dask_path(dictionary), words)
    else:
        _worker_init(model_ref)  # load and warm here: forked workers inherit both
        if words:
            load_dictionary(dictionary)  # likewise the pronouncing dictionary and the word decoder
            warm_up_words(_WORKER_MODEL)
        tasks, initializer, initargs = jobs_list, _worker_init, (model_ref, 1)
    with open_pool(engine, scheduler, jobs, initializer, initargs, chunksize=1) as pool:
        report.startup_seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        lost = lambda job, why: (str(job[0]), f"{job[0]}: {why}", 0.0, {}, None, None)  # noqa: E731
        for i, (audio, error, seconds, oovs, review, plot_problem) in enumerate(pool.map(_align_one, tasks, lost)):
            audio, error = _as_given(audio, given[i]), _as_given(error, given[i])
            if error is None:
                report.written.append(jobs_list[i][2])
                report.reviews[jobs_list[i][2]] = review
                if plot_problem is not None:
                    report.plot_problems.append((audio, _as_given(plot_problem, given[i])))
                report.audio_seconds += seconds
                for word, pronunciation in oovs.items():
                    count = report.oovs.get(word, (0, pronunciation))[0]
                    report.oovs[word] = (count + 1, pronunciation)
            else:
                report.failed.append((audio, error))
            if progress:
                progress(i + 1, len(jobs_list))
    report.seconds = time.perf_counter() - t1
    return report


@dataclass
class OovReport:
    """What :func:`find_oovs` found: unknown word -> (occurrences, the G2P's pronunciation or
    ``""`` when no G2P ran), most frequent first; the transcripts read and those that failed."""

    oovs: dict = field(default_factory=dict)
    n_transcripts: int = 0
    failed: list = field(default_factory=list)  #: (transcript path, error message)


def find_oovs(corpus_dir, dictionary=None, g2p: bool = True) -> OovReport:
    """The words of a corpus's word transcripts (``.lab``, ``.txt``, ``.TextGrid`` beside audio
    files; phone transcripts are passed over) that the dictionary lacks, without aligning
    (Montreal Forced Aligner's ``find_oovs``). With ``g2p``, each gets the pronunciation the
    aligner would use."""
    from aligner.io.transcripts import read_word_segments, transcript_kind
    from aligner.words.normalize import normalize_transcript
    from aligner.words.oov import find_oovs as count_oovs

    corpus_dir = Path(corpus_dir)
    if not corpus_dir.is_dir():
        raise AlignerError(f"{corpus_dir}: corpus directory not found")
    words_dict = load_dictionary(dictionary)
    report = OovReport()
    tokens = []
    for utt in find_utterances(corpus_dir, CORPUS_TRANSCRIPTS["words"]):
        try:
            if transcript_kind(utt.transcript) != "words":
                continue
            for seg in read_word_segments(utt.transcript):
                tokens += normalize_transcript(seg.text, words_dict)
            report.n_transcripts += 1
        except AlignerError as exc:
            report.failed.append((str(utt.transcript), str(exc)))
    for word, count in count_oovs(tokens, words_dict).items():
        report.oovs[word] = (count, " ".join(_g2p_pronunciation(word)) if g2p else "")
    return report




# -- evaluation and training ------------------------------------------------------------------

class Evaluation(NamedTuple):
    """What :func:`evaluate` found: the scores, and the files it could not score."""

    scores: "AlignmentScores"  #: boundary metrics over every scored file
    problems: list  #: ``(path, message)`` for missing, unreadable or mismatched files


class WordEvaluation(NamedTuple):
    """What :func:`evaluate_words` found (FA-Bench's word-track figures)."""

    words: object  #: :class:`~aligner.alignment.word_evaluation.WordScores` of the words
    phones: object  #: the same figures for the phones, None without phone references
    problems: list  #: ``(path, message)`` for missing, unreadable or unmatched files


def evaluate_words(ref_dir, hyp_dir, allow_missing: bool = False) -> WordEvaluation:
    """Words (and phones) tiers of HYP's TextGrids against REF's ``.wrd``/``.phn`` files or
    TextGrids, by relative path: words paired by their labels, both edges scored, boundary F1 at
    20 ms (:mod:`aligner.alignment.word_evaluation`)."""
    from aligner.alignment.word_evaluation import evaluate_word_directories

    return WordEvaluation(*evaluate_word_directories(ref_dir, hyp_dir, allow_missing))


def hyp_has_words(hyp_dir) -> bool:
    """True if the first TextGrid under ``hyp_dir`` has a words tier (``words`` or ``X - words``)."""
    from aligner.io.corpus import files_under
    from aligner.io.textgrids import load_textgrid, tier_names

    for path in files_under(Path(hyp_dir)):
        if path.suffix.lower() == ".textgrid":
            try:
                names = tier_names(load_textgrid(path), interval=True)
            except AlignerError:
                return False
            return any(n.strip().lower() == "words" or n.strip().lower().endswith(" - words") for n in names)
    return False


def evaluate(ref_dir, hyp_dir, allow_missing: bool = False) -> Evaluation:
    """Boundary metrics of HYP against REF (directories of TextGrids or ``.phn``, by relative path).

    Returns an :class:`Evaluation` ``(scores, problems)``: problems are hypotheses without a
    reference or with other phones, and (unless ``allow_missing``) references without a
    hypothesis; see :mod:`aligner.alignment.evaluation`.
    """
    return Evaluation(*evaluate_directories(ref_dir, hyp_dir, allow_missing))


def train(corpus_dir, out_dir, trainer: str = "orbit", trainer_params: Optional[dict] = None,
          classifier_params: Optional[dict] = None, n_folds: int = 4, n_val_speakers: int = 2,
          progress=None, epoch_callback=None) -> AlignmentModel:
    """Train an alignment model on a TIMIT-layout corpus and save it to ``out_dir``."""
    from aligner.alignment.training import load_utterances, train_alignment_model

    utterances = find_utterances(corpus_dir)
    if not utterances:
        raise AlignerError(f"{corpus_dir}: no audio file with a .phn transcript beside it")
    data = load_utterances(utterances, progress)
    model, _ = train_alignment_model(data, trainer, trainer_params, classifier_params, n_folds,
                                     n_val_speakers, progress=progress, epoch_callback=epoch_callback)
    model.training["corpus"] = str(corpus_dir)
    model.save(out_dir)
    return model


def train_vowels(corpus_dir, out_dir, alignment_model=None, trainer_params: Optional[dict] = None,
                 progress=None, **options):
    """Train a vowel duration model on the CVC tokens of a TIMIT-layout corpus and save it to ``out_dir``.

    ``alignment_model``: the alignment model (or its directory) whose frame classifier computes
    the acoustics and is copied into the vowel model; None: the shipped one. ``trainer_params``:
    one settings dict tried for every trainer instead of its grid. ``progress(stage, done, total)``.
    ``options`` go to :func:`aligner.vowels.training.train_vowel_model` (``trainers``,
    ``width_sets`` in 5 ms frames, ``epochs``, ``n_folds``, ``tau`` in frames, ``columns``,
    ``prior_form``, ``prior_widen``, ``n_runs``, ``keep_corrupted``, ``held_out_classifier``).
    Returns the :class:`~aligner.vowels.model.VowelModel`; ``model.training["cv"]`` holds the
    cross-validation scores. Bad settings raise :class:`~aligner.vowels.training.VowelSettingsError`
    (an :class:`AlignerError`), before any audio is read.
    """
    from aligner.vowels.training import DEFAULT_TRAINERS, train_vowel_model

    if trainer_params is not None:
        options["grid"] = {t: [dict(trainer_params)] for t in options.get("trainers", DEFAULT_TRAINERS)}
    model = train_vowel_model(corpus_dir, alignment_model, progress=progress, **options)
    model.save(out_dir)
    return model


# -- vowel durations -------------------------------------------------------------------------

VOWEL_TIER = "vowel"
#: a ``--tier`` may end this far past the end of the audio (seconds) before the file is rejected
TIER_OVERRUN_TOLERANCE = 0.05


@dataclass(frozen=True)
class VowelRecord:
    """One measured vowel (seconds from the start of ``file``'s recording).

    ``label``, ``window_start_s`` and ``window_end_s`` describe the ``--tier`` interval the vowel
    was searched in (the window is the interval widened by ``pad``, clipped to the audio); without
    a tier, ``label`` is ``""`` and the window is the whole file. A vowel of a forced alignment
    (``mode="align"``) has its word, vowel symbol, stress and confidence; its ``score`` is its
    confidence (NaN without a confidence model).
    """

    file: str
    onset_s: float
    offset_s: float
    duration_s: float
    score: float
    label: str = ""
    window_start_s: float = 0.0
    window_end_s: float = 0.0
    #: ``model`` (the transcript-free vowel model) or ``align`` (the vowel of a forced alignment)
    mode: str = "model"
    speaker: str = ""
    word: str = ""  #: aligned: the word holding the vowel
    word_start_s: Optional[float] = None
    word_end_s: Optional[float] = None
    vowel: str = ""  #: aligned: the phone symbol, stress digit removed
    stress: str = ""  #: aligned: the dictionary's stress digit (0, 1, 2), "" if none
    confidence: Optional[float] = None  #: aligned: the lower of its two boundaries' confidences
    #: ``low_confidence`` when the vowel model found voiced but no vowel-like frames (measured all
    #: the same); "" otherwise
    flag: str = ""


@dataclass
class VowelReport:
    """What :func:`measure_vowels` did. Unpacks as ``records, failed = report``."""

    records: list = field(default_factory=list)  #: :class:`VowelRecord` rows, in input order
    failed: list = field(default_factory=list)  #: (file, error message)
    n_files: int = 0  #: audio files found
    seconds: float = 0.0  #: wall time of the measuring, start-up excluded
    startup_seconds: float = 0.0  #: model load, worker start and numba warm-up
    textgrids: list = field(default_factory=list)  #: TextGrid paths written

    def __iter__(self):
        return iter((self.records, self.failed))

    @property
    def tokens_per_second(self) -> float:
        return len(self.records) / self.seconds if self.seconds > 0 else float("nan")


@lru_cache(maxsize=4)
def _load_vowel_model_cached(path: str):
    from aligner.vowels.model import VowelModel

    return VowelModel.load(path)


def load_vowel_model(model=None):
    """A :class:`~aligner.vowels.model.VowelModel`: ``model`` itself, the bundle at that path, or the shipped one."""
    from aligner.io.bundles import VOWEL_KIND
    from aligner.vowels.model import VowelModel

    if isinstance(model, VowelModel):
        return model
    path = Path(model) if model is not None else default_model_dir(VOWEL_KIND)
    return _load_vowel_model_cached(str(Path(path).resolve()))


def _vowel_inputs(inputs) -> list:
    """``[(audio path, name, output stem)]``: files as given, directories searched recursively (name
    relative to the directory). The output stem (for ``--textgrid-dir``) is the relative path for
    files found in a directory and the bare file name for files given directly."""
    from aligner.io.corpus import find_audio_files
    from aligner.errors import AudioError

    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    found = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            files = find_audio_files(path)
            if not files:
                raise AudioError(f"{path}: no audio files in this directory")
            found += [(f, f.relative_to(path).as_posix(), f.relative_to(path).with_suffix("")) for f in files]
        elif path.exists():
            found.append((path, str(item), Path(path.name).with_suffix("")))
        else:
            raise AudioError(f"{path}: no such file or directory")
    return found


def _search_windows(audio: Path, name: str, tier: str, pad: float, duration: float) -> list:
    """``[(start_s, end_s, label)]``: the non-empty intervals of ``tier`` in the TextGrid beside ``audio``,
    widened by ``pad`` seconds and clipped to the audio."""
    from aligner.errors import TranscriptError
    from aligner.io.textgrids import read_interval_tier

    grid = next((c for c in (audio.with_suffix(".TextGrid"), audio.with_suffix(".textgrid"))
                 if c.is_file()), audio.with_suffix(".TextGrid"))
    intervals = [iv for iv in read_interval_tier(grid, tier) if iv[2].strip()]
    if not intervals:
        raise TranscriptError(f"{grid}: tier {tier!r} has no non-empty interval")
    end = max(iv[1] for iv in intervals)
    if end > duration + TIER_OVERRUN_TOLERANCE:
        raise TranscriptError(f"{grid}: tier {tier!r} runs to {end:.3f} s but {name} lasts {duration:.3f} s "
                              f"(a TextGrid of another recording?)")
    return [(max(s - pad, 0.0), min(e + pad, duration), label.strip()) for s, e, label in intervals]


def _measure_one(job) -> tuple:
    """Measure one file: ``(records, failures, textgrid path or None)``; never raises on bad input."""
    return _measure_chunk([job])[0]


def _measure_chunk(jobs) -> list:
    """:func:`_measure_one` of each job, in order (the same results): the files measured with
    the vowel model are read first and measured together (:meth:`VowelModel.measure_many`);
    aligned files one by one."""
    results: list = [None] * len(jobs)
    read = []  # (index, samples, windows as measure_windows takes them, windows, where)
    for i, job in enumerate(jobs):
        if job[5] is not None:
            results[i] = _measure_aligned(job[0], job[1], job[2], job[4], *job[5])
            continue
        try:
            read.append((i,) + _read_vowel_job(job))
        except Exception as exc:
            results[i] = _vowel_job_failure(job, exc)
            continue
        if len(read[-1][1]) > VOWEL_BATCH_MAX_SAMPLES:  # a long recording: measured now, not held
            results[i] = _measure_read(jobs, read[-1:])[0]
            read.pop()
    for (i, *_), result in zip(read, _measure_read(jobs, read)):
        results[i] = result
    return results


#: recordings longer than this (samples; 10 s) are measured as soon as read, not held for a batch
VOWEL_BATCH_MAX_SAMPLES = 10 * SAMPLE_RATE


def _measure_read(jobs, read) -> list:
    """The results of the transcript-free jobs ``read`` = [(index into jobs, samples, windows
    as measure_windows takes them, windows, where)], measured together."""
    if not read:
        return []
    model = _WORKER_VOWEL_MODEL
    try:
        measured = model.measure_many([(samples, windows_of, where) for _, samples, windows_of, _, where in read])
    except Exception:  # a bug: measure each file alone, so that it is reported against its own file
        measured = []
        for _, samples, windows_of, _, where in read:
            try:
                measured.append(model.measure_many([(samples, windows_of, where)])[0])
            except Exception as exc:
                measured.append(exc)
    results = []
    for (i, samples, _, windows, where), results_i in zip(read, measured):
        job = jobs[i]
        try:
            if isinstance(results_i, Exception):
                raise results_i
            results.append(_vowel_records(job, samples, windows, where, results_i))
        except Exception as exc:
            results.append(_vowel_job_failure(job, exc))
    return results


def _read_vowel_job(job) -> tuple:
    """``(samples, windows as measure_windows takes them, windows (start_s, end_s, label), where)``
    of a transcript-free job."""
    from aligner.vowels.wav import read_pcm16_mono

    audio, name, tier, pad = job[0], job[1], job[2], job[3]
    samples = read_pcm16_mono(str(Path(audio)))  # a plain 16 kHz PCM WAV cut: the same samples, faster
    if samples is None:
        samples = load_audio(audio)
    duration = len(samples) / SAMPLE_RATE
    if tier is None:
        return samples, [None], [(0.0, duration, "")], [name]
    windows = _search_windows(Path(audio), name, tier, pad, duration)
    where = [f"{name} [{label} {start:.3f}-{end:.3f} s]" for start, end, label in windows]
    return samples, [w[:2] for w in windows], windows, where


def _vowel_records(job, samples, windows, where, results) -> tuple:
    """``(records, failures, textgrid path or None)`` of a transcript-free job from its measurements."""
    name, textgrid = job[1], job[4]
    records, failures = [], []
    for (start, end, label), place, m in zip(windows, where, results):
        if isinstance(m, Exception):
            msg = str(m)
            failures.append((name, msg if place in msg else f"{place}: {msg}"))
            continue
        records.append(VowelRecord(name, m.onset_s, m.offset_s, m.duration_s, m.score, label, start, end,
                                   flag=m.flag))
    try:
        return records, failures, _vowel_textgrid(textgrid, records, len(samples) / SAMPLE_RATE)
    except Exception as exc:  # the records stand; the TextGrid's failure is listed
        return records, failures + _vowel_job_failure(job, exc)[1], None


def _vowel_job_failure(job, exc: Exception) -> tuple:
    """The result of a transcript-free job that failed as a whole with ``exc``."""
    audio, name = job[0], job[1]
    if isinstance(exc, AlignerError):
        msg = str(exc)
        return [], [(name, msg if str(audio) in msg or name in msg else f"{name}: {msg}")], None
    return [], [(name, f"{name}: unexpected {type(exc).__name__}: {exc}")], None  # a bug or library error


def _vowel_textgrid(textgrid, records, duration: float) -> Optional[Path]:
    """Write the ``vowel`` tier of ``records`` (labelled with their label, vowel or ``vowel``)."""
    if textgrid is None or not records:
        return None
    intervals, cursor = [], 0.0
    for r in sorted(records, key=lambda r: r.onset_s):
        start = max(r.onset_s, cursor)
        if r.offset_s - start > 1e-4:
            intervals.append((start, r.offset_s, r.vowel or r.label or VOWEL_TIER))
            cursor = r.offset_s
    write_textgrid(textgrid, [(VOWEL_TIER, intervals)], xmax=duration)
    return Path(textgrid)


def _measure_aligned(audio, name, tier, textgrid, transcript, words, stressed_only, dictionary) -> tuple:
    """Measure one file's vowels from its forced alignment (``mode="align"``): ``(records,
    failures, textgrid path or None)``; never raises on bad input. ``transcript``: a path or an
    inline text, or None for the transcript beside ``audio`` (a TextGrid's ``tier`` with one)."""
    from aligner.io.corpus import speaker_of
    from aligner.vowels.from_alignment import aligned_vowels

    try:
        source = transcript if transcript is not None else vowel_transcript(Path(audio), tier)
        if source is None:
            raise AlignerError(f"{name}: no transcript (.phn, .lab, .txt beside it, or --transcript) to align")
        if tier is not None and str(source).lower().endswith(".textgrid"):
            result = align_words(audio, source, _WORKER_MODEL, dictionary, tier=tier)
        else:
            result = align_transcript(audio, source, _WORKER_MODEL, dictionary=dictionary)
        speaker = speaker_of(Path(audio))
        records = []
        for v in aligned_vowels(result.tiers, result.confidences, words, stressed_only):
            score = float("nan") if v.confidence is None else v.confidence
            records.append(VowelRecord(name, v.onset_s, v.offset_s, v.duration_s, score, v.word,
                                       v.word_start_s or 0.0, v.word_end_s or 0.0, "align", speaker, v.word,
                                       v.word_start_s, v.word_end_s, v.vowel, v.stress, v.confidence))
        if not records:
            why = "no vowel of the words asked for" if words or stressed_only else "no vowel"
            return [], [(name, f"{name}: {why} in its alignment")], None
        return records, [], _vowel_textgrid(textgrid, records, result.duration_s)
    except AlignerError as exc:
        msg = str(exc)
        return [], [(name, msg if str(audio) in msg or name in msg else f"{name}: {msg}")], None
    except Exception as exc:  # a bug or an unexpected library error: report it, go on
        return [], [(name, f"{name}: unexpected {type(exc).__name__}: {exc}")], None


#: transcripts looked for beside an audio file by ``vowels`` (phones first, as align-corpus)
VOWEL_TRANSCRIPTS = (".phn", ".lab", ".txt")


def vowel_transcript(audio: Path, tier: Optional[str] = None) -> Optional[Path]:
    """The transcript ``vowels`` aligns for ``audio``: with ``tier``, the TextGrid beside it (its
    intervals hold the words); else the first of :data:`VOWEL_TRANSCRIPTS` beside it; or None."""
    from aligner.io.corpus import transcript_beside

    return transcript_beside(audio, (".textgrid",) if tier is not None else VOWEL_TRANSCRIPTS)


_WORKER_VOWEL_MODEL = None


def _vowel_worker_init(model, blas_threads: Optional[int] = None, aligned: bool = False,
                       alignment_model=None) -> None:
    """Set this process's vowel model (a loaded one, the bundle at a path, or None for the shipped
    one) and warm its decoder, unless it already has that model; optionally cap BLAS threads.
    With ``aligned`` (files measured from their alignment), also the alignment model
    (:func:`_worker_init`; None: the shipped one) and the pronouncing dictionary."""
    global _WORKER_VOWEL_MODEL
    if blas_threads is not None:  # a worker process: its allocator and BLAS are ours to set
        from aligner.batch import keep_heap_top

        keep_heap_top()
        _cap_blas(blas_threads)
    if model is None or isinstance(model, (str, os.PathLike)):
        model = load_vowel_model(model)
    if _WORKER_VOWEL_MODEL is not model:
        _WORKER_VOWEL_MODEL = model
        warm_up_vowels(model)
    if aligned:
        if alignment_model is None:
            alignment_model = str(default_model_dir(ALIGNMENT_KIND).resolve())
        _worker_init(alignment_model)
        load_dictionary()


def warm_up_vowels(model) -> None:
    """Compile (or load from numba's cache) the vowel decoder once, on synthetic audio.

    The acoustics of 0.4 s of noise, then the decoder on them directly: noise has no
    vowel-like frames, so :meth:`~aligner.vowels.model.VowelModel.measure` would stop before
    the decoder and leave its load to the first real file (in every forked worker)."""
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(2 * SAMPLE_RATE // 5)).astype(np.float32)
    try:
        model.decode_frames(model.acoustics(samples), name="<warm-up>")
    except AlignerError:
        pass


#: why ``measure_vowels`` refuses ``resume``
VOWEL_RESUME_MESSAGE = ("--resume is for align-corpus only: vowels writes its one CSV when every file is "
                        "measured, so an interrupted run leaves nothing to resume from")


def measure_vowels(inputs, model=None, tier: Optional[str] = None, pad: float = 0.0, jobs: int = 1,
                   textgrid_dir=None, progress: Optional[Callable[[int, int], None]] = None,
                   engine: Optional[str] = None, scheduler: Optional[str] = None,
                   resume: bool = False, mode: str = "auto", transcript=None, words=None,
                   stressed_only: bool = False, dictionary=None, alignment_model=None) -> VowelReport:
    """Measure the vowel of every CVC recording in ``inputs`` (audio files or directories, recursive).

    Without ``tier`` each whole file is one search window. With ``tier``, the TextGrid beside each
    audio file (same stem) gives the windows: one measurement per non-empty interval of that tier,
    widened by ``pad`` seconds on both sides. With ``textgrid_dir``, one TextGrid per file with an
    interval tier ``vowel`` (files found in a directory keep their relative path there; files given
    directly are named after the file alone), suffix ``.TextGrid``.

    Goes on past bad files and windows: they are listed in ``report.failed``. ``progress(done,
    total)`` is called after each file. Records keep the input order.

    ``engine``, ``scheduler``: where the files are measured, one task per file, as for
    :func:`align_corpus` (with ``dask``, ``model`` is a directory path or None: each worker's
    own shipped model). ``resume``
    is refused (:data:`VOWEL_RESUME_MESSAGE`): the one CSV is written at the end.

    ``mode``: ``model`` (the transcript-free vowel model, ``model``), ``align`` (align each
    file's transcript with ``alignment_model`` and report every vowel of the alignment:
    :mod:`aligner.vowels.from_alignment`) or ``auto`` (``align`` for a file with a transcript:
    ``transcript`` given, or a ``.phn``/``.lab``/``.txt`` beside it; else ``model``). In
    ``align`` mode ``tier`` names the words tier of the TextGrid beside each file (each interval
    aligned within its span), ``transcript`` (one input file) is a transcript path or inline
    text, ``words`` keeps only the vowels of those words, ``stressed_only`` those with stress 1
    or 2, and ``dictionary`` is as for :func:`align_words`.
    """
    if resume:
        raise AlignerError(VOWEL_RESUME_MESSAGE)
    if mode not in ("auto", "align", "model"):
        raise ValueError(f"mode must be auto, align or model, got {mode!r}")
    if pad < 0:
        raise ValueError(f"pad must be >= 0 seconds, got {pad}")
    if pad > 0 and tier is None:
        raise AlignerError(f"pad ({pad:g} s) widens the intervals of a tier: give the tier (--tier NAME) or drop "
                           f"the pad")
    from aligner.vowels.model import VowelModel

    engine = resolve_engine(engine, scheduler)
    _check_dask_settings(engine, scheduler, jobs, model, VowelModel)
    t0 = time.perf_counter()
    vowel_model = load_vowel_model(model)
    files = _vowel_inputs(inputs)
    if transcript is not None and len(files) != 1:
        raise AlignerError(f"{transcript}: a transcript is for one audio file; got {len(files)} (put each "
                           f"file's transcript beside it instead)")
    tg_dir = Path(textgrid_dir) if textgrid_dir is not None else None
    words = None if words is None else [w for w in ([words] if isinstance(words, str) else words)]
    job_list = []
    for a, n, stem in files:
        aligned = None
        if mode == "align" or (mode == "auto" and (transcript is not None or
                                                   (tier is None and vowel_transcript(Path(a)) is not None))):
            aligned = (transcript if transcript is None or not os.path.exists(str(transcript))
                       else str(transcript), words, bool(stressed_only), dictionary)
        job_list.append((str(a), n, tier, float(pad), None if tg_dir is None else tg_dir / f"{stem}.TextGrid",
                         aligned))
    any_aligned = any(job[5] is not None for job in job_list)
    align_ref = None
    if any_aligned:
        align_ref = alignment_model if isinstance(alignment_model, AlignmentModel) else str(
            (Path(alignment_model) if alignment_model is not None else default_model_dir(ALIGNMENT_KIND)).resolve())
    report = VowelReport(n_files=len(job_list))
    jobs = max(1, min(int(jobs), len(job_list) or 1))
    given = [None] * len(job_list)  # per task, its absolute paths -> as given (Dask messages)
    if engine == "dask":
        if isinstance(alignment_model, AlignmentModel):
            raise TypeError("the dask engine needs the alignment model as a directory path, not a loaded model")
        given = [_absolute_paths((audio, textgrid)) for audio, _, _, _, textgrid, _ in job_list]
        tasks = [(_dask_path(a), n, t, p, _dask_path(g),
                  None if al is None else (al[0] if al[0] is None or not os.path.exists(al[0]) else _dask_path(al[0]),
                                           al[1], al[2], _dask_path(al[3])))
                 for a, n, t, p, g, al in job_list]
        worker_model = None if model is None else _dask_path(model)  # None: each worker's shipped model
        worker_align = None if alignment_model is None else _dask_path(alignment_model)
        initializer, initargs = _vowel_worker_init, (worker_model, 1, any_aligned, worker_align)
    else:
        _vowel_worker_init(vowel_model, None, any_aligned, align_ref)  # forked workers inherit both
        tasks, initializer, initargs = job_list, _vowel_worker_init, (vowel_model, 1, any_aligned, align_ref)
    with open_pool(engine, scheduler, jobs, initializer, initargs,
                   chunksize=max(1, min(32, len(job_list) // (8 * jobs)))) as pool:
        report.startup_seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        lost = lambda job, why: ([], [(job[1], f"{job[1]}: {why}")], None)  # noqa: E731
        for i, (records, failures, written) in enumerate(pool.map(_measure_one, tasks, lost, _measure_chunk)):
            report.records += records
            report.failed += [(_as_given(item, given[i]), _as_given(message, given[i]))
                              for item, message in failures]
            if written is not None:
                written = Path(_as_given(str(written), given[i]))
                report.textgrids.append(written)
            if progress:
                progress(i + 1, len(job_list))
    report.seconds = time.perf_counter() - t1
    return report


VOWEL_CSV_FIELDS = ("file", "onset_s", "offset_s", "duration_s", "score", "flag")
VOWEL_CSV_TIER_FIELDS = ("label", "window_start_s", "window_end_s")


VOWEL_CSV_ALIGNED_FIELDS = ("file", "speaker", "word", "word_start_s", "word_end_s", "vowel", "stress", "onset_s",
                            "offset_s", "duration_s", "confidence", "score", "mode", "flag")


def vowels_csv(records, with_windows: bool = False) -> str:
    """The CSV text of vowel records, the one writer of both ways of measuring.

    Transcript-free records alone: header ``file,onset_s,offset_s,duration_s,score,flag`` (times in
    seconds, 4 decimals; score 4 significant digits; flag ``low_confidence`` or empty), plus
    ``label,window_start_s,window_end_s``
    when ``with_windows``. As soon as one record comes from an alignment (``mode="align"``):
    :data:`VOWEL_CSV_ALIGNED_FIELDS` for every row (a transcript-free row leaves ``vowel``,
    ``stress`` and ``confidence`` empty and gives its search window as its word).
    """
    import csv
    import io

    def t(v):
        return "" if v is None else f"{v:.4f}"

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    records = list(records)
    if any(r.mode == "align" for r in records):
        writer.writerow(VOWEL_CSV_ALIGNED_FIELDS)
        for r in records:
            aligned = r.mode == "align"
            word_start = r.word_start_s if aligned else (r.window_start_s if r.label else None)
            word_end = r.word_end_s if aligned else (r.window_end_s if r.label else None)
            confidence = "" if r.confidence is None else f"{r.confidence:.4f}"
            score = "" if aligned else f"{r.score:.4g}"
            writer.writerow([r.file, r.speaker, r.word if aligned else r.label, t(word_start), t(word_end),
                             r.vowel, r.stress, t(r.onset_s), t(r.offset_s), t(r.duration_s), confidence,
                             score, r.mode, r.flag])
        return buffer.getvalue()
    writer.writerow(VOWEL_CSV_FIELDS + (VOWEL_CSV_TIER_FIELDS if with_windows else ()))
    for r in records:
        row = [r.file, f"{r.onset_s:.4f}", f"{r.offset_s:.4f}", f"{r.duration_s:.4f}", f"{r.score:.4g}", r.flag]
        if with_windows:
            row += [r.label, f"{r.window_start_s:.4f}", f"{r.window_end_s:.4f}"]
        writer.writerow(row)
    return buffer.getvalue()
