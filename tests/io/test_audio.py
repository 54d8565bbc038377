"""Tests for aligner.io.audio: decoding, mixing, resampling and the errors for bad recordings."""

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from aligner.io.audio import (
    AUDIO_EXTENSIONS,
    SAMPLE_RATE,
    SILENCE_PEAK,
    audio_duration,
    is_audio_path,
    load_audio,
)
from aligner.errors import AlignerError, AudioError

from tests.conftest import TIMIT


def sine(freq_hz: float, seconds: float, rate: int, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(round(seconds * rate))) / rate
    return (amplitude * np.sin(2 * np.pi * freq_hz * t)).astype(np.float32)


def dominant_frequency(x: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / rate)[np.argmax(spectrum)])


def assert_one_line_naming(err: pytest.ExceptionInfo, path: Path, *words: str) -> None:
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


# --- reading good files -------------------------------------------------------------------


def test_mono_16k_is_returned_unchanged(tmp_path):
    x = sine(440, 1.0, SAMPLE_RATE)
    path = tmp_path / "a.wav"
    sf.write(path, x, SAMPLE_RATE, subtype="PCM_16")
    y = load_audio(path)
    assert y.dtype == np.float32 and y.ndim == 1
    assert len(y) == SAMPLE_RATE
    np.testing.assert_allclose(y, x, atol=1.0 / 32768)  # 16-bit quantisation only


def test_stereo_44k1_is_averaged_and_resampled(tmp_path):
    rate = 44100
    left, right = sine(300, 1.5, rate, 0.6), sine(300, 1.5, rate, 0.2)
    path = tmp_path / "stereo.wav"
    sf.write(path, np.stack([left, right], axis=1), rate, subtype="FLOAT")
    y = load_audio(path)
    assert y.dtype == np.float32 and y.ndim == 1
    assert abs(len(y) - 1.5 * SAMPLE_RATE) <= 1
    assert np.max(np.abs(y)) == pytest.approx(0.4, abs=0.01)  # mean of 0.6 and 0.2
    assert dominant_frequency(y, SAMPLE_RATE) == pytest.approx(300, abs=2)


def test_8k_is_upsampled_keeping_pitch(tmp_path):
    path = tmp_path / "phone.wav"
    sf.write(path, sine(500, 2.0, 8000), 8000)
    y = load_audio(path)
    assert len(y) == 2 * SAMPLE_RATE
    assert dominant_frequency(y, SAMPLE_RATE) == pytest.approx(500, abs=2)


def test_other_target_rate(tmp_path):
    path = tmp_path / "a.wav"
    sf.write(path, sine(200, 1.0, SAMPLE_RATE), SAMPLE_RATE)
    assert len(load_audio(path, sample_rate=8000)) == 8000


@pytest.mark.parametrize(
    "name, fmt",
    [("a.flac", "FLAC"), ("a.ogg", "OGG"), ("a.sph", "NIST"), ("A.WAV", "WAV"), ("sphere.wav", "NIST")],
)
def test_formats_by_content_not_extension(tmp_path, name, fmt):
    path = tmp_path / name
    sf.write(path, sine(440, 0.5, SAMPLE_RATE), SAMPLE_RATE, format=fmt)
    y = load_audio(path)
    assert abs(len(y) - SAMPLE_RATE // 2) <= 1
    assert dominant_frequency(y, SAMPLE_RATE) == pytest.approx(440, abs=3)


def test_audio_extensions_match_case_insensitively():
    assert AUDIO_EXTENSIONS == (".wav", ".flac", ".ogg", ".mp3", ".sph")
    assert is_audio_path("x/SA1.WAV") and is_audio_path("a.Flac") and is_audio_path("b.sph")
    assert not is_audio_path("a.phn") and not is_audio_path("wav")


def test_audio_duration_reads_the_header(tmp_path):
    path = tmp_path / "a.flac"
    sf.write(path, sine(440, 1.25, 22050), 22050)
    assert audio_duration(path) == pytest.approx(1.25, abs=1 / 22050)


# --- bad files: one-line AudioError naming the file -----------------------------------------


def test_missing_file(tmp_path):
    path = tmp_path / "nope.wav"
    with pytest.raises(AudioError) as err:
        load_audio(path)
    assert_one_line_naming(err, path, "not found")
    with pytest.raises(AudioError, match="not found"):
        audio_duration(path)


def test_directory(tmp_path):
    with pytest.raises(AudioError) as err:
        load_audio(tmp_path)
    assert_one_line_naming(err, tmp_path, "directory")


@pytest.mark.parametrize("content", [b"this is not audio\n", b""], ids=["text", "zero-bytes"])
def test_non_audio_file_named_wav(tmp_path, content):
    path = tmp_path / "fake.wav"
    path.write_bytes(content)
    with pytest.raises(AudioError) as err:
        load_audio(path)
    assert_one_line_naming(err, path, "not a readable audio file")
    with pytest.raises(AudioError, match="not a readable audio file"):
        audio_duration(path)


def test_undecodable_sphere_gets_a_hint(tmp_path):
    header = (
        b"NIST_1A\n   1024\nsample_count -i 16000\nsample_rate -i 16000\nchannel_count -i 1\n"
        b"sample_n_bytes -i 2\nsample_coding -s26 pcm,embedded-shorten-v2.00\nend_head\n"
    )
    path = tmp_path / "shorten.wav"
    path.write_bytes(header.ljust(1024, b" ") + bytes(range(256)) * 8)
    with pytest.raises(AudioError) as err:
        load_audio(path)
    assert_one_line_naming(err, path, "sph2pipe")


def test_zero_length_wav(tmp_path):
    path = tmp_path / "empty.wav"
    sf.write(path, np.zeros(0, dtype=np.float32), SAMPLE_RATE)
    with pytest.raises(AudioError) as err:
        load_audio(path)
    assert_one_line_naming(err, path, "no samples")
    assert audio_duration(path) == 0.0


def test_too_short(tmp_path):
    path = tmp_path / "blip.wav"
    sf.write(path, sine(440, 0.02, SAMPLE_RATE), SAMPLE_RATE)
    with pytest.raises(AudioError) as err:
        load_audio(path)
    assert_one_line_naming(err, path, "shorter than the minimum 0.05 s")
    assert len(load_audio(path, min_seconds=0.01)) == 320


@pytest.mark.parametrize("level", [0.0, SILENCE_PEAK / 3], ids=["zeros", "faint"])
def test_silent(tmp_path, level):
    path = tmp_path / "silence.wav"
    sf.write(path, np.full(SAMPLE_RATE, level, dtype=np.float32), SAMPLE_RATE, subtype="FLOAT")
    with pytest.raises(AudioError) as err:
        load_audio(path)
    assert_one_line_naming(err, path, "silent")


def test_channels_that_cancel_are_silent(tmp_path):
    x = sine(440, 1.0, SAMPLE_RATE)
    path = tmp_path / "phase.wav"
    sf.write(path, np.stack([x, -x], axis=1), SAMPLE_RATE, subtype="FLOAT")
    with pytest.raises(AudioError, match="silent after mixing its channels to mono"):
        load_audio(path)


def test_quiet_but_not_silent_is_accepted(tmp_path):
    path = tmp_path / "quiet.wav"
    sf.write(path, sine(440, 1.0, SAMPLE_RATE, amplitude=10 * SILENCE_PEAK), SAMPLE_RATE, subtype="FLOAT")
    assert np.max(np.abs(load_audio(path))) == pytest.approx(10 * SILENCE_PEAK, rel=0.01)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_samples(tmp_path, bad):
    x = sine(440, 1.0, SAMPLE_RATE)
    x[100] = bad
    path = tmp_path / "nan.wav"
    sf.write(path, x, SAMPLE_RATE, subtype="FLOAT")
    with pytest.raises(AudioError) as err:
        load_audio(path)
    assert_one_line_naming(err, path, "NaN or infinite")


def test_audio_error_is_an_aligner_error():
    assert issubclass(AudioError, AlignerError)


# --- TIMIT (NIST SPHERE inside .wav) ------------------------------------------------------


def timit_utterances():
    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT} (it lives beside the repo, not in it)")
    wavs = sorted(TIMIT.glob("*/*.wav"))
    assert wavs, f"no .wav files under {TIMIT}"
    return wavs


def test_timit_sphere_reads_at_16k():
    import warnings

    from aligner.io.sphere_repair import read_sphere_header

    wavs = timit_utterances()
    repaired = 0
    for wav in wavs:
        header = read_sphere_header(wav.read_bytes())
        n_samples = header.sample_count  # the header's count, also for files repaired on reading
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = load_audio(wav)
        repaired += bool(caught)
        assert x.dtype == np.float32 and len(x) == n_samples, wav
        assert 0.01 < np.max(np.abs(x)) <= 1.0, wav
        # every sample within the range the header records (a text-mode copy's noise is not)
        peak = np.round(x * 32768)
        assert header.sample_min - 768 <= peak.min() and peak.max() <= header.sample_max + 768, wav
        # the hand labels end at the audio's end
        last_end = int(wav.with_suffix(".phn").read_text().split()[-2])
        assert last_end <= n_samples + 1, wav
    # the shared sample holds 28 recordings damaged by a newline conversion, all repaired
    assert repaired == (28 if len(wavs) == 120 else repaired)
    first = wavs[0]
    assert sf.info(str(first)).format == "NIST"
    assert audio_duration(first) == pytest.approx(sf.info(str(first)).frames / SAMPLE_RATE)


def test_a_constant_offset_with_nothing_on_it_is_refused_as_silent(tmp_path):
    path = tmp_path / "dc.wav"
    sf.write(path, np.full(16000, 0.3, dtype=np.float32), SAMPLE_RATE, subtype="FLOAT")
    with pytest.raises(AudioError, match="silent.*constant offset of 0.3"):
        load_audio(path)
    x = sine(440, 1.0, SAMPLE_RATE) + 0.3  # speech-like energy on an offset is kept, the offset removed
    sf.write(path, x, SAMPLE_RATE, subtype="FLOAT")
    kept = load_audio(path)
    assert abs(float(kept.mean())) < 1e-4
    assert kept.max() - kept.min() == pytest.approx(x.max() - x.min(), rel=1e-4)


def test_samples_in_memory_lose_their_offset_but_the_callers_array_is_untouched():
    from aligner.io.audio import samples_at_model_rate

    x = (sine(440, 1.0, SAMPLE_RATE) + 0.25).astype(np.float32)
    before = x.copy()
    y = samples_at_model_rate(x, SAMPLE_RATE)
    assert abs(float(y.mean())) < 1e-4
    assert np.array_equal(x, before)


@pytest.mark.skipif(not TIMIT.is_dir(), reason=f"TIMIT sample not found at {TIMIT}")
@pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")
def test_a_dc_offset_does_not_move_the_alignment():
    from aligner import api
    from aligner.io.transcripts import read_phn

    wav = sorted(TIMIT.rglob("*.wav"))[0]
    labels = list(read_phn(wav.with_suffix(".phn"))[2])
    x = load_audio(wav)
    plain = np.array([iv.start_s for iv in api.align(x, labels, sr=SAMPLE_RATE)])
    shifted = np.array([iv.start_s for iv in api.align(x + np.float32(0.2), labels, sr=SAMPLE_RATE)])
    assert np.mean(np.abs(plain - shifted) < 0.001) > 0.95


@pytest.mark.parametrize("fmt,subtype", [("WAV", "PCM_16"), ("FLAC", "PCM_16"), ("WAV", "PCM_24"), ("WAV", "FLOAT")])
def test_reading_gives_libsndfiles_float32_values_bit_for_bit(tmp_path, fmt, subtype):
    import os

    from aligner.io.audio import _read_block, _read_float32

    rng = np.random.default_rng(11)
    x = rng.integers(-32768, 32768, size=(7000, 2)).astype(np.int16)
    x[0], x[1] = [-32768, 32767], [0, -1]
    path = tmp_path / f"x.{fmt.lower()}"
    sf.write(path, x, 16000, format=fmt, subtype=subtype)
    want, rate = sf.read(os.fsencode(path), dtype="float32", always_2d=True)
    got, got_rate = _read_float32(path)
    assert got_rate == rate and got.dtype == np.float32 and got.shape == want.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    with sf.SoundFile(os.fsencode(path)) as f:  # block by block, as long recordings are read
        f.seek(1000)
        block = _read_block(f, 3000)
    assert np.array_equal(block.view(np.uint32), want[1000:4000].view(np.uint32))
