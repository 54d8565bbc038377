"""Small corpora the vowel benchmarks build from the shared sample: links to its recordings, each
with one transcript beside it."""

from __future__ import annotations

import shutil
from pathlib import Path


def transcript_corpus(wavs, root: Path, phones: bool) -> None:
    """A corpus under ``root`` (one folder per speaker) of links to ``wavs`` with a copy of each
    one's ``.phn`` (``phones``) or ``.txt`` transcript beside it (a ``.phn`` beside a ``.txt``
    would be taken as the transcript, so only one is copied)."""
    for w in wavs:
        d = root / w.parent.name
        d.mkdir(exist_ok=True)
        (d / w.name).symlink_to(w.resolve())
        src = w.with_suffix(".phn" if phones else ".txt")
        shutil.copy(src, d / src.name)
