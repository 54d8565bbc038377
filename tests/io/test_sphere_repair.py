"""Newline-conversion damage in NIST SPHERE files: detected, repaired, or refused clearly."""

import numpy as np
import pytest

from aligner.io.audio import RepairedAudioWarning, load_audio
from aligner.errors import AudioError
from aligner.io import sphere_repair
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


def _sphere(samples: np.ndarray, sample_min="true", sample_max="true") -> bytes:
    """A SPHERE file of int16 ``samples``; its header's sample_min/sample_max are the samples'
    own unless given (None: the field is left out)."""
    lo = int(samples.min()) if sample_min == "true" else sample_min
    hi = int(samples.max()) if sample_max == "true" else sample_max
    fields = (f"NIST_1A\n   1024\nsample_count -i {len(samples)}\nsample_rate -i 16000\nchannel_count -i 1\n"
              f"sample_n_bytes -i 2\nsample_byte_format -s2 01\nsample_coding -s3 pcm\n"
              + (f"sample_min -i {lo}\n" if lo is not None else "")
              + (f"sample_max -i {hi}\n" if hi is not None else "") + "end_head\n")
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
    from tests.conftest import TIMIT

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
    from tests.conftest import TIMIT

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

    from tests.conftest import TIMIT

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


# --- one lost byte among quiet samples: decided by the header's sample_min/sample_max -----------

def _speech_with_pauses(n=16000, seed=0, lead=400, tail=600, noise=3.0):
    """Speech-like int16 samples: a voice gliding up from 150 Hz with harmonics 3, 6 and 15
    (peaks about 8000) in syllables of 1500-3500 samples with pauses of 300-1200 samples, ``lead``
    and ``tail`` samples of silence, and background noise (standard deviation ``noise``)
    throughout. LF bytes are left where they fall (quiet samples such as 10 hold one: bytes
    ``0A 00``), as in real recordings, so a lost CR has other places it might go; CR bytes are
    moved off 0D (a low byte by -1, a high byte by -256), so the planted one is the only byte a
    text-mode copy loses."""
    rng = np.random.default_rng(seed)
    f0 = 150 * (1 + 0.1 * np.arange(n) / 16000)
    phase = 2 * np.pi * np.cumsum(f0) / 16000
    voice = sum(a * np.sin(h * phase + rng.uniform(0, 6)) for a, h in ((4000, 1), (2500, 3), (1200, 6), (700, 15)))
    env = np.zeros(n)
    start = lead
    while start < n - tail:
        end = min(start + int(rng.integers(1500, 3500)), n - tail)
        env[start:end] = np.sin(np.pi * np.linspace(0, 1, end - start)) ** 2
        start = end + int(rng.integers(300, 1200))
    x = np.round(voice * env + rng.normal(0, noise, n)).astype(np.int16)
    b = x.view(np.uint8)
    b[b == 0x0D] = 0x0C
    return x


def _with_crlf_across(x: np.ndarray, k: int) -> np.ndarray:
    """``x`` with one CR LF pair across samples k and k+1: k's high byte 0D, k+1's low byte 0A."""
    x = x.copy()
    u = x.view(np.uint16)
    u[k] = 0x0D00 | (u[k] & 0xFF)
    u[k + 1] = (u[k + 1] & 0xFF00) | 0x0A
    return x


def _lf_twin(x: np.ndarray, lf_byte: int) -> bool:
    """True if another LF byte lies within 2 bytes of the planted CR LF's LF (byte offset
    ``lf_byte`` in ``x``'s bytes) once the CR is lost. Two recordings then copy to the same bytes
    (``0A 00 0D 0A`` and ``0D 0A 00 0A`` both to ``0A 00 0A``; ``0D 0A 0A`` and ``0A 0D 0A`` to
    ``0A 0A``), both meeting the header's range, and only smoothness can choose, which may be a
    tie (test_a_lost_cr_that_two_recordings_share_is_refused)."""
    b = x.astype("<i2").view(np.uint8)
    return any(0 <= i < len(b) and b[i] == 0x0A for i in (lf_byte - 3, lf_byte - 2, lf_byte + 1, lf_byte + 2))


def _repaired(x: np.ndarray, **header) -> np.ndarray:
    damaged = _text_mode_copy(_sphere(x, **header))
    h = read_sphere_header(damaged)
    assert missing_bytes(h, len(damaged)) == 1
    return repair_lost_crs(damaged, h)


@pytest.mark.parametrize("seed", [0, 1])
def test_one_lost_cr_is_put_back_exactly_at_many_positions_of_speech_with_pauses(seed):
    """A CR LF pair planted every 97 samples (loud or quiet neighbours alike), and where the
    voice itself nearly holds one (a sample near 2573 = bytes 0D 0A; a sample near 0x0D00 before
    one whose low byte becomes 0A), in a recording with LF bytes of its own: repaired exactly."""
    x0 = _speech_with_pauses(seed=seed)
    cases = [(_with_crlf_samples(x0, [k]), 2 * k + 1) for k in range(3, len(x0) - 2, 97)]
    cases += [(_with_crlf_samples(x0, [int(k)]), 2 * int(k) + 1)
              for k in np.flatnonzero(np.abs(x0.astype(int) - 2573) <= 40)[::3]]
    cases += [(_with_crlf_across(x0, int(k)), 2 * int(k) + 2)
              for k in np.flatnonzero((x0[:-1] >= 3200) & (x0[:-1] <= 3700))[::6]]
    quiet = tried = 0
    for x, lf_byte in cases:
        if _lf_twin(x, lf_byte):
            continue
        np.testing.assert_array_equal(_repaired(x), x.astype(np.int64))
        k = lf_byte // 2
        quiet += int(max(abs(int(x0[k - 1])), abs(int(x0[k + 1]))) < 20)
        tried += 1
    assert tried >= 180 and quiet >= 40, (tried, quiet)


#: (samples before the end, offset of a sample 10 = bytes 0A 00 from the CR LF sample, or None)
QUIET_END_CASES = [(back, lf) for back in (10, 23, 37, 58, 80, 111, 140) for lf in (None, 1, 2, 3, -2, -3)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_lost_cr_between_quiet_samples_near_the_end_is_put_back_by_the_header_range(seed, monkeypatch):
    """A CR LF pair (the sample 2573) in the trailing silence, with a sample 10 (an LF byte) 1 to
    5 bytes away or none: too close to the end for the misread stretch to be found, and the
    other LF's candidate misreads only a few quiet samples, so the clear-margin rule cannot
    decide. The header's sample_min and sample_max, met exactly by the smoothest candidate, can:
    every case is repaired exactly, and many of them only by that rule."""
    x0 = _speech_with_pauses(seed=seed)
    plants = []
    for back, lf in QUIET_END_CASES:
        k = len(x0) - back
        x = _with_crlf_samples(x0, [k])
        if lf is not None:
            x[k + lf] = 10
        assert max(abs(int(x[k - 1])), abs(int(x[k + 1]))) < 20  # quiet neighbours
        np.testing.assert_array_equal(_repaired(x), x.astype(np.int64))
        plants.append(x)
    monkeypatch.setattr(sphere_repair, "_smoothest_in_range", lambda candidates, header: None)
    only_by_range = sum(_repaired(x) is None for x in plants)
    assert only_by_range >= 10, only_by_range


def _quiet_end_case(seed=0, back=37, lf=1):
    """A recording with a CR LF pair ``back`` samples before its end and a sample 10 ``lf``
    samples after it, repaired exactly (asserted here) by the header's range alone."""
    x0 = _speech_with_pauses(seed=seed)
    k = len(x0) - back
    x = _with_crlf_samples(x0, [k])
    x[k + lf] = 10
    np.testing.assert_array_equal(_repaired(x), x.astype(np.int64))
    return x


@pytest.mark.parametrize("header", ["sample_max + 1", "sample_min - 1", "no sample_max", "no sample_min"])
def test_a_lost_cr_is_refused_when_no_position_reproduces_the_header_range(tmp_path, header):
    """The same damage with a header whose sample_max (or sample_min) is off by one, or missing:
    no candidate reproduces the header's range, and the file is refused with the error naming it."""
    x = _quiet_end_case()
    fields = {"sample_max + 1": {"sample_max": int(x.max()) + 1}, "sample_min - 1": {"sample_min": int(x.min()) - 1},
              "no sample_max": {"sample_max": None}, "no sample_min": {"sample_min": None}}[header]
    assert _repaired(x, **fields) is None
    (tmp_path / "range.wav").write_bytes(_text_mode_copy(_sphere(x, **fields)))
    with pytest.raises(AudioError, match=r"range\.wav: NIST SPHERE payload is 1 byte\(s\) short"):
        load_audio(tmp_path / "range.wav")


def test_a_lost_cr_decided_by_the_header_range_is_repaired_on_loading(tmp_path):
    x = _quiet_end_case(seed=1, back=58, lf=2)
    (tmp_path / "end.wav").write_bytes(_text_mode_copy(_sphere(x)))
    with pytest.warns(RepairedAudioWarning, match=r"end\.wav: repaired 1 byte"):
        y = load_audio(tmp_path / "end.wav")
    np.testing.assert_allclose(y, _without_offset(x), atol=1e-6)


def test_two_lost_crs_between_quiet_samples_near_the_end_are_refused(tmp_path):
    """Two CR LF pairs lost in the trailing silence: the header's range decides one lost byte
    only, and the misread stretches are too short to find, so the file is refused."""
    x = _quiet_end_case()
    x = _with_crlf_samples(x, [len(x) - 90])
    damaged = _text_mode_copy(_sphere(x))
    h = read_sphere_header(damaged)
    assert missing_bytes(h, len(damaged)) == 2
    assert repair_lost_crs(damaged, h) is None
    (tmp_path / "two.wav").write_bytes(damaged)
    with pytest.raises(AudioError, match=r"two\.wav: NIST SPHERE payload is 2 byte\(s\) short"):
        load_audio(tmp_path / "two.wav")


def test_a_lost_cr_that_two_recordings_share_is_refused():
    """Samples 10, 2573 (bytes 0A 00 0D 0A) and 2573, 2560 (0D 0A 00 0A) both copy to 0A 00 0A:
    between quiet neighbours they are equally smooth and both meet the header's range, so
    neither is chosen."""
    x0 = _speech_with_pauses(seed=0)
    k = len(x0) - 37
    x = _with_crlf_samples(x0, [k])
    x[k - 1] = 10
    other = x.copy()
    other[k - 1], other[k] = 2573, 2560
    assert _text_mode_copy(_sphere(x)) == _text_mode_copy(_sphere(other))
    assert _repaired(x) is None
