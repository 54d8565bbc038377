"""The Python API: what the CLI, the recipes and users call.

    from aligner import api
    intervals = api.align("rec.wav", "sil HH AH0 L OW1 sil")       # [(start_s, end_s, phone)]
    api.align_file("rec.wav", "rec.phn", "rec.TextGrid")
    report = api.align_corpus("corpus/", "out/", jobs=2)
    scores, problems = api.evaluate("corpus/", "out/")
    model = api.train("corpus/", "my-model/", trainer="orbit")
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from .alignment_model import AlignmentModel
from .audio import SAMPLE_RATE, load_audio
from .corpus import find_audio_files, find_utterances
from .errors import AlignerError, AlignmentError
from .evaluation import evaluate_directories
from .models import ALIGNMENT_KIND, default_model_dir
from .phones import read_transcript
from .textgrids import write_textgrid

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


def align(audio, phones, model=None, phone_set: str = "auto", name: str | None = None,
          split_stops: bool | None = None) -> list:
    """Align a recording to its phones; returns ``[(start_s, end_s, symbol), ...]`` in seconds.

    ``audio``: a path, or float samples at 16 kHz. ``phones``: a transcript path (TIMIT ``.phn``
    or whitespace-separated symbols), an inline string of symbols, or a list of symbols.
    ``phone_set``: ``auto``, ``timit61``, ``timit39`` or ``arpabet``. ``split_stops``: decode
    each stop/affricate as TIMIT closure + release and merge them back into the one input
    symbol (:mod:`aligner.stop_closures`); None = automatic (for ``arpabet`` and ``timit39``,
    whose stops include their closure; not for ``timit61``, which writes closures).
    """
    m = load_model(model)
    if isinstance(audio, (str, os.PathLike)):
        name = name or str(audio)
        samples = load_audio(audio)
    else:
        name = name or "<samples>"
        samples = np.asarray(audio, dtype=np.float32)
    if isinstance(phones, (list, tuple)):
        phones = " ".join(phones)
    symbols, pset = read_transcript(phones, phone_set)
    try:
        return m.align(samples, symbols, pset, name=name, split_stops=split_stops)
    except AlignmentError as exc:
        msg = str(exc)
        raise AlignmentError(msg if name in msg else f"{name}: {msg}") from None


def align_file(audio, transcript, out=None, model=None, phone_set: str = "auto",
               split_stops: bool | None = None) -> Path:
    """Align one file and write a TextGrid (tier ``phones``); ``out`` defaults to AUDIO.TextGrid.

    ``split_stops``: as for :func:`align`."""
    out = Path(out) if out is not None else Path(audio).with_suffix(".TextGrid")
    intervals = align(audio, transcript, model, phone_set, split_stops=split_stops)
    write_textgrid(out, [(PHONE_TIER, intervals)], xmax=intervals[-1][1])
    return out


# -- corpus ------------------------------------------------------------------------------------

@dataclass
class CorpusReport:
    """What :func:`align_corpus` did."""

    written: list = field(default_factory=list)  #: output TextGrid paths
    failed: list = field(default_factory=list)  #: (audio path, error message)
    skipped: list = field(default_factory=list)  #: audio files with no transcript beside them
    audio_seconds: float = 0.0  #: audio aligned (successful files)
    seconds: float = 0.0  #: wall time of the alignment work, start-up excluded
    startup_seconds: float = 0.0  #: model load, worker start and numba warm-up

    @property
    def realtime_factor(self) -> float:
        return self.audio_seconds / self.seconds if self.seconds > 0 else float("nan")


_WORKER_MODEL: Optional[AlignmentModel] = None
_WORKER_MODEL_PATH: Optional[str] = None


def _worker_init(model_path: str, blas_threads: Optional[int] = None) -> None:
    """Load the model and warm the decoder once per process, unless it was inherited by fork;
    optionally cap BLAS threads (with several worker processes, one BLAS thread each avoids
    oversubscribing the cores)."""
    global _WORKER_MODEL, _WORKER_MODEL_PATH
    if blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(blas_threads)
    if _WORKER_MODEL is None or _WORKER_MODEL_PATH != model_path:
        _WORKER_MODEL = AlignmentModel.load(model_path)
        _WORKER_MODEL_PATH = model_path
        warm_up(_WORKER_MODEL)


def _align_one(job) -> tuple:
    audio, transcript, out = job
    try:
        intervals = align(audio, transcript, _WORKER_MODEL)
        write_textgrid(out, [(PHONE_TIER, intervals)], xmax=intervals[-1][1])
        return str(audio), None, intervals[-1][1]
    except AlignerError as exc:
        return str(audio), str(exc), 0.0
    except Exception as exc:  # a bug or an unexpected library error: report it, go on
        return str(audio), f"{audio}: unexpected {type(exc).__name__}: {exc}", 0.0


def warm_up(model: AlignmentModel) -> None:
    """Compile (or load from numba's cache) the decoder once, on a tiny synthetic utterance."""
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(SAMPLE_RATE // 2)).astype(np.float32)
    from .phones import get_phone_set

    model.align(samples, ["h#", "aa", "h#"], get_phone_set("timit61"), name="<warm-up>")


def align_corpus(corpus_dir, out_dir, model=None, jobs: int = 1,
                 progress: Optional[Callable[[int, int], None]] = None) -> CorpusReport:
    """Align every audio file under ``corpus_dir`` that has a ``.phn`` beside it.

    Writes ``out_dir/<relative path>.TextGrid``. Goes on past bad files: they are listed in
    ``report.failed``. ``progress(done, total)`` is called after each file.
    """
    corpus_dir, out_dir = Path(corpus_dir), Path(out_dir)
    if not corpus_dir.is_dir():
        raise AlignerError(f"{corpus_dir}: corpus directory not found")
    t0 = time.perf_counter()
    model_path = str((Path(model) if model is not None else default_model_dir(ALIGNMENT_KIND)).resolve())
    utterances = find_utterances(corpus_dir)
    with_transcript = {u.audio for u in utterances}
    report = CorpusReport(skipped=[p for p in find_audio_files(corpus_dir) if p not in with_transcript])
    jobs_list = [(u.audio, u.transcript, out_dir / (u.name + ".TextGrid")) for u in utterances]
    jobs = max(1, min(jobs, len(jobs_list) or 1))
    _worker_init(model_path)  # load and warm here: forked workers inherit both
    if jobs == 1:
        pool = None
        mapper = map
    else:
        import multiprocessing

        context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_init,
                                   initargs=(model_path, 1))
        # start every worker (model load + warm-up) before the clock starts
        list(pool.map(_noop, range(jobs)))
        mapper = lambda f, it: pool.map(f, it, chunksize=1)  # noqa: E731
    report.startup_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        for i, (audio, error, seconds) in enumerate(mapper(_align_one, jobs_list)):
            if error is None:
                report.written.append(jobs_list[i][2])
                report.audio_seconds += seconds
            else:
                report.failed.append((audio, error))
            if progress:
                progress(i + 1, len(jobs_list))
    finally:
        if pool is not None:
            pool.shutdown()
    report.seconds = time.perf_counter() - t1
    return report


def _noop(_):
    return os.getpid()


# -- evaluation and training ------------------------------------------------------------------

def evaluate(ref_dir, hyp_dir):
    """Boundary metrics of HYP against REF (directories of TextGrids or ``.phn``, by relative path).

    Returns ``(AlignmentScores, problems)``; see :mod:`aligner.evaluation`.
    """
    return evaluate_directories(ref_dir, hyp_dir)


def train(corpus_dir, out_dir, trainer: str = "orbit", trainer_params: Optional[dict] = None,
          classifier_params: Optional[dict] = None, n_folds: int = 4, n_val_speakers: int = 2,
          progress=None, epoch_callback=None) -> AlignmentModel:
    """Train an alignment model on a TIMIT-layout corpus and save it to ``out_dir``."""
    from .training import load_utterances, train_alignment_model

    utterances = find_utterances(corpus_dir)
    if not utterances:
        raise AlignerError(f"{corpus_dir}: no audio file with a .phn transcript beside it")
    data = load_utterances(utterances, progress)
    model, _ = train_alignment_model(data, trainer, trainer_params, classifier_params, n_folds,
                                     n_val_speakers, progress=progress, epoch_callback=epoch_callback)
    model.training["corpus"] = str(corpus_dir)
    model.save(out_dir)
    return model
