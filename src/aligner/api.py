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

The public face: the functions below call the pipelines, which live in their rooms:
one recording in :mod:`aligner.alignment.pipeline`, a corpus in :mod:`aligner.alignment.corpus`,
vowels in :mod:`aligner.vowels.pipeline`; worker processes, BLAS threads and Dask in
:mod:`aligner.runtime`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Optional

from aligner.errors import AlignerError

#: the names this module re-exports, by the module that defines them: each module is imported when
#: one of its names is first used (PEP 562), so ``aligner align`` on one file imports the pipeline of
#: one recording and not the corpus, adaptation, evaluation and vowel pipelines
_EXPORTS = {
    "aligner.alignment.adaptation.corpus": ("AdaptReport",),
    "aligner.alignment.corpus": ("CORPUS_TRANSCRIPTS", "CorpusReport", "FileReview", "OovReport", "align_corpus",
                                 "find_oovs"),
    "aligner.alignment.evaluation.phones": ("AlignmentScores", "evaluate_directories"),
    "aligner.alignment.model": ("AlignmentModel",),
    "aligner.alignment.pipeline": ("PHONE_TIER", "STREAM_SECONDS", "TIER_OVERRUN_TOLERANCE", "Alignment", "align",
                                   "align_file", "align_file_reviewed", "align_phones_reviewed", "align_transcript",
                                   "align_words", "check_output_not_input", "load_dictionary", "load_model",
                                   "output_path", "warm_up", "warm_up_words"),
    "aligner.io.textgrids": ("Interval",),
    "aligner.vowels.pipeline": ("VOWEL_CSV_ALIGNED_FIELDS", "VOWEL_CSV_FIELDS", "VOWEL_CSV_TIER_FIELDS",
                                "VOWEL_RESUME_MESSAGE", "VOWEL_TIER", "VOWEL_TRANSCRIPTS", "VowelRecord",
                                "VowelReport", "load_vowel_model", "measure_vowels", "vowel_transcript", "vowels_csv",
                                "warm_up_vowels"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

if TYPE_CHECKING:  # the types of this module's own signatures, for type checkers
    from aligner.alignment.adaptation.corpus import AdaptReport
    from aligner.alignment.evaluation.phones import AlignmentScores
    from aligner.alignment.model import AlignmentModel


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'aligner.api' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value  # once
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    # one recording
    "Alignment", "Interval", "align", "align_phones_reviewed", "align_words", "align_transcript", "align_file",
    "align_file_reviewed", "load_model", "load_dictionary", "output_path", "check_output_not_input", "warm_up",
    "warm_up_words", "plot", "PHONE_TIER", "STREAM_SECONDS", "TIER_OVERRUN_TOLERANCE",
    # a corpus
    "adapt", "AdaptReport", "align_corpus", "CorpusReport", "FileReview", "CORPUS_TRANSCRIPTS", "find_oovs",
    "OovReport",
    # vowels
    "measure_vowels", "VowelRecord", "VowelReport", "load_vowel_model", "vowels_csv", "vowel_transcript",
    "warm_up_vowels", "VOWEL_TIER", "VOWEL_TRANSCRIPTS", "VOWEL_RESUME_MESSAGE", "VOWEL_CSV_FIELDS",
    "VOWEL_CSV_TIER_FIELDS", "VOWEL_CSV_ALIGNED_FIELDS",
    # evaluation and training
    "evaluate", "Evaluation", "evaluate_words", "WordEvaluation", "hyp_has_words", "train", "train_vowels",
]


def plot(audio, textgrid, out=None, start_s: float | None = None, end_s: float | None = None, tiers=None,
         confidences=None) -> Path:
    """The review picture of an alignment (:func:`aligner.plotting.plot_alignment`: waveform,
    spectrogram, tiers, boundaries coloured by confidence) written to ``out`` (PNG); needs the
    ``plot`` extra (matplotlib)."""
    from aligner.plotting import plot_alignment

    return plot_alignment(audio, textgrid, out, start_s, end_s, tiers, confidences)


def adapt(corpus_dir, model_out, model=None, dictionary=None, oov: str = "g2p", references=None,
          rounds: Optional[int] = None, kind: str = "auto", output_dir=None, jobs: int = 1, settings=None,
          progress=None, message=None, engine: Optional[str] = None, scheduler: Optional[str] = None,
          language: Optional[str] = None, phone_map=None, phone_set: str = "auto",
          keep_check: Optional[str] = None, pronunciation_prior: Optional[float] = None,
          reestimate: str = "auto") -> AdaptReport:
    """Adapt the alignment model ``model`` (a directory, a loaded model, or None for the shipped
    one) to the corpus at ``corpus_dir`` and save it as a bundle at ``model_out``: each of
    ``rounds`` rounds (None: 1 for a corpus transcribed in words on the clean model, else 3;
    :func:`~aligner.alignment.adaptation.corpus.adapt_corpus`) aligns the corpus and re-estimates
    the model on it, pulled toward the base
    (:mod:`aligner.alignment.adaptation.rounds`). ``references``: a folder of hand-aligned TextGrids of
    some files (their boundaries replace the decoded ones). ``output_dir``: also align the corpus
    with the adapted model there. ``jobs``, ``engine``, ``scheduler``: where the rounds (and
    ``output_dir``) run, as for :func:`align_corpus` (``jobs`` local processes, or Dask: e.g.
    ``scheduler="tcp://host:8786"``). A model trained on its own phones is adapted on
    transcripts in its symbols (words: ``dictionary`` in its phones) and keeps its inventory.
    ``language`` (e.g. ``"es"``), ``phone_map`` (a file or dict overriding the feature mapping):
    the words are in a language the model never heard, read as ``align_corpus(...,
    language=...)`` reads them, and ``references`` hold the language's IPA phones, read through the
    same mapping; align with the adapted model through the same ``language``. ``phone_set``
    ``ipa``/``xsampa`` (or a ``language``): the shipped universal model is the default base, adapted
    through its view of the corpus's phones into a model of them. ``keep_check`` (``"own"``,
    ``"base"``, ``"off"``; None: as ``settings`` say): keep each round's change only where it
    helps held-back recordings (:mod:`aligner.alignment.adaptation.keep`). ``pronunciation_prior``
    (pseudo-counts; None: off): a bonus per pronunciation alternative from the decoder's choices
    (:mod:`aligner.alignment.adaptation.pronunciations`). ``reestimate``: ``"auto"`` (the
    classifier's output layer for phone transcripts, the durations for words on the clean model),
    ``"classifier"``, ``"durations"`` or ``"both"``.
    Returns an :class:`AdaptReport`; see :func:`aligner.alignment.adaptation.corpus.adapt_corpus`."""
    from aligner.alignment.adaptation.corpus import adapt_corpus

    return adapt_corpus(corpus_dir, model_out, model, dictionary, oov, references, rounds, kind, output_dir, jobs,
                        settings, progress, message, engine=engine, scheduler=scheduler, language=language,
                        phone_map=phone_map, phone_set=phone_set, keep_check=keep_check,
                        pronunciation_prior=pronunciation_prior, reestimate=reestimate)


# -- evaluation and training ------------------------------------------------------------------

class Evaluation(NamedTuple):
    """What :func:`evaluate` found: the scores, and the files it could not score."""

    scores: "AlignmentScores"  #: boundary metrics over every scored file
    problems: list  #: ``(path, message)`` for missing, unreadable or mismatched files


class WordEvaluation(NamedTuple):
    """What :func:`evaluate_words` found (FA-Bench's word-track figures)."""

    words: object  #: :class:`~aligner.alignment.evaluation.words.WordScores` of the words
    phones: object  #: the same figures for the phones, None without phone references
    problems: list  #: ``(path, message)`` for missing, unreadable or unmatched files


def evaluate_words(ref_dir, hyp_dir, allow_missing: bool = False) -> WordEvaluation:
    """Words (and phones) tiers of HYP's TextGrids against REF's ``.wrd``/``.phn`` files or
    TextGrids, by relative path: words paired by their labels, both edges scored, boundary F1 at
    20 ms (:mod:`aligner.alignment.evaluation.words`)."""
    from aligner.alignment.evaluation.words import evaluate_word_directories

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
    hypothesis; see :mod:`aligner.alignment.evaluation.phones`.
    """
    from aligner.alignment.evaluation.phones import evaluate_directories

    return Evaluation(*evaluate_directories(ref_dir, hyp_dir, allow_missing))


def train(corpus_dir, out_dir, trainer: Optional[str] = None, trainer_params: Optional[dict] = None,
          classifier_params: Optional[dict] = None, n_folds: int = 4, n_val_speakers: int = 2,
          progress=None, epoch_callback=None, phones_tier: Optional[str] = None, phone_classes=None,
          phone_code: str = "auto", min_class_tokens: Optional[int] = None, on_inventory=None,
          augment=None, front_band_hz=None, failed: Optional[list] = None, universal: bool = False):
    """Train an alignment model on a corpus of hand-aligned phones and save it to ``out_dir``.

    TIMIT ``.phn`` in a standard phone set train a 39-class model; TextGrids (tier
    ``phones_tier``, default ``phones``), a ``phone_classes`` file or a ``phone_code``
    (``ipa``, ``xsampa``, ``arpabet``, ``timit``, ``buckeye``) train a model of the data's own
    phones (:func:`aligner.alignment.training.read_training_corpus`); ``on_inventory(choice)``
    is called with the classes chosen before the audio is read. ``augment``: multi-condition
    training, the frame classifier also learning from simulated rooms, noise, phone lines and
    clipping: an :class:`~aligner.features.augment.AugmentationRecipe`, the path of one as JSON,
    or ``"default"`` (``recipes/conditions/multi-condition.json``); needs the ``train`` extra
    when the recipe simulates rooms. The recipe is stored in the model's training record.
    ``front_band_hz``: a phone-line model, hearing every recording (in training and when it
    aligns) through this band (Hz), e.g. :data:`aligner.features.band.PHONE_BAND_HZ`: the band
    expert of a multi-condition bundle (``benchmarks.alignment.fit_condition_expert --band-expert``).
    ``failed``: a list that receives ``(utterance, one-line message)`` of every file left out (no
    phones tier, an empty tier, phones that do not fit the audio, unreadable audio); None: such a
    file stops the training with its error.

    ``universal``: train a :class:`~aligner.alignment.universal.UniversalModel` instead (TextGrids
    of IPA phones, or X-SAMPA with ``phone_code="xsampa"``; one folder per language;
    :mod:`aligner.alignment.universal_training`), which aligns any IPA phone;
    ``classifier_params`` then set :class:`~aligner.alignment.universal_training.UniversalSettings`
    fields, ``n_folds`` its language folds. ``trainer``: of the 7 weights; None: ``orbit``, or for
    a universal model ``UniversalSettings.trainer``.
    """
    if universal:
        return _train_universal(corpus_dir, out_dir, trainer, trainer_params, classifier_params, n_folds, progress,
                                epoch_callback, phones_tier, phone_code, failed)
    from aligner.alignment.training import (DEFAULT_TRAINER, load_utterances, read_training_corpus,
                                            train_alignment_model)
    from aligner.features.augment import AugmentationRecipe
    from aligner.features.band import check_band

    front_band_hz = None if front_band_hz is None else check_band(front_band_hz)
    if augment == "default":
        augment = AugmentationRecipe()
    elif augment is not None and not isinstance(augment, AugmentationRecipe):
        augment = AugmentationRecipe.from_json_file(augment)
    if augment is not None and augment.simulates_rooms:
        from aligner.features.augment import require_room_simulator
        require_room_simulator()  # a missing extra fails before any audio is read
    corpus = read_training_corpus(corpus_dir, phones_tier, phone_classes, phone_code, min_class_tokens)
    if corpus.failed and failed is None:
        raise AlignerError(corpus.failed[0][1])
    if failed is not None:
        failed.extend(corpus.failed)
    if corpus.choice is not None and on_inventory is not None:
        on_inventory(corpus.choice)
    data = load_utterances(corpus.utterances, progress, phone_set=corpus.phone_set, tier=corpus.tier,
                           augment=augment, front_band_hz=front_band_hz, failed=failed)
    if not data:
        raise AlignerError(f"{corpus_dir}: no utterance could be read ({failed[-1][1]})")
    model, _ = train_alignment_model(data, trainer or DEFAULT_TRAINER, trainer_params, classifier_params, n_folds,
                                     n_val_speakers, progress=progress, epoch_callback=epoch_callback,
                                     phone_set=corpus.phone_set)
    model.training["corpus"] = str(corpus_dir)
    model.front_band_hz = front_band_hz
    if augment is not None:
        model.training["augmentation"] = augment.to_dict()
    if corpus.choice is not None:
        model.training["phone_classes"] = corpus.choice.describe()
        model.training["folded_symbols"] = dict(sorted(corpus.choice.folded.items()))
    model.save(out_dir)
    return model


def _train_universal(corpus_dir, out_dir, trainer, trainer_params, settings, n_folds, progress, epoch_callback,
                     phones_tier, phone_code, failed):
    """:func:`train` with ``universal``: a universal model of a TextGrid corpus, saved to ``out_dir``."""
    from aligner.alignment.universal_training import (UniversalSettings, read_universal_corpus,
                                                      train_universal_model)

    code = "ipa" if phone_code in ("auto", None) else phone_code
    fields = dict(settings or {}, n_folds=n_folds, trainer_params=dict(trainer_params or {}))
    if trainer is not None:  # None: UniversalSettings' trainer
        fields["trainer"] = trainer
    settings = UniversalSettings(**fields)
    data = read_universal_corpus(corpus_dir, code, phones_tier, warps=tuple(settings.warps), progress=progress,
                                 failed=failed, conditions=settings.conditions)
    model = train_universal_model(data, settings, progress, epoch_callback)
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
