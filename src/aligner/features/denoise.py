"""Noise suppression before the MFCCs: a Wiener filter against stationary noise.

A steady noise floor (a fan, hum, a hissing line or microphone) fills the quiet bins of every
short-time spectrum. The filter estimates the noise's power per frequency bin from the quietest
frames of a stretch of recording (the mean power of its :data:`NOISE_QUANTILE` lowest-energy
frames, digital silence left out) and scales each bin by the Wiener gain ``xi / (1 + xi)``, with
the a priori signal-to-noise ratio ``xi`` estimated by the decision-directed rule of Ephraim and Malah (1984,
"Speech enhancement using a minimum mean-square error short-time spectral amplitude
estimator"): ``xi_t = a * G_{t-1}^2 * gamma_{t-1} + (1 - a) * max(gamma_t - 1, 0)``, ``gamma``
the bin's power over the noise's. The gain never falls below :attr:`DenoiseSettings.gain_floor_db`,
so weak speech is attenuated rather than removed.

:func:`noise_floor_db` is the gate's statistic: the mean energy of the quietest
:data:`NOISE_QUANTILE` of a recording's frames over the mean energy of all of them, in dB (about
-40 dB for a studio recording, near -7 dB under white noise 5 dB below the speech).

The filter runs in blocks of :attr:`DenoiseSettings.block_s` seconds (each with its own noise
estimate, from the block and :data:`BLOCK_MARGIN_S` of context on either side), so memory stays
bounded whatever the recording's length. The STFT is
:func:`aligner.features.dereverb.stft`'s.

Units: samples at 16 kHz (:data:`aligner.frames.SAMPLE_RATE`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from aligner.features.dereverb import JsonSettings, _window, istft, stft
from aligner.features.numeric import _pairwise_sum
from aligner.frames import SAMPLE_RATE
from aligner.io.audio import BlockFilteredSamples

#: seconds of context read on either side of a block when estimating its noise
BLOCK_MARGIN_S = 1.0
#: share of a stretch's frames, the quietest by energy, whose mean power is its noise estimate
NOISE_QUANTILE = 0.1
#: the gate statistic (:func:`noise_floor_db`): STFT of GATE_FFT_SIZE samples and hop GATE_HOP
#: over the first GATE_SECONDS of a recording
GATE_FFT_SIZE, GATE_HOP = 512, 128
GATE_SECONDS = 30.0
#: power added to every bin's noise estimate (keeps a digitally silent stretch finite)
NOISE_FLOOR = 1e-12
#: frames whose energy lies more than this far below the stretch's mean (dB) are digital
#: silence (zeros spliced in, a muted stretch): left out of the noise estimate and the gate
DIGITAL_SILENCE_DB = -100.0


def _live(energy: np.ndarray) -> np.ndarray:
    """Which of the frame energies (n,) are not digital silence (:data:`DIGITAL_SILENCE_DB`): a
    boolean mask (n,)."""
    return energy > energy.mean() * 10.0 ** (DIGITAL_SILENCE_DB / 10.0)


@dataclass(frozen=True)
class DenoiseSettings(JsonSettings):
    """How a model suppresses stationary noise in the recordings it is given (the defaults: 32 ms
    windows every 8 ms, gains of at least -8 dB, the a priori SNR smoothed with 0.98).

    ``fft_size``, ``hop``: the STFT (samples at 16 kHz); ``gain_floor_db``: the least gain (dB,
    negative); ``smoothing``: the decision-directed rule's weight of the previous frame (0..1);
    ``gate_db``: a recording is filtered when :func:`noise_floor_db` of it is at least this (dB;
    None: always); ``block_s``: seconds filtered with one noise estimate.
    """

    WHAT = "noise suppression"

    fft_size: int = 512
    hop: int = 128
    gain_floor_db: float = -8.0
    smoothing: float = 0.98
    gate_db: float | None = None
    block_s: float = 30.0

    def __post_init__(self):
        for name, (lo, hi) in {"fft_size": (64, 4096), "hop": (16, 2048)}.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ValueError(f"noise suppression {name} must be an integer in {lo}..{hi}, got {v!r}")
        if self.hop > self.fft_size // 2 or self.fft_size % self.hop:
            raise ValueError(f"noise suppression needs hop <= fft_size / 2 dividing fft_size, "
                             f"got fft_size {self.fft_size}, hop {self.hop}")
        numbers = {"gain_floor_db": (-60.0, 0.0), "smoothing": (0.0, 1.0), "block_s": (5.0, 3600.0)}
        if self.gate_db is not None:
            numbers["gate_db"] = (-200.0, 0.0)
        for name, (lo, hi) in numbers.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not lo <= v <= hi:
                raise ValueError(f"noise suppression {name} must be a number in {lo:g}..{hi:g}"
                                 + (" or None" if name == "gate_db" else "") + f", got {v!r}")


def _inside(n: int, fft_size: int, hop: int) -> slice:
    """The frames of :func:`~aligner.features.dereverb.stft` of ``n`` samples that lie wholly
    within them (none padded with zeros); all frames when none does."""
    first, stop = fft_size // hop - 1, n // hop
    return slice(first, stop) if stop > first else slice(None)


def noise_power(power: np.ndarray) -> np.ndarray:
    """The noise's power per bin (F,) from spectral powers ``power`` (T, F) (frames wholly within
    the recording): the mean over the :data:`NOISE_QUANTILE` of frames of least total power (at
    least one) that are not digital silence, plus :data:`NOISE_FLOOR`."""
    energy = power.sum(axis=1)
    live = np.flatnonzero(_live(energy)) if len(energy) else energy[:0]
    if len(live) == 0:
        return np.full(power.shape[1], NOISE_FLOOR)
    k = max(1, int(NOISE_QUANTILE * len(live)))
    quiet = live[np.argpartition(energy[live], k - 1)[:k]]
    return power[quiet].mean(axis=0) + NOISE_FLOOR


@njit(cache=True)
def _wiener_gains(power, noise, smoothing, gain_floor):
    """Gains (T, F) of spectral powers ``power`` (T, F) against ``noise`` (F,): the Wiener gain of
    the decision-directed a priori SNR, at least ``gain_floor`` (a ratio of amplitudes)."""
    T, F = power.shape
    gains = np.empty((T, F))
    previous = np.ones(F)  # G^2 * gamma of the frame before (1 before the first)
    for t in range(T):
        for f in range(F):
            gamma = power[t, f] / noise[f]
            xi = smoothing * previous[f] + (1.0 - smoothing) * max(gamma - 1.0, 0.0)
            g = max(xi / (1.0 + xi), gain_floor)
            gains[t, f] = g
            previous[f] = g * g * gamma
    return gains


def _denoised_samples(x: np.ndarray, s: DenoiseSettings) -> np.ndarray:
    spectra = stft(np.asarray(x, np.float64), s.fft_size, s.hop)
    power = spectra.real ** 2 + spectra.imag ** 2
    noise = noise_power(power[_inside(len(x), s.fft_size, s.hop)])
    gains = _wiener_gains(power, noise, float(s.smoothing), 10.0 ** (s.gain_floor_db / 20.0))
    return istft(spectra * gains, s.fft_size, s.hop, len(x))


class DenoisedSamples(BlockFilteredSamples):
    """Samples (n,) of ``source`` (an array-like read by slices) with their stationary noise
    suppressed on demand, block by block (:class:`~aligner.io.audio.BlockFilteredSamples`: blocks
    of ``settings.block_s`` seconds, each with the noise estimate of the block and
    :data:`BLOCK_MARGIN_S` seconds around it). Read as any :class:`~aligner.io.audio.SampleReader`."""

    def __init__(self, source, settings: DenoiseSettings):
        super().__init__(source, settings.block_s, BLOCK_MARGIN_S)
        self.settings = settings

    def _filter(self, x: np.ndarray) -> np.ndarray:
        return _denoised_samples(x, self.settings)


def denoise(samples, settings: DenoiseSettings) -> np.ndarray:
    """``samples`` (n,) (an array, or an array-like read by slices) with their stationary noise
    suppressed: float32 (n,), the whole recording in memory, filtered block by block as
    :class:`DenoisedSamples` reads it."""
    lazy = DenoisedSamples(samples, settings)
    return lazy[0:len(lazy)]


def is_noisy(samples, settings: DenoiseSettings) -> bool:
    """Whether a recording's :func:`noise_floor_db` reaches ``settings.gate_db`` (always, when the
    settings have no gate; never, when the statistic cannot be computed)."""
    if settings.gate_db is None:
        return True
    value = noise_floor_db(samples)
    return bool(np.isfinite(value) and value >= settings.gate_db)


def denoised_samples(samples, settings: DenoiseSettings):
    """``samples`` with their noise suppressed with ``settings`` whatever their gate: an array for
    an array no longer than a block and its margin, else a :class:`DenoisedSamples`."""
    return DenoisedSamples(samples, settings).filtered()


@lru_cache(maxsize=1)
def _gate_window() -> np.ndarray:
    """The gate's (GATE_FFT_SIZE,) float32 periodic Hann window, computed once (not to be written to)."""
    return np.ascontiguousarray(_window(GATE_FFT_SIZE), np.float32)


def _windowed_energies(x: np.ndarray, window: np.ndarray, hop: int, frames: slice) -> np.ndarray:
    """(T,) float64 energies of the Hann-windowed STFT frames ``frames`` (a slice of
    :func:`~aligner.features.dereverb.stft`'s frames) of float32 samples ``x`` (n,): the float32
    products squared and summed in float64 in numpy's pairwise order, as
    ``((frames * window) ** 2).sum(axis=1, dtype=np.float64)`` sums them."""
    size = len(window)
    pad = size - hop
    first, stop, _ = frames.indices((len(x) + pad) // hop + 1)
    out = np.empty(max(stop - first, 0))
    _energies(np.ascontiguousarray(x, np.float32), window, hop, pad, first, out)
    return out


@njit(cache=True)
def _energies(x, window, hop, pad, first, out):
    size = window.shape[0]
    n = x.shape[0]
    row = np.empty(size)
    for r in range(out.shape[0]):
        start = (first + r) * hop - pad
        if 0 <= start and start + size <= n:
            for j in range(size):
                v = x[start + j] * window[j]
                row[j] = float(v * v)
        else:  # a frame reaching past either end: zeros there
            for j in range(size):
                k = start + j
                v = x[k] * window[j] if 0 <= k < n else np.float32(0.0)
                row[j] = float(v * v)
        out[r] = _pairwise_sum(row, 0, size, 1)


def noise_floor_db(samples, max_seconds: float = GATE_SECONDS) -> float:
    """The gate's statistic (dB, <= 0): the mean energy of the quietest :data:`NOISE_QUANTILE` of
    the Hann-windowed frames (:data:`GATE_FFT_SIZE` samples, hop :data:`GATE_HOP`) over the first
    ``max_seconds`` of ``samples`` (n,), over the mean energy of all of them, digital silence
    (:data:`DIGITAL_SILENCE_DB`) left out. NaN for a recording shorter than a frame or silent."""
    n = min(len(samples), int(max_seconds * SAMPLE_RATE))
    x = np.asarray(samples[0:n], np.float32)
    if n < GATE_FFT_SIZE:
        return float("nan")
    energy = _windowed_energies(x, _gate_window(), GATE_HOP, _inside(n, GATE_FFT_SIZE, GATE_HOP))
    if len(energy) == 0 or energy.mean() <= 0.0:
        return float("nan")
    energy = energy[_live(energy)]
    total = float(energy.mean())
    k = max(1, int(NOISE_QUANTILE * len(energy)))
    quiet = float(np.partition(energy, k - 1)[:k].mean())
    return 10.0 * np.log10(max(quiet, 1e-30) / total)
