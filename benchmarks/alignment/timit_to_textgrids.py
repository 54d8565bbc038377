#!/usr/bin/env python
"""Write a TIMIT-layout corpus as MFA-style TextGrids in IPA (or in meaningless names), to
check that `aligner train` on TextGrids of any phone set matches the `.phn` training.

Each ``.phn`` interval becomes one interval of a ``phones`` tier, with the same times:

* phones are written in IPA through ``phonecodes`` (TIMIT ``ix`` -> ``ɨ``, ``dx`` -> ``ɾ``);
* stop closures as the stop with IPA's no-audible-release mark (``bcl`` -> ``b̚``);
* utterance-edge silence, pauses and epenthetic silence (``h#``, ``pau``, ``epi``) as empty
  intervals, as MFA and Praat write silence; the glottal stop ``q`` as ``ʔ``.

With ``--names`` every symbol is replaced by a meaningless name (``p01``, ``p02``, ...) and
``OUT/phone-classes.txt`` gives each name's broad class (from the project's TIMIT table), for
`aligner train --phone-classes`. The audio is linked, not copied.

    python -m benchmarks.alignment.timit_to_textgrids --out runs/timit-ipa
    python -m benchmarks.alignment.eval_alignment_cv --data runs/timit-ipa --phones-tier phones --out runs/cv-ipa
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from aligner.io.corpus import find_utterances
from aligner.io.textgrids import Interval, write_textgrid
from aligner.io.transcripts import read_phn
from aligner.frames import SAMPLE_RATE
from aligner.phones.sets import BROAD_CLASS_OF, TIMIT61_CLOSURES, TIMIT61_TO_39

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"
_SILENT = {"h#": "", "pau": "", "epi": ""}


def timit_to_ipa(symbol: str) -> str:
    """The IPA this converter writes for a TIMIT-61 symbol ('' for silence)."""
    from phonecodes import phonecodes

    if symbol in _SILENT:
        return _SILENT[symbol]
    if symbol in TIMIT61_CLOSURES:
        return phonecodes.convert(symbol[0], "timit", "ipa") + "\u031a"
    if symbol == "q":
        return "ʔ"
    ipa = phonecodes.convert(symbol, "timit", "ipa")
    if not ipa:
        raise ValueError(f"no IPA for TIMIT {symbol!r}")
    return ipa


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--names", action="store_true", help="meaningless names and a phone-classes file")
    args = p.parse_args(argv)
    utterances = find_utterances(args.data)
    if not utterances:
        sys.exit(f"error: {args.data}: no .phn files")
    names: dict = {}
    classes: dict = {}
    for utt in utterances:
        starts, ends, labels = read_phn(utt.transcript)
        written = []
        for s in labels:
            ipa = timit_to_ipa(s)
            if args.names and ipa:
                ipa = names.setdefault(ipa, f"p{len(names) + 1:02d}")
            if ipa:
                broad = "silence" if s in TIMIT61_CLOSURES else BROAD_CLASS_OF[TIMIT61_TO_39[s]]
                classes.setdefault(ipa, broad)
            written.append(ipa)
        phones = [Interval(a / SAMPLE_RATE, b / SAMPLE_RATE, w) for a, b, w in zip(starts, ends, written)]
        tiers = [("phones", phones)]
        out = args.out / Path(utt.name)
        out.parent.mkdir(parents=True, exist_ok=True)
        link = out.with_suffix(utt.audio.suffix)
        if not link.exists():
            os.symlink(utt.audio.resolve(), link)
        # the grid ends with the last .phn interval: audio after it belongs to no phone there, as in
        # the .phn (training gives it to the last phone either way); a filler interval would add a
        # silence-to-silence boundary the .phn does not have
        write_textgrid(out.with_suffix(".TextGrid"), tiers, phones[-1].end_s)
    if args.names:
        lines = [f"{name}\t{classes[name]}" for name in sorted(classes)]
        (args.out / "phone-classes.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(utterances)} TextGrids ({len(classes)} symbols) to {args.out}")


if __name__ == "__main__":
    main()
