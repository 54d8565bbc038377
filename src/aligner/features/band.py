"""A phone-line front end: a recording limited to the band a telephone keeps, before its MFCCs.

A model trained on band-limited speech (a *band expert*, :mod:`aligner.alignment.conditions`)
hears every recording through the same band: :func:`band_limited` resamples the 16 kHz samples
to 8 kHz, keeps ``band_hz`` with a zero-phase Butterworth band-pass (filtered forwards and
backwards, so no boundary moves), and resamples back to 16 kHz. The default band,
:data:`PHONE_BAND_HZ`, holds every phone line the training recipe simulates
(:func:`aligner.features.augment.telephone_line`: 250-400 Hz to 3200-3600 Hz), so a recording
from a phone line passes through it almost unchanged, and clean speech loses what no phone line
carries.

Units: samples at 16 kHz (:data:`aligner.frames.SAMPLE_RATE`), frequencies in Hz.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aligner.frames import SAMPLE_RATE

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


@lru_cache(maxsize=8)
def _filters(band_hz: tuple) -> tuple:
    """``(resampling FIR, band-pass second-order sections)``, designed once per band: the FIR is
    the one :func:`scipy.signal.resample_poly` designs for a factor of 2 (41 taps, Kaiser
    window, beta 5), so passing it gives the same samples without designing it on every call."""
    from scipy import signal

    fir = signal.firwin(41, 0.5, window=("kaiser", 5.0))
    sos = signal.butter(BAND_ORDER, list(band_hz), btype="bandpass", fs=SAMPLE_RATE // 2, output="sos")
    return fir, sos


def _band_pass(x: np.ndarray, band_hz: tuple) -> np.ndarray:
    """(n,) float32: ``x`` (n,) at 16 kHz through the band (n even or odd; module docstring)."""
    from scipy import signal

    fir, sos = _filters(tuple(band_hz))
    low = signal.resample_poly(np.asarray(x, np.float64), 1, 2, window=fir)
    if len(low) > 3 * (2 * len(sos) + 1):  # sosfiltfilt's shortest input
        low = signal.sosfiltfilt(sos, low)
    else:
        low = np.zeros_like(low)
    out = signal.resample_poly(low, 2, 1, window=fir)[:len(x)]
    return np.pad(out, (0, len(x) - len(out))).astype(np.float32)


def band_limited(samples, band_hz=PHONE_BAND_HZ):
    """A recording's 16 kHz samples through ``band_hz`` (module docstring): a float32 array (n,)
    for an array, or a :class:`BandLimitedSamples` view, read block by block, for a long
    recording read from its file (:class:`~aligner.io.audio.FileSamples`), so memory stays bounded."""
    band_hz = check_band(band_hz)
    if isinstance(samples, np.ndarray):
        return _band_pass(samples, band_hz)
    return BandLimitedSamples(samples, band_hz)


class BandLimitedSamples:
    """Samples (n,) of ``source`` (an array-like read by slices, e.g. a
    :class:`~aligner.io.audio.FileSamples`) through ``band_hz``, filtered on demand: a slice is
    filtered with :data:`BLOCK_MARGIN` samples of context on either side (starting on an even
    sample, as the whole recording's 8 kHz samples fall). Supports what
    :func:`~aligner.features.mfcc.mfcc_features` and
    :func:`~aligner.alignment.conditions.level_statistics` read: ``len()``, ``shape``, ``ndim``,
    ``dtype``, slices of step 1 and ``close()``."""

    ndim = 1
    dtype = np.dtype(np.float32)

    def __init__(self, source, band_hz=PHONE_BAND_HZ):
        self.source, self.band_hz, self.n = source, check_band(band_hz), len(source)

    @property
    def shape(self) -> tuple:
        return (self.n,)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        if not isinstance(index, slice):
            i = int(index)
            i = i + self.n if i < 0 else i
            if not 0 <= i < self.n:
                raise IndexError(f"sample {index} outside 0..{self.n - 1}")
            return self[i:i + 1][0]
        start, stop, step = index.indices(self.n)
        if step != 1:
            raise ValueError("BandLimitedSamples reads contiguous slices only")
        stop = max(start, stop)
        a = max(0, start - BLOCK_MARGIN) // 2 * 2
        b = min(self.n, stop + BLOCK_MARGIN)
        return _band_pass(np.asarray(self.source[a:b], np.float32), self.band_hz)[start - a:stop - a]

    def close(self) -> None:
        close = getattr(self.source, "close", None)
        if close is not None:
            close()
