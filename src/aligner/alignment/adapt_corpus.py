"""A corpus through ``aligner adapt``: read it, adapt the model on it, write the bundle.

:func:`adapt_corpus` reads any corpus ``align-corpus`` reads (Montreal Forced Aligner's layout
with ``.lab``/``.txt``/TextGrid words, or phone symbols, TIMIT's ``.phn`` with their times
ignored; speakers from folders), and optional hand-aligned reference TextGrids of some of its
files (same relative path or same stem, a ``phones`` tier), turns each recording (each
interval of a TextGrid transcript) into an :class:`~aligner.alignment.adaptation.Recording`,
and runs :func:`~aligner.alignment.adaptation.adapt_model` on them. The adapted model is saved
as a bundle like the shipped one, written beside MODEL_OUT and renamed into place at the end
(an interrupted run leaves no partial bundle), recording its base model, the corpus and each
round's report. With ``output_dir``, the corpus is then aligned with the adapted model
(:func:`aligner.alignment.corpus.align_corpus`).

Bad input is refused before any work with a one-line error naming the file: no transcripts,
too little speech (:data:`MIN_ADAPT_SECONDS`), a reference with unknown phones, running past
its audio or overlapping, MODEL_OUT inside the corpus or equal to the base, a damaged base.
Unreadable recordings and transcripts are listed in the report and the others are used.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from aligner.alignment.corpus import CORPUS_TRANSCRIPTS, CorpusReport, align_corpus
from aligner.alignment.model import AlignmentModel
from aligner.alignment.pipeline import TIER_OVERRUN_TOLERANCE, _pronunciations, load_dictionary, load_model
from aligner.errors import AlignerError, ModelError, TranscriptError
from aligner.frames import SAMPLE_RATE
from aligner.io.bundles import ALIGNMENT_KIND, MANIFEST, default_model_dir
from aligner.io.corpus import find_utterances

#: the least speech (seconds, over the recordings that can be used) a corpus needs to adapt on:
#: below it a refit would follow a handful of phones
MIN_ADAPT_SECONDS = 20.0
#: recordings (or TextGrid intervals) shorter than this (samples: 100 ms) are left out
MIN_RECORDING_SAMPLES = SAMPLE_RATE // 10
#: the reference TextGrid tier holding hand-aligned phones (else the first interval tier)
REFERENCE_TIER = "phones"
#: a reference TextGrid may end this far past its recording (seconds) before it is refused
REFERENCE_OVERRUN_S = TIER_OVERRUN_TOLERANCE


@dataclass
class AdaptReport:
    """What :func:`adapt_corpus` did."""

    model_dir: Path  #: the bundle written
    rounds: list = field(default_factory=list)  #: :class:`~aligner.alignment.adaptation.RoundReport` per round
    recordings: int = 0  #: recordings (TextGrid intervals count one each) given to the adaptation
    references: int = 0  #: of those, with hand-aligned reference phones
    speakers: int = 0
    audio_seconds: float = 0.0
    failed: list = field(default_factory=list)  #: (path, message): recordings that could not be read
    oovs: dict = field(default_factory=dict)  #: unknown word -> pronunciation the G2P gave it
    seconds: float = 0.0  #: wall time of the whole run, alignment of ``output_dir`` excluded
    alignment: Optional[CorpusReport] = None  #: the final alignment of the corpus (``output_dir``)


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


def read_reference(path: Path, duration_s: float) -> list:
    """Hand-aligned phones ``[(start_s, end_s, symbol), ...]`` of a reference TextGrid covering a
    recording of ``duration_s`` seconds: its ``phones`` tier (or its first interval tier), blank
    intervals read as silence of the phones' own set. One-line :class:`TranscriptError` naming
    the file for a missing tier, no phones, overlapping intervals, intervals past the audio or
    a symbol of no phone set."""
    from aligner.io.textgrids import interval_tier, load_textgrid, tier_names
    from aligner.phonetics import detect_phone_set

    grid = load_textgrid(path)
    names = tier_names(grid, interval=True)
    if not names:
        raise TranscriptError(f"{path}: no interval tier with reference phones")
    tier = REFERENCE_TIER if REFERENCE_TIER in names else names[0]
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
    try:
        pset = detect_phone_set([lab for _, _, lab in labelled], source=str(path))
    except TranscriptError as exc:
        msg = str(exc)
        raise TranscriptError(msg if str(path) in msg else f"{path}: {msg}") from None
    silence = next((s for s in ("sil", "pau", "h#") if s in pset.symbols), labelled[0][2])
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
                    progress: Optional[Callable[[int, int], None]] = None) -> tuple:
    """``(recordings, failed, oovs)`` of a corpus: one :class:`~aligner.alignment.adaptation.Recording`
    per audio file with a transcript beside it (per non-empty interval of a TextGrid
    transcript), its speaker from its folder; ``failed`` lists ``(path, message)`` of files that
    could not be read. Reference TextGrids under ``references`` replace the decoded boundaries
    of their recordings; a bad reference raises (it was asked for)."""
    from aligner.alignment.adaptation import Recording
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
            reference = None if ref_path is None else read_reference(ref_path, duration)
            if transcript_kind(utt.transcript, kind) == "phones":
                symbols, pset = read_transcript(utt.transcript)
                recordings.append(Recording(samples, list(symbols), utt.speaker, str(utt.audio), "phones", pset.name,
                                            reference))
            else:
                if words_dict is None:
                    words_dict = load_dictionary(dictionary)
                segments = read_word_segments(utt.transcript)
                for seg in segments:
                    start = 0.0 if seg.start_s is None else seg.start_s
                    end = duration if seg.end_s is None else min(seg.end_s, duration)
                    if seg.end_s is not None and seg.end_s > duration + TIER_OVERRUN_TOLERANCE:
                        raise TranscriptError(f"{utt.transcript}: the interval {start:.3f}-{seg.end_s:.3f} s runs "
                                              f"past the end of {utt.audio} ({duration:.3f} s)")
                    name = str(utt.audio) if seg.start_s is None else f"{utt.audio} [{start:.3f}-{end:.3f} s]"
                    found: dict = {}
                    labels, prons = _pronunciations(normalize_transcript(seg.text, words_dict), words_dict, oov,
                                                    str(utt.transcript), found)
                    oovs.update(found)
                    a, b = int(round(start * SAMPLE_RATE)), int(round(end * SAMPLE_RATE))
                    if b - a < MIN_RECORDING_SAMPLES:
                        raise TranscriptError(f"{name}: {1000 * (b - a) / SAMPLE_RATE:.0f} ms is too short to align")
                    seg_ref = reference if seg.start_s is None else None  # a reference covers the whole file
                    speaker = utt.speaker if seg.speaker is None else f"{utt.speaker}/{seg.speaker}"
                    recordings.append(Recording(samples[a:b], labels, speaker, name, "words", "auto", seg_ref,
                                                prons))
        except TranscriptError as exc:
            if references is not None and ref_path is not None and str(ref_path) in str(exc):
                raise  # a bad reference: the user asked for it, so no model is made without it
            failed.append((str(utt.audio), str(exc)))
        except AlignerError as exc:
            failed.append((str(utt.audio), str(exc)))
        if progress:
            progress(i + 1, len(utterances))
    return recordings, failed, oovs


def _base_record(base_ref, base: AlignmentModel) -> dict:
    """What the adapted bundle says of its base model: its folder, when it was made and what it
    was trained (or adapted) on."""
    import json

    path = Path(base_ref) if base_ref is not None else default_model_dir(ALIGNMENT_KIND)
    created = None
    try:
        created = json.loads((path / MANIFEST).read_text(encoding="utf-8")).get("created")
    except (OSError, ValueError):
        pass
    return {"path": str(path.resolve()), "created": created, "shipped": base_ref is None,
            "trained_on": base.training.get("corpus"), "adapted": base.training.get("adapted")}


def save_atomically(model: AlignmentModel, model_out: Path) -> None:
    """Save ``model`` as a bundle at ``model_out``: written to a hidden folder beside it, then
    renamed into place (an existing bundle there is replaced only then). Interrupted (Ctrl-C
    included), it leaves no partial bundle."""
    model_out = Path(model_out)
    model_out.parent.mkdir(parents=True, exist_ok=True)
    partial = model_out.parent / f".{model_out.name}.partial-{os.getpid()}"
    old = model_out.parent / f".{model_out.name}.old-{os.getpid()}"
    try:
        if partial.exists():
            shutil.rmtree(partial)
        model.save(partial)
        if model_out.exists():
            os.replace(model_out, old)
        os.replace(partial, model_out)
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)


def adapt_corpus(corpus_dir, model_out, model=None, dictionary=None, oov: str = "g2p", references=None,
                 rounds: int = 3, kind: str = "auto", output_dir=None, jobs: int = 1, settings=None,
                 progress: Optional[Callable[[str, int, int], None]] = None,
                 message: Optional[Callable[[str], None]] = None) -> AdaptReport:
    """Adapt the alignment model ``model`` (a directory, a loaded model, or None for the shipped
    one) to the corpus at ``corpus_dir`` and save it to ``model_out`` (module docstring).

    ``rounds``: align, re-estimate, repeat. ``references``: a folder of hand-aligned TextGrids
    for some files. ``kind``, ``dictionary``, ``oov``: as for ``align-corpus``. ``settings``: an
    :class:`~aligner.alignment.adaptation.AdaptSettings` (None: the defaults).
    ``progress(stage, done, total)`` after each file read and each file of each round;
    ``message(text)`` with each round's report. ``output_dir``: also align the corpus with the
    adapted model there (``jobs`` worker processes).
    """
    from aligner.alignment.adaptation import adapt_model

    t0 = time.perf_counter()
    corpus_dir, model_out = Path(corpus_dir), Path(model_out)
    if not corpus_dir.is_dir():
        raise AlignerError(f"{corpus_dir}: corpus directory not found")
    if kind not in CORPUS_TRANSCRIPTS:
        raise ValueError(f"kind must be one of {', '.join(CORPUS_TRANSCRIPTS)}, got {kind!r}")
    if int(rounds) < 1:
        raise AlignerError(f"rounds must be at least 1, got {rounds}")
    base_dir = None if isinstance(model, AlignmentModel) else (
        Path(model) if model is not None else default_model_dir(ALIGNMENT_KIND))
    _check_output(model_out, corpus_dir, base_dir)
    if output_dir is not None and _inside(Path(output_dir).resolve(), corpus_dir.resolve()):
        raise AlignerError(f"{output_dir}: the alignments would be written inside the corpus {corpus_dir}; "
                           f"choose an --output-dir outside it")
    try:
        base = load_model(model)
    except ModelError as exc:
        raise ModelError(f"base model: {exc}") from None
    recordings, failed, oovs = read_recordings(
        corpus_dir, kind, dictionary, oov, references,
        None if progress is None else (lambda done, total: progress("reading", done, total)))
    seconds = sum(r.duration_s for r in recordings)
    if not recordings:
        listed = "; ".join(msg for _, msg in failed[:3])
        raise AlignerError(f"{corpus_dir}: no recording could be read ({listed})")
    if seconds < MIN_ADAPT_SECONDS:
        raise AlignerError(f"{corpus_dir}: {seconds:.1f} s of speech with transcripts; adapting needs at least "
                           f"{MIN_ADAPT_SECONDS:.0f} s")
    report = AdaptReport(model_out, recordings=len(recordings), audio_seconds=seconds, failed=failed, oovs=oovs,
                         references=sum(r.reference is not None for r in recordings),
                         speakers=len({r.speaker for r in recordings}))

    def on_round(rnd, _model, round_report):
        if message:
            left = round_report.files_left_out
            conf = round_report.mean_confidence
            moved = (f", {round_report.moved_20ms} of {round_report.boundaries} boundaries moved > 20 ms since "
                     f"round {rnd - 1}" if round_report.boundaries else "")
            message(f"round {rnd}: {round_report.files_used} files used, {len(left)} left out, "
                    f"{round_report.frames} frames, mean confidence {'-' if conf is None else f'{conf:.2f}'}"
                    f"{moved} ({round_report.seconds:.1f} s)")

    file_progress = None if progress is None else (lambda rnd, done, total: progress(f"round {rnd}", done, total))
    try:
        adapted, reports = adapt_model(base, recordings, rounds, settings, on_round=on_round,
                                       file_progress=file_progress)
    except AlignerError as exc:
        raise AlignerError(f"{corpus_dir}: {exc}") from None
    if all(r.files_used == 0 for r in reports):
        raise AlignerError(f"{corpus_dir}: every recording was left out; nothing to adapt on")
    report.rounds = reports
    adapted.training = dict(adapted.training)
    adapted.training["adapted"] = {
        **dict(adapted.training.get("adapted") or {}),
        "base": _base_record(None if model is None or isinstance(model, AlignmentModel) else model, base),
        "corpus": str(corpus_dir.resolve()), "recordings": report.recordings, "references": report.references,
        "speakers": report.speakers, "audio_seconds": round(seconds, 3), "rounds": len(reports),
        "round_reports": [r.to_dict() for r in reports], "failed": len(failed),
    }
    save_atomically(adapted, model_out)
    report.seconds = time.perf_counter() - t0
    if output_dir is not None:
        report.alignment = align_corpus(corpus_dir, output_dir, str(model_out), jobs, kind=kind,
                                        dictionary=dictionary, oov=oov)
    return report
