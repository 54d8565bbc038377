"""Alignment metrics of SPEC section 5, and matching reference and hypothesis files.

Every boundary except the first phone's start is scored: for phones 2..K, the absolute
difference between the reference and predicted start times. Reported: % within 10, 20,
30 and 40 ms, the tau-insensitive loss (tau = 10 ms, in 10 ms frames, averaged per
utterance over its K phones, then over utterances), and mean and median absolute error
in milliseconds.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from aligner.frames import FRAME_MS
from aligner.io.corpus import files_by_stem
from aligner.errors import AlignerError
from aligner.io.transcripts import read_alignment

TOLERANCES_MS = (10, 20, 30, 40)


@dataclass
class AlignmentScores:
    """Boundary accuracy over a set of utterances."""

    n_utterances: int
    n_boundaries: int
    within_ms: dict = field(default_factory=dict)  #: tolerance (ms) -> % of boundaries within it
    tau_insensitive: float = float("nan")  #: mean tau-insensitive loss, frames (tau = 1 frame)
    mean_ms: float = float("nan")
    median_ms: float = float("nan")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["within_ms"] = {str(k): v for k, v in self.within_ms.items()}
        return d

    def format(self) -> str:
        within = "  ".join(f"<={t} ms: {self.within_ms[t]:.1f} %" for t in TOLERANCES_MS)
        return (f"{self.n_utterances} utterances, {self.n_boundaries} boundaries\n"
                f"{within}\n"
                f"tau-insensitive loss (tau = 10 ms): {self.tau_insensitive:.3f} frames\n"
                f"mean |error| {self.mean_ms:.1f} ms, median {self.median_ms:.1f} ms")


def boundary_errors_ms(ref_starts_s: np.ndarray, hyp_starts_s: np.ndarray) -> np.ndarray:
    """Absolute start-time errors (ms) of phones 2..K; the first phone's start is not a boundary."""
    ref = np.asarray(ref_starts_s, dtype=float)
    hyp = np.asarray(hyp_starts_s, dtype=float)
    if ref.shape != hyp.shape:
        raise ValueError(f"reference has {len(ref)} phones, hypothesis {len(hyp)}")
    return 1000.0 * np.abs(ref[1:] - hyp[1:])


def score_alignments(pairs: list) -> AlignmentScores:
    """Scores for a list of ``(ref_starts_s, hyp_starts_s)`` pairs (phone start times, seconds)."""
    errors, losses = [], []
    for ref, hyp in pairs:
        err = boundary_errors_ms(ref, hyp)
        errors.append(err)
        k = len(ref)
        losses.append(np.maximum(err / FRAME_MS - 1.0, 0.0).sum() / k)
    all_err = np.concatenate(errors) if errors else np.zeros(0)
    if all_err.size == 0:
        return AlignmentScores(len(pairs), 0, {t: float("nan") for t in TOLERANCES_MS})
    return AlignmentScores(
        n_utterances=len(pairs),
        n_boundaries=int(all_err.size),
        within_ms={t: float(100.0 * np.mean(all_err <= t + 1e-6)) for t in TOLERANCES_MS},
        tau_insensitive=float(np.mean(losses)),
        mean_ms=float(all_err.mean()),
        median_ms=float(np.median(all_err)),
    )


#: alignment files, a TextGrid preferred over a ``.phn`` of the same name
_ALIGNMENT_SUFFIXES = (".textgrid", ".phn")


def _same_labels(ref_labels: list, hyp_labels: list) -> bool:
    """True when two phone sequences name the same phones: equal symbols, or equal after mapping
    both to the 39 classes (a TIMIT-61 reference against a timit39 hypothesis)."""
    if [s.lower() for s in ref_labels] == [s.lower() for s in hyp_labels]:
        return True
    from aligner.phones.sets import get_phone_set

    try:
        ref_set, hyp_set = get_phone_set("auto", ref_labels), get_phone_set("auto", hyp_labels)
        return list(ref_set.class_indices(ref_labels)) == list(hyp_set.class_indices(hyp_labels))
    except AlignerError:
        return False


def evaluate_directories(ref_dir: str | os.PathLike, hyp_dir: str | os.PathLike,
                         allow_missing: bool = False) -> tuple:
    """Score every hypothesis file against the reference file of the same relative path.

    Returns ``(scores, problems)``: problems lists ``(path, message)`` for hypothesis files
    with no reference, whose phones differ from the reference's in number or in label, and
    (unless ``allow_missing``) reference files with no hypothesis.
    """
    ref_dir, hyp_dir = Path(ref_dir), Path(hyp_dir)
    for d in (ref_dir, hyp_dir):
        if not d.is_dir():
            raise AlignerError(f"{d}: not a directory")
    refs, hyps = files_by_stem(ref_dir, _ALIGNMENT_SUFFIXES), files_by_stem(hyp_dir, _ALIGNMENT_SUFFIXES)
    if not hyps:
        raise AlignerError(f"{hyp_dir}: no TextGrid or .phn files found")
    pairs, problems = [], []
    for key, hyp_path in sorted(hyps.items()):
        ref_path = refs.get(key)
        if ref_path is None:
            problems.append((hyp_path, "no reference file of the same relative path"))
            continue
        try:
            ref_starts, ref_labels = read_alignment(ref_path)
            hyp_starts, hyp_labels = read_alignment(hyp_path)
        except AlignerError as exc:
            problems.append((hyp_path, str(exc)))
            continue
        if len(ref_starts) != len(hyp_starts):
            problems.append((hyp_path, f"{len(hyp_starts)} phones, reference {ref_path} has "
                                       f"{len(ref_starts)}"))
            continue
        if not _same_labels(ref_labels, hyp_labels):
            k = next(i for i, (a, b) in enumerate(zip(ref_labels, hyp_labels)) if a.lower() != b.lower())
            problems.append((hyp_path, f"phone {k + 1} is {hyp_labels[k]!r}, reference {ref_path} has "
                                       f"{ref_labels[k]!r}"))
            continue
        pairs.append((ref_starts, hyp_starts))
    if not allow_missing:
        problems += [(path, "reference without a hypothesis of the same relative path (--allow-missing "
                            "to score only the hypotheses there are)")
                     for key, path in sorted(refs.items()) if key not in hyps]
    if not pairs:
        raise AlignerError(f"{hyp_dir}: no hypothesis file matched a reference in {ref_dir}")
    return score_alignments(pairs), problems
