"""A corpus through the aligner: ``align-corpus`` and ``oovs``.

:func:`align_corpus` walks a corpus (Montreal Forced Aligner's layout or TIMIT's,
:func:`aligner.io.corpus.find_utterances`), keeps the complete outputs of an earlier run
(``resume``), and runs one job per file (:func:`_align_one`: align, write, review, draw) on
the local process pool or on Dask (:func:`aligner.runtime.distributed.open_pool`). Each worker
process holds one model (:func:`worker_init`: loaded, its numba decoders warmed, before the
pool forks); a bad file is reported and the others go on. :func:`find_oovs` lists a corpus's
unknown words without aligning. One recording: :mod:`aligner.alignment.pipeline`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from aligner.alignment.model import AlignmentModel
from aligner.alignment.pipeline import (Alignment, _align_and_write, _g2p_pronunciation, check_dialect, check_phone_map,
                                        load_dictionary, load_model, phone_code, wants_universal, warm_up,
                                        warm_up_words, words_dictionary)
from aligner.alignment.universal import UniversalModel
from aligner.errors import AlignerError
from aligner.io.bundles import ALIGNMENT_KIND, UNIVERSAL_KIND, default_model_dir
from aligner.io.corpus import find_audio_files, find_utterances
from aligner.runtime.batch import output_is_complete
from aligner.runtime.blas import cap_worker_threads
from aligner.runtime.distributed import (absolute_paths, as_given, check_dask_settings, dask_path, open_pool,
                                         resolve_engine)
from aligner.words.dialects import DEFAULT_DIALECT


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


#: the most files one submission to a local worker holds (fewer towards the end of a batch)
LOCAL_CHUNK_FILES = 8

_WORKER_MODEL: "AlignmentModel | UniversalModel | None" = None


_WORKER_MODEL_PATH: Optional[str] = None


def worker_model() -> Optional[AlignmentModel]:
    """This process's model, set by :func:`worker_init` (None before)."""
    return _WORKER_MODEL


def worker_init(model: str | AlignmentModel, blas_threads: Optional[int] = None) -> None:
    """Set this process's model (a loaded one, or the bundle at a path) and warm the decoder,
    unless it already has that model (inherited by fork); optionally cap BLAS threads (with
    several worker processes, one BLAS thread each avoids oversubscribing the cores) and then
    keep the heap's top (:func:`~aligner.runtime.heap.keep_heap_top`)."""
    global _WORKER_MODEL, _WORKER_MODEL_PATH
    if blas_threads is not None:  # a worker process: its allocator and BLAS are ours to set
        from aligner.runtime.heap import keep_heap_top

        keep_heap_top()
        cap_worker_threads(blas_threads)
    from aligner.io import exports  # noqa: F401  the writers: imported before workers fork, not in each
    if isinstance(model, (AlignmentModel, UniversalModel)):
        if _WORKER_MODEL is not model:
            _WORKER_MODEL, _WORKER_MODEL_PATH = model, None
            warm_up(model)
            _warm_up_sphere_repair()
    elif _WORKER_MODEL is None or _WORKER_MODEL_PATH != model:
        _WORKER_MODEL = load_model(model)
        _WORKER_MODEL_PATH = model
        warm_up(_WORKER_MODEL)
        _warm_up_sphere_repair()


def _warm_up_sphere_repair() -> None:
    """Load the SPHERE repair's numba functions (TIMIT corpora hold damaged files) before corpus
    workers fork, so none loads them at its first damaged file."""
    from aligner.io import sphere_repair

    sphere_repair.warm_up()


def _align_one(job) -> tuple:
    """Align one corpus file: ``(audio, error or None, seconds of audio, oovs)``; never raises."""
    (audio, transcript, out, kind, fmt, dictionary, oov, confidence_tiers, plot_png, language, phone_map, phone_set,
     dialect) = job
    try:
        _, result = _align_and_write(audio, transcript, out, _WORKER_MODEL, phone_set, None, kind, fmt,
                                     dictionary, oov, confidence_tiers, language, phone_map, dialect)
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


_WORDS_WARM: set = set()


def _corpus_worker_init(model_path: Optional[str], blas_threads: Optional[int], dictionary: Optional[str],
                        words: bool, language: Optional[str] = None, phone_set: str = "auto") -> None:
    """Set up a Dask worker for a corpus: the model at ``model_path`` (None: the worker's own
    shipped model) loaded and its decoder warmed (:func:`worker_init`), and, for word
    transcripts (``words``), the pronouncing dictionary (CMU plus the one at ``dictionary``)
    loaded and the word decoder warmed, once per process and model."""
    universal = wants_universal(phone_set, language)
    model_path = model_path or str(default_model_dir(UNIVERSAL_KIND if universal else ALIGNMENT_KIND).resolve())
    worker_init(model_path, blas_threads)
    if words:
        words_dictionary(_WORKER_MODEL, dictionary, language, phone_code(phone_set))
        if model_path not in _WORDS_WARM:
            warm_up_words(_WORKER_MODEL)
            _WORDS_WARM.add(model_path)


def align_corpus(corpus_dir, out_dir, model=None, jobs: int = 1,
                 progress: Optional[Callable[[int, int], None]] = None, kind: str = "auto",
                 fmt: str = "textgrid", dictionary=None, oov: str = "g2p", engine: Optional[str] = None,
                 scheduler: Optional[str] = None, resume: bool = False,
                 confidence_tiers: bool = False, plot_dir=None, language: Optional[str] = None,
                 phone_map=None, phone_set: str = "auto", dialect: str = DEFAULT_DIALECT) -> CorpusReport:
    """Align every audio file under ``corpus_dir`` that has a transcript of the same stem beside it.

    Montreal Forced Aligner's corpus layout (flat, or one folder per speaker; ``.lab``, ``.txt``
    or ``.TextGrid`` transcripts) and TIMIT's (``.phn``, read as phones when both are there) are
    read; ``kind`` (``auto``, ``words``, ``phones``) narrows the transcripts looked for
    (:data:`CORPUS_TRANSCRIPTS`). Writes ``out_dir/<relative path>`` with the format's suffix
    (``fmt``). ``model``: an :class:`AlignmentModel`, a model directory, or None for the
    shipped model; ``dictionary``, ``oov``: as for :func:`~aligner.alignment.pipeline.align_words`. Goes on past bad files:
    they are listed in ``report.failed``. ``progress(done, total)`` is called after each file.

    ``engine``: ``local`` (``jobs`` worker processes of a :class:`~aligner.runtime.batch.WorkerPool`) or
    ``dask``: one Dask task per file, on the scheduler at ``scheduler`` (``tcp://HOST:PORT``;
    its workers must see the corpus, the model and OUT_DIR at the same paths: a shared file
    system) or, without one, on a local cluster of ``jobs`` processes; None: ``dask`` when a
    scheduler is given, else ``local``. With ``dask``, ``model`` must be a directory path or None
    (each worker's own shipped model). The outputs and the failures listed are the same either
    way (:mod:`aligner.runtime.distributed`). With ``resume``, a file whose output is already complete
    (:func:`aligner.runtime.batch.output_is_complete`: there, non-empty and no older than its audio,
    transcript and ``dictionary``) is not aligned again and is listed in ``report.resumed``.
    ``confidence_tiers``: TextGrids get the confidence point tiers (:func:`~aligner.alignment.pipeline.align_file`); each
    aligned file's review is in ``report.reviews`` (:meth:`CorpusReport.least_confident`).
    ``plot_dir``: also draw each TextGrid's review picture (:func:`aligner.plotting.plot_alignment`) to
    ``plot_dir/<relative path>.png`` (the first 60 s of longer recordings; needs the ``plot``
    extra); a picture that cannot be drawn is listed in ``report.plot_problems``.
    ``language``, ``phone_map``: words in a language the model never heard
    (:func:`~aligner.alignment.pipeline.align_words`). ``phone_set``: of phone transcripts
    (``auto``, ``timit61``, ``timit39``, ``arpabet``; ``ipa`` or ``xsampa``: a phone transcript per
    file, a ``.lab``/``.txt`` of phones or a TextGrid's phones tier, aligned by the shipped
    universal model unless ``model`` says otherwise, as is a ``language``'s words). ``dialect``:
    of English words (:func:`~aligner.alignment.pipeline.align_words`).
    """
    from aligner.io.exports import SUFFIXES

    corpus_dir, out_dir = Path(corpus_dir), Path(out_dir)
    if not corpus_dir.is_dir():
        raise AlignerError(f"{corpus_dir}: corpus directory not found")
    if kind not in CORPUS_TRANSCRIPTS:
        raise ValueError(f"kind must be one of {', '.join(CORPUS_TRANSCRIPTS)}, got {kind!r}")
    engine = resolve_engine(engine, scheduler)
    check_dask_settings(engine, scheduler, jobs, model, (AlignmentModel, UniversalModel))
    check_phone_map(language, phone_map)
    check_dialect(dialect)
    t0 = time.perf_counter()
    universal = wants_universal(phone_set, language)
    model_ref = model if isinstance(model, (AlignmentModel, UniversalModel)) else str(
        (Path(model) if model is not None else default_model_dir(UNIVERSAL_KIND if universal else ALIGNMENT_KIND)
         ).resolve())
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
        jobs_list.append((u.audio, u.transcript, out, kind, fmt, dictionary, oov, confidence_tiers, png, language,
                          phone_map, phone_set, dialect))
    jobs = max(1, min(jobs, len(jobs_list) or 1))
    ipa_phones = wants_universal(phone_set) and language is None and dictionary is None and kind != "words"
    words = not ipa_phones and any(Path(job[1]).suffix.lower() != ".phn" for job in jobs_list)
    given = [None] * len(jobs_list)  # per task, its absolute paths -> as given (Dask messages)
    if engine == "dask":
        if words:  # a damaged model, dictionary or language: one error here, not one per file on the workers
            words_dictionary(load_model(model_ref), dictionary, language, phone_code(phone_set))
        else:
            load_model(model_ref)
        given = [absolute_paths(job[:3] + (dictionary,)) for job in jobs_list]
        tasks = [(dask_path(a), dask_path(t), dask_path(o), k, f, dask_path(d), v, c, dask_path(p), lang, dask_path(pm),
                  ps, dl) for a, t, o, k, f, d, v, c, p, lang, pm, ps, dl in jobs_list]
        dask_model = None if model is None else dask_path(model)  # None: each worker's shipped model
        initializer, initargs = _corpus_worker_init, (dask_model, 1, dask_path(dictionary), words, language,
                                                      phone_set)
    else:
        worker_init(model_ref)  # load and warm here: forked workers inherit both
        if words:  # likewise the dictionary and the word decoder
            words_dictionary(_WORKER_MODEL, dictionary, language, phone_code(phone_set))
            warm_up_words(_WORKER_MODEL)
        tasks, initializer, initargs = jobs_list, worker_init, (model_ref, 1)
    # a few files per submission: the parent's cost per task (pickling, queues) spread over them;
    # Dask sizes its own tasks (dask_chunksize)
    chunksize = 1 if engine == "dask" else max(1, min(LOCAL_CHUNK_FILES, len(tasks) // (8 * jobs)))
    with open_pool(engine, scheduler, jobs, initializer, initargs, chunksize=chunksize) as pool:
        report.startup_seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        lost = lambda job, why: (str(job[0]), f"{job[0]}: {why}", 0.0, {}, None, None)  # noqa: E731
        for i, (audio, error, seconds, oovs, review, plot_problem) in enumerate(pool.map(_align_one, tasks, lost)):
            audio, error = as_given(audio, given[i]), as_given(error, given[i])
            if error is None:
                report.written.append(jobs_list[i][2])
                report.reviews[jobs_list[i][2]] = review
                if plot_problem is not None:
                    report.plot_problems.append((audio, as_given(plot_problem, given[i])))
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
