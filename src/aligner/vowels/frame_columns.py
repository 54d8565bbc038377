"""The vowel model's second front end: 5 ms columns from what the forced aligner already has.

The vowel model's own front end (:mod:`aligner.features.vowel_acoustics`, front end ``"cuts"``)
analyses each cut afresh: a 25 ms spectrum, a 40 ms pitch autocorrelation and a frame
classifier call per recording. When ``aligner vowels`` re-measures the vowels of a forced
alignment (:mod:`aligner.vowels.fused`), the aligner has already computed the recording's MFCC
frames and its classifier's log posteriors. A vowel model with front end ``"frames"`` reads
those, interpolated to the 5 ms frames, plus a few time-domain measures of each 5 ms frame that
cost one pass over the samples (:func:`_signal_columns`); it never computes a spectrum.

Frames: 16 kHz audio, one frame every 5 ms, centred (frame ``f`` describes the audio around
sample ``80 f``; ``T = n // 80 + 1`` frames), as :mod:`aligner.features.vowel_acoustics`.

Columns of :func:`recording_frame_columns` (float64, ``(T, 23)``; "z" = z-scored over the cut
or recording measured, :func:`normalised_columns`)

===  ==================  ==================================================================
col  name                definition (per 5 ms frame)
===  ==================  ==================================================================
0    short_term_energy   z of log10 mean power of the 10 ms around the frame
1    energy              z of log10 mean power of the 25 ms around the frame (``r_0``)
2    low_energy          z of log10 power of the 25 ms after a 9-tap low-pass FIR (1 kHz)
3    high_energy         z of log10 power after a 9-tap high-pass FIR (3 kHz)
4    low_fraction        z of the low-pass power over ``r_0`` (voicing bar, F1)
5    autocorrelation     z of ``r_1 / r_0`` (near 1 for sonorants, low for frication)
6    zero_crossing       z of the zero-crossing rate of the 25 ms (crossings per sample)
7    voiced_prob         classifier: posterior sum over the voiced classes (vowels, glides,
                         nasals, b d g dx jh v dh z)
8    vowel_prob          classifier: largest posterior among the vowel classes
9    nasal_prob          classifier: posterior sum over m, n, ng
10   vowel_sum           classifier: posterior sum over the vowel classes
11   glide_prob          classifier: posterior sum over l, r, w, y
12   silence_prob        classifier: posterior of sil
13   log_energy          z of the aligner's log energy (MFCC column 13)
14   mfcc_1              z of the aligner's MFCC c1 (column 1)
15   mfcc_2              ... c2
16   mfcc_3              ... c3
17   mfcc_4              ... c4
18   delta_mfcc_1        the aligner's delta of c1 (column 15; standardised over the recording)
19   delta_mfcc_2        ... of c2
20   delta_mfcc_3        ... of c3
21   delta_mfcc_4        ... of c4
22   voicing             the highest normalised autocorrelation at lags of 2.5-16.5 ms
                         (400-60 Hz) of 40 ms of the 1 kHz low-pass taken at 2 kHz, in
                         [0, 1]; computed every 10 ms, the frames between the mean of
                         their neighbours (a cheaper cousin of the ``"cuts"`` voicing)
===  ==================  ==================================================================

The 25 ms powers come from the autocorrelation of the window, ``r_k = sum x[i] x[i+k]`` for
``k = 0..8`` (:data:`N_LAGS`): the power of ``x`` through an FIR filter ``h`` of 9 taps is
``sum_k sum_l h_k h_l r_|k-l|`` (to the window's edges), so one pass gives every band.
The 10 ms aligner values (MFCC frames, posteriors) are linearly interpolated from their frame
centres (``10 t + 12.5`` ms) to the 5 ms frame times, held constant beyond the first and last.
Columns 7-12 and 22 are probabilities or in [0, 1] and 18-21 already standardised: they are
never z-scored again.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligner.errors import FeatureError
from aligner.features.vowel_acoustics import _GLIDE_IDX, _NASAL_IDX, _SIL_IDX, _VOWEL_IDX, _class_index
from aligner.features.vowel_acoustics import COLUMN_NAMES as CUTS_COLUMN_NAMES
from aligner.frames import FRAME_SHIFT, SAMPLE_RATE, VOWEL_HOP as HOP, WINDOW, n_vowel_frames
from aligner.phones.sets import BROAD_CLASS_OF, CLASSES39

#: the front end of a vowel model that reads these columns (:class:`~aligner.vowels.model.VowelModel`)
FRAMES_FRONT_END = "frames"
#: the vowel model's own front end (:mod:`aligner.features.vowel_acoustics`)
CUTS_FRONT_END = "cuts"
FRONT_ENDS = (CUTS_FRONT_END, FRAMES_FRONT_END)

FRAME_COLUMN_NAMES = (
    "short_term_energy", "energy", "low_energy", "high_energy", "low_fraction", "autocorrelation",
    "zero_crossing", "voiced_prob", "vowel_prob", "nasal_prob", "vowel_sum", "glide_prob", "silence_prob",
    "log_energy", "mfcc_1", "mfcc_2", "mfcc_3", "mfcc_4",
    "delta_mfcc_1", "delta_mfcc_2", "delta_mfcc_3", "delta_mfcc_4", "voicing",
)
N_FRAME_COLUMNS = len(FRAME_COLUMN_NAMES)


def column_names_of(front_end: str) -> tuple:
    """The names of the columns a vowel model of ``front_end`` reads (``"cuts"``: the 22 of
    :data:`~aligner.features.vowel_acoustics.COLUMN_NAMES`; ``"frames"``: these 23)."""
    if front_end not in FRONT_ENDS:
        raise ValueError(f"front_end must be one of {', '.join(FRONT_ENDS)}, got {front_end!r}")
    return FRAME_COLUMN_NAMES if front_end == FRAMES_FRONT_END else CUTS_COLUMN_NAMES

#: the columns a ``"frames"`` vowel model reads by default: all of them (165-dim feature map)
FRAME_VOWEL_COLUMNS = tuple(range(N_FRAME_COLUMNS))
#: columns z-scored over the cut or recording measured (the rest are probabilities or standardised)
LEVEL_COLUMNS = (0, 1, 2, 3, 4, 5, 6, 13, 14, 15, 16, 17)
#: the time-domain voicing column
VOICING = FRAME_COLUMN_NAMES.index("voicing")
#: the columns the vowel-like check reads (:meth:`~aligner.vowels.model.VowelModel.vowel_like_flag`):
#: the time-domain voicing (0 in digital silence, where the classifier's posteriors are
#: meaningless) and the classifier's vowel sum
VOICING_COLUMN = VOICING
VOWEL_SUM_COLUMN = FRAME_COLUMN_NAMES.index("vowel_sum")
#: the five columns laid out as :func:`~aligner.features.vowel_acoustics.recording_classifier_columns`'s
#: (vowel_prob, nasal_prob, vowel_sum, glide_prob, silence_prob)
CLASSIFIER_COLUMNS = slice(8, 13)

#: the MFCC columns (of :func:`~aligner.features.mfcc.mfcc_features`) read, in column order 13-21
_MFCC_COLUMNS = np.array([13, 1, 2, 3, 4, 15, 16, 17, 18])

#: lags of the window autocorrelation (the FIR filters have this many taps)
N_LAGS = 9
#: the samples are summed in blocks of this many: the short (10 ms, 160 samples) and the long
#: (25 ms, 400 samples) window centred on a 5 ms frame both start and end on a block
_BLOCK = 40
_POWER_FLOOR = 1e-10
_STD_FLOOR = 1e-8


def _fir(cutoff_hz: float, highpass: bool) -> np.ndarray:
    """A 9-tap Hamming-windowed sinc filter at 16 kHz: the low-pass as ``scipy.signal.firwin``
    designs it (unit gain at 0 Hz); the high-pass by spectral inversion of the low-pass of its
    cutoff, scaled to unit gain at 8 kHz."""
    n = np.arange(N_LAGS) - (N_LAGS - 1) / 2
    fc = cutoff_hz / (SAMPLE_RATE / 2)
    h = fc * np.sinc(fc * n) * np.hamming(N_LAGS)
    h /= h.sum()
    if highpass:
        h = -h
        h[(N_LAGS - 1) // 2] += 1.0
        h /= np.sum(h * np.cos(np.pi * n))  # unit gain at Nyquist
    return h


def _quadratic_form(h: np.ndarray) -> np.ndarray:
    """(N_LAGS,) weights ``q`` with ``sum_k q_k r_k = sum_k sum_l h_k h_l r_|k-l|``."""
    q = np.zeros(N_LAGS)
    for k in range(N_LAGS):
        for j in range(N_LAGS):
            q[abs(k - j)] += h[k] * h[j]
    return q


_LOW_FIR = _fir(1000.0, highpass=False)
_LOW_Q = _quadratic_form(_LOW_FIR)
_HIGH_Q = _quadratic_form(_fir(3000.0, highpass=True))


@njit(cache=True)
def _block_sums(y, n_blocks, out_r, out_zc):
    """Per block of 40 samples ``j`` (samples ``40 j .. 40 j + 39``): ``out_r[j, k] = sum x[i] x[i+k]``
    for ``k = 0..8`` (``i`` in the block, ``i + k`` in the recording) and ``out_zc[j]`` the sign
    changes between ``x[i]`` and ``x[i+1]``."""
    n = y.shape[0]
    for j in range(n_blocks):
        a = j * 40
        b = min(a + 40, n)
        r0 = r1 = r2 = r3 = r4 = r5 = r6 = r7 = r8 = 0.0
        zc = 0.0
        full = min(b, n - 8)  # samples with all 8 later neighbours
        for i in range(a, full):
            xi = np.float64(y[i])  # float32 samples: every product in float64
            r0 += xi * xi
            r1 += xi * y[i + 1]
            r2 += xi * y[i + 2]
            r3 += xi * y[i + 3]
            r4 += xi * y[i + 4]
            r5 += xi * y[i + 5]
            r6 += xi * y[i + 6]
            r7 += xi * y[i + 7]
            r8 += xi * y[i + 8]
            zc += 1.0 if (xi >= 0.0) != (y[i + 1] >= 0.0) else 0.0
        out_r[j, 0] = r0
        out_r[j, 1] = r1
        out_r[j, 2] = r2
        out_r[j, 3] = r3
        out_r[j, 4] = r4
        out_r[j, 5] = r5
        out_r[j, 6] = r6
        out_r[j, 7] = r7
        out_r[j, 8] = r8
        for i in range(max(a, full), b):  # the last 8 samples of the recording
            xi = np.float64(y[i])
            for k in range(min(9, n - i)):
                out_r[j, k] += xi * y[i + k]
            if i + 1 < n and (xi >= 0.0) != (y[i + 1] >= 0.0):
                zc += 1.0
        out_zc[j] = zc


@njit(cache=True)
def _window_columns(r, zc, n, T, low_q, high_q, floor, out):
    """Columns 0-6 (before z-scoring) of each 5 ms frame from the block sums ``r``, ``zc`` of
    :func:`_block_sums` (``n`` samples): frame ``f``'s short window is blocks ``2f - 2 .. 2f + 1``,
    its long window blocks ``2f - 5 .. 2f + 4`` (those inside the recording)."""
    n_blocks = r.shape[0]
    acc = np.zeros(r.shape[1])
    for f in range(T):
        # short window: 10 ms
        s = 0.0
        cnt = 0
        for j in range(2 * f - 2, 2 * f + 2):
            if 0 <= j < n_blocks:
                s += r[j, 0]
                cnt += min(40, n - 40 * j)
        out[f, 0] = np.log10(max(s / max(cnt, 1), floor))
        for k in range(r.shape[1]):
            acc[k] = 0.0
        z = 0.0
        cnt = 0
        for j in range(2 * f - 5, 2 * f + 5):
            if 0 <= j < n_blocks:
                for k in range(r.shape[1]):
                    acc[k] += r[j, k]
                z += zc[j]
                cnt += min(40, n - 40 * j)
        cnt = max(cnt, 1)
        low = 0.0
        high = 0.0
        for k in range(r.shape[1]):
            low += low_q[k] * acc[k]
            high += high_q[k] * acc[k]
        r0 = acc[0]
        out[f, 1] = np.log10(max(r0 / cnt, floor))
        out[f, 2] = np.log10(max(low / cnt, floor))
        out[f, 3] = np.log10(max(high / cnt, floor))
        out[f, 4] = min(max(low / r0, 0.0), 1.0) if r0 > floor else 0.0
        out[f, 5] = acc[1] / r0 if r0 > floor else 0.0
        out[f, 6] = z / cnt


#: the voicing column's signal: the 1 kHz low-pass taken every 8th sample (2 kHz)
VOICING_DECIMATION = 8
#: its window (40 ms at 2 kHz) and lags (2.5-16.5 ms: 400-60 Hz), samples at 2 kHz
VOICING_WINDOW, VOICING_LAGS = 80, (5, 33)


@njit(cache=True)
def _decimated(y, h, step, out):
    """``out[m] = sum_k h[k] y[step m + k - len(h) // 2]`` (zero beyond the ends)."""
    n = y.shape[0]
    half = h.shape[0] // 2
    for m in range(out.shape[0]):
        acc = 0.0
        c = step * m - half
        for k in range(h.shape[0]):
            i = c + k
            if 0 <= i < n:
                acc += h[k] * np.float64(y[i])
        out[m] = acc
    return out


@njit(cache=True)
def _voicing(z, T, window, lag_lo, lag_hi, floor, out):
    """``out[f]`` for even 5 ms frames ``f`` (every 10 ms; odd frames the mean of their
    neighbours): the highest normalised cross-correlation ``sum s[i] s[i+l] / sqrt(e_1 e_2)`` over
    lags ``lag_lo .. lag_hi`` of the ``window`` samples of ``z`` (2 kHz) centred on the frame,
    clipped to 0..1; 0 where the window is silent."""
    m = z.shape[0]
    half = window // 2
    seg = np.zeros(window)
    cum = np.zeros(window + 1)
    for f in range(0, T, 2):
        c = f * 10  # 5 ms at 2 kHz
        for i in range(window):
            j = c - half + i
            seg[i] = z[j] if 0 <= j < m else 0.0
            cum[i + 1] = cum[i] + seg[i] * seg[i]
        best = 0.0
        if cum[window] > floor:
            for lag in range(lag_lo, lag_hi + 1):
                num = 0.0
                for i in range(window - lag):
                    num += seg[i] * seg[i + lag]
                e1 = cum[window - lag]
                e2 = cum[window] - cum[lag]
                if e1 > floor and e2 > floor:
                    r = num / np.sqrt(e1 * e2)
                    if r > best:
                        best = r
        out[f] = min(best, 1.0)
    for f in range(1, T, 2):
        out[f] = 0.5 * (out[f - 1] + out[f + 1]) if f + 1 < T else out[f - 1]


def _signal_columns(y: np.ndarray, T: int, out: np.ndarray) -> None:
    """Columns 0-6 and the voicing (raw) of :func:`recording_frame_columns` into ``out`` (T, 23)
    from the (n,) float32 or float64 samples ``y`` (every sum in float64)."""
    n = y.shape[0]
    n_blocks = -(-n // _BLOCK)
    r = np.empty((n_blocks, N_LAGS))
    zc = np.empty(n_blocks)
    _block_sums(y, n_blocks, r, zc)
    _window_columns(r, zc, n, T, _LOW_Q, _HIGH_Q, _POWER_FLOOR, out)
    z = _decimated(y, _LOW_FIR, VOICING_DECIMATION, np.empty(-(-n // VOICING_DECIMATION)))
    voicing = np.empty(T)
    _voicing(z, T, VOICING_WINDOW, VOICING_LAGS[0], VOICING_LAGS[1], _POWER_FLOOR * VOICING_WINDOW, voicing)
    out[:, VOICING] = voicing


_VOICED = _class_index([c for c in CLASSES39 if BROAD_CLASS_OF[c] in ("vowel", "glide", "nasal")
                        or c in ("b", "d", "g", "dx", "jh", "v", "dh", "z")])


def _to_vowel_frames(values: np.ndarray, T: int) -> np.ndarray:
    """(T, k) float64: (Tc, k) values of 10 ms aligner frames linearly interpolated to the 5 ms
    frame times (aligner frame ``t``'s centre is 5 ms frame ``2 t + 2.5``), held beyond the ends."""
    Tc = values.shape[0]
    pos = np.clip((np.arange(T, dtype=np.float64) - (WINDOW / 2) / HOP) * (HOP / FRAME_SHIFT), 0.0, Tc - 1)
    i0 = np.minimum(pos.astype(np.int64), Tc - 1)
    i1 = np.minimum(i0 + 1, Tc - 1)
    w = (pos - i0)[:, None]
    v = values.astype(np.float64, copy=False)
    return (1.0 - w) * v[i0] + w * v[i1]


def check_recording(samples: np.ndarray) -> np.ndarray:
    """``samples`` (n,) as :func:`recording_frame_columns` reads them: float32 or float64 as they
    are (no float64 copy of a long recording: the sums are float64 anyway), contiguous. Raises
    :class:`~aligner.errors.FeatureError` for audio that is not mono, shorter than 25 ms or not
    finite."""
    y = np.asarray(samples)
    if y.ndim != 1:
        raise FeatureError(f"expected mono samples (n,), got shape {y.shape}")
    if y.shape[0] < WINDOW:
        raise FeatureError(f"audio too short: {y.shape[0]} samples, need at least {WINDOW} (25 ms)")
    if y.dtype != np.float32 and y.dtype != np.float64:
        y = y.astype(np.float32)
    y = np.ascontiguousarray(y)
    if not np.isfinite(y).all():
        raise FeatureError("audio holds NaN or infinite samples")
    return y


def recording_frame_columns(samples: np.ndarray, classifier, log_posteriors=None, mfcc_frames=None) -> np.ndarray:
    """(T, 23) float64 columns of a whole 16 kHz recording (module docstring), **not** z-scored
    (:func:`normalised_columns` does that over a cut or the whole recording).

    ``log_posteriors``: the recording's (Tc, 39) log posteriors by ``classifier`` if the caller has
    them (the aligner's, :func:`~aligner.vowels.fused.shared_log_posteriors`); ``mfcc_frames``: its
    (Tc, 42) :func:`~aligner.features.mfcc.mfcc_features` if the caller has them. What is missing
    is computed here (one MFCC pass, one classifier call). Raises
    :class:`~aligner.errors.FeatureError` for audio shorter than 25 ms or not finite."""
    from aligner.features import mfcc as mf

    y = check_recording(samples)
    Tc = mf.n_frames(y.shape[0])
    if mfcc_frames is None:
        mfcc_frames = mf.mfcc_features(y.astype(np.float32, copy=False))
    if mfcc_frames.shape != (Tc, mf.N_FEATURES):
        raise FeatureError(f"mfcc_frames must be ({Tc}, {mf.N_FEATURES}), got {mfcc_frames.shape}")
    if log_posteriors is None:
        log_posteriors = classifier.log_posteriors(mfcc_frames)
    lp = np.asarray(log_posteriors)
    if lp.ndim != 2 or lp.shape[0] != Tc or lp.shape[1] != len(CLASSES39):
        raise FeatureError(f"log_posteriors must be ({Tc}, {len(CLASSES39)}), got {lp.shape}")
    T = n_vowel_frames(y.shape[0])
    out = np.empty((T, N_FRAME_COLUMNS))
    _signal_columns(y, T, out)
    post = np.exp(lp.astype(np.float64))
    classes = np.column_stack([post[:, _VOICED].sum(axis=1), post[:, _VOWEL_IDX].max(axis=1),
                               post[:, _NASAL_IDX].sum(axis=1), post[:, _VOWEL_IDX].sum(axis=1),
                               post[:, _GLIDE_IDX].sum(axis=1), post[:, _SIL_IDX]])
    out[:, 7:13] = _to_vowel_frames(classes, T)
    out[:, 13:22] = _to_vowel_frames(np.asarray(mfcc_frames)[:, _MFCC_COLUMNS], T)
    return out


#: audio either side of a span that :func:`span_frame_columns` analyses with it, samples: more
#: than any column of a frame reaches (the 25 ms window and its 8 lags, the 40 ms voicing window,
#: its filter and the neighbouring 10 ms frame it is averaged with, the two 10 ms aligner frames
#: interpolated), a whole number of 10 ms frames
SPAN_MARGIN_SAMPLES = 4000


def span_frame_columns(samples: np.ndarray, first: int, end: int, log_posteriors: np.ndarray,
                       mfcc_frames: np.ndarray) -> tuple:
    """``(lo, columns)``: the :func:`recording_frame_columns` of the samples ``lo .. hi - 1`` of a
    recording (an (n,) array, or a :class:`~aligner.io.audio.SampleReader` read by that slice):
    the span ``[first, end)`` (samples) and :data:`SPAN_MARGIN_SAMPLES` either side (clipped to
    the recording; ``lo`` a multiple of the 10 ms frame shift). Their rows of the
    frames in the span equal the whole recording's rows ``lo // 80`` on, bit for bit: every
    column of a frame is a sum over audio within the margin, and the slices of the recording's
    own ``log_posteriors`` (Tc, 39) and ``mfcc_frames`` (Tc, 42) are read, not features of the
    span alone (the MFCC are standardised over the whole recording). So a long recording's
    vowels are measured a stretch at a time, in memory that does not grow with its length."""
    y = samples  # an array, or a long recording's reader (sliced, never read whole)
    n = len(y)
    lo = max(0, (int(first) - SPAN_MARGIN_SAMPLES) // FRAME_SHIFT * FRAME_SHIFT)
    hi = min(n, int(end) + SPAN_MARGIN_SAMPLES)
    if lo == 0 and hi == n and isinstance(y, np.ndarray):
        return 0, recording_frame_columns(y, None, log_posteriors, mfcc_frames)
    from aligner.features import mfcc as mf

    c0 = lo // FRAME_SHIFT
    c1 = c0 + int(mf.n_frames(hi - lo))
    return lo, recording_frame_columns(y[lo:hi], None, np.asarray(log_posteriors)[c0:c1],
                                       np.asarray(mfcc_frames)[c0:c1])


@njit(cache=True)
def _zscored_rows(columns, first, last, levels, std_floor, out):
    """``out`` (last - first, C): rows ``first .. last - 1`` of ``columns``, the ``levels``
    columns z-scored over them (mean, then the population standard deviation; below
    ``std_floor``: 0)."""
    n = last - first
    for t in range(n):
        for c in range(columns.shape[1]):
            out[t, c] = columns[first + t, c]
    for c in levels:
        mean = 0.0
        for t in range(n):
            mean += out[t, c]
        mean /= n
        var = 0.0
        for t in range(n):
            d = out[t, c] - mean
            var += d * d
        std = np.sqrt(var / n)
        for t in range(n):
            out[t, c] = (out[t, c] - mean) / std if std >= std_floor else 0.0


_LEVELS = np.array(LEVEL_COLUMNS, dtype=np.int64)


def normalised_columns(columns: np.ndarray, first: int = 0, n: int | None = None) -> np.ndarray:
    """(n, 23) copy of rows ``first .. first + n - 1`` of :func:`recording_frame_columns`'s
    ``columns`` with the :data:`LEVEL_COLUMNS` z-scored over those rows (a column that does not
    vary becomes 0); ``n`` None: to the end."""
    columns = np.ascontiguousarray(columns, dtype=np.float64)
    last = columns.shape[0] if n is None else min(columns.shape[0], first + int(n))
    first = min(max(int(first), 0), last)
    out = np.empty((last - first, columns.shape[1]))
    if last > first:
        _zscored_rows(columns, first, last, _LEVELS, _STD_FLOOR, out)
    return out


def frame_acoustics(samples: np.ndarray, classifier, log_posteriors=None, mfcc_frames=None) -> np.ndarray:
    """(T, 23) columns of a whole recording, levels z-scored over it: what a ``"frames"`` vowel
    model measures a recording (or windows of it) with."""
    return normalised_columns(recording_frame_columns(samples, classifier, log_posteriors, mfcc_frames))


def cut_columns(columns: np.ndarray, first_sample: int, end_sample: int) -> np.ndarray:
    """The (T_cut, 23) columns of the cut ``[first_sample, end_sample)`` of a recording
    (``first_sample`` a multiple of 80, as :func:`~aligner.vowels.fused.fusion_cut` makes it)
    from the recording's :func:`recording_frame_columns`, levels z-scored over the cut."""
    if first_sample % HOP:
        raise ValueError(f"a cut must start on a 5 ms frame (a multiple of {HOP} samples), got {first_sample}")
    return normalised_columns(columns, first_sample // HOP, n_vowel_frames(end_sample - first_sample))
