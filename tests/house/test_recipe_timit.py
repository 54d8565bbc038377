"""The TIMIT recipe: standard splits on a fake LDC tree, and the recipe end to end on a tiny sample."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aligner.io.corpus import (
    CORE_TEST_SPEAKER_SET,
    CORE_TEST_SPEAKERS,
    dialect_region,
    find_utterances,
    is_full_timit_layout,
    timit_standard_split,
)
from recipes.timit.recipe import GRIDS, RecipeError, grid_points, main, make_splits, run_recipe

from tests.conftest import TIMIT as SAMPLE
UTTERANCE_IDS = ("sa1", "sa2", "si100", "si200", "si300", "sx10", "sx20", "sx30", "sx40", "sx50")


def make_fake_timit(root: Path, n_train_per_region: int = 8, n_extra_test_per_region: int = 2,
                    upper: bool = True) -> Path:
    """An LDC-style tree of empty files: TRAIN/TEST/DR1..8/<SPEAKER>/<UTT>.WAV|PHN.

    TEST holds the 24 core speakers plus ``n_extra_test_per_region`` others per region; TRAIN
    holds ``n_train_per_region`` speakers per region; every speaker has SA1, SA2 and 8 more.
    """
    case = str.upper if upper else str.lower

    def speaker(part, region, name):
        d = root / case(part) / case(region) / case(name)
        d.mkdir(parents=True)
        for utt in UTTERANCE_IDS:
            (d / case(f"{utt}.wav")).touch()
            (d / case(f"{utt}.phn")).touch()

    for r in range(1, 9):
        region = f"dr{r}"
        for name in CORE_TEST_SPEAKERS[region]:
            speaker("test", region, name)
        for i in range(n_extra_test_per_region):
            speaker("test", region, f"mxt{r}{i}0")
        for i in range(n_train_per_region):
            speaker("train", region, f"{'mf'[i % 2]}tr{r}{i:02d}")
    return root


@pytest.mark.parametrize("upper", [True, False])
def test_standard_split_core_test_and_sa_exclusion(tmp_path, upper):
    root = make_fake_timit(tmp_path / "timit", upper=upper)
    utts = find_utterances(root)
    assert len(utts) == (8 * 3 + 8 * 2 + 8 * 8) * 10
    assert is_full_timit_layout(utts)
    parts = timit_standard_split(utts, n_validation_speakers=8, n_classifier_speakers=16)
    test_speakers = {u.speaker for u in parts["test"]}
    assert test_speakers == CORE_TEST_SPEAKER_SET and len(test_speakers) == 24
    assert len(parts["test"]) == 24 * 8  # the core test set's 192 utterances
    for name, part in parts.items():
        assert part, name
        assert not any(u.utterance_id.startswith("sa") for u in part), name
    speakers = {name: {u.speaker for u in part} for name, part in parts.items()}
    assert len(speakers["validation"]) == 8 and len(speakers["classifier"]) == 16
    assert len(speakers["weights"]) == 8 * 8 - 8 - 16
    names = list(speakers)
    for i, a in enumerate(names):  # speaker disjoint
        for b in names[i + 1:]:
            assert not speakers[a] & speakers[b], (a, b)
    # every TRAIN speaker is used exactly once, no TEST speaker is in a TRAIN part
    train_speakers = {u.speaker for u in utts if u.part == "train"}
    assert speakers["validation"] | speakers["classifier"] | speakers["weights"] == train_speakers
    # the validation speakers are spread over the dialect regions
    regions = {dialect_region(u) for u in parts["validation"]}
    assert regions == {f"dr{r}" for r in range(1, 9)}


def test_standard_split_options(tmp_path):
    utts = find_utterances(make_fake_timit(tmp_path / "timit", upper=False))
    with_sa = timit_standard_split(utts, include_sa=True, n_validation_speakers=8, n_classifier_speakers=16)
    assert len(with_sa["test"]) == 24 * 10
    assert {u.utterance_id for u in with_sa["weights"]} >= {"sa1", "sa2"}
    complete = timit_standard_split(utts, test_set="complete", n_validation_speakers=8, n_classifier_speakers=16)
    assert len({u.speaker for u in complete["test"]}) == 24 + 16
    # deterministic
    again = timit_standard_split(utts, n_validation_speakers=8, n_classifier_speakers=16)
    assert [u.name for u in again["validation"]] == [
        u.name for u in timit_standard_split(utts, n_validation_speakers=8, n_classifier_speakers=16)["validation"]]
    with pytest.raises(ValueError, match="too few"):
        timit_standard_split(utts)  # 64 TRAIN speakers cannot give 50 + 188


def test_standard_split_needs_train_and_test(tmp_path):
    root = make_fake_timit(tmp_path / "timit")
    utts = [u for u in find_utterances(root) if u.part == "train"]
    assert not is_full_timit_layout(utts)
    with pytest.raises(ValueError, match="TRAIN and TEST"):
        timit_standard_split(utts, n_validation_speakers=2, n_classifier_speakers=2)


def test_core_test_list_is_standard():
    assert len(CORE_TEST_SPEAKER_SET) == 24
    for region, speakers in CORE_TEST_SPEAKERS.items():
        assert [s[0] for s in speakers].count("m") == 2 and [s[0] for s in speakers].count("f") == 1, region
    assert {"mdab0", "felc0", "fmld0", "mpam0"} <= CORE_TEST_SPEAKER_SET


def test_recipe_uses_the_standard_split_on_a_full_tree(tmp_path):
    root = make_fake_timit(tmp_path / "timit", n_train_per_region=30)
    layout, _, splits = make_splits(root, n_folds=4, include_sa=False, test_set="core")
    assert layout == "full" and len(splits) == 1
    split = splits[0]
    assert {u.speaker for u in split["test"]} == CORE_TEST_SPEAKER_SET
    assert len(split["validation_speakers"]) == 50
    assert len({u.speaker for u in split["classifier"]}) == 188  # of 240 TRAIN speakers; 2 left for the weights
    assert len({u.speaker for u in split["train"]}) == 240 - 188
    assert not {u.speaker for u in split["classifier"]} & {u.speaker for u in split["train"]}


def test_recipe_errors_name_the_directory(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RecipeError, match=str(empty)):
        make_splits(empty, 4, False, "core")
    with pytest.raises(RecipeError, match="not found"):
        make_splits(tmp_path / "missing", 4, False, "core")
    with pytest.raises(SystemExit, match="no utterances"):
        main([str(empty), str(tmp_path / "out"), "--quick"])


def test_grids_cover_every_trainer():
    from aligner.learn import TRAINERS

    for mode, grids in GRIDS.items():
        assert set(grids) == set(TRAINERS), mode
        assert all(grid_points(g) for g in grids.values())
    assert grids["probit"]["n_samples"] == [100]
    assert grid_points({"b": [1, 2], "a": [3]}) == [{"a": 3, "b": 1}, {"a": 3, "b": 2}]


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"TIMIT sample not found at {SAMPLE}")
def test_recipe_end_to_end_on_a_tiny_sample(tmp_path):
    """Every trainer through the same calls on 4 speakers x 2 utterances, 2 folds, 2 seeds."""
    out = tmp_path / "out"
    results = run_recipe(SAMPLE, out, quick=True, seeds=2, folds=2, max_speakers=4, max_per_speaker=2,
                         trainers=["perceptron", "svm", "ramp", "direct_toward", "direct_away", "orbit", "probit"],
                         command="test")
    from aligner.learn import TRAINERS

    assert set(results["summary"]) == set(TRAINERS)
    table = (out / "results.md").read_text()
    for trainer in TRAINERS:
        assert f"| {trainer} |" in table
    saved = json.loads((out / "results.json").read_text())
    assert saved["summary"].keys() == results["summary"].keys()
    assert len(saved["splits"]) == 2
    for split in saved["splits"]:
        assert not set(split["test_speakers"]) & set(split["train_speakers"])
        for trainer, report in split["trainers"].items():  # the grid point with the lowest validation cost
            assert [g["params"] for g in report["grid"]] == grid_points(GRIDS["quick"][trainer])
            costs = [g["val_cost"] for g in report["grid"]]
            assert report["chosen"] == report["grid"][costs.index(min(costs))]["params"]
    for trainer, r in results["summary"].items():
        assert r["n_utterances"] == 4 * 2  # every test utterance of both folds, scored once per seed
        assert len(r["within_20ms"]["values"]) == 2
        assert 0.0 <= r["within_20ms"]["mean"] <= 100.0
        assert r["within_10ms"]["mean"] <= r["within_40ms"]["mean"]
        assert r["decodes"]["mean"] > 0
    assert results["summary"]["orbit"]["decodes_per_update"]["mean"] == pytest.approx(1.0)
    assert results["summary"]["perceptron"]["decodes_per_update"]["mean"] == pytest.approx(1.0)
    assert results["summary"]["probit"]["decodes_per_update"]["mean"] == pytest.approx(100.0)
    assert results["summary"]["ramp"]["decodes_per_update"]["mean"] == pytest.approx(2.0)


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"TIMIT sample not found at {SAMPLE}")
def test_prepare_weight_training_with_a_separate_classifier_part():
    """The full-TIMIT path: classifier trained on other speakers, named validation speakers."""
    from aligner.alignment.training import fit_weights, load_utterances, prepare_weight_training

    utts = [u for u in find_utterances(SAMPLE) if u.utterance_id.startswith("sx")]
    speakers = sorted({u.speaker for u in utts})[:4]
    data = load_utterances([u for u in utts if u.speaker in speakers], warps=())
    classifier_part = [d for d in data if d.speaker in speakers[:2]]
    weight_part = [d for d in data if d.speaker in speakers[2:]]
    prepared = prepare_weight_training(weight_part, {"hidden": 32, "max_train_frames": 5000},
                                       classifier_data=classifier_part, validation_speakers={speakers[2]})
    assert prepared.n_folds == 0
    assert prepared.validation_speakers == [speakers[2]]
    assert {weight_part[i].speaker for i in prepared.train_idx} == {speakers[3]}
    assert len(prepared.inputs) == len(weight_part)
    model, trainer = fit_weights(prepared, "orbit", {"epochs": 1, "eval_train": False})
    assert model.classifier is prepared.classifier
    assert trainer.n_updates_ == len(prepared.train_idx)
    assert model.weights is trainer.w_ and model.training["trainer"] == "orbit"
    # an unfitted trainer instead of a name: fitted as given (no defaults merged), in place
    from aligner.alignment.training import DEFAULT_TRAINER_PARAMS, weights_model
    from aligner.learn import make_trainer

    same = make_trainer("orbit", **dict(DEFAULT_TRAINER_PARAMS, epochs=1, eval_train=False))
    again, fitted = fit_weights(prepared, same, refine=False)
    assert fitted is same and again.refiner is None
    np.testing.assert_array_equal(again.weights, trainer.w_)
    assert model.training["trainer_params"] == again.training["trainer_params"] == same.get_params()
    rebuilt = weights_model(prepared, fitted, refine=False)
    np.testing.assert_array_equal(rebuilt.weights, trainer.w_)
    assert rebuilt.training["best_epoch"] == fitted.best_epoch_
    assert model.training["classifier_folds"] == 0
