"""The 5 ms acoustic front end of the vowel duration task (SPEC section 4).

Frames
    16 kHz audio, one frame every 5 ms (``HOP`` = 80 samples, 200 frames per second),
    **centred**: frame ``f`` describes the audio around sample ``80 f`` (time ``f * 5 ms``),
    the convention of AutoVowelDuration's ``.data`` files (row ``f`` is time ``f x 5 ms``).
    A recording of ``n`` samples has ``T = n // 80 + 1`` frames (:func:`n_frames`).
    The vowel labels follow the peer too: a vowel from ``t_on`` to ``t_off`` seconds occupies
    frames ``ceil(t_on * 200) .. floor(t_off * 200)`` (:func:`seconds_to_frames`);
    :func:`frames_to_seconds` maps a decoded ``(t_b, t_e)`` back to the midpoints of those
    intervals, ``((t_b - 0.5) * 5 ms, (t_e + 0.5) * 5 ms)``.

Columns of :func:`vowel_acoustics` (float64, ``(T, 22)``)

===  ==================  ==================================================================
col  name                definition (per frame; "z" = z-scored over the recording)
===  ==================  ==================================================================
0    short_term_energy   z of log10 energy (dB/10) of a 10 ms rectangular window
1    total_energy        z of log10 of the power spectrum summed over 0-8 kHz, 25 ms Hann
2    low_energy          z of log10 power in 0-1 kHz (voicing bar, F1), 25 ms Hann
3    high_energy         z of log10 power in 3-8 kHz (frication, bursts), 25 ms Hann
4    wiener_entropy      z of log spectral flatness (geometric / arithmetic mean of the
                         power spectrum, ``librosa.feature.spectral_flatness``); 0 = white
5    autocorrelation     z of the normalised autocorrelation at lag 1 (1 sample) of the
                         25 ms frame (near 1 for sonorants, low for frication)
6    pitch               z over voiced frames of log2 f0 (f0 in Hz, 60-400 Hz, the lag of
                         the highest normalised autocorrelation peak in a 40 ms window);
                         0 in unvoiced frames
7    voicing             that peak's height, in [0, 1], median-smoothed over 3 frames
8    zero_crossing       z of the zero-crossing rate (crossings per sample, 25 ms window,
                         ``librosa.feature.zero_crossing_rate``)
9    vowel_prob          frame classifier: largest posterior among the vowel classes
10   nasal_prob          frame classifier: posterior sum over m, n, ng
11   vowel_sum           frame classifier: posterior sum over the vowel classes
12   glide_prob          frame classifier: posterior sum over l, r, w, y (the glides of :mod:`aligner.phones.sets`)
13   silence_prob        frame classifier: posterior of sil (closures, pauses)
14   mfcc_1              z of MFCC c1 (40 mel bands, HTK, 25 ms Hann; ``librosa``)
15   mfcc_2              z of MFCC c2
16   mfcc_3              z of MFCC c3
17   mfcc_4              z of MFCC c4
18   delta_mfcc_1        HTK regression delta (+-4 frames = +-20 ms, edges repeated) of col 14
19   delta_mfcc_2        delta of col 15
20   delta_mfcc_3        delta of col 16
21   delta_mfcc_4        delta of col 17
===  ==================  ==================================================================

The classifier columns (9-13) are posteriors (``exp`` of
:meth:`~aligner.features.frame_classifier.FrameClassifier.log_posteriors`, no prior division) of the
alignment model's 10 ms frame classifier on :func:`~aligner.features.mfcc.mfcc_features`,
linearly interpolated from the 10 ms frame centres (``10 t + 12.5`` ms) to the 5 ms frame
times (held constant beyond the first and last centre).

Pitch. ``librosa.pyin`` is too slow for batch measurement (it alone would keep the batch
far below the 100 tokens/s target; timing in docs/results.md). Columns 6-7 therefore come from one
FFT autocorrelation per frame (the classic Boersma-style voicing measure, without
pyin's HMM): ``voicing`` is the height of the best normalised autocorrelation peak between
lags 40 and 267 samples (400-60 Hz), ``pitch`` its lag.

:data:`VOWEL_COLUMNS` selects 16 of the 22 columns in the peer's layout (energies,
entropy, autocorrelation, pitch, voicing, zero crossings, vowel/nasal probabilities, vowel
sum, four cepstral columns), which gives the 116-dim feature map of
:mod:`aligner.vowels.task`.
"""

from __future__ import annotations

import os

import numpy as np

from aligner.errors import FeatureError
from aligner.frames import SAMPLE_RATE
from aligner.frames import VOWEL_FRAME_RATE as FRAME_RATE  # noqa: F401  (re-exported)
from aligner.frames import VOWEL_FRAME_SECONDS as FRAME_SECONDS  # noqa: F401
from aligner.frames import VOWEL_HOP as HOP
from aligner.frames import n_vowel_frames as n_frames
from aligner.frames import seconds_to_vowel_frames as seconds_to_frames  # noqa: F401
from aligner.frames import vowel_frames_to_seconds as frames_to_seconds  # noqa: F401
from aligner.phones.sets import CLASSES39, GLIDE_CLASSES, NASAL_CLASSES, VOWEL_CLASSES
from aligner.features.mfcc import FRAME_SHIFT as CLASSIFIER_SHIFT
from aligner.features.mfcc import WINDOW as CLASSIFIER_WINDOW
from aligner.runtime import blas
from aligner.features.mel import htk_mel_filterbank
from aligner.features.mfcc import _deltas, mfcc_features
from aligner.features.vowel_kernels import (  # noqa: F401  (the frame geometry, re-exported)
    DELTA_WIDTH, N_FFT, PITCH_WINDOW, SHORT_WINDOW, WINDOW)
from aligner.features.vowel_kernels import (_cepstral_columns, _columns_0_to_8, _cut_posterior_columns,
                                           _cut_signal_columns, _frame_rows, _mfcc_frame_rows,
                                           _mfcc_normalised, _pitch_peaks, _pitch_power, _posterior_columns,
                                           _row_means, _spectral_sums)

PITCH_MIN_HZ, PITCH_MAX_HZ = 60.0, 400.0
VOICING_THRESHOLD = 0.45  #: voicing above which a frame counts as voiced for the pitch column

COLUMN_NAMES = (
    "short_term_energy", "total_energy", "low_energy", "high_energy", "wiener_entropy",
    "autocorrelation", "pitch", "voicing", "zero_crossing", "vowel_prob", "nasal_prob",
    "vowel_sum", "glide_prob", "silence_prob", "mfcc_1", "mfcc_2", "mfcc_3", "mfcc_4",
    "delta_mfcc_1", "delta_mfcc_2", "delta_mfcc_3", "delta_mfcc_4",
)
N_COLUMNS = len(COLUMN_NAMES)

#: the 16 columns the default vowel model uses (the peer's layout: 116-dim feature map)
VOWEL_COLUMNS = tuple(COLUMN_NAMES.index(n) for n in (
    "short_term_energy", "total_energy", "low_energy", "high_energy", "wiener_entropy",
    "autocorrelation", "pitch", "voicing", "zero_crossing", "vowel_prob", "nasal_prob",
    "vowel_sum", "mfcc_1", "mfcc_2", "mfcc_3", "mfcc_4"))



_LOG_FLOOR = 1e-10
_STD_FLOOR = 1e-8


def _class_index(names) -> np.ndarray:
    return np.array([CLASSES39.index(n) for n in names if n in CLASSES39], dtype=np.int64)


_VOWEL_IDX = _class_index(VOWEL_CLASSES)
_NASAL_IDX = _class_index(NASAL_CLASSES)
_GLIDE_IDX = _class_index(GLIDE_CLASSES)
_SIL_IDX = CLASSES39.index("sil")


# The two matrix products below run on one BLAS thread (as the frame classifier's do): for a
# short token OpenBLAS's second thread costs far more than it saves (on a busy 2-core machine
# the mel product took 6.8 ms per token with two threads, 0.14 ms with one; the same values).
_MEL_BASIS: list = []


def _mel_basis() -> np.ndarray:
    """(40, 257) float32 HTK mel filterbank, 20 Hz - 8 kHz, built once: the matrix of
    ``librosa.filters.mel(sr=16000, n_fft=512, n_mels=40, fmin=20.0, htk=True)``
    (:mod:`aligner.features.mel`, identical to it without importing librosa)."""
    if not _MEL_BASIS:
        _MEL_BASIS.append(htk_mel_filterbank(SAMPLE_RATE, N_FFT, 40, 20.0))
    return _MEL_BASIS[0]


#: cepstral coefficients computed (c0 .. c4; columns 14-17 are c1 .. c4)
N_CEPSTRA = 5
_DCT_BASIS: list = []


def _dct_basis() -> np.ndarray:
    """(5, 40) orthonormal DCT-II basis: ``_dct_basis() @ log_mel`` is
    ``scipy.fft.dct(log_mel, type=2, norm="ortho", axis=0)[:5]`` (what ``librosa.feature.mfcc``
    computes, to rounding) without importing scipy.fft or librosa."""
    if not _DCT_BASIS:
        n_mels = _mel_basis().shape[0]
        n = np.arange(n_mels)
        k = np.arange(N_CEPSTRA)[:, None]
        basis = np.cos(np.pi * k * (2 * n + 1) / (2 * n_mels)) * np.sqrt(2.0 / n_mels)
        basis[0] *= np.sqrt(0.5)
        _DCT_BASIS.append(np.ascontiguousarray(basis))
    return _DCT_BASIS[0]


def _spectral_flatness(S: np.ndarray) -> np.ndarray:
    """``librosa.feature.spectral_flatness(S=S, power=1.0, amin=_LOG_FLOOR)[0]`` of a (bins, n)
    power spectrogram, with librosa's arithmetic (so the same values), without librosa."""
    S_thresh = np.maximum(_LOG_FLOOR, S)
    gmean = np.exp(np.mean(np.log(S_thresh), axis=-2, keepdims=True))
    amean = np.mean(S_thresh, axis=-2, keepdims=True)
    return (gmean / amean)[0]


def _zero_crossing_rate(y: np.ndarray, frame_length: int, hop_length: int) -> np.ndarray:
    """``librosa.feature.zero_crossing_rate(y, frame_length=, hop_length=, center=False)[0]``
    without librosa: per frame, the fraction of its samples whose sign (``signbit``, samples
    within +-1e-10 counting as 0, i.e. positive) differs from the previous sample's (the first
    sample of a frame never counts), as librosa's numba stencil computes it."""
    frames = np.lib.stride_tricks.sliding_window_view(y, frame_length)[::hop_length]
    negative = np.signbit(np.where(np.abs(frames) <= 1e-10, 0.0, frames))
    crossings = np.zeros(frames.shape, dtype=bool)
    crossings[:, 1:] = negative[:, 1:] != negative[:, :-1]
    return np.mean(crossings.T, axis=-2)


def _power_to_db(S: np.ndarray) -> np.ndarray:
    """``librosa.power_to_db(S, amin=_LOG_FLOOR, top_db=None)`` (ref 1.0) without librosa."""
    log_spec = 10.0 * np.log10(np.maximum(_LOG_FLOOR, S))
    log_spec -= 10.0 * np.log10(np.maximum(_LOG_FLOOR, 1.0))
    return log_spec


def _zscore(v: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    ref = v if mask is None else v[mask]
    if ref.size == 0:
        return np.zeros_like(v)
    std = ref.std()
    if std < _STD_FLOOR:
        return np.zeros_like(v)
    return (v - ref.mean()) / std


def _padded(y: np.ndarray, longest: int) -> tuple[np.ndarray, int]:
    """``(y zero padded for centred frames of up to `longest` samples, the padding before y)``."""
    half = longest // 2
    return np.pad(y, (half, half + HOP)), half


def _frames(y: np.ndarray, length: int, T: int, padded: tuple | None = None) -> np.ndarray:
    """(T, length) centred frames of ``y`` (zero padded): frame f covers ``[80 f - length/2, 80 f + length/2)``.

    A view of ``padded`` (:func:`_padded`, for a length up to its own) if given, so frames of
    several lengths share one padded copy of a long recording."""
    half = length // 2
    if padded is None:
        padded = _padded(y, length)
    samples, before = padded
    return np.lib.stride_tricks.sliding_window_view(samples[before - half:], length)[::HOP][:T]


_PITCH_LAGS = (int(SAMPLE_RATE / PITCH_MAX_HZ), int(SAMPLE_RATE / PITCH_MIN_HZ))  # 40 .. 266 samples
# linear (not circular) autocorrelation up to the longest lag needs n >= window + lag (907):
# 960 = 2^6 3 5, scipy.fft.next_fast_len(907, real=True)
_PITCH_NFFT = 960
_PITCH_CACHE: dict = {}


def _pitch_window():
    """(Hann window, its own normalised autocorrelation at lags 40..266), built once."""
    if not _PITCH_CACHE:
        window = np.hanning(PITCH_WINDOW)
        wac = np.fft.irfft(np.abs(np.fft.rfft(window, n=_PITCH_NFFT)) ** 2, n=_PITCH_NFFT)
        lo, hi = _PITCH_LAGS
        _PITCH_CACHE["window"] = window
        _PITCH_CACHE["wac"] = wac[lo:hi + 1] / wac[0]
    return _PITCH_CACHE["window"], _PITCH_CACHE["wac"]


def _autocorrelation_pitch(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f0 in Hz, voicing in [0, 1]) per frame from the normalised autocorrelation of the
    (T, 640) 40 ms windows ``frames`` (:func:`_frames` with ``PITCH_WINDOW``)."""
    T = frames.shape[0]
    frames = frames - frames.mean(axis=1, keepdims=True)
    window, wac = _pitch_window()
    spec = np.fft.rfft(frames * window, n=_PITCH_NFFT, axis=1)
    lo, hi = _PITCH_LAGS
    ac = np.fft.irfft(spec.real ** 2 + spec.imag ** 2, n=_PITCH_NFFT, axis=1)[:, :hi + 1]
    # divide by the window's own autocorrelation (Boersma 1993) so a periodic signal peaks near 1
    r0 = ac[:, :1]
    norm = ac[:, lo:hi + 1] / np.maximum(r0, _LOG_FLOOR) / wac
    best = norm.argmax(axis=1)
    voicing = np.clip(norm[np.arange(T), best], 0.0, 1.0)
    voicing[r0[:, 0] <= _LOG_FLOOR] = 0.0
    f0 = SAMPLE_RATE / (best + lo)
    return f0, voicing


def _median3(v: np.ndarray) -> np.ndarray:
    if v.shape[0] < 3:
        return v.copy()
    p = np.pad(v, 1, mode="edge")
    return np.median(np.stack([p[:-2], p[1:-1], p[2:]]), axis=0)


def classifier_columns(classifier, samples: np.ndarray, T: int) -> np.ndarray:
    """(T, 5) columns 9-13 (vowel max, nasal sum, vowel sum, glide sum, sil) at 5 ms frames.

    ``classifier``: a :class:`~aligner.features.frame_classifier.FrameClassifier`. Needs at least one 25 ms
    classifier window (400 samples) of audio.
    """
    frames = mfcc_features(samples)
    return _columns_from_posteriors(np.exp(classifier.log_posteriors(frames).astype(np.float64)), T)


#: frames (5 ms) analysed at once; longer recordings are analysed block by block
BLOCK_FRAMES = 2048


def _frame_quantities(short: np.ndarray, frames: np.ndarray, pitch_frames: np.ndarray) -> tuple:
    """Per-frame values of n frames before any z-score: ``(raw (n, 8), mel (40, n))``; raw
    columns: log10 short-term energy, log10 total / low (<= 1 kHz) / high (>= 3 kHz) power,
    log Wiener entropy (spectral flatness), lag-1 autocorrelation, f0 (Hz), raw voicing.
    ``short``, ``frames``, ``pitch_frames``: the (n, window) frames of :func:`_frames`."""
    n = frames.shape[0]
    raw = np.empty((n, 8))
    raw[:, 0] = np.log10(np.maximum((short ** 2).mean(axis=1), _LOG_FLOOR))
    spectrum = np.fft.rfft(frames * np.hanning(WINDOW), n=N_FFT, axis=1)
    power = spectrum.real ** 2 + spectrum.imag ** 2  # (n, 257)
    freqs = np.fft.rfftfreq(N_FFT, 1.0 / SAMPLE_RATE)
    raw[:, 1] = np.log10(power.sum(axis=1) + _LOG_FLOOR)
    raw[:, 2] = np.log10(power[:, freqs <= 1000].sum(axis=1) + _LOG_FLOOR)
    raw[:, 3] = np.log10(power[:, freqs >= 3000].sum(axis=1) + _LOG_FLOOR)
    flatness = _spectral_flatness(power.T)
    raw[:, 4] = np.log(np.maximum(flatness, _LOG_FLOOR))
    centred = frames - frames.mean(axis=1, keepdims=True)
    r0 = (centred ** 2).sum(axis=1)
    r1 = (centred[:, 1:] * centred[:, :-1]).sum(axis=1)
    raw[:, 5] = np.where(r0 > _LOG_FLOOR, r1 / np.maximum(r0, _LOG_FLOOR), 0.0)
    raw[:, 6], raw[:, 7] = _autocorrelation_pitch(pitch_frames)
    with blas.limit(1):
        mel = _mel_basis() @ power.T
    return raw, mel


# -- the short-recording path: numba kernels (aligner.features.vowel_kernels) and their callers --

def _classifier_input(classifier, samples: np.ndarray):
    """(Tc, (2 context + 1) 42) float32 standardised context vectors of float32 ``samples``
    (:meth:`~aligner.features.frame_classifier.FrameClassifier._standardised` of
    :func:`~aligner.features.mfcc.mfcc_features`, the same bits: the MFCC tail in one kernel),
    or None when the generic :func:`classifier_columns` must score them (more than one MFCC or
    scoring block, under 2 frames, a smoothing or projection-free classifier, non-finite audio)."""
    from aligner.features import mfcc as mf

    Tc = mf.n_frames(samples.shape[0])
    if not _fast_classifier(classifier, Tc) or not np.isfinite(samples).all():
        return None
    return _classifier_input_of(classifier, mf._static_features(samples, 0, Tc, 1.0, SAMPLE_RATE))


def _fast_classifier(classifier, Tc: int) -> bool:
    """Whether :func:`_classifier_input` scores a recording of Tc 10 ms frames with this
    classifier (one MFCC and scoring block, at least 2 frames, no smoothing; the Nystroem kernel
    after a projection, or a network feature map)."""
    from aligner.features import frame_classifier as fc
    from aligner.features import mfcc as mf

    return not (Tc < 2 or Tc > mf.MFCC_BLOCK_FRAMES or Tc > fc.SCORE_BLOCK_FRAMES or classifier.smooth > 0
                or not (classifier.projection.size or classifier.hidden) or not classifier._fitted
                or classifier.n_features != 3 * (mf.N_MFCC + 1))


def _classifier_input_of(classifier, static: np.ndarray) -> np.ndarray:
    """:func:`_classifier_input` from a recording's (Tc, 14) static MFCC features."""
    from aligner.features import mfcc as mf

    frames = np.empty((static.shape[0], static.shape[1] * 3), np.float32)
    _mfcc_normalised(static, mf._STD_FLOOR, frames)
    return classifier._standardised(frames)


def _classifier_finish(classifier, P: np.ndarray, out: np.ndarray) -> None:
    """Columns 9-13 into ``out`` (T, 22) from one recording's standardised context vectors
    ``P`` (Tc, width), as ``FrameClassifier.log_posteriors`` and :func:`classifier_columns` go
    on from there."""
    with blas.limit(classifier.blas_threads):
        post = _classifier_posteriors(classifier, P)
    centres = (CLASSIFIER_SHIFT * np.arange(P.shape[0]) + CLASSIFIER_WINDOW / 2) / HOP  # in 5 ms frames
    _posterior_columns(post, _VOWEL_IDX, _NASAL_IDX, _GLIDE_IDX, _SIL_IDX, centres, out, 9)


def _classifier_posteriors(classifier, P: np.ndarray) -> np.ndarray:
    """(Tc, n_classes) float64 posteriors of one recording's standardised context vectors ``P``
    (Tc, width) float32, as ``FrameClassifier.log_posteriors`` computes them (the same bits:
    its outputs, then the softmax). Its products run on the caller's BLAS
    threads."""
    from aligner.features import frame_classifier as fc

    dec = classifier._outputs(P)
    return np.exp(fc._log_softmax(classifier.temperature * dec).astype(np.float64))


def _classifier_columns_many(classifier, items: list) -> None:
    """:func:`classifier_columns` of several recordings, ``items`` = [(float32 samples, T, out
    (T, 22))], written into each ``out[:, 9:14]``. Each recording's products run on its own
    rows: stacking several recordings' rows into one product saves little and BLAS may add a
    product's terms in another order when the number of rows changes, so a recording's bits
    would depend on the batch it came in."""
    for samples, T, out in items:
        P = _classifier_input(classifier, samples)
        if P is None:
            out[:, 9:14] = classifier_columns(classifier, samples, T)
            continue
        _classifier_finish(classifier, P, out)


_FAST_CACHE: dict = {}


def _fast_constants() -> dict:
    """Arrays the short-recording path reuses: the two Hann windows, the float64 mel basis,
    the spectrum's band edges."""
    if not _FAST_CACHE:
        freqs = np.fft.rfftfreq(N_FFT, 1.0 / SAMPLE_RATE)
        low = np.flatnonzero(freqs <= 1000)
        high = np.flatnonzero(freqs >= 3000)
        assert low[0] == 0 and np.all(np.diff(low) == 1) and high[-1] == freqs.size - 1 and np.all(np.diff(high) == 1)
        _FAST_CACHE.update(hann=np.hanning(WINDOW), pitch_hann=_pitch_window()[0], wac=_pitch_window()[1],
                           mel=_mel_basis().astype(np.float64), low_hi=int(low[-1]), high_lo=int(high[0]))
    return _FAST_CACHE


def _acoustics_short(y: np.ndarray, classifier, T: int) -> np.ndarray:
    """:func:`vowel_acoustics` of float64 ``y`` of T <= BLOCK_FRAMES frames (the same bits)."""
    out = _signal_columns_short(y, T)
    _classifier_columns_many(classifier, [(y.astype(np.float32), T, out)])
    return out


def _signal_columns_short(y: np.ndarray, T: int) -> np.ndarray:
    """(T, 22) float64 frames of float64 ``y`` (T <= BLOCK_FRAMES) with every column of
    :func:`vowel_acoustics` but the classifier's (9-13, left 0)."""
    out = np.zeros((T, N_COLUMNS), dtype=np.float64)
    n = y.shape[0]
    # frame f centred on sample HOP f, zero outside the recording (the frames of _frame_buffers)
    logs, log_flatness, log2_f0, voicing, power, r0, r1 = _row_values(
        y, HOP * np.arange(T, dtype=np.int64), np.zeros(T, dtype=np.int64), np.full(T, n, dtype=np.int64))
    _columns_0_to_8(logs, log_flatness, r0, r1, log2_f0, voicing, y, T, _LOG_FLOOR, _STD_FLOOR,
                    VOICING_THRESHOLD, out)
    with blas.limit(1):
        mfcc = _cepstra(power)
    _cepstral_columns(mfcc, _STD_FLOOR, out)
    return out


def _frame_values(short_energy: np.ndarray, spec_in: np.ndarray, pitch_in: np.ndarray) -> tuple:
    """The per-frame values of n frames after :func:`_frame_buffers` (or :func:`_frame_rows`),
    all rows at once (:func:`_row_values` computes the same bits chunk by chunk; this is its
    reference in the tests), before any z-score: ``(logs (n, 4) log10 short-term, total, low and high energy, log
    spectral flatness (n,), log2 f0 (n,), raw voicing (n,), power spectrum (n, 257))``. Each
    frame's values depend on its own row alone."""
    k = _fast_constants()
    T = short_energy.shape[0]
    spectrum = np.fft.rfft(spec_in, axis=1)
    power, thresh = np.empty(spectrum.shape), np.empty(spectrum.shape)
    sums = np.empty((T, 4))
    _spectral_sums(spectrum, k["low_hi"], k["high_lo"], _LOG_FLOOR, power, sums, thresh)
    logs = np.empty((T, 4))
    logs[:, 0] = np.log10(np.maximum(short_energy, _LOG_FLOOR))
    logs[:, 1:] = np.log10(sums[:, :3] + _LOG_FLOOR)
    log_mean = np.empty(T)
    _row_means(np.log(thresh, out=thresh), log_mean)
    log_flatness = np.log(np.maximum(np.exp(log_mean) / sums[:, 3], _LOG_FLOOR))
    pitch_spec = np.fft.rfft(pitch_in, axis=1)
    _pitch_power(pitch_spec)
    ac = np.fft.irfft(pitch_spec, n=_PITCH_NFFT, axis=1)
    f0, voicing = np.empty(T), np.empty(T)
    lo, hi = _PITCH_LAGS
    _pitch_peaks(ac, lo, hi, k["wac"], _LOG_FLOOR, f0, voicing)
    return logs, log_flatness, np.log2(f0), voicing, power


#: frame rows of :func:`_row_values` taken through the FFTs at once (their buffers stay in the caches)
ROW_CHUNK = 32


def _row_values(y: np.ndarray, centres: np.ndarray, lo: np.ndarray, hi: np.ndarray, single: bool = False) -> tuple:
    """:func:`_frame_rows` then :func:`_frame_values` of R frames of float64 ``y`` (centred on the
    samples ``centres`` (R,), the samples outside ``lo[r] .. hi[r] - 1`` counting as 0), the
    rows taken :data:`ROW_CHUNK` at a time through the time-domain kernel, the FFTs and the
    per-row kernels, in reused buffers: ``(logs (R, 4), log_flatness (R,), log2_f0 (R,), raw
    voicing (R,), power (R, 257), r0 (R,), r1 (R,))``, the same bits as the two calls (each
    row's values depend on its own row alone; the transcendental functions run on the whole
    arrays as there).

    ``single``: the three FFTs in single precision (``scipy.fft`` on the windowed frames rounded
    to float32, the pitch frame's power spectrum in float32 too), everything else as without;
    about half the FFTs' time, the values within float32 rounding of the FFTs' (the fusion's
    cuts, :data:`CUT_SINGLE_FFT`)."""
    k = _fast_constants()
    R = centres.shape[0]
    C = max(1, min(R, ROW_CHUNK))
    short_energy, r0, r1 = np.empty(R), np.empty(R), np.empty(R)
    dtype = np.float32 if single else np.float64
    spec_in, pitch_in = np.empty((C, N_FFT), dtype), np.empty((C, _PITCH_NFFT), dtype)
    if single:
        from scipy import fft as sfft
    spectrum = np.empty((C, N_FFT // 2 + 1), dtype=np.complex128)
    pitch_spec = np.empty((C, _PITCH_NFFT // 2 + 1), dtype=np.complex128)
    ac = np.empty((C, _PITCH_NFFT))
    thresh = np.empty((C, N_FFT // 2 + 1))
    power, sums = np.empty((R, N_FFT // 2 + 1)), np.empty((R, 4))
    log_mean, f0, voicing = np.empty(R), np.empty(R), np.empty(R)
    lag_lo, lag_hi = _PITCH_LAGS
    for a in range(0, R, C):
        b = min(R, a + C)
        m = b - a
        _frame_rows(y, centres[a:b], lo[a:b], hi[a:b], k["hann"], k["pitch_hann"], short_energy[a:b], r0[a:b],
                    r1[a:b], spec_in[:m], pitch_in[:m])
        if single:
            spectrum[:m] = sfft.rfft(spec_in[:m], axis=1)
        else:
            np.fft.rfft(spec_in[:m], axis=1, out=spectrum[:m])
        _spectral_sums(spectrum[:m], k["low_hi"], k["high_lo"], _LOG_FLOOR, power[a:b], sums[a:b], thresh[:m])
        _row_means(np.log(thresh[:m], out=thresh[:m]), log_mean[a:b])
        if single:
            pitch_spec32 = sfft.rfft(pitch_in[:m], axis=1)
            _pitch_power(pitch_spec32)
            ac[:m] = sfft.irfft(pitch_spec32, n=_PITCH_NFFT, axis=1)
        else:
            np.fft.rfft(pitch_in[:m], axis=1, out=pitch_spec[:m])
            _pitch_power(pitch_spec[:m])
            np.fft.irfft(pitch_spec[:m], n=_PITCH_NFFT, axis=1, out=ac[:m])
        _pitch_peaks(ac[:m], lag_lo, lag_hi, k["wac"], _LOG_FLOOR, f0[a:b], voicing[a:b])
    logs = np.empty((R, 4))
    logs[:, 0] = np.log10(np.maximum(short_energy, _LOG_FLOOR))
    logs[:, 1:] = np.log10(sums[:, :3] + _LOG_FLOOR)
    log_flatness = np.log(np.maximum(np.exp(log_mean) / sums[:, 3], _LOG_FLOOR))
    return logs, log_flatness, np.log2(f0), voicing, power, r0, r1


def _cepstra(power: np.ndarray) -> np.ndarray:
    """(4, T) raw cepstra c1..c4 (before their z-scores) of one recording's (T, 257) power
    spectra (C-contiguous): ``librosa.feature.mfcc(S=dB, n_mfcc=5)[1:5]`` of the 40-band mel
    spectrogram. Its two matrix products run on the caller's BLAS threads (one)."""
    mel = _fast_constants()["mel"] @ power.T
    return np.ascontiguousarray((_dct_basis() @ _power_to_db(mel))[1:5])


def vowel_acoustics(samples: np.ndarray, classifier, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """The (T, 22) float64 acoustic frames of a mono 16 kHz recording (module docstring table).

    Args:
        samples: 1-D float audio at 16 kHz (any amplitude scale: levels are z-scored).
        classifier: the alignment model's :class:`~aligner.features.frame_classifier.FrameClassifier`.
        sample_rate: Hz; must be 16000.

    Raises:
        FeatureError: not mono, not 16 kHz, non-finite, or shorter than 25 ms (400 samples,
            the classifier's analysis window).
    """
    y = _checked_signal(samples, sample_rate)
    T = n_frames(y.shape[0])
    if T <= BLOCK_FRAMES and FAST_PATH:
        return _acoustics_short(y, classifier, T)
    return _acoustics_blocks(y, classifier, T)


def _checked_signal(samples, sample_rate: int) -> np.ndarray:
    """float64 1-D ``samples``, or the :class:`FeatureError` of :func:`vowel_acoustics`."""
    if int(sample_rate) != SAMPLE_RATE:
        raise FeatureError(f"vowel_acoustics needs {SAMPLE_RATE} Hz audio, got {sample_rate} Hz")
    y = np.asarray(samples, dtype=np.float64)
    if y.ndim != 1:
        raise FeatureError(f"vowel_acoustics needs mono 1-D audio, got shape {y.shape}")
    if y.shape[0] < WINDOW:
        raise FeatureError(f"audio of {y.shape[0]} samples ({y.shape[0] / SAMPLE_RATE * 1000:.1f} ms) is "
                           f"shorter than one {WINDOW}-sample (25 ms) analysis window")
    if not np.all(np.isfinite(y)):
        raise FeatureError("audio holds NaN or infinite samples")
    return y


def vowel_acoustics_many(recordings, classifier) -> list:
    """:func:`vowel_acoustics` of each 16 kHz recording of ``recordings`` (a sequence of 1-D
    float arrays): per recording its (T, 22) float64 frames or the :class:`FeatureError` it
    would raise, in order, with the same bits as one call each. Each stage runs over the whole
    batch in turn (the signal columns of every recording, then the classifier's), which keeps
    each stage's code and buffers warm; the arithmetic stays per recording."""
    results: list = []
    batch = []
    for samples in recordings:
        try:
            y = _checked_signal(samples, SAMPLE_RATE)
        except FeatureError as exc:
            results.append(exc)
            continue
        T = n_frames(y.shape[0])
        if T <= BLOCK_FRAMES and FAST_PATH:
            out = _signal_columns_short(y, T)
            batch.append((y.astype(np.float32), T, out))
            results.append(out)
        else:
            try:
                results.append(_acoustics_blocks(y, classifier, T))
            except FeatureError as exc:
                results.append(exc)
    _classifier_columns_many(classifier, batch)
    return results


#: use :func:`_acoustics_short` for recordings of up to BLOCK_FRAMES frames (tests switch it off
#: to compare it with the block path)
FAST_PATH = True



def _acoustics_blocks(y: np.ndarray, classifier, T: int) -> np.ndarray:
    """:func:`vowel_acoustics` of float64 ``y`` (T frames), block by block (any length)."""
    out = np.zeros((T, N_COLUMNS), dtype=np.float64)

    # per-frame quantities, block by block (memory bounded on long recordings); z-scores after
    padded = _padded(y, max(SHORT_WINDOW, WINDOW, PITCH_WINDOW))
    short_all, frames_all = _frames(y, SHORT_WINDOW, T, padded), _frames(y, WINDOW, T, padded)
    pitch_all = _frames(y, PITCH_WINDOW, T, padded)
    raw = np.empty((T, 8))
    mel = np.empty((40, T))
    def fill(a):
        b = min(T, a + BLOCK_FRAMES)
        raw[a:b], mel[:, a:b] = _frame_quantities(short_all[a:b], frames_all[a:b], pitch_all[a:b])

    starts = range(0, T, BLOCK_FRAMES)
    workers = min(len(starts), os.cpu_count() or 1, 2) if T > 4 * BLOCK_FRAMES else 1
    if workers > 1:  # a long recording: the blocks on two threads (FFTs free the GIL)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(fill, starts))
    else:
        for a in starts:
            fill(a)
    for j in range(5):  # short-term, total, low and high energy, Wiener entropy
        out[:, j] = _zscore(raw[:, j])
    out[:, 5] = _zscore(raw[:, 5])
    f0, voicing = raw[:, 6], _median3(raw[:, 7])
    voiced = voicing >= VOICING_THRESHOLD
    out[:, 6] = np.where(voiced, _zscore(np.log2(f0), voiced), 0.0)
    out[:, 7] = voicing

    # librosa's centred zero-crossing rate, block by block over its own edge-padded signal
    padded = np.pad(np.pad(y, (0, HOP)), (WINDOW // 2, WINDOW // 2), mode="edge")
    zcr = np.empty(min(T, 1 + (padded.shape[0] - WINDOW) // HOP))
    for a in range(0, zcr.shape[0], BLOCK_FRAMES):
        b = min(zcr.shape[0], a + BLOCK_FRAMES)
        zcr[a:b] = _zero_crossing_rate(padded[a * HOP:(b - 1) * HOP + WINDOW], WINDOW, HOP)
    del padded
    out[:, 8] = _zscore(np.pad(zcr, (0, T - zcr.shape[0]), mode="edge"))

    out[:, 9:14] = classifier_columns(classifier, y.astype(np.float32), T)

    with blas.limit(1):
        mfcc = (_dct_basis() @ _power_to_db(mel))[1:5]  # (4, T): librosa.feature.mfcc(S=dB, n_mfcc=5)[1:5]
    for j in range(4):
        out[:, 14 + j] = _zscore(mfcc[j])
    out[:, 18:22] = _deltas(out[:, 14:18], DELTA_WIDTH)
    return out


# -- several cuts of one recording: each frame analysed once -------------------------------

#: frames (5 ms) of cuts analysed together by :func:`vowel_acoustics_cuts` (bounds its buffers;
#: the rows go through the FFTs ROW_CHUNK at a time, :func:`_row_values`). The mel and DCT
#: products run on a group's rows at once, so the group size decides the cepstra's last bits:
#: changing it changes the features (at rounding level) and possibly the fused rows.
CUT_GROUP_FRAMES = 256
#: True (shipped): the cuts' frames go through their FFTs in single precision (:func:`_row_values`
#: with ``single``; the FFTs are most of the cuts' cost, and this halves them). The features move by
#: the float32 rounding of the spectra and autocorrelations; no fused boundary, mode or note of the
#: sample's 3,033 aligned vowels (from words and from phones) moved (docs/results.md, Vowel speed;
#: tests/vowels/test_vowels_fused_speedpath.py). False: the same bits as :func:`vowel_acoustics`
#: of each cut.
CUT_SINGLE_FFT = True


def vowel_acoustics_cuts(samples: np.ndarray, cuts, classifier, recording_posteriors: bool = False,
                         log_posteriors: np.ndarray | None = None, recording_columns=None) -> list:
    """:func:`vowel_acoustics_many` of the cuts ``samples[a:b]`` of one 16 kHz recording, for
    ``(a, b)`` in ``cuts`` (the fusion's cuts, :mod:`aligner.vowels.fused`): per cut its (T, 22)
    float64 frames or the :class:`~aligner.errors.FeatureError` it would raise, in order.

    ``recording_posteriors``: the classifier's columns (9-13) of every cut are the whole
    recording's instead (:func:`recording_classifier_columns`: one classifier call over the
    recording's MFCC frames, standardised over the recording as the aligner scores them, at
    the cut's 5 ms frames), not the cut's own (standardised over the cut; the default, what
    :func:`vowel_acoustics` of the cut gives). ``log_posteriors``: with it, the recording's (Tc,
    n_classes) :meth:`~aligner.features.frame_classifier.FrameClassifier.log_posteriors` of its
    :func:`~aligner.features.mfcc.mfcc_features`, if the caller has them (then not recomputed).
    The other columns are the same either way. ``recording_columns``: with ``log_posteriors``,
    :func:`recording_classifier_columns` of them if the caller has computed them (or the
    :class:`FeatureError` that raised), not computed again.

    The cuts overlap, and each is analysed as a recording of its own (its zero padding, its
    z-scores, its classifier input standardised over it); but most of the work is per frame and
    the same in every cut that holds the frame. In a cut that starts on a frame (``a`` a
    multiple of HOP), frame f is the recording's frame ``a / HOP + f`` wherever its windows lie
    inside the cut. So the recording's frames inside the cuts are framed and analysed once
    (energies, FFTs, spectral flatness, pitch, raw cepstra), and only the few frames near a
    cut's edges, whose windows reach past it, are analysed with the cut's own zero padding; the
    classifier's 10 ms MFCC frames likewise (but each cut's first, whose pre-emphasis starts on
    itself). What depends on the whole cut stays per cut, in the operations of a call per cut:
    the z-scores, the voicing's smoothing, the zero crossings, the deltas, the classifier input
    and the classifier itself (its products on the cut's own rows: BLAS rounds a row's products
    differently when the number of rows changes). Up to :data:`CUT_GROUP_FRAMES` frames of cuts
    are analysed together.

    The result: columns 0-8 the same bits as one cut at a time, the others the same up to
    rounding, because the mel and DCT products of the frames' spectra (both front ends) run
    on a group's rows at once (on the 3032 fused cuts of the TIMIT sample: the classifier's
    columns the same bits, the cepstral ones within 1e-14; tests/vowels/test_vowels_fused_speedpath.py).
    Falls back to :func:`vowel_acoustics_many` for the cuts it cannot share (not on a frame,
    shorter than 35 ms, over BLOCK_FRAMES frames), and for every cut of a recording with
    non-finite samples or of a classifier its fast path does not score."""
    samples = np.asarray(samples)
    cuts = [(int(a), int(b)) for a, b in cuts]
    y = samples.astype(np.float64)  # what _checked_signal makes of each cut
    if cuts and (recording_posteriors or log_posteriors is not None):
        return _cuts_with_recording_posteriors(samples, y, cuts, classifier, log_posteriors,
                                               recording_columns if log_posteriors is not None else None)
    return _acoustics_of_cuts(samples, y, cuts, classifier)


def _acoustics_of_cuts(samples: np.ndarray, y: np.ndarray, cuts: list, classifier,
                       with_classifier: bool = True) -> list:
    """:func:`vowel_acoustics_cuts` of ``samples`` (``y``: as float64) with each cut's own
    classifier columns; without ``with_classifier``, the cuts analysed by :func:`_cut_group`
    leave columns 9-13 zero (their caller fills them) and skip the classifier."""
    from aligner.features import mfcc as mf

    results: list = [None] * len(cuts)
    n = y.shape[0]

    def shareable(a, b):
        return (a % HOP == 0 and 0 <= a < b <= n and b - a >= WINDOW and n_frames(b - a) <= BLOCK_FRAMES
                and (not with_classifier or _fast_classifier(classifier, mf.n_frames(b - a))))

    fast = []
    if FAST_PATH and y.ndim == 1 and np.isfinite(y).all():
        fast = [i for i, (a, b) in enumerate(cuts) if shareable(a, b)]
    rest = sorted(set(range(len(cuts))) - set(fast))
    for i, r in zip(rest, vowel_acoustics_many([samples[cuts[i][0]:cuts[i][1]] for i in rest], classifier)):
        results[i] = r
    # the classifier's input: float32 samples
    y_mfcc = y.astype(np.float32).astype(np.float64) if with_classifier and fast else None
    group: list = []
    size = 0
    for i in fast:
        group.append(i)
        size += n_frames(cuts[i][1] - cuts[i][0])
        if size >= CUT_GROUP_FRAMES or i == fast[-1]:
            starts = np.array([cuts[j][0] for j in group], dtype=np.int64)
            lengths = np.array([cuts[j][1] - cuts[j][0] for j in group], dtype=np.int64)
            for j, out in zip(group, _cut_group(y, y_mfcc, starts, lengths, classifier, with_classifier)):
                results[j] = out
            group, size = [], 0
    return results


def recording_classifier_columns(classifier, samples: np.ndarray,
                                 log_posteriors: np.ndarray | None = None) -> np.ndarray:
    """(T, 5) columns 9-13 of a whole 16 kHz recording at its T = :func:`n_frames` 5 ms frames:
    :func:`classifier_columns` of it (one call of the classifier's ``log_posteriors`` over its
    :func:`~aligner.features.mfcc.mfcc_features`), or of the caller's ``log_posteriors`` (Tc,
    n_classes) of those frames. Raises :class:`FeatureError` as :func:`vowel_acoustics` does
    (audio shorter than 25 ms, non-finite)."""
    y = _checked_signal(samples, SAMPLE_RATE)
    T = n_frames(y.shape[0])
    if log_posteriors is None:
        return classifier_columns(classifier, y.astype(np.float32), T)
    from aligner.features import mfcc as mf

    lp = np.asarray(log_posteriors)
    if lp.ndim != 2 or lp.shape[0] != mf.n_frames(y.shape[0]):
        raise FeatureError(f"log_posteriors must be ({mf.n_frames(y.shape[0])}, n_classes) for "
                           f"{y.shape[0]} samples, got {lp.shape}")
    return _columns_from_posteriors(np.exp(lp.astype(np.float64)), T)


def _columns_from_posteriors(post: np.ndarray, T: int) -> np.ndarray:
    """(T, 5) columns 9-13 at 5 ms frames from (Tc, n_classes) float64 posteriors of 10 ms
    frames (:func:`classifier_columns` after its classifier call)."""
    cols10 = np.column_stack([
        post[:, _VOWEL_IDX].max(axis=1), post[:, _NASAL_IDX].sum(axis=1), post[:, _VOWEL_IDX].sum(axis=1),
        post[:, _GLIDE_IDX].sum(axis=1), post[:, _SIL_IDX]])
    centres = (CLASSIFIER_SHIFT * np.arange(post.shape[0]) + CLASSIFIER_WINDOW / 2) / HOP  # in 5 ms frames
    f = np.arange(T, dtype=np.float64)
    return np.column_stack([np.interp(f, centres, cols10[:, j]) for j in range(cols10.shape[1])])


def _cuts_with_recording_posteriors(samples: np.ndarray, y: np.ndarray, cuts: list, classifier,
                                    log_posteriors: np.ndarray | None, columns=None) -> list:
    """:func:`vowel_acoustics_cuts` with ``recording_posteriors``: columns 0-8 and 14-21 as
    without, 9-13 the recording's (:func:`recording_classifier_columns`) at each cut's frames
    (cut ``(a, b)``'s frame f is at ``a / HOP + f`` recording frames, interpolated between
    frames when ``a`` is not a multiple of HOP); ``columns``: those columns (or the
    :class:`FeatureError` computing them raised) if the caller has them."""
    if y.ndim != 1 or not np.isfinite(y).all():  # each cut fails or not on its own, as without
        return _acoustics_of_cuts(samples, y, cuts, classifier)
    try:
        if columns is None:
            columns = recording_classifier_columns(classifier, samples, log_posteriors)
        elif isinstance(columns, FeatureError):
            raise columns
    except FeatureError as exc:  # under 25 ms: so is every cut
        return [exc] * len(cuts)
    results = _acoustics_of_cuts(samples, y, cuts, classifier, with_classifier=False)
    T = columns.shape[0]
    for (a, _), out in zip(cuts, results):
        if isinstance(out, Exception):
            continue
        if a % HOP == 0:
            f0 = a // HOP
            take = min(out.shape[0], T - f0)
            out[:take, 9:14] = columns[f0:f0 + take]
            out[take:, 9:14] = columns[-1]
        else:
            at = a / HOP + np.arange(out.shape[0])
            out[:, 9:14] = np.column_stack([np.interp(at, np.arange(T), columns[:, j]) for j in range(5)])
    return results


def _shared_rows(starts: np.ndarray, per_cut: np.ndarray, step: int, inner) -> tuple:
    """The frames of several cuts as rows analysed once. The cuts' frames are numbered k in
    order (cut c has ``per_cut[c]``; its frame f starts ``step * f`` samples into it); ``inner(f,
    c)`` (arrays) says which frames are the recording's: those starting on the same sample are
    one row; every other frame is a row of its own. Returns ``(rows, first, f, c, offsets)``:
    frame k is row ``rows[k]``, frame ``f[k]`` of cut ``c[k]``; row r is frame ``first[r]``;
    cut c's frames are ``offsets[c] .. offsets[c + 1] - 1``."""
    offsets = np.concatenate([[0], np.cumsum(per_cut)])
    cut_of = np.repeat(np.arange(per_cut.shape[0]), per_cut)
    f = np.arange(offsets[-1]) - offsets[cut_of]
    at = starts[cut_of] + step * f
    key = np.where(inner(f, cut_of), at, -1 - np.arange(offsets[-1]))
    _, first, rows = np.unique(key, return_index=True, return_inverse=True)
    return rows.astype(np.int64), first, f, cut_of, offsets


def _cut_group(y: np.ndarray, y_mfcc: np.ndarray, starts: np.ndarray, lengths: np.ndarray, classifier,
               with_classifier: bool = True) -> list:
    """The (T, 22) frames of the cuts ``y[starts[c]:starts[c] + lengths[c]]`` (each shareable:
    :func:`vowel_acoustics_cuts`), views of one array; without ``with_classifier``, columns 9-13
    left zero."""
    from aligner.features import mfcc as mf

    n = y.shape[0]
    # 5 ms frames: the recording's where all their windows lie inside the cut, else the cut's own
    half = PITCH_WINDOW // 2  # the widest window's

    def inner(f, c):
        return (HOP * f >= half) & (HOP * f + half <= lengths[c])

    rows, first, f, cut_of, offsets = _shared_rows(starts, lengths // HOP + 1, HOP, inner)
    f, cut_of = f[first], cut_of[first]
    own = ~inner(f, cut_of)
    lo = np.where(own, starts[cut_of], 0)
    hi = np.where(own, starts[cut_of] + lengths[cut_of], n)
    logs, log_flatness, log2_f0, voicing, power, r0, r1 = _row_values(y, starts[cut_of] + HOP * f, lo, hi,
                                                                     CUT_SINGLE_FFT)
    with blas.limit(1):
        cepstra = _cepstra(power)
    out = np.zeros((offsets[-1], N_COLUMNS))
    _cut_signal_columns(y, starts, lengths, offsets, rows, logs, log_flatness, r0, r1, log2_f0, voicing, cepstra,
                        _LOG_FLOOR, _STD_FLOOR, VOICING_THRESHOLD, out)

    if not with_classifier:
        return [out[offsets[c]:offsets[c + 1]] for c in range(starts.shape[0])]
    # 10 ms classifier frames: the recording's, but for each cut's first (pre-emphasised from itself)
    rows10, first10, f10, cut10, offsets10 = _shared_rows(starts, mf.n_frames(lengths), mf.FRAME_SHIFT,
                                                          lambda f, c: f > 0)
    at = starts[cut10[first10]] + mf.FRAME_SHIFT * f10[first10]
    prevs = np.where(f10[first10] > 0, y_mfcc[np.maximum(at - 1, 0)], y_mfcc[at])
    buf, energy = np.empty((at.shape[0], mf.N_FFT)), np.empty(at.shape[0])
    _mfcc_frame_rows(y_mfcc, at, prevs, mf._hamming(), mf.PREEMPHASIS, buf, energy)
    power = np.abs(np.fft.rfft(buf, axis=1))
    power **= 2
    del buf
    with blas.limit(classifier.blas_threads):
        static = _static_of(power, np.log(np.maximum(energy, mf._POWER_FLOOR)))
        post = []
        for c in range(starts.shape[0]):  # each cut's classifier on its own rows (see the docstring)
            P = _classifier_input_of(classifier, static[rows10[offsets10[c]:offsets10[c + 1]]])
            post.append(_classifier_posteriors(classifier, P))
    post = np.concatenate(post)
    centres = (CLASSIFIER_SHIFT * f10 + CLASSIFIER_WINDOW / 2) / HOP  # in 5 ms frames, per cut
    _cut_posterior_columns(post, centres, offsets10, offsets, _VOWEL_IDX, _NASAL_IDX, _GLIDE_IDX, _SIL_IDX, out)
    return [out[offsets[c]:offsets[c + 1]] for c in range(starts.shape[0])]


def _static_of(power: np.ndarray, log_energy: np.ndarray) -> np.ndarray:
    """(Tc, 14) static MFCC features (c0..c12, log energy) of frames from their (Tc, 257) power
    spectra and log energies: the tail of :func:`aligner.features.mfcc._static_features`, the
    same operations."""
    from aligner.features import mfcc as mf

    mel = power @ mf._mel_basis(SAMPLE_RATE).T
    log_mel = np.log(np.maximum(mel, mf._POWER_FLOOR))
    return np.column_stack([log_mel @ mf._dct_matrix(), log_energy])
