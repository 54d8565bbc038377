"""The fast paths of ``aligner vowels`` (issue 15) give the bits of the code they replace.

- :func:`aligner.features.vowel_acoustics._acoustics_short` (numba kernels, one FFT call per
  frame length) against the block path :func:`~aligner.features.vowel_acoustics._acoustics_blocks`;
- its pairwise sums against ``np.sum``;
- :func:`aligner.vowels.task._window_arrays` against ``np.cumsum`` and ``_window_means``;
- :func:`aligner.vowels.wav.read_pcm16_mono` against :func:`aligner.io.audio.load_audio`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from aligner import api
from aligner.features import vowel_acoustics as VA
from aligner.io.audio import load_audio
from aligner.vowels.task import _window_arrays, _window_means
from aligner.vowels.wav import read_pcm16_mono

TUTORIAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "vowel-tutorial" / "wav"


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.int64 if a.dtype == np.float64 else np.int32)


def _signals():
    rng = np.random.default_rng(7)
    out = []
    for n in (400, 401, 479, 480, 881, 2500, 6000, 16000, 80 * 2047, 80 * 2048 - 1):
        out.append((0.1 * rng.standard_normal(n)).astype(np.float32))
        s = 0.3 * np.sin(np.arange(n) * 2 * np.pi * 140 / 16000) + 0.02 * rng.standard_normal(n)
        s[: n // 3] = 0.0
        s[n // 2: n // 2 + 200] = 1e-12  # within the zero-crossing threshold
        out.append(s.astype(np.float32))
        z = np.zeros(n, np.float32)
        z[n // 2] = 1e-12
        out.append(z)  # silence: floors everywhere
    if TUTORIAL.is_dir():
        out += [load_audio(p) for p in sorted(TUTORIAL.glob("*.wav"))]
    return out


@pytest.mark.parametrize("step", [1, 3])
def test_pairwise_sum_is_numpys(step):
    rng = np.random.default_rng(0)
    for n in list(range(0, 300)) + [383, 384, 385, 400, 640, 767, 768, 769, 1000, 2047, 2048, 4099]:
        a = rng.standard_normal(n * step + 5) * 10.0 ** rng.integers(-5, 5, n * step + 5)
        view = a[2:2 + n * step:step]
        assert VA._pairwise_sum(a, 2, n, step) == view.sum(), n
        assert VA._pairwise_sum(a, 2, n, step) == np.add.reduce(view), n
    assert str(VA._pairwise_sum(np.array([-0.0, -0.0]), 0, 2, 1)) == str(np.array([-0.0, -0.0]).sum())


def test_short_path_equals_block_path(monkeypatch):
    model = api.load_vowel_model()
    for y in _signals():
        monkeypatch.setattr(VA, "FAST_PATH", False)
        slow = VA.vowel_acoustics(y, model.classifier)
        monkeypatch.setattr(VA, "FAST_PATH", True)
        fast = VA.vowel_acoustics(y, model.classifier)
        assert fast.shape == slow.shape
        assert np.array_equal(_bits(fast), _bits(slow)), np.flatnonzero(np.any(fast != slow, axis=0))


def test_short_path_with_blas_already_single_threaded(monkeypatch):
    model = api.load_vowel_model()
    y = _signals()[4]
    base = VA.vowel_acoustics(y, model.classifier)
    monkeypatch.setattr(VA, "BLAS_SINGLE_THREADED", True)
    assert np.array_equal(_bits(VA.vowel_acoustics(y, model.classifier)), _bits(base))


def test_window_arrays_equal_cumsum_and_window_means():
    rng = np.random.default_rng(3)
    widths = np.array([2, 5, 10], dtype=np.int64)
    for T in (1, 2, 3, 11, 25, 80):
        X = rng.standard_normal((T, 16))
        X[0, 0] = -0.0
        cum = np.zeros((T + 1, 16))
        np.cumsum(X, axis=0, out=cum[1:])
        edge = np.empty((T + 1, 16, 3))
        for j, w in enumerate(widths):
            b, a = _window_means(cum, int(w))
            edge[:, :, j] = a - b
        before, after = _window_means(cum, 10)
        got = [np.empty((T + 1, 16)), np.empty((T + 1, 48)), np.empty((T + 1, 16)), np.empty((T + 1, 16))]
        _window_arrays(X, widths, 10, *got)
        for g, want in zip(got, (cum, edge.reshape(T + 1, 48), before, after)):
            assert np.array_equal(_bits(g), _bits(want))


def test_pcm16_reader_equals_load_audio(tmp_path):
    rng = np.random.default_rng(5)
    y = (0.2 * rng.standard_normal(6000) + 0.01).astype(np.float32)  # with a DC offset to remove
    plain = tmp_path / "plain.wav"
    sf.write(plain, y, 16000, subtype="PCM_16")
    got = read_pcm16_mono(plain)
    assert got is not None and np.array_equal(_bits(got), _bits(load_audio(plain)))
    for p in sorted(TUTORIAL.glob("*.wav")) if TUTORIAL.is_dir() else []:
        got = read_pcm16_mono(p)
        assert got is not None and np.array_equal(_bits(got), _bits(load_audio(p)))
    # anything else is left to load_audio
    others = {"pcm24.wav": (y, 16000, "PCM_24"), "stereo.wav": (np.stack([y, y], 1), 16000, "PCM_16"),
              "rate.wav": (y, 8000, "PCM_16"), "short.wav": (y[:500], 16000, "PCM_16"),
              "float.wav": (y, 16000, "FLOAT")}
    for name, (data, rate, subtype) in others.items():
        sf.write(tmp_path / name, data, rate, subtype=subtype)
        assert read_pcm16_mono(tmp_path / name) is None, name
    (tmp_path / "junk.wav").write_bytes(b"RIFF\x00\x00")
    assert read_pcm16_mono(tmp_path / "junk.wav") is None
    assert read_pcm16_mono(tmp_path / "missing.wav") is None
    truncated = plain.read_bytes()[:-100]
    (tmp_path / "truncated.wav").write_bytes(truncated)
    assert read_pcm16_mono(tmp_path / "truncated.wav") is None


def test_pcm16_reader_refuses_silence_as_load_audio_does(tmp_path):
    from aligner.errors import AudioError

    p = tmp_path / "silent.wav"
    sf.write(p, np.zeros(4000, np.float32), 16000, subtype="PCM_16")
    with pytest.raises(AudioError) as fast:
        read_pcm16_mono(str(p))
    with pytest.raises(AudioError) as slow:
        load_audio(str(p))
    assert str(fast.value) == str(slow.value)
