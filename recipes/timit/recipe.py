"""TIMIT alignment recipe: every trainer of the learning core on one corpus, one table.

    python -m recipes.timit CORPUS_DIR OUT_DIR [--quick]     (or recipes/timit/run.sh ...)

Steps (each a call into the library; no trainer is treated specially here):

1. find the utterances (:func:`aligner.io.corpus.find_utterances`, both TIMIT layouts) and
   split them by speaker: a full LDC tree (TRAIN and TEST parts) by
   :func:`aligner.io.corpus.timit_standard_split` (core test set; classifier / weight-training /
   validation parts of TRAIN as in the orbit paper), any other tree (the shared sample) into
   speaker folds (:func:`aligner.io.corpus.speaker_folds`), each fold's test speakers in turn;
2. per split, the frame classifier and the weight-training inputs once
   (:func:`aligner.alignment.training.prepare_weight_training`);
3. per trainer, every point of its grid (:data:`GRIDS`) fitted with seed 0 from the initial
   weights, early-stopped and scored on the validation speakers
   (:class:`aligner.learn.ValidationSearch`); the point with the lowest validation cost wins and
   is refitted with the other seeds (:func:`aligner.alignment.training.fit_weights`);
4. every fit aligns the test speakers (boundaries on the 10 ms grid: the sub-frame refinement
   of :mod:`aligner.alignment.decoding.refinement` is left out, as it is the same for every trainer);
   the boundaries are scored in seconds against the
   ``.phn`` times exactly as ``aligner evaluate`` does (:func:`aligner.alignment.evaluation.phones.score_alignments`).

Writes ``OUT_DIR/results.md`` (the table), ``OUT_DIR/results.json`` (everything, per seed and
per split) and, with ``--save-models``, ``OUT_DIR/models/<trainer>/`` (seed 0, last split).
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

from aligner.alignment.model import AlignmentModel
from aligner.io.corpus import (
    find_utterances,
    is_full_timit_layout,
    is_sa_sentence,
    speaker_folds,
    timit_standard_split,
)
from aligner.errors import AlignerError
from aligner.alignment.evaluation.phones import TOLERANCES_MS, score_alignments
from aligner.features.mfcc import phone_start_times
from aligner.learn import TRAINERS, ValidationSearch, make_trainer
from aligner.io.transcripts import read_phn
from aligner.alignment.decoding.task import AlignmentTask
from aligner.alignment.training import (
    DEFAULT_TRAINER_PARAMS,
    DEFAULT_WARPS,
    INITIAL_WEIGHTS,
    KERNEL_CLASSIFIER_PARAMS,
    fit_weights,
    load_utterances,
    prepare_weight_training,
    weights_model,
)

#: Trainer options shared by every grid point: constant step, averaged iterates, early
#: stopping on the validation speakers (the best epoch is kept), no training-cost evaluation.
BASE_PARAMS = {"schedule": "constant", "average": True, "eval_train": False}

#: Hyper-parameter grids, per trainer: lists of values, crossed. Steps are in weight units per
#: update; ``eps`` (direct loss) multiplies the cost (frames); ``noise_scale`` (probit) is the
#: std of the weight perturbation; ``max_cost`` (orbit) caps the cost (frames per phone) in
#: orbit's step, which is proportional to it: the orbit paper's analysis assumes a cost in
#: [0, 1], and the tau-insensitive cost is unbounded (a degenerate decode costs 40-100 frames per
#: phone), so uncapped steps of 0.3-1 threw |w| out to where orbit's Gaussian factor vanishes
#: and it stopped learning (recipes/timit/README.md). One value, the paper's bound (a cap of 2
#: did worse on validation). The quick grids are subsets sized for the 10-minute budget.
GRIDS = {
    "full": {
        "perceptron": {"eta0": [0.003, 0.01, 0.03, 0.1, 0.3, 1.0]},
        "svm": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0], "lam": [0.0, 0.01]},
        "ramp": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0], "lam": [0.0, 0.01]},
        "direct_toward": {"eta0": [0.003, 0.01, 0.03, 0.1, 0.3], "eps": [0.3, 1.0, 3.0]},
        "direct_away": {"eta0": [0.003, 0.01, 0.03, 0.1, 0.3], "eps": [0.3, 1.0, 3.0]},
        "probit": {"eta0": [0.03, 0.1, 0.3], "noise_scale": [0.1], "n_samples": [100], "epochs": [3]},
        "orbit": {"eta0": [0.003, 0.01, 0.03, 0.1, 0.3], "lam": [0.0, 0.01], "max_cost": [1.0]},
    },
    "quick": {
        "perceptron": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0]},
        "svm": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0]},
        "ramp": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0]},
        # direct_away with eps = 1 and lam = 0 is exactly ramp, so eps = 1 is left out
        "direct_toward": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0], "eps": [0.5, 2.0]},
        "direct_away": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0], "eps": [0.5, 2.0]},
        # 100 decodes per update: one epoch and one grid point fit the 10-minute budget
        # (eta0 = 0.03 left the validation cost unchanged in 4 of 6 fits of a first run)
        "probit": {"eta0": [0.1], "noise_scale": [0.1], "n_samples": [100], "epochs": [1]},
        "orbit": {"eta0": [0.01, 0.03, 0.1, 0.3, 1.0], "max_cost": [1.0]},
    },
}

#: Everything else that differs between the full recipe and ``--quick`` (sample, < 10 min).
SETTINGS = {
    "full": {"epochs": 10, "patience": 3, "seeds": 3, "folds": 4, "classifier_folds": 3,
             "warps": DEFAULT_WARPS, "classifier": {}},
    "quick": {"epochs": 6, "patience": 3, "seeds": 3, "folds": 4, "classifier_folds": 2,
              "warps": (), "classifier": {**KERNEL_CLASSIFIER_PARAMS, "n_components": 500, "max_train_frames": 20000}},
}


class RecipeError(Exception):
    """A problem with the corpus or the options, worded for the user."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def grid_points(grid: dict) -> list:
    """Every combination of a grid's values, as keyword dicts (sorted keys, stable order)."""
    keys = sorted(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


# --------------------------------------------------------------------------------------
# splits
# --------------------------------------------------------------------------------------


def make_splits(corpus: Path, n_folds: int, include_sa: bool, test_set: str,
                max_speakers: int | None = None, max_per_speaker: int | None = None) -> tuple:
    """``(layout, utterances, splits)``; each split is a dict of speaker-disjoint utterance lists.

    A split holds ``train`` (weight training and validation; out-of-fold classifier scores)
    or, for the full layout, ``classifier`` + ``train`` with named ``validation_speakers``;
    and ``test``. ``max_speakers`` / ``max_per_speaker`` cut the corpus down first (for tests):
    the first speakers in sorted order, the first utterances of each.
    """
    try:
        utterances = find_utterances(corpus)
    except FileNotFoundError as exc:
        raise RecipeError(str(exc)) from None
    if not utterances:
        raise RecipeError(f"{corpus}: no utterances (audio files with a .phn beside them) found")
    if max_speakers or max_per_speaker:
        utterances = _cut(utterances, max_speakers, max_per_speaker, include_sa)
    if is_full_timit_layout(utterances):
        try:
            parts = timit_standard_split(utterances, include_sa=include_sa, test_set=test_set)
        except ValueError as exc:
            raise RecipeError(f"{corpus}: {exc}") from None
        split = {"name": f"TIMIT {test_set} test", "classifier": parts["classifier"],
                 "train": parts["weights"] + parts["validation"],
                 "validation_speakers": sorted({u.speaker for u in parts["validation"]}),
                 "test": parts["test"]}
        return "full", utterances, [split]
    kept = [u for u in utterances if include_sa or not is_sa_sentence(u)]
    if not kept:
        raise RecipeError(f"{corpus}: only SA1/SA2 utterances found (use --include-sa)")
    n_speakers = len({u.speaker for u in kept})
    if n_speakers < max(n_folds, 2) or n_folds < 2:
        raise RecipeError(f"{corpus}: {n_speakers} speakers, need at least {max(n_folds, 2)} "
                          f"for {n_folds} speaker folds")
    splits = []
    for f, test_speakers in enumerate(speaker_folds(kept, n_folds)):
        splits.append({"name": f"fold {f + 1}/{n_folds}",
                       "train": [u for u in kept if u.speaker not in test_speakers],
                       "test": [u for u in kept if u.speaker in test_speakers]})
    return "folds", utterances, splits


# --------------------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------------------


def reference_starts_s(utterance) -> np.ndarray:
    """Phone start times (seconds) of the utterance's ``.phn``, as ``aligner evaluate`` reads them."""
    starts, _, _ = read_phn(utterance.transcript)
    return starts / 16000.0


def predicted_starts_s(model, x, d) -> np.ndarray:
    """Phone start times (seconds) the model predicts for one test utterance, as written to a TextGrid."""
    return phone_start_times(model.align_frames(x))


def summarise(values: list) -> dict:
    """Mean, sample standard deviation, min and max of a per-seed figure."""
    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "min": float(a.min()), "max": float(a.max()), "values": a.tolist()}


# --------------------------------------------------------------------------------------
# the recipe
# --------------------------------------------------------------------------------------


def run_recipe(corpus: Path, out_dir: Path, quick: bool = False, trainers=None, seeds=None,
               folds=None, include_sa: bool = False, test_set: str = "core", jobs: int = 2,
               max_speakers: int | None = None, max_per_speaker: int | None = None,
               save_models: bool = False, command: str = "") -> dict:
    """Run the recipe; returns the results dict also written to ``out_dir/results.json``.

    ``max_speakers`` / ``max_per_speaker`` cut the corpus down (for tests): the first speakers
    in sorted order, the first utterances of each.
    """
    start = time.perf_counter()
    cpu_start = time.process_time()
    mode = "quick" if quick else "full"
    settings = dict(SETTINGS[mode])
    if folds is not None:
        settings["folds"] = folds
    if seeds is not None:
        settings["seeds"] = seeds
    if settings["seeds"] < 1:
        raise RecipeError(f"--seeds must be >= 1, got {settings['seeds']}")
    trainers = list(trainers or TRAINERS)
    unknown = [t for t in trainers if t not in TRAINERS]
    if unknown:
        raise RecipeError(f"unknown trainer(s) {', '.join(unknown)}; choose from {', '.join(TRAINERS)}")
    grids = GRIDS[mode]

    layout, utterances, splits = make_splits(corpus, settings["folds"], include_sa, test_set,
                                             max_speakers, max_per_speaker)
    log(f"{corpus}: {len(utterances)} utterances, layout {layout}, {len(splits)} split(s), "
        f"trainers {', '.join(trainers)}, {settings['seeds']} seed(s), mode {mode}")

    needed = {u.name: u for s in splits for part in ("classifier", "train", "test") for u in s.get(part, [])}
    t0 = time.perf_counter()
    loaded = load_utterances(list(needed.values()), warps=tuple(settings["warps"]))
    data_by_name = {d.name: d for d in loaded}
    log(f"features of {len(loaded)} utterances in {time.perf_counter() - t0:.1f} s")

    task_params = {"n_jobs": jobs}
    task = AlignmentTask(**task_params)
    # per trainer, per seed: the (reference, predicted) start times of every test utterance
    pairs = {t: {s: [] for s in range(settings["seeds"])} for t in trainers}
    fits = {t: {s: [] for s in range(settings["seeds"])} for t in trainers}
    initial_pairs = []  # the same for the weights every trainer starts from (no training)
    split_reports = []
    grid_seconds = {t: 0.0 for t in trainers}
    saved_models = {}
    for split in splits:
        t0 = time.perf_counter()
        train = [data_by_name[u.name] for u in split["train"]]
        classifier_data = [data_by_name[u.name] for u in split.get("classifier", [])]
        n_val = 2 if len({d.speaker for d in train}) > 3 else 1
        prepared = prepare_weight_training(
            train, settings["classifier"], n_folds=settings["classifier_folds"], n_val_speakers=n_val,
            classifier_data=classifier_data or None,
            validation_speakers=set(split["validation_speakers"]) if "validation_speakers" in split else None)
        test = [(u, data_by_name[u.name]) for u in split["test"]]
        scorer = AlignmentModel(prepared.classifier, prepared.durations, np.zeros(7))
        test_inputs = [scorer.make_input(d.frames, d.classes, name=d.name, symbols=d.symbols) for _, d in test]
        test_refs = [reference_starts_s(u) for u, _ in test]
        initial = AlignmentModel(prepared.classifier, prepared.durations, INITIAL_WEIGHTS)
        initial_pairs.extend(zip(test_refs, [predicted_starts_s(initial, x, d) for x, (_, d) in zip(test_inputs, test)]))
        train_X = [prepared.inputs[i] for i in prepared.train_idx]
        train_Y = [prepared.data[i].y for i in prepared.train_idx]
        val_X = [prepared.inputs[i] for i in prepared.val_idx]
        val_Y = [prepared.data[i].y for i in prepared.val_idx]
        log(f"{split['name']}: classifier and weight-training inputs in {prepared.seconds:.1f} s "
            f"({len(prepared.train_idx)} training, {len(prepared.val_idx)} validation, {len(test)} test utterances)")
        report = {"name": split["name"], "train_speakers": prepared.speakers,
                  "validation_speakers": prepared.validation_speakers,
                  "test_speakers": sorted({u.speaker for u in split["test"]}),
                  "classifier_speakers": sorted({d.speaker for d in classifier_data}),
                  "preparation_seconds": round(prepared.seconds, 2), "trainers": {}}
        for trainer in trainers:
            base = make_trainer(trainer, **dict(DEFAULT_TRAINER_PARAMS, **BASE_PARAMS, epochs=settings["epochs"],
                                                patience=settings["patience"], seed=0))
            points = grid_points(grids[trainer])
            tg = time.perf_counter()
            search = ValidationSearch([clone(base).set_params(**point) for point in points]).fit(
                task, train_X, train_Y, val_X, val_Y, w0=INITIAL_WEIGHTS)
            grid_seconds[trainer] += time.perf_counter() - tg
            best = {"params": points[search.best_index_],
                    "val_cost": search.candidate_results_[search.best_index_]["val_cost_mean"]}
            per_seed = []
            for seed in range(settings["seeds"]):
                if seed == 0:
                    result = search.best_estimator_
                    model = weights_model(prepared, result, refine=False)
                else:
                    model, result = fit_weights(prepared, clone(search.best_estimator_).set_params(seed=seed),
                                                task_params=task_params, refine=False)
                predicted = [predicted_starts_s(model, x, d) for x, (_, d) in zip(test_inputs, test)]
                pairs[trainer][seed].extend(zip(test_refs, predicted))
                fit = {"seconds": result.fit_seconds_, "update_seconds": result.update_seconds_,
                       "decodes": result.n_decodes_, "updates": result.n_updates_,
                       "decodes_per_update": result.decodes_per_update_, "best_epoch": result.best_epoch_,
                       "weights": result.w_.tolist()}
                fits[trainer][seed].append(fit)
                per_seed.append(fit)
                if save_models and seed == 0:
                    saved_models[trainer] = model
            report["trainers"][trainer] = {
                "chosen": best["params"],
                "grid": [{"params": point, "val_cost": c["val_cost_mean"]}
                         for point, c in zip(points, search.candidate_results_)],
                "fits": per_seed}
            scores = score_alignments(pairs[trainer][0][-len(test):])
            log(f"{split['name']} {trainer}: chose {best['params']} (validation cost "
                f"{best['val_cost']:.3f}); seed 0 test {scores.within_ms[20]:.1f} % within 20 ms, "
                f"{np.mean([f['seconds'] for f in per_seed]):.1f} s per fit")
        report["seconds"] = round(time.perf_counter() - t0, 1)
        split_reports.append(report)

    summary = {}
    for trainer in trainers:
        per_seed_scores = [score_alignments(pairs[trainer][s]) for s in range(settings["seeds"])]
        per_seed_fits = [fits[trainer][s] for s in range(settings["seeds"])]
        summary[trainer] = {
            **{f"within_{t}ms": summarise([sc.within_ms[t] for sc in per_seed_scores]) for t in TOLERANCES_MS},
            "tau_insensitive": summarise([sc.tau_insensitive for sc in per_seed_scores]),
            "mean_ms": summarise([sc.mean_ms for sc in per_seed_scores]),
            "median_ms": summarise([sc.median_ms for sc in per_seed_scores]),
            # wall time of one training run summed over the splits (mean over seeds)
            "train_seconds": summarise([sum(f["seconds"] for f in fs) for fs in per_seed_fits]),
            "decodes": summarise([sum(f["decodes"] for f in fs) for fs in per_seed_fits]),
            "decodes_per_update": summarise([sum(f["decodes"] for f in fs) / sum(f["updates"] for f in fs)
                                             for fs in per_seed_fits]),
            "grid_search_seconds": round(grid_seconds[trainer], 1),
            "n_boundaries": per_seed_scores[0].n_boundaries,
            "n_utterances": per_seed_scores[0].n_utterances,
        }
    initial_scores = score_alignments(initial_pairs)
    results = {
        "initial_weights": {"weights": INITIAL_WEIGHTS.tolist(), "scores": initial_scores.to_dict()},
        "command": command, "corpus": str(corpus), "layout": layout, "mode": mode,
        "settings": {**settings, "warps": list(settings["warps"]), "grids": grids, "base_params": BASE_PARAMS,
                     "include_sa": include_sa, "test_set": test_set, "jobs": jobs,
                     "max_speakers": max_speakers, "max_per_speaker": max_per_speaker},
        "trainers": trainers, "summary": summary, "splits": split_reports,
        "seconds": round(time.perf_counter() - start, 1),
        # CPU time of this process (all threads): what the run costs on an idle machine
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1))
    (out_dir / "results.md").write_text(format_table(results))
    for trainer, model in saved_models.items():
        model.save(out_dir / "models" / trainer)
    log(f"done in {results['seconds']} s: {out_dir / 'results.md'}")
    return results


def _cut(utterances: list, max_speakers, max_per_speaker, include_sa: bool) -> list:
    """The first ``max_speakers`` speakers (sorted) and the first ``max_per_speaker`` kept utterances of each."""
    speakers = set(sorted({u.speaker for u in utterances})[:max_speakers]) if max_speakers else None
    out, seen = [], {}
    for u in utterances:
        if speakers is not None and u.speaker not in speakers:
            continue
        if not include_sa and is_sa_sentence(u):
            continue
        seen[u.speaker] = seen.get(u.speaker, 0) + 1
        if max_per_speaker is None or seen[u.speaker] <= max_per_speaker:
            out.append(u)
    return out


# --------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------


def _pm(stat: dict, digits: int) -> str:
    if stat["std"] == 0.0 and stat["min"] == stat["max"]:
        return f"{stat['mean']:.{digits}f}"
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def update_ms(results: dict, trainer: str) -> float:
    """Wall time per update (ms, validation excluded) of a trainer's fits, over every split and seed."""
    fits = [f for split in results["splits"] for f in split["trainers"][trainer]["fits"]]
    return 1000.0 * sum(f["update_seconds"] for f in fits) / max(1, sum(f["updates"] for f in fits))


def format_table(results: dict) -> str:
    """The Markdown table (orbit paper table 3 style) plus the run's description."""
    s = results["settings"]
    summary = results["summary"]
    any_trainer = next(iter(summary.values()))
    lines = [
        f"Corpus `{results['corpus']}` ({results['layout']} layout, {len(results['splits'])} split(s), "
        f"{any_trainer['n_utterances']} test utterances, {any_trainer['n_boundaries']} boundaries per seed); "
        f"mode {results['mode']}, {s['seeds']} seed(s), mean ± standard deviation over seeds; "
        f"total wall time {results['seconds']:.0f} s"
        + (f" (CPU time {results['cpu_seconds']:.0f} s)." if "cpu_seconds" in results else "."),
        "",
        "| trainer | ≤10 ms | ≤20 ms | ≤30 ms | ≤40 ms | τ-insensitive loss (frames) | mean error (ms) "
        "| training s | decodes | decodes / update | ms / update |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for trainer, r in summary.items():
        lines.append(
            f"| {trainer} | " + " | ".join(_pm(r[f"within_{t}ms"], 1) for t in TOLERANCES_MS)
            + f" | {_pm(r['tau_insensitive'], 3)} | {_pm(r['mean_ms'], 1)} | {_pm(r['train_seconds'], 1)}"
            f" | {r['decodes']['mean']:.0f} | {r['decodes_per_update']['mean']:.2f}"
            f" | {update_ms(results, trainer):.1f} |")
    init = results.get("initial_weights")
    if init:
        sc = init["scores"]
        lines.append(
            "| *initial weights, untrained* | " + " | ".join(f"{sc['within_ms'][str(t)]:.1f}" for t in TOLERANCES_MS)
            + f" | {sc['tau_insensitive']:.3f} | {sc['mean_ms']:.1f} | 0 | 0 | – | – |")
    lines += [
        "",
        "% of boundaries (every phone start but the first) within 10-40 ms of the `.phn` time, "
        "scored in seconds as `aligner evaluate` does; τ-insensitive loss with τ = 10 ms. "
        "Training s: wall time of one weight training summed over the splits (updates and per-epoch "
        "validation; classifier excluded); decodes: decodes used by the updates; ms / update: "
        "update wall time per update. "
        "*Initial weights*: the `w0` every trainer starts from (classifier agreement and duration "
        "prior at weight 1), for reference.",
    ]
    if results.get("command"):
        lines += ["", f"Command: `{results['command']}`"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        prog="recipes/timit/run.sh",
        description="Train the 7 alignment weights with every trainer on a TIMIT corpus and tabulate "
                    "the test results (orbit paper table 3).")
    p.add_argument("corpus", type=Path, help="TIMIT corpus: the LDC tree (TRAIN/TEST/DR*/SPEAKER) "
                                             "or the sample layout (<dr>-<speaker>/<utt>.wav|phn)")
    p.add_argument("out", type=Path, help="output directory (results.md, results.json)")
    p.add_argument("--quick", action="store_true", help="small grids and classifier, fewer epochs "
                                                        "(the shared sample in < 10 minutes)")
    p.add_argument("--trainers", default=",".join(TRAINERS), help="comma-separated trainer names")
    p.add_argument("--seeds", type=int, default=None, help="seeds per trainer (default 3)")
    p.add_argument("--folds", type=int, default=None, help="speaker folds (non-LDC layouts; default 4)")
    p.add_argument("--include-sa", action="store_true", help="keep the SA1/SA2 sentences")
    p.add_argument("--test-set", choices=("core", "complete"), default="core",
                   help="full TIMIT only: the 24-speaker core test set or every TEST speaker")
    p.add_argument("--jobs", type=int, default=2, help="threads for parallel decodes (probit)")
    p.add_argument("--max-speakers", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--max-per-speaker", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--save-models", action="store_true", help="write OUT/models/<trainer>/ (seed 0, last split)")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    command = "recipes/timit/run.sh " + " ".join(sys.argv[1:] if argv is None else argv)
    try:
        run_recipe(args.corpus, args.out, quick=args.quick,
                   trainers=[t.strip() for t in args.trainers.split(",") if t.strip()],
                   seeds=args.seeds, folds=args.folds, include_sa=args.include_sa, test_set=args.test_set,
                   jobs=args.jobs, max_speakers=args.max_speakers, max_per_speaker=args.max_per_speaker,
                   save_models=args.save_models, command=command)
    except (RecipeError, AlignerError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
