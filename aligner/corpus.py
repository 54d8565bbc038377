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

from .audio import is_audio_path

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


def _transcript_beside(audio: Path, suffixes: tuple) -> Path | None:
    for suffix in suffixes:
        for candidate in (audio.with_suffix(suffix), audio.with_suffix(suffix.upper())):
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
        transcript = _transcript_beside(audio, transcript_suffixes)
        if transcript is None:
            continue
        rel = audio.relative_to(root)
        parts = {p.lower() for p in rel.parts[:-1]}
        part = "train" if "train" in parts else "test" if "test" in parts else ""
        found.append(Utterance(audio, transcript, str(rel.with_suffix("")), speaker_of(audio), part))
    return found


def find_audio_files(root: str | os.PathLike) -> list[Path]:
    """Every audio file (by extension, any case) under ``root``, recursively, in sorted order."""
    root = Path(root)
    return sorted(p for p in root.rglob("*") if p.is_file() and is_audio_path(p))


def speaker_folds(utterances: list[Utterance], n_folds: int) -> list[list[str]]:
    """Split the sorted speakers into ``n_folds`` groups (round robin), for speaker-disjoint folds."""
    speakers = sorted({u.speaker for u in utterances})
    if n_folds < 2 or n_folds > len(speakers):
        raise ValueError(f"need 2 <= n_folds <= {len(speakers)} speakers, got {n_folds}")
    return [speakers[i::n_folds] for i in range(n_folds)]
