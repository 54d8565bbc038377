"""A corpus's long silent edges cut off before adapting on it.

Aligning a recording cuts its long silent edges off first
(:meth:`~aligner.alignment.model.AlignmentModel.silent_edges_cut`): seconds of room tone before and
after the speech standardise its MFCCs unlike the training speech's, and aligned whole such a
recording loses most of its boundaries. Adapting aligns its corpus from frames computed once and kept
between rounds, without the samples; so the edges are cut here, once, before the first round: each
recording with such edges becomes its speech and some silence around it (the same cut aligning it
makes), its ``source`` the same range of its file. The adapted model then learns from the frames it
will align, and the transcript check does not leave the recording out for edges it never heard.

A recording with hand-aligned reference phones is left whole (its times are the file's).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional, Sequence

import numpy as np

from aligner.alignment.decoding.silent_edges import MARGIN_FRAMES, MIN_CUT_FRAMES, MIN_SPEECH_FRAMES
from aligner.errors import AlignerError
from aligner.frames import FRAME_SHIFT, n_frames

#: a recording shorter than this (frames) has no edge long enough to cut: a cut needs
#: MIN_CUT_FRAMES frames beyond the MARGIN_FRAMES of silence kept at an end, and some speech
#: (:mod:`aligner.alignment.decoding.silent_edges`)
MIN_EDGES_CUT_FRAMES = MARGIN_FRAMES + MIN_CUT_FRAMES + MIN_SPEECH_FRAMES


def edges_cut_recordings(model, recordings: Sequence, prons_of: Optional[Sequence] = None, dictionary=None,
                         progress: Optional[Callable[[int, int], None]] = None) -> tuple:
    """``(recordings, n_cut)``: ``recordings`` (:class:`~aligner.alignment.adaptation.rounds.Recording`)
    with each one's long silent edges cut off as ``model`` (an
    :class:`~aligner.alignment.model.AlignmentModel`) cuts them when it aligns it, and how many were
    cut. ``prons_of``: per recording, ``(labels, pronunciations)`` of a words recording, or None
    (None: looked up here, words through ``dictionary``).

    A phones transcript is cut only where it begins and ends in silence (as aligning it asks); a
    words one always (its word graph has optional edge silences). A view of a universal model hears
    silence among the recording's own phones (:meth:`~aligner.alignment.model.AlignmentModel.transcript_scores`).
    ``progress``: optional ``callable(done, total)``."""
    if prons_of is None:
        prons_of = [None if r.kind == "phones" else _prons_or_none(r, dictionary, model) for r in recordings]
    out, n_cut = [], 0
    for i, (rec, prons) in enumerate(zip(recordings, prons_of)):
        try:
            cut = _edges_cut(model, rec, prons)
        except (AlignerError, ValueError, KeyError):  # an unknown symbol, words that cannot be read
            cut = None  # left whole: the rounds leave it out and say why, as they do any file they cannot align
        if cut is not None:
            n_cut += 1
        out.append(rec if cut is None else cut)
        if progress:
            progress(i + 1, len(recordings))
    return out, n_cut


def _prons_or_none(rec, dictionary, model):
    """A words recording's ``(labels, pronunciations)``, or None where its words cannot be read (the
    rounds say why)."""
    from aligner.alignment.adaptation.rounds import _prons

    try:
        return _prons(rec, dictionary, model)
    except (AlignerError, ValueError, KeyError):
        return None


def _edges_cut(model, rec, prons):
    """``rec`` cut to its speech (:func:`edges_cut_recordings`), or None where nothing is cut."""
    from aligner.alignment.adaptation.rounds import _phone_sequence, _source_samples

    if rec.reference is not None or not model.crops_silent_edges:
        return None
    samples = rec.samples if rec.samples is not None else _source_samples(rec)
    if n_frames(len(samples)) < MIN_EDGES_CUT_FRAMES:
        return None
    classes = None
    if rec.kind == "phones":
        classes = _phone_sequence(rec, model)[1]
        if not (classes[0] == model.inventory.silence_index == classes[-1]):
            return None
    elif prons is None:
        return None
    elif model.always_scored is not None:
        from aligner.alignment.decoding.words import word_graph

        classes = np.unique(word_graph(model, prons[1])[0].classes)
    decoder, scores, _ = model.scored(None, samples)
    found = model.silent_edges_cut(decoder, scores, samples,
                                   classes=classes if decoder.always_scored is not None else None)
    if found is None:
        return None
    first, piece = found[0], np.asarray(found[1])
    source = rec.source
    if source is not None:
        path, a, _ = source
        source = (path, a + first * FRAME_SHIFT, a + first * FRAME_SHIFT + len(piece))
    return replace(rec, samples=piece if rec.samples is not None else None, source=source)
