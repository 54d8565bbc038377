"""Time conventions, once: the sample rate, and frames <-> seconds for both front ends.

Every module that converts between samples, frames and seconds reads this one.

Sample rate
    All audio is resampled to :data:`SAMPLE_RATE` (16 kHz) on loading; both front ends are
    defined for it.

Alignment frames (10 ms; the forced aligner, :mod:`aligner.features.mfcc`)
    25 ms windows (:data:`WINDOW` = 400 samples) every 10 ms (:data:`FRAME_SHIFT` = 160
    samples), **not centred**: frame ``t`` covers samples ``[160 t, 160 t + 400)``, so its
    centre is sample ``160 t + 200`` (``t * 10 + 12.5`` ms) and an utterance of ``n`` samples
    has ``T = 1 + (n - 400) // 160`` frames.

    The boundary *before* frame ``t`` (between frames ``t - 1`` and ``t``) lies midway between
    their centres: sample ``160 t + 120``, i.e. ``t * 10 + 7.5`` ms (:func:`boundary_time`,
    inverted by :func:`time_to_boundary_frame`). Reporting ``t * 10`` ms instead would put
    every boundary 7.5 ms early (SPEC section 3).

Vowel frames (5 ms; the vowel measurer, :mod:`aligner.features.vowel_acoustics`)
    One frame every :data:`VOWEL_HOP` = 80 samples, frame ``f`` centred at ``f * 5`` ms, so
    ``n`` samples give ``n // 80 + 1`` frames. A vowel from ``t_on`` to ``t_off`` seconds
    covers frames ``ceil(t_on * 200) .. floor(t_off * 200)`` (the AutoVowelDuration label
    convention, :func:`seconds_to_vowel_frames`); a decoded ``(t_b, t_e)`` maps back to the
    midpoints ``((t_b - 0.5) * 5 ms, (t_e + 0.5) * 5 ms)`` (:func:`vowel_frames_to_seconds`).
"""

from __future__ import annotations

import math

import numpy as np

#: sample rate of all audio inside the package (Hz)
SAMPLE_RATE = 16000

# -- 10 ms alignment frames ---------------------------------------------------------------
#: hop between alignment frames, samples (10 ms)
FRAME_SHIFT = 160
#: alignment frame length, milliseconds
FRAME_MS = 1000.0 * FRAME_SHIFT / SAMPLE_RATE
#: analysis window of an alignment frame, samples (25 ms)
WINDOW = 400
#: offset of the boundary before frame t from the frame's first sample, samples
#: (midway between the centres of frames t-1 and t: 200 - 80 = 120, i.e. 7.5 ms)
BOUNDARY_OFFSET = (WINDOW - FRAME_SHIFT) // 2


def n_frames(n_samples: int | np.ndarray) -> int | np.ndarray:
    """Number of 10 ms frames in ``n_samples`` samples of 16 kHz audio.

    ``1 + (n_samples - 400) // 160``, or 0 when the audio is shorter than one 25 ms window.
    Works elementwise on arrays.
    """
    n = np.asarray(n_samples, dtype=np.int64)
    t = np.where(n >= WINDOW, 1 + (n - WINDOW) // FRAME_SHIFT, 0)
    return int(t) if t.ndim == 0 else t


def boundary_time(t: int | np.ndarray) -> float | np.ndarray:
    """Time in **seconds** of the boundary before frame ``t`` (frame index, int).

    ``(160 t + 120) / 16000`` = ``t * 10 ms + 7.5 ms``: midway between the centres of frames
    ``t - 1`` and ``t``. Works elementwise on arrays. ``boundary_time(0)`` is 7.5 ms; callers
    that report the start of the first phone report 0 s instead (:func:`phone_start_times`),
    and the end of the last phone as the audio's duration.
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
    ``round((seconds * 16000 - 120) / 160)`` (ties round up), clipped to ``>= 0`` and, when
    ``n_frames`` (frames in the utterance) is given, to ``<= n_frames``. Inverse of
    :func:`boundary_time`: ``time_to_boundary_frame(boundary_time(t)) == t``. A phone that
    starts at sample ``s`` of a TIMIT ``.phn`` file starts at frame
    ``time_to_boundary_frame(s / 16000)``.
    """
    x = (np.asarray(seconds, dtype=np.float64) * SAMPLE_RATE - BOUNDARY_OFFSET) / FRAME_SHIFT
    t = np.floor(x + 0.5 + 1e-9).astype(np.int64)
    t = np.maximum(t, 0)
    if n_frames is not None:
        t = np.minimum(t, int(n_frames))
    return int(t) if t.ndim == 0 else t


# -- 5 ms vowel frames ---------------------------------------------------------------------
#: hop between vowel frames, samples (5 ms)
VOWEL_HOP = 80
#: vowel frames per second
VOWEL_FRAME_RATE = SAMPLE_RATE // VOWEL_HOP
#: vowel frame length, seconds
VOWEL_FRAME_SECONDS = VOWEL_HOP / SAMPLE_RATE


def n_vowel_frames(n_samples: int) -> int:
    """Number of 5 ms frames of ``n_samples`` samples: ``n_samples // 80 + 1``."""
    return int(n_samples) // VOWEL_HOP + 1


def seconds_to_vowel_frames(onset_s: float, offset_s: float) -> tuple[int, int]:
    """The vowel's first and last 5 ms frame, ``(ceil(onset_s * 200), floor(offset_s * 200))``."""
    return (int(math.ceil(onset_s * VOWEL_FRAME_RATE - 1e-9)),
            int(math.floor(offset_s * VOWEL_FRAME_RATE + 1e-9)))


def vowel_frames_to_seconds(t_b: int, t_e: int) -> tuple[float, float]:
    """Onset and offset in seconds of a vowel on 5 ms frames ``t_b .. t_e``:
    ``(t_b - 0.5, t_e + 0.5) * 5 ms``, the midpoints of the intervals
    :func:`seconds_to_vowel_frames` maps to ``t_b`` and ``t_e`` (the onset clipped at 0)."""
    return max((t_b - 0.5) * VOWEL_FRAME_SECONDS, 0.0), (t_e + 0.5) * VOWEL_FRAME_SECONDS
