"""A model's condition expert (:mod:`aligner.alignment.conditions`): the entropy gate, routing,
saving and loading, and refusing damaged expert entries."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from aligner.alignment.conditions import (attach_condition_expert, gate_for_false_alarm,
                                          level_statistics, posterior_entropy)
from aligner.alignment.model import AlignmentModel
from aligner.errors import ModelError
from aligner.features.mfcc import mfcc_features
from aligner.io.audio import load_audio
from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir
from aligner.phones.sets import get_phone_set

from tests.conftest import TIMIT, needs_timit

pytestmark = pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")


def energy_range_db(samples) -> float:
    """The energy range (dB) of :func:`level_statistics`, without the band."""
    return level_statistics(samples, band=False)[0]

DEMO = Path(__file__).resolve().parents[2] / "examples"


def test_entropy_of_uniform_and_certain_posteriors():
    clf = SimpleNamespace(prior_division=True, log_prior=np.log(np.full(4, 0.25)))
    uniform = np.log(np.full((5, 4), 0.25)) - clf.log_prior  # scores: log posteriors minus log priors
    assert posterior_entropy(clf, uniform) == pytest.approx(np.log(4))
    certain = np.log(np.array([[1 - 3e-9, 1e-9, 1e-9, 1e-9]] * 5)) - clf.log_prior
    assert posterior_entropy(clf, certain) < 1e-6
    plain = SimpleNamespace(prior_division=False, log_prior=None)
    assert posterior_entropy(plain, np.log(np.full((3, 2), 0.5))) == pytest.approx(np.log(2))


def test_entropy_of_a_long_recording_by_blocks_is_the_whole_arrays():
    """posterior_entropy exponentiates the posteriors a block of frames at a time: the same mean
    as the whole (T, n_classes) array's, bit for bit, across block edges."""
    from aligner.alignment import conditions

    rng = np.random.default_rng(7)
    log_prior = np.log(rng.dirichlet(np.ones(43))).astype(np.float32)
    clf = SimpleNamespace(prior_division=True, log_prior=log_prior)
    for T in (conditions.ENTROPY_BLOCK_FRAMES - 1, 3 * conditions.ENTROPY_BLOCK_FRAMES + 5):
        logits = 3.0 * rng.standard_normal((T, 43))
        log_post = (logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))).astype(np.float32)
        scores = log_post - log_prior
        whole = scores + log_prior
        assert posterior_entropy(clf, scores) == float(-(np.exp(whole) * whole).sum(axis=1, dtype=np.float64).mean())


def test_gate_leaves_the_chosen_share_above_it():
    values = np.random.default_rng(0).normal(1.5, 0.1, 1000)
    gate = gate_for_false_alarm(values, 0.1)
    assert np.mean(values > gate) == pytest.approx(0.1, abs=0.002)
    with pytest.raises(ValueError, match="at least 10"):
        gate_for_false_alarm(values[:5], 0.1)
    with pytest.raises(ValueError, match="strictly between"):
        gate_for_false_alarm(values, 1.0)


def test_energy_range_of_a_loud_and_a_quiet_part(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    loud = rng.normal(0, 0.1, 16000 * 2)
    x = np.concatenate([loud, loud[:16000] * 10 ** (-30 / 20)])  # 30 dB quieter for a third
    assert energy_range_db(x) == pytest.approx(30.0, abs=1.0)
    noisy = x + rng.normal(0, 0.01, len(x))  # the floor rises to 20 dB below the loud part
    assert energy_range_db(noisy) == pytest.approx(20.0, abs=1.5)
    assert energy_range_db(x * 0.01) == pytest.approx(energy_range_db(x), abs=1e-6)  # level-free,
    assert energy_range_db(x * 1e-5) == pytest.approx(energy_range_db(x), abs=1e-6)  # even 100 dB down
    import soundfile as sf
    from aligner.alignment import conditions
    from aligner.io.audio import file_samples

    sf.write(tmp_path / "x.wav", x.astype(np.float32), 16000, subtype="FLOAT")
    whole = energy_range_db(load_audio(tmp_path / "x.wav"))  # one block, in memory (DC removed as on reading)
    monkeypatch.setattr(conditions, "ENERGY_BLOCK_FRAMES", 37)  # many blocks, read from the file
    assert energy_range_db(file_samples(tmp_path / "x.wav")) == pytest.approx(whole, abs=1e-6)


def test_high_band_share_sees_a_phone_line(tmp_path, monkeypatch):
    from scipy import signal

    rng = np.random.default_rng(2)
    white = rng.normal(0, 0.1, 16000 * 3)
    # white noise: as much energy per Hz above 3.4 kHz (4.6 kHz of band) as within 300-3400 Hz (3.1 kHz)
    assert level_statistics(white)[1] == pytest.approx(10 * np.log10(4600 / 3100), abs=0.5)
    line = signal.sosfilt(signal.butter(8, [300, 3000], btype="bandpass", fs=16000, output="sos"), white)
    assert level_statistics(line)[1] < -20.0
    speechlike = white * np.repeat(rng.uniform(0.05, 1.0, 30), 1600)  # loud and quiet stretches
    share = level_statistics(speechlike)[1]
    assert level_statistics(speechlike * 1e-3)[1] == pytest.approx(share, abs=1e-3)  # level-free
    assert level_statistics(speechlike, band=False) == (pytest.approx(level_statistics(speechlike)[0]), None)
    assert level_statistics(np.zeros(100)) == (0.0, 0.0)  # shorter than a frame: no evidence
    import soundfile as sf
    from aligner.alignment import conditions
    from aligner.io.audio import file_samples

    sf.write(tmp_path / "l.wav", line.astype(np.float32), 16000, subtype="FLOAT")
    monkeypatch.setattr(conditions, "ENERGY_BLOCK_FRAMES", 37)  # many blocks, read from the file
    assert level_statistics(file_samples(tmp_path / "l.wav"))[1] < -20.0


@pytest.fixture(scope="module")
def shipped():
    return AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))


def _with_expert(model, gate, range_gate=None, band_gate=None):
    """The shipped model, its own classifier as expert with other weights (so routing shows)."""
    base = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    expert = base.expert_view(model.classifier, model.weights * np.array([1, 0, 0, 0, 0, 3, 0]), None)
    attach_condition_expert(base, expert, gate, range_gate, {"note": "test"}, band_gate)
    return base


def test_routing_follows_the_gate(shipped):
    frames = mfcc_features(load_audio(DEMO / "demo.wav"), 16000)
    scores = shipped.classifier.scores(frames)
    entropy = posterior_entropy(shipped.classifier, scores)
    assert 0 < entropy < np.log(shipped.classifier.n_classes)
    below = _with_expert(shipped, entropy * 1.01)
    assert below.scored(frames)[0] is below
    np.testing.assert_array_equal(below.scored(frames)[1], scores)
    above = _with_expert(shipped, entropy * 0.99)
    model, expert_scores, _ = above.scored(frames)
    assert model is above.condition_expert
    assert model.confidence is above.confidence and model.durations is above.durations
    np.testing.assert_array_equal(expert_scores, scores)  # the same classifier here
    assert shipped.scored(frames)[0] is shipped  # no expert: always itself
    above.confidence = None  # what the model and its expert share stays shared
    assert above.condition_expert.confidence is None and above.condition_expert.durations is above.durations
    samples = load_audio(DEMO / "demo.wav")
    level_range = energy_range_db(samples)
    narrow = _with_expert(shipped, entropy * 1.01, level_range * 1.01)  # the range gate alone routes it
    assert narrow.scored(frames, samples)[0] is narrow.condition_expert
    assert narrow.scored(frames)[0] is narrow  # without samples only the entropy counts
    wide = _with_expert(shipped, entropy * 1.01, level_range * 0.99)
    assert wide.scored(frames, samples)[0] is wide
    share = level_statistics(samples)[1]
    banded = _with_expert(shipped, entropy * 1.01, level_range * 0.99, share + 0.1)  # the band gate alone
    assert banded.scored(frames, samples)[0] is banded.condition_expert
    assert banded.scored(frames)[0] is banded
    full = _with_expert(shipped, entropy * 1.01, None, share - 0.1)
    assert full.scored(frames, samples)[0] is full


def test_expert_decodes_and_survives_saving(shipped, tmp_path):
    symbols = (DEMO / "demo.phones").read_text().split()
    audio = load_audio(DEMO / "demo.wav")
    pset = get_phone_set("arpabet")
    routed = _with_expert(shipped, 0.01, 150.0, -12.5)  # every recording goes to the expert
    direct = routed.condition_expert.align(audio, symbols, pset)
    assert routed.align(audio, symbols, pset) == direct
    assert direct != shipped.align(audio, symbols, pset)  # its weights differ, and so do its times
    routed.save(tmp_path / "gated")
    loaded = AlignmentModel.load(tmp_path / "gated")
    assert loaded.condition_gate == pytest.approx(0.01) and loaded.condition_range_gate == pytest.approx(150.0)
    assert loaded.condition_band_gate == pytest.approx(-12.5)
    np.testing.assert_allclose(loaded.condition_expert.weights, routed.condition_expert.weights)
    assert loaded.training["condition_expert"]["note"] == "test"
    assert loaded.align(audio, symbols, pset) == direct


@pytest.mark.parametrize("damage", ["gate", "range gate", "band gate", "weights", "missing classifier"])
def test_damaged_expert_entries_are_refused(shipped, tmp_path, damage):
    routed = _with_expert(shipped, 1.0, 30.0, -20.0)
    routed.save(tmp_path / "m")
    params = json.loads((tmp_path / "m" / "alignment.json").read_text())
    if damage == "gate":
        params["condition_expert"]["gate_entropy_nats"] = 99.0
    elif damage == "range gate":
        params["condition_expert"]["gate_energy_range_db"] = "30"
    elif damage == "band gate":
        params["condition_expert"]["gate_high_band_db"] = float("nan")
    elif damage == "weights":
        params["condition_expert"]["weights"] = [1.0, 2.0]
    if damage == "missing classifier":
        from aligner.io.bundles import load_bundle, save_bundle

        arrays, p, manifest = load_bundle(tmp_path / "m", ALIGNMENT_KIND)
        del arrays["expert_classifier"]
        save_bundle(tmp_path / "m2", ALIGNMENT_KIND, arrays, p, manifest["training"])
        target = tmp_path / "m2"
    else:
        from aligner.io.bundles import load_bundle, save_bundle

        arrays, _, manifest = load_bundle(tmp_path / "m", ALIGNMENT_KIND)
        save_bundle(tmp_path / "m2", ALIGNMENT_KIND, arrays, {"alignment": params}, manifest["training"])
        target = tmp_path / "m2"
    with pytest.raises(ModelError, match="not a usable alignment model"):
        AlignmentModel.load(target)


def test_expert_of_other_classes_is_refused(shipped):
    other = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    other.phone_symbols = {"a": "aa"}
    with pytest.raises(ValueError, match="same classes"):
        attach_condition_expert(AlignmentModel.load(default_model_dir(ALIGNMENT_KIND)), other, 1.0)


@needs_timit
def test_adapt_on_a_noisy_corpus_adapts_the_expert(tmp_path):
    import shutil

    import soundfile as sf

    from aligner import api

    rng = np.random.default_rng(0)
    speaker = tmp_path / "c" / "dr1-fvmh0"
    speaker.mkdir(parents=True)
    for wav in sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[:8]:
        x = load_audio(wav).astype(np.float64)
        noise = rng.normal(0, 1, len(x)) * np.sqrt(np.mean(x ** 2) / 10 ** 0.5)  # white noise at 5 dB SNR
        sf.write(speaker / wav.name, (x + noise).astype(np.float32), 16000, subtype="FLOAT")
        shutil.copy(wav.with_suffix(".txt"), speaker / wav.with_suffix(".txt").name)
    messages = []
    api.adapt(tmp_path / "c", tmp_path / "adapted", rounds=1, message=messages.append)
    assert messages[0].startswith("100% of the audio looks degraded") and "multi-condition expert" in messages[0]
    adapted = AlignmentModel.load(tmp_path / "adapted")
    shipped_model = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    assert adapted.condition_expert is None  # an adapted model is one decoder
    np.testing.assert_array_equal(adapted.classifier.landmarks, shipped_model.condition_expert.classifier.landmarks)
    np.testing.assert_allclose(adapted.weights, shipped_model.condition_expert.weights)
    record = adapted.training["adapted"]["condition_expert"]
    assert record["adapted"] is True and record["share_of_audio_through_its_gates"] == 1.0
    assert adapted.training["adapted"]["settings"]["classifier_prior"] == 3.0  # MULTI_CONDITION_PRIOR
