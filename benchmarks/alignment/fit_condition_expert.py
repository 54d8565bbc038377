#!/usr/bin/env python
"""Give an alignment model a multi-condition expert and set its gates on unseen speakers.

The expert (a model trained with ``aligner train --augment``) lends its classifier, 7 weights and
refiner to the model (:mod:`aligner.alignment.conditions`); ``--band-expert`` (a phone-line model,
``aligner train --phone-line --augment recipes/conditions/phone-line.json``) takes the recordings
below the band gate instead. The three gates come from the clean
recordings of the TIMIT-layout corpus, each scored by the fold model that never heard its speaker
(``--folds-dir``, fold models of the model's own training settings made by
``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``): the mean posterior entropy that
``--false-alarm`` of them exceed, and the energy range and the high-band share that as many fall
below. ``--dereverb [SHARE]``: the expert dereverberates (WPE, :mod:`aligner.features.dereverb`)
the recordings it takes whose late-reverberation statistic exceeds the value that SHARE of the
clean recordings exceed (default :data:`aligner.alignment.conditions.DEREVERB_FALSE_ALARM`).
``--denoise [SHARE]``: it suppresses stationary noise (a Wiener filter,
:mod:`aligner.features.denoise`) in those it does not dereverberate whose noise-floor statistic
exceeds the value that SHARE of the clean recordings exceed (default
:data:`aligner.alignment.conditions.DENOISE_FALSE_ALARM`). The model is written to ``--out`` (or
over ``--model`` with ``--in-place``), atomically.

    python -m benchmarks.alignment.fit_condition_expert --model models/timit-alignment --expert runs/mc \\
        [--band-expert runs/phone-line] [--dereverb] [--denoise] --folds-dir runs/folds --in-place
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from benchmarks.alignment.eval_degraded import add_front_end_arguments

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "timit-sample"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="the clean alignment model")
    ap.add_argument("--expert", type=Path, required=True, help="a model of the same classes trained with --augment")
    ap.add_argument("--band-expert", type=Path,
                    help="a phone-line model (aligner train --phone-line) for the recordings below the band gate")
    add_front_end_arguments(ap, who="the expert", gates_from="the clean recordings")
    ap.add_argument("--folds-dir", type=Path, required=True, help="clean fold models (benchmarks.alignment.eval_alignment_cv)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus of the fold models")
    ap.add_argument("--false-alarm", type=float, default=None,
                    help="share of clean unseen-speaker recordings beyond each gate [0.1]")
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", type=Path, help="write the model with its expert here")
    out.add_argument("--in-place", action="store_true", help="replace --model")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")
    from benchmarks.alignment.folds import fold_models
    from aligner.alignment.adaptation.corpus import save_atomically
    from aligner.alignment.conditions import (DEFAULT_FALSE_ALARM, attach_condition_expert, gate_for_false_alarm,
                                              gate_statistics)
    from aligner.alignment.model import AlignmentModel
    from aligner.features.denoise import DenoiseSettings, noise_floor_db
    from aligner.features.dereverb import DereverbSettings, late_reverberation_db
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import find_utterances

    false_alarm = DEFAULT_FALSE_ALARM if args.false_alarm is None else args.false_alarm
    model = AlignmentModel.load(args.model)
    expert = AlignmentModel.load(args.expert)
    band_expert = None if args.band_expert is None else AlignmentModel.load(args.band_expert)
    if band_expert is not None and band_expert.front_band_hz is None:
        sys.exit(f"error: {args.band_expert}: not a phone-line model (train it with aligner train --phone-line)")
    model_of = {s: m for m, speakers in fold_models(args.folds_dir) for s in speakers}
    utts = [u for u in find_utterances(args.data) if u.speaker in model_of]
    entropies, ranges, bands, reverb, floors = [], [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        for u in utts:
            samples = load_audio(u.audio)
            entropy, level_range, band_share = gate_statistics(model_of[u.speaker].classifier, samples)
            entropies.append(entropy)
            ranges.append(level_range)
            bands.append(band_share)
            if args.dereverb is not None:
                reverb.append(late_reverberation_db(samples))
            if args.denoise is not None:
                floors.append(noise_floor_db(samples))
    gate = gate_for_false_alarm(entropies, false_alarm)
    range_gate = gate_for_false_alarm(ranges, false_alarm, below=True)
    band_gate = gate_for_false_alarm(bands, false_alarm, below=True)
    record = {"expert": str(args.expert), "expert_training": {k: expert.training.get(k) for k in (
                  "augmentation", "speakers", "seconds", "classifier_params") if k in expert.training},
              "gates_from": f"{len(utts)} clean recordings of {len(model_of)} speakers, each by the fold model "
                            f"that never heard it ({args.folds_dir})",
              "false_alarm": false_alarm}
    if band_expert is not None:
        record["band_expert"] = str(args.band_expert)
        record["band_expert_training"] = {k: band_expert.training.get(k) for k in (
            "augmentation", "speakers", "seconds", "classifier_params") if k in band_expert.training}
    dereverb = None
    if args.dereverb is not None:
        dereverb = DereverbSettings(gate_db=gate_for_false_alarm(reverb, args.dereverb))
        record["dereverb_false_alarm"] = args.dereverb
    denoise = None
    if args.denoise is not None:
        denoise = DenoiseSettings(gate_db=gate_for_false_alarm(floors, args.denoise))
        record["denoise_false_alarm"] = args.denoise
    attach_condition_expert(model, expert, gate, range_gate, record, band_gate, band_expert, dereverb, denoise)
    target = args.model if args.in_place else args.out
    inputs = [args.expert, args.folds_dir] + ([args.band_expert] if args.band_expert is not None else [])
    if target.resolve() in [p.resolve() for p in inputs]:
        sys.exit(f"error: {target}: would overwrite an input")
    save_atomically(model, target, check=AlignmentModel.load)  # what was written loads before it replaces
    band_note = f", band expert {args.band_expert}" if band_expert is not None else ""
    print(f"{target}: expert {args.expert}{band_note}; gates {gate:.3f} nats, {range_gate:.1f} dB range, "
          f"{band_gate:.1f} dB high band, each passed by {false_alarm:.0%} of {len(utts)} clean recordings of "
          f"unseen speakers" + (f"; the expert dereverberates past {dereverb.gate_db:.3f} dB of late reverberation "
                                f"({args.dereverb:.0%} of them)" if dereverb is not None else "")
          + (f"; it suppresses noise past a {denoise.gate_db:.1f} dB noise floor ({args.denoise:.0%} of them)"
             if denoise is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
