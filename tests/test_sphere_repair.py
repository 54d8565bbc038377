"""Newline-conversion damage in NIST SPHERE files: detected, repaired, or refused clearly."""

import numpy as np
import pytest

from aligner.io.audio import RepairedAudioWarning, load_audio
from aligner.errors import AudioError
from aligner.io.sphere_repair import missing_bytes, read_sphere_header, repair_lost_crs


def _speechlike(n=16000, seed=0):
    """Smooth int16 audio: a few slowly gliding sinusoids, peak ~8000."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 16000
    x = sum(a * np.sin(2 * np.pi * f * t * (1 + 0.1 * t) + rng.uniform(0, 6))
            for a, f in ((4000, 150), (2500, 420), (1200, 900)))
    x = np.round(x).astype(np.int16)
    # no CR or LF byte anywhere, so the only damage is what a test plants
    b = x.view(np.uint8).reshape(-1, 2)
    while np.isin(b, (0x0A, 0x0D)).any():
        b[np.isin(b, (0x0A, 0x0D))] += 4
    return x


def _sphere(samples: np.ndarray) -> bytes:
    fields = (f"NIST_1A\n   1024\nsample_count -i {len(samples)}\nsample_rate -i 16000\nchannel_count -i 1\n"
              f"sample_n_bytes -i 2\nsample_byte_format -s2 01\nsample_coding -s3 pcm\n"
              f"sample_min -i {int(samples.min())}\nsample_max -i {int(samples.max())}\nend_head\n")
    return fields.encode().ljust(1024, b" ") + samples.astype("<i2").tobytes()


def _text_mode_copy(data: bytes) -> bytes:
    """What a text-mode transfer does: CR LF -> LF, then any other CR -> LF."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _with_crlf_samples(x: np.ndarray, where) -> np.ndarray:
    x = x.copy()
    for i in where:
        x[i] = 0x0A0D  # bytes 0D 0A in little-endian order: one CR LF pair
    return x


def test_intact_file_is_not_touched(tmp_path):
    x = _speechlike()
    data = _sphere(x)
    h = read_sphere_header(data)
    assert h.sample_count == len(x) and missing_bytes(h, len(data)) == 0
    assert repair_lost_crs(data, h) is None
    (tmp_path / "a.wav").write_bytes(data)
    np.testing.assert_array_equal(load_audio(tmp_path / "a.wav"), x / 32768.0)
    assert read_sphere_header(b"RIFF....") is None


@pytest.mark.parametrize("where", [[6000], [3000, 9000], [4000, 4010], [2000, 7000, 12000]])
def test_lost_crs_are_put_back(tmp_path, where):
    x = _with_crlf_samples(_speechlike(seed=len(where)), where)
    damaged = _text_mode_copy(_sphere(x))
    h = read_sphere_header(damaged)
    assert missing_bytes(h, len(damaged)) == len(where)
    fixed = repair_lost_crs(damaged, h)
    assert fixed is not None
    np.testing.assert_array_equal(fixed, x)
    (tmp_path / "d.wav").write_bytes(damaged)
    with pytest.warns(RepairedAudioWarning, match="d.wav: repaired"):
        y = load_audio(tmp_path / "d.wav")
    np.testing.assert_array_equal(y, x / 32768.0)


def test_unrepairable_damage_is_a_clear_error(tmp_path):
    x = _speechlike()
    data = bytearray(_sphere(x))
    del data[1024 + 5001]  # a lost byte that is not a CR: no LF marks the spot
    (tmp_path / "bad.wav").write_bytes(bytes(data))
    with pytest.raises(AudioError, match=r"bad\.wav: NIST SPHERE payload is 1 byte\(s\) short"):
        load_audio(tmp_path / "bad.wav")
