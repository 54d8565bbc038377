"""Digital silence read as the recording's own room tone (aligner.io.room_tone)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

import aligner.io.room_tone as room_tone
from aligner.io.audio import file_samples, load_audio, samples_at_model_rate
from aligner.io.room_tone import MIN_FLAT_SAMPLES, room_tone_of, with_room_tone


def _speech_like(seed: int = 0) -> np.ndarray:
    """1 s of loud noise bursts over 1 s of quiet noise (RMS 0.001): float32 at 16 kHz."""
    rng = np.random.default_rng(seed)
    quiet = rng.normal(0, 0.001, 16000)
    loud = rng.normal(0, 0.1, 16000) * (0.05 + (np.sin(np.linspace(0, 20, 16000)) > 0))
    return np.concatenate([quiet[:8000], loud, quiet[8000:]]).astype(np.float32)


def test_samples_without_digital_silence_to_replace_come_back_as_they_are():
    x = _speech_like()
    assert room_tone_of(x) is None and with_room_tone(x) is x
    inner = x.copy()
    inner[100:100 + MIN_FLAT_SAMPLES - 1] = 0.0  # too short for a flat run: a waveform
    assert with_room_tone(inner) is inner
    synthetic = np.concatenate([np.zeros(8000, np.float32), x, np.zeros(8000, np.float32)])
    synthetic[20000:21600] = 0.0  # a digital pause of 0.1 s inside: synthetic speech, no room tone to copy
    assert with_room_tone(synthetic) is synthetic


def test_zeros_at_the_edges_and_a_muted_stretch_become_noise_at_the_quiet_level():
    x = _speech_like()
    padded = np.concatenate([np.zeros(8000, np.float32), x, np.full(4000, 0.02, np.float32)])
    padded[2000:5000] = np.round(np.random.default_rng(1).uniform(-1.4, 1.4, 3000)) / 32768  # dither
    padded[20000:28000] = 0.0  # half a second muted inside
    tone = room_tone_of(padded)
    assert 0.0007 < tone.level < 0.0013  # the quiet windows' RMS, 0.001
    assert tone.starts.tolist() == [0, 20000, len(padded) - 4000]
    out = with_room_tone(padded)
    assert out is not padded and np.array_equal(padded[:10], np.zeros(10))  # the input is not changed
    for stretch in (out[:8000], out[20000:28000], out[-4000:]):
        assert 0.7 * tone.level < stretch.std() < 1.3 * tone.level and abs(stretch.mean()) < 0.2 * tone.level
    assert np.array_equal(out[8000:20000], padded[8000:20000]) and np.array_equal(out[28000:-4000], padded[28000:-4000])
    assert np.array_equal(with_room_tone(padded), out)  # a fixed function of the sample index
    part = tone.fill(padded[19900:20100].copy(), 19900)  # a slice filled as the whole recording is
    assert np.array_equal(part, out[19900:20100])


def test_the_room_tone_lies_well_below_the_loud_level():
    """A recording whose windows of sound are all loud: the tone lies 30 dB below their loud level."""
    rng = np.random.default_rng(3)
    x = np.concatenate([np.zeros(8000), rng.normal(0, 0.1, 16000), np.zeros(8000)]).astype(np.float32)
    tone = room_tone_of(x)
    loud = np.sqrt(np.percentile(x[8192:23808].reshape(-1, 256).var(axis=1), 95))
    assert tone.level == pytest.approx(loud * 10 ** (-30 / 20), rel=0.05)


def test_every_reader_fills_digital_silence(tmp_path):
    x = np.concatenate([np.zeros(16000), _speech_like(4), np.zeros(16000)]).astype(np.float32)
    sf.write(tmp_path / "z.wav", x, 16000, subtype="FLOAT")
    sf.write(tmp_path / "z44.wav", np.repeat(x, 2)[:, None].repeat(2, axis=1), 32000, subtype="FLOAT")
    whole = load_audio(tmp_path / "z.wav")
    assert whole[:16000].std() > 0.0005 and whole[-16000:].std() > 0.0005
    assert load_audio(tmp_path / "z44.wav")[:15000].std() > 0.0005  # resampled stereo too
    assert samples_at_model_rate(x, 16000)[:16000].std() > 0.0005  # samples given in memory
    lazy = file_samples(tmp_path / "z.wav")
    assert lazy.room_tone is not None
    for a, b in ((0, 1000), (15900, 16200), (len(x) - 16100, len(x))):
        np.testing.assert_allclose(lazy[a:b], whole[a:b], rtol=1e-4, atol=1e-7)
    sf.write(tmp_path / "plain.wav", _speech_like(5), 16000, subtype="FLOAT")
    assert file_samples(tmp_path / "plain.wav").room_tone is None


@pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")
def test_zero_padding_no_longer_moves_the_boundaries(monkeypatch, timit_dir):
    """The TIMIT sample's sa1 of six speakers aligned as they are, then with half a second of zeros
    at either end: filled with room tone, the boundaries stay nearer where they were than when the
    zeros are aligned as zeros."""
    from aligner import api

    deviations = {True: [], False: []}
    for wav in sorted(timit_dir.glob("*/sa1.wav"))[:6]:
        x = load_audio(wav)
        phones = " ".join(line.split()[2] for line in open(wav.with_suffix(".phn")))
        base = np.array([iv.start_s for iv in api.align(x, phones, phone_set="timit61", sr=16000)])
        zeros = np.zeros(8000, np.float32)
        padded = np.concatenate([zeros, x, zeros])
        for filled in (True, False):
            monkeypatch.setattr(room_tone, "MIN_HEARD_WINDOWS", 20 if filled else 10 ** 9)
            starts = np.array([iv.start_s for iv in api.align(padded, phones, phone_set="timit61", sr=16000)])
            deviations[filled] += list(np.abs(starts - 0.5 - base)[1:])
    filled, unfilled = np.mean(deviations[True]), np.mean(deviations[False])
    assert filled < 0.75 * unfilled and filled < 0.004, (filled, unfilled)
