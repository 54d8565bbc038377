#!/usr/bin/env python
"""Recipe: a faster alignment model, its frame classifier distilled into a narrower network.

    python recipes/distil/distil.py MODEL CORPUS OUT [--hidden 256] [--augment default|none|RECIPE.json]
    python recipes/distil/distil.py runs/folds ../shared/data/timit-sample runs/folds-student   # fold models
    python recipes/distil/distil.py models/timit-alignment ../shared/data/timit-sample OUT \\
        --entropy-gate-folds runs/folds-student

MODEL is an alignment bundle, or a folder of speaker-fold bundles (``fold0``, ``fold1``, ... as
``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR`` writes them), each
distilled on its own training speakers (every speaker of CORPUS but its ``test_speakers``). The
student (:func:`aligner.alignment.distillation.distil_model`) learns from the recordings, their
VTLP copies and, by default, two degraded copies each of the multi-condition recipe
(``--augment none``: clean only). Everything else of the bundle is kept.

``--entropy-gate-folds DIR``: set the model's entropy gate again, from the clean recordings of
CORPUS scored by the (distilled) fold models of DIR that never heard their speakers, as
``benchmarks.alignment.fit_condition_expert`` sets it: the mean posterior entropy that the
model's false-alarm share (:data:`aligner.alignment.conditions.DEFAULT_FALSE_ALARM`) of them
exceed. The distilled scores are not the teacher's, so the gate that sent a tenth of clean
recordings to the expert is set on them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path


def _recipe(name: str):
    from aligner.features.augment import AugmentationRecipe

    if name == "none":
        return None
    if name == "default":  # recipes/conditions/multi-condition.json, as aligner train --augment default
        return AugmentationRecipe()
    return AugmentationRecipe.from_json_file(name)


def entropy_gate(folds_dir: Path, corpus: Path, false_alarm: float) -> tuple[float, int]:
    """``(gate, recordings)``: the mean posterior entropy that ``false_alarm`` of the corpus's
    clean recordings exceed, each scored by the fold model of ``folds_dir`` that never heard its
    speaker."""
    from aligner.alignment.conditions import gate_for_false_alarm, posterior_entropy
    from aligner.alignment.model import AlignmentModel
    from aligner.features.mfcc import mfcc_features
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import find_utterances

    folds = [AlignmentModel.load(d) for d in sorted(folds_dir.glob("fold*"))]
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        for utt in find_utterances(corpus):
            model = next((m for m in folds if utt.speaker in m.training.get("test_speakers", [])), None)
            if model is None:
                continue
            scores = model.classifier.scores(mfcc_features(load_audio(utt.audio)))
            values.append(posterior_entropy(model.classifier, scores))
    return gate_for_false_alarm(values, false_alarm), len(values)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="an alignment bundle, or a folder of fold bundles fold0, fold1, ...")
    ap.add_argument("corpus", type=Path, help="the TIMIT-layout corpus the model was trained on")
    ap.add_argument("out", type=Path, help="the distilled bundle (or folder of fold bundles) to write")
    ap.add_argument("--hidden", type=int, default=None, help="units of the student's hidden layer [256]")
    ap.add_argument("--augment", default="default", help="degraded copies: default, none, or a recipe JSON")
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--entropy-gate-folds", type=Path, default=None,
                    help="set the entropy gate from these (distilled) fold models' out-of-fold entropies")
    args = ap.parse_args(argv)

    from aligner.alignment.adaptation.corpus import save_atomically
    from aligner.alignment.conditions import DEFAULT_FALSE_ALARM
    from aligner.alignment.distillation import DEFAULT_STUDENT_UNITS, distil_model
    from aligner.alignment.model import AlignmentModel

    hidden = args.hidden or DEFAULT_STUDENT_UNITS
    folds = sorted(args.model.glob("fold*"))
    pairs = [(d, args.out / d.name) for d in folds] if folds else [(args.model, args.out)]
    for src, dst in pairs:
        t0 = time.perf_counter()
        model = AlignmentModel.load(src)
        print(f"{src}: distilling {model.classifier.hidden_weights.shape[1]} units into {hidden}", flush=True)
        student = distil_model(model, args.corpus, hidden, augment=_recipe(args.augment), epochs=args.epochs,
                               seed=args.seed,
                               epoch_progress=lambda e, tr, va: print(f"  epoch {e}: training loss {tr:.4f}, "
                                                                      f"held-out {va:.4f}", flush=True))
        if args.entropy_gate_folds is not None and student.condition_gate is not None:
            gate, n = entropy_gate(args.entropy_gate_folds, args.corpus, DEFAULT_FALSE_ALARM)
            print(f"  entropy gate {student.condition_gate:.4f} -> {gate:.4f} nats ({n} clean recordings of "
                  f"unseen speakers)")
            student.condition_gate = gate
            student.training = {**student.training, "distilled": {**student.training["distilled"],
                                                                  "entropy_gate_folds": str(args.entropy_gate_folds)}}
        save_atomically(student, dst)
        print(f"  wrote {dst} in {time.perf_counter() - t0:.0f} s: "
              f"{json.dumps({k: v for k, v in student.training['distilled'].items() if k != 'settings'})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
