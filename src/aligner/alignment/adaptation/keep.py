"""Keep-or-revert: each round's re-estimated components judged on held-back recordings (issue 46).

:func:`~aligner.alignment.adaptation.rounds.adapt_model` re-estimates, per round, the frame
classifier's output layer and (optionally) the duration statistics from the current model's
alignments of the user's corpus; nothing says the change helps. With
``AdaptSettings.keep_better``, every :data:`HOLD_BACK_EVERY`-th recording of the corpus (never
one with reference phones) is *held back*: it is never used to re-estimate anything, only to
judge. After each round, every re-estimated component is put, alone, into the current model
(the one the round started from) and that candidate aligns the held-back recordings; the
component is kept only if the candidate's value beats the current model's by more than
:data:`MIN_GAIN`, else the current component (the base's, or one kept in an earlier round) stays.
Components that pass are kept together (their combination is not judged again).

The value needs no hand times: the mean boundary confidence of the held-back alignments,
the probability (0-1) that a phone start lies within 20 ms of an annotator's, from the *base*
model's calibrated confidence model (:mod:`aligner.alignment.review.confidence`). Its evidence
(``judge``):

* ``"own"``: each candidate's own frame scores, duration statistics and decoder margins (what
  ``aligner align`` with that model would report). Comparable across models in the sense that
  every candidate is judged at its own optimum by the same calibrated map; its bias is toward
  the candidate, whose classifier was fitted to its own labels (sharper scores read as more
  confident);
* ``"base"``: the base model's frame scores and statistics, at the candidate's boundaries. A
  fixed scorer, but the margins of the base's own decode are >= 0 by construction, so it
  prefers the base's alignment: a change is kept only when its boundaries look better to the
  base model itself (conservative: biased toward reverting).

A corpus of fewer than :data:`MIN_RECORDINGS` recordings, or a model without a confidence
model, holds nothing back and keeps every change (the report says why).

Measured (``python -m benchmarks.alignment.eval_adaptation --modes words phones --rounds 2``, the
4 speaker folds of the TIMIT sample, 30 recordings per fold, 6 held back): neither judge is
sound enough to be on by default, so ``keep_better`` is off. ``"own"`` keeps most changes (its
held-back confidence changes, -0.002 to +0.005, do not follow the word-MAE changes, -1.7 to
+0.8 ms per fold), so it protects nothing (durations alone on the phones: 8.49 -> 8.62 ms mean).
``"base"`` reverts nearly everything (60 of 64 component judgements, every duration change),
which gives back the unadapted figures (words 17.47 -> 17.47-17.51 ms, phones 8.49 ms) but loses
the gains too:
classifier + durations without a judge: words 16.97 ms after one round.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from aligner.errors import AlignerError

#: every this-many-th recording is held back (indices ``every-1, 2*every-1, ...``)
HOLD_BACK_EVERY = 5
#: fewer recordings than this (or no held-back recording left): nothing is held back
MIN_RECORDINGS = 10
#: a component is kept when it raises the held-back mean confidence by more than this (0-1)
MIN_GAIN = 0.0
JUDGES = ("own", "base")


def held_back(recordings: Sequence, every: int = HOLD_BACK_EVERY, minimum: int = MIN_RECORDINGS) -> list:
    """Indices of the recordings held back for judging: every ``every``-th of those without
    reference phones (``rec.reference is None``), counted in corpus order; [] for a corpus of
    fewer than ``minimum`` recordings."""
    if len(recordings) < minimum or every < 2:
        return []
    plain = [i for i, r in enumerate(recordings) if getattr(r, "reference", None) is None]
    return [i for n, i in enumerate(plain) if n % every == every - 1]


class HeldBackJudge:
    """Values candidate models on the held-back recordings (module docstring).

    ``base``: the model adapted (its confidence model judges); ``recordings``/``prons``: the
    held-back :class:`~aligner.alignment.adaptation.rounds.Recording` and their
    pronunciations (None for phones); ``frames``: ``callable(j)`` giving the MFCC frames
    (T, D) of held-back recording ``j``; ``judge``: ``"own"`` or ``"base"``; ``decode``:
    :func:`~aligner.alignment.adaptation.rounds.decode_recording`."""

    def __init__(self, base, recordings: Sequence, prons: Sequence, frames: Callable, judge: str = "own",
                 decode: Callable | None = None):
        if judge not in JUDGES:
            raise ValueError(f"judge must be one of {JUDGES}, got {judge!r}")
        if base.confidence is None:
            raise ValueError("the base model has no confidence model to judge with")
        self.base, self.recordings, self.prons, self.frames, self.judge = base, recordings, prons, frames, judge
        self.decode = decode
        self._base_scores: dict = {}
        self._values: dict = {}  # id(model) -> value, for the current model of a round
        self._boundaries: dict = {}  # held-back index -> boundaries of its first successful alignment

    def _scores_of_base(self, j: int, frames: np.ndarray) -> np.ndarray:
        if j not in self._base_scores:
            self._base_scores[j] = self.base.classifier.scores(frames)
        return self._base_scores[j]

    def value(self, model) -> tuple:
        """``(mean confidence (0-1) over the held-back boundaries, boundaries, recordings
        aligned)`` of ``model``'s alignments; the first phone start of each (1 by construction)
        is not counted. A recording that fails to align counts as confidence 0 for each of its
        boundaries (as first aligned) so that a candidate cannot gain by failing."""
        total, count, aligned = 0.0, 0, 0
        for j, (rec, prons) in enumerate(zip(self.recordings, self.prons)):
            frames = self.frames(j)
            scores = self._scores_of_base(j, frames) if model is self.base else model.classifier.scores(frames)
            try:
                classes, symbols, y, starts, conf, _, _ = self.decode(model, rec, frames, scores, prons)
            except AlignerError:
                count += self._boundaries.get(j, 0)  # confidence 0 for each of its boundaries
                continue
            if self.judge == "base" and model is not self.base:
                conf, _ = self.base.review(frames, self._scores_of_base(j, frames), classes, symbols, y, starts)
            if conf is None or len(conf) < 2:
                continue
            self._boundaries.setdefault(j, len(conf) - 1)
            total += float(np.sum(conf[1:]))
            count += len(conf) - 1
            aligned += 1
        return (total / count if count else float("nan")), count, aligned

    def choose(self, current, changes: dict, build: Callable) -> tuple:
        """``(chosen, record)``: for each re-estimated component ``name -> new value`` of
        ``changes`` (e.g. ``{"classifier": clf, "durations": stats}``), the new value if
        ``build({name: new})`` (the current model with that one component replaced) beats
        ``current`` on the held-back recordings by more than :data:`MIN_GAIN`, else None (keep
        the current one); ``record`` (JSON-able) holds the values and decisions."""
        key = id(current)
        if key not in self._values:
            self._values = {key: self.value(current)}
        v0, n0, _ = self._values[key]
        record = {"judge": self.judge, "held_back": len(self.recordings), "boundaries": n0,
                  "current_confidence": round(v0, 5), "components": {}}
        chosen = {}
        for name, new in changes.items():
            v, n, _ = self.value(build({name: new}))
            keep = bool(np.isfinite(v) and (not np.isfinite(v0) or v > v0 + MIN_GAIN))
            chosen[name] = new if keep else None
            record["components"][name] = {"confidence": round(v, 5), "kept": keep,
                                          "why": (f"held-back mean confidence {v0:.4f} -> {v:.4f} "
                                                  + ("(better: kept)" if keep else "(not better: the current one kept)"))}
        return chosen, record


def split_held_back(base, recordings: Sequence, prons_of: list, warps: dict, settings, frames_of: Callable,
                    decode: Callable) -> tuple:
    """``(recordings to re-estimate on, their prons, judge or None, why nothing is judged or
    None)``: with ``settings.keep_better``, the held-back recordings of
    :func:`held_back` go to a
    :class:`HeldBackJudge` and out of the re-estimation. ``frames_of(rec, warp, model)`` and
    ``decode``: :func:`~aligner.alignment.adaptation.rounds.frames_of` and ``decode_recording``."""
    if not settings.keep_better:
        return recordings, prons_of, None, None
    if base.confidence is None:
        return recordings, prons_of, None, {"why": "no confidence model to judge with: every change kept"}
    held = held_back(recordings)
    if not held:
        return recordings, prons_of, None, {"why": f"{len(recordings)} recordings, too few to hold any back: "
                                                   f"every change kept"}
    train = [i for i in range(len(recordings)) if i not in set(held)]
    kept_recs = [recordings[i] for i in held]
    cache: dict = {}

    def frames(j: int) -> np.ndarray:
        if j not in cache:
            rec = kept_recs[j]
            cache[j] = frames_of(rec, warps.get(rec.speaker, 1.0), base)
        return cache[j]

    judge = HeldBackJudge(base, kept_recs, [prons_of[i] for i in held], frames, settings.keep_judge, decode)
    return [recordings[i] for i in train], [prons_of[i] for i in train], judge, None
