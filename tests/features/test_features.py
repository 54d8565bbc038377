"""The 10 ms MFCC front end and its time conventions (aligner.features.mfcc)."""


import numpy as np
import pytest

from aligner.errors import FeatureError
from aligner.features.mfcc import (FRAME_SHIFT, N_FEATURES, WINDOW, boundary_time, mfcc_features,
                                   n_frames, time_to_boundary_frame)

from tests.conftest import TIMIT, needs_timit


def _noise(n, seed=0, scale=0.1):
    return scale * np.random.default_rng(seed).standard_normal(n)


def test_constants():
    assert FRAME_SHIFT == 160 and WINDOW == 400 and N_FEATURES == 42


@pytest.mark.parametrize("n", [400, 559, 560, 16000, 16123])
def test_shape_dtype_and_frame_count(n):
    f = mfcc_features(_noise(n))
    assert f.shape == (1 + (n - 400) // 160, 42) == (n_frames(n), 42)
    assert f.dtype == np.float32
    assert np.all(np.isfinite(f))


def test_n_frames():
    assert n_frames(399) == 0 and n_frames(400) == 1 and n_frames(559) == 1 and n_frames(560) == 2
    assert list(n_frames(np.array([0, 400, 16000]))) == [0, 1, 98]


def test_per_utterance_normalisation():
    f = mfcc_features(np.sin(np.arange(32000) * 0.05) * np.linspace(0, 1, 32000) + _noise(32000, scale=0.01))
    np.testing.assert_allclose(f.mean(axis=0), 0, atol=1e-4)
    np.testing.assert_allclose(f.std(axis=0), 1, atol=1e-3)


@pytest.mark.parametrize("audio", [np.zeros(8000), 1e-12 * np.ones(8000), _noise(8000, scale=1e-9),
                                   np.r_[np.zeros(4000), _noise(4000)], np.full(8000, 0.5)])
def test_silent_or_degenerate_audio_stays_finite(audio):
    f = mfcc_features(audio)
    assert f.shape == (n_frames(len(audio)), 42)
    assert np.all(np.isfinite(f))


def test_int16_input_accepted():
    a = (_noise(8000) * 10000).astype(np.int16)
    assert np.all(np.isfinite(mfcc_features(a)))


@pytest.mark.parametrize("bad", [np.zeros(399), np.zeros((2, 8000)), np.r_[np.zeros(800), np.nan]])
def test_bad_audio_raises(bad):
    with pytest.raises(FeatureError):
        mfcc_features(bad)


def test_wrong_sample_rate_raises():
    with pytest.raises(FeatureError, match="16000"):
        mfcc_features(np.zeros(8000), sample_rate=8000)


def test_vtlp_warp():
    audio = _noise(8000) + np.sin(np.arange(8000) * 0.3)
    assert np.array_equal(mfcc_features(audio, warp=1.0), mfcc_features(audio))
    warped = mfcc_features(audio, warp=1.1)
    assert warped.shape == (n_frames(8000), 42) and np.all(np.isfinite(warped))
    assert not np.allclose(warped, mfcc_features(audio))
    with pytest.raises(FeatureError):
        mfcc_features(audio, warp=3.0)


def test_frames_are_not_centred():
    """Frame t covers samples [160 t, 160 t + 400): a click at sample 5000 lights frames 29-31."""
    audio = 1e-4 * _noise(16000)
    audio[5000] = 1.0
    energy = mfcc_features(audio)[:, 13]  # normalised log energy keeps the order
    holding = [t for t in range(len(energy)) if 160 * t <= 5000 < 160 * t + 400]
    assert holding == [29, 30, 31]
    assert set(np.argsort(energy)[-3:]) == set(holding)


def test_boundary_time_convention():
    assert boundary_time(0) == pytest.approx(0.0075)
    assert boundary_time(1) == pytest.approx(0.0175)
    t = np.arange(0, 5000)
    np.testing.assert_allclose(boundary_time(t), t * 0.010 + 0.0075)
    # midway between the centres (160 t + 200 samples) of frames t-1 and t
    np.testing.assert_allclose(boundary_time(t[1:]) * 16000, (160 * (t[1:] - 1) + 200 + 160 * t[1:] + 200) / 2)


def test_time_to_boundary_frame_round_trips_and_rounds():
    t = np.arange(0, 20000)
    assert np.array_equal(time_to_boundary_frame(boundary_time(t)), t)
    assert time_to_boundary_frame(boundary_time(7)) == 7
    assert isinstance(time_to_boundary_frame(0.5), int)
    # anything within +-5 ms of a boundary goes to that boundary's frame
    for dt in (-0.0049, -0.001, 0.0, 0.001, 0.0049):
        assert np.array_equal(time_to_boundary_frame(boundary_time(t[1:]) + dt), t[1:])
    assert time_to_boundary_frame(0.0) == 0  # before the first boundary: frame 0
    assert time_to_boundary_frame(10.0, n_frames=50) == 50  # clipped to the utterance


def test_phn_start_maps_to_nearest_boundary():
    """A phone starting at sample s starts at the frame whose boundary is nearest s / 16000."""
    s = np.random.default_rng(1).integers(0, 16000 * 5, 2000)
    t = time_to_boundary_frame(s / 16000)
    all_t = np.arange(0, 600)
    nearest = np.abs(boundary_time(all_t)[None, :] - (s / 16000)[:, None]).argmin(axis=1)
    # ties (exactly 5 ms from two boundaries) may go either way; none beyond
    dist = np.abs(boundary_time(t) - s / 16000)
    best = np.abs(boundary_time(nearest) - s / 16000)
    np.testing.assert_allclose(dist, best, atol=1e-12)
    assert np.all(dist[s >= 120] <= 0.005 + 1e-12)


@needs_timit
def test_real_timit_utterances():
    import soundfile as sf

    for wav in sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[:3]:
        audio, sr = sf.read(str(wav))
        assert sr == 16000
        f = mfcc_features(audio, sr)
        assert f.shape == (1 + (len(audio) - 400) // 160, 42)
        assert np.all(np.isfinite(f))
        starts = np.array([int(line.split()[0]) for line in wav.with_suffix(".phn").read_text().split("\n")
                           if line.strip()])
        t = time_to_boundary_frame(starts / 16000, len(f))
        assert np.all(np.diff(t) >= 0) and t.max() <= len(f)
        inside = starts >= 120  # the first phone starts before the first boundary
        assert np.all(np.abs(boundary_time(t[inside]) - starts[inside] / 16000) <= 0.005 + 1e-9)


def test_frames_is_the_one_place_for_time_conventions():
    from aligner import frames
    from aligner.features import mfcc, vowel_acoustics
    from aligner.io import audio

    assert mfcc.SAMPLE_RATE is frames.SAMPLE_RATE and audio.SAMPLE_RATE == frames.SAMPLE_RATE == 16000
    assert mfcc.boundary_time is frames.boundary_time
    assert vowel_acoustics.n_frames(800) == frames.n_vowel_frames(800) == 11
    assert frames.seconds_to_vowel_frames(*frames.vowel_frames_to_seconds(40, 80)) == (40, 80)


def test_front_end_matches_librosa_without_importing_it():
    """librosa stays the reference: the mel filterbank equals librosa.filters.mel bit for bit,
    the cepstra equal librosa.feature.mfcc of the same log mel spectrum, and aligning does not
    import librosa (nor scipy.fft)."""
    import subprocess
    import sys

    import librosa

    from aligner.features import mfcc as M
    from aligner.features.mel import htk_mel_filterbank

    for fmax in (8000.0, None):
        ours = htk_mel_filterbank(16000, 512, 40, 20.0, fmax)
        theirs = librosa.filters.mel(sr=16000, n_fft=512, n_mels=40, fmin=20.0, fmax=fmax, htk=True)
        assert np.array_equal(ours, theirs)
    rng = np.random.default_rng(3)
    y = rng.standard_normal(16000) * np.sin(np.linspace(0, 30, 16000))
    static = M._static_features(y, 0, M.n_frames(len(y)), 1.0, 16000)
    frames = np.lib.stride_tricks.sliding_window_view(y, 400)[::160][:len(static)]
    prev = np.concatenate([[frames[0, 0]], y[160 * np.arange(1, len(frames)) - 1]])
    emph = (frames - 0.97 * np.column_stack([prev, frames[:, :-1]])) * np.hamming(400)
    power = np.abs(np.fft.rfft(emph, n=512, axis=1)) ** 2
    log_mel = np.log(np.maximum(power @ theirs.astype(np.float64).T, 1e-10))
    reference = librosa.feature.mfcc(S=log_mel.T, n_mfcc=13, dct_type=2, norm="ortho").T
    np.testing.assert_allclose(static[:, :13], reference, rtol=1e-9, atol=1e-9)
    code = ("import sys, numpy as np; from aligner.features.mfcc import mfcc_features; "
            "mfcc_features(np.random.default_rng(0).standard_normal(8000)); "
            "print(sorted(m for m in ('librosa', 'scipy.fft') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("T", [1, 2, 5, 301, 4000])
def test_deltas_and_standardisation_in_numpys_order(T):
    """The kernel behind mfcc_features (one static column at a time) gives numpy's deltas and
    per-column standardisation of the whole array, bit for bit; a constant column becomes 0."""
    from aligner.features import mfcc as mf

    rng = np.random.default_rng(T)
    static = rng.standard_normal((T, 14)) * rng.uniform(0.1, 50.0, 14)
    static[:, 5] = 3.0
    d1 = mf._deltas(static)
    feats = np.hstack([static, d1, mf._deltas(d1)])
    mean = feats.mean(axis=0)
    std = np.sqrt(((feats - mean) ** 2).mean(axis=0))
    want = ((feats - mean) / np.maximum(std, mf._STD_FLOOR)).astype(np.float32)
    want[:, std < mf._STD_FLOOR] = 0.0
    got = np.empty((T, 42), np.float32)
    mf._mfcc_normalised(static, mf._STD_FLOOR, got)
    np.testing.assert_array_equal(got, want)
    assert not got[:, [5, 19, 33]].any()
