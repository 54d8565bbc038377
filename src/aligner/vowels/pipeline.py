"""Vowels through ``aligner vowels``: files, search windows, chunks of work, records, the CSV.

:func:`measure_vowels` takes audio files and directories; a file with a transcript is aligned
and every vowel of its alignment becomes a row (:func:`_measure_aligned`,
:mod:`aligner.vowels.from_alignment`); a file without one is a CVC recording, or a TextGrid
tier beside it gives the search windows (:func:`_search_windows`), and the transcript-free
vowel model measures it. Short recordings are read and measured in chunks
(:func:`_measure_chunk`, :meth:`~aligner.vowels.model.VowelModel.measure_many`) on the local
process pool or on Dask, each worker holding the vowel model (:func:`_vowel_worker_init`).
The rows are :class:`VowelRecord`; :func:`vowels_csv` writes them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from aligner.alignment.corpus import worker_init, worker_model
from aligner.alignment.model import AlignmentModel
from aligner.alignment.pipeline import (TIER_OVERRUN_TOLERANCE, align_transcript, align_words, load_dictionary,
                                        wants_universal)
from aligner.alignment.universal import UniversalModel
from aligner.errors import AlignerError
from aligner.frames import SAMPLE_RATE
from aligner.io.audio import load_audio
from aligner.io.bundles import ALIGNMENT_KIND, FUSION_MODEL_NAME, UNIVERSAL_KIND, VOWEL_KIND, default_model_dir
from aligner.io.textgrids import write_textgrid
from aligner.runtime.blas import cap_worker_threads
from aligner.runtime.distributed import (absolute_paths, as_given, check_dask_settings, dask_path, open_pool,
                                         resolve_engine)


VOWEL_TIER = "vowel"


@dataclass(frozen=True)
class VowelRecord:
    """One measured vowel (seconds from the start of ``file``'s recording).

    ``label``, ``window_start_s`` and ``window_end_s`` describe the ``--tier`` interval the vowel
    was searched in (the window is the interval widened by ``pad``, clipped to the audio); without
    a tier, ``label`` is ``""`` and the window is the whole file. A vowel of a forced alignment
    (``mode="align"``) has its word, vowel symbol, stress and confidence; its ``score`` is its
    confidence (NaN without a confidence model). A vowel of an alignment re-measured by the vowel
    model (``mode="fused"``, :mod:`aligner.vowels.fused`) has the same columns, its onset and
    offset from the fusion, and as ``score`` the vowel model's decoder objective; its
    ``confidence`` stays the alignment's.
    """

    file: str
    onset_s: float
    offset_s: float
    duration_s: float
    score: float
    label: str = ""
    window_start_s: float = 0.0
    window_end_s: float = 0.0
    #: ``model`` (the transcript-free vowel model), ``align`` (the vowel of a forced alignment, as
    #: aligned) or ``fused`` (an aligned vowel re-measured by the vowel model around its alignment)
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


def _measure_aligned(audio, name, tier, textgrid, transcript, words, stressed_only, dictionary,
                     fusion=None, phone_set: str = "auto") -> tuple:
    """Measure one file's vowels from its forced alignment (``mode="align"``): ``(records,
    failures, textgrid path or None)``; never raises on bad input. ``transcript``: a path or an
    inline text, or None for the transcript beside ``audio`` (a TextGrid's ``tier`` with one).
    With ``tier`` naming a tier of phone symbols (an alignment the user brings,
    :func:`_user_alignment`), that alignment is used as it is. ``fusion``: a
    :class:`~aligner.vowels.fused.FusionSettings` (or a dict of them by transcript kind, ``words``
    and ``phones``; an alignment the user brings counts as ``words``) to re-measure the vowels
    with this process's vowel model (:func:`_fuse_records`), or None to report them as aligned.
    ``phone_set``: of a phone transcript (``ipa``/``xsampa``: any phone, its vowels by their features)."""
    from aligner.io.corpus import speaker_of
    from aligner.vowels.from_alignment import aligned_vowels, broad_reader

    try:
        source = transcript if transcript is not None else vowel_transcript(Path(audio), tier)
        if source is None:
            raise AlignerError(f"{name}: no transcript (.phn, .lab, .txt beside it, or --transcript) to align")
        user = None
        scored: list = []  # the aligner's scoring of the whole recording, for the fusion
        keep = None if fusion is None else scored.append
        # no glottal onsets: a vowel is measured from its voicing, not from a glottal stop before it
        # (aligned from words with them, the TIMIT sample's CVC vowels began 0.4 ms further off on average)
        if tier is not None and str(source).lower().endswith(".textgrid"):
            user = _user_alignment(Path(source), tier)
            result = user if user is not None else align_words(audio, source, worker_model(), dictionary, tier=tier,
                                                                on_scored=keep, glottal_onsets=False)
        else:
            result = align_transcript(audio, source, worker_model(), dictionary=dictionary, on_scored=keep,
                                      phone_set=phone_set, glottal_onsets=False)
        speaker = speaker_of(Path(audio))
        aligner_model = worker_model()
        broad_of = None if user is not None or aligner_model is None else broad_reader(aligner_model)
        records, vowels = [], aligned_vowels(result.tiers, result.confidences, words, stressed_only, broad_of)
        for v in vowels:
            score = float("nan") if v.confidence is None else v.confidence
            records.append(VowelRecord(name, v.onset_s, v.offset_s, v.duration_s, score, v.word,
                                       v.word_start_s or 0.0, v.word_end_s or 0.0, "align", speaker, v.word,
                                       v.word_start_s, v.word_end_s, v.vowel, v.stress, v.confidence))
        if not records:
            why = "no vowel of the words asked for" if words or stressed_only else "no vowel"
            return [], [(name, f"{name}: {why} in its alignment")], None
        if fusion is not None:
            if isinstance(fusion, dict):  # per transcript kind: a words alignment has a words tier
                words_kind = user is not None or any(n.rsplit(" - ", 1)[-1] == "words" for n, _ in result.tiers)
                fusion = fusion["words" if words_kind else "phones"]
            records = _fuse_records(audio, name, records, vowels, fusion, None if user is None else result.duration_s,
                                    scored[0] if scored else None)
        return records, [], _vowel_textgrid(textgrid, records, result.duration_s)
    except AlignerError as exc:
        msg = str(exc)
        return [], [(name, msg if str(audio) in msg or name in msg else f"{name}: {msg}")], None
    except Exception as exc:  # a bug or an unexpected library error: report it, go on
        return [], [(name, f"{name}: unexpected {type(exc).__name__}: {exc}")], None


def _fuse_records(audio, name, records, vowels, fusion, duration_s=None, scored=None) -> list:
    """``records`` of the aligned ``vowels`` (:class:`~aligner.vowels.from_alignment.AlignedVowel`),
    each re-measured by this process's vowel model (:func:`aligner.vowels.fused.fuse_vowels`):
    mode ``fused`` with the new onset, offset and the decoder's score, or left as aligned (mode
    ``align``) where the vowel model cannot measure it or (``fusion.cvc_only``) the vowel is not
    between obstruents or nasals. ``duration_s``: the alignment's length, checked against the
    audio for an alignment the user brought (a TextGrid of another recording is refused).
    ``scored``: the aligner's :class:`~aligner.alignment.pipeline.ScoredRecording` of ``audio``,
    or None: its samples are used instead of reading the file again, and its classifier scores
    instead of scoring the recording again when they are the vowel model's classifier's
    (:func:`~aligner.vowels.fused.shared_log_posteriors`; also for a recording the aligner's
    entropy gate sent to its condition expert, from the scores it computed first), else its MFCC
    frames for the vowel model's classifier when they are the samples'
    (:func:`~aligner.vowels.fused.shared_mfcc_frames`; also those of a recording a gate on the
    samples sent to the expert, when the expert read them). The rows are the same either way,
    but for the last bits of a fused row's score
    (:func:`~aligner.vowels.fused.shared_log_posteriors`). Without ``scored``, a long recording
    is read from its file a stretch at a time (:func:`_fusion_samples`)."""
    which = [i for i, v in enumerate(vowels) if v.cvc or not fusion.cvc_only]
    if not which:
        return records
    samples = scored.samples if scored is not None else _fusion_samples(audio)
    try:
        return _fused_records(name, records, vowels, which, fusion, duration_s, scored, samples)
    finally:
        if not isinstance(samples, np.ndarray):
            samples.close()


def _fusion_samples(audio):
    """The samples the fusion reads when the aligner kept none: a recording longer than
    :data:`~aligner.alignment.pipeline.STREAM_SECONDS` read from its file on demand, as the aligner
    read it (:func:`~aligner.io.audio.file_samples`), else loaded whole."""
    from aligner.alignment.pipeline import STREAM_SECONDS
    from aligner.io.audio import audio_duration, file_samples

    if audio_duration(audio) > STREAM_SECONDS:
        source = file_samples(audio)
        if source is not None:
            return source
    return load_audio(audio)


def _fused_records(name, records, vowels, which, fusion, duration_s, scored, samples) -> list:
    """:func:`_fuse_records` once the recording's ``samples`` are read."""
    from dataclasses import replace

    from aligner.vowels.frame_columns import FRAMES_FRONT_END
    from aligner.vowels.fused import FUSED_MODE, fuse_vowels, shared_log_posteriors, shared_mfcc_frames

    if duration_s is not None and duration_s > len(samples) / SAMPLE_RATE + TIER_OVERRUN_TOLERANCE:
        raise AlignerError(f"{name}: its alignment runs to {duration_s:.3f} s but the audio lasts "
                           f"{len(samples) / SAMPLE_RATE:.3f} s (a TextGrid of another recording?)")
    spans = [(records[i].onset_s, records[i].offset_s,
              vowels[i].runs_start_s if vowels[i].runs_start_s is not None else records[i].onset_s,
              vowels[i].runs_end_s if vowels[i].runs_end_s is not None else records[i].offset_s) for i in which]
    log_posteriors = mfcc_frames = None
    model = _WORKER_FUSION_MODEL if _WORKER_FUSION_MODEL is not None else _WORKER_VOWEL_MODEL
    frames = model.front_end == FRAMES_FRONT_END  # reads the MFCC frames and posteriors alike
    if frames or fusion.recording_posteriors or fusion.relocate is not None:  # else the recording's are not read
        log_posteriors = shared_log_posteriors(scored, worker_model(), model.classifier)
        if log_posteriors is None or frames:  # another classifier: it reads the aligner's MFCC frames, if they are the samples'
            mfcc_frames = shared_mfcc_frames(scored, worker_model())
    fused = fuse_vowels(model, samples, spans, fusion, name, log_posteriors=log_posteriors,
                        mfcc_frames=mfcc_frames)
    records = list(records)
    for i, f in zip(which, fused):
        if f.mode == FUSED_MODE:
            records[i] = replace(records[i], onset_s=f.onset_s, offset_s=f.offset_s,
                                 duration_s=f.offset_s - f.onset_s, score=f.score, mode=FUSED_MODE)
    return records


def _is_phone_symbol(label: str) -> bool:
    """A TIMIT-61, 39-class or ARPAbet symbol (any case, ARPAbet stress digits allowed), or a
    silence or noise mark of an aligner's phones tier (``sil``, ``sp``, ``spn``, ``<eps>``)."""
    from aligner.phones.sets import ARPABET_TO_39, TIMIT61_TO_39

    s = label.strip().lower()
    if s in ("sil", "sp", "spn", "<eps>", "<sil>", "pau", "h#", "epi"):
        return True
    if s[-1:] in ("0", "1", "2") and len(s) > 1:
        s = s[:-1]
    return s in ARPABET_TO_39 or s in TIMIT61_TO_39


def _user_alignment(grid: Path, tier: str):
    """The alignment a user brings: an :class:`~aligner.alignment.pipeline.Alignment` of the tier
    ``tier`` of the TextGrid ``grid`` when every non-empty label of that tier is a phone symbol
    (:func:`_is_phone_symbol`), with its words tier (``words``, or ``SPEAKER - words`` beside
    ``SPEAKER - phones``) when the TextGrid has one; None when the tier holds words (it is then
    aligned)."""
    from aligner.alignment.pipeline import Alignment
    from aligner.io.textgrids import load_textgrid, tier_names

    phones = [iv for iv in _read_tier(grid, tier) if iv[2].strip()]
    if not phones or not all(_is_phone_symbol(iv[2]) for iv in phones):
        return None
    tiers = [("phones", [(float(s), float(e), label.strip()) for s, e, label in phones])]
    names = tier_names(load_textgrid(grid), True)
    words_name = next((n for n in (tier[:-len("phones")] + "words" if tier.endswith("phones") else None, "words")
                       if n and n in names and n != tier), None)
    if words_name is not None:
        tiers.append(("words", [(float(s), float(e), label.strip()) for s, e, label in _read_tier(grid, words_name)
                                if label.strip()]))
    return Alignment(tiers, max(iv[1] for iv in phones))


def _read_tier(grid: Path, tier: str) -> list:
    from aligner.io.textgrids import read_interval_tier

    return list(read_interval_tier(grid, tier))


#: transcripts looked for beside an audio file by ``vowels`` (phones first, as align-corpus)
VOWEL_TRANSCRIPTS = (".phn", ".lab", ".txt")


def vowel_transcript(audio: Path, tier: Optional[str] = None) -> Optional[Path]:
    """The transcript ``vowels`` aligns for ``audio``: with ``tier``, the TextGrid beside it (its
    intervals hold the words); else the first of :data:`VOWEL_TRANSCRIPTS` beside it; or None."""
    from aligner.io.corpus import transcript_beside

    return transcript_beside(audio, (".textgrid",) if tier is not None else VOWEL_TRANSCRIPTS)


_WORKER_VOWEL_MODEL = None
#: the vowel model that re-measures aligned vowels in this process (None: :data:`_WORKER_VOWEL_MODEL`)
_WORKER_FUSION_MODEL = None


def _vowel_worker_init(model, blas_threads: Optional[int] = None, aligned: bool = False,
                       alignment_model=None, fused: bool = False, universal: bool = False,
                       fusion_model=None) -> None:
    """Set this process's vowel model (a loaded one, the bundle at a path, or None for the shipped
    one) and warm its decoder, unless it already has that model; optionally cap BLAS threads.
    With ``aligned`` (files measured from their alignment), also the alignment model
    (:func:`~aligner.alignment.corpus.worker_init`; None: the shipped one) and the pronouncing
    dictionary; with ``fused`` too, the fusion's kernels (:func:`_warm_up_fusion`) and whether
    the two models' classifiers are the same (:func:`~aligner.vowels.fused.same_classifier`).
    ``universal``: the shipped universal model is the default alignment model (phones in IPA).
    ``fusion_model``: the vowel model that re-measures aligned vowels (loaded, or a bundle's
    path; None: ``model`` itself)."""
    global _WORKER_VOWEL_MODEL, _WORKER_FUSION_MODEL
    if blas_threads is not None:  # a worker process: its allocator and BLAS are ours to set
        from aligner.runtime.heap import keep_heap_top

        keep_heap_top()
        cap_worker_threads(blas_threads)
    if model is None or isinstance(model, (str, os.PathLike)):
        model = load_vowel_model(model)
    if _WORKER_VOWEL_MODEL is not model:
        _WORKER_VOWEL_MODEL = model
        warm_up_vowels(model)
    fusion = model
    if aligned and fused:
        if fusion_model is not None:
            fusion = load_vowel_model(fusion_model)
        if _WORKER_FUSION_MODEL is not fusion:
            _WORKER_FUSION_MODEL = fusion
            if fusion is not model:
                warm_up_vowels(fusion)
        _warm_up_fusion(fusion)
    if aligned:
        if alignment_model is None:
            alignment_model = str(default_model_dir(UNIVERSAL_KIND if universal else ALIGNMENT_KIND).resolve())
        worker_init(alignment_model)
        if not isinstance(worker_model(), UniversalModel):
            load_dictionary()
        if fused and isinstance(worker_model(), AlignmentModel):  # compared once here, not in the first file's time
            from aligner.vowels.fused import same_classifier

            same_classifier(worker_model().classifier, fusion.classifier)


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


_FUSION_WARM: set = set()  # the front ends whose fusion kernels this process has loaded


def _warm_up_fusion(model) -> None:
    """Load the kernels of the fusion's acoustics (:func:`~aligner.features.vowel_acoustics.
    vowel_acoustics_cuts`) once per process, on two overlapping cuts of noise, so that the
    first fused file of each worker does not pay for them (:func:`warm_up_vowels` loads the rest)."""
    if model.front_end in _FUSION_WARM:
        return
    from aligner.features.vowel_acoustics import vowel_acoustics_cuts
    from aligner.vowels.frame_columns import FRAMES_FRONT_END, cut_columns, recording_frame_columns

    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(2 * SAMPLE_RATE // 5)).astype(np.float32)
    if model.front_end == FRAMES_FRONT_END:
        cut_columns(recording_frame_columns(samples, model.classifier), 1680, 6400)
    else:
        vowel_acoustics_cuts(samples, [(0, 4000), (1680, 6400)], model.classifier)  # both 10 ms phases
    _FUSION_WARM.add(model.front_end)


#: why ``measure_vowels`` refuses ``resume``
VOWEL_RESUME_MESSAGE = ("--resume is for align-corpus only: vowels writes its one CSV when every file is "
                        "measured, so an interrupted run leaves nothing to resume from")


def measure_vowels(inputs, model=None, tier: Optional[str] = None, pad: float = 0.0, jobs: int = 1,
                   textgrid_dir=None, progress: Optional[Callable[[int, int], None]] = None,
                   engine: Optional[str] = None, scheduler: Optional[str] = None,
                   resume: bool = False, mode: str = "auto", transcript=None, words=None,
                   stressed_only: bool = False, dictionary=None, alignment_model=None,
                   fuse=True, phone_set: str = "auto", fusion_model=None) -> VowelReport:
    """Measure the vowel of every CVC recording in ``inputs`` (audio files or directories, recursive).

    Without ``tier`` each whole file is one search window. With ``tier``, the TextGrid beside each
    audio file (same stem) gives the windows: one measurement per non-empty interval of that tier,
    widened by ``pad`` seconds on both sides. With ``textgrid_dir``, one TextGrid per file with an
    interval tier ``vowel`` (files found in a directory keep their relative path there; files given
    directly are named after the file alone), suffix ``.TextGrid``.

    Goes on past bad files and windows: they are listed in ``report.failed``. ``progress(done,
    total)`` is called after each file. Records keep the input order.

    ``engine``, ``scheduler``: where the files are measured, one task per file, as for
    :func:`~aligner.alignment.corpus.align_corpus` (with ``dask``, ``model`` is a directory path or None: each worker's
    own shipped model). ``resume``
    is refused (:data:`VOWEL_RESUME_MESSAGE`): the one CSV is written at the end.

    ``mode``: ``model`` (the transcript-free vowel model, ``model``), ``align`` (align each
    file's transcript with ``alignment_model`` and report every vowel of the alignment:
    :mod:`aligner.vowels.from_alignment`) or ``auto`` (``align`` for a file with a transcript:
    ``transcript`` given, or a ``.phn``/``.lab``/``.txt`` beside it; else ``model``). In
    ``align`` mode ``tier`` names the words tier of the TextGrid beside each file (each interval
    aligned within its span), ``transcript`` (one input file) is a transcript path or inline
    text, ``words`` keeps only the vowels of those words, ``stressed_only`` those with stress 1
    or 2, and ``dictionary`` is as for :func:`align_words`. A ``tier`` whose labels are all phone
    symbols is taken as an alignment the user brings (its vowels are measured, nothing is aligned).

    ``fuse``: re-measure each aligned vowel with the vowel model ``model`` around its aligned
    interval (:mod:`aligner.vowels.fused`; rows of mode ``fused``, or ``align`` where the vowel
    model cannot measure the vowel): True (default) with
    :data:`~aligner.vowels.fused.DEFAULT_FUSION` (settings for words and for phone
    transcripts), a :class:`~aligner.vowels.fused.FusionSettings`, or False to report the
    aligned intervals.
    The transcript-free rows (mode ``model``) do not depend on it. ``fusion_model``: the vowel
    model that re-measures (loaded, or a bundle's path); None: ``model`` when one is given, else
    the shipped fusion model (``models/timit-vowels-fusion``: front end ``frames``, reading the
    aligner's own frames and scores, :mod:`aligner.vowels.frame_columns`).

    ``phone_set``: of phone transcripts (``auto``, ``timit61``, ``timit39``, ``arpabet``; ``ipa`` or
    ``xsampa``: any phone, aligned by the shipped universal model unless ``alignment_model`` names
    another, each phone a vowel by its features).
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
    from aligner.vowels.fused import DEFAULT_FUSION, FusionSettings
    from aligner.vowels.model import VowelModel

    if fuse is True:
        fuse = DEFAULT_FUSION
    elif fuse is False or fuse is None:
        fuse = None
    elif not isinstance(fuse, FusionSettings):
        raise TypeError(f"fuse must be True, False or a FusionSettings, got {type(fuse).__name__}")
    engine = resolve_engine(engine, scheduler)
    check_dask_settings(engine, scheduler, jobs, model, VowelModel)
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
                       else str(transcript), words, bool(stressed_only), dictionary, fuse, phone_set)
        job_list.append((str(a), n, tier, float(pad), None if tg_dir is None else tg_dir / f"{stem}.TextGrid",
                         aligned))
    any_aligned = any(job[5] is not None for job in job_list)
    align_ref = None
    universal = wants_universal(phone_set)
    if any_aligned:
        align_ref = alignment_model if isinstance(alignment_model, (AlignmentModel, UniversalModel)) else str(
            (Path(alignment_model) if alignment_model is not None
             else default_model_dir(UNIVERSAL_KIND if universal else ALIGNMENT_KIND)).resolve())
    fusion_ref = None  # the fusion model as given or its bundle's path (None: the vowel model itself)
    if any_aligned and fuse is not None:
        fusion_ref = fusion_model if fusion_model is not None else (
            str(default_model_dir(VOWEL_KIND, FUSION_MODEL_NAME).resolve()) if model is None else None)
    fusion_path = fusion_ref if isinstance(fusion_ref, (str, os.PathLike)) else None
    if fusion_path is not None:
        fusion_ref = load_vowel_model(fusion_path)
    report = VowelReport(n_files=len(job_list))
    jobs = max(1, min(int(jobs), len(job_list) or 1))
    given = [None] * len(job_list)  # per task, its absolute paths -> as given (Dask messages)
    if engine == "dask":
        if isinstance(alignment_model, (AlignmentModel, UniversalModel)):
            raise TypeError("the dask engine needs the alignment model as a directory path, not a loaded model")
        if fusion_model is not None and not isinstance(fusion_model, (str, os.PathLike)):
            raise TypeError("the dask engine needs the fusion model as a directory path, not a loaded model")
        given = [absolute_paths((audio, textgrid)) for audio, _, _, _, textgrid, _ in job_list]
        tasks = [(dask_path(a), n, t, p, dask_path(g),
                  None if al is None else (al[0] if al[0] is None or not os.path.exists(al[0]) else dask_path(al[0]),
                                           al[1], al[2], dask_path(al[3]), al[4], al[5]))
                 for a, n, t, p, g, al in job_list]
        dask_model = None if model is None else dask_path(model)  # None: each worker's shipped model
        worker_align = None if alignment_model is None else dask_path(alignment_model)
        worker_fusion = None if fusion_path is None else dask_path(fusion_path)
        initializer, initargs = _vowel_worker_init, (dask_model, 1, any_aligned, worker_align, fuse is not None,
                                                     universal, worker_fusion)
    else:  # forked workers inherit all
        _vowel_worker_init(vowel_model, None, any_aligned, align_ref, fuse is not None, universal, fusion_ref)
        tasks, initializer, initargs = job_list, _vowel_worker_init, (vowel_model, 1, any_aligned, align_ref,
                                                                      fuse is not None, universal, fusion_ref)
    with open_pool(engine, scheduler, jobs, initializer, initargs,
                   chunksize=max(1, min(32, len(job_list) // (8 * jobs)))) as pool:
        report.startup_seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        lost = lambda job, why: ([], [(job[1], f"{job[1]}: {why}")], None)  # noqa: E731
        for i, (records, failures, written) in enumerate(pool.map(_measure_one, tasks, lost, _measure_chunk)):
            report.records += records
            report.failed += [(as_given(item, given[i]), as_given(message, given[i]))
                              for item, message in failures]
            if written is not None:
                written = Path(as_given(str(written), given[i]))
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
    when ``with_windows``. As soon as one record comes from an alignment (``mode`` ``align`` or
    ``fused``): :data:`VOWEL_CSV_ALIGNED_FIELDS` for every row (a transcript-free row leaves
    ``vowel``, ``stress`` and ``confidence`` empty and gives its search window as its word; an
    ``align`` row leaves ``score`` empty; a ``fused`` row gives the vowel model's score).
    """
    import csv
    import io

    def t(v):
        return "" if v is None else f"{v:.4f}"

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    records = list(records)
    if any(r.mode in ("align", "fused") for r in records):
        writer.writerow(VOWEL_CSV_ALIGNED_FIELDS)
        for r in records:
            aligned = r.mode in ("align", "fused")
            word_start = r.word_start_s if aligned else (r.window_start_s if r.label else None)
            word_end = r.word_end_s if aligned else (r.window_end_s if r.label else None)
            confidence = "" if r.confidence is None else f"{r.confidence:.4f}"
            score = "" if r.mode == "align" else f"{r.score:.4g}"
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
