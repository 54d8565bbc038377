"""Dereverberation before the MFCCs: weighted prediction error (WPE) on one microphone.

In a reverberant room each short-time spectrum carries the decaying tails of the speech before
it. WPE (Nakatani et al. 2010, "Speech dereverberation based on variance-normalized delayed
linear prediction"; Yoshioka and Nakatani 2012) predicts that late reverberation in every
frequency bin from the bin's own past, ``delay`` to ``delay + taps - 1`` frames back, with a
linear filter fitted by least squares weighted by the inverse power of the dereverberated
estimate, and subtracts it. A few iterations alternate the filter and the power. The early
reflections (within ``delay`` frames) are kept, so the direct sound's timing does not move.

:func:`dereverberate` filters a recording in blocks of :attr:`DereverbSettings.block_s` seconds
(each with its own filter, fitted with :data:`BLOCK_MARGIN_S` of context on either side), so
memory stays bounded whatever the recording's length, and a recording no longer than a block is
filtered as one piece. :func:`late_reverberation_db` is the gate's statistic: the energy one short
WPE iteration removes from a subset of the bins, in dB (near 0 dB for dry speech and for noise,
which is not predictable from the past; tenths of a dB and more in a reverberant room); it is
computed with fixed settings of its own, whatever the filter's.

The filter runs in a numba loop per bin: the weighted correlation of the delayed frames (taps x
taps), its solve, the subtraction. The STFT is a Hann-windowed rfft (``fft_size`` samples, hop
``hop`` samples), resynthesised by weighted overlap-add.

Units: samples at 16 kHz (:data:`aligner.frames.SAMPLE_RATE`); ``delay`` and ``taps`` in STFT
frames of ``hop`` samples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from aligner.frames import SAMPLE_RATE
from aligner.io.audio import BlockFilteredSamples

#: seconds of context read on either side of a block when fitting its filter
BLOCK_MARGIN_S = 1.0
#: the gate statistic (:func:`late_reverberation_db`): one WPE iteration of GATE_TAPS taps after
#: GATE_DELAY frames, STFT of GATE_FFT_SIZE samples and hop GATE_HOP, on every GATE_BIN_STEP-th bin
#: within GATE_BAND_HZ, over the first GATE_SECONDS of a recording
GATE_TAPS, GATE_DELAY, GATE_FFT_SIZE, GATE_HOP = 10, 3, 512, 128
GATE_BIN_STEP = 8
GATE_BAND_HZ = (250.0, 4000.0)
GATE_SECONDS = 30.0
#: power floor of the weights, relative to the bin's mean power (keeps silent frames finite)
POWER_FLOOR = 1e-6


class JsonSettings:
    """``to_dict`` / ``from_dict`` of a frozen settings dataclass saved in a model's JSON, whose
    ``WHAT`` names it in errors (its ``__post_init__`` checks every value)."""

    WHAT = "settings"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values):
        """From a model's JSON; ValueError naming what is wrong."""
        if not isinstance(values, dict):
            raise ValueError(f"{cls.WHAT} settings must be an object, got {type(values).__name__}")
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown {cls.WHAT} settings: {', '.join(sorted(unknown))}")
        return cls(**values)


@dataclass(frozen=True)
class DereverbSettings(JsonSettings):
    """How a model dereverberates the recordings it is given (the defaults: a filter of 320 ms
    after 32 ms, 3 iterations, 64 ms windows every 16 ms).

    ``taps``, ``delay``: the prediction filter's length and the frames it skips (STFT frames of
    ``hop`` samples); ``iterations``: filter/power alternations; ``fft_size``, ``hop``: the STFT
    (samples at 16 kHz); ``gate_db``: a recording is dereverberated when
    :func:`late_reverberation_db` of it is at least this (dB; None: always); ``block_s``:
    seconds filtered with one filter (:func:`dereverberate`).
    """

    WHAT = "dereverberation"

    taps: int = 20
    delay: int = 2
    iterations: int = 3
    fft_size: int = 1024
    hop: int = 256
    gate_db: float | None = None
    block_s: float = 30.0

    def __post_init__(self):
        ints = {"taps": (1, 64), "delay": (1, 16), "iterations": (1, 10), "fft_size": (64, 4096), "hop": (16, 2048)}
        for name, (lo, hi) in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ValueError(f"dereverberation {name} must be an integer in {lo}..{hi}, got {v!r}")
        if self.hop > self.fft_size // 2 or self.fft_size % self.hop:
            raise ValueError(f"dereverberation needs hop <= fft_size / 2 dividing fft_size, "
                             f"got fft_size {self.fft_size}, hop {self.hop}")
        g = self.gate_db
        if g is not None and (isinstance(g, bool) or not isinstance(g, (int, float, np.floating))
                              or not np.isfinite(g)):
            raise ValueError(f"dereverberation gate_db must be a finite number or None, got {g!r}")
        b = self.block_s
        if isinstance(b, bool) or not isinstance(b, (int, float, np.floating)) or not 5.0 <= b <= 3600.0:
            raise ValueError(f"dereverberation block_s must be 5..3600 seconds, got {b!r}")


def _window(fft_size: int) -> np.ndarray:
    return np.hanning(fft_size + 1)[:fft_size]  # periodic Hann


def _frames(x: np.ndarray, fft_size: int, hop: int, dtype) -> np.ndarray:
    """The STFT's frames (T, fft_size) of samples ``x`` (n,) as ``dtype`` (a view of a padded
    copy): frame t starts at sample ``t * hop - (fft_size - hop)``, zeros before the start and
    after the end."""
    pad = fft_size - hop
    n_frames = (len(x) + pad) // hop + 1
    padded = np.zeros(n_frames * hop + fft_size, dtype)
    padded[pad:pad + len(x)] = x
    return np.lib.stride_tricks.sliding_window_view(padded, fft_size)[::hop][:n_frames]


def stft(x: np.ndarray, fft_size: int, hop: int) -> np.ndarray:
    """Hann-windowed spectra (T, fft_size // 2 + 1) complex128 of samples ``x`` (n,), frames as
    :func:`_frames` cuts them."""
    return np.fft.rfft(_frames(x, fft_size, hop, np.float64) * _window(fft_size), axis=1)


def istft(spectra: np.ndarray, fft_size: int, hop: int, n: int) -> np.ndarray:
    """Samples (n,) float64 from :func:`stft` spectra, by weighted overlap-add (the analysis
    window again, divided by the windows' summed squares)."""
    w = _window(fft_size)
    frames = np.fft.irfft(spectra, n=fft_size, axis=1) * w
    T, r = len(frames), fft_size // hop
    total = (T - 1) * hop + fft_size
    out = np.zeros(total + fft_size)
    for k in range(r):  # frames k, k + r, k + 2r... lie end to end
        part = frames[k::r].ravel()
        out[k * hop:k * hop + len(part)] += part
    norm = np.zeros(total + fft_size)
    w2 = np.tile(w * w, (T + r - 1) // r + 1)
    for k in range(r):
        m = len(frames[k::r]) * fft_size
        norm[k * hop:k * hop + m] += w2[:m]
    pad = fft_size - hop
    norm = np.where(norm > 1e-8, norm, 1.0)
    return (out / norm)[pad:pad + n]


@njit(cache=True)
def _solve_positive_definite(R, p):
    """x (K,) with ``R @ x = p`` for a Hermitian positive definite ``R`` (K, K) complex128, by
    Cholesky factors (np.linalg.solve in numba would import scipy.linalg, over half a second of
    CPU in every process that first dereverberates)."""
    K = R.shape[0]
    L = np.zeros((K, K), np.complex128)
    for j in range(K):
        d = R[j, j].real
        for k in range(j):
            d -= L[j, k].real * L[j, k].real + L[j, k].imag * L[j, k].imag
        d = np.sqrt(max(d, 1e-300))
        L[j, j] = d
        for i in range(j + 1, K):
            acc = R[i, j]
            for k in range(j):
                acc -= L[i, k] * np.conj(L[j, k])
            L[i, j] = acc / d
    y = np.empty(K, np.complex128)
    for i in range(K):  # L y = p
        acc = p[i]
        for k in range(i):
            acc -= L[i, k] * y[k]
        y[i] = acc / L[i, i].real
    x = np.empty(K, np.complex128)
    for i in range(K - 1, -1, -1):  # L^H x = y
        acc = y[i]
        for k in range(i + 1, K):
            acc -= np.conj(L[k, i]) * x[k]
        x[i] = acc / L[i, i].real
    return x


@njit(cache=True)
def _wpe_bins(spectra, taps, delay, iterations, floor):
    """WPE of every bin of ``spectra`` (T, F) complex128: the dereverberated spectra (T, F).

    Real and imaginary parts are kept apart with the bins innermost, so each frame's products
    run over contiguous bins (vectorised across bins without reordering any sum). No fastmath:
    with it, a process that compiled this function and one that loaded it from numba's cache
    gave different last bits."""
    T, F = spectra.shape
    K = taps
    yr = np.ascontiguousarray(spectra.real)
    yi = np.ascontiguousarray(spectra.imag)
    zr = yr.copy()
    zi = yi.copy()
    mean_power = np.zeros(F)
    for t in range(T):
        for f in range(F):
            mean_power[f] += yr[t, f] * yr[t, f] + yi[t, f] * yi[t, f]
    for f in range(F):
        mean_power[f] = max(mean_power[f] / max(T, 1), 1e-30)
    if T <= delay + K:
        return spectra.copy()
    inv = np.empty(F)
    wr = np.empty(F)
    wi = np.empty(F)
    g = np.zeros((K, F), np.complex128)
    for _ in range(iterations):
        Rr = np.zeros((K, K, F))
        Ri = np.zeros((K, K, F))
        pr = np.zeros((K, F))
        pi = np.zeros((K, F))
        for t in range(delay, T):
            for f in range(F):
                lam = zr[t, f] * zr[t, f] + zi[t, f] * zi[t, f]
                inv[f] = 1.0 / max(lam, floor * mean_power[f])
            n_k = min(K, t - delay + 1)
            for k in range(n_k):
                tk = t - delay - k
                for f in range(F):  # p[k] += y[tk] conj(y[t]) / lam
                    a, b = yr[tk, f], yi[tk, f]
                    c, d = yr[t, f] * inv[f], -yi[t, f] * inv[f]
                    pr[k, f] += a * c - b * d
                    pi[k, f] += a * d + b * c
                    wr[f] = a * inv[f]
                    wi[f] = b * inv[f]
                for l in range(k, n_k):  # R[k, l] += y[tk] conj(y[tl]) / lam
                    tl = t - delay - l
                    for f in range(F):
                        c, d = yr[tl, f], -yi[tl, f]
                        Rr[k, l, f] += wr[f] * c - wi[f] * d
                        Ri[k, l, f] += wr[f] * d + wi[f] * c
        R = np.empty((K, K), np.complex128)
        p = np.empty(K, np.complex128)
        for f in range(F):
            trace = 0.0
            for k in range(K):
                p[k] = pr[k, f] + 1j * pi[k, f]
                trace += Rr[k, k, f]
                for l in range(k, K):
                    R[k, l] = Rr[k, l, f] + 1j * Ri[k, l, f]
                    R[l, k] = Rr[k, l, f] - 1j * Ri[k, l, f]
            reg = 1e-6 * trace / K + 1e-30
            for k in range(K):
                R[k, k] += reg
            sol = _solve_positive_definite(R, p)
            for k in range(K):
                g[k, f] = sol[k]
        for t in range(T):
            for f in range(F):
                zr[t, f] = yr[t, f]
                zi[t, f] = yi[t, f]
            for k in range(min(K, max(t - delay + 1, 0))):
                tk = t - delay - k
                for f in range(F):  # z[t] -= conj(g[k]) y[tk]
                    gr, gi = g[k, f].real, -g[k, f].imag
                    zr[t, f] -= gr * yr[tk, f] - gi * yi[tk, f]
                    zi[t, f] -= gr * yi[tk, f] + gi * yr[tk, f]
    return zr + 1j * zi


def _wpe_samples(x: np.ndarray, s: DereverbSettings) -> np.ndarray:
    spectra = stft(np.asarray(x, np.float64), s.fft_size, s.hop)
    clean = _wpe_bins(spectra, s.taps, s.delay, s.iterations, POWER_FLOOR)
    return istft(clean, s.fft_size, s.hop, len(x))


def dereverberate(samples, settings: DereverbSettings) -> np.ndarray:
    """``samples`` (n,) (an array, or an array-like read by slices such as a
    :class:`~aligner.io.audio.FileSamples`) dereverberated: float32 (n,), the whole recording in
    memory. Filtered in blocks of ``settings.block_s`` seconds as :class:`DereverberatedSamples`
    reads them."""
    lazy = DereverberatedSamples(samples, settings)
    return lazy[0:len(lazy)]


class DereverberatedSamples(BlockFilteredSamples):
    """Samples (n,) of ``source`` (an array-like read by slices) dereverberated on demand, block
    by block (:class:`~aligner.io.audio.BlockFilteredSamples`: blocks of ``settings.block_s``
    seconds, each with its own filter fitted on the block and :data:`BLOCK_MARGIN_S` seconds
    around it). Read as any :class:`~aligner.io.audio.SampleReader`."""

    def __init__(self, source, settings: DereverbSettings):
        super().__init__(source, settings.block_s, BLOCK_MARGIN_S)
        self.settings = settings

    def _filter(self, x: np.ndarray) -> np.ndarray:
        return _wpe_samples(x, self.settings)


def is_reverberant(samples, settings: DereverbSettings) -> bool:
    """Whether a recording's :func:`late_reverberation_db` reaches ``settings.gate_db`` (always,
    when the settings have no gate; never, when the statistic cannot be computed)."""
    if settings.gate_db is None:
        return True
    value = late_reverberation_db(samples)
    return bool(np.isfinite(value) and value >= settings.gate_db)


def dereverberated_samples(samples, settings: DereverbSettings):
    """``samples`` dereverberated with ``settings`` whatever their gate: an array for an array no
    longer than a block and its margin, else a :class:`DereverberatedSamples` filtering block by
    block."""
    return DereverberatedSamples(samples, settings).filtered()


def late_reverberation_db(samples, max_seconds: float = GATE_SECONDS) -> float:
    """The gate's statistic: the energy (dB, >= 0 in practice) that one WPE iteration of
    :data:`GATE_TAPS` taps after a delay of :data:`GATE_DELAY` frames (STFT of
    :data:`GATE_FFT_SIZE` samples, hop :data:`GATE_HOP`) removes from every
    :data:`GATE_BIN_STEP`-th bin within :data:`GATE_BAND_HZ`, over the first ``max_seconds`` of
    ``samples`` (n,): about 0 dB for dry speech and for noise, a few tenths of a dB or more in a
    reverberant room. NaN for a recording too short or silent to say."""
    n = min(len(samples), int(max_seconds * SAMPLE_RATE))
    x = np.asarray(samples[0:n], np.float32)
    bins = _gate_bins(x, GATE_FFT_SIZE, GATE_HOP)
    if len(bins) <= GATE_DELAY + GATE_TAPS:
        return float("nan")
    clean = _wpe_bins(bins, GATE_TAPS, GATE_DELAY, 1, POWER_FLOOR)
    before = float(np.sum(np.abs(bins) ** 2))
    after = float(np.sum(np.abs(clean) ** 2))
    if before <= 0.0 or after <= 0.0:
        return float("nan")
    return 10.0 * np.log10(before / after)


@lru_cache(maxsize=4)
def _gate_basis(fft_size: int) -> tuple:
    """The gate's bin numbers and their Hann-windowed DFT rows (fft_size, 2 * bins) float32:
    cosines then sines."""
    hz_per_bin = SAMPLE_RATE / fft_size
    lo, hi = int(np.ceil(GATE_BAND_HZ[0] / hz_per_bin)), int(GATE_BAND_HZ[1] / hz_per_bin)
    bins = np.arange(lo, hi + 1, GATE_BIN_STEP)
    phase = 2.0 * np.pi * np.outer(np.arange(fft_size), bins) / fft_size
    w = _window(fft_size)[:, None]
    return bins, np.concatenate([w * np.cos(phase), -w * np.sin(phase)], axis=1).astype(np.float32)


def _gate_bins(x: np.ndarray, fft_size: int, hop: int) -> np.ndarray:
    """The :func:`stft` spectra (T, bins) of the gate's bins only, as one matrix product."""
    _, basis = _gate_basis(fft_size)
    values = (_frames(x, fft_size, hop, np.float32) @ basis).astype(np.float64)
    half = basis.shape[1] // 2
    return np.ascontiguousarray(values[:, :half] + 1j * values[:, half:])
