"""Numba kernels of the vowel front end's short-recording path (:mod:`aligner.features.vowel_acoustics`).

A recording of up to :data:`~aligner.features.vowel_acoustics.BLOCK_FRAMES` frames (a CVC cut) is analysed in a few calls instead of
some hundred small numpy calls: numba kernels frame the samples, sum, z-score, smooth and
count zero crossings; numpy keeps the FFTs, the matrix products (BLAS) and the transcendental
functions (log, log10, log2, exp: numpy's own SIMD versions, which need not round as libm
does). Every sum adds its values in the order of numpy's pairwise summation (what ``np.sum``
and ``np.mean`` do along a row), every other operation is the same IEEE operation in the same
order, so the frames equal those of the block path bit for bit
(tests/vowels/test_vowel_speed_paths.py).

The last kernels serve :func:`~aligner.features.vowel_acoustics.vowel_acoustics_cuts` (the
fusion's overlapping cuts of one recording): the same per-frame work on frames given by their
centre and the cut that bounds them (:func:`_frame_rows`, :func:`_mfcc_frame_rows`), then each
cut's columns from its frames' rows (:func:`_cut_signal_columns`, :func:`_cut_posterior_columns`).

The frame geometry (window lengths in samples, the FFT size, the delta width in frames) lives
here, beside the kernels compiled with it; :mod:`aligner.features.vowel_acoustics` re-exports it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligner.features.mfcc import _mfcc_frame_rows, _mfcc_normalised  # noqa: F401  (re-exported)
from aligner.features.numeric import _pairwise_sum
from aligner.frames import SAMPLE_RATE
from aligner.frames import VOWEL_HOP as HOP

#: spectral analysis window, samples (25 ms)
WINDOW = 400
#: short-term energy window, samples (10 ms)
SHORT_WINDOW = 160
#: pitch analysis window, samples (40 ms: two periods of 60 Hz... nearly)
PITCH_WINDOW = 640
N_FFT = 512
DELTA_WIDTH = 4  #: regression half-width of the MFCC deltas, frames

@njit(cache=True, nogil=True)
def _mean_std(v, n):
    """``(v.mean(), v.std())`` of the first ``n`` values of 1-D float64 ``v`` with numpy's
    arithmetic (pairwise sums; the variance is the mean of the squared deviations)."""
    mean = _pairwise_sum(v, 0, n, 1) / n
    dev = np.empty(n)
    for i in range(n):
        d = v[i] - mean
        dev[i] = d * d
    return mean, np.sqrt(_pairwise_sum(dev, 0, n, 1) / n)


@njit(cache=True, nogil=True)
def _zscore_into(v, out, floor):
    """``out[:] = (v - v.mean()) / v.std()`` (numpy's arithmetic), zeros when the standard
    deviation is below ``floor`` or ``v`` is empty; ``v`` (n,) float64, any stride."""
    n = v.shape[0]
    if n == 0:
        out[:] = 0.0
        return
    w = np.empty(n)
    for i in range(n):
        w[i] = v[i]
    mean, std = _mean_std(w, n)
    if std < floor:
        out[:] = 0.0
        return
    for i in range(n):
        out[i] = (w[i] - mean) / std


@njit(cache=True, nogil=True)
def _frame_row(y, c, lo, hi, hann, pitch_hann, buf, sq, short_energy, r0, r1, spec_row, pitch_row, f):
    """One frame of :func:`_frame_buffers`: the frame centred on sample ``c`` of float64 ``y``,
    the samples outside ``lo .. hi - 1`` counting as 0 (the edges of the recording or cut
    analysed). Writes ``short_energy[f]``, ``r0[f]``, ``r1[f]`` and the rows ``spec_row``
    (N_FFT,) and ``pitch_row`` (_PITCH_NFFT,); ``buf``: (2 PITCH_WINDOW,) scratch, ``sq``:
    (PITCH_WINDOW,) scratch. The widest (pitch) window's samples are copied once into the
    second half of ``buf`` (zeros outside ``lo .. hi - 1``); the shorter windows, centred on
    the same sample, are read from there."""
    win = buf[PITCH_WINDOW:]
    a = c - PITCH_WINDOW // 2
    if lo <= a and a + PITCH_WINDOW <= hi:
        for i in range(PITCH_WINDOW):
            win[i] = y[a + i]
    else:
        for i in range(PITCH_WINDOW):
            k = a + i
            win[i] = y[k] if lo <= k < hi else 0.0
    # 10 ms short-term energy
    s0 = PITCH_WINDOW // 2 - SHORT_WINDOW // 2
    for i in range(SHORT_WINDOW):
        v = win[s0 + i]
        sq[i] = v * v
    short_energy[f] = _pairwise_sum(sq, 0, SHORT_WINDOW, 1) / SHORT_WINDOW
    # 25 ms frame: windowed for the FFT; centred autocorrelation at lags 0 and 1
    w0 = PITCH_WINDOW // 2 - WINDOW // 2
    for i in range(WINDOW):
        v = win[w0 + i]
        buf[i] = v
        spec_row[i] = v * hann[i]
    for i in range(WINDOW, N_FFT):
        spec_row[i] = 0.0
    mean = _pairwise_sum(buf, 0, WINDOW, 1) / WINDOW
    for i in range(WINDOW):
        buf[i] = buf[i] - mean
    for i in range(WINDOW):
        sq[i] = buf[i] * buf[i]
    r0[f] = _pairwise_sum(sq, 0, WINDOW, 1)
    for i in range(WINDOW - 1):
        sq[i] = buf[i + 1] * buf[i]
    r1[f] = _pairwise_sum(sq, 0, WINDOW - 1, 1)
    # 40 ms pitch frame, mean removed, windowed
    mean = _pairwise_sum(win, 0, PITCH_WINDOW, 1) / PITCH_WINDOW
    for i in range(PITCH_WINDOW):
        pitch_row[i] = (win[i] - mean) * pitch_hann[i]
    for i in range(PITCH_WINDOW, pitch_row.shape[0]):
        pitch_row[i] = 0.0


@njit(cache=True, nogil=True)
def _frame_buffers(y, T, hann, pitch_hann, short_energy, r0, r1, spec_in, pitch_in):
    """The time-domain work of :func:`_frame_quantities` for all T frames of float64 ``y``.

    Frame f is centred on sample ``HOP f`` (zero outside the recording). Fills, per frame:
    ``short_energy`` the mean square of the ``SHORT_WINDOW`` samples; ``r0``, ``r1`` the lag-0
    and lag-1 autocorrelation sums of the mean-removed ``WINDOW`` frame; ``spec_in`` (T,
    N_FFT) the Hann-windowed ``WINDOW`` frame, zero padded (the rows to ``np.fft.rfft``);
    ``pitch_in`` (T, _PITCH_NFFT) the mean-removed, Hann-windowed ``PITCH_WINDOW`` frame,
    zero padded."""
    n = y.shape[0]
    buf = np.empty(2 * PITCH_WINDOW)
    sq = np.empty(PITCH_WINDOW)
    for f in range(T):
        _frame_row(y, HOP * f, 0, n, hann, pitch_hann, buf, sq, short_energy, r0, r1, spec_in[f], pitch_in[f], f)


@njit(cache=True, nogil=True)
def _frame_rows(y, centres, lo, hi, hann, pitch_hann, short_energy, r0, r1, spec_in, pitch_in):
    """:func:`_frame_buffers` for arbitrary frames of one recording ``y`` (float64): row r is the
    frame centred on sample ``centres[r]``, the samples outside ``lo[r] .. hi[r] - 1`` counting
    as 0 (a frame of a cut ``y[lo:hi]`` near its edges; ``0, len(y)`` for a frame that lies
    inside every cut that has it). The same values as :func:`_frame_buffers` of that cut."""
    buf = np.empty(2 * PITCH_WINDOW)
    sq = np.empty(PITCH_WINDOW)
    for r in range(centres.shape[0]):
        _frame_row(y, centres[r], lo[r], hi[r], hann, pitch_hann, buf, sq, short_energy, r0, r1, spec_in[r],
                   pitch_in[r], r)


@njit(cache=True, nogil=True)
def _spectral_sums(spectrum, low_hi, high_lo, floor, power, sums, thresh):
    """From the (T, 257) complex spectrum: ``power`` (T, 257) ``re^2 + im^2``; ``sums`` (T, 4)
    the power summed over all bins (pairwise), bins ``0..low_hi`` and bins ``high_lo..256`` (in
    turn), and the mean of ``max(power, floor)`` (pairwise); ``thresh`` (T, 257) ``max(power, floor)`` (for numpy's log)."""
    T, B = spectrum.shape
    for f in range(T):
        prow = power[f]
        trow = thresh[f]
        for i in range(B):
            re = spectrum[f, i].real
            im = spectrum[f, i].imag
            p = re * re + im * im
            prow[i] = p
            trow[i] = p if p > floor else floor
        sums[f, 0] = _pairwise_sum(prow, 0, B, 1)
        # the bands one by one: numpy's boolean column selection is column-major, so its row
        # sums add the columns in turn
        low = 0.0
        for i in range(low_hi + 1):
            low += prow[i]
        sums[f, 1] = low
        high = 0.0
        for i in range(high_lo, B):
            high += prow[i]
        sums[f, 2] = high
        sums[f, 3] = _pairwise_sum(trow, 0, B, 1) / B


@njit(cache=True, nogil=True)
def _row_means(x, out):
    """``out[f] = x[f].mean()`` (pairwise) of each row of (T, n) float64 ``x``."""
    T, n = x.shape
    for f in range(T):
        out[f] = _pairwise_sum(x[f], 0, n, 1) / n


@njit(cache=True, nogil=True)
def _pitch_power(spectrum):
    """In place: each bin of the (T, n) complex pitch spectrum becomes ``re^2 + im^2 + 0j`` (the
    power as the complex number ``np.fft.irfft`` would cast it to: given a float array, numpy's
    irfft converts it through a buffer first, which costs more than the transform)."""
    T, B = spectrum.shape
    for f in range(T):
        for i in range(B):
            re = spectrum[f, i].real
            im = spectrum[f, i].imag
            spectrum[f, i] = complex(re * re + im * im, 0.0)


@njit(cache=True, nogil=True)
def _pitch_peaks(ac, lo, hi, wac, floor, f0, voicing):
    """:func:`_autocorrelation_pitch` after the inverse FFT: per frame of the autocorrelation
    ``ac`` (T, >= hi + 1), the lag in ``lo..hi`` of the highest ``ac[lag] / max(ac[0], floor) /
    wac[lag - lo]`` (the first such), ``f0 = SAMPLE_RATE / lag`` Hz, and its height clipped to
    [0, 1] (0 where ``ac[0] <= floor``)."""
    T = ac.shape[0]
    for f in range(T):
        r0 = ac[f, 0]
        m = r0 if r0 > floor else floor
        best = 0
        top = -np.inf
        for j in range(hi - lo + 1):
            v = ac[f, lo + j] / m / wac[j]
            if v > top or (j == 0):
                top = v
                best = j
        v = top if top > 0.0 else 0.0
        v = v if v < 1.0 else 1.0
        voicing[f] = 0.0 if r0 <= floor else v
        f0[f] = SAMPLE_RATE / (best + lo)


@njit(cache=True, nogil=True)
def _columns_0_to_8(logs, log_flatness, r0, r1, log2_f0, raw_voicing, y, T, floor, std_floor,
                    voicing_threshold, out):
    """Columns 0-8 of :func:`vowel_acoustics` into ``out`` (T, >= 9): the z-scores of the
    ``logs`` (T, 4) (log10 short-term, total, low and high energy), of ``log_flatness`` and of
    the lag-1 autocorrelation ``r1 / r0``; log2 f0 z-scored over the voiced frames (0 elsewhere);
    the voicing ``raw_voicing`` median-smoothed over 3 frames; the z-scored zero-crossing rate
    of ``y`` (librosa's centred frames: ``WINDOW`` samples every ``HOP``, the signal padded
    with ``HOP`` zeros, then by repeating its ends)."""
    col = np.empty(T)
    for j in range(4):
        for f in range(T):
            col[f] = logs[f, j]
        _zscore_into(col, out[:, j], std_floor)
    _zscore_into(log_flatness, out[:, 4], std_floor)
    for f in range(T):
        col[f] = r1[f] / (r0[f] if r0[f] > floor else floor) if r0[f] > floor else 0.0
    _zscore_into(col, out[:, 5], std_floor)
    # voicing: median of 3 (edges repeated)
    if T < 3:
        for f in range(T):
            out[f, 7] = raw_voicing[f]
    else:
        for f in range(T):
            a = raw_voicing[f - 1] if f > 0 else raw_voicing[0]
            b = raw_voicing[f]
            c = raw_voicing[f + 1] if f < T - 1 else raw_voicing[T - 1]
            lo = a if a < b else b
            hi = b if a < b else a
            out[f, 7] = lo if c < lo else (hi if c > hi else c)
    # pitch: z over the voiced frames
    n_voiced = 0
    for f in range(T):
        if out[f, 7] >= voicing_threshold:
            col[n_voiced] = log2_f0[f]
            n_voiced += 1
    ok = False
    mean = 0.0
    std = 0.0
    if n_voiced > 0:
        mean, std = _mean_std(col, n_voiced)
        ok = not std < std_floor
    for f in range(T):
        out[f, 6] = (log2_f0[f] - mean) / std if ok and out[f, 7] >= voicing_threshold else 0.0
    # zero-crossing rate
    n = y.shape[0]
    length = n + HOP + 2 * (WINDOW // 2)
    K = min(T, 1 + (length - WINDOW) // HOP)
    first = y[0]
    for k in range(K):
        count = 0
        prev = False
        for i in range(WINDOW):
            m = HOP * k + i - WINDOW // 2
            v = first if m < 0 else (y[m] if m < n else 0.0)
            neg = v < 0.0 and not abs(v) <= 1e-10
            if i > 0 and neg != prev:
                count += 1
            prev = neg
        col[k] = count / WINDOW
    for k in range(K, T):
        col[k] = col[K - 1]
    _zscore_into(col, out[:, 8], std_floor)


@njit(cache=True, nogil=True)
def _cepstral_columns(mfcc, std_floor, out):
    """Columns 14-21: the z-scores of the (4, T) cepstra and their HTK regression deltas over
    +-DELTA_WIDTH frames (edges repeated), as :func:`aligner.features.mfcc._deltas`."""
    T = mfcc.shape[1]
    for j in range(4):
        _zscore_into(mfcc[j], out[:, 14 + j], std_floor)
    denom = 0.0
    for k in range(1, DELTA_WIDTH + 1):
        denom += k * k
    denom = 2.0 * denom
    for j in range(4):
        src = out[:, 14 + j]
        for t in range(T):
            d = 0.0
            for k in range(1, DELTA_WIDTH + 1):
                a = src[min(t + k, T - 1)]
                b = src[max(t - k, 0)]
                d += k * (a - b)
            out[t, 18 + j] = d / denom


@njit(cache=True, nogil=True)
def _posterior_columns(post, vowel_idx, nasal_idx, glide_idx, sil_idx, centres, out, col0):
    """Columns 9-13 from (Tc, n_classes) float64 posteriors ``post`` into ``out[:, col0:col0 + 5]``
    (T rows): per 10 ms frame the vowel maximum, the nasal, vowel and glide sums (class by
    class in index order, as numpy sums the column-major ``post[:, idx]`` along axis 1) and the
    ``sil`` posterior, each linearly
    interpolated from the 10 ms frame ``centres`` (Tc,) (in 5 ms frames) to frames 0..T-1 as
    ``np.interp`` does (held constant beyond the first and last centre)."""
    Tc = post.shape[0]
    T = out.shape[0]
    cols = np.empty((5, Tc))
    for t in range(Tc):
        top = post[t, vowel_idx[0]]
        total = 0.0
        for k in range(vowel_idx.shape[0]):
            v = post[t, vowel_idx[k]]
            total += v
            if v > top:
                top = v
        cols[0, t] = top
        cols[2, t] = total
        total = 0.0
        for k in range(nasal_idx.shape[0]):
            total += post[t, nasal_idx[k]]
        cols[1, t] = total
        total = 0.0
        for k in range(glide_idx.shape[0]):
            total += post[t, glide_idx[k]]
        cols[3, t] = total
        cols[4, t] = post[t, sil_idx]
    for j in range(5):
        y = cols[j]
        if Tc == 1:
            for f in range(T):
                out[f, col0 + j] = y[0]
            continue
        i = 0
        for f in range(T):
            x = float(f)
            if x < centres[0]:
                out[f, col0 + j] = y[0]
                continue
            if x > centres[Tc - 1]:
                out[f, col0 + j] = y[Tc - 1]
                continue
            while i < Tc - 1 and centres[i + 1] <= x:
                i += 1
            if i == Tc - 1 or centres[i] == x:
                out[f, col0 + j] = y[i]
                continue
            slope = (y[i + 1] - y[i]) / (centres[i + 1] - centres[i])
            v = slope * (x - centres[i]) + y[i]
            if np.isnan(v):
                v = slope * (x - centres[i + 1]) + y[i + 1]
                if np.isnan(v) and y[i] == y[i + 1]:
                    v = y[i]
            out[f, col0 + j] = v


# -- several cuts of one recording (aligner.features.vowel_acoustics.vowel_acoustics_cuts) --

@njit(cache=True, nogil=True)
def _cut_signal_columns(y, cut_start, cut_len, offsets, rows, logs, log_flatness, r0, r1, log2_f0, voicing,
                        cepstra, floor, std_floor, voicing_threshold, out):
    """Columns 0-8 and 14-21 of several cuts of one recording ``y`` (float64) into ``out``
    (sum of T, 22): cut c is ``y[cut_start[c]:cut_start[c] + cut_len[c]]``, its T frames the
    rows ``offsets[c] .. offsets[c + 1] - 1`` of ``out``; frame k of all cuts takes its per-frame
    values from row ``rows[k]`` of ``logs`` (R, 4), ``log_flatness``, ``r0``, ``r1``, ``log2_f0``
    and ``voicing`` (R,) and of the raw cepstra c1..c4 ``cepstra`` (4, R) (frames shared by
    several cuts are analysed once). Each cut's z-scores, smoothing and zero crossings as
    :func:`_columns_0_to_8` and :func:`_cepstral_columns` compute them for that cut alone."""
    for c in range(cut_start.shape[0]):
        o = offsets[c]
        T = offsets[c + 1] - o
        lg = np.empty((T, 4))
        lf = np.empty(T)
        a0 = np.empty(T)
        a1 = np.empty(T)
        l2 = np.empty(T)
        v = np.empty(T)
        m = np.empty((4, T))
        for f in range(T):
            r = rows[o + f]
            for j in range(4):
                lg[f, j] = logs[r, j]
            lf[f] = log_flatness[r]
            a0[f] = r0[r]
            a1[f] = r1[r]
            l2[f] = log2_f0[r]
            v[f] = voicing[r]
            for j in range(4):
                m[j, f] = cepstra[j, r]
        cut = out[o:o + T]
        _columns_0_to_8(lg, lf, a0, a1, l2, v, y[cut_start[c]:cut_start[c] + cut_len[c]], T, floor, std_floor,
                        voicing_threshold, cut)
        _cepstral_columns(m, std_floor, cut)


@njit(cache=True, nogil=True)
def _cut_posterior_columns(post, centres, offsets10, offsets, vowel_idx, nasal_idx, glide_idx, sil_idx, out):
    """Columns 9-13 of several cuts into ``out`` (sum of T, 22): cut c's 10 ms frames are the rows
    ``offsets10[c] ..`` of the posteriors ``post`` (sum of Tc, n_classes) float64 and of their
    ``centres`` (in 5 ms frames of the cut), its 5 ms frames the rows ``offsets[c] ..`` of
    ``out``; :func:`_posterior_columns` of each cut."""
    for c in range(offsets.shape[0] - 1):
        a, b = offsets10[c], offsets10[c + 1]
        _posterior_columns(post[a:b], vowel_idx, nasal_idx, glide_idx, sil_idx, centres[a:b],
                           out[offsets[c]:offsets[c + 1]], 9)
