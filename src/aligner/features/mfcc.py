"""The 10 ms acoustic front end of the forced aligner (SPEC section 3).

Frames and boundaries follow :mod:`aligner.frames` (10 ms frames, 25 ms windows, not centred;
the boundary before frame ``t`` at ``t * 10 + 7.5`` ms).

Acoustic vector ``s_t`` (42 dims, float32)
    columns 0-12 MFCC c0..c12, column 13 log energy, 14-27 their deltas,
    28-41 their delta-deltas; every column normalised over the utterance to
    zero mean and unit variance.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligner.errors import FeatureError
from aligner.features.mel import htk_mel_filterbank
from aligner.features.numeric import _pairwise_sum
from aligner.frames import (  # noqa: F401  (re-exported: the front end's frame conventions)
    BOUNDARY_OFFSET, FRAME_SHIFT, SAMPLE_RATE, WINDOW, boundary_time, n_frames, phone_start_times,
    time_to_boundary_frame)

#: number of columns of :func:`mfcc_features`
N_FEATURES = 42

N_MFCC = 13
N_MELS = 40
N_FFT = 512
PREEMPHASIS = 0.97
DELTA_WIDTH = 2  # regression half-width of the (HTK-style) delta, in frames
#: frames analysed at once (20 s); longer recordings are analysed block by block
MFCC_BLOCK_FRAMES = 2000
#: recordings of more frames (over an hour) get their deltas and standardisation block by block
NORMALISE_BLOCK_FRAMES = 400_000

# floors that keep silent or digital-zero audio finite (power is in full-scale units^2)
_POWER_FLOOR = 1e-10
_STD_FLOOR = 1e-8


def _deltas(x: np.ndarray, width: int = DELTA_WIDTH) -> np.ndarray:
    """HTK regression deltas along axis 0 (frames), edges padded by repetition.

    ``d_t = sum_{k=1..W} k (x_{t+k} - x_{t-k}) / (2 sum_k k^2)``; defined for any ``T >= 1``.
    """
    T = x.shape[0]
    padded = np.pad(x, ((width, width), (0, 0)), mode="edge")
    d = np.zeros_like(x)
    for k in range(1, width + 1):
        d += k * (padded[width + k: width + k + T] - padded[width - k: width - k + T])
    return d / (2.0 * sum(k * k for k in range(1, width + 1)))


_MEL_CACHE: dict[int, np.ndarray] = {}
_DCT: list = []


def _mel_basis(sample_rate: int) -> np.ndarray:
    if sample_rate not in _MEL_CACHE:
        _MEL_CACHE[sample_rate] = htk_mel_filterbank(sample_rate, N_FFT, N_MELS, 20.0,
                                                     sample_rate / 2.0).astype(np.float64)
    return _MEL_CACHE[sample_rate]


@njit(cache=True, nogil=True)
def _power_rows(spectrum, out):
    """``out`` (n, F) float64: ``|X|^2`` of the (n, F) complex128 ``spectrum``, as re^2 + im^2
    (``np.abs(X) ** 2`` takes a square root first, and costs five times as much)."""
    for r in range(spectrum.shape[0]):
        for k in range(spectrum.shape[1]):
            v = spectrum[r, k]
            out[r, k] = v.real * v.real + v.imag * v.imag


def _dct_matrix() -> np.ndarray:
    """(N_MELS, N_MFCC) orthonormal DCT-II basis: ``log_mel @ _dct_matrix()`` is
    ``scipy.fft.dct(log_mel, type=2, norm="ortho", axis=1)[:, :N_MFCC]`` (to rounding) without
    importing scipy.fft."""
    if not _DCT:
        n = np.arange(N_MELS)
        k = np.arange(N_MFCC)[:, None]
        basis = np.cos(np.pi * k * (2 * n + 1) / (2 * N_MELS)) * np.sqrt(2.0 / N_MELS)
        basis[0] *= np.sqrt(0.5)
        _DCT.append(np.ascontiguousarray(basis.T))
    return _DCT[0]


_HAMMING: list = []


def _hamming() -> np.ndarray:
    """(WINDOW,) float64 Hamming window, computed once."""
    if not _HAMMING:
        _HAMMING.append(np.hamming(WINDOW))
    return _HAMMING[0]


def _warp_spectrum(power: np.ndarray, warp: float, sample_rate: int) -> np.ndarray:
    """Vocal tract length perturbation of (T, bins) power spectra (Jaitly & Hinton 2013).

    Frequencies are scaled by ``warp`` up to ``4800 Hz * min(warp, 1) / warp`` and mapped
    linearly above so that the Nyquist frequency stays fixed; ``warp > 1`` moves formants up.
    """
    nyquist = sample_rate / 2.0
    freqs = np.linspace(0.0, nyquist, power.shape[1])
    f0 = 4800.0 * min(warp, 1.0) / warp
    source = np.interp(freqs, [0.0, warp * f0, nyquist], [0.0, f0, nyquist])  # inverse map
    pos = source / nyquist * (power.shape[1] - 1)
    i0 = np.minimum(np.floor(pos).astype(np.int64), power.shape[1] - 2)
    w = pos - i0
    return power[:, i0] * (1.0 - w) + power[:, i0 + 1] * w


@njit(cache=True, nogil=True)
def _mfcc_frame_rows(y, starts, prevs, window, preemphasis, buf, energy):
    """The per-frame work of :func:`_static_features` for arbitrary 10 ms
    frames of float64 ``y``: row r is the ``len(window)`` samples from ``starts[r]``;
    ``energy[r]`` their sum of squares (numpy's pairwise order, as ``np.sum`` of the squared
    frame), ``buf[r]`` (N_FFT,) the frame pre-emphasised (``prevs[r]``: the sample taken as the
    one before its first) and windowed, then zero padded."""
    n = window.shape[0]
    sq = np.empty(n)
    for r in range(starts.shape[0]):
        s = starts[r]
        for j in range(n):
            v = y[s + j]
            sq[j] = v * v
        energy[r] = _pairwise_sum(sq, 0, n, 1)
        row = buf[r]
        row[0] = (y[s] - preemphasis * prevs[r]) * window[0]
        for j in range(1, n):
            row[j] = (y[s + j] - preemphasis * y[s + j - 1]) * window[j]
        for j in range(n, row.shape[0]):
            row[j] = 0.0


@njit(cache=True, nogil=True)
def _mfcc_normalised(static, std_floor, out):
    """The tail of :func:`mfcc_features` for one block of (T, 14) float64
    ``static`` features: the columns, their HTK deltas and delta-deltas (+-2 frames, edges
    repeated), each column standardised over the T frames, into ``out`` (T, 42) float32, in
    numpy's order of operations (deltas ``0 + 1 (x[t+1] - x[t-1])``, then ``+ 2 (x[t+2] -
    x[t-2])``, divided by 10; column means and variances summed frame by frame, as numpy sums
    along axis 0; a column of standard deviation below ``std_floor`` becomes 0). One static
    column and its two derived columns at a time: three (T,) float64 work columns, never the
    (T, 42) float64 features of the whole recording."""
    T, D = static.shape
    col = np.empty((3, T))
    for i in range(D):
        for t in range(T):
            col[0, t] = static[t, i]
        for part in range(1, 3):
            for t in range(T):
                d = 0.0
                for k in range(1, 3):
                    a = col[part - 1, min(t + k, T - 1)]
                    b = col[part - 1, max(t - k, 0)]
                    d = d + k * (a - b)
                col[part, t] = d / 10.0
        for part in range(3):
            x = col[part]
            s = x[0]
            for t in range(1, T):
                s += x[t]
            m = s / T
            d = x[0] - m
            v = d * d
            for t in range(1, T):
                d = x[t] - m
                v += d * d
            std = np.sqrt(v / T)
            j = part * D + i
            if std < std_floor:
                for t in range(T):
                    out[t, j] = np.float32(0.0)
            else:
                scale = std if (std >= std_floor or np.isnan(std)) else std_floor  # np.maximum(std, floor)
                for t in range(T):
                    out[t, j] = np.float32((x[t] - m) / scale)


def _static_features(y: np.ndarray, a: int, b: int, warp: float, sample_rate: int) -> np.ndarray:
    """(b - a, 14) MFCC c0..c12 and log energy of frames ``a .. b - 1`` of samples ``y``."""
    seg = np.ascontiguousarray(y[FRAME_SHIFT * a:FRAME_SHIFT * (b - 1) + WINDOW], dtype=np.float64)
    if not np.all(np.isfinite(seg)):
        raise FeatureError("audio holds NaN or infinite samples")
    n = b - a
    # one (n, N_FFT) float64 work buffer, its last N_FFT - WINDOW columns the FFT's zero padding,
    # filled in one pass with the frames' energies (the sample before a frame is its previous
    # sample; the first frame's, the one before the block, if any)
    buf = np.empty((n, N_FFT))
    energy = np.empty(n)
    starts = FRAME_SHIFT * np.arange(n)
    prevs = np.empty(n)
    prevs[0] = seg[0] if a == 0 else float(y[FRAME_SHIFT * a - 1])
    prevs[1:] = seg[starts[1:] - 1]
    _mfcc_frame_rows(seg, starts, prevs, _hamming(), PREEMPHASIS, buf, energy)
    log_energy = np.log(np.maximum(energy, _POWER_FLOOR))

    power = np.empty((n, N_FFT // 2 + 1))                               # (n, 257)
    _power_rows(np.fft.rfft(buf, axis=1), power)
    if warp != 1.0:
        if not 0.5 <= warp <= 2.0:
            raise FeatureError(f"warp factor {warp} outside 0.5 .. 2")
        power = _warp_spectrum(power, float(warp), sample_rate)
    mel = power @ _mel_basis(sample_rate).T                            # (n, 40)
    log_mel = np.log(np.maximum(mel, _POWER_FLOOR))
    cep = log_mel @ _dct_matrix()
    return np.column_stack([cep, log_energy])


def _normalised_by_blocks(static: np.ndarray) -> np.ndarray:
    """:func:`mfcc_features`' deltas and per-column standardisation of (T, 14) static features,
    block by block (two passes: sums, then the output), so a long recording never holds its
    (T, 42) features in float64. Equal to the one-block computation up to rounding."""
    T = static.shape[0]
    ctx = 2 * DELTA_WIDTH  # frames of context the delta-deltas need on either side

    def block(a, b):
        lo, hi = max(0, a - ctx), min(T, b + ctx)
        part = static[lo:hi]
        d1 = _deltas(part)
        d2 = _deltas(d1)
        # the edges of a block inside the recording are not the recording's edges: recompute them
        # from enough context (lo..hi), then keep a..b
        return np.hstack([part, d1, d2])[a - lo:b - lo]

    # deltas near an inner block edge need the true neighbours: edge padding at lo/hi only
    # differs from the whole-recording value within DELTA_WIDTH of lo/hi, which ctx keeps out of a..b
    total = np.zeros(3 * (N_MFCC + 1))
    total_sq = np.zeros(3 * (N_MFCC + 1))
    step = MFCC_BLOCK_FRAMES * 8
    for a in range(0, T, step):
        f = block(a, min(T, a + step))
        total += f.sum(axis=0)
        total_sq += (f * f).sum(axis=0)
    mean = total / T
    std = np.sqrt(np.maximum(total_sq / T - mean * mean, 0.0))
    out = np.empty((T, 3 * (N_MFCC + 1)), np.float32)
    for a in range(0, T, step):
        b = min(T, a + step)
        f = block(a, b)
        f -= mean
        f /= np.maximum(std, _STD_FLOOR)
        f[:, std < _STD_FLOOR] = 0.0
        out[a:b] = f
    return out


def mfcc_features(audio: np.ndarray, sample_rate: int = SAMPLE_RATE, warp: float = 1.0) -> np.ndarray:
    """The (T, 42) float32 acoustic vectors ``s_t`` of a mono 16 kHz recording.

    Parameters
    ----------
    audio : 1-D array of samples (any float/int scale; the normalisation removes it), or a
        :class:`aligner.io.audio.FileSamples` (a long recording read from its file block by block).
    sample_rate : in Hz; must be 16000 (frame sizes are fixed in samples).
    warp : vocal tract length perturbation factor (1.0 = none). Only for augmenting
        classifier training data (e.g. extra copies at 0.9 and 1.1); never at alignment time.

    Returns
    -------
    (T, 42) float32, ``T = 1 + (len(audio) - 400) // 160``; row ``t`` describes
    samples ``[160 t, 160 t + 400)``. Columns: 13 MFCC (c0..c12 of a 40-band
    HTK mel log power spectrum, Hamming window, pre-emphasis 0.97), log energy
    of the raw frame, then deltas and delta-deltas (regression width 2 frames);
    each column standardised over the utterance. Finite even for digital silence.

    Raises
    ------
    FeatureError if the audio is not 1-D, not finite, not at 16 kHz, or shorter
    than one 25 ms window.
    """
    if int(sample_rate) != SAMPLE_RATE:
        raise FeatureError(
            f"mfcc_features needs {SAMPLE_RATE} Hz audio, got {sample_rate} Hz; resample first")
    y = audio if hasattr(audio, "close") and hasattr(audio, "shape") else np.asarray(audio)  # FileSamples: as is
    if y.ndim != 1:
        raise FeatureError(f"mfcc_features needs mono 1-D audio, got shape {y.shape}")
    if y.shape[0] < WINDOW:
        raise FeatureError(
            f"audio of {y.shape[0]} samples ({y.shape[0] / SAMPLE_RATE * 1000:.1f} ms) is shorter "
            f"than one {WINDOW}-sample (25 ms) analysis window")
    if not np.issubdtype(y.dtype, np.number) or y.dtype.kind == "c":
        raise FeatureError(f"mfcc_features needs real-valued samples, got dtype {y.dtype}")

    T = n_frames(y.shape[0])
    static = np.empty((T, N_MFCC + 1))                                 # (T, 14)
    for a in range(0, T, MFCC_BLOCK_FRAMES):  # blocks keep memory bounded on long recordings
        b = min(T, a + MFCC_BLOCK_FRAMES)
        static[a:b] = _static_features(y, a, b, warp, sample_rate)
    if not np.all(np.isfinite(y[FRAME_SHIFT * (T - 1) + WINDOW:])):  # the samples after the last frame
        raise FeatureError("audio holds NaN or infinite samples")
    if T > NORMALISE_BLOCK_FRAMES:
        return _normalised_by_blocks(static)
    # deltas, delta-deltas and per-column standardisation in one kernel (numpy's operations in
    # numpy's order); a column that is constant over the utterance (e.g. digital silence) becomes 0
    feats = np.empty((T, N_FEATURES), np.float32)
    _mfcc_normalised(static, _STD_FLOOR, feats)
    return feats
