"""Finding utterances in a corpus directory: audio files with a ``.phn`` transcript beside them.

Two TIMIT layouts are read the same way:

* the shared sample: ``<dr>-<speaker>/<utt>.wav|phn``;
* the LDC release: ``TRAIN|TEST/DR1..8/<SPEAKER>/<UTT>.WAV|PHN`` (upper or lower case).

The speaker of an utterance is the name of the folder that holds it (lower-cased, with a
``dr<N>-`` prefix removed), and its ``part`` is ``train`` or ``test`` when a folder of that
name lies on its path (else ``""``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from aligner.io.audio import is_audio_path

_DIALECT_PREFIX = re.compile(r"^dr\d+-")


@dataclass(frozen=True)
class Utterance:
    """One recording and its transcript. ``name`` is the audio path relative to the corpus, no suffix."""

    audio: Path
    transcript: Path
    name: str
    speaker: str
    part: str = ""

    @property
    def utterance_id(self) -> str:
        """The file stem, lower case (``sa1``, ``si1466``)."""
        return Path(self.name).name.lower()


def speaker_of(path: Path) -> str:
    """Speaker id of a recording: its folder's name, lower-cased, without a ``dr<N>-`` prefix."""
    return _DIALECT_PREFIX.sub("", path.parent.name.lower())


def transcript_beside(audio: Path, suffixes: tuple) -> Path | None:
    """The first file ``audio.<suffix>`` that exists, for ``suffixes`` in order; the suffix as
    given, in upper case, or as Praat writes it (``.TextGrid``)."""
    for suffix in suffixes:
        spellings = dict.fromkeys((suffix, suffix.upper(), ".TextGrid" if suffix.lower() == ".textgrid" else suffix))
        for candidate in (audio.with_suffix(s) for s in spellings):
            if candidate.is_file():
                return candidate
    return None


def find_utterances(root: str | os.PathLike, transcript_suffixes=(".phn",)) -> list[Utterance]:
    """Every audio file under ``root`` (recursive, sorted) that has a transcript of the same stem beside it.

    Audio files without a transcript are skipped; use :func:`find_audio_files` to list them all.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: corpus directory not found")
    found = []
    for audio in find_audio_files(root):
        transcript = transcript_beside(audio, transcript_suffixes)
        if transcript is None:
            continue
        rel = audio.relative_to(root)
        parts = {p.lower() for p in rel.parts[:-1]}
        part = "train" if "train" in parts else "test" if "test" in parts else ""
        found.append(Utterance(audio, transcript, str(rel.with_suffix("")), speaker_of(audio), part))
    return found


def files_under(root: str | os.PathLike) -> list[Path]:
    """Every file under ``root``, recursively, in sorted order, as paths below ``root``.

    Symbolic links to directories are followed (a corpus assembled from links to speaker
    folders is common; ``Path.rglob`` skips them before Python 3.13), each real directory
    once, so a link cycle ends.
    """
    root = Path(root)
    seen, out = set(), []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        out.extend(Path(dirpath) / f for f in filenames)
    return sorted(p for p in out if p.is_file())


def files_by_stem(root: str | os.PathLike, suffixes: tuple, files: list | None = None) -> dict:
    """'relative path without suffix' (lower case) -> file, for the files under ``root`` whose
    suffix (any case) is one of ``suffixes``; of two with the same stem, the one whose suffix
    comes first in ``suffixes`` wins. ``files``: the result of :func:`files_under` ``(root)``,
    when the caller has it already."""
    root = Path(root)
    out: dict = {}
    for p in files_under(root) if files is None else files:
        suffix = p.suffix.lower()
        if suffix in suffixes:
            key = str(p.relative_to(root).with_suffix("")).lower()
            if key not in out or suffixes.index(suffix) < suffixes.index(out[key].suffix.lower()):
                out[key] = p
    return out


def find_audio_files(root: str | os.PathLike) -> list[Path]:
    """Every audio file (by extension, any case) under ``root``, recursively, in sorted order
    (directory links followed: :func:`files_under`)."""
    return [p for p in files_under(root) if is_audio_path(p)]


def speaker_folds(utterances: Iterable[Utterance | str], n_folds: int) -> list[list[str]]:
    """Split the sorted speakers into ``n_folds`` groups (round robin), for speaker-disjoint folds.

    ``utterances``: :class:`Utterance` objects or speaker names (repeats count once).
    """
    speakers = sorted({u if isinstance(u, str) else u.speaker for u in utterances})
    if n_folds < 2 or n_folds > len(speakers):
        raise ValueError(f"need 2 <= n_folds <= {len(speakers)} speakers, got {n_folds}")
    return [speakers[i::n_folds] for i in range(n_folds)]


# --------------------------------------------------------------------------------------
# the standard splits of the full TIMIT release
# --------------------------------------------------------------------------------------

#: The TIMIT core test set (TIMIT documentation, ``TESTSET.DOC``): 24 speakers of the TEST part,
#: two male and one female from each dialect region DR1-DR8; 192 utterances without SA1/SA2.
CORE_TEST_SPEAKERS = {
    "dr1": ("mdab0", "mwbt0", "felc0"),
    "dr2": ("mtas1", "mwew0", "fpas0"),
    "dr3": ("mjmp0", "mlnt0", "fpkt0"),
    "dr4": ("mlll0", "mtls0", "fjlm0"),
    "dr5": ("mbpm0", "mklt0", "fnlp0"),
    "dr6": ("mcmj0", "mjdh0", "fmgd0"),
    "dr7": ("mgrt0", "mnjm0", "fdhc0"),
    "dr8": ("mjln0", "mpam0", "fmld0"),
}
CORE_TEST_SPEAKER_SET = frozenset(s for speakers in CORE_TEST_SPEAKERS.values() for s in speakers)

#: Speakers of the weight-validation part and of the classifier part of TRAIN. The orbit paper
#: (sec. 6.2) divides TIMIT TRAIN without SA1/SA2 (462 speakers, 3696 utterances) into 1500
#: utterances for the frame classifier, 1796 for the weights and 400 for validation; in whole
#: speakers (8 utterances each) that is 188 / 224 / 50 speakers (1504 / 1792 / 400 utterances).
TIMIT_VALIDATION_SPEAKERS = 50
TIMIT_CLASSIFIER_SPEAKERS = 188

_DIALECT_FOLDER = re.compile(r"^dr(\d+)(?:-|$)")


def dialect_region(utt: Utterance) -> str:
    """``dr1`` .. ``dr8`` from the utterance's path (a ``DR<N>`` or ``dr<N>-<speaker>`` folder), else ``""``."""
    for part in Path(utt.name).parts[:-1]:
        m = _DIALECT_FOLDER.match(part.lower())
        if m:
            return f"dr{int(m.group(1))}"
    return ""


def is_sa_sentence(utt: Utterance) -> bool:
    """Whether the utterance is one of the dialect sentences SA1/SA2 (read by every speaker)."""
    return utt.utterance_id.startswith("sa")


def is_full_timit_layout(utterances: list[Utterance]) -> bool:
    """Whether the utterances come from an LDC-style tree with TRAIN and TEST parts."""
    parts = {u.part for u in utterances}
    return "train" in parts and "test" in parts


def _evenly_spaced(items: list, n: int) -> list:
    """``n`` items spread evenly over ``items`` (sorted by dialect region, so stratified)."""
    if n <= 0:
        return []
    if n > len(items):
        raise ValueError(f"cannot take {n} of {len(items)} speakers")
    return [items[int((j + 0.5) * len(items) / n)] for j in range(n)]


def timit_standard_split(
    utterances: list[Utterance],
    include_sa: bool = False,
    test_set: str = "core",
    n_validation_speakers: int = TIMIT_VALIDATION_SPEAKERS,
    n_classifier_speakers: int = TIMIT_CLASSIFIER_SPEAKERS,
) -> dict:
    """Speaker-disjoint parts of a full TIMIT tree: ``{"classifier", "weights", "validation", "test"}``.

    * ``test``: the core test set's speakers (:data:`CORE_TEST_SPEAKERS`), or with
      ``test_set="complete"`` every TEST speaker (the DLM paper's 1344 utterances);
    * ``validation``, ``classifier``: ``n_validation_speakers`` and then ``n_classifier_speakers``
      TRAIN speakers, evenly spaced in (dialect region, speaker) order so every region is
      represented; ``weights``: the remaining TRAIN speakers.

    SA1/SA2 are dropped unless ``include_sa``. Each part is a list of :class:`Utterance` in
    corpus order. Raises ``ValueError`` when the tree has no TRAIN or TEST part, or too few
    TRAIN speakers for the requested parts.
    """
    if test_set not in ("core", "complete"):
        raise ValueError(f"test_set must be 'core' or 'complete', got {test_set!r}")
    kept = [u for u in utterances if include_sa or not is_sa_sentence(u)]
    train = [u for u in kept if u.part == "train"]
    test_all = [u for u in kept if u.part == "test"]
    if not train or not test_all:
        raise ValueError("a full TIMIT tree needs utterances under both TRAIN and TEST "
                         f"(found {len(train)} and {len(test_all)})")
    if test_set == "core":
        test = [u for u in test_all if u.speaker in CORE_TEST_SPEAKER_SET]
        if not test:
            raise ValueError("none of the 24 core test speakers is under TEST")
    else:
        test = test_all
    region = {u.speaker: dialect_region(u) for u in train}
    speakers = sorted(region, key=lambda s: (region[s], s))
    if n_validation_speakers + n_classifier_speakers >= len(speakers):
        raise ValueError(f"TRAIN has {len(speakers)} speakers: too few for {n_validation_speakers} "
                         f"validation and {n_classifier_speakers} classifier speakers plus weight training")
    validation = set(_evenly_spaced(speakers, n_validation_speakers))
    rest = [s for s in speakers if s not in validation]
    classifier = set(_evenly_spaced(rest, n_classifier_speakers))
    return {
        "classifier": [u for u in train if u.speaker in classifier],
        "weights": [u for u in train if u.speaker not in classifier and u.speaker not in validation],
        "validation": [u for u in train if u.speaker in validation],
        "test": test,
    }
