"""Noise suppression before the multi-condition expert (aligner.features.denoise)."""

from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.conditions import attach_condition_expert
from aligner.alignment.model import AlignmentModel
from aligner.errors import ModelError
from aligner.features.denoise import (DenoisedSamples, DenoiseSettings, denoise, denoised_samples, is_noisy,
                                      noise_floor_db)
from aligner.features.dereverb import DereverbSettings, dereverberate, late_reverberation_db
from aligner.features.mfcc import mfcc_features
from aligner.io.audio import file_samples, load_audio
from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir, load_bundle, save_bundle

from tests.conftest import assert_reads_like
from tests.features.test_dereverb import _bursts, _room

DEMO = Path(__file__).resolve().parents[2] / "examples"
SR = 16000


def _noisy(x: np.ndarray, snr_db: float, seed: int = 3) -> np.ndarray:
    """``x`` plus white noise ``snr_db`` below its mean power."""
    noise = np.random.default_rng(seed).standard_normal(len(x))
    noise *= np.sqrt(np.mean(np.square(x, dtype=np.float64)) / np.mean(noise ** 2) / 10 ** (snr_db / 10))
    return (x + noise).astype(np.float32)


def _error_db(x: np.ndarray, clean: np.ndarray) -> float:
    return 10 * np.log10(np.mean(np.square(x.astype(np.float64) - clean)))


def test_the_gate_statistic_tells_noise_from_a_quiet_studio():
    dry = _bursts()
    studio = (dry + 1e-5 * np.random.default_rng(6).standard_normal(len(dry))).astype(np.float32)
    assert noise_floor_db(studio) < -50  # the pauses between the bursts are quiet
    assert noise_floor_db(dry) > -40  # exact zeros are digital silence: only the bursts count
    assert noise_floor_db(_noisy(dry, 20.0)) > -30
    assert noise_floor_db(_noisy(dry, 5.0)) > noise_floor_db(_noisy(dry, 20.0))
    # a room's tails fill the gaps too: the expert judges its dereverberation gate first
    assert noise_floor_db(_room(dry)) > -30
    assert np.isnan(noise_floor_db(np.zeros(3000, np.float32)))  # silent: cannot say
    assert np.isnan(noise_floor_db(np.ones(100, np.float32)))  # too short to say
    gated = DenoiseSettings(gate_db=-30.0)
    assert not is_noisy(studio, gated) and is_noisy(_noisy(dry, 10.0), gated)
    assert is_noisy(dry, DenoiseSettings())  # no gate: always


def test_the_filter_takes_noise_out_and_keeps_the_speech():
    dry = _bursts()
    noisy = _noisy(dry, 5.0)
    clean = denoise(noisy, DenoiseSettings())
    assert clean.dtype == np.float32 and clean.shape == noisy.shape
    gain = _error_db(noisy, dry) - _error_db(clean, dry)
    assert gain > 3.0, gain  # closer to the clean signal by more than 3 dB
    loud = np.abs(np.convolve(np.abs(dry), np.ones(160) / 160, "same")) > 0.02
    kept = np.sum(np.square(clean[loud], dtype=np.float64)) / np.sum(np.square(dry[loud], dtype=np.float64))
    assert kept > 0.5, kept  # the bursts themselves stay
    # the gain floor bounds what is taken: a -60 dB floor takes more of the gaps than -3 dB does
    gaps = ~loud
    deep = denoise(noisy, DenoiseSettings(gain_floor_db=-60.0))
    shallow = denoise(noisy, DenoiseSettings(gain_floor_db=-3.0))
    assert np.mean(deep[gaps] ** 2) < np.mean(shallow[gaps] ** 2) < np.mean(noisy[gaps] ** 2)


@pytest.mark.parametrize("bad", [{"fft_size": 32}, {"hop": 300}, {"fft_size": 1000, "hop": 300},
                                 {"gain_floor_db": 3.0}, {"gain_floor_db": "-8"}, {"smoothing": 1.5},
                                 {"smoothing": True}, {"gate_db": float("nan")}, {"gate_db": 5.0},
                                 {"block_s": 1.0}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError, match="noise suppression"):
        DenoiseSettings(**bad)


def test_settings_from_json_are_checked():
    s = DenoiseSettings(gate_db=-32.5)
    assert DenoiseSettings.from_dict(s.to_dict()) == s
    with pytest.raises(ValueError, match="unknown noise suppression settings: floor"):
        DenoiseSettings.from_dict({"floor": -8})
    with pytest.raises(ValueError, match="must be an object"):
        DenoiseSettings.from_dict([512, 128])


def test_a_long_recording_is_denoised_block_by_block(tmp_path):
    import soundfile as sf

    noisy = _noisy(_bursts(13.0), 5.0)
    settings = DenoiseSettings(block_s=5.0)
    sf.write(tmp_path / "x.wav", noisy, SR, subtype="FLOAT")
    whole = denoise(load_audio(tmp_path / "x.wav"), settings)
    lazy = denoised_samples(file_samples(tmp_path / "x.wav"), settings)
    assert isinstance(lazy, DenoisedSamples)
    assert_reads_like(lazy, whole, ((0, 400), (79990, 80010), (len(noisy) - 999, len(noisy)), (123456, 170001)),
                      1e-6, 1e-3)
    short = denoised_samples(noisy[:3 * SR], settings)  # one block: filtered at once, as an array
    assert isinstance(short, np.ndarray) and short.shape == (3 * SR,)


def _with_front_end(denoise_gate: float | None, dereverb_gate: float | None = 1e3) -> AlignmentModel:
    """The shipped model with its own classifier as a multi-condition expert (other weights, so
    routing shows) that dereverberates past ``dereverb_gate`` and denoises past
    ``denoise_gate``; the energy-range gate sends every recording to it."""
    base = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    expert = base.expert_view(base.classifier, base.weights * np.array([1, 0, 0, 0, 0, 3, 0]), base.refiner)
    attach_condition_expert(base, expert, 3.6, 199.0, {"note": "test"}, None, None,
                            DereverbSettings(gate_db=dereverb_gate), DenoiseSettings(gate_db=denoise_gate))
    return base


def test_the_expert_reads_denoised_frames_past_its_gate_unless_it_dereverberates():
    samples = load_audio(DEMO / "demo.wav")
    noisy = _noisy(samples, 5.0)
    frames = mfcc_features(noisy)
    routed = _with_front_end(noise_floor_db(noisy) - 1.0)
    decoder, scores, used = routed.scored(frames, noisy)
    assert decoder is routed.condition_expert
    np.testing.assert_array_equal(used, mfcc_features(denoise(noisy, decoder.front_denoise)))
    np.testing.assert_array_equal(scores, decoder.classifier.scores(used))
    assert routed.training["condition_expert"]["front_denoise"]["gate_db"] == decoder.front_denoise.gate_db
    kept = _with_front_end(noise_floor_db(noisy) + 1.0)  # below the gate: the frames as they are
    decoder, _, used = kept.scored(frames, noisy)
    assert decoder is kept.condition_expert and used is frames
    # a recording past both gates is dereverberated, not denoised
    wet = _room(noisy)
    both = _with_front_end(-200.0, late_reverberation_db(wet) - 0.01)
    _, _, used = both.scored(None, wet)
    np.testing.assert_array_equal(used, mfcc_features(dereverberate(wet, both.condition_expert.front_dereverb)))
    assert both.condition_expert.cleaned(samples, reverberant=False) is not None  # denoised when not reverberant


def test_noise_suppression_survives_saving_and_damage_is_refused(tmp_path):
    routed = _with_front_end(-31.5)
    routed.save(tmp_path / "m")
    loaded = AlignmentModel.load(tmp_path / "m")
    assert loaded.condition_expert.front_denoise == DenoiseSettings(gate_db=-31.5)
    assert loaded.front_denoise is None
    routed.condition_expert.save(tmp_path / "alone")  # the expert on its own, as adapt saves it
    alone = AlignmentModel.load(tmp_path / "alone")
    assert alone.front_denoise == DenoiseSettings(gate_db=-31.5) and alone.condition_expert is None
    noisy = _noisy(load_audio(DEMO / "demo.wav"), 5.0)
    np.testing.assert_array_equal(alone.frames_of(noisy), mfcc_features(denoise(noisy, alone.front_denoise)))
    arrays, params, manifest = load_bundle(tmp_path / "m", ALIGNMENT_KIND)
    params["alignment"]["condition_expert"]["front_denoise"]["smoothing"] = 2.0
    save_bundle(tmp_path / "m2", ALIGNMENT_KIND, arrays, params, manifest["training"])
    with pytest.raises(ModelError, match="noise suppression smoothing"):
        AlignmentModel.load(tmp_path / "m2")


def test_digital_silence_spliced_in_does_not_hide_the_noise():
    """A second of zeros before a noisy recording (an edited file, a muted stretch) would be its
    quietest frames: they are left out of the gate and of the noise estimate."""
    dry = _bursts()
    noisy = _noisy(dry, 5.0)
    padded = np.concatenate([np.zeros(SR, np.float32), noisy])
    assert abs(noise_floor_db(padded) - noise_floor_db(noisy)) < 0.5
    clean = denoise(padded, DenoiseSettings())[SR:]
    assert _error_db(noisy, dry) - _error_db(clean, dry) > 3.0
    assert np.all(denoise(np.zeros(2 * SR, np.float32), DenoiseSettings()) == 0.0)  # silence stays silent
