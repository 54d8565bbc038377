#!/usr/bin/env python
"""Where the energy rises relative to the manual vowel onset, per speaker of the peer's split.

Model-free check behind the onset errors of ``bench_vowels_peer.py``: in every file of
``../shared/data/vowel-tutorial`` (train and test lists), find, within 10 frames (50 ms) of
the manual onset, the first frame whose short-term energy (column 0, z-scored per file by
the peer's front end) exceeds each of ``--levels`` (default 0.5 and 1.0; the closure before
the vowel sits near -0.3), and the frame of the largest one-frame rise. Both are printed relative to the
manual onset frame (negative: the energy rises before the annotated onset), per file and as
means for the training speaker (C01, 20 files) and the nine other test speakers.

    python scripts/peer_onset_shift.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligner.features.avd import read_avd_example, read_avd_list  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "vowel-tutorial"


def rise_frames(feats: np.ndarray, onset: int, level: float, reach: int = 10) -> tuple[int, int]:
    """(first frame above ``level``, frame of the largest one-frame rise) minus ``onset``."""
    e = np.nan_to_num(feats[:, 0])
    lo, hi = max(onset - reach, 1), min(onset + reach, len(e) - 1)
    above = np.flatnonzero(e[lo:hi + 1] > level)
    first = int(lo + above[0] - onset) if above.size else reach + 1
    jump = int(lo + np.argmax(e[lo:hi + 1] - e[lo - 1:hi]) - onset)
    return first, jump


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--levels", type=float, nargs="+", default=[0.5, 1.0],
                    help="z-scored energy levels of 'risen'")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        sys.exit(f"vowel-tutorial data not found at {args.data} (pass --data)")
    groups = {"training speaker (train.txt)": [], "training speaker (test.txt)": [], "other speakers (test.txt)": []}
    lv = " | ".join(f"energy above {v:g}" for v in args.levels)
    print(f"| file | list | {lv} | largest rise |\n|---|---|" + "---|" * (len(args.levels) + 1))
    for lst in ("train.txt", "test.txt"):
        for data, labels in read_avd_list(args.data / lst):
            feats, y = read_avd_example(data, labels)
            found = [rise_frames(feats, int(y[0]), level) for level in args.levels]
            row = [first for first, _ in found] + [found[0][1]]
            own = Path(data).stem.startswith("C01")
            key = ("training speaker" if own else "other speakers") + f" ({lst})"
            groups[key].append(row)
            print(f"| {Path(data).stem} | {lst} | " + " | ".join(f"{v:+d}" for v in row) + " |")
    print("\nMeans, frames relative to the manual onset (5 ms each):")
    for key, v in groups.items():
        if v:
            a = np.array(v, dtype=float)
            above = ", ".join(f"above {lev:g}: {m:+.2f}" for lev, m in zip(args.levels, a[:, :-1].mean(0)))
            print(f"- {key}, {len(v)} files: energy {above}; largest rise {a[:, -1].mean():+.2f}")


if __name__ == "__main__":
    main()
