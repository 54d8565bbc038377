"""Dereverberation (:mod:`aligner.features.dereverb`) and the multi-condition expert that uses it:
the STFT, the WPE filter on a simulated room, the gate's statistic, block-by-block filtering,
settings checks, routing, saving, loading and damaged entries, adaptation's frames, and the same bits
whether numba compiles the filter or loads it from its cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.conditions import attach_condition_expert
from aligner.alignment.model import AlignmentModel
from aligner.errors import ModelError
from aligner.features.dereverb import (DereverbSettings, DereverberatedSamples, dereverberate,
                                       dereverberated_samples, is_reverberant, istft,
                                       late_reverberation_db, stft)
from aligner.features.mfcc import mfcc_features
from aligner.io.audio import file_samples, load_audio
from aligner.io.bundles import ALIGNMENT_KIND, default_model_dir, load_bundle, save_bundle
from aligner.phones.sets import get_phone_set

from tests.conftest import TIMIT, assert_reads_like, needs_timit

DEMO = Path(__file__).resolve().parents[2] / "examples"
SR = 16000


def _bursts(seconds: float = 4.0, seed: int = 0) -> np.ndarray:
    """Dry 'syllables': 120 ms bursts of coloured noise every 300 ms, silent between them."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    x = np.zeros(n)
    for start in range(int(0.05 * SR), n - int(0.15 * SR), int(0.3 * SR)):
        burst = np.convolve(rng.standard_normal(int(0.12 * SR)), [1.0, 0.9, 0.5], "same")
        x[start:start + len(burst)] = burst * np.hanning(len(burst)) ** 0.2
    return (0.1 * x).astype(np.float32)


def _room(x: np.ndarray, rt60_s: float = 0.6, seed: int = 1) -> np.ndarray:
    """``x`` in a room: the direct sound plus an exponentially decaying noise tail (-60 dB at
    ``rt60_s``) carrying as much energy as the direct sound."""
    rng = np.random.default_rng(seed)
    n = int(rt60_s * SR)
    tail = rng.standard_normal(n) * np.exp(-6.9 * np.arange(n) / n)
    tail[: int(0.005 * SR)] = 0.0
    ir = tail / np.sqrt(np.sum(tail ** 2))
    ir[0] = 1.0
    return np.convolve(x, ir)[: len(x)].astype(np.float32)


def _gap_energy(x: np.ndarray, dry: np.ndarray) -> float:
    """Energy of ``x`` where the dry signal is silent (the reverberant tails), in dB."""
    silent = np.abs(np.convolve(np.abs(dry), np.ones(160) / 160, "same")) < 1e-6
    return 10 * np.log10(np.sum(np.square(x[silent], dtype=np.float64)) + 1e-12)


def test_the_stft_resynthesises_its_input():
    x = np.random.default_rng(2).standard_normal(12345)
    for fft_size, hop in ((512, 128), (1024, 256), (256, 128)):
        np.testing.assert_allclose(istft(stft(x, fft_size, hop), fft_size, hop, len(x)), x, atol=1e-9)


def test_the_filter_solve_is_numpys_without_numbas_linalg():
    """The filter's normal equations are solved by Cholesky factors in numba, giving what
    np.linalg.solve gives (numba's np.linalg would load its LAPACK bindings in every process)."""
    from aligner.features.dereverb import _solve_positive_definite

    rng = np.random.default_rng(5)
    for K in (1, 5, 20):
        A = rng.standard_normal((K, 3 * K)) + 1j * rng.standard_normal((K, 3 * K))
        R = A @ A.conj().T + 1e-3 * np.eye(K)
        p = rng.standard_normal(K) + 1j * rng.standard_normal(K)
        np.testing.assert_allclose(_solve_positive_definite(R, p), np.linalg.solve(R, p), rtol=1e-9, atol=1e-12)


_DEREVERB_DIGEST = """
import hashlib
import numpy as np
from aligner.features.dereverb import DereverbSettings, dereverberate
rng = np.random.default_rng(3)
dry = np.convolve(rng.standard_normal(3 * 16000), [1.0, 0.9, 0.5], "same") * (rng.random(3 * 16000) < 0.4)
tail = rng.standard_normal(8000) * np.exp(-np.arange(8000) / 1600.0)
tail[0] = 1.0
wet = np.convolve(dry, tail)[:len(dry)].astype(np.float32)
print(hashlib.sha256(dereverberate(wet, DereverbSettings()).tobytes()).hexdigest())
"""


def test_a_fresh_compile_and_the_cached_code_dereverberate_alike(tmp_path):
    """The same samples, bit for bit, from a process that compiles the filter and from one that
    loads it from numba's cache (with fastmath they differed in the last bits: Dask workers and
    the local pool then wrote different boundaries for the same recording)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    digests = [subprocess.run([sys.executable, "-c", _DEREVERB_DIGEST], env=env, capture_output=True, text=True,
                              check=True).stdout.strip() for _ in range(2)]
    assert any((tmp_path / "numba-cache").rglob("*.nbc")), "the first process wrote no cache to load"
    assert len(digests[0]) == 64 and digests[0] == digests[1]


def test_wpe_removes_a_rooms_tails_and_keeps_the_speech():
    dry = _bursts()
    wet = _room(dry)
    clean = dereverberate(wet, DereverbSettings())
    assert clean.dtype == np.float32 and clean.shape == wet.shape
    removed = _gap_energy(wet, dry) - _gap_energy(clean, dry)
    assert removed > 4.0, removed  # the tails between the bursts fall by more than 4 dB
    loud = np.abs(np.convolve(np.abs(dry), np.ones(160) / 160, "same")) > 0.02
    kept = np.sum(np.square(clean[loud], dtype=np.float64)) / np.sum(np.square(wet[loud], dtype=np.float64))
    assert kept > 0.5, kept  # the bursts themselves stay
    # a click stays where it was: the filter only subtracts what its delay lets it predict
    click = np.zeros(SR, np.float32)
    click[8000] = 1.0
    assert int(np.argmax(np.abs(dereverberate(click, DereverbSettings())))) == 8000


def test_the_gate_statistic_tells_a_room_from_dry_speech_and_noise():
    dry = _bursts()
    noisy = (dry + 0.05 * np.random.default_rng(4).standard_normal(len(dry))).astype(np.float32)
    dry_db, noisy_db, room_db = (late_reverberation_db(x) for x in (dry, noisy, _room(dry)))
    assert abs(dry_db) < 0.05 and abs(noisy_db) < 0.05, (dry_db, noisy_db)
    assert room_db > 0.1, room_db
    assert np.isnan(late_reverberation_db(np.zeros(3000, np.float32)))  # silent: cannot say
    assert np.isnan(late_reverberation_db(np.ones(100, np.float32)))  # too short to say
    gated = DereverbSettings(gate_db=0.1)
    assert not is_reverberant(dry, gated) and is_reverberant(_room(dry), gated)
    assert is_reverberant(dry, DereverbSettings(gate_db=None))  # no gate: always


def test_a_long_recording_is_dereverberated_block_by_block(tmp_path):
    import soundfile as sf

    wet = _room(_bursts(13.0))
    settings = DereverbSettings(block_s=5.0, gate_db=None)
    sf.write(tmp_path / "x.wav", wet, SR, subtype="FLOAT")
    whole = dereverberate(load_audio(tmp_path / "x.wav"), settings)
    lazy = dereverberated_samples(file_samples(tmp_path / "x.wav"), settings)
    assert isinstance(lazy, DereverberatedSamples)
    cuts = ((0, 400), (79990, 80010), (len(wet) - 999, len(wet)), (123456, 170001))
    assert_reads_like(lazy, whole, cuts, 1e-6, 1e-3)
    # each block has its own filter: the 13 s differ from one filter over the whole recording
    one = dereverberate(wet, DereverbSettings(block_s=20.0))
    assert not np.allclose(one, whole, atol=1e-4)


@pytest.mark.parametrize("bad", [{"taps": 0}, {"taps": 2.5}, {"delay": True}, {"iterations": 11},
                                 {"hop": 300}, {"fft_size": 1000, "hop": 300}, {"gate_db": float("nan")},
                                 {"gate_db": "0.1"}, {"block_s": 1.0}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError, match="dereverberation"):
        DereverbSettings(**bad)


def test_settings_from_json_are_checked():
    s = DereverbSettings(gate_db=0.02)
    assert DereverbSettings.from_dict(s.to_dict()) == s
    with pytest.raises(ValueError, match="unknown dereverberation settings: taps_x"):
        DereverbSettings.from_dict({"taps_x": 3})
    with pytest.raises(ValueError, match="must be an object"):
        DereverbSettings.from_dict([20, 2])


def _with_dereverb(gate_db: float | None) -> AlignmentModel:
    """The shipped model with its own classifier as a multi-condition expert (other weights, so
    routing shows) that dereverberates past ``gate_db``; the energy-range gate sends every
    recording to it."""
    base = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    expert = base.expert_view(base.classifier, base.weights * np.array([1, 0, 0, 0, 0, 3, 0]), base.refiner)
    attach_condition_expert(base, expert, 3.6, 199.0, {"note": "test"}, None, None,
                            DereverbSettings(gate_db=gate_db))
    return base


def test_the_expert_reads_dereverberated_frames_past_its_gate():
    samples = load_audio(DEMO / "demo.wav")
    wet = _room(samples)
    frames = mfcc_features(wet)
    routed = _with_dereverb(late_reverberation_db(wet) - 0.01)
    decoder, scores, used = routed.scored(frames, wet)
    assert decoder is routed.condition_expert
    np.testing.assert_array_equal(used, mfcc_features(dereverberate(wet, decoder.front_dereverb)))
    np.testing.assert_array_equal(scores, decoder.classifier.scores(used))
    assert routed.training["condition_expert"]["front_dereverb"]["gate_db"] == decoder.front_dereverb.gate_db
    kept = _with_dereverb(late_reverberation_db(wet) + 0.01)  # below the gate: the frames as they are
    decoder, _, used = kept.scored(frames, wet)
    assert decoder is kept.condition_expert and used is frames
    symbols = (DEMO / "demo.phones").read_text().split()
    pset = get_phone_set("arpabet")
    assert routed.align(wet, symbols, pset) == routed.condition_expert.align(wet, symbols, pset)


def test_a_long_reverberant_recording_goes_to_the_expert_by_its_own_gate(monkeypatch):
    """With the range and entropy gates out of reach, the dereverberation gate sends a long
    room's recording to the expert (dereverberated); a short one, and a long dry one, stay."""
    import aligner.alignment.model as model_module

    monkeypatch.setattr(model_module, "REVERB_ROUTING_MIN_SECONDS", 10.0)  # 'long', for a test
    base = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    expert = base.expert_view(base.classifier, base.weights * np.array([1, 0, 0, 0, 0, 3, 0]), base.refiner)
    short_dry = load_audio(DEMO / "demo.wav")
    dry = np.tile(short_dry, int(np.ceil(12 * SR / len(short_dry))))
    wet, short_wet = _room(dry), _room(short_dry)
    gate = (late_reverberation_db(dry) + late_reverberation_db(wet)) / 2
    attach_condition_expert(base, expert, 3.6, 1.0, None, None, None, DereverbSettings(gate_db=gate))
    decoder, _, used = base.scored(None, wet)
    assert decoder is base.condition_expert
    np.testing.assert_array_equal(used, mfcc_features(dereverberate(wet, decoder.front_dereverb)))
    assert late_reverberation_db(short_wet) >= gate and base.scored(None, short_wet)[0] is base  # too short
    frames = mfcc_features(dry)
    decoder, scores, used = base.scored(frames, dry)
    assert decoder is base and used is frames
    np.testing.assert_array_equal(scores, base.classifier.scores(frames))


def test_dereverberation_survives_saving(tmp_path):
    routed = _with_dereverb(0.05)
    routed.save(tmp_path / "m")
    loaded = AlignmentModel.load(tmp_path / "m")
    assert loaded.condition_expert.front_dereverb == DereverbSettings(gate_db=0.05)
    assert loaded.front_dereverb is None
    # the expert on its own (as adapt saves it) keeps its front end
    routed.condition_expert.save(tmp_path / "alone")
    alone = AlignmentModel.load(tmp_path / "alone")
    assert alone.front_dereverb == DereverbSettings(gate_db=0.05) and alone.condition_expert is None
    wet = _room(load_audio(DEMO / "demo.wav"))
    np.testing.assert_array_equal(alone.frames_of(wet), mfcc_features(dereverberate(wet, alone.front_dereverb)))


@pytest.mark.parametrize("where", ["expert", "model"])
def test_damaged_dereverberation_entries_are_refused(tmp_path, where):
    model = _with_dereverb(0.05)
    (model.condition_expert if where == "model" else model).save(tmp_path / "m")
    arrays, params, manifest = load_bundle(tmp_path / "m", ALIGNMENT_KIND)
    entry = params["alignment"]["condition_expert"] if where == "expert" else params["alignment"]
    entry["front_dereverb"]["taps"] = "twenty"
    save_bundle(tmp_path / "m2", ALIGNMENT_KIND, arrays, params, manifest["training"])
    with pytest.raises(ModelError, match="dereverberation taps"):
        AlignmentModel.load(tmp_path / "m2")


def test_adaptation_reads_the_frames_the_model_reads():
    from aligner.alignment.adaptation.rounds import Recording, frames_of

    expert = _with_dereverb(None).condition_expert
    wet = _room(load_audio(DEMO / "demo.wav"))
    rec = Recording(wet, ["sil"], speaker="s", name="demo")
    np.testing.assert_array_equal(frames_of(rec, 1.0, expert),
                                  expert.frames_of(wet))


def test_reading_front_to_back_filters_each_block_once(monkeypatch):
    import aligner.features.dereverb as dereverb

    calls = []
    real = dereverb._wpe_samples
    monkeypatch.setattr(dereverb, "_wpe_samples", lambda x, s: calls.append(len(x)) or real(x, s))
    wet = _room(_bursts(16.0))
    lazy = DereverberatedSamples(wet, DereverbSettings(block_s=5.0))
    step, context = 4000, 600  # overlapping slices, some across a block's edge
    for a in range(0, len(wet), step):
        lazy[max(0, a - context):a + step]
    assert len(calls) == 4  # blocks 0-5, 5-10, 10-15, 15-16 s


@needs_timit
def test_adapt_on_a_reverberant_corpus_keeps_the_dereverberation(tmp_path):
    """A corpus in a room goes to the multi-condition expert; adapting refits it on the
    dereverberated recordings, and the adapted model dereverberates as the expert did."""
    import shutil

    import soundfile as sf

    from aligner import api

    shipped_model = AlignmentModel.load(default_model_dir(ALIGNMENT_KIND))
    settings = shipped_model.condition_expert.front_dereverb
    if settings is None:
        pytest.skip("the shipped model's expert does not dereverberate")
    speaker = tmp_path / "c" / "dr1-fvmh0"
    speaker.mkdir(parents=True)
    for k, wav in enumerate(sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[:8]):
        wet = _room(load_audio(wav), rt60_s=0.8, seed=k)
        assert late_reverberation_db(wet) >= settings.gate_db
        sf.write(speaker / wav.name, wet, 16000, subtype="FLOAT")
        shutil.copy(wav.with_suffix(".txt"), speaker / wav.with_suffix(".txt").name)
    messages = []
    api.adapt(tmp_path / "c", tmp_path / "adapted", rounds=1, message=messages.append)
    assert "multi-condition expert" in messages[0]
    adapted = AlignmentModel.load(tmp_path / "adapted")
    assert adapted.condition_expert is None and adapted.front_dereverb == settings
    np.testing.assert_array_equal(adapted.classifier.landmarks, shipped_model.condition_expert.classifier.landmarks)
