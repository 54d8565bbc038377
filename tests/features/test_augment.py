"""Simulated recording conditions for multi-condition training (aligner.features.augment)."""

import json
from pathlib import Path

import numpy as np
import pytest

from aligner.features.augment import (AugmentationRecipe, Augmenter, RecipeError, SpeechPool, simulate_rooms,
                                      telephone_line)

from tests.conftest import TIMIT, needs_timit, one_line_error, run

REPO = Path(__file__).resolve().parents[2]
SR = 16000
NO_ROOMS = dict(room_probability=0.0)


def _tone(freq, seconds=1.0, amp=0.1):
    t = np.arange(int(seconds * SR)) / SR
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _band_power(x, lo, hi):
    spectrum = np.abs(np.fft.rfft(x)) ** 2
    f = np.fft.rfftfreq(len(x), 1 / SR)
    return float(spectrum[(f >= lo) & (f < hi)].sum())


def test_the_recipe_file_in_recipes_is_the_default():
    shipped = json.loads((REPO / "recipes" / "conditions" / "multi-condition.json").read_text())
    assert AugmentationRecipe.from_dict(shipped) == AugmentationRecipe()
    assert shipped == AugmentationRecipe().to_dict()


@pytest.mark.parametrize("values, words", [
    ({"copies": -1}, "copies"),
    ({"copies": 2.5}, "copies"),
    ({"noise_probability": 1.5}, "probability"),
    ({"snr_db": [30, 0]}, "snr_db"),
    ({"snr_db": "loud"}, "snr_db"),
    ({"noise_kinds": ["white", "traffic"]}, "noise_kinds"),
    ({"room_min_m": [3, 3]}, "room_min_m"),
    ({"room_min_m": [12, 3, 3]}, "room_min_m must not exceed"),
    ({"loudness": 3}, "unknown setting"),
])
def test_bad_recipe_values_are_refused_with_the_source_named(values, words):
    with pytest.raises(RecipeError, match=words) as info:
        AugmentationRecipe.from_dict(values, "my-recipe.json")
    assert "my-recipe.json" in str(info.value)


def test_an_unreadable_recipe_file_names_the_file(tmp_path):
    bad = tmp_path / "recipe.json"
    bad.write_text("{not json")
    with pytest.raises(RecipeError, match="recipe.json"):
        AugmentationRecipe.from_json_file(bad)


def test_copies_are_reproducible_distinct_and_the_clean_length():
    x = _tone(300) + 0.01 * np.random.default_rng(0).standard_normal(SR).astype(np.float32)
    augmenter = Augmenter(AugmentationRecipe(copies=3, **NO_ROOMS))
    a = augmenter.copies(x, "utt1", "spk1")
    b = Augmenter(AugmentationRecipe(copies=3, **NO_ROOMS)).copies(x, "utt1", "spk1")
    c = augmenter.copies(x, "utt2", "spk1")
    assert len(a) == 3
    for u, v, w in zip(a, b, c):
        assert u.shape == x.shape and u.dtype == np.float32 and np.all(np.isfinite(u))
        assert np.max(np.abs(u)) <= 1.0
        np.testing.assert_array_equal(u, v)  # same recipe, name and index: the same copy
        assert not np.array_equal(u, w)  # another utterance: other draws
        assert not np.allclose(u / max(np.max(np.abs(u)), 1e-9), x / np.max(np.abs(x)), atol=1e-3)
    assert not np.array_equal(a[0], a[1])


def test_noise_is_mixed_at_the_drawn_snr():
    x = _tone(500)
    recipe = AugmentationRecipe(copies=1, room_probability=0.0, noise_probability=1.0, noise_kinds=("white",),
                                snr_db=(10.0, 10.0), telephone_probability=0.0, clip_probability=0.0,
                                gain_db=(0.0, 0.0))
    y = Augmenter(recipe).copies(x, "u", "s")[0].astype(np.float64)
    noise = y - x
    snr = 10 * np.log10(np.mean(x.astype(np.float64) ** 2) / np.mean(noise ** 2))
    assert abs(snr - 10.0) < 0.2


def test_babble_never_holds_the_utterances_own_speaker():
    pool = SpeechPool.build(["a", "a", "b", "b"], [_tone(440), _tone(440), _tone(1000), _tone(1000)])
    rng = np.random.default_rng(0)
    babble = pool.babble(SR, "a", 3, rng)
    assert _band_power(babble, 950, 1050) > 1000 * _band_power(babble, 400, 480)
    assert pool.babble(SR, "a", 3, rng) is not None
    only_a = SpeechPool.build(["a"], [_tone(440)])
    assert only_a.babble(SR, "a", 3, rng) is None  # no other speaker: the caller falls back to pink noise


def test_speech_shaped_noise_follows_the_pools_spectrum():
    pool = SpeechPool.build(["a"], [_tone(700) + _tone(2500, amp=0.001)])
    noise = pool.speech_shaped(SR, np.random.default_rng(1))
    assert _band_power(noise, 600, 800) > 100 * _band_power(noise, 5000, 7000)


def test_telephone_line_keeps_the_voice_band_and_drops_the_rest():
    rng = np.random.default_rng(0)
    inside, outside = _tone(1000), _tone(6000)
    assert _band_power(telephone_line(inside, rng), 900, 1100) > 0.5 * _band_power(inside, 900, 1100)
    assert _band_power(telephone_line(outside, rng), 5900, 6100) < 1e-3 * _band_power(outside, 5900, 6100)


def test_simulated_rooms_start_at_the_direct_sound_and_keep_the_copy_in_time():
    pytest.importorskip("pyroomacoustics", reason="room simulation needs pyroomacoustics (the train extra)")
    recipe = AugmentationRecipe(copies=1, rooms=2, rt60_s=(0.3, 0.5), room_probability=1.0, noise_probability=0.0,
                                telephone_probability=0.0, clip_probability=0.0, gain_db=(0.0, 0.0))
    rooms = simulate_rooms(recipe)
    assert len(rooms) == 2
    for ir in rooms:
        assert int(np.argmax(np.abs(ir))) == 0 and ir[0] == pytest.approx(1.0)
        assert len(ir) > 0.1 * SR  # a reverberant tail, not a bare delay
    rng = np.random.default_rng(3)
    x = np.zeros(SR, np.float32)
    x[rng.integers(0, SR, 30)] = rng.choice([-0.5, 0.5], 30)  # clicks: the lag of the copy is sharp
    y = Augmenter(recipe).copies(x, "u", "s")[0]
    corr = np.correlate(y.astype(np.float64), x.astype(np.float64), "full")
    assert int(np.argmax(np.abs(corr))) - (len(x) - 1) == 0


def test_rooms_without_pyroomacoustics_name_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyroomacoustics(name, *args, **kwargs):
        if name == "pyroomacoustics":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyroomacoustics)
    with pytest.raises(RecipeError, match=r"aligner\[train\]"):
        simulate_rooms(AugmentationRecipe(rooms=1))


@needs_timit
def test_training_copies_carry_the_clean_frames_count():
    from aligner.alignment.training import fit_classifier, load_utterances
    from aligner.io.corpus import find_utterances

    utterances = [u for u in find_utterances(TIMIT)][:4]
    recipe = AugmentationRecipe(copies=2, **NO_ROOMS)
    data = load_utterances(utterances, warps=(), augment=recipe)
    for d in data:
        assert len(d.degraded) == 2
        assert all(c.shape == d.frames.shape for c in d.degraded)
        assert not np.allclose(d.degraded[0], d.frames)
    clean = load_utterances(utterances, warps=())
    np.testing.assert_array_equal(clean[0].frames, data[0].frames)  # the clean frames are untouched
    clf = fit_classifier(data, {"n_components": 50, "max_iter": 5, "kmeans_iter": 1, "max_train_frames": 0,
                                "pca_dims": 0})
    assert clf.log_prior.shape == (39,)


@needs_timit
def test_the_copies_join_the_refiner_training_scored_out_of_fold():
    """prepare_weight_training: each simulated-condition copy becomes a refiner-training row of
    its own (the recording's phones, starts and speaker, its own frames and out-of-fold scores);
    the recordings' rows, and the weights learnt from them, are unchanged by it."""
    from aligner.alignment.training import fit_weights, load_utterances, prepare_weight_training
    from aligner.io.corpus import find_utterances

    utts = [u for u in find_utterances(TIMIT) if u.utterance_id.startswith("sx")]
    speakers = sorted({u.speaker for u in utts})[:3]
    chosen = [u for s in speakers for u in [v for v in utts if v.speaker == s][:2]]
    data = load_utterances(chosen, warps=(), augment=AugmentationRecipe(copies=1, **NO_ROOMS))
    n = len(data)
    params = {"hidden": 32, "max_train_frames": 5000}
    with_copies = prepare_weight_training(data, params, n_folds=2, n_val_speakers=1)
    clean_only = prepare_weight_training(data, params, n_folds=2, n_val_speakers=1, condition_copies=False)
    assert clean_only.copies == 0 and len(clean_only.data) == n
    assert with_copies.copies == n and len(with_copies.data) == len(with_copies.inputs) == 2 * n
    assert with_copies.recordings == data
    for d, row, clean_scores, copy_scores in zip(data, with_copies.data[n:], with_copies.scores[:n],
                                                 with_copies.scores[n:]):
        assert row.name == f"{d.name}+copy0" and row.speaker == d.speaker
        np.testing.assert_array_equal(row.frames, d.degraded[0])
        np.testing.assert_array_equal(row.y, d.y)
        np.testing.assert_array_equal(row.starts_s, d.starts_s)
        assert copy_scores.shape == clean_scores.shape and not np.allclose(copy_scores, clean_scores)
    for a, b in zip(with_copies.scores[:n], clean_only.scores):  # the same out-of-fold classifiers
        np.testing.assert_array_equal(a, b)
    assert with_copies.val_idx == clean_only.val_idx and with_copies.train_idx == clean_only.train_idx
    assert all(i < n for i in with_copies.train_idx + with_copies.val_idx)
    model, _ = fit_weights(with_copies, "orbit", {"epochs": 1, "eval_train": False})
    plain, _ = fit_weights(clean_only, "orbit", {"epochs": 1, "eval_train": False})
    np.testing.assert_array_equal(model.weights, plain.weights)
    assert model.training["utterances"] == n and model.training["refiner_training_copies"] == n
    # the refiner learnt from the copies' decodes as well: another fit than the recordings' alone
    assert not np.array_equal(model.refiner.output_weights, plain.refiner.output_weights)


def test_cli_train_refuses_a_bad_recipe_in_one_line(tmp_path):
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"copies": 2, "snr_db": [40, 10]}))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    code, out = run("train", corpus, tmp_path / "model", "--augment", recipe)
    assert code == 1
    assert "recipe.json" in one_line_error(out) and "snr_db" in one_line_error(out)
    assert not (tmp_path / "model").exists()


def test_the_phone_line_recipe_makes_phone_lines_only():
    recipe = AugmentationRecipe.from_json_file(REPO / "recipes" / "conditions" / "phone-line.json")
    assert recipe.copies == 1 and recipe.telephone_probability == 1.0
    assert not recipe.simulates_rooms and recipe.clip_probability == 0.0  # needs no train extra


@needs_timit
def test_phone_line_training_hears_the_band_and_so_do_its_copies():
    from aligner.alignment.training import degraded_frames, load_utterances
    from aligner.features.band import PHONE_BAND_HZ, band_limited
    from aligner.features.mfcc import mfcc_features
    from aligner.io.audio import load_audio
    from aligner.io.corpus import find_utterances

    utterances = [u for u in find_utterances(TIMIT)][:2]
    recipe = AugmentationRecipe(copies=1, telephone_probability=1.0, noise_probability=0.0, **NO_ROOMS)
    data = load_utterances(utterances, warps=(), augment=recipe, front_band_hz=PHONE_BAND_HZ)
    samples = load_audio(utterances[0].audio)
    np.testing.assert_array_equal(data[0].frames, mfcc_features(band_limited(samples)))
    assert not np.allclose(data[0].frames, mfcc_features(samples))
    copies = degraded_frames(utterances, recipe, front_band_hz=PHONE_BAND_HZ)
    np.testing.assert_allclose(copies[utterances[0].name][0], data[0].degraded[0], atol=1e-5)


@needs_timit
def test_copies_can_be_heard_through_an_experts_front_end():
    """degraded_frames(front_end=model): each noisy copy denoised past the model's gate, as the
    expert trained on them will hear recordings (a matched front end)."""
    from aligner.alignment.model import AlignmentModel
    from aligner.alignment.training import corpus_augmenter, degraded_frames
    from aligner.features.denoise import DenoiseSettings, denoise
    from aligner.features.mfcc import mfcc_features
    from aligner.io.audio import load_audio
    from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir
    from aligner.io.corpus import find_utterances

    utterances = [u for u in find_utterances(TIMIT)][:2]
    recipe = AugmentationRecipe(copies=1, noise_probability=1.0, telephone_probability=0.0, snr_db=(5.0, 5.0),
                                **NO_ROOMS)
    front = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    front.front_denoise = DenoiseSettings(gate_db=-200.0)  # every copy passes
    copy = corpus_augmenter(utterances, recipe).copies(load_audio(utterances[0].audio), utterances[0].name,
                                                       utterances[0].speaker)[0]
    heard = degraded_frames(utterances, recipe, front_end=front)[utterances[0].name][0]
    np.testing.assert_allclose(heard, mfcc_features(denoise(copy, front.front_denoise)), atol=1e-5)
    assert not np.allclose(heard, degraded_frames(utterances, recipe)[utterances[0].name][0], atol=1e-2)
