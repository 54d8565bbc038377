"""Long silent edges cut off before aligning: a recording with seconds of room tone around its speech.

Models learn from recordings cut fairly tightly (tenths of a second of silence at either end). A
lab prompt, an interview or a fieldworker's word cut generously has seconds of room tone around
the speech, and aligned whole it fares far worse: its MFCCs are standardised over a recording that
is mostly silence, its silence then looks unlike the training silence, and the classifier hears
speech in it. So a recording is scored once; where the classifier's silence posteriors leave more
than :data:`MIN_CUT_FRAMES` frames of silence at an end beyond :data:`MARGIN_FRAMES` frames around
the speech (:func:`speech_span`, :func:`cut_frames`), the recording is cut there, scored again and
cut again (at most :data:`MAX_CUTS` times), aligned as a tight recording, and its edge silences
are stretched back to its ends (:meth:`aligner.alignment.model.AlignmentModel.silent_edges_cut`).

The frame energies check every cut (:func:`energy_speech_span`, :func:`narrowed`): where they leave
:data:`ENERGY_MIN_CUT_FRAMES` or more frames of quiet at an end, the cut keeps only what both
keep. They find the speech where the classifier does not: where it hears speech everywhere (a
recording of mostly silence), and where noise over the whole recording makes it hear speech in
the noise of the edges (it then cuts too little, or nothing). Recordings cut tightly already are
aligned once, as before.

A recording aligned from words may also hold long pauses between its words (a speaker who stops
to think, a reader between paragraphs). The word graph's pause between words lasts at most its
statistics' longest (``pau``'s, 0.88 s), so a longer one pushed its silence into the words beside
it. Such a pause (:data:`INNER_KEEP_FRAMES` frames either side and :data:`MIN_INNER_CUT_FRAMES`
more: 0.8 s or longer, found by the classifier's silence posteriors or the frame energies, and
cut again after scoring again) loses its middle before aligning (:func:`inner_silences_cut`), and
the times are mapped back (:class:`InnerCut`); the pause then spans what was cut. The cut recording is
scored again, unless the cut takes less than :data:`RESCORE_MIN_FRACTION` of its frames (an hour with
a few pauses): then it is aligned from the rows of the first scoring. A recording read from its file
on demand is cut by reading its kept ranges (:class:`~aligner.io.audio.SplicedSamples`). A universal
model's view, whose pauses may last any length, gets the same cut: in a session of words with
seconds between them its classifier, like any, hears speech in the pauses until they are cut.

Times are in frames of 10 ms (:mod:`aligner.frames`) unless a name says seconds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligner.features.numeric import _pairwise_sum
from aligner.frames import FRAME_SHIFT, SAMPLE_RATE, WINDOW, n_frames

#: frames of silence kept on either side of the speech found (a tight cut's edge silence)
MARGIN_FRAMES = 30
#: a recording is cut only where this many frames or more would go at one end at least
MIN_CUT_FRAMES = 20
#: speech: at least this many frames in a row where silence is not the likelier
MIN_SPEECH_FRAMES = 5
#: a frame is speech where the posterior of silence is below this
SILENCE_POSTERIOR = 0.5
#: a recording is scored and cut at most this many times (each cut scored again)
MAX_CUTS = 3
#: frame energies: speech lies this far (a fraction) from the quiet level (10th percentile, dB) to the
#: loud one (95th) at least
ENERGY_SPEECH_FRACTION = 0.4
#: frame energies tell speech from silence only where the loud level is this many dB above the quiet one
#: (white noise at 10 dB over a recording with long edges leaves 15-19 dB; a clean one 40-55 dB)
MIN_ENERGY_RANGE_DB = 12.0
#: a recording is cut by its frame energies only where this many frames or more would go at one end
#: at least (a second: the energies miss weak speech at the edges, which a tight cut's edge silence
#: must not lose)
ENERGY_MIN_CUT_FRAMES = 100
#: a first cut of long pauses that takes less than this fraction of a recording's frames is aligned
#: from the rows of the recording's own frames and scores, not scored again
RESCORE_MIN_FRACTION = 0.05
#: frames whose silence posteriors are computed at a time (float64 copies of their scores)
POSTERIOR_BLOCK_FRAMES = 20_000
#: frames whose levels are computed from one read of a recording read on demand (about 6 MB of
#: samples at most)
LEVEL_BLOCK_FRAMES = 10_000


def silence_posteriors(scores: np.ndarray, log_prior: np.ndarray | None, silence: int) -> np.ndarray:
    """(T,) float64 posterior of class ``silence`` in each frame from a classifier's (T, C) ``scores``
    (log posteriors, or log scaled likelihoods when ``log_prior`` (C,) was subtracted from them),
    :data:`POSTERIOR_BLOCK_FRAMES` frames at a time (a long recording's scores are not copied whole)."""
    out = np.empty(len(scores))
    prior = None if log_prior is None else np.asarray(log_prior, np.float64)
    for a in range(0, len(scores), POSTERIOR_BLOCK_FRAMES):
        post = np.array(scores[a:a + POSTERIOR_BLOCK_FRAMES], np.float64)
        if prior is not None:
            post += prior
        post -= post.max(axis=1, keepdims=True)
        np.exp(post, out=post)
        out[a:a + POSTERIOR_BLOCK_FRAMES] = post[:, silence] / post.sum(axis=1)
    return out


def model_silence_posteriors(model, scores: np.ndarray) -> np.ndarray:
    """(T,) :func:`silence_posteriors` of ``model``'s classifier ``scores`` (T, C): its prior added back
    where it divides by it, its inventory's silence class."""
    clf = model.classifier
    return silence_posteriors(scores, clf.log_prior if clf.prior_division else None, model.inventory.silence_index)


def speech_span(p_silence: np.ndarray, min_run: int = MIN_SPEECH_FRAMES,
                threshold: float = SILENCE_POSTERIOR) -> tuple | None:
    """``(first, end)`` frames of the speech in a recording whose frames have the silence posteriors
    ``p_silence`` (T,): from the first to the last frame of a run of at least ``min_run`` frames
    whose posterior is below ``threshold`` (``end`` exclusive); None when there is no such run."""
    speech = np.asarray(p_silence) < threshold
    if min_run > 1:
        # frame t ends a run of min_run speech frames where the window sum reaches min_run
        counts = np.convolve(speech.astype(np.int64), np.ones(min_run, np.int64), mode="valid")
        ends = np.flatnonzero(counts >= min_run)  # window [e, e + min_run)
        if ends.size == 0:
            return None
        return int(ends[0]), int(ends[-1]) + min_run
    frames = np.flatnonzero(speech)
    return None if frames.size == 0 else (int(frames[0]), int(frames[-1]) + 1)


def energy_speech_span(samples: np.ndarray, min_run: int = MIN_SPEECH_FRAMES,
                       fraction: float = ENERGY_SPEECH_FRACTION, min_range_db: float = MIN_ENERGY_RANGE_DB
                       ) -> tuple | None:
    """``(first, end)`` frames (25 ms windows every 10 ms) of the speech in ``samples`` (n,) by
    their energy: from the first to the last run of at least ``min_run`` frames louder than the
    quiet level (10th percentile of the frames' dB, nearest rank) by ``fraction`` of the way to
    the loud level (95th); None when the two levels lie less than ``min_range_db`` apart (noise as loud as the
    speech: nothing to tell by level) or the recording is shorter than a frame."""
    quiet = _quiet_by_level(samples, fraction, min_range_db)
    return None if quiet is None else speech_span(np.where(quiet, 1.0, 0.0), min_run, 0.5)


def _quiet_by_level(samples: np.ndarray, fraction: float, min_range_db: float) -> np.ndarray | None:
    """(T,) bool: the frames of ``samples`` (n,) (an array, or samples read on demand by slices, such as
    a :class:`~aligner.io.audio.FileSamples`: :data:`LEVEL_BLOCK_FRAMES` frames at a time) (25 ms every 10 ms) no louder than ``fraction`` of the
    way from the quiet level (10th percentile of the frames' dB, nearest rank) to the loud one
    (95th); None when the two lie less than ``min_range_db`` apart or there is no frame."""
    T = n_frames(len(samples)) if len(samples) >= WINDOW else 0
    if T < 1:
        return None
    db = np.empty(T)
    if isinstance(samples, np.ndarray):
        _frame_levels_db(np.ascontiguousarray(samples, np.float32), db)
    else:  # read on demand (a long recording from its file): block by block, memory bounded
        for a in range(0, T, LEVEL_BLOCK_FRAMES):
            b = min(T, a + LEVEL_BLOCK_FRAMES)
            block = np.asarray(samples[a * FRAME_SHIFT:(b - 1) * FRAME_SHIFT + WINDOW], np.float32)
            _frame_levels_db(np.ascontiguousarray(block), db[a:b])
    k_quiet, k_loud = int(0.10 * (T - 1)), int(0.95 * (T - 1))  # nearest-rank percentiles
    quiet, loud = np.partition(db, (k_quiet, k_loud))[[k_quiet, k_loud]]
    if loud - quiet < min_range_db:
        return None
    return db <= quiet + fraction * (loud - quiet)


@njit(cache=True, nogil=True)
def _frame_levels_db(samples, out):
    """``out`` (T,): the level in dB (10 log10 of the sum of squares, floored at 1e-12) of each
    25 ms frame of float32 ``samples`` every 10 ms (frame t: ``samples[160 t : 160 t + 400]``),
    from sums of blocks of 80 samples (a frame is 5 of them, its successor starts 2 later)."""
    block = FRAME_SHIFT // 2
    per_frame = WINDOW // block
    n_blocks = 2 * (out.shape[0] - 1) + per_frame
    cum = np.empty(n_blocks + 1)
    cum[0] = 0.0
    sq = np.empty(block)  # a block's squares, summed as np.sum sums them
    for b in range(n_blocks):
        for i in range(block):
            v = np.float64(samples[b * block + i])
            sq[i] = v * v
        cum[b + 1] = cum[b] + _pairwise_sum(sq, 0, block, 1)
    for t in range(out.shape[0]):
        out[t] = 10.0 * np.log10(max(cum[2 * t + per_frame] - cum[2 * t], 1e-12))


def cut_frames(span: tuple | None, total_frames: int, margin: int = MARGIN_FRAMES,
               min_cut: int = MIN_CUT_FRAMES) -> tuple | None:
    """``(a, b)``: the frames ``a .. b - 1`` of a recording of ``total_frames`` frames to align, ``margin``
    frames either side of the speech ``span`` (:func:`speech_span`); None when nothing is to be cut
    (no speech found, or fewer than ``min_cut`` frames would go at either end)."""
    if span is None:
        return None
    a, b = max(0, span[0] - margin), min(total_frames, span[1] + margin)
    if a < min_cut and total_frames - b < min_cut:
        return None
    return a, b


def narrowed(cut: tuple | None, by_energy: tuple | None, margin: int = MARGIN_FRAMES) -> tuple | None:
    """The frames ``(a, b)`` both the classifier's ``cut`` and the energies' ``by_energy`` keep
    (:func:`cut_frames` of :func:`speech_span` and of :func:`energy_speech_span`); either alone where
    the other is None, and ``cut`` where the two keep fewer than ``2 * margin`` frames in common
    (they found different speech: the classifier is trusted)."""
    if cut is None or by_energy is None:
        return by_energy if cut is None else cut
    a, b = max(cut[0], by_energy[0]), min(cut[1], by_energy[1])
    return (a, b) if b - a > 2 * margin else cut


# -------------------------------------------------------------------------------------------
# long pauses inside a recording aligned from words
# -------------------------------------------------------------------------------------------

#: frames of a long pause kept either side of its cut: the pause the word graph then aligns lasts
#: ``2 * INNER_KEEP_FRAMES`` frames, within a pause's longest (``pau``'s, 88 frames)
INNER_KEEP_FRAMES = 30
#: a pause inside a recording is cut only where this many frames or more would go
MIN_INNER_CUT_FRAMES = 20
#: a recording shorter than this (frames) has no room for such a pause with speech on both sides
MIN_PAUSED_FRAMES = 2 * INNER_KEEP_FRAMES + MIN_INNER_CUT_FRAMES + 2


def quiet_frames(samples: np.ndarray, T: int, fraction: float = ENERGY_SPEECH_FRACTION,
                 min_range_db: float = MIN_ENERGY_RANGE_DB) -> np.ndarray:
    """(T,) 1.0 where a frame of ``samples`` (25 ms every 10 ms) lies below ``fraction`` of the way
    from the quiet level to the loud one, else 0.0 (:func:`energy_speech_span`'s levels); all 0.0
    where the two lie less than ``min_range_db`` apart."""
    out = np.zeros(T)
    quiet = _quiet_by_level(samples, fraction, min_range_db)
    if quiet is not None:
        m = min(len(quiet), T)
        out[:m] = quiet[:m]
    return out


def inner_silences(p_silence: np.ndarray, keep: int = INNER_KEEP_FRAMES, min_cut: int = MIN_INNER_CUT_FRAMES,
                   threshold: float = SILENCE_POSTERIOR) -> list:
    """``[(a, b)]``: the frames ``a .. b - 1`` to cut out of each run of silent frames (posterior of
    silence ``p_silence`` (T,) at least ``threshold``) that lies between speech on both sides and
    is longer than ``2 * keep + min_cut`` frames: all of it but ``keep`` frames at either end."""
    silent = np.asarray(p_silence) >= threshold
    if np.count_nonzero(silent) < 2 * keep + min_cut:  # too few silent frames for one such run
        return []
    edges = np.diff(np.concatenate([[0], silent.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(s) + keep, int(e) - keep) for s, e in zip(starts, ends)
            if s > 0 and e < len(silent) and e - s >= 2 * keep + min_cut]


class InnerCut:
    """A recording of ``n_samples`` samples with the middle of its long pauses cut out: ``kept``
    [(first, end)] frame ranges of the recording, in order (the last to its end), the times (seconds)
    a time of the cut recording maps back to, and ``duration_s``, the cut recording's."""

    def __init__(self, kept: list, n_samples: int):
        self.kept = kept
        lengths = np.array([b - a for a, b in kept])
        self.cut_starts_s = np.concatenate([[0], np.cumsum(lengths)[:-1]]) * FRAME_SHIFT / SAMPLE_RATE
        self.shifts_s = np.array([a for a, _ in kept]) * FRAME_SHIFT / SAMPLE_RATE - self.cut_starts_s
        self.duration_s = n_samples / SAMPLE_RATE - self.shifts_s[-1]

    def samples(self, samples):
        """The cut recording's samples (the last range to the recording's end): an array of
        ``samples`` (n,) held in memory, or a :class:`~aligner.io.audio.SplicedSamples` of a
        recording read on demand (such as a :class:`~aligner.io.audio.FileSamples`)."""
        ranges = [(a * FRAME_SHIFT, b * FRAME_SHIFT) for a, b in self.kept[:-1]]
        ranges.append((self.kept[-1][0] * FRAME_SHIFT, len(samples)))
        if isinstance(samples, np.ndarray):
            return np.concatenate([samples[a:b] for a, b in ranges])
        from aligner.io.audio import SplicedSamples

        return SplicedSamples(samples, ranges)

    def original_times(self, times) -> np.ndarray:
        """The recording's times (seconds) (n,) float64 of ``times`` (n,) of the cut recording: a time
        at a cut belongs to the range after it."""
        times = np.asarray(times, np.float64)
        k = np.maximum(np.searchsorted(self.cut_starts_s, times, side="right") - 1, 0)
        return times + self.shifts_s[k]


def inner_silences_cut(view, model, scores: np.ndarray, samples: np.ndarray, frames: np.ndarray | None = None
                       ) -> tuple | None:
    """``(cut, decoder, scores, frames)``: ``samples`` (n,) with the middle of their
    long pauses cut out (:func:`inner_silences` of the frames ``model``'s ``scores`` (T, C) or the
    frame energies (:func:`quiet_frames`) take for silence), an
    :class:`InnerCut`, scored again by ``view`` (an :class:`~aligner.alignment.model.AlignmentModel`)
    and cut again while that finds more (at most :data:`MAX_CUTS` times: a recording that is mostly
    pause is standardised unlike the training speech, and its classifier hears speech in the
    pause until it is cut); None where there is no such pause. ``view``'s pauses may last any length
    (``pauses_unpaced``, a universal model's view) and are cut all the same: its classifier hears
    speech in seconds of pause as any does. ``samples`` read on demand (a long recording read from its file,
    :class:`~aligner.io.audio.FileSamples`) stay there: the cut recording is read from them
    (:class:`~aligner.io.audio.SplicedSamples`).

    Where the first cut takes less than :data:`RESCORE_MIN_FRACTION` of the recording's frames and
    its ``frames`` (T, 42) are given, the cut recording is not scored again: its frames and scores
    are the rows of the kept frames (the recording's statistics hardly change, and an hour with a
    few pauses is not scored twice)."""
    T = len(scores)
    if T < MIN_PAUSED_FRAMES:
        return None
    kept_frames = np.arange(T)  # the recording's frame of each frame of the cut recording
    found = None
    spliced_samples = samples
    for _ in range(MAX_CUTS):
        p_silence = model_silence_posteriors(model, scores)
        cuts = inner_silences(np.maximum(p_silence, quiet_frames(spliced_samples, len(p_silence))))
        if not cuts:
            break
        keep = _kept(cuts, len(kept_frames))
        if found is None and frames is not None and np.count_nonzero(~keep) < RESCORE_MIN_FRACTION * T:
            rows = np.flatnonzero(keep)
            cut = _inner_cut(rows, T, len(samples))
            return cut, model, np.ascontiguousarray(scores[rows]), np.ascontiguousarray(frames[rows])
        kept_frames = kept_frames[keep]
        cut = _inner_cut(kept_frames, T, len(samples))
        spliced_samples = cut.samples(samples)
        model, scores, frames = view.scored(None, spliced_samples)
        kept_frames = kept_frames[:len(scores)] if len(scores) <= len(kept_frames) else np.concatenate(
            [kept_frames, kept_frames[-1] + 1 + np.arange(len(scores) - len(kept_frames))])
        found = (cut, model, scores, frames)
    return found


def pauses_cut_rows(model, scores: np.ndarray, n_samples: int) -> tuple | None:
    """``(rows (T',) int, cut)``: the frames of a recording of ``n_samples`` samples kept when its long
    pauses lose their middles, found by ``model``'s classifier ``scores`` (T, C) alone (the silence
    posteriors, :func:`inner_silences`), and the :class:`InnerCut`; None where there is no such pause.
    For aligning the rows of frames and scores already computed, without the samples (a corpus
    aligned by ``aligner adapt``, whose frames are kept between rounds)."""
    T = len(scores)
    cuts = inner_silences(model_silence_posteriors(model, scores)) if T >= MIN_PAUSED_FRAMES else []
    if not cuts:
        return None
    rows = np.flatnonzero(_kept(cuts, T))
    return rows, _inner_cut(rows, T, n_samples)


def _kept(cuts: list, T: int) -> np.ndarray:
    """(T,) bool: the frames of a recording of ``T`` frames outside the ``cuts`` [(a, b)]."""
    keep = np.ones(T, bool)
    for a, b in cuts:
        keep[a:b] = False
    return keep


def _inner_cut(kept_frames: np.ndarray, T: int, n_samples: int) -> InnerCut:
    """The :class:`InnerCut` of a recording of ``T`` frames and ``n_samples`` samples that keeps the
    frames ``kept_frames`` (increasing; the last range runs to the recording's end)."""
    breaks = np.flatnonzero(np.diff(kept_frames) > 1) + 1
    firsts, lasts = kept_frames[np.r_[0, breaks]], kept_frames[np.r_[breaks - 1, len(kept_frames) - 1]]
    ends = np.append(lasts[:-1] + 1, T)
    return InnerCut([(int(a), int(b)) for a, b in zip(firsts, ends)], n_samples)


def align_reviewed_pauses_cut(view, model, scores: np.ndarray, frames: np.ndarray, samples: np.ndarray, symbols: list,
                              phone_set, name: str, split_stops, review: bool) -> tuple:
    """``model.align_reviewed`` of a recording's ``samples`` (n,) (its ``frames`` and ``scores``), with
    the middles of its long pauses cut out first where it has them (:func:`inner_silences_cut`,
    ``view`` scoring the cut recording) and the times mapped back; of the whole recording where it
    has none or the phones do not fit the cut."""
    from aligner.errors import AlignmentError

    inner = inner_silences_cut(view, model, scores, samples, frames)
    if inner is not None:
        cut, cut_model, cut_scores, cut_frames = inner
        try:
            intervals, conf, match = cut_model.align_reviewed(cut_frames, cut_scores, symbols, phone_set,
                                                              cut.duration_s, name=name, split_stops=split_stops,
                                                              review=review)
            starts = cut.original_times([iv.start_s for iv in intervals]).tolist()
            ends = cut.original_times([iv.end_s for iv in intervals]).tolist()
            return [iv._replace(start_s=a, end_s=b) for iv, a, b in zip(intervals, starts, ends)], conf, match
        except AlignmentError:
            pass  # the phones do not fit the cut: the whole recording
    return model.align_reviewed(frames, scores, symbols, phone_set, len(samples) / SAMPLE_RATE, name=name,
                                split_stops=split_stops, review=review)
