"""Per-speaker vocal-tract-length normalisation for adaptation: the MFCC frequency warp under which a
model's alignments of a speaker's recordings score highest (:func:`choose_warps`). The warps go to
:func:`~aligner.alignment.adaptation.rounds.adapt_model` and must be used again when the adapted model
aligns those speakers."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from aligner.alignment.adaptation.rounds import Recording, _phone_sequence, _prons, check_recordings, frames_of
from aligner.alignment.model import AlignmentModel
from aligner.errors import AlignmentError


def alignment_value(model: AlignmentModel, rec: Recording, frames: np.ndarray, prons: tuple | None = None) -> float:
    """The decoder's objective ``w . phi(x, y_hat)`` (per phone, as the DP maximises it) of ``rec``
    aligned from MFCC frames (T, 42): how well the model explains the audio."""
    scores = model.classifier.scores(frames)
    if rec.kind == "phones":
        from aligner.alignment.decoding.task import AlignmentTask

        symbols, classes = _phone_sequence(rec, model)
        y, _ = model.decode_phones(frames, scores, classes, symbols, rec.duration_s, rec.name)
        x = model.make_input(frames, classes, scores, name=rec.name, symbols=symbols)
        return float(AlignmentTask().score(x, y, model.weights))
    from aligner.alignment.decoding.graph_task import GraphAlignmentTask
    from aligner.alignment.decoding.words import PHONE_BONUS, decode_word_graph

    _, _, x, path, _ = decode_word_graph(model, frames, scores, prons[1], rec.duration_s, rec.name, refine=False)
    return float(GraphAlignmentTask(phone_bonus=PHONE_BONUS).score(x, path, model.weights))


#: vocal-tract-length warps tried per speaker by :func:`choose_warps`
WARP_GRID = (0.84, 0.88, 0.92, 0.96, 1.0, 1.04, 1.08, 1.12, 1.16)


def choose_warps(model: AlignmentModel, recordings: Sequence[Recording], grid: Sequence[float] = WARP_GRID,
                 dictionary=None) -> dict:
    """``{speaker: (warp, {warp: mean objective})}``: per speaker, the frequency warp of the MFCC
    front end (:func:`~aligner.features.mfcc.mfcc_features` ``warp``) whose alignments of the
    speaker's recordings have the highest mean :func:`alignment_value`; recordings that do not
    align at some warp are left out of that speaker's comparison."""
    check_recordings(recordings)
    by_speaker: dict = {}
    for rec in recordings:
        by_speaker.setdefault(rec.speaker, []).append(rec)
    out = {}
    for speaker, recs in by_speaker.items():
        prons = [None if r.kind == "phones" else _prons(r, dictionary, model) for r in recs]
        values = {}
        for warp in grid:
            v = []
            for r, p in zip(recs, prons):
                try:
                    v.append(alignment_value(model, r, frames_of(r, warp, model), p))
                except AlignmentError:
                    v.append(np.nan)
            values[float(warp)] = v
        ok = ~np.any(np.isnan(np.array(list(values.values()))), axis=0)
        means = {w: float(np.mean(np.asarray(v)[ok])) if ok.any() else float("nan") for w, v in values.items()}
        best = max(means, key=lambda w: -np.inf if np.isnan(means[w]) else means[w])
        out[speaker] = (best, means)
    return out
