"""The 10 ms acoustic front end of the forced aligner (SPEC section 3).

Frames
    16 kHz audio, 25 ms windows (``WINDOW`` = 400 samples) every 10 ms
    (``FRAME_SHIFT`` = 160 samples), **not centred**: frame ``t`` covers samples
    ``[160 t, 160 t + 400)``, so its centre is sample ``160 t + 200``
    (``t * 10 + 12.5`` ms) and an utterance of ``n`` samples has
    ``T = 1 + (n - 400) // 160`` frames.

Boundaries
    The boundary *before* frame ``t`` (between frames ``t - 1`` and ``t``) lies
    midway between their centres: sample ``160 t + 120``, i.e. ``t * 10 + 7.5`` ms.
    Reporting ``t * 10`` ms instead costs about 16 points of "% within 10 ms"
    (SPEC section 3). :func:`boundary_time` and :func:`time_to_boundary_frame`
    are the only conversions the rest of the package should use.

Acoustic vector ``s_t`` (42 dims, float32)
    columns 0-12 MFCC c0..c12, column 13 log energy, 14-27 their deltas,
    28-41 their delta-deltas; every column normalised over the utterance to
    zero mean and unit variance.
"""

from __future__ import annotations

import numpy as np
import librosa
import scipy.fft

from aligner.errors import FeatureError

#: sample rate the front end is defined for (Hz)
SAMPLE_RATE = 16000
#: hop between frames, in samples (10 ms at 16 kHz)
FRAME_SHIFT = 160
#: analysis window length, in samples (25 ms at 16 kHz)
WINDOW = 400
#: offset of the boundary before frame t from the frame's first sample, in samples
#: (midway between the centres of frames t-1 and t: 200 - 80 = 120, i.e. 7.5 ms)
BOUNDARY_OFFSET = (WINDOW - FRAME_SHIFT) // 2
#: number of columns of :func:`mfcc_features`
N_FEATURES = 42

N_MFCC = 13
N_MELS = 40
N_FFT = 512
PREEMPHASIS = 0.97
DELTA_WIDTH = 2  # regression half-width of the (HTK-style) delta, in frames

# floors that keep silent or digital-zero audio finite (power is in full-scale units^2)
_POWER_FLOOR = 1e-10
_STD_FLOOR = 1e-8


def n_frames(n_samples: int | np.ndarray) -> int | np.ndarray:
    """Number of 10 ms frames in ``n_samples`` samples of 16 kHz audio.

    ``1 + (n_samples - 400) // 160``, or 0 when the audio is shorter than one
    25 ms window. Works elementwise on arrays.
    """
    n = np.asarray(n_samples, dtype=np.int64)
    t = np.where(n >= WINDOW, 1 + (n - WINDOW) // FRAME_SHIFT, 0)
    return int(t) if t.ndim == 0 else t


def boundary_time(t: int | np.ndarray) -> float | np.ndarray:
    """Time in **seconds** of the boundary before frame ``t`` (frame index, int).

    ``(160 t + 120) / 16000`` = ``t * 10 ms + 7.5 ms``: midway between the centres
    of frames ``t - 1`` and ``t``. Works elementwise on arrays. ``boundary_time(0)``
    is 7.5 ms; callers that report the start of the first phone should report
    0 s instead, and the end of the last phone (frame ``T - 1``) as the audio's
    duration or ``boundary_time(T)``.
    """
    t = np.asarray(t)
    s = (FRAME_SHIFT * t.astype(np.float64) + BOUNDARY_OFFSET) / SAMPLE_RATE
    return float(s) if s.ndim == 0 else s


def phone_start_times(y) -> np.ndarray:
    """Start times in **seconds** (K,) of phones starting at frames ``y`` (K,): the first phone
    starts at 0 (the start of the recording), phone k > 1 at :func:`boundary_time` ``(y[k])``."""
    y = np.asarray(y)
    return np.concatenate([[0.0], boundary_time(y[1:])]) if len(y) else np.zeros(0)


def time_to_boundary_frame(seconds: float | np.ndarray,
                           n_frames: int | None = None) -> int | np.ndarray:
    """Frame index ``t`` whose boundary time (:func:`boundary_time`) is nearest ``seconds``.

    ``seconds`` is a time in **seconds** (scalar or array). Returns
    ``round((seconds * 16000 - 120) / 160)`` (ties round up), clipped to ``>= 0``
    and, when ``n_frames`` (frames in the utterance) is given, to ``<= n_frames``.
    Inverse of :func:`boundary_time`: ``time_to_boundary_frame(boundary_time(t)) == t``.
    A phone that starts at sample ``s`` of a TIMIT ``.phn`` file starts at frame
    ``time_to_boundary_frame(s / 16000)``.
    """
    x = (np.asarray(seconds, dtype=np.float64) * SAMPLE_RATE - BOUNDARY_OFFSET) / FRAME_SHIFT
    t = np.floor(x + 0.5 + 1e-9).astype(np.int64)
    t = np.maximum(t, 0)
    if n_frames is not None:
        t = np.minimum(t, int(n_frames))
    return int(t) if t.ndim == 0 else t


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


def _mel_basis(sample_rate: int) -> np.ndarray:
    if sample_rate not in _MEL_CACHE:
        _MEL_CACHE[sample_rate] = librosa.filters.mel(
            sr=sample_rate, n_fft=N_FFT, n_mels=N_MELS, fmin=20.0,
            fmax=sample_rate / 2.0, htk=True).astype(np.float64)
    return _MEL_CACHE[sample_rate]


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


def mfcc_features(audio: np.ndarray, sample_rate: int = SAMPLE_RATE, warp: float = 1.0) -> np.ndarray:
    """The (T, 42) float32 acoustic vectors ``s_t`` of a mono 16 kHz recording.

    Parameters
    ----------
    audio : 1-D array of samples (any float/int scale; the normalisation removes it).
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
    y = np.asarray(audio)
    if y.ndim != 1:
        raise FeatureError(f"mfcc_features needs mono 1-D audio, got shape {y.shape}")
    if y.shape[0] < WINDOW:
        raise FeatureError(
            f"audio of {y.shape[0]} samples ({y.shape[0] / SAMPLE_RATE * 1000:.1f} ms) is shorter "
            f"than one {WINDOW}-sample (25 ms) analysis window")
    y = y.astype(np.float64)
    if not np.all(np.isfinite(y)):
        raise FeatureError("audio holds NaN or infinite samples")

    T = n_frames(y.shape[0])
    # (T, 400) view of the raw frames; frame t = samples [160 t, 160 t + 400)
    frames = np.lib.stride_tricks.sliding_window_view(y, WINDOW)[::FRAME_SHIFT][:T]

    log_energy = np.log(np.maximum(np.sum(frames ** 2, axis=1), _POWER_FLOOR))

    # pre-emphasis within each frame (the first sample uses the one before it, if any)
    prev = np.empty_like(frames)
    prev[:, 1:] = frames[:, :-1]
    prev[:, 0] = np.concatenate([[frames[0, 0]], y[FRAME_SHIFT * np.arange(1, T) - 1]])
    emph = (frames - PREEMPHASIS * prev) * np.hamming(WINDOW)

    power = np.abs(np.fft.rfft(emph, n=N_FFT, axis=1)) ** 2          # (T, 257)
    if warp != 1.0:
        if not 0.5 <= warp <= 2.0:
            raise FeatureError(f"warp factor {warp} outside 0.5 .. 2")
        power = _warp_spectrum(power, float(warp), sample_rate)
    mel = power @ _mel_basis(sample_rate).T                            # (T, 40)
    log_mel = np.log(np.maximum(mel, _POWER_FLOOR))
    cep = scipy.fft.dct(log_mel, type=2, norm="ortho", axis=1)[:, :N_MFCC]

    static = np.column_stack([cep, log_energy])                       # (T, 14)
    d1 = _deltas(static)
    d2 = _deltas(d1)
    feats = np.hstack([static, d1, d2])

    mean = feats.mean(axis=0)
    std = feats.std(axis=0)
    feats = (feats - mean) / np.maximum(std, _STD_FLOOR)
    # a column that is constant over the utterance (e.g. digital silence) becomes 0
    feats[:, std < _STD_FLOOR] = 0.0
    return feats.astype(np.float32)
