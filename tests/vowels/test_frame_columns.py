"""The vowel model's ``frames`` front end (aligner.vowels.frame_columns): its time-domain columns
against direct computations, its interpolation of the aligner's frames, the cut's z-scores, a
``frames`` model trained, saved, loaded and measuring, and a format-1 reader's refusal of it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aligner.errors import FeatureError, ModelError
from aligner.vowels import frame_columns as fc

pytestmark = pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")


class _Uniform:
    """A stand-in classifier: equal posteriors over the 39 classes."""

    def log_posteriors(self, frames):
        return np.full((frames.shape[0], 39), -np.log(39.0), dtype=np.float32)


def _direct(y: np.ndarray, f: int) -> tuple:
    """Columns 0-6 of frame ``f`` computed directly from the samples (zero padded)."""
    y = y.astype(np.float64)
    n = y.shape[0]
    c = 80 * f
    short = y[max(0, c - 80):min(n, c + 80)]
    a, b = max(0, c - 200), min(n, c + 200)
    long = y[a:b]
    ext = y[a:min(n, b + 8)]  # the lags reach past the window's end, as the block sums do
    r = np.array([np.dot(long[:len(long)], ext[k:k + len(long)]) if k + len(long) <= len(ext)
                  else np.dot(long[:len(ext) - k], ext[k:]) for k in range(fc.N_LAGS)])
    low = float(fc._LOW_Q @ r)
    high = float(fc._HIGH_Q @ r)
    zc = np.count_nonzero((long[:-1] >= 0) != (ext[1:len(long)] >= 0))
    if b < n:
        zc += int((long[-1] >= 0) != (y[b] >= 0))
    cnt = len(long)
    return (np.log10(max(np.mean(short ** 2), 1e-10)), np.log10(max(r[0] / cnt, 1e-10)),
            np.log10(max(low / cnt, 1e-10)), np.log10(max(high / cnt, 1e-10)),
            min(max(low / r[0], 0.0), 1.0), r[1] / r[0], zc / cnt)


def test_time_domain_columns_match_a_direct_computation():
    rng = np.random.default_rng(3)
    t = np.arange(4003) / 16000
    y = (0.3 * np.sin(2 * np.pi * 150 * t) + 0.05 * rng.standard_normal(t.size)).astype(np.float32)
    cols = fc.recording_frame_columns(y, _Uniform())
    T = 4003 // 80 + 1
    assert cols.shape == (T, fc.N_FRAME_COLUMNS)
    for f in (0, 1, 2, 3, 10, 25, T - 3, T - 2, T - 1):
        np.testing.assert_allclose(cols[f, :7], _direct(y, f), rtol=1e-9, atol=1e-12, err_msg=f"frame {f}")


def test_bands_tell_a_low_tone_from_a_high_one():
    t = np.arange(8000) / 16000
    low = fc.recording_frame_columns((0.5 * np.sin(2 * np.pi * 200 * t)).astype(np.float32), _Uniform())
    high = fc.recording_frame_columns((0.5 * np.sin(2 * np.pi * 5000 * t)).astype(np.float32), _Uniform())
    mid = slice(10, -10)
    assert np.all(low[mid, 2] > low[mid, 3] + 2)  # 200 Hz: the low band holds it (log10 powers)
    assert np.all(high[mid, 3] > high[mid, 2] + 2)
    assert np.all(low[mid, 4] > 0.9) and np.all(high[mid, 4] < 0.01)  # low_fraction
    # lag-1 autocorrelation of a tone: cos(2 pi f / 16 kHz)
    np.testing.assert_allclose(low[mid, 5], np.cos(2 * np.pi * 200 / 16000), atol=2e-3)
    np.testing.assert_allclose(high[mid, 5], np.cos(2 * np.pi * 5000 / 16000), atol=2e-3)


def test_voicing_is_high_for_a_periodic_sound_and_low_for_noise():
    t = np.arange(16000) / 16000
    rng = np.random.default_rng(0)
    mid = slice(10, -10)
    for y, lo, hi in ((0.3 * np.sin(2 * np.pi * 150 * t), 0.95, 1.0),
                      (0.2 * np.sign(np.sin(2 * np.pi * 120 * t)), 0.9, 1.0),
                      (0.1 * rng.standard_normal(t.size), 0.0, 0.6),
                      (np.zeros(t.size), 0.0, 0.0)):
        v = fc.recording_frame_columns(y.astype(np.float32), _Uniform())[mid, fc.VOICING]
        assert lo <= v.min() and v.max() <= hi


def test_aligner_frames_are_interpolated_to_the_5_ms_frames():
    """Aligner frame t's centre is 5 ms frame 2 t + 2.5: frame 3 is 3/4 of frame 0 and 1/4 of
    frame 1; the values are held before the first centre and after the last."""
    values = np.arange(10, dtype=np.float64)[:, None] * np.array([[1.0, -2.0]])
    out = fc._to_vowel_frames(values, 26)
    np.testing.assert_allclose(out[3], 0.75 * values[0] + 0.25 * values[1])
    np.testing.assert_allclose(out[4], 0.25 * values[0] + 0.75 * values[1])
    np.testing.assert_allclose(out[:3], np.repeat(values[:1], 3, axis=0))
    np.testing.assert_allclose(out[-1], values[-1])


def test_classifier_columns_come_from_the_given_posteriors():
    from aligner.features import mfcc as mf
    from aligner.phones.sets import CLASSES39

    rng = np.random.default_rng(0)
    y = (0.1 * rng.standard_normal(16000)).astype(np.float32)
    Tc = mf.n_frames(y.size)
    lp = np.full((Tc, 39), np.log(1e-6), dtype=np.float32)
    lp[:, CLASSES39.index("aa")] = np.log(0.6)
    lp[:, CLASSES39.index("m")] = np.log(0.3)
    lp[:, CLASSES39.index("sil")] = np.log(0.1)
    cols = fc.recording_frame_columns(y, None, log_posteriors=lp, mfcc_frames=mf.mfcc_features(y))
    named = dict(zip(fc.FRAME_COLUMN_NAMES, cols[100]))
    assert named["vowel_prob"] == pytest.approx(0.6, abs=1e-5) and named["nasal_prob"] == pytest.approx(0.3, abs=1e-4)
    assert named["voiced_prob"] == pytest.approx(0.9, abs=1e-4) and named["silence_prob"] == pytest.approx(0.1, abs=1e-5)
    with pytest.raises(FeatureError, match="log_posteriors"):
        fc.recording_frame_columns(y, None, log_posteriors=lp[:-1], mfcc_frames=mf.mfcc_features(y))


def test_a_cut_is_the_recordings_rows_with_levels_z_scored_over_it():
    rng = np.random.default_rng(1)
    y = (0.1 * rng.standard_normal(16000)).astype(np.float32)
    rec = fc.recording_frame_columns(y, _Uniform())
    cut = fc.cut_columns(rec, 1600, 4801)
    assert cut.shape == (41, fc.N_FRAME_COLUMNS)
    rows = rec[20:61]
    for c in range(fc.N_FRAME_COLUMNS):
        if c in fc.LEVEL_COLUMNS:
            assert abs(cut[:, c].mean()) < 1e-9 and cut[:, c].std() == pytest.approx(1.0)
            np.testing.assert_allclose(cut[:, c], (rows[:, c] - rows[:, c].mean()) / rows[:, c].std())
        else:
            np.testing.assert_array_equal(cut[:, c], rows[:, c])
    with pytest.raises(ValueError, match="multiple of 80"):
        fc.cut_columns(rec, 1601, 4801)


def test_bad_audio_is_refused():
    with pytest.raises(FeatureError, match="too short"):
        fc.recording_frame_columns(np.zeros(100, np.float32), _Uniform())
    with pytest.raises(FeatureError, match="NaN"):
        fc.recording_frame_columns(np.full(1000, np.nan, np.float32), _Uniform())
    with pytest.raises(FeatureError, match="mono"):
        fc.recording_frame_columns(np.zeros((1000, 2), np.float32), _Uniform())


@pytest.mark.skipif(not __import__("tests.conftest", fromlist=["TIMIT"]).TIMIT.is_dir(),
                    reason="shared TIMIT sample not found at ../shared/data/timit-sample")
def test_a_frames_model_trains_saves_loads_and_measures(tmp_path):
    from aligner.io.audio import load_audio
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn
    from aligner.vowels.cvc import cvc_tokens
    from aligner.vowels.model import VowelModel
    from aligner.vowels.training import train_vowel_model
    from tests.conftest import TIMIT

    utts = [u for u in find_utterances(TIMIT)][:12]
    # a small corpus: the first speakers' utterances linked into a folder
    root = tmp_path / "corpus"
    for u in utts:
        d = root / u.speaker
        d.mkdir(parents=True, exist_ok=True)
        for f in (u.audio, u.transcript):
            (d / f.name).symlink_to(f)
    model = train_vowel_model(root, n_folds=0, trainers=["perceptron"], grid={"perceptron": [{"average": True}]},
                              width_sets=[(2, 5, 10)], epochs=3, front_end="frames")
    assert model.front_end == "frames" and model.columns == fc.FRAME_VOWEL_COLUMNS
    assert model.weights.shape == (fc.N_FRAME_COLUMNS * 7 + 4,) and model.training["front_end"] == "frames"
    model.save(tmp_path / "m")
    params = json.loads((tmp_path / "m" / "vowels.json").read_text())
    assert params["format"] == 2 and params["front_end"] == "frames"
    assert params["column_names"][7] == "voiced_prob"
    loaded = VowelModel.load(tmp_path / "m")
    assert loaded.front_end == "frames" and np.array_equal(loaded.weights, model.weights)
    # it measures a CVC cut near its hand labels (it heard these speakers: a check of the mechanism)
    u = utts[0]
    audio = load_audio(u.audio)
    tok = cvc_tokens(*read_phn(u.transcript))[0]
    m = loaded.measure(audio[tok.cut_start:tok.cut_end])
    assert abs(m.onset_s - tok.onset_in_cut / 16000) < 0.03 and abs(m.offset_s - tok.offset_in_cut / 16000) < 0.03
    # an unknown front end is refused
    from dataclasses import replace

    with pytest.raises(ModelError, match="front end"):
        replace(loaded, front_end="spectra")



def _long_signal(n: int) -> np.ndarray:
    rng = np.random.default_rng(5)
    t = np.arange(n) / 16000
    y = 0.3 * np.sin(2 * np.pi * 140 * t) * (rng.random(n) > 0.3) + 0.05 * rng.standard_normal(n)
    return (y - y.mean()).astype(np.float32)


@pytest.mark.parametrize("from_file", [False, True])
def test_a_span_has_the_whole_recordings_rows(tmp_path, from_file):
    """span_frame_columns computes a stretch and its margin and gives the whole recording's rows
    bit for bit (the aligner's MFCC frames and posteriors sliced, not recomputed), from the
    samples in memory or from a reader of the file that never reads it whole."""
    import soundfile as sf

    from aligner.features import mfcc as mf
    from aligner.io.audio import file_samples, load_audio

    n = 16000 * 4 + 123
    y = _long_signal(n)
    source = y
    if from_file:
        sf.write(tmp_path / "long.wav", y, 16000, subtype="FLOAT")
        y, source = load_audio(tmp_path / "long.wav"), file_samples(tmp_path / "long.wav")
        assert not isinstance(source, np.ndarray)
    frames = mf.mfcc_features(y)
    lp = _Uniform().log_posteriors(frames)
    whole = fc.recording_frame_columns(y, None, lp, frames)
    for first, end in ((0, 3000), (16000, 20001), (16080, 30000), (n - 5000, n), (0, n)):
        lo, cols = fc.span_frame_columns(source, first, end, lp, frames)
        assert lo % 160 == 0 and lo <= first and lo // 80 + cols.shape[0] > (end - 1) // 80
        np.testing.assert_array_equal(cols[first // 80 - lo // 80:(end - 1) // 80 - lo // 80 + 1],
                                      whole[first // 80:(end - 1) // 80 + 1])
    if from_file:
        source.close()
