#!/usr/bin/env python
"""English is not harmed: the universal model on the TIMIT sample's speaker folds, from IPA phones.

For each of 4 speaker folds of the TIMIT sample (:func:`aligner.io.corpus.speaker_folds`, as
``benchmarks.alignment.eval_alignment_cv`` splits it), a universal model is trained on the 40
VoxAngeles languages and the other 9 speakers read as IPA
(:func:`~benchmarks.languages.corpus.timit_ipa_intervals`: a stop with its closure one phone), and
the 3 held-out speakers' utterances are aligned from their IPA phones; every boundary but the first
of that IPA reading is scored. Models are saved under ``OUT/universal-timit/fold<k>[-TAG]`` and reused when
there; their frame scorers under ``OUT/scorers`` (as ``eval_languages_cv`` keeps them), so that designs
differing only after the scorers (``--settings``, ``--tag``) train in a minute.

    python -m benchmarks.languages.eval_timit_ipa --out runs/languages
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.languages.corpus import TIMIT, TIMIT_GROUP, timit_ipa_intervals


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/languages"))
    p.add_argument("--folds", type=int, default=4)
    p.add_argument("--settings", default="{}", help="UniversalSettings fields, JSON")
    p.add_argument("--tag", default="")
    p.add_argument("--fit-detector", action="store_true",
                   help="a fold model saved without a boundary detector gets one (fit_boundary_detector on its "
                        "training data, --settings' boundary_*), saved as OUT/universal-timit/<its name>-bd<units>")
    args = p.parse_args(argv)

    import warnings

    from aligner.alignment.evaluation.phones import score_alignments
    from aligner.alignment.universal_training import UniversalSettings, train_universal_model
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import find_utterances, speaker_folds
    from aligner.io.transcripts import read_phn
    from benchmarks.languages.eval_languages_cv import (ScorerCache, detector_as_given, load_all,
                                                        saved_with_detector, scorer_key)

    utterances = find_utterances(TIMIT)
    folds = speaker_folds(utterances, args.folds)
    given = json.loads(args.settings)
    settings = UniversalSettings(**given)
    data = None
    total = []
    for k, held in enumerate(folds):
        path = args.out / "universal-timit" / (f"fold{k}" + (f"-{args.tag}" if args.tag else ""))

        def training_data(held=held):
            nonlocal data
            if data is None:
                data = load_all(args.out, conditions=settings.conditions, warps=settings.warps)
            return [d for d in data if d.group != TIMIT_GROUP or d.speaker not in held]

        if (path / "manifest.json").is_file():
            model = saved_with_detector(path, settings, args.fit_detector, given, training_data)
        else:
            t0 = time.perf_counter()
            cache = ScorerCache(args.out / "scorers" / scorer_key(settings) / ("timit-without-" + "-".join(held)))
            model = train_universal_model(training_data(), settings, progress=lambda s, a, b: print(
                f"  {s} {a}/{b} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True), scorers=cache)
            model.training["test_speakers"] = list(held)
            model.save(path)
            model = detector_as_given(model, settings, given)
        pairs, seconds, audio_s = [], 0.0, 0.0
        for utt in utterances:
            if utt.speaker not in held:
                continue
            starts, ends, labels = read_phn(utt.transcript)
            intervals = timit_ipa_intervals(starts, ends, labels)
            symbols = [lab or "sil" for _, _, lab in intervals]
            with warnings.catch_warnings():  # the TIMIT sample's SPHERE files lost bytes to a newline conversion
                warnings.simplefilter("ignore", RepairedAudioWarning)
                samples = load_audio(utt.audio)
            t0 = time.perf_counter()
            view = model.view(symbols)
            hyp = view.align(samples, symbols, view.phone_set)
            seconds += time.perf_counter() - t0
            audio_s += len(samples) / 16000
            pairs.append((np.array([a for a, _, _ in intervals]), np.array([iv.start_s for iv in hyp])))
        total += pairs
        print(f"-- fold {k} (test speakers {', '.join(held)}; {seconds / audio_s:.4f} s per audio second)\n"
              f"{score_alignments(pairs).format()}", flush=True)
    print(f"== all folds\n{score_alignments(total).format()}")


if __name__ == "__main__":
    main()
