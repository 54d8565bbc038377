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


def _without_offset(x: np.ndarray) -> np.ndarray:
    """What load_audio returns for int16 samples ``x``: full scale +-1, the mean (DC) removed."""
    y = x / 32768.0
    return y - y.mean()


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
    np.testing.assert_allclose(load_audio(tmp_path / "a.wav"), _without_offset(x), atol=1e-6)
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
    np.testing.assert_allclose(y, _without_offset(x), atol=1e-6)


def test_unrepairable_damage_is_a_clear_error(tmp_path):
    x = _speechlike()
    data = bytearray(_sphere(x))
    del data[1024 + 5001]  # a lost byte that is not a CR: no LF marks the spot
    (tmp_path / "bad.wav").write_bytes(bytes(data))
    with pytest.raises(AudioError, match=r"bad\.wav: NIST SPHERE payload is 1 byte\(s\) short"):
        load_audio(tmp_path / "bad.wav")


def _clean_timit_payloads(limit=6):
    """(header bytes, clean payload) of TIMIT files that hold CR LF pairs: the shared copies of
    exactly these were damaged, so they are repaired first (a repair that meets the header's
    sample_min/sample_max exactly)."""
    from conftest import TIMIT

    out = []
    for wav in sorted(TIMIT.glob("*/*.wav")):
        data = wav.read_bytes()
        h = read_sphere_header(data)
        if h is None or missing_bytes(h, len(data)) == 0:
            continue
        x = repair_lost_crs(data, h)
        if x is not None:
            out.append((data[:h.header_bytes], x.astype("<i2").tobytes()))
        if len(out) == limit:
            break
    return out


@pytest.mark.parametrize("fraction", [0.0005, 0.01, 0.25, 0.5, 0.9, 0.995, 0.9999])
def test_one_lost_cr_is_put_back_anywhere_in_a_synthetic_file(fraction):
    x = _speechlike(seed=11)
    where = min(int(fraction * len(x)), len(x) - 1)
    x = _with_crlf_samples(x, [where])
    damaged = _text_mode_copy(_sphere(x))
    h = read_sphere_header(damaged)
    assert missing_bytes(h, len(damaged)) == 1
    np.testing.assert_array_equal(repair_lost_crs(damaged, h), x.astype(np.int64))


def test_one_lost_cr_is_put_back_at_many_positions_of_real_timit_files():
    from conftest import TIMIT

    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT}")
    rng = np.random.default_rng(0)
    tried = repaired = 0
    for header, payload in _clean_timit_payloads(limit=28):
        original = np.frombuffer(payload, "<i2").astype(np.int64)
        pairs = [i for i in range(len(payload) - 1) if payload[i:i + 2] == b"\r\n"]
        for i in rng.choice(pairs, size=min(8, len(pairs)), replace=False):
            damaged = header + payload[:i] + payload[i + 1:]  # this one CR LF -> LF
            got = repair_lost_crs(damaged, read_sphere_header(damaged))
            tried += 1
            if got is not None:
                np.testing.assert_array_equal(got, original)  # a repair is always exact
                repaired += 1
    assert tried >= 20 and repaired == tried, (repaired, tried)


def test_one_lost_cr_planted_anywhere_in_real_speech_is_put_back_exactly():
    """Real TIMIT speech with one CR LF pair planted at random positions (and next to both ends),
    copied in text mode: every one is repaired to the exact samples (the roughness search
    alone refused about 1 in 11 of these)."""
    import warnings

    from conftest import TIMIT

    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT}")
    rng = np.random.default_rng(1)
    tried = 0
    for wav in sorted(TIMIT.glob("*/*.wav"))[::24]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = np.round(load_audio(wav) * 32768).astype(np.int64)
        b = x.astype("<i2").view(np.uint8).reshape(-1, 2).copy()
        b[np.isin(b, (0x0A, 0x0D))] += 2  # no CR or LF of its own: the planted pair is the only one
        x = b.view("<i2").reshape(-1)
        for k in list(rng.integers(0, len(x), 10)) + [len(x) - 3, 5]:
            y = _with_crlf_samples(x, [int(k)])
            damaged = _text_mode_copy(_sphere(y))
            np.testing.assert_array_equal(repair_lost_crs(damaged, read_sphere_header(damaged)), y.astype(np.int64))
            tried += 1
    assert tried >= 50
