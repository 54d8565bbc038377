"""HTK mel filterbanks, computed as ``librosa.filters.mel`` computes them, without importing librosa.

Importing ``librosa.filters`` costs about half a second; one filterbank costs microseconds. The
arithmetic below follows librosa's own (``htk=True``, ``norm="slaney"``, float32 weights), so the
matrices are identical; ``tests/features/test_features.py`` checks them against librosa.
"""

from __future__ import annotations

import numpy as np


def _hz_to_mel_htk(hz):
    return 2595.0 * np.log10(1.0 + np.asanyarray(hz) / 700.0)


def _mel_to_hz_htk(mels):
    return 700.0 * (10.0 ** (np.asanyarray(mels) / 2595.0) - 1.0)


def htk_mel_filterbank(sample_rate: int, n_fft: int, n_mels: int, fmin: float = 0.0,
                       fmax: float | None = None) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) float32 triangular filters on the HTK mel scale, area-normalised
    (Slaney), from ``fmin`` to ``fmax`` Hz (default: the Nyquist frequency): librosa's
    ``filters.mel(sr=sample_rate, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax, htk=True)``."""
    if fmax is None:
        fmax = float(sample_rate) / 2
    weights = np.zeros((int(n_mels), int(1 + n_fft // 2)), dtype=np.float32)
    fftfreqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sample_rate)
    mels = np.linspace(_hz_to_mel_htk(fmin), _hz_to_mel_htk(fmax), int(n_mels) + 2)
    mel_f = _mel_to_hz_htk(mels)
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    for i in range(int(n_mels)):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:int(n_mels) + 2] - mel_f[:int(n_mels)])
    weights *= enorm[:, np.newaxis]
    return weights
