"""A phone-line front end: a recording limited to the band a telephone keeps, before its MFCCs.

A model trained on band-limited speech (a *band expert*, :mod:`aligner.alignment.conditions`)
hears every recording through the same band: :func:`band_limited` resamples the 16 kHz samples
to 8 kHz, keeps ``band_hz`` with a zero-phase Butterworth band-pass (filtered forwards and
backwards, so no boundary moves), and resamples back to 16 kHz. The default band,
:data:`PHONE_BAND_HZ`, holds every phone line the training recipe simulates
(:func:`aligner.features.augment.telephone_line`: 250-400 Hz to 3200-3600 Hz), so a recording
from a phone line passes through it almost unchanged, and clean speech loses what no phone line
carries. The samples are those of scipy.signal's ``resample_poly``, ``sosfiltfilt`` and
``resample_poly``, computed by numba loops without importing scipy.signal (its import costs over a
second of CPU in every aligning process).

Units: samples at 16 kHz (:data:`aligner.frames.SAMPLE_RATE`), frequencies in Hz.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from aligner.frames import SAMPLE_RATE
from aligner.io.audio import SampleReader

#: the band (Hz) a phone-line model keeps: the union of the simulated phone lines' bands
PHONE_BAND_HZ = (250.0, 3600.0)
#: Butterworth order of the band-pass (at 8 kHz; doubled by the forward-backward pass)
BAND_ORDER = 6
#: samples read beyond either end of a block of a long recording (:class:`BandLimitedSamples`), so
#: its filtered samples equal the whole recording's (the filters' responses die out within it)
BLOCK_MARGIN = 8000
#: the highest band edge (Hz): below the 4 kHz Nyquist frequency of the 8 kHz signal
MAX_BAND_HZ = 3900.0


def check_band(band_hz) -> tuple:
    """``band_hz`` as ``(low, high)`` floats, or ValueError unless ``0 < low < high <=``
    :data:`MAX_BAND_HZ` (real numbers, not bools or strings, as a damaged model file might hold)."""
    try:
        low, high = band_hz
        ok = all(isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool)
                 for v in (low, high))
        low, high = float(low), float(high)
    except (TypeError, ValueError):
        ok = False
    if not ok or not (0.0 < low < high <= MAX_BAND_HZ):
        raise ValueError(f"a front-end band must be two frequencies 0 < low < high <= {MAX_BAND_HZ:g} Hz, "
                         f"got {band_hz!r}")
    return low, high


#: the resampling FIR for a factor of 2: what :func:`scipy.signal.resample_poly` designs (41 taps,
#: a Kaiser window of beta 5, cut-off at half the band, unit gain at 0 Hz), made with numpy
_FIR = np.sinc(0.5 * (np.arange(41) - 20)) * np.kaiser(41, 5.0)
_FIR /= _FIR.sum()
_FIR_HALF = 20
#: the band-pass of :data:`PHONE_BAND_HZ` at 8 kHz as second-order sections (b0 b1 b2 a0 a1 a2):
#: ``scipy.signal.butter(BAND_ORDER, PHONE_BAND_HZ, "bandpass", fs=8000, output="sos")``, written
#: out so that aligning never imports scipy.signal (over a second of CPU in each process)
_PHONE_BAND_SOS = np.array([
    [0.36784902541956227, 0.7356980508391245, 0.36784902541956227, 1.0, 1.45153854742502, 0.5309602710324185],
    [1.0, 2.0, 1.0, 1.0, 1.559074520475489, 0.6418730890097807],
    [1.0, -2.0, 1.0, 1.0, -1.6414517943834086, 0.6756091388535307],
    [1.0, -2.0, 1.0, 1.0, -1.7230083453517606, 0.7578259779126726],
    [1.0, 2.0, 1.0, 1.0, 1.7644319939861233, 0.8556023271503811],
    [1.0, -2.0, 1.0, 1.0, -1.8695665233848267, 0.9063399162064716]])


@lru_cache(maxsize=8)
def _sections(band_hz: tuple) -> tuple:
    """``(sos (S, 6), zi (S, 2))``: the band-pass's second-order sections at 8 kHz and their
    steady-state initial conditions for a unit step (as :func:`scipy.signal.sosfilt_zi`); a band
    other than :data:`PHONE_BAND_HZ` is designed by scipy.signal."""
    if band_hz == PHONE_BAND_HZ:
        sos = _PHONE_BAND_SOS
    else:
        from scipy import signal

        sos = signal.butter(BAND_ORDER, list(band_hz), btype="bandpass", fs=SAMPLE_RATE // 2, output="sos")
    zi = np.empty((len(sos), 2))
    scale = 1.0
    for k, (b0, b1, b2, _, a1, a2) in enumerate(sos):
        # lfilter_zi of one section: (I - companion(a).T) zi = b[1:] - a[1:] b0
        zi[k] = scale * np.linalg.solve(np.array([[1.0 + a1, -1.0], [a2, 1.0]]), [b1 - a1 * b0, b2 - a2 * b0])
        scale *= (b0 + b1 + b2) / (1.0 + a1 + a2)
    return sos, zi


@njit(cache=True)
def _sosfilt(sos, x, zi):
    """``x`` (n,) through the second-order sections ``sos`` (S, 6) in transposed direct form II,
    from the states ``zi`` (S, 2) (as :func:`scipy.signal.sosfilt` with ``zi``)."""
    z = zi.copy()
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        cur = x[i]
        for k in range(sos.shape[0]):
            new = sos[k, 0] * cur + z[k, 0]
            z[k, 0] = sos[k, 1] * cur - sos[k, 4] * new + z[k, 1]
            z[k, 1] = sos[k, 2] * cur - sos[k, 5] * new
            cur = new
        y[i] = cur
    return y


def _filtfilt(sos, zi, x: np.ndarray) -> np.ndarray:
    """Zero-phase ``x`` (n,): forwards and backwards through ``sos`` with odd extension at both
    ends and steady-state initial conditions, as :func:`scipy.signal.sosfiltfilt` does."""
    pad = 3 * (2 * len(sos) + 1 - min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum())))
    ext = np.concatenate((2 * x[0] - x[pad:0:-1], x, 2 * x[-1] - x[-2:-(pad + 2):-1]))
    y = _sosfilt(sos, ext, zi * ext[0])
    y = _sosfilt(sos, np.ascontiguousarray(y[::-1]), zi * y[-1])[::-1]
    return y[pad:len(y) - pad]


@njit(cache=True)
def _down2(x, h, half):
    """(ceil(n / 2),): ``x`` (n,) through the FIR ``h`` (L,), centred (delay ``half``), every
    second sample kept: ``y[k] = sum_j h[j] x[2 k + half - j]``, ``x`` zero outside."""
    n, L = x.shape[0], h.shape[0]
    y = np.empty((n + 1) // 2)
    for k in range(y.shape[0]):
        c = 2 * k + half
        acc = 0.0
        for j in range(max(0, c - n + 1), min(L, c + 1)):
            acc += h[j] * x[c - j]
        y[k] = acc
    return y


@njit(cache=True)
def _up2(low, h, half, n_out):
    """(n_out,): ``low`` (m,) with a zero after each sample, through the FIR ``2 h`` (L,),
    centred: ``out[i] = 2 sum_j h[j] up[i + half - j]``, ``up[2 t] = low[t]``, odd ``up`` zero."""
    m, L = low.shape[0], h.shape[0]
    out = np.empty(n_out)
    for i in range(n_out):
        c = i + half
        acc = 0.0
        for j in range(c % 2, L, 2):
            t = (c - j) // 2
            if 0 <= t < m:
                acc += h[j] * low[t]
        out[i] = 2.0 * acc
    return out


def _band_pass(x: np.ndarray, band_hz: tuple) -> np.ndarray:
    """(n,) float32: ``x`` (n,) at 16 kHz through the band (n even or odd; module docstring): what
    ``scipy.signal.resample_poly`` by 1/2, ``sosfiltfilt`` and ``resample_poly`` by 2 give."""
    x = np.ascontiguousarray(x, np.float64)
    n = len(x)
    low = _down2(x, _FIR, _FIR_HALF)  # 8 kHz
    sos, zi = _sections(tuple(band_hz))
    if len(low) > 3 * (2 * len(sos) + 1):  # sosfiltfilt's shortest input
        low = _filtfilt(sos, zi, low)
    else:
        low = np.zeros_like(low)
    return _up2(np.ascontiguousarray(low), _FIR, _FIR_HALF, n).astype(np.float32)  # 16 kHz


def band_limited(samples, band_hz=PHONE_BAND_HZ):
    """A recording's 16 kHz samples through ``band_hz`` (module docstring): a float32 array (n,)
    for an array, or a :class:`BandLimitedSamples` view, read block by block, for a long
    recording read from its file (:class:`~aligner.io.audio.FileSamples`), so memory stays bounded."""
    band_hz = check_band(band_hz)
    if isinstance(samples, np.ndarray):
        return _band_pass(samples, band_hz)
    return BandLimitedSamples(samples, band_hz)


def through_band(samples, band_hz):
    """``samples`` as a model whose front-end band is ``band_hz`` hears them: :func:`band_limited`
    through it, or ``samples`` themselves when ``band_hz`` is None (a full-band model)."""
    return samples if band_hz is None else band_limited(samples, band_hz)


class BandLimitedSamples(SampleReader):
    """Samples (n,) of ``source`` (an array-like read by slices, e.g. a
    :class:`~aligner.io.audio.FileSamples`) through ``band_hz``, filtered on demand: a slice is
    filtered with :data:`BLOCK_MARGIN` samples of context on either side (starting on an even
    sample, as the whole recording's 8 kHz samples fall). Supports what
    :func:`~aligner.features.mfcc.mfcc_features` and
    :func:`~aligner.alignment.conditions.level_statistics` read: ``len()``, ``shape``, ``ndim``,
    ``dtype``, slices of step 1 and ``close()``."""

    def __init__(self, source, band_hz=PHONE_BAND_HZ):
        self.source, self.band_hz, self.n = source, check_band(band_hz), len(source)

    def _read(self, start: int, stop: int) -> np.ndarray:
        a = max(0, start - BLOCK_MARGIN) // 2 * 2
        b = min(self.n, stop + BLOCK_MARGIN)
        return _band_pass(np.asarray(self.source[a:b], np.float32), self.band_hz)[start - a:stop - a]
