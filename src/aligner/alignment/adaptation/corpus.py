"""A corpus through ``aligner adapt``: read it, adapt the model on it, write the bundle.

:func:`adapt_corpus` reads any corpus ``align-corpus`` reads (Montreal Forced Aligner's layout
with ``.lab``/``.txt``/TextGrid words, or phone symbols, TIMIT's ``.phn`` with their times
ignored; speakers from folders), and optional hand-aligned reference TextGrids of some of its
files (same relative path or same stem, a ``phones`` tier), turns each recording (each
interval of a TextGrid transcript) into an :class:`~aligner.alignment.adaptation.rounds.Recording`,
and runs :func:`~aligner.alignment.adaptation.rounds.adapt_model` on them. The transcripts are read as
``align-corpus`` reads them for the base model: a model trained on its own phones reads phone
transcripts in its symbols (``auto`` without a dictionary) and words through a dictionary in its
phones; with ``language``, words are read by that language's G2P and each of its phones is
aligned as the model's closest phone (:mod:`aligner.phones.languages`). The adapted model
keeps its base's phone inventory and symbols, and is saved
as a bundle like the shipped one, written beside MODEL_OUT and renamed into place at the end
(an interrupted run leaves no partial bundle), recording its base model, the corpus and each
round's report. With ``output_dir``, the corpus is then aligned with the adapted model
(:func:`aligner.alignment.corpus.align_corpus`).

Each round's recordings are aligned, and their statistics summed, where ``align-corpus`` runs
its files (:func:`adapt_recordings`, :class:`PoolRounds`): in this process, on ``jobs`` local
worker processes, or on Dask (``scheduler``, or a local cluster); a recording that fails on a
worker, or whose worker dies, is left out of that round and listed in its report.

Bad input is refused before any work with a one-line error naming the file: no transcripts,
too little speech (:data:`MIN_ADAPT_SECONDS`), a reference with unknown phones, running past
its audio or overlapping, MODEL_OUT inside the corpus or equal to the base, a damaged base, a
dictionary with a phone the model lacks, an unknown language or a bad phone map.
Unreadable recordings and transcripts are listed in the report and the others are used.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable, Optional

from aligner.alignment.corpus import CORPUS_TRANSCRIPTS, CorpusReport, align_corpus
from aligner.alignment.model import AlignmentModel
from aligner.alignment.pipeline import (TIER_OVERRUN_TOLERANCE, _language_pronunciations, _pronunciations,
                                        check_phone_map, load_dictionary, load_model, map_language_phones,
                                        model_reading, phone_code, read_ipa_transcript, wants_universal,
                                        with_edge_silences, with_edge_silences_if_they_fit, words_dictionary)
from aligner.alignment.universal import SILENCE_CLASS, UniversalModel
from aligner.errors import AlignerError, ModelError, TranscriptError
from aligner.frames import SAMPLE_RATE, n_frames
from aligner.io.bundles import ALIGNMENT_KIND, MANIFEST, UNIVERSAL_KIND, default_model_dir
from aligner.io.corpus import find_utterances

#: the least speech (seconds, over the recordings that can be used) a corpus needs to adapt on:
#: below it a refit would follow a handful of phones
MIN_ADAPT_SECONDS = 20.0
#: recordings (or TextGrid intervals) shorter than this (samples: 100 ms) are left out
MIN_RECORDING_SAMPLES = SAMPLE_RATE // 10
#: a reference TextGrid may end this far past its recording (seconds) before it is refused
REFERENCE_OVERRUN_S = TIER_OVERRUN_TOLERANCE


@dataclass
class AdaptReport:
    """What :func:`adapt_corpus` did."""

    model_dir: Path  #: the bundle written
    rounds: list = field(default_factory=list)  #: :class:`~aligner.alignment.adaptation.rounds.RoundReport` per round
    recordings: int = 0  #: recordings (TextGrid intervals count one each) given to the adaptation
    references: int = 0  #: of those, with hand-aligned reference phones
    #: of those, cut to their speech before the first round (long silent edges: :mod:`~aligner.alignment.adaptation.edges`)
    edges_cut: int = 0
    speakers: int = 0
    audio_seconds: float = 0.0
    failed: list = field(default_factory=list)  #: (path, message): recordings that could not be read
    oovs: dict = field(default_factory=dict)  #: unknown word -> pronunciation the G2P gave it
    #: with a language: each of the language's phones met -> the model phone it was aligned as
    phone_map: dict = field(default_factory=dict)
    seconds: float = 0.0  #: wall time of the whole run, alignment of ``output_dir`` excluded
    alignment: Optional[CorpusReport] = None  #: the final alignment of the corpus (``output_dir``)


#: the output-layer prior (:attr:`~aligner.alignment.adaptation.rounds.AdaptSettings.classifier_prior`)
#: of a multi-condition expert adapted to a corpus, when no settings are given: it heard many
#: conditions and must move further toward the corpus's one than the clean classifier (prior 10).
#: Chosen per fold on the other folds among priors 3, 10 and 30 (``benchmarks.alignment.eval_adaptation
#: --modes phones@reverb_far phones@white5``): 3 in every fold and both conditions; the phone-line
#: expert chose 10 (``phones@telephone``).
MULTI_CONDITION_PRIOR = 3.0
#: what adapting a universal model's view of a corpus re-estimates when no settings are given
#: (:class:`~aligner.alignment.adaptation.rounds.AdaptSettings` fields): the durations of the
#: language's phones (which the universal model predicted from their features), 5 pseudo-counts of
#: the view's statistics, and the view's output layer (prior 10, as the English model's). Chosen on
#: the validation languages (``benchmarks.languages.eval_languages_cv --test-fold 1|2 --exclude-folds 0
#: --adapt-rounds 2 --adapt-settings JSON``, CHANGELOG 0.17.0): with 0.17.0's averaged scorer the
#: refit added to the durations' gain on one validation fold and cost nothing on the other (priors
#: 3, 10 and 30 alike); with 0.15.0's single scorer it had added nothing.
UNIVERSAL_ADAPT_SETTINGS = {"classifier_prior": 10.0, "durations_prior": 5.0}
#: what adapting the clean model to a corpus transcribed in words re-estimates when no settings
#: are given (:class:`~aligner.alignment.adaptation.rounds.AdaptSettings` fields): the phone
#: durations (a speaker's tempo, the dictionary's forms as said), the base's statistics as 100
#: pseudo-observations per class (30 until 0.20.0: CHANGELOG 0.20.0), their deviations scaled with
#: their means; the classifier kept.
#: On the speaker folds, adapted on the test speakers' `.txt` words for the default 3 rounds
#: (``benchmarks.alignment.eval_adaptation --modes words words@CONDITION --settings
#: dur30s,clf10r+dur30,clf10r+dur30s``, CHANGELOG 0.14.0), word MAE unadapted -> this / with the
#: output layer refit too (0.13.0's default): clean 15.7 -> 15.7 / 16.2 ms, clipped 15.7 -> 15.8 /
#: 15.9 ms; in noise and rooms the refit gains 0.3-1.3 ms more (``reestimate="both"``), while
#: the shipped model's gates send such corpora to an expert, whose classifier is adapted.
#: Re-estimated deviations narrowed round after round (decoded lengths spread less than true
#: ones): 16.0 / 16.2 / 16.3 ms after rounds 1-3, against 15.8 ms in each with them scaled.
WORDS_ADAPT_SETTINGS = {"classifier_prior": None, "durations_prior": 100.0, "durations_spread": "scaled"}
#: the durations' pseudo-observations per class when ``reestimate`` asks for them (``durations``,
#: ``both``: with the output layer refit, for noisy rooms), chosen on words in noise against 100
#: (``eval_adaptation --modes words@CONDITION --settings clf10r+dur30s,clf10r+dur100s``: docs/results.md)
REESTIMATED_DURATIONS_PRIOR = 30.0
#: rounds of adaptation when no ``rounds`` are given (:func:`adapt_corpus`)
DEFAULT_ADAPT_ROUNDS = 3
#: ... where :data:`WORDS_ADAPT_SETTINGS` apply: each further round re-estimates the durations
#: from lengths the last round's durations decoded, and drifts. On the speaker folds (0.19.0,
#: ``benchmarks.alignment.eval_adaptation --modes words words@CONDITION --settings dur30s --rounds 3``),
#: word MAE not adapted -> after rounds 1 / 3: clean 14.96 -> 14.99 / 15.18, clipped 15.05 -> 14.89 /
#: 15.17, telephone 16.70 -> 16.72 / 16.85, white noise 10 dB 20.68 -> 20.65 / 20.67, 5 dB 23.44 ->
#: 22.89 / 22.97, far room 27.35 -> 26.99 / 27.04, classroom 23.83 -> 23.79 / 23.75 ms
WORDS_ADAPT_ROUNDS = 1
#: the same for words of a language the clean model never heard (``language``, read through the
#: feature mapping): the output layer refit too (prior 10) and the deviations re-estimated, as
#: before 0.14.0 (not measured again: the speaker folds hold no such corpus)
FOREIGN_WORDS_ADAPT_SETTINGS = {"durations_prior": 30.0}
#: ``reestimate`` values of :func:`adapt_corpus`: what the rounds re-estimate when no settings are
#: given ("auto": as the corpus and the model call for, module constants)
REESTIMATE = ("auto", "classifier", "durations", "both")


def _reestimating(settings, reestimate: str, multi_condition: bool):
    """``settings`` (None: the defaults) re-estimating the classifier's output layer, the
    durations or both (:data:`REESTIMATE`): a part asked for keeps its prior from ``settings``
    where it has one, else the default's (:data:`MULTI_CONDITION_PRIOR` for the multi-condition
    expert, :data:`REESTIMATED_DURATIONS_PRIOR` with :data:`WORDS_ADAPT_SETTINGS`' spread); a part not
    asked for is kept."""
    from aligner.alignment.adaptation.rounds import AdaptSettings

    default_clf = MULTI_CONDITION_PRIOR if multi_condition else AdaptSettings().classifier_prior
    settings = settings or AdaptSettings(classifier_prior=default_clf)
    clf = settings.classifier_prior or default_clf
    if settings.durations_prior is None:
        dur, spread = REESTIMATED_DURATIONS_PRIOR, WORDS_ADAPT_SETTINGS["durations_spread"]
    else:
        dur, spread = settings.durations_prior, settings.durations_spread
    return replace(settings, classifier_prior=clf if reestimate in ("classifier", "both") else None,
                   durations_prior=dur if reestimate in ("durations", "both") else None,
                   durations_spread=spread).check()


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _check_output(model_out: Path, corpus_dir: Path, base_dir: Optional[Path]) -> None:
    """Refuse a MODEL_OUT that is inside the corpus, the base model itself, or a folder holding
    something other than a model bundle (it would be replaced)."""
    target = model_out.resolve()
    if _inside(target, corpus_dir.resolve()):
        raise AlignerError(f"{model_out}: the adapted model would be written inside the corpus {corpus_dir}; "
                           f"choose a MODEL_OUT outside it")
    if base_dir is not None and target == base_dir.resolve():
        raise AlignerError(f"{model_out}: this is the base model; write the adapted model to a new folder")
    if target.exists():
        if not target.is_dir():
            raise AlignerError(f"{model_out}: exists and is not a folder; choose another MODEL_OUT")
        if any(target.iterdir()) and not (target / MANIFEST).is_file():
            raise AlignerError(f"{model_out}: exists and holds files that are not a model bundle; choose an empty "
                               f"or new folder")


def _reference_path(references: Path, name: str, by_stem: dict) -> Optional[Path]:
    """The reference TextGrid of the utterance ``name`` (its path below the corpus, no suffix):
    the same relative path under ``references``, else the one TextGrid there with its stem."""
    for suffix in (".TextGrid", ".textgrid"):
        candidate = references / (name + suffix)
        if candidate.is_file():
            return candidate
    return by_stem.get(Path(name).name.lower())


def read_reference(path: Path, duration_s: float, model: Optional[AlignmentModel] = None,
                   language_phones=None) -> list:
    """Hand-aligned phones ``[(start_s, end_s, symbol), ...]`` of a reference TextGrid covering a
    recording of ``duration_s`` seconds: its ``phones`` (or ``phone``) tier, else its first interval tier; blank
    intervals read as silence of the phones' own set. For a ``model`` trained on its own phones
    the symbols must be the model's (blank intervals: its silence). ``language_phones``: the
    symbols are a language's IPA phones (as ``align-corpus --language`` writes its phones
    tier; ``sil``, ``sp`` and blanks are silence), each read as the model phone that
    ``language_phones(symbols)`` (a ``{IPA phone: model phone}`` mapping) gives it. One-line
    :class:`TranscriptError` naming the file for a missing tier, no phones, overlapping
    intervals, intervals past the audio or a symbol of no phone set (not of the model's, or
    with no mapping)."""
    from aligner.phones.inventory import EMPTY_LABEL_SYMBOL, normalize_symbol
    from aligner.io.textgrids import find_phones_tier, interval_tier, load_textgrid, tier_names
    from aligner.phones.sets import detect_phone_set

    grid = load_textgrid(path)
    names = tier_names(grid, interval=True)
    if not names:
        raise TranscriptError(f"{path}: no interval tier with reference phones")
    tier = find_phones_tier(names, path, fallback="first")
    intervals = sorted(interval_tier(grid, path, tier))
    labelled = [(s, e, lab.strip()) for s, e, lab in intervals if lab.strip()]
    if not labelled:
        raise TranscriptError(f"{path}: tier {tier!r} holds no phones")
    cursor = 0.0
    for s, e, lab in intervals:
        if s < cursor - 1e-6:
            raise TranscriptError(f"{path}: tier {tier!r}: the interval {s:.3f}-{e:.3f} s overlaps the one before "
                                  f"it (ending at {cursor:.3f} s)")
        cursor = max(cursor, e)
    end = max(e for _, e, _ in labelled)
    if end > duration_s + REFERENCE_OVERRUN_S:
        raise TranscriptError(f"{path}: tier {tier!r} runs to {end:.3f} s but its recording lasts {duration_s:.3f} s "
                              f"(a reference of another recording?)")
    own = None if model is None else model.phone_set
    if language_phones is not None:  # the language's IPA, each as its model phone
        silent = {"sil", "sp", ""}
        labelled = [(s, e, lab) for s, e, lab in labelled if lab.lower() not in silent]
        if not labelled:
            raise TranscriptError(f"{path}: tier {tier!r} holds no phones")
        try:
            to_model = language_phones([normalize_symbol(lab) for _, _, lab in labelled])
        except (AlignerError, ValueError) as exc:  # a phone of no features and no --phone-map line
            raise TranscriptError(f"{path}: tier {tier!r}: {exc}") from None
        intervals = [(s, e, "" if lab.strip().lower() in silent else to_model[normalize_symbol(lab.strip())])
                     for s, e, lab in intervals]
        labelled = [(s, e, lab) for s, e, lab in intervals if lab]
    try:
        if own is None:
            pset = detect_phone_set([lab for _, _, lab in labelled], source=str(path))
        else:
            labelled = [(s, e, normalize_symbol(lab)) for s, e, lab in labelled]
            intervals = [(s, e, normalize_symbol(lab) if lab.strip() else lab) for s, e, lab in intervals]
            own.validate([lab for _, _, lab in labelled], f"{path}: tier {tier!r}")
    except TranscriptError as exc:
        msg = str(exc)
        raise TranscriptError(msg if str(path) in msg else f"{path}: {msg}") from None
    if own is None:
        silence = next((s for s in ("sil", "pau", "h#") if s in pset.symbols), labelled[0][2])
    else:  # the model's silence: its empty-interval symbol, else any symbol of its silence class
        silences = [s for s in own.symbols if own.class_of(s) == model.inventory.silence]
        silence = EMPTY_LABEL_SYMBOL if EMPTY_LABEL_SYMBOL in silences or not silences else silences[0]
    phones, cursor = [], 0.0
    for s, e, lab in intervals:
        s, e = max(s, 0.0), min(e, duration_s)
        if e - s <= 1e-6:
            continue
        if s > cursor + 1e-6:  # an unlabelled stretch between intervals
            phones.append((cursor, s, silence))
        phones.append((s, e, lab or silence))
        cursor = e
    if cursor < duration_s - 0.0105:
        phones.append((cursor, duration_s, silence))
    merged = []  # neighbouring silences (a blank interval beside a silence label) as one
    for iv in phones:
        if merged and iv[2] == silence and merged[-1][2] == silence:
            merged[-1] = (merged[-1][0], iv[1], silence)
        else:
            merged.append(iv)
    return merged


def read_recordings(corpus_dir, kind: str = "auto", dictionary=None, oov: str = "g2p", references=None,
                    progress: Optional[Callable[[int, int], None]] = None, model: Optional[AlignmentModel] = None,
                    language: Optional[str] = None, phone_map: Optional[dict] = None,
                    mapping: Optional[dict] = None, ipa_code: Optional[str] = None) -> tuple:
    """``(recordings, failed, oovs)`` of a corpus: one :class:`~aligner.alignment.adaptation.rounds.Recording`
    per audio file with a transcript beside it (per non-empty interval of a TextGrid
    transcript), its speaker from its folder; ``failed`` lists ``(path, message)`` of files that
    could not be read. Reference TextGrids under ``references`` replace the decoded boundaries
    of their recordings; a bad reference raises (it was asked for).

    The transcripts are read for ``model`` (None: a 39-class model) as ``align-corpus`` reads
    them (:func:`~aligner.alignment.pipeline.align_transcript`): for a model trained on its own
    phones, phone transcripts in its symbols (``kind`` ``auto`` without a ``dictionary``) and
    words through a ``dictionary`` in its phones (unknown words an error); with ``language``,
    every transcript is words, each word's pronunciation its G2P's IPA phones as the model's
    closest phones (``phone_map``: ``{language phone: model phone}`` overrides), and ``mapping``
    (a dict, if given) is filled with each language phone met and the model phone it became.
    ``ipa_code`` (``ipa``, ``xsampa``): ``model`` is a universal model's view of the corpus's
    phones (:func:`universal_corpus_view`); phone transcripts (a ``.lab``/``.txt`` or a TextGrid's
    phones tier) are read in that code, a silence added at either end where they have none, as
    ``aligner align --phone-set ipa`` reads them."""
    from aligner.alignment.adaptation.rounds import Recording
    from aligner.io.audio import load_audio
    from aligner.io.transcripts import read_transcript, read_word_segments, transcript_kind
    from aligner.words.normalize import normalize_transcript

    corpus_dir = Path(corpus_dir)
    utterances = find_utterances(corpus_dir, CORPUS_TRANSCRIPTS[kind])
    if not utterances:
        raise AlignerError(f"{corpus_dir}: no audio file with a transcript ({', '.join(CORPUS_TRANSCRIPTS[kind])}) "
                           f"beside it: nothing to adapt on")
    by_stem: dict = {}
    if references is not None:
        references = Path(references)
        if not references.is_dir():
            raise AlignerError(f"{references}: reference folder not found")
        for p in sorted(references.rglob("*")):
            if p.suffix.lower() == ".textgrid":
                by_stem.setdefault(p.stem.lower(), p)
    if language is not None and model is None:
        model = load_model(None)  # the phones the language's are mapped to
    own = model is not None and model.phone_set is not None
    phone_reading = "auto" if model is None else model_reading(model, "auto")
    if language is not None:
        kind = "words"  # a language's words, through its G2P (as align-corpus --language)
    elif own and kind == "auto" and dictionary is None:
        kind = "phones"  # a model of its own phones reads phone transcripts in its symbols
    if own and language is None:
        oov = "error"  # the shipped G2P writes English ARPAbet, not the model's phones
    mapping = {} if mapping is None else mapping
    ipa_of: dict = {}  # with a language: word -> its IPA phones
    # references in the language's IPA, read through the words' mapping
    language_phones = None if language is None else partial(map_language_phones, model, overrides=phone_map,
                                                            mapping=mapping)
    words_dict = None
    recordings, failed, oovs = [], [], {}
    for i, utt in enumerate(utterances):
        ref_path = None
        try:
            samples = load_audio(utt.audio)
            duration = len(samples) / SAMPLE_RATE
            if len(samples) < MIN_RECORDING_SAMPLES:
                raise AlignerError(f"{utt.audio}: {1000 * duration:.0f} ms is too short to align")
            ref_path = None if references is None else _reference_path(references, utt.name, by_stem)
            reference = None if ref_path is None else read_reference(ref_path, duration, model, language_phones)
            if ipa_code is not None and ((language is None and dictionary is None and kind != "words")
                                         or transcript_kind(utt.transcript, kind) == "phones"):
                symbols, labels, _ = read_ipa_transcript(utt.transcript, ipa_code)
                symbols = with_edge_silences(symbols, labels)[0]
                recordings.append(Recording(samples, symbols, utt.speaker, str(utt.audio), "phones", "model",
                                            reference, source=(str(utt.audio), 0, len(samples))))
            elif transcript_kind(utt.transcript, kind) == "phones":
                symbols, pset = read_transcript(utt.transcript, phone_reading)
                symbols = with_edge_silences_if_they_fit(model if model is not None else load_model(None), symbols,
                                                         pset, n_frames(len(samples)), None, str(utt.audio))[0]
                recordings.append(Recording(samples, list(symbols), utt.speaker, str(utt.audio), "phones", pset.name,
                                            reference, source=(str(utt.audio), 0, len(samples))))
            else:
                if words_dict is None and language is None:
                    words_dict = words_dictionary(model, dictionary) if own else load_dictionary(dictionary)
                    if words_dict is None:
                        raise TranscriptError(f"{utt.transcript}: this model was trained on its own phones "
                                              f"({model.phone_set.description}): word transcripts need a "
                                              "--dictionary in those phones, or --language CODE for a G2P")
                segments = read_word_segments(utt.transcript)
                for seg in segments:
                    start = 0.0 if seg.start_s is None else seg.start_s
                    end = duration if seg.end_s is None else min(seg.end_s, duration)
                    if seg.end_s is not None and seg.end_s > duration + TIER_OVERRUN_TOLERANCE:
                        raise TranscriptError(f"{utt.transcript}: the interval {start:.3f}-{seg.end_s:.3f} s runs "
                                              f"past the end of {utt.audio} ({duration:.3f} s)")
                    name = str(utt.audio) if seg.start_s is None else f"{utt.audio} [{start:.3f}-{end:.3f} s]"
                    if language is None:
                        found: dict = {}
                        labels, prons = _pronunciations(normalize_transcript(seg.text, words_dict), words_dict, oov,
                                                        str(utt.transcript), found)
                        oovs.update(found)
                    else:
                        labels, prons = _language_pronunciations(model, seg.text, language, phone_map, mapping,
                                                                 ipa_of, str(utt.transcript))
                    a, b = int(round(start * SAMPLE_RATE)), int(round(end * SAMPLE_RATE))
                    if b - a < MIN_RECORDING_SAMPLES:
                        raise TranscriptError(f"{name}: {1000 * (b - a) / SAMPLE_RATE:.0f} ms is too short to align")
                    seg_ref = reference if seg.start_s is None else None  # a reference covers the whole file
                    speaker = utt.speaker if seg.speaker is None else f"{utt.speaker}/{seg.speaker}"
                    recordings.append(Recording(samples[a:b], labels, speaker, name, "words", "auto", seg_ref,
                                                prons, (str(utt.audio), a, b)))
        except TranscriptError as exc:
            if references is not None and ref_path is not None and str(ref_path) in str(exc):
                raise  # a bad reference: the user asked for it, so no model is made without it
            failed.append((str(utt.audio), str(exc)))
        except AlignerError as exc:
            failed.append((str(utt.audio), str(exc)))
        if progress:
            progress(i + 1, len(utterances))
    return recordings, failed, oovs


def universal_corpus_view(universal: UniversalModel, corpus_dir, kind: str = "auto", dictionary=None,
                          language: Optional[str] = None, code: str = "ipa") -> AlignmentModel:
    """The universal model's view (:meth:`~aligner.alignment.universal.UniversalModel.view`) of
    every phone the corpus's transcripts hold: phone transcripts in ``code`` (IPA or X-SAMPA), the
    IPA pronunciations of ``dictionary``'s words, or a ``language``'s words read by its G2P. An
    ordinary model of those phones, which :func:`adapt_corpus` adapts and saves (it then aligns
    the language's own phones). Transcripts that cannot be read are passed over here
    (:func:`read_recordings` reports them)."""
    from aligner.io.transcripts import read_word_segments, transcript_kind
    from aligner.phones.languages import check_language, language_pronunciations, language_words
    from aligner.words.normalize import normalize_transcript

    if language is not None:
        check_language(language)  # an unknown language is one error, not every transcript passed over
    phones = {SILENCE_CLASS}
    ipa_phones = language is None and dictionary is None and kind != "words"
    words_dict = words_dictionary(universal, dictionary, None, code) if language is None and dictionary else None
    for utt in find_utterances(corpus_dir, CORPUS_TRANSCRIPTS[kind]):
        try:
            if ipa_phones or transcript_kind(utt.transcript, kind) == "phones":
                phones.update(read_ipa_transcript(utt.transcript, code)[0])
                continue
            for seg in read_word_segments(utt.transcript):
                if language is not None:
                    words = language_words(seg.text)
                    for pron in language_pronunciations(words, language).values():
                        phones.update(pron)
                elif words_dict is not None:
                    for token in normalize_transcript(seg.text, words_dict):
                        for pron in words_dict.pronunciations(token.word):
                            phones.update(pron)
        except AlignerError:
            continue
    if len(phones) < 2:
        raise AlignerError(f"{corpus_dir}: no transcript with phones to adapt on")
    return universal.view(sorted(phones), code, str(corpus_dir))


def _base_record(base_ref, base: AlignmentModel, default_dir: Optional[Path] = None) -> dict:
    """What the adapted bundle says of its base model: its folder, when it was made and what it
    was trained (or adapted) on."""
    import json

    path = Path(base_ref) if base_ref is not None else (default_dir or default_model_dir(ALIGNMENT_KIND))
    created = None
    try:
        created = json.loads((path / MANIFEST).read_text(encoding="utf-8")).get("created")
    except (OSError, ValueError):
        pass
    return {"path": str(path.resolve()), "created": created, "shipped": base_ref is None,
            "trained_on": base.training.get("corpus"), "adapted": base.training.get("adapted")}


def save_atomically(model: AlignmentModel, model_out: Path, check: Optional[Callable] = None) -> None:
    """Save ``model`` as a bundle at ``model_out``: written to a hidden folder beside it, then
    renamed into place (an existing bundle there is replaced only then). Interrupted (Ctrl-C
    included), it leaves no partial bundle. ``check(folder)``, if given, is called on the written
    bundle before it replaces anything (an exception leaves ``model_out`` as it was)."""
    model_out = Path(model_out)
    model_out.parent.mkdir(parents=True, exist_ok=True)
    partial = model_out.parent / f".{model_out.name}.partial-{os.getpid()}"
    old = model_out.parent / f".{model_out.name}.old-{os.getpid()}"
    try:
        if partial.exists():
            shutil.rmtree(partial)
        model.save(partial)
        if check is not None:
            check(partial)
        if model_out.exists():
            os.replace(model_out, old)
        os.replace(partial, model_out)
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)


def adapt_corpus(corpus_dir, model_out, model=None, dictionary=None, oov: str = "g2p", references=None,
                 rounds: Optional[int] = None, kind: str = "auto", output_dir=None, jobs: int = 1, settings=None,
                 progress: Optional[Callable[[str, int, int], None]] = None,
                 message: Optional[Callable[[str], None]] = None, engine: Optional[str] = None,
                 scheduler: Optional[str] = None, language: Optional[str] = None, phone_map=None,
                 phone_set: str = "auto", keep_check: Optional[str] = None,
                 pronunciation_prior: Optional[float] = None, reestimate: str = "auto") -> AdaptReport:
    """Adapt the alignment model ``model`` (a directory, a loaded model, or None for the shipped
    one) to the corpus at ``corpus_dir`` and save it to ``model_out`` (module docstring).
    ``keep_check``: ``"own"`` or ``"base"`` holds back every 5th recording and keeps each
    round's re-estimated component only where it helps them
    (:mod:`aligner.alignment.adaptation.keep`; ``AdaptSettings.keep_better``), ``"off"`` never;
    None: as ``settings`` say. ``pronunciation_prior``: words transcripts: re-estimate a bonus per
    pronunciation alternative from the decoder's choices, this many pseudo-counts per alternative
    (:mod:`aligner.alignment.adaptation.pronunciations`; None: as ``settings`` say).

    ``rounds``: align, re-estimate, repeat (None: :data:`WORDS_ADAPT_ROUNDS` where
    :data:`WORDS_ADAPT_SETTINGS` apply, else :data:`DEFAULT_ADAPT_ROUNDS`). ``references``: a
    folder of hand-aligned TextGrids for some files. ``kind``, ``dictionary``, ``oov``: as for
    ``align-corpus``. ``settings``: an
    :class:`~aligner.alignment.adaptation.rounds.AdaptSettings` (None: the defaults, but with
    :data:`MULTI_CONDITION_PRIOR` when the multi-condition expert is the one adapted,
    :data:`UNIVERSAL_ADAPT_SETTINGS` for a universal model, and :data:`WORDS_ADAPT_SETTINGS`
    (:data:`FOREIGN_WORDS_ADAPT_SETTINGS` with a ``language``) for the clean model when every
    recording is transcribed in words). ``reestimate``
    (:data:`REESTIMATE`): ``"classifier"`` (the output layer, durations kept), ``"durations"``
    (the classifier kept) or ``"both"`` instead of those choices, on top of ``settings`` (or
    the defaults); ``"auto"``: as they say.
    ``progress(stage, done, total)`` after each file read and each file of each round;
    ``message(text)`` with each round's report. ``output_dir``: also align the corpus with the
    adapted model there.

    A base ``model`` trained on its own phones reads phone transcripts in its symbols, words
    through a ``dictionary`` in its phones, and ``references`` in its symbols; the adapted
    model keeps its inventory and symbols. ``language`` (e.g. ``es``), ``phone_map`` (a file or
    dict of ``LANGUAGE_PHONE MODEL_PHONE`` overrides): the words are in a language the model
    never heard, read and mapped as ``align-corpus --language`` does (the mapping met is in
    ``report.phone_map``); align with the adapted model through the same ``language``.

    A universal model (the default for ``phone_set`` ``ipa``/``xsampa`` or a ``language``) is
    adapted through its view of the corpus's phones (:func:`universal_corpus_view`): the saved
    model is an ordinary model of the language's own phones, which aligns them (``--phone-set ipa``
    or the same ``language``) through :func:`~aligner.alignment.pipeline.align_ipa_phones`.

    ``jobs``, ``engine``, ``scheduler``: where each round's recordings are aligned and its
    statistics summed, and where ``output_dir`` is aligned, as for ``align-corpus``
    (:func:`~aligner.alignment.corpus.align_corpus`): ``jobs`` local worker processes, or Dask
    (``scheduler`` ``tcp://HOST:PORT``, or ``engine="dask"`` for a local cluster of ``jobs``
    processes; ``model`` then a directory or None). Dask workers read the corpus and each
    round's model (written beside ``model_out`` and removed at the end) themselves: they need
    the file system this process sees. A recording that fails on a worker, or whose worker
    dies, is left out of that round (its report lists it) and the round goes on.
    """
    from aligner.runtime.distributed import check_dask_settings, resolve_engine

    t0 = time.perf_counter()
    if reestimate not in REESTIMATE:
        raise ValueError(f"reestimate must be one of {', '.join(REESTIMATE)}, got {reestimate!r}")
    corpus_dir, model_out = Path(corpus_dir), Path(model_out)
    if not corpus_dir.is_dir():
        raise AlignerError(f"{corpus_dir}: corpus directory not found")
    if kind not in CORPUS_TRANSCRIPTS:
        raise ValueError(f"kind must be one of {', '.join(CORPUS_TRANSCRIPTS)}, got {kind!r}")
    if rounds is not None and int(rounds) < 1:
        raise AlignerError(f"rounds must be at least 1, got {rounds}")
    engine = resolve_engine(engine, scheduler)
    check_dask_settings(engine, scheduler, jobs, model, (AlignmentModel, UniversalModel))  # before any work
    check_phone_map(language, phone_map)
    wants = wants_universal(phone_set, language)
    base_dir = None if isinstance(model, (AlignmentModel, UniversalModel)) else (
        Path(model) if model is not None else default_model_dir(UNIVERSAL_KIND if wants else ALIGNMENT_KIND))
    _check_output(model_out, corpus_dir, base_dir)
    if output_dir is not None and _inside(Path(output_dir).resolve(), corpus_dir.resolve()):
        raise AlignerError(f"{output_dir}: the alignments would be written inside the corpus {corpus_dir}; "
                           f"choose an --output-dir outside it")
    try:
        base = load_model(model, wants)
    except ModelError as exc:
        raise ModelError(f"base model: {exc}") from None
    ipa_code, view_staged = None, None
    if isinstance(base, UniversalModel):  # an ordinary model of the corpus's phones is adapted
        ipa_code = phone_code(phone_set)
        base = universal_corpus_view(base, corpus_dir, kind, dictionary, language, ipa_code)
        if settings is None:
            from aligner.alignment.adaptation.rounds import AdaptSettings

            settings = AdaptSettings(**UNIVERSAL_ADAPT_SETTINGS)
        if engine != "local":  # Dask workers load the base from a bundle of its own
            model_out.parent.mkdir(parents=True, exist_ok=True)
            view_staged = Path(tempfile.mkdtemp(prefix=".aligner-adapt-view-", dir=model_out.parent))
            model = str(view_staged / "view")
            base.save(model)
    overrides = _check_words_reading(base, kind, dictionary, language, phone_map, corpus_dir)
    mapping: dict = {}
    recordings, failed, oovs = read_recordings(
        corpus_dir, kind, dictionary, oov, references,
        None if progress is None else (lambda done, total: progress("reading", done, total)),
        base, language, overrides, mapping, ipa_code)
    seconds = sum(r.duration_s for r in recordings)
    if not recordings:
        listed = "; ".join(msg for _, msg in failed[:3])
        raise AlignerError(f"{corpus_dir}: no recording could be read ({listed})")
    if seconds < MIN_ADAPT_SECONDS:
        raise AlignerError(f"{corpus_dir}: {seconds:.1f} s of speech with transcripts; adapting needs at least "
                           f"{MIN_ADAPT_SECONDS:.0f} s")
    report = AdaptReport(model_out, recordings=len(recordings), audio_seconds=seconds, failed=failed, oovs=oovs,
                         phone_map=dict(sorted(mapping.items())),
                         references=sum(r.reference is not None for r in recordings),
                         speakers=len({r.speaker for r in recordings}))

    from aligner.alignment.adaptation.edges import edges_cut_recordings
    from aligner.alignment.adaptation.rounds import corpus_decoder

    # before the condition gates pick the classifier to adapt: seconds of room tone are not the corpus's speech
    recordings, report.edges_cut = edges_cut_recordings(
        base, recordings, None, dictionary, None if progress is None else (
            lambda done, total: progress("silent edges", done, total)))
    decoder, expert_share = corpus_decoder(base, recordings)
    use_expert = decoder is not base
    multi_condition = use_expert and decoder is base.condition_expert
    base_arg, staged = (base if engine == "local" else model), view_staged
    if base.condition_expert is not None:
        if message:
            message(f"{expert_share:.0%} of the audio looks degraded (the model's condition gates): adapting the "
                    + ("clean classifier" if not use_expert else "phone-line expert"
                       if decoder is base.condition_band_expert else "multi-condition expert"))
        if use_expert:
            if settings is None and decoder is base.condition_expert:
                from aligner.alignment.adaptation.rounds import AdaptSettings

                settings = AdaptSettings(classifier_prior=MULTI_CONDITION_PRIOR)
            base = decoder
            if engine != "local":  # Dask workers load the expert from a bundle of its own
                staged = Path(tempfile.mkdtemp(prefix=".aligner-adapt-expert-", dir=model_out.parent))
                decoder.save(staged / "expert")
                base_arg = str(staged / "expert")
            else:
                base_arg = decoder

    if settings is None and not use_expert and all(r.kind == "words" for r in recordings):
        from aligner.alignment.adaptation.rounds import AdaptSettings

        settings = AdaptSettings(**(WORDS_ADAPT_SETTINGS if language is None else FOREIGN_WORDS_ADAPT_SETTINGS))
        if rounds is None and language is None:
            rounds = WORDS_ADAPT_ROUNDS
    rounds = DEFAULT_ADAPT_ROUNDS if rounds is None else int(rounds)
    if reestimate != "auto":
        settings = _reestimating(settings, reestimate, multi_condition)
    if keep_check is not None:
        from aligner.alignment.adaptation.keep import JUDGES
        from aligner.alignment.adaptation.rounds import AdaptSettings

        if keep_check not in ("off",) + JUDGES:
            raise ValueError(f"keep_check must be one of off, own, base; got {keep_check!r}")
        settings = replace(settings or AdaptSettings(), keep_better=keep_check != "off",
                           keep_judge="own" if keep_check == "off" else keep_check)
    if pronunciation_prior is not None:
        from aligner.alignment.adaptation.rounds import AdaptSettings

        settings = replace(settings or AdaptSettings(), pronunciation_prior=float(pronunciation_prior)).check()

    def on_round(rnd, _model, round_report):
        if message:
            left = round_report.files_left_out
            conf = round_report.mean_confidence
            moved = (f", {round_report.moved_20ms} of {round_report.boundaries} boundaries moved > 20 ms since "
                     f"round {rnd - 1}" if round_report.boundaries else "")
            message(f"round {rnd}: {round_report.files_used} files used, {len(left)} left out, "
                    f"{round_report.frames} frames, mean confidence {'-' if conf is None else f'{conf:.2f}'}"
                    f"{moved} ({round_report.seconds:.1f} s)")
            for name, what in ((round_report.kept or {}).get("components") or {}).items():
                message(f"round {rnd}: {name}: {what['why']}")

    file_progress = None if progress is None else (lambda rnd, done, total: progress(f"round {rnd}", done, total))
    try:
        adapted, reports = adapt_recordings(base_arg, recordings, rounds, settings, jobs, engine, scheduler,
                                            model_out.parent, on_round=on_round, file_progress=file_progress)
    except AlignerError as exc:
        raise AlignerError(f"{corpus_dir}: {exc}") from None
    finally:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
    if all(r.files_used == 0 for r in reports):
        raise AlignerError(f"{corpus_dir}: every recording was left out; nothing to adapt on")
    report.rounds = reports
    adapted.training = dict(adapted.training)
    adapted.training["adapted"] = {
        **dict(adapted.training.get("adapted") or {}),
        "base": _base_record(None if model is None or view_staged is not None
                             or isinstance(model, (AlignmentModel, UniversalModel)) else model, base, base_dir),
        "corpus": str(corpus_dir.resolve()), "recordings": report.recordings, "references": report.references,
        "speakers": report.speakers, "audio_seconds": round(seconds, 3), "rounds": len(reports),
        "round_reports": [r.to_dict() for r in reports], "failed": len(failed), "edges_cut": report.edges_cut,
    }
    if expert_share:
        adapted.training["adapted"]["condition_expert"] = {
            "adapted": use_expert, "share_of_audio_through_its_gates": round(expert_share, 3),
            "band_expert": adapted.front_band_hz is not None}
    if language is not None:
        adapted.training["adapted"].update(language=language, phone_map=report.phone_map)
    save_atomically(adapted, model_out)
    report.seconds = time.perf_counter() - t0
    if output_dir is not None:
        report.alignment = align_corpus(corpus_dir, output_dir, str(model_out), jobs, kind=kind,
                                        dictionary=dictionary, oov=oov, engine=engine, scheduler=scheduler,
                                        language=language, phone_map=phone_map,
                                        phone_set=phone_set if ipa_code is not None else "auto")
    return report


def _check_words_reading(base: AlignmentModel, kind: str, dictionary, language: Optional[str], phone_map,
                         corpus_dir: Path) -> Optional[dict]:
    """Refuse, before any work and in one line, what would make every words transcript fail:
    an unknown ``language`` or its missing pack (as ``align-corpus --language``), a bad
    ``phone_map`` file or one naming a phone the model lacks, a ``dictionary`` in other phones
    than those of a model trained on its own, or words for such a model without a dictionary.
    Returns the phone map's overrides ``{language phone: model phone}`` (None without one)."""
    if language is not None:
        from aligner.phones.languages import phone_mapping, read_phone_map

        words_dictionary(base, None, language)  # LanguageError for a language gruut does not read here
        if phone_map is None:
            return None
        overrides = read_phone_map(phone_map) if isinstance(phone_map, (str, os.PathLike)) else dict(phone_map)
        try:
            phone_mapping([], base, overrides)  # checks each override's model phone
        except AlignerError as exc:
            where = phone_map if isinstance(phone_map, (str, os.PathLike)) else "phone map"
            raise type(exc)(f"{where}: {exc}") from None
        return overrides
    if base.phone_set is not None:
        if dictionary is not None:
            words_dictionary(base, dictionary)  # a phone the model lacks: the file and line named
        elif kind == "words":
            raise TranscriptError(f"{corpus_dir}: the base model was trained on its own phones "
                                  f"({base.phone_set.description}): word transcripts need a --dictionary in those "
                                  "phones, or --language CODE for a G2P")
    return None


# -- the rounds on worker processes or on Dask -------------------------------------------------

#: batches per worker process in a round on a pool: each batch sends back one set of statistics
#: (``(m, m)`` floats: 32 MB for the shipped 2000 landmarks), and the smaller last batches even
#: out the workers' loads
BATCHES_PER_WORKER = 4
#: ... but a batch holds at least this much audio (seconds) where the corpus allows it: some
#: 3 s of work against 0.1-0.2 s to send its statistics back and add them
MIN_BATCH_SECONDS = 60.0


def _batches(recordings, workers: int) -> list:
    """A round's batches of recording indices for ``workers`` worker processes (:func:`_split`)."""
    durations = [r.duration_s for r in recordings]
    wanted = min(workers * BATCHES_PER_WORKER, int(sum(durations) // MIN_BATCH_SECONDS))
    return _split(durations, max(workers, wanted))


def adapt_recordings(base, recordings, rounds: int = 1, settings=None, jobs: int = 1, engine: Optional[str] = None,
                     scheduler: Optional[str] = None, work_dir=None, **options) -> tuple:
    """:func:`~aligner.alignment.adaptation.rounds.adapt_model` (``options``: its other arguments) with
    each round's recordings aligned and their statistics summed where ``align-corpus`` runs its
    files: ``jobs`` local worker processes (one: this process), or Dask (``scheduler``
    ``tcp://HOST:PORT``, or ``engine="dask"`` for a local cluster of ``jobs`` processes; ``base``
    then a model directory, or None for each worker's shipped model). See :class:`PoolRounds`.
    ``work_dir``: where Dask workers find each round's model (None: a temporary folder here).
    The model and the reports are those of one process, to the rounding of the sums' order."""
    from aligner.alignment.adaptation.rounds import adapt_model
    from aligner.runtime.distributed import check_dask_settings, resolve_engine

    engine = resolve_engine(engine, scheduler)
    check_dask_settings(engine, scheduler, jobs, base, AlignmentModel)
    runner = None if engine == "local" and jobs <= 1 else partial(
        PoolRounds, engine=engine, scheduler=scheduler, jobs=jobs, base=base, work_dir=work_dir)
    return adapt_model(base, recordings, rounds, settings, runner=runner, **options)


@dataclass
class _Batch:
    """Recordings of one round for :func:`_run_batch`: ``indices`` into the round of
    :data:`_LOCAL_ROUND` (inherited by a forked worker), or ``entries`` ``[(index, Recording,
    prons, warp)]`` that travel with the batch (Dask: a recording without samples is read from
    its ``source``), aligned by the model at ``model_path`` (None: the worker's shipped model)."""

    indices: list
    settings: object
    want_stats: bool
    entries: Optional[list] = None
    model_path: Optional[str] = None
    words: bool = False


#: ``(model, InProcessRounds)`` of the round a local pool's workers inherit when they fork
_LOCAL_ROUND: Optional[tuple] = None


def _run_batch(batch: _Batch):
    """One batch of a round on a worker (:func:`~aligner.alignment.adaptation.rounds.run_batch`); never raises."""
    from aligner.alignment.adaptation.rounds import BatchResult, failure_message, run_batch

    if batch.entries is None:
        model, here = _LOCAL_ROUND
        entries = here.entries(batch.indices)
    else:
        from aligner.alignment.corpus import _corpus_worker_init, worker_model

        try:  # the round's model, loaded once per worker process and path, as align-corpus's workers do
            _corpus_worker_init(batch.model_path, 1, None, batch.words)
        except Exception as exc:
            return BatchResult(None, [], f"the round's model could not be loaded: {failure_message(exc)}")
        model, entries = worker_model(), batch.entries
    return run_batch(model, entries, batch.settings, batch.want_stats)


def _split(durations, n_batches: int) -> list:
    """Consecutive index ranges of about equal total duration, ``n_batches`` of them at most (in
    the recordings' order, so that each batch sums its statistics in the order one process would)."""
    total = float(sum(durations)) or 1.0
    batches, current, acc = [], [], 0.0
    for i, d in enumerate(durations):
        current.append(i)
        acc += d
        if acc >= total * (len(batches) + 1) / n_batches and len(batches) < n_batches - 1:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


class PoolRounds:
    """Each round's recordings on worker processes, as ``align-corpus`` runs its files
    (:func:`aligner.runtime.distributed.open_pool`), cut into :data:`BATCHES_PER_WORKER` batches
    per worker (of :data:`MIN_BATCH_SECONDS` of audio at least), each summing its own statistics
    (:func:`_run_batch`):

    * ``engine="local"``: a :class:`~aligner.runtime.batch.WorkerPool` of ``jobs`` processes
      forked for each round, inheriting the round's model and the recordings (only indices and
      the batches' answers are pickled); the decoders are warmed here first;
    * ``engine="dask"``: one :class:`~aligner.runtime.distributed.DaskPool` for every round, its
      workers set up as ``align-corpus``'s (:func:`aligner.alignment.corpus._corpus_worker_init`):
      each loads the round's model from a path (the base's directory, then a bundle written for
      each later round under ``work_dir``) and reads the recordings from their ``source`` files.

    A batch lost (its worker died twice, or Dask gave up on it) or broken is run again one
    recording per batch, and a recording lost on its own is left out of the round with the
    reason (:func:`~aligner.alignment.adaptation.rounds.gather_round`).
    """

    def __init__(self, recordings, prons_of, warps, engine: str, scheduler, jobs: int, base, work_dir=None,
                 front_end=None):
        from aligner.alignment.adaptation.rounds import InProcessRounds

        # the recordings, as the workers see them (through the adapted model's front end)
        self.here = InProcessRounds(recordings, prons_of, warps, front_end=front_end)
        self.engine, self.scheduler, self.base, self.work_dir = engine, scheduler, base, work_dir
        self.jobs = max(1, min(int(jobs), len(recordings)))
        self.words = any(r.kind == "words" for r in recordings)
        self.pool, self.folder, self._warm = None, None, False

    def __enter__(self) -> "PoolRounds":
        if self.engine != "dask":
            return self
        import tempfile

        from aligner.alignment.corpus import _corpus_worker_init
        from aligner.runtime.distributed import absolute_paths, dask_path, open_pool

        if self.work_dir is None:
            self.folder = Path(tempfile.mkdtemp(prefix="aligner-adapt-"))
        else:
            self.folder = Path(self.work_dir) / f".aligner-adapt-rounds-{os.getpid()}-{time.time_ns()}"
            self.folder.mkdir(parents=True)
        self.base_path = None if self.base is None else dask_path(self.base)  # None: each worker's shipped model
        self.entries, self.given = [], []
        for i, rec, prons, warp in self.here.entries(range(len(self.here.recordings))):
            if rec.source is not None:  # the worker reads the samples itself
                self.given.append(absolute_paths([rec.source[0]]))
                rec = replace(rec, samples=None, source=(dask_path(rec.source[0]),) + tuple(rec.source[1:]))
            else:
                self.given.append(None)
            self.entries.append((i, rec, prons, warp))
        try:
            self.pool = open_pool("dask", self.scheduler, self.jobs, _corpus_worker_init,
                                  (self.base_path, 1, None, self.words)).__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type=None, exc=None, tb=None) -> None:
        try:
            if self.pool is not None:
                self.pool.__exit__(exc_type, exc, tb)
                self.pool = None
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
                self.folder = None

    def frames(self, i: int):
        return self.here.frames(i)

    def run(self, rnd: int, model: AlignmentModel, settings, want_stats: bool, file_progress=None) -> tuple:
        """As :meth:`~aligner.alignment.adaptation.rounds.InProcessRounds.run`; ``file_progress`` is told
        of each recording when its batch is done."""
        global _LOCAL_ROUND
        from aligner.alignment.adaptation.rounds import BatchResult, OutputLayerStats, gather_round
        from aligner.runtime.distributed import as_given, open_pool

        n, done = len(self.here.recordings), [0]

        def tick():
            done[0] += 1
            if file_progress is not None:
                file_progress(rnd, done[0], n)

        def lost(batch, why):
            return BatchResult(None, [], why)

        stats = OutputLayerStats.for_classifier(model.classifier) if want_stats else None
        if self.engine == "dask":
            path = self._publish(rnd, model)
            workers = max(1, sum(self.pool.client.nthreads().values()))

            def run(batches):
                return self.pool.map(_run_batch, [_Batch(ix, settings, want_stats, [self.entries[i] for i in ix],
                                                         path, self.words) for ix in batches], lost)

            batches = _batches(self.here.recordings, workers)
            return stats, gather_round(batches, run, n, stats, tick, lambda i, why: as_given(why, self.given[i]))
        if not self._warm:  # the decoders compiled and the modules imported here once: the workers inherit them
            from aligner.alignment.adaptation.rounds import run_batch
            from aligner.alignment.pipeline import warm_up, warm_up_words

            warm_up(model)
            if self.words:
                warm_up_words(model)
            shortest = min(range(n), key=lambda i: self.here.recordings[i].duration_s)
            run_batch(model, self.here.entries([shortest]), settings, want_stats)  # its answer is not used
            self._warm = True
        batches = _batches(self.here.recordings, self.jobs)
        _LOCAL_ROUND = (model, self.here)
        try:
            with open_pool("local", None, self.jobs, None, (), chunksize=1) as pool:
                files = gather_round(batches, lambda bs: pool.map(_run_batch, [_Batch(ix, settings, want_stats)
                                                                              for ix in bs], lost),
                                     n, stats, tick)
        finally:
            _LOCAL_ROUND = None
        return stats, files

    def _publish(self, rnd: int, model: AlignmentModel):
        """The path Dask workers load round ``rnd``'s model from: the base's, then a bundle
        written for the round (the previous round's removed)."""
        from aligner.runtime.distributed import dask_path

        if rnd == 1:
            return self.base_path
        shutil.rmtree(self.folder / f"round-{rnd - 1}", ignore_errors=True)
        model.save(self.folder / f"round-{rnd}")
        return dask_path(self.folder / f"round-{rnd}")
