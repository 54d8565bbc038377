#!/usr/bin/env python
"""Synthetic rhotic and non-rhotic readings of the TIMIT sample's sentences (espeak-ng).

Development material for ``--dialect``: no non-rhotic recordings ship with the project, so each
distinct sentence of the sample's ``.txt`` files is read by espeak-ng (a formant synthesiser,
not a recording: its /r/ and vowels are rule-made and its timing robotic) with an RP British
voice (``en-gb-x-rp``: non-rhotic, ``offer`` ˈɒfɐ, ``north`` nˈɔːθ) and an American one
(``en-us``: rhotic, ˈɔfɚ, nˈɔːɹθ), each with the voice variants of ``--variants``. Writes
``OUT/<voice>/<n>-<variant>.wav`` and ``.txt`` beside it (the sentence), for::

    python -m benchmarks.words.synth_dialect_readings OUT [--variants m1 f2] [--limit N]
    python -m benchmarks.words.eval_dialect --audio-dir OUT/en-gb-x-rp --dialects auto
    python -m benchmarks.words.eval_dialect --audio-dir OUT/en-us --dialects auto

Needs the ``espeak-ng`` program (Debian: ``apt-get install espeak-ng``); not a dependency of
aligner. Nothing written here is committed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.words.bench_words import DEFAULT_DATA, find_utterances

#: espeak-ng voices: non-rhotic RP and rhotic American English
VOICES = ("en-gb-x-rp", "en-us")


def sentences(data: Path) -> list[str]:
    """The distinct sentences of the sample's ``.txt`` files (``start end sentence``), in order."""
    out: dict = {}
    for utt in find_utterances(data):
        parts = utt.txt.read_text(encoding="utf-8").split(maxsplit=2)
        text = parts[2].strip() if len(parts) == 3 else ""
        if text:
            out.setdefault(text, None)
    return list(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder to write OUT/<voice>/<n>-<variant>.wav and .txt")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout folder (default: %(default)s)")
    ap.add_argument("--variants", nargs="+", default=["m1", "f2"],
                    help="espeak-ng voice variants (default: %(default)s)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    args = ap.parse_args(argv)
    exe = shutil.which("espeak-ng")
    if exe is None:
        print("espeak-ng not found (Debian: apt-get install espeak-ng)", file=sys.stderr)
        return 1
    texts = sentences(args.data)[: args.limit] if args.limit else sentences(args.data)
    for voice in VOICES:
        folder = args.out / voice
        folder.mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(texts):
            for variant in args.variants:
                stem = folder / f"{i:03d}-{variant}"
                subprocess.run([exe, "-v", f"{voice}+{variant}", "-w", str(stem.with_suffix(".wav")), text],
                               check=True, capture_output=True)
                stem.with_suffix(".txt").write_text(text + "\n", encoding="utf-8")
    print(f"{len(texts)} sentences x {len(args.variants)} variants x {len(VOICES)} voices under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
