#!/usr/bin/env python
"""Give a universal model a boundary detector, or a new one: trained on a TextGrid corpus, the rest kept.

``python recipes/universal/boundary_detector.py CORPUS MODEL OUT``: reads every recording of
``CORPUS`` (hand-aligned TextGrids, as ``aligner train --universal`` reads them, with the same
VTLP copies), fits :func:`aligner.alignment.universal_training.fit_boundary_detector` with
:class:`~aligner.alignment.universal_training.UniversalSettings`' defaults (or ``--units``,
``--weight``), and saves ``MODEL`` with it as ``OUT``. The detector reads frames alone, so the
files of ``MODEL`` are copied unchanged (``boundary_detector.npz`` added, the manifest's record updated;
:func:`aligner.io.bundles.add_to_bundle`);
``aligner train --universal`` fits the same detector as its last step.

    python -m benchmarks.languages.corpus runs/universal-corpus
    python recipes/universal/boundary_detector.py runs/universal-corpus models/universal OUT
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", type=Path, help="hand-aligned TextGrid corpus (one folder per language)")
    p.add_argument("model", type=Path, help="universal model bundle")
    p.add_argument("out", type=Path, help="where the model with its detector is saved (a new folder, or MODEL)")
    p.add_argument("--units", type=int, default=None, help="ReLU units (default: UniversalSettings.boundary_units)")
    p.add_argument("--weight", type=float, default=None,
                   help="each boundary's score gains this times the log-odds "
                        "(default: UniversalSettings.boundary_weight)")
    args = p.parse_args(argv)

    import shutil

    from aligner.alignment.universal import UniversalModel
    from aligner.alignment.universal_training import UniversalSettings, fit_boundary_detector, read_universal_corpus
    from aligner.io.bundles import UNIVERSAL_KIND, add_to_bundle

    settings = UniversalSettings(**{k: v for k, v in (("boundary_units", args.units),
                                                      ("boundary_weight", args.weight)) if v is not None})
    if settings.boundary_units is None:
        print("boundary_units is None: nothing to fit", file=sys.stderr)
        return 2
    UniversalModel.load(args.model)  # a usable universal model, before the corpus is read
    in_place = args.out.resolve() == args.model.resolve()
    if not in_place and args.out.exists():
        print(f"{args.out} exists: give a new folder, or MODEL itself", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    failed: list = []
    data = read_universal_corpus(args.corpus, warps=settings.warps, failed=failed)
    for utt, message in failed:
        print(f"left out {utt.name}: {message}", file=sys.stderr)
    detector = fit_boundary_detector(data, settings)
    if not in_place:
        shutil.copytree(args.model, args.out)
    add_to_bundle(args.out, UNIVERSAL_KIND, {"boundary_detector": detector.to_arrays()}, {"boundary_detector": {
        "corpus": str(args.corpus), "recordings": len(data), "units": detector.hidden, "weight": detector.weight,
        "epochs": detector.epochs_, "held_out_log_loss": [round(v, 5) for v in detector.history_],
        "seconds": round(time.perf_counter() - t0, 1)}})
    UniversalModel.load(args.out)  # loads, the detector checked against the scorer's frames
    print(f"{args.out}: a boundary detector of {detector.hidden} units trained on {len(data)} recordings "
          f"for {detector.epochs_} epochs ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
