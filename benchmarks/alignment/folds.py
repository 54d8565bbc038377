"""The speaker-fold models the evaluations read: ``DIR/fold*`` bundles, each recording the
speakers it was tested on (``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``)."""

from __future__ import annotations

import sys
from pathlib import Path


def fold_models(folds_dir: Path):
    """[(model, test speakers)] of ``folds_dir/fold*``."""
    from aligner.alignment.model import AlignmentModel

    out = []
    for d in sorted(Path(folds_dir).glob("fold*")):
        model = AlignmentModel.load(d)
        out.append((model, list(model.training.get("test_speakers", []))))
    if not out or not all(s for _, s in out):
        sys.exit(f"error: {folds_dir}: no fold models with test_speakers "
                 f"(python -m benchmarks.alignment.eval_alignment_cv --save-models {folds_dir})")
    return out
