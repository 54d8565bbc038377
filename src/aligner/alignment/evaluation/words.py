"""Word-level (and label-paired phone-level) alignment metrics, after FA-Bench's word track.

The phone metrics of :mod:`aligner.alignment.evaluation.phones` need the reference and hypothesis
to hold the same phones. Aligning from words breaks that: a dictionary pronunciation is not
what the transcriber heard, and a hypothesis may even hold different words. The definitions
here follow FA-Bench (olewave/fa-bench: ``fabench/score/{matched,word,segmentation}.py``),
re-implemented from their description:

**Pairing.** Each side's units (words, or phones mapped to the 39 classes) are lined up by a
monotonic global alignment of their labels (Needleman-Wunsch maximising
``2 * equal pairs - substitutions - deletions - insertions``, FA-Bench's weights; ties are
broken towards the diagonal, then towards a deletion). Aligned units whose labels are equal
are *paired*; aligned units with different labels are substitutions; unaligned reference
units are deletions, unaligned hypothesis units insertions. Rates are % of reference units
(so error rate = substitution + deletion + insertion rate, WER/PER). Word labels are compared
after :func:`normalize_word` (NFKC, case-folded, everything but letters and digits removed);
empty labels and the silence words of :data:`SILENCE_WORDS` are dropped before pairing.

**Edge errors.** Both edges of every paired unit are scored: ``|hyp.start - ref.start|`` and
``|hyp.end - ref.end|``, pooled over all paired units of all utterances (so an internal
boundary between two paired units counts twice). Reported: mean (MAE) and median in ms, and
the % within 10, 20 and 50 ms (inclusive, with 1 ns of float slack).

**Boundary F1** (label-agnostic, paired by time alone). Each side's boundary times are the
starts and ends of its units, with times closer than :data:`SAME_TIME_S` merged (so a unit's
end that is the next unit's start is one boundary). Reference and hypothesis boundaries are
matched one-to-one within 20 ms by a maximum matching (:func:`count_matched_boundaries`);
precision = matched / hypothesis boundaries, recall = matched / reference boundaries, pooled
over utterances (sums of counts, not a mean of ratios). An utterance a tool returned nothing
for keeps its reference boundaries in the recall denominator.

Two deliberate differences from FA-Bench's code: (1) its boundary set is the *start* of every
interval but the first (``style="onsets"`` here), which drops word ends before a pause and the
utterance's first and last edge; the default here (``style="edges"``) keeps them, since a
word's end before a pause is a boundary a user reads off the TextGrid. (2) FA-Bench matches
boundaries greedily in order of increasing distance, which is not always a maximum matching
(ref 0 and 15 ms, hyp 10 and 30 ms, 16 ms tolerance: closest-first pairs 15-10 and then
nothing, while 0-10 and 15-30 are both within tolerance); the sweep here is maximal.

Readers: reference words from TIMIT ``.wrd`` files (:func:`read_wrd`) and from a TextGrid's
``words`` tier (:func:`read_words_tier`; also MFA's multi-speaker ``<speaker> - words``);
phones from ``.phn`` and a TextGrid's ``phones`` tier (:func:`read_phone_intervals`).
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from aligner.errors import TranscriptError
from aligner.frames import SAMPLE_RATE
from aligner.io.textgrids import Interval, interval_tier, load_textgrid, tier_names
from aligner.io.transcripts import read_phn, read_sample_intervals
from aligner.phones.sets import SILENCE, PhoneSet, get_phone_set

__all__ = [
    "WORD_TOLERANCES_MS", "F1_TOLERANCE_MS", "SILENCE_WORDS", "SAME_TIME_S",
    "normalize_word", "align_labels", "Pairing", "pair_units", "pair_words", "pair_phones",
    "edge_errors_ms", "boundary_times", "count_matched_boundaries",
    "WordScores", "PhoneScores", "score_word_alignments", "score_phone_alignments",
    "read_wrd", "read_words_tier", "read_word_alignment", "read_phone_intervals",
]  # fmt: skip

#: Tolerances (ms) of the "% of edges within" figures.
WORD_TOLERANCES_MS = (10, 20, 50)
#: Tolerance (ms) of boundary precision/recall/F1.
F1_TOLERANCE_MS = 20
#: Word labels that mark silence or noise, not words (compared lower-cased): dropped by the
#: readers and before pairing. MFA writes ``<eps>`` (older versions ``sp``/``sil``), other
#: tools ``<sil>``, ``[sil]``, ``<s>`` and ``</s>``.
SILENCE_WORDS = frozenset({"", "sil", "sp", "spn", "<eps>", "<sil>", "[sil]", "<s>", "</s>",
                           "silence", "h#", "pau"})
#: Two boundary times closer than this (seconds) are one boundary.
SAME_TIME_S = 1e-6
#: Float slack (seconds) of the "within tolerance" comparisons, which are inclusive.
_SLACK_S = 1e-9

# Needleman-Wunsch scores (FA-Bench's): an equal pair beats a substitution plus anything,
# a substitution (-1) beats a deletion plus an insertion (-2).
_MATCH, _MISMATCH, _GAP = 2, -1, -1


# --------------------------------------------------------------------------------------------
# Pairing
# --------------------------------------------------------------------------------------------

_NOT_WORD_CHAR = re.compile(r"[\W_]+")


def normalize_word(label: str) -> str:
    """A word label as compared when pairing: NFKC, case-folded, only letters and digits kept
    (``"Don't,"`` -> ``"dont"``, ``"semi-heights"`` -> ``"semiheights"``)."""
    return _NOT_WORD_CHAR.sub("", unicodedata.normalize("NFKC", label).casefold())


def align_labels(ref: Sequence[str], hyp: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """A monotonic global alignment of two label sequences, as ``(ref_index, hyp_index)`` steps.

    ``(i, None)`` is a deletion, ``(None, j)`` an insertion, ``(i, j)`` a pair (equal labels)
    or a substitution. Maximises ``2 * equal - substituted - deleted - inserted``; ties go to
    the diagonal, then to a deletion. O(len(ref) * len(hyp)) time and memory.
    """
    n, m = len(ref), len(hyp)
    score = np.empty((n + 1, m + 1), dtype=np.int64)
    score[:, 0] = _GAP * np.arange(n + 1)
    score[0, :] = _GAP * np.arange(m + 1)
    for i in range(1, n + 1):
        r = ref[i - 1]
        prev, row = score[i - 1], score[i]
        for j in range(1, m + 1):
            diag = prev[j - 1] + (_MATCH if r == hyp[j - 1] else _MISMATCH)
            up = prev[j] + _GAP
            left = row[j - 1] + _GAP
            row[j] = max(diag, up, left)
    steps: list[tuple[int | None, int | None]] = []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and score[i, j] == score[i - 1, j - 1] + (
                _MATCH if ref[i - 1] == hyp[j - 1] else _MISMATCH):
            steps.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and score[i, j] == score[i - 1, j] + _GAP:
            steps.append((i - 1, None))
            i -= 1
        else:
            steps.append((None, j - 1))
            j -= 1
    steps.reverse()
    return steps


@dataclass
class Pairing:
    """The units of one utterance lined up: kept units, their compared labels and the counts."""

    ref: list  #: reference Intervals kept (silence and empty labels dropped)
    hyp: list  #: hypothesis Intervals kept
    ref_keys: list  #: the labels compared (normalised word, or 39-class phone)
    hyp_keys: list
    pairs: list  #: (ref_index, hyp_index) of the paired units (equal keys), into ref/hyp
    n_substituted: int
    n_deleted: int
    n_inserted: int


def pair_units(ref: Sequence[Interval], hyp: Sequence[Interval],
               ref_keys: Sequence[str], hyp_keys: Sequence[str]) -> Pairing:
    """Pair two unit sequences by their keys (see :func:`align_labels`)."""
    pairs, n_sub, n_del, n_ins = [], 0, 0, 0
    for i, j in align_labels(ref_keys, hyp_keys):
        if i is None:
            n_ins += 1
        elif j is None:
            n_del += 1
        elif ref_keys[i] == hyp_keys[j]:
            pairs.append((i, j))
        else:
            n_sub += 1
    return Pairing(list(ref), list(hyp), list(ref_keys), list(hyp_keys), pairs, n_sub, n_del, n_ins)


def _as_intervals(units: Iterable, what: str) -> list[Interval]:
    out = []
    for k, u in enumerate(units, start=1):
        try:
            start, end, label = u
            start, end = float(start), float(end)
        except (TypeError, ValueError):
            raise ValueError(f"{what} {k}: expected (start_s, end_s, label), got {u!r:.80}") from None
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise ValueError(f"{what} {k}: bad times {start} .. {end} s")
        out.append(Interval(start, end, str(label)))
    return out


def pair_words(ref_words: Iterable, hyp_words: Iterable) -> Pairing:
    """Pair the words of one utterance. Each word is ``(start_s, end_s, label)``; silence words
    (:data:`SILENCE_WORDS`) and labels that normalise to nothing are dropped first."""
    def keep(words, what):
        kept = [w for w in _as_intervals(words, what)
                if w.label.strip().lower() not in SILENCE_WORDS and normalize_word(w.label)]
        return kept, [normalize_word(w.label) for w in kept]

    ref, ref_keys = keep(ref_words, "reference word")
    hyp, hyp_keys = keep(hyp_words, "hypothesis word")
    return pair_units(ref, hyp, ref_keys, hyp_keys)


def _phone_set_of(labels: list[str], phone_set, source: str) -> PhoneSet:
    if isinstance(phone_set, PhoneSet):
        return phone_set
    return get_phone_set(phone_set, labels, source)


def pair_phones(ref_phones: Iterable, hyp_phones: Iterable, ref_phone_set="auto",
                hyp_phone_set="auto", keep_silence: bool = False) -> Pairing:
    """Pair the phones of one utterance after mapping both sides to the 39 classes.

    ``ref_phone_set``/``hyp_phone_set``: a :class:`PhoneSet` or a name for
    :func:`aligner.phones.sets.get_phone_set` (``"auto"`` detects it from the labels: TIMIT-61,
    ARPAbet with or without stress digits, or the 39 classes). Phones of the silence class
    (``h#``, ``pau``, ``epi``, ``sil``, ``sp``) are dropped unless ``keep_silence``; empty
    labels always are.

    TIMIT closures (``dcl``...) also fold to ``sil`` in the 39 classes, so a raw TIMIT
    reference loses its closures with the silences; convert it with
    :func:`aligner.alignment.evaluation.references.arpabet_reference` first, which gives each closure to
    its stop. Raises :class:`TranscriptError` for a label in no phone set.
    """
    def keep(phones, phone_set, what):
        units = [p for p in _as_intervals(phones, what) if p.label.strip()]
        if not units:
            return [], []
        pset = _phone_set_of([p.label for p in units], phone_set, f"{what}s")
        keys = [pset.class_of(p.label) for p in units]
        kept = [(p, k) for p, k in zip(units, keys) if keep_silence or k != SILENCE]
        return [p for p, _ in kept], [k for _, k in kept]

    ref, ref_keys = keep(ref_phones, ref_phone_set, "reference phone")
    hyp, hyp_keys = keep(hyp_phones, hyp_phone_set, "hypothesis phone")
    return pair_units(ref, hyp, ref_keys, hyp_keys)


# --------------------------------------------------------------------------------------------
# Edge errors and boundary matching
# --------------------------------------------------------------------------------------------

def edge_errors_ms(pairing: Pairing) -> np.ndarray:
    """``|Δstart|`` and ``|Δend|`` (ms) of every paired unit: shape (2 * n_pairs,), start then
    end of each pair."""
    out = np.empty(2 * len(pairing.pairs), dtype=float)
    for k, (i, j) in enumerate(pairing.pairs):
        r, h = pairing.ref[i], pairing.hyp[j]
        out[2 * k] = abs(h.start_s - r.start_s)
        out[2 * k + 1] = abs(h.end_s - r.end_s)
    return 1000.0 * out


BOUNDARY_STYLES = ("edges", "onsets")


def boundary_times(units: Sequence[Interval], style: str = "edges") -> np.ndarray:
    """The sorted, distinct boundary times (seconds) of a unit sequence.

    ``style="edges"``: every unit's start and end, times within :data:`SAME_TIME_S` merged.
    ``style="onsets"``: FA-Bench's set, the start of every unit but the first (in time order).
    """
    if style == "edges":
        times = [t for u in units for t in (u[0], u[1])]
    elif style == "onsets":
        times = sorted(float(u[0]) for u in units)[1:]
    else:
        raise ValueError(f"boundary style must be one of {BOUNDARY_STYLES}, got {style!r}")
    times = np.sort(np.asarray(times, dtype=float))
    if times.size == 0:
        return times
    keep = np.ones(times.size, dtype=bool)
    last = times[0]
    for k in range(1, times.size):  # merge chains against the last kept time
        if times[k] - last <= SAME_TIME_S:
            keep[k] = False
        else:
            last = times[k]
    return times[keep]


def count_matched_boundaries(ref_s: Sequence[float], hyp_s: Sequence[float],
                             tolerance_s: float = F1_TOLERANCE_MS / 1000.0) -> int:
    """The size of a maximum one-to-one matching of reference and hypothesis times, a pair
    being allowed when its times differ by at most ``tolerance_s`` (inclusive).

    A sweep in time order: if the earliest remaining point of either side is within tolerance
    of the earliest remaining point of the other, pair them, else drop the earlier of the two.
    This is optimal: say the earliest point overall is reference time r (symmetric for a
    hypothesis time) and the earliest hypothesis time h. If h > r + tol, no hypothesis time can
    pair with r, so dropping r loses nothing. Otherwise some maximum matching pairs r with h:
    take any maximum matching M; if r or h is unpaired in M, re-pair the other's partner with
    it; if M has (r, h') and (r', h), then r <= h <= h' <= r + tol <= r' + tol and
    r' <= h + tol <= h' + tol, so (r', h') is allowed and swapping keeps the size. Induction
    on the remaining points finishes the proof. O((n + m) log(n + m)).
    """
    ref = np.sort(np.asarray(ref_s, dtype=float))
    hyp = np.sort(np.asarray(hyp_s, dtype=float))
    tol = float(tolerance_s) + _SLACK_S
    i = j = matched = 0
    while i < ref.size and j < hyp.size:
        if abs(ref[i] - hyp[j]) <= tol:
            matched += 1
            i += 1
            j += 1
        elif ref[i] < hyp[j]:
            i += 1
        else:
            j += 1
    return matched


# --------------------------------------------------------------------------------------------
# Pooled scores
# --------------------------------------------------------------------------------------------

def _pct(num: float, den: float) -> float:
    return 100.0 * num / den if den else float("nan")


@dataclass
class WordScores:
    """Pooled word-alignment accuracy over a set of utterances (see the module docstring)."""

    unit: str  #: "word" or "phone"
    n_utterances: int
    n_ref: int  #: reference units (words or phones) after dropping silences
    n_hyp: int
    n_paired: int
    n_substituted: int
    n_deleted: int
    n_inserted: int
    n_edges: int  #: scored edges = 2 * n_paired
    mean_ms: float = float("nan")  #: MAE over both edges of every paired unit
    median_ms: float = float("nan")
    within_ms: dict = field(default_factory=dict)  #: tolerance (ms) -> % of edges within it
    boundary_style: str = "edges"
    f1_tolerance_ms: float = F1_TOLERANCE_MS
    n_ref_boundaries: int = 0
    n_hyp_boundaries: int = 0
    n_matched_boundaries: int = 0

    @property
    def substitution_rate(self) -> float:
        """Substituted units, % of reference units."""
        return _pct(self.n_substituted, self.n_ref)

    @property
    def deletion_rate(self) -> float:
        return _pct(self.n_deleted, self.n_ref)

    @property
    def insertion_rate(self) -> float:
        """Inserted units, % of reference units (the WER/PER convention)."""
        return _pct(self.n_inserted, self.n_ref)

    @property
    def error_rate(self) -> float:
        """(substituted + deleted + inserted) / reference units, % (WER or PER)."""
        return _pct(self.n_substituted + self.n_deleted + self.n_inserted, self.n_ref)

    @property
    def precision(self) -> float:
        """Matched boundaries, % of hypothesis boundaries."""
        return _pct(self.n_matched_boundaries, self.n_hyp_boundaries)

    @property
    def recall(self) -> float:
        """Matched boundaries, % of reference boundaries."""
        return _pct(self.n_matched_boundaries, self.n_ref_boundaries)

    @property
    def f1(self) -> float:
        """Boundary F1 (%) at :attr:`f1_tolerance_ms`: 0 when nothing matched, NaN with no
        boundaries on either side."""
        if not (self.n_ref_boundaries or self.n_hyp_boundaries):
            return float("nan")
        return _pct(2 * self.n_matched_boundaries, self.n_ref_boundaries + self.n_hyp_boundaries)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["within_ms"] = {str(k): v for k, v in self.within_ms.items()}
        for name in ("substitution_rate", "deletion_rate", "insertion_rate", "error_rate",
                     "precision", "recall", "f1"):
            d[name] = getattr(self, name)
        return d

    def format(self) -> str:
        er = "WER" if self.unit == "word" else "PER"
        within = "  ".join(f"<={t} ms: {v:.1f} %" for t, v in self.within_ms.items())
        return (f"{self.n_utterances} utterances, {self.n_ref} reference {self.unit}s, "
                f"{self.n_hyp} hypothesis {self.unit}s, {self.n_paired} paired\n"
                f"{er} {self.error_rate:.1f} % (substituted {self.substitution_rate:.1f} %, "
                f"deleted {self.deletion_rate:.1f} %, inserted {self.insertion_rate:.1f} %)\n"
                f"edges of paired {self.unit}s ({self.n_edges}): mean |error| {self.mean_ms:.1f} ms, "
                f"median {self.median_ms:.1f} ms\n"
                f"{within}\n"
                f"boundaries ({self.boundary_style}) within {self.f1_tolerance_ms:g} ms: "
                f"precision {self.precision:.1f} %, recall {self.recall:.1f} %, F1 {self.f1:.1f} % "
                f"({self.n_matched_boundaries} matched of {self.n_ref_boundaries} reference, "
                f"{self.n_hyp_boundaries} hypothesis)")


#: The same figures for phones (``unit == "phone"``).
PhoneScores = WordScores


def _pool(unit: str, pairings: list[Pairing], tolerances_ms, f1_tolerance_ms: float,
          boundary_style: str) -> WordScores:
    errors = [edge_errors_ms(p) for p in pairings]
    err = np.concatenate(errors) if errors else np.zeros(0)
    n_ref_b = n_hyp_b = n_match_b = 0
    for p in pairings:
        rb, hb = boundary_times(p.ref, boundary_style), boundary_times(p.hyp, boundary_style)
        n_ref_b += rb.size
        n_hyp_b += hb.size
        n_match_b += count_matched_boundaries(rb, hb, f1_tolerance_ms / 1000.0)
    return WordScores(
        unit=unit,
        n_utterances=len(pairings),
        n_ref=sum(len(p.ref) for p in pairings),
        n_hyp=sum(len(p.hyp) for p in pairings),
        n_paired=sum(len(p.pairs) for p in pairings),
        n_substituted=sum(p.n_substituted for p in pairings),
        n_deleted=sum(p.n_deleted for p in pairings),
        n_inserted=sum(p.n_inserted for p in pairings),
        n_edges=int(err.size),
        mean_ms=float(err.mean()) if err.size else float("nan"),
        median_ms=float(np.median(err)) if err.size else float("nan"),
        within_ms={t: float(100.0 * np.mean(err <= t + 1e3 * _SLACK_S)) if err.size else float("nan")
                   for t in tolerances_ms},
        boundary_style=boundary_style,
        f1_tolerance_ms=f1_tolerance_ms,
        n_ref_boundaries=n_ref_b,
        n_hyp_boundaries=n_hyp_b,
        n_matched_boundaries=n_match_b,
    )


def score_word_alignments(pairs: Iterable, tolerances_ms: Sequence[float] = WORD_TOLERANCES_MS,
                          f1_tolerance_ms: float = F1_TOLERANCE_MS,
                          boundary_style: str = "edges") -> WordScores:
    """Pooled word scores of ``(ref_words, hyp_words)`` pairs, one per utterance; each word is
    ``(start_s, end_s, label)`` (e.g. an :class:`Interval`). A hypothesis may be empty (the tool
    returned nothing): its reference words count as deletions and missed boundaries."""
    if boundary_style not in BOUNDARY_STYLES:
        raise ValueError(f"boundary style must be one of {BOUNDARY_STYLES}, got {boundary_style!r}")
    pairings = [pair_words(ref, hyp) for ref, hyp in pairs]
    return _pool("word", pairings, tolerances_ms, f1_tolerance_ms, boundary_style)


def score_phone_alignments(pairs: Iterable, ref_phone_set="auto", hyp_phone_set="auto",
                           keep_silence: bool = False,
                           tolerances_ms: Sequence[float] = WORD_TOLERANCES_MS,
                           f1_tolerance_ms: float = F1_TOLERANCE_MS,
                           boundary_style: str = "edges") -> WordScores:
    """Pooled phone scores of ``(ref_phones, hyp_phones)`` pairs, paired by
    :func:`pair_phones` on the 39 classes (silences dropped unless ``keep_silence``)."""
    if boundary_style not in BOUNDARY_STYLES:
        raise ValueError(f"boundary style must be one of {BOUNDARY_STYLES}, got {boundary_style!r}")
    pairings = [pair_phones(ref, hyp, ref_phone_set, hyp_phone_set, keep_silence)
                for ref, hyp in pairs]
    return _pool("phone", pairings, tolerances_ms, f1_tolerance_ms, boundary_style)


# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------

def read_wrd(path: str | os.PathLike, sample_rate: int = SAMPLE_RATE) -> list[Interval]:
    """The words of a TIMIT ``.wrd`` file as Intervals in seconds.

    Each non-blank line is ``start_sample end_sample word`` (``sample_rate`` Hz, end
    exclusive); silence between words is implicit. Words may overlap (TIMIT has a few), but
    must start in order. Silence labels (:data:`SILENCE_WORDS`) are skipped. Raises
    :class:`TranscriptError` naming the file and line for a missing, empty or malformed file.
    """
    starts, ends, labels = read_sample_intervals(path, "word alignment (.wrd)", "word")
    out = [Interval(s / sample_rate, e / sample_rate, label)
           for s, e, label in zip(starts.tolist(), ends.tolist(), labels) if label.lower() not in SILENCE_WORDS]
    if not out:
        raise TranscriptError(f"{path}: word alignment (.wrd) holds no words")
    return out


def _find_tier(path: Path, grid, kind: str, tier: str | None) -> str:
    """The name of the interval tier to read: ``tier`` if given, else ``kind`` (any case; or its
    singular, ``word``/``phone``), else the one tier named ``<speaker> - <kind>``."""
    names = tier_names(grid, interval=True)
    if tier is not None:
        return tier
    for spelling in (kind, kind.rstrip("s")):  # ``words``/``phones``, or as some corpora write them, ``word``/``phone``
        exact = [n for n in names if n.strip().lower() == spelling]
        if exact:
            return exact[0]
    suffixed = [n for n in names if n.strip().lower().endswith(f" - {kind}")]
    if len(suffixed) == 1:
        return suffixed[0]
    if len(suffixed) > 1:
        raise TranscriptError(f"{path}: several speakers' {kind} tiers "
                              f"({', '.join(map(repr, suffixed))}); name the tier to read")
    return kind  # not there: interval_tier raises, listing the tiers the file has


def _read_tier(path, kind: str, tier: str | None) -> list[Interval]:
    path = Path(path)
    grid = load_textgrid(path)
    name = _find_tier(path, grid, kind, tier)
    return [Interval(iv.start_s, iv.end_s, iv.label.strip())
            for iv in interval_tier(grid, path, name)
            if iv.label.strip().lower() not in SILENCE_WORDS]


def read_words_tier(path: str | os.PathLike, tier: str | None = None) -> list[Interval]:
    """The words of a TextGrid: its ``words`` tier (any case), else its one ``<speaker> - words``
    tier (MFA's multi-speaker naming), or the tier named ``tier``. Empty intervals and silence
    labels (:data:`SILENCE_WORDS`) are skipped. Raises :class:`TranscriptError` naming the
    file for a missing or unreadable file, no such tier, or a tier with no words."""
    words = _read_tier(path, "words", tier)
    if not words:
        raise TranscriptError(f"{path}: words tier holds no words")
    return words


def read_word_alignment(path: str | os.PathLike, sample_rate: int = SAMPLE_RATE) -> list[Interval]:
    """Words of a TIMIT ``.wrd`` file or of a TextGrid (chosen by the suffix)."""
    if Path(path).suffix.lower() == ".wrd":
        return read_wrd(path, sample_rate)
    return read_words_tier(path)


def read_phone_intervals(path: str | os.PathLike, sample_rate: int = SAMPLE_RATE,
                         tier: str | None = None) -> list[Interval]:
    """Phones (with silences) of a TIMIT ``.phn`` file or of a TextGrid's ``phones`` tier (or
    ``<speaker> - phones``), as Intervals in seconds; empty intervals skipped."""
    if Path(path).suffix.lower() == ".phn":
        starts, ends, labels = read_phn(path)
        return [Interval(s / sample_rate, e / sample_rate, lab)
                for s, e, lab in zip(starts.tolist(), ends.tolist(), labels)]
    path = Path(path)
    grid = load_textgrid(path)
    name = _find_tier(path, grid, "phones", tier)
    phones = [Interval(iv.start_s, iv.end_s, iv.label.strip())
              for iv in interval_tier(grid, path, name) if iv.label.strip()]
    if not phones:
        raise TranscriptError(f"{path}: tier {name!r} holds no phones")
    return phones


# --------------------------------------------------------------------------------------------
# Directories (``aligner evaluate`` on words)

def _reference_phones(path: Path) -> list[Interval]:
    """A reference's phones; a TIMIT ``.phn`` rewritten as an ARPAbet dictionary writes it
    (:func:`aligner.alignment.evaluation.references.arpabet_reference`)."""
    from aligner.alignment.evaluation.references import arpabet_reference

    phones = read_phone_intervals(path)
    if path.suffix.lower() != ".phn":
        return phones
    starts, labels = arpabet_reference([p.start_s for p in phones], [p.label for p in phones])
    ends = list(starts[1:]) + [phones[-1].end_s]
    return [Interval(float(s), float(e), lab) for s, e, lab in zip(starts, ends, labels)]


def evaluate_word_directories(ref_dir, hyp_dir, allow_missing: bool = False) -> tuple:
    """Score the words (and phones) tiers of the TextGrids in ``hyp_dir`` against the references
    of the same relative path in ``ref_dir``: TIMIT ``.wrd`` (and ``.phn``) files, or TextGrids
    with ``words`` (and ``phones``) tiers.

    Returns ``(word_scores, phone_scores, problems)``; ``phone_scores`` is None when no
    reference has phones; ``problems`` lists ``(path, message)`` for unreadable files and for
    references with no hypothesis (unless ``allow_missing``) or hypotheses with no reference.
    """
    from aligner.errors import AlignerError

    from aligner.io.corpus import files_by_stem, files_under

    ref_dir, hyp_dir = Path(ref_dir), Path(hyp_dir)
    ref_files = files_under(ref_dir)  # walked once for both kinds of reference
    refs = files_by_stem(ref_dir, (".wrd", ".textgrid"), ref_files)
    ref_phones = files_by_stem(ref_dir, (".phn", ".textgrid"), ref_files)
    hyps = files_by_stem(hyp_dir, (".textgrid",))
    if not hyps:
        raise AlignerError(f"{hyp_dir}: no TextGrid files found")
    word_pairs, phone_pairs, problems = [], [], []
    for key, hyp_path in sorted(hyps.items()):
        ref_path = refs.get(key)
        if ref_path is None:
            problems.append((hyp_path, "no reference .wrd or TextGrid of the same relative path"))
            continue
        try:
            word_pairs.append((read_word_alignment(ref_path), read_words_tier(hyp_path)))
            if key in ref_phones:
                phone_pairs.append((_reference_phones(ref_phones[key]), read_phone_intervals(hyp_path)))
        except AlignerError as exc:
            problems.append((hyp_path, str(exc)))
    if not allow_missing:
        problems += [(path, "reference without a hypothesis of the same relative path")
                     for key, path in sorted(refs.items()) if key not in hyps]
    if not word_pairs:
        raise AlignerError(f"{hyp_dir}: no hypothesis words tier matched a reference in {ref_dir}")
    phones = score_phone_alignments(phone_pairs) if phone_pairs else None
    return score_word_alignments(word_pairs), phones, problems
