#!/usr/bin/env python
"""Leave-languages-out cross-validation on the 40 VoxAngeles languages.

For each test fold of :func:`~benchmarks.languages.corpus.language_folds` (5 folds of 8 languages),
models are trained without its languages and every recording of its languages is aligned from its
hand-labelled phones (empty intervals as silence phones), then every boundary but the first is scored:

* ``universal``: :func:`aligner.alignment.universal_training.train_universal_model` on the other
  languages and the TIMIT sample read as IPA (``aligner train --universal``);
* ``baseline``: ``aligner train`` with its defaults on the other languages (a model of their own
  phone classes), each test phone aligned as the model's closest phone by features;
* ``english``: the shipped English model, each phone aligned as its closest ARPAbet phone.

``--exclude-folds`` leaves further folds out of the training, so designs are chosen on languages
that are no test languages of the fold being evaluated (the design search of docs/results.md trained
on folds 2-4 and validated on fold 1: ``--test-fold 1 --exclude-folds 0``). Models are saved under
``OUT/<system>/<tag>`` and reused when there.

    python -m benchmarks.languages.eval_languages_cv --out runs/languages
    python -m benchmarks.languages.eval_languages_cv --out runs/languages --test-fold 1 --exclude-folds 0 \\
        --systems universal --settings '{"prior": true}' --tag prior
    python -m benchmarks.languages.eval_languages_cv --out runs/languages --systems universal --tag d256 \\
        --conditions clean,white20,white10,white5 --denoise-gate none
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from aligner.alignment.universal_training import UNIVERSAL_WARPS
from benchmarks.languages.corpus import (TIMIT_GROUP, combined_corpus, language_files, language_folds, reference,
                                         write_timit_ipa)

SYSTEMS = ("universal", "baseline", "english")


def load_all(out: Path, progress=None, conditions=None, warps: tuple = UNIVERSAL_WARPS) -> list:
    """Every recording of the 40 languages and the TIMIT sample in IPA, read for the universal model
    with the VTLP copies of ``warps`` and the degraded copies of ``conditions``
    (:attr:`UniversalSettings.warps`, :attr:`UniversalSettings.conditions`)."""
    from aligner.alignment.universal_training import read_universal_corpus
    from benchmarks.languages.corpus import languages

    import warnings

    from aligner.io.audio import RepairedAudioWarning

    timit = write_timit_ipa(out / "timit-ipa")
    corpus = combined_corpus(out / "all-languages", languages(), timit)
    failed: list = []
    with warnings.catch_warnings():  # the TIMIT sample's SPHERE files lost bytes to a newline conversion
        warnings.simplefilter("ignore", RepairedAudioWarning)
        data = read_universal_corpus(corpus, warps=tuple(warps), progress=progress, failed=failed,
                                     conditions=conditions)
    for utt, message in failed:
        print(f"left out: {message}", file=sys.stderr)
    return data


class ScorerCache:
    """Frame scorers kept on disk (``DIR/<languages left out>.npz``), for designs that share them:
    the :func:`~aligner.alignment.universal_training.train_universal_model` ``scorers`` mapping."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / (("without-" + key.replace(" ", "-")) if key else "all") / "scorer.npz"

    def get(self, key: str):
        from aligner.features.composed_network import ComposedNetwork

        path = self._path(key)
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=False) as arrays:
            return ComposedNetwork.from_arrays(dict(arrays))

    def __setitem__(self, key: str, net) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **net.to_arrays())


def scorer_key(settings) -> str:
    """A name of the settings the frame scorers depend on (and the data: the training languages)."""
    return (f"h{settings.hidden}-a{settings.alpha:g}-e{settings.epochs}-f{settings.max_train_frames}-"
            f"s{settings.seed}-w{'_'.join(f'{w:g}' for w in settings.warps)}-k{settings.n_folds}"
            + (f"-r{settings.residual_alpha:g}" if settings.residual_alpha else "")
            + (f"-x{settings.context}" if settings.context != 4 else "")
            + ("-refit" if settings.refit_scorer else "") + ("-bal" if settings.balanced_scorer_groups else "")
            + (f"-c{hashlib.sha1(json.dumps(settings.conditions, sort_keys=True).encode()).hexdigest()[:8]}"
               if settings.conditions else ""))


def saved_with_detector(path: Path, settings, fit: bool, given: dict, training_data):
    """The universal model saved at ``path``, its boundary detector as asked. ``fit``: a model saved
    without one gets one (unless ``settings.boundary_units`` is None), the one saved beside it as
    ``<name>-bd<units>`` or else one fitted by
    :func:`~aligner.alignment.universal_training.fit_boundary_detector` on ``training_data()`` and
    saved there; ``given``: the ``--settings`` JSON, whose ``boundary_weight`` replaces the
    detector's weight and whose ``boundary_units`` None takes the detector away."""
    from aligner.alignment.universal import UniversalModel
    from aligner.alignment.universal_training import fit_boundary_detector

    model = UniversalModel.load(path)
    with_detector = path.with_name(f"{path.name}-bd{settings.boundary_units}")
    if fit and model.boundary_detector is None and settings.boundary_units is not None:
        if (with_detector / "manifest.json").is_file():
            model = UniversalModel.load(with_detector)
        else:
            model.boundary_detector = fit_boundary_detector(training_data(), settings)
            model.save(with_detector)
    return detector_as_given(model, settings, given)


def detector_as_given(model, settings, given: dict):
    """``model`` (a universal model, before any view is made) with ``given``'s ``boundary_weight``
    (``settings``' value) and ``boundary_units`` None (no detector) applied, where given."""
    if model.boundary_detector is not None and "boundary_weight" in given:
        model.boundary_detector.weight = settings.boundary_weight
    if "boundary_units" in given and given["boundary_units"] is None:
        model.boundary_detector = None
    return model


def align_universal(model, samples, symbols):
    view = model.view(symbols)
    return view.align(samples, symbols, view.phone_set)


def mapped_aligner(model, english: bool):
    """A function aligning a file's IPA phones as ``model``'s closest phones (the feature mapping)."""
    from aligner.phones.ipa import read_ipa
    from aligner.phones.languages import phone_mapping
    from aligner.phones.sets import get_phone_set

    pset = get_phone_set("arpabet") if english else model.phone_set
    silence = "sil"
    cache: dict = {}

    def align(samples, symbols):
        ipa = {s: read_ipa(s) for s in symbols}
        todo = sorted({seg.ipa for seg in ipa.values() if not seg.silence and seg.ipa not in cache})
        if todo:
            cache.update(phone_mapping(todo, model))
        mapped = [silence if seg.silence else cache[seg.ipa] for seg in (ipa[s] for s in symbols)]
        if english:
            mapped = [m.upper() if m != silence else m for m in mapped]
        return model.align(samples, mapped, pset)

    return align


def adapt_each_language(model, langs, rounds: int, settings: dict, per_language: bool) -> list:
    """The score pairs of each language of ``langs`` aligned by ``model``'s view of its phones adapted
    on its own recordings (their hand-labelled phones, silences included, never their times;
    :func:`aligner.alignment.adaptation.rounds.adapt_model`, as ``aligner adapt --phone-set ipa``)."""
    from aligner.alignment.adaptation.corpus import UNIVERSAL_ADAPT_SETTINGS
    from aligner.alignment.adaptation.rounds import AdaptSettings, Recording, adapt_model
    from aligner.alignment.evaluation.phones import score_alignments
    from aligner.io.audio import load_audio

    out = []
    for lang in langs:
        files = [(wav, *reference(grid), load_audio(wav)) for wav, grid in language_files(lang)]
        base = model.view(sorted({s for _, _, symbols, _ in files for s in symbols}))
        recordings = [Recording(samples, symbols, lang, wav.name, "phones", "model")
                      for wav, _, symbols, samples in files]
        adapted, _ = adapt_model(base, recordings, rounds, AdaptSettings(**(settings or UNIVERSAL_ADAPT_SETTINGS)))
        pairs = [(starts, np.array([iv.start_s for iv in adapted.align(samples, symbols, adapted.phone_set)]))
                 for _, starts, symbols, samples in files]
        out += pairs
        if per_language:
            s = score_alignments(pairs)
            print(f"   {lang} adapted: {s.within_ms[20]:.1f} % within 20 ms, mean {s.mean_ms:.1f} ms")
    return out


def score_files(align, files: list, condition: str = "clean") -> tuple:
    """``(pairs, failed, seconds, per-language pairs)`` of ``align(samples, symbols)`` over ``files``,
    each degraded under ``condition`` first (:func:`benchmarks.alignment.eval_degraded.degrade`,
    seeded by its position)."""
    from aligner.io.audio import load_audio
    from benchmarks.alignment.eval_degraded import degrade

    pairs, failed, seconds, by_lang = [], [], 0.0, {}
    for i, (wav, grid) in enumerate(files):
        starts, symbols = reference(grid)
        samples = degrade(load_audio(wav), condition, i)
        t0 = time.perf_counter()
        try:
            intervals = align(samples, symbols)
        except Exception as exc:  # noqa: BLE001 - counted and listed
            failed.append(f"{wav.name}: {exc}")
            continue
        seconds += time.perf_counter() - t0
        pair = (starts, np.array([iv.start_s for iv in intervals]))
        pairs.append(pair)
        by_lang.setdefault(wav.parent.name, []).append(pair)
    return pairs, failed, seconds, by_lang


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/languages"))
    p.add_argument("--test-fold", default="0,1,2,3,4", help="test folds, comma-separated")
    p.add_argument("--exclude-folds", default="", help="folds also left out of the training (design search)")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--settings", default="{}", help="UniversalSettings fields, JSON")
    p.add_argument("--tag", default="", help="name of this design's models (OUT/universal/fold<k>-<tag>)")
    p.add_argument("--no-timit", action="store_true", help="train the universal model on the languages alone")
    p.add_argument("--per-language", action="store_true")
    p.add_argument("--adapt-rounds", type=int, default=0,
                   help="then adapt the universal model to each test language on its own recordings (their phones, "
                        "not their times), as aligner adapt --phone-set ipa does, and score again")
    p.add_argument("--adapt-settings", default="{}",
                   help="AdaptSettings fields, JSON ({}: those of aligner adapt for a universal model)")
    p.add_argument("--conditions", default="clean",
                   help="score on degraded copies too: conditions of benchmarks.alignment.eval_degraded, comma-separated")
    p.add_argument("--denoise-gate", default="model",
                   help="the universal model's noise suppression: as the model has it ('model'), none ('none'), "
                        "or from this noise floor (dB)")
    p.add_argument("--fit-detector", action="store_true",
                   help="a fold model saved without a boundary detector gets one (fit_boundary_detector on its "
                        "training languages, --settings' boundary_*), saved as OUT/universal/<its name>-bd<units>")
    args = p.parse_args(argv)

    from aligner.alignment.evaluation.phones import score_alignments
    from aligner.alignment.pipeline import load_model
    from aligner.alignment.universal_training import UniversalSettings, train_universal_model

    folds = language_folds()
    tests = [int(f) for f in args.test_fold.split(",") if f.strip()]
    excluded = [int(f) for f in args.exclude_folds.split(",") if f.strip()]
    systems = [s for s in args.systems.split(",") if s]
    given = json.loads(args.settings)
    settings = UniversalSettings(**given)
    data = None
    totals: dict = {}
    for k in tests:
        held = set(folds[k]) | {lang for j in excluded for lang in folds[j]}
        train_langs = sorted(set(sum(folds, [])) - held)
        name = f"fold{k}" + (f"-x{''.join(map(str, excluded))}" if excluded else "")
        files = [f for lang in folds[k] for f in language_files(lang)]
        print(f"== test fold {k}: {', '.join(folds[k])} ({len(files)} files); training on {len(train_langs)} "
              f"languages (the universal model{' without' if args.no_timit else ' with'} TIMIT)", flush=True)
        for system in systems:
            t0 = time.perf_counter()
            if system == "universal":
                tag = name + (f"-{args.tag}" if args.tag else "")
                path = args.out / "universal" / tag

                def training_data():
                    nonlocal data
                    if data is None:
                        data = load_all(args.out, conditions=settings.conditions, warps=settings.warps)
                    return [d for d in data if d.group in train_langs or (d.group == TIMIT_GROUP and not args.no_timit)]

                if (path / "manifest.json").is_file():
                    model = saved_with_detector(path, settings, args.fit_detector, given, training_data)
                else:
                    train = training_data()
                    langs = "-".join(sorted({d.group for d in train}))
                    cache = ScorerCache(args.out / "scorers" / scorer_key(settings)
                                        / hashlib.sha1(langs.encode()).hexdigest()[:12])
                    model = train_universal_model(train, settings, progress=lambda s, a, b: print(
                        f"  {s} {a}/{b} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True),
                        scorers=cache)
                    model.training["test_languages"] = folds[k]
                    model.save(path)
                    model = detector_as_given(model, settings, given)
                if args.denoise_gate != "model":
                    from aligner.features.denoise import DenoiseSettings

                    model.front_denoise = (None if args.denoise_gate == "none"
                                           else DenoiseSettings(gate_db=float(args.denoise_gate)))
                align = lambda samples, symbols, m=model: align_universal(m, samples, symbols)  # noqa: E731
            elif system == "baseline":
                from aligner import api

                path = args.out / "baseline" / name
                if not (path / "manifest.json").is_file():
                    corpus = combined_corpus(args.out / "corpora" / name, train_langs)
                    api.train(corpus, path, failed=[])
                model = load_model(path)
                align = mapped_aligner(model, english=False)
            else:
                align = mapped_aligner(load_model(None), english=True)
            train_s = time.perf_counter() - t0
            for condition in args.conditions.split(","):
                label = system if condition == "clean" else f"{system} {condition}"
                pairs, failed, seconds, by_lang = score_files(align, files, condition)
                totals.setdefault(label, []).extend(pairs)
                scores = score_alignments(pairs)
                print(f"-- {label} (fold {k}; {train_s:.0f} s to train or load, {seconds:.1f} s to align; "
                      f"{len(failed)} failed{': ' + '; '.join(failed[:3]) if failed else ''})\n{scores.format()}",
                      flush=True)
                if args.per_language:
                    for lang, lp in sorted(by_lang.items()):
                        s = score_alignments(lp)
                        print(f"   {lang}: {s.within_ms[20]:.1f} % within 20 ms, mean {s.mean_ms:.1f} ms "
                              f"({s.n_boundaries} boundaries)")
            if system == "universal" and args.adapt_rounds > 0:
                adapted_pairs = adapt_each_language(model, folds[k], args.adapt_rounds,
                                                    json.loads(args.adapt_settings), args.per_language)
                totals.setdefault("universal adapted", []).extend(adapted_pairs)
                print(f"-- universal adapted to each test language ({args.adapt_rounds} rounds, no times)\n"
                      f"{score_alignments(adapted_pairs).format()}", flush=True)
    if len(tests) > 1:
        print("== all test folds")
        for system, pairs in totals.items():
            print(f"-- {system}\n{score_alignments(pairs).format()}")


if __name__ == "__main__":
    main()
