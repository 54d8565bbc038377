"""The phone-line front end (:mod:`aligner.features.band`) and a model's band expert: routing below
the band gate with the expert's own band-limited frames, saving, loading and damaged entries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.conditions import attach_condition_expert, level_statistics
from aligner.alignment.model import AlignmentModel
from aligner.errors import ModelError
from aligner.features.band import PHONE_BAND_HZ, BandLimitedSamples, band_limited, check_band
from aligner.features.mfcc import mfcc_features
from aligner.io.audio import file_samples, load_audio
from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir, load_bundle, save_bundle
from aligner.phones.sets import get_phone_set

from tests.conftest import TIMIT, assert_reads_like, needs_timit

DEMO = Path(__file__).resolve().parents[2] / "examples"


def _tone(hz: float, seconds: float = 1.0) -> np.ndarray:
    return (0.3 * np.sin(2 * np.pi * hz * np.arange(int(16000 * seconds)) / 16000)).astype(np.float32)


def _rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(x[2000:-2000], dtype=np.float64))))


def test_the_band_keeps_a_phone_line_and_drops_the_rest():
    for hz, kept in ((1000.0, True), (3000.0, True), (100.0, False), (6000.0, False)):
        y = band_limited(_tone(hz))
        assert y.dtype == np.float32 and y.shape == (16000,)
        ratio = _rms(y) / _rms(_tone(hz))
        assert (ratio > 0.9) if kept else (ratio < 0.05), (hz, ratio)
    # zero phase: a band-limited click stays where it was
    click = np.zeros(16000, np.float32)
    click[8001] = 1.0
    assert abs(int(np.argmax(np.abs(band_limited(click)))) - 8001) <= 2
    assert band_limited(np.zeros(10, np.float32)).shape == (10,)  # too short to filter: silence, not an error


def test_a_long_recording_is_band_limited_block_by_block(tmp_path):
    import soundfile as sf

    x = np.random.default_rng(3).normal(0, 0.1, 16000 * 4).astype(np.float32)
    sf.write(tmp_path / "x.wav", x, 16000, subtype="FLOAT")
    whole = band_limited(load_audio(tmp_path / "x.wav"))
    lazy = band_limited(file_samples(tmp_path / "x.wav"))
    assert isinstance(lazy, BandLimitedSamples)
    assert_reads_like(lazy, whole, ((0, 400), (12345, 23456), (len(x) - 999, len(x)), (30001, 30002)), 1e-5, 2e-3)


@pytest.mark.parametrize("bad", [(0, 3400), (3400, 300), (300, 4500), ("300", 3400), (True, 3400), (300,), None])
def test_bad_bands_are_refused(bad):
    with pytest.raises(ValueError, match="front-end band"):
        check_band(bad)


@pytest.fixture(scope="module")
def shipped():
    return AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))


def _with_band_expert(band_gate: float) -> AlignmentModel:
    """The shipped model with its own classifier as both experts (other weights, so routing
    shows), the band expert hearing the phone band; entropy and range gates out of reach."""
    base = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    expert = base.expert_view(base.classifier, base.weights * np.array([1, 0, 0, 0, 0, 3, 0]), None)
    band = base.expert_view(base.classifier, base.weights * np.array([1, 0, 0, 0, 0, 2, 0]), base.refiner,
                            PHONE_BAND_HZ)
    attach_condition_expert(base, expert, 3.6, 1.0, {"note": "test"}, band_gate, band)
    return base


def test_below_the_band_gate_the_band_expert_decodes_its_own_frames(shipped):
    samples = load_audio(DEMO / "demo.wav")
    frames = mfcc_features(samples)
    share = level_statistics(samples)[1]
    routed = _with_band_expert(share + 0.1)
    decoder, scores, used = routed.scored(frames, samples)
    assert decoder is routed.condition_band_expert and decoder.front_band_hz == PHONE_BAND_HZ
    np.testing.assert_array_equal(used, mfcc_features(band_limited(samples)))  # not the full-band frames
    np.testing.assert_array_equal(scores, decoder.classifier.scores(used))
    assert decoder.durations is routed.durations and decoder.confidence is routed.confidence
    kept = _with_band_expert(share - 0.1)
    decoder, _, used = kept.scored(frames, samples)
    assert decoder is kept and used is frames
    symbols = (DEMO / "demo.phones").read_text().split()
    pset = get_phone_set("arpabet")
    assert routed.align(samples, symbols, pset) == routed.condition_band_expert.align(samples, symbols, pset)


def test_a_band_expert_survives_saving(tmp_path):
    routed = _with_band_expert(-12.5)
    routed.save(tmp_path / "m")
    loaded = AlignmentModel.load(tmp_path / "m")
    assert loaded.condition_band_expert.front_band_hz == PHONE_BAND_HZ and loaded.front_band_hz is None
    np.testing.assert_allclose(loaded.condition_band_expert.weights, routed.condition_band_expert.weights)
    assert loaded.training["condition_expert"]["band_expert_front_band_hz"] == list(PHONE_BAND_HZ)
    samples = load_audio(DEMO / "demo.wav")
    symbols = (DEMO / "demo.phones").read_text().split()
    pset = get_phone_set("arpabet")
    assert loaded.align(samples, symbols, pset) == routed.align(samples, symbols, pset)
    # the band expert on its own (as adapt saves it) keeps its front end
    routed.condition_band_expert.save(tmp_path / "alone")
    alone = AlignmentModel.load(tmp_path / "alone")
    assert alone.front_band_hz == PHONE_BAND_HZ and alone.condition_expert is None
    assert alone.align(samples, symbols, pset) == routed.condition_band_expert.align(samples, symbols, pset)


@pytest.mark.parametrize("damage", ["band", "weights", "missing classifier", "no band gate", "no expert"])
def test_damaged_band_expert_entries_are_refused(tmp_path, damage):
    _with_band_expert(-20.0).save(tmp_path / "m")
    arrays, params, manifest = load_bundle(tmp_path / "m", ALIGNMENT_KIND)
    entry = params["alignment"]["condition_expert"]
    if damage == "band":
        entry["band_expert"]["front_band_hz"] = [3000, 300]
    elif damage == "weights":
        entry["band_expert"]["weights"] = [1.0]
    elif damage == "missing classifier":
        del arrays["band_expert_classifier"]
    elif damage == "no expert":  # band arrays left without the entries that give them a role
        del params["alignment"]["condition_expert"], arrays["expert_classifier"]
    else:
        del entry["gate_high_band_db"]
    save_bundle(tmp_path / "m2", ALIGNMENT_KIND, arrays, params, manifest["training"])
    with pytest.raises(ModelError, match="not a usable alignment model"):
        AlignmentModel.load(tmp_path / "m2")


def test_a_damaged_front_band_is_refused(tmp_path):
    band = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    band.front_band_hz = PHONE_BAND_HZ
    band.save(tmp_path / "m")
    params = json.loads((tmp_path / "m" / "alignment.json").read_text())
    assert params["front_band_hz"] == list(PHONE_BAND_HZ)
    arrays, p, manifest = load_bundle(tmp_path / "m", ALIGNMENT_KIND)
    p["alignment"]["front_band_hz"] = [300, "x"]
    save_bundle(tmp_path / "m2", ALIGNMENT_KIND, arrays, p, manifest["training"])
    with pytest.raises(ModelError, match="front-end band"):
        AlignmentModel.load(tmp_path / "m2")


def test_a_band_expert_needs_its_band_and_a_gate(shipped):
    base = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    plain = base.expert_view(base.classifier, base.weights, None)  # no front_band_hz
    with pytest.raises(ValueError, match="front-end band"):
        attach_condition_expert(base, plain, 3.0, None, None, -20.0, plain)
    band = base.expert_view(base.classifier, base.weights, None, PHONE_BAND_HZ)
    with pytest.raises(ValueError, match="band gate"):
        attach_condition_expert(base, plain, 3.0, None, None, None, band)


def _phone_line_corpus(folder: Path) -> Path:
    """8 recordings of one TIMIT speaker through simulated phone lines, with their words."""
    import shutil

    import soundfile as sf

    from aligner.features.augment import telephone_line

    speaker = folder / "dr1-fvmh0"
    speaker.mkdir(parents=True)
    for k, wav in enumerate(sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[:8]):
        line = telephone_line(load_audio(wav).astype(np.float64), np.random.default_rng([5, k]))
        sf.write(speaker / wav.name, line.astype(np.float32), 16000, subtype="FLOAT")
        shutil.copy(wav.with_suffix(".txt"), speaker / wav.with_suffix(".txt").name)
    return folder


@needs_timit
def test_adapt_on_a_phone_line_corpus_adapts_the_band_expert(tmp_path):
    from aligner import api

    shipped_model = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    if shipped_model.condition_band_expert is None:
        pytest.skip("the shipped model carries no band expert")
    _phone_line_corpus(tmp_path / "c")
    messages = []
    api.adapt(tmp_path / "c", tmp_path / "adapted", rounds=1, message=messages.append)
    assert "phone-line expert" in messages[0]
    adapted = AlignmentModel.load(tmp_path / "adapted")
    assert adapted.condition_expert is None and adapted.front_band_hz == PHONE_BAND_HZ  # it keeps its front end
    band = shipped_model.condition_band_expert
    np.testing.assert_array_equal(adapted.classifier.landmarks, band.classifier.landmarks)
    np.testing.assert_allclose(adapted.weights, band.weights)
    assert adapted.training["adapted"]["condition_expert"]["band_expert"] is True
    assert adapted.training["adapted"]["settings"]["classifier_prior"] == 10.0  # the defaults


@needs_timit
def test_the_band_expert_adapted_on_dask_gives_the_serial_model(tmp_path):
    """Dask workers load the phone-line expert from a bundle of its own, with its band, and hear
    the recordings through it: the same frames and model as one process."""
    distributed = pytest.importorskip("distributed", reason="Dask not installed (pip install 'aligner[dask]')")
    import warnings

    from aligner import api

    if AlignmentModel.load(default_model_dir(ALIGNMENT_KIND)).condition_band_expert is None:
        pytest.skip("the shipped model carries no band expert")
    corpus = _phone_line_corpus(tmp_path / "c")
    one = api.adapt(corpus, tmp_path / "one", rounds=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            dask = api.adapt(corpus, tmp_path / "dask", rounds=1, scheduler=cluster.scheduler_address)
    assert (one.rounds[0].files_used, one.rounds[0].frames) == (dask.rounds[0].files_used, dask.rounds[0].frames)
    a, b = AlignmentModel.load(tmp_path / "one"), AlignmentModel.load(tmp_path / "dask")
    assert a.front_band_hz == b.front_band_hz == PHONE_BAND_HZ
    np.testing.assert_allclose(a.classifier.weights, b.classifier.weights, rtol=1e-4, atol=1e-5)


def test_the_band_is_scipys_cascade_without_importing_scipy_signal():
    """The same samples as scipy.signal's resample_poly, sosfiltfilt, resample_poly (what the
    phone-line model was trained through), computed without importing scipy.signal, whose import
    costs each aligning process over a second."""
    import subprocess
    import sys

    from scipy import signal

    for n in (16000, 16001, 4410, 90):
        x = np.random.default_rng(n).normal(0, 0.1, n)
        low = signal.resample_poly(x, 1, 2)
        sos = signal.butter(6, list(PHONE_BAND_HZ), btype="bandpass", fs=8000, output="sos")
        want = signal.resample_poly(signal.sosfiltfilt(sos, low), 2, 1)[:n].astype(np.float32)
        np.testing.assert_allclose(band_limited(x), want, rtol=0, atol=1e-6)
    code = ("import sys, numpy as np; from aligner.features.band import band_limited; "
            "band_limited(np.ones(16000)); print('scipy.signal' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
