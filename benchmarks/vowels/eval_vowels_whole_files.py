#!/usr/bin/env python
"""End-to-end check on the peer's two whole recordings (``vowel-tutorial/wav/ex_bad.wav``, ``ex_bag.wav``).

Each file is measured as a user would: ``aligner vowels FILE`` with the whole file (2.2 s) as the
search window. The reference is the one non-empty interval of the TextGrid's ``word`` tier (the
manually marked vowel). Prints our onset, offset and duration errors in ms.

    python -m benchmarks.vowels.eval_vowels_whole_files [--data ../shared/data/vowel-tutorial] [--model DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aligner import api
from aligner.io.textgrids import read_interval_tier

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "vowel-tutorial"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--model", type=Path)
    args = ap.parse_args(argv)
    wavs = [args.data / "wav" / f"ex_{w}.wav" for w in ("bad", "bag")]
    missing = [w for w in wavs if not w.is_file()]
    if missing:
        sys.exit(f"not found: {', '.join(map(str, missing))} (pass --data)")
    report = api.measure_vowels(wavs, model=args.model)
    for name, message in report.failed:
        print(f"failed: {message}")
    print(f"{'file':<10} {'manual on-off (s)':>18} {'ours on-off (s)':>18} {'onset err':>10} {'offset err':>11} "
          f"{'dur err':>8}")
    for rec in report.records:
        ref = [iv for iv in read_interval_tier(Path(rec.file).with_suffix(".TextGrid"), "word") if iv[2].strip()][0]
        on_err, off_err = (rec.onset_s - ref[0]) * 1000, (rec.offset_s - ref[1]) * 1000
        print(f"{Path(rec.file).stem:<10} {ref[0]:>8.3f}-{ref[1]:<9.3f} {rec.onset_s:>8.3f}-{rec.offset_s:<9.3f} "
              f"{on_err:>+8.1f}ms {off_err:>+9.1f}ms {off_err - on_err:>+6.1f}ms")


if __name__ == "__main__":
    main()
