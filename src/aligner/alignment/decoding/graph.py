"""Pronunciation graphs: the phone sequences a words transcript allows, as a DAG numba can read.

Aligning from words (SPEC section 6) leaves two choices to the decoder: one pronunciation
among the alternatives of every word (``the`` = DH AH0 | DH IY0; ``either`` with 3 or 4
phones) and a pause (silence) or none between words, before the first and after the last.
Both are edges of one graph:

* a **node** is one phone: its class (a column of the classifier's scores), duration mean,
  std and longest length in frames, and its symbol;
* an **edge** ``m -> n`` says phone ``n`` may follow phone ``m``; nodes are numbered in
  topological order (every predecessor of ``n`` has a smaller index), so the segmental DP
  (:mod:`aligner.alignment.decoding.graph_task`) visits them in index order;
* **start** nodes may begin the utterance (at frame 0), **final** nodes may end it (at T);
* an **any-length** node (``flat_log_density`` not NaN) has no preferred duration: its log
  duration density is that constant for every length from 1 frame to its longest (instead of
  the Gaussian of its mean and std; :func:`~aligner.alignment.decoding.graph_task.make_graph_input`).
  The silence at a recording's edges is one: it lasts however long the recording was cut to
  leave, and none at all is a path too.

A path from a start node to a final node is one phone sequence. The arrays are flat (CSR
predecessor lists ``pred_ptr``/``pred_idx``) so the numba DP reads them directly.

Word bookkeeping. A graph built by :func:`build_word_graph` has ``n_words`` word slots and
every path passes through every slot exactly once, in order, by one of its alternatives;
``word_start[n]`` is the word whose first phone node ``n`` is (-1 otherwise), so the start
times of the words exist on every path (:mod:`aligner.alignment.decoding.graph_task` scores them).
``word[n]`` and ``alt[n]`` name the slot and alternative of a word's phone (-1 for pauses);
``pause_slot[n]`` the gap of a pause node: 0 before the first word, i (1 .. W-1) between
words i-1 and i, W after the last (-1 for word phones). :meth:`PhoneGraph.check_words`
verifies the word property for a hand-made graph.

Building from a dictionary's pronunciations::

    stats = lambda classes, labels: model.durations.for_phones(classes, labels)
    g = build_word_graph([[the_1, the_2], [cat]], pause=sil_segment, stats=stats)

where an alternative is a :class:`Segment` or a sequence of class indices (then ``stats``
gives their duration statistics), and ``pause`` a one-phone :class:`Segment` of the silence
class. Identical alternatives of a word (same classes and statistics, e.g. two dictionary
variants differing in stress only) are kept once: they would tie. With ``before_pause``, an
alternative followed by a possible pause ends in two nodes of its last phone after the same
phones: one with its own statistics leading on to the next word, one with the statistics of a
phone before a pause leading into the pause.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Sequence

import numpy as np
from numba import njit

#: modes of a pause slot
PAUSE_MODES = ("optional", "required", "none")


@dataclass(frozen=True)
class Segment:
    """A phone sequence with its duration statistics (frames), one entry per phone."""

    classes: tuple
    mean: tuple
    std: tuple
    max_frames: tuple
    labels: tuple = ()
    #: None, or every phone's log duration density for any length (an any-length node, module docstring)
    flat_log_density: float | None = None
    #: added to a path's score where it takes this segment (its first node's ``node_bonus``)
    bonus: float = 0.0
    #: its first phone is the previous word's last, said once (degemination, "this staff"): the
    #: graph takes it as that word's last phone, lasting as long as the two together, and this
    #: word from its second phone on, with no pause between (:func:`build_word_graph`)
    merges_first: bool = False

    @classmethod
    def make(cls, classes, mean, std, max_frames, labels=None, flat_log_density: float | None = None,
             bonus: float = 0.0) -> "Segment":
        classes = tuple(int(c) for c in np.asarray(classes, np.int64).reshape(-1))
        k = len(classes)
        mean = tuple(float(v) for v in np.broadcast_to(np.asarray(mean, float), (k,)))
        std = tuple(float(v) for v in np.broadcast_to(np.asarray(std, float), (k,)))
        mx = tuple(int(v) for v in np.broadcast_to(np.asarray(max_frames, np.int64), (k,)))
        labels = tuple(str(s) for s in labels) if labels is not None else tuple(str(c) for c in classes)
        if len(labels) != k:
            raise ValueError(f"segment: {k} phones but {len(labels)} labels")
        flat = None if flat_log_density is None else float(flat_log_density)
        if flat is not None and not np.isfinite(flat):
            raise ValueError(f"segment: flat_log_density must be finite, got {flat}")
        return cls(classes, mean, std, mx, labels, flat, float(bonus))

    def __len__(self) -> int:
        return len(self.classes)


@dataclass(frozen=True, eq=False)
class PhoneGraph:
    """A DAG of phone nodes in topological order (module docstring). All arrays have one
    entry per node (N) except ``pred_ptr`` (N+1) and ``pred_idx`` (E, the edges)."""

    classes: np.ndarray  #: (N,) int64 class index
    dur_mean: np.ndarray  #: (N,) float64 frames
    dur_std: np.ndarray  #: (N,) float64 frames
    max_frames: np.ndarray  #: (N,) int64 frames
    pred_ptr: np.ndarray  #: (N+1,) int64: predecessors of n are pred_idx[pred_ptr[n]:pred_ptr[n+1]]
    pred_idx: np.ndarray  #: (E,) int64
    is_start: np.ndarray  #: (N,) bool
    is_final: np.ndarray  #: (N,) bool
    is_pause: np.ndarray  #: (N,) bool
    word: np.ndarray  #: (N,) int64 word slot of a word phone, -1 for a pause
    alt: np.ndarray  #: (N,) int64 alternative index within the word, -1 for a pause
    word_start: np.ndarray  #: (N,) int64 word whose first phone this is, else -1
    pause_slot: np.ndarray  #: (N,) int64 gap of a pause (0 .. W), -1 for a word phone
    labels: tuple  #: (N,) symbols
    n_words: int
    #: (N,) float64 log duration density of an any-length node, NaN for the others (module
    #: docstring); None: no any-length node
    flat_log_density: np.ndarray | None = None
    #: (N,) float64 added to a path's score where it passes the node (a pronunciation's prior,
    #: in the units of the decoder's phone bonus); None: zeros
    node_bonus: np.ndarray | None = None

    def __post_init__(self):
        N = len(self.classes)
        flat = np.full(N, np.nan) if self.flat_log_density is None else np.asarray(self.flat_log_density, np.float64)
        object.__setattr__(self, "flat_log_density", flat)
        bonus = np.zeros(N) if self.node_bonus is None else np.asarray(self.node_bonus, np.float64)
        object.__setattr__(self, "node_bonus", bonus)
        for name in ("dur_mean", "dur_std", "max_frames", "is_start", "is_final", "is_pause",
                     "word", "alt", "word_start", "pause_slot", "flat_log_density", "node_bonus"):
            if getattr(self, name).shape != (N,):
                raise ValueError(f"phone graph: {name} must have one entry per node ({N})")
        if N == 0:
            raise ValueError("phone graph: no nodes")
        if self.pred_ptr.shape != (N + 1,) or self.pred_ptr[0] != 0 or self.pred_ptr[-1] != len(self.pred_idx):
            raise ValueError("phone graph: malformed pred_ptr")
        if np.any(np.diff(self.pred_ptr) < 0):
            raise ValueError("phone graph: pred_ptr must not decrease")
        node_of_edge = np.repeat(np.arange(N), np.diff(self.pred_ptr))
        bad = (self.pred_idx < 0) | (self.pred_idx >= node_of_edge)
        if bad.any():
            n = int(node_of_edge[np.argmax(bad)])
            raise ValueError(f"phone graph: node {n} has a predecessor not before it (topological order)")
        edge_key = node_of_edge * N + self.pred_idx
        unique_keys, counts = np.unique(edge_key, return_counts=True)
        if np.any(counts > 1):
            n = int(unique_keys[np.argmax(counts > 1)] // N)
            raise ValueError(f"phone graph: node {n} lists a predecessor twice")
        if not self.is_start.any() or not self.is_final.any():
            raise ValueError("phone graph: needs at least one start and one final node")
        if np.any(self.max_frames < 1):
            raise ValueError("phone graph: max_frames must be >= 1")
        if len(self.labels) != N:
            raise ValueError("phone graph: one label per node")

    # -- structure ---------------------------------------------------------------------
    @property
    def any_length(self) -> np.ndarray:
        """(N,) bool: the any-length nodes (module docstring)."""
        return ~np.isnan(self.flat_log_density)

    @property
    def n_nodes(self) -> int:
        return len(self.classes)

    @property
    def n_edges(self) -> int:
        return len(self.pred_idx)

    def preds(self, n: int) -> np.ndarray:
        return self.pred_idx[self.pred_ptr[n]:self.pred_ptr[n + 1]]

    def successors(self) -> list:
        """``succ[m]``: the nodes that may follow m (lists, ascending)."""
        succ = [[] for _ in range(self.n_nodes)]
        for n in range(self.n_nodes):
            for m in self.preds(n):
                succ[int(m)].append(n)
        return succ

    def paths(self) -> Iterator[np.ndarray]:
        """Every start-to-final node path (exponential: for tests and small graphs)."""
        succ = self.successors()

        def walk(prefix):
            n = prefix[-1]
            if self.is_final[n]:
                yield np.array(prefix, np.int64)
            for q in succ[n]:
                yield from walk(prefix + [q])

        for n in np.flatnonzero(self.is_start):
            yield from walk([int(n)])

    def phone_count_range(self) -> tuple:
        """(fewest, most) phones on a start-to-final path."""
        lo, hi = _phone_counts(self.pred_ptr, self.pred_idx, self.is_start)
        fin = self.is_final & (hi >= 1)
        if not fin.any():
            raise ValueError("phone graph: no path from a start node to a final node")
        return int(lo[fin].min()), int(hi[fin].max())

    def check_words(self) -> None:
        """Raise ``ValueError`` unless every path starts the words 0 .. W-1 once each, in order.

        Forward pass: the number of words started before node n must be the same on every
        path reaching n (a 'level'); a word-start node of word w needs level w; final nodes
        level W after them.
        """
        level = np.full(self.n_nodes, -1, np.int64)  # words started up to and including n
        for n in range(self.n_nodes):
            before = set(int(level[m]) for m in self.preds(n) if level[m] >= 0)
            if self.is_start[n]:
                before.add(0)
            if not before:
                continue  # unreachable node
            if len(before) != 1:
                raise ValueError(f"phone graph: paths reach node {n} having started different numbers of words")
            (b,) = before
            w = int(self.word_start[n])
            if w >= 0:
                if w != b:
                    raise ValueError(f"phone graph: node {n} starts word {w} after {b} words")
                b += 1
            level[n] = b
        fin = self.is_final & (level >= 0)
        if np.any(level[fin] != self.n_words):
            raise ValueError("phone graph: a path ends before starting every word")

    # -- paths -------------------------------------------------------------------------
    def is_path(self, nodes) -> bool:
        nodes = np.asarray(nodes, np.int64)
        if nodes.ndim != 1 or len(nodes) == 0 or np.any(nodes < 0) or np.any(nodes >= self.n_nodes):
            return False
        if not self.is_start[nodes[0]] or not self.is_final[nodes[-1]]:
            return False
        return all(int(a) in set(self.preds(int(b)).tolist()) for a, b in zip(nodes[:-1], nodes[1:]))

    def path_of(self, alternatives: Sequence[int], pauses: Sequence[bool] | dict) -> np.ndarray:
        """The node path choosing alternative ``alternatives[i]`` of word i and the pauses of
        gaps where ``pauses[g]`` is true (g = 0 .. W, see the module docstring; a dict
        ``{gap: bool}`` or a sequence of W+1 booleans). Required pauses are taken regardless;
        raises ``ValueError`` for a choice the graph does not hold."""
        if not isinstance(pauses, dict):
            pauses = {g: bool(v) for g, v in enumerate(pauses)}
        out = []
        for g in range(self.n_words + 1):
            cand = np.flatnonzero(self.pause_slot == g)
            if len(cand) and (pauses.get(g, False) or not self._pause_optional(g)):
                out.append(int(cand[0]))
            if g < self.n_words:
                nodes = np.flatnonzero((self.word == g) & (self.alt == int(alternatives[g])))
                if not len(nodes):
                    raise ValueError(f"word {g} has no alternative {alternatives[g]}")
                out.extend(int(n) for n in nodes)
        path = np.array(out, np.int64)
        if not self.is_path(path):
            raise ValueError("the choice is not a path of the graph")
        return path

    def _pause_optional(self, g: int) -> bool:
        cand = np.flatnonzero(self.pause_slot == g)
        if not len(cand):
            return True
        p = int(cand[0])
        # optional iff some node after it has a predecessor before it (the pause can be skipped)
        # or, at the edges, a non-pause node is a start/final node.
        if g == 0:
            return bool(np.any(self.is_start & ~self.is_pause))
        if g == self.n_words:
            return bool(np.any(self.is_final & ~self.is_pause))
        return any(np.any(self.preds(n) < p) for n in range(p + 1, self.n_nodes) if self.word_start[n] == g)


@njit(cache=True, nogil=True)
def _phone_counts(pred_ptr, pred_idx, is_start):
    """Per node, the fewest and most phones on a path from a start node up to it (-1: none)."""
    N = pred_ptr.shape[0] - 1
    never = np.iinfo(np.int64).max // 2
    lo = np.full(N, never, np.int64)
    hi = np.full(N, -1, np.int64)
    for n in range(N):
        if is_start[n]:
            lo[n] = 1
            hi[n] = 1
        for i in range(pred_ptr[n], pred_ptr[n + 1]):
            m = pred_idx[i]
            if hi[m] >= 1:
                lo[n] = min(lo[n], lo[m] + 1)
                hi[n] = max(hi[n], hi[m] + 1)
    return lo, hi


def _as_segment(alt, stats: Callable | None) -> Segment:
    if isinstance(alt, Segment):
        return alt
    classes = np.asarray(alt, np.int64).reshape(-1)
    if stats is None:
        raise ValueError("alternatives given as class indices need `stats` for their duration statistics")
    mean, std, mx = stats(classes, None)
    return Segment.make(classes, mean, std, mx)


def _absorbed(segs: list, edge: Segment, k: int) -> list:
    """The alternatives of the first (``k=0``) or last (``k=-1``) word without those whose
    phone ``k`` has the class of the any-length silence ``edge`` at that end, when another
    alternative is left: an edge silence of any length and a phone of its class beside it (a
    word-initial stop's closure) would share one silence at no cost, and the silence takes it
    all (a recording's first frames of silence or prevoicing before a stop's release are the
    leading silence, as TIMIT's annotators label them). Other alternatives as they were."""
    if edge.flat_log_density is None:
        return segs
    return [s for s, apart in zip(segs, _apart_from(segs, edge, k)) if apart]


def _apart_from(segs: list, silence: Segment, k: int) -> list:
    """Per alternative, whether its phone ``k`` is of another class than ``silence``'s; all
    True when none is (a word keeps its alternatives when each would share the silence)."""
    apart = [s.classes[k] != silence.classes[0] for s in segs]
    return apart if any(apart) else [True] * len(segs)


def build_word_graph(
    words: Sequence[Sequence],
    pause: Segment | None = None,
    *,
    between: str | Sequence[str] = "optional",
    leading: str = "optional",
    trailing: str = "optional",
    leading_pause: Segment | None = None,
    trailing_pause: Segment | None = None,
    stats: Callable | None = None,
    before_pause: Callable | None = None,
) -> PhoneGraph:
    """The phone graph of a words transcript (module docstring).

    Args:
        words: W word slots; slot i is a list of alternatives, each a :class:`Segment` or a
            sequence of class indices (``stats(classes, None) -> (mean, std, max_frames)``
            gives their duration statistics).
        pause: one-phone :class:`Segment` of the pause (silence class and its statistics),
            used between words (and at the edges unless ``leading_pause``/``trailing_pause``).
        between: mode of every gap between words (``"optional"``, ``"required"``, ``"none"``),
            or a list of W-1 modes. An optional pause does not follow a word's alternatives that
            end with a phone of its class when the word has others (:func:`_apart_from`).
        leading, trailing: mode of the pause before the first / after the last word.
        leading_pause, trailing_pause: their segments when not ``pause``; an any-length one
            (:attr:`Segment.flat_log_density`) leaves out the first (last) word's alternatives
            that begin (end) with a phone of its class when the word has others
            (:func:`_absorbed`).
        before_pause: ``before_pause(segment) -> segment``, the same phones with the last one's
            statistics as before a pause (phrase-final lengthening): where a pause may follow a
            word, each alternative's last phone is two nodes, its own statistics leading on to
            the next word and these leading into the pause; where a pause must follow, these
            alone (None: one node into both).

    An alternative with :attr:`Segment.merges_first` (of 2 phones or more) follows each
    alternative of the word before that ends in the class of its first phone, with no pause
    between: that word's last phone is then one node of their summed means, variances and
    longest lengths (:func:`_merged_phone`), and this word's nodes begin at its second phone.
    Where no alternative before ends so (or it is the first word, or no pause-free junction), it
    is left out.
    """
    W = len(words)
    if W == 0:
        raise ValueError("no words")
    between_modes = [between] * (W - 1) if isinstance(between, str) else list(between)
    if len(between_modes) != W - 1:
        raise ValueError(f"between: need {W - 1} modes, got {len(between_modes)}")
    for m in between_modes + [leading, trailing]:
        if m not in PAUSE_MODES:
            raise ValueError(f"pause mode must be one of {PAUSE_MODES}, got {m!r}")
    leading_pause = leading_pause or pause
    trailing_pause = trailing_pause or pause
    for mode, seg, what in [(leading, leading_pause, "leading"), (trailing, trailing_pause, "trailing")] + [
            (m, pause, "between") for m in between_modes]:
        if mode != "none":
            if seg is None:
                raise ValueError(f"a {what} pause needs a pause segment")
            if len(seg) != 1:
                raise ValueError("a pause segment must hold exactly one phone")

    cls, mean, std, mx, labels = [], [], [], [], []
    preds, start, word, alt, wstart, pslot, ispause, flat, bonus = [], [], [], [], [], [], [], [], []

    def add(seg: Segment, p: list, can_start: bool, w: int, a: int, ws: int, ps: int):
        """Append the phones of ``seg`` as a chain: the first after the nodes ``p`` (a start
        node if ``can_start``, starting word ``ws``), each next one after the one before;
        returns the last node."""
        first, k = len(cls), len(seg)
        cls.extend(seg.classes); mean.extend(seg.mean); std.extend(seg.std)  # noqa: E702
        mx.extend(seg.max_frames); labels.extend(seg.labels)  # noqa: E702
        preds.append(sorted(set(p))); preds.extend([n] for n in range(first, first + k - 1))  # noqa: E702
        start.extend([can_start] + [False] * (k - 1)); word.extend([w] * k); alt.extend([a] * k)  # noqa: E702
        wstart.extend([ws] + [-1] * (k - 1)); pslot.extend([ps] * k); ispause.extend([ps >= 0] * k)  # noqa: E702
        flat.extend([np.nan if seg.flat_log_density is None else seg.flat_log_density] * k)
        bonus.extend([seg.bonus] + [0.0] * (k - 1))
        return first + k - 1

    frontier: list = []
    can_start = True

    def gap(mode, seg, g):
        nonlocal frontier, can_start
        if mode == "none":
            return
        n = add(seg, frontier, can_start, -1, -1, -1, g)
        if mode == "required":
            frontier, can_start = [n], False
        else:
            frontier = frontier + [n]

    gap(leading, leading_pause, 0)
    before: list = []  # the word before's alternatives: (segment, alternative, predecessors of its last phone, start)
    for i, alts in enumerate(words):
        segs = []
        seen = set()
        for a in alts:
            s = _as_segment(a, stats)
            if len(s) == 0:
                raise ValueError(f"word {i}: an empty pronunciation")
            key = (s.classes, s.mean, s.std, s.max_frames, s.flat_log_density, s.merges_first)  # a tie: the first
            if key in seen:
                continue
            if s.merges_first and not (len(s) > 1 and any(_merges(b, s) for b, _, _, _ in before)):
                continue  # ``before`` is empty for the first word and after a required pause
            seen.add(key)
            segs.append(s)
        if not segs:
            raise ValueError(f"word {i}: no pronunciation")
        if i == 0 and leading != "none":
            segs = _absorbed(segs, leading_pause, 0)
        if i == W - 1 and trailing != "none":
            segs = _absorbed(segs, trailing_pause, -1)
        ends, paused = [], []
        mode = between_modes[i] if i < W - 1 else "none"
        if before_pause is not None and mode == "required":  # always a pause next: always lengthened
            segs = [before_pause(s) for s in segs]
        split = before_pause is not None and mode == "optional"
        # an alternative ending in the pause's class (a final stop's closure without its release) does not
        # lead into an optional pause: the two would split one silence wherever the scores like (cf. _absorbed)
        into_pause = _apart_from(segs, pause, -1) if mode == "optional" else [True] * len(segs)
        placed = []
        for a, s in enumerate(segs):
            pre, can = frontier, can_start
            if s.merges_first:  # after the word before's alternatives ending in its first phone, as one phone
                pre = [add(_merged_phone(b, s), p, c, i - 1, b_alt, i - 1 if len(b) == 1 else -1, -1)
                       for b, b_alt, p, c in before if _merges(b, s)]
                s, can = _part(s, 1, len(s), s.bonus), False
            if len(s) > 1:
                last_pre, last_can = [len(cls) + len(s) - 2], False
            else:
                last_pre, last_can = list(pre), can
            placed.append((s, a, last_pre, last_can))
            if not split or not into_pause[a]:
                ends.append(add(s, pre, can, i, a, i, -1))
                if into_pause[a]:
                    paused.append(ends[-1])
                continue
            longer = before_pause(s)
            if len(s) > 1:  # the phones before the last once, then the last twice
                head = add(_part(s, 0, len(s) - 1, s.bonus), pre, can, i, a, i, -1)
                ends.append(add(_part(s, len(s) - 1, len(s)), [head], False, i, a, -1, -1))
                paused.append(add(_part(longer, len(s) - 1, len(s)), [head], False, i, a, -1, -1))
            else:
                ends.append(add(s, pre, can, i, a, i, -1))
                paused.append(add(longer, pre, can, i, a, i, -1))
        before = placed if mode != "required" else []
        frontier, can_start = ends, False
        if i < W - 1:
            if mode == "optional":  # the pause after the (lengthened) ends that may precede it; the next word after any
                frontier = ends + [add(pause, paused, False, -1, -1, -1, i + 1)]
            else:
                gap(mode, pause, i + 1)
    gap(trailing, trailing_pause, W)

    N = len(cls)
    is_final = np.zeros(N, bool)
    is_final[frontier] = True
    ptr = np.zeros(N + 1, np.int64)
    ptr[1:] = np.cumsum([len(p) for p in preds])
    idx = np.array([m for p in preds for m in p], np.int64)
    g = PhoneGraph(np.array(cls, np.int64), np.array(mean, float), np.array(std, float),
                   np.array(mx, np.int64), ptr, idx, np.array(start, bool), is_final,
                   np.array(ispause, bool), np.array(word, np.int64), np.array(alt, np.int64),
                   np.array(wstart, np.int64), np.array(pslot, np.int64), tuple(labels), W, np.array(flat, np.float64),
                   np.array(bonus, np.float64))
    return g


def _merges(before: Segment, after: Segment) -> bool:
    """Whether ``after``'s first phone may be said once with ``before``'s last (the same class)."""
    return before.classes[-1] == after.classes[0]


def _merged_phone(before: Segment, after: Segment) -> Segment:
    """``before``'s last phone said once for it and ``after``'s first (the same class): one phone
    of their summed means, variances and longest lengths (frames), labelled as ``before``'s,
    carrying ``before``'s bonus where it is the whole alternative."""
    return Segment(before.classes[-1:], (before.mean[-1] + after.mean[0],),
                   (math.sqrt(before.std[-1] ** 2 + after.std[0] ** 2),),
                   (before.max_frames[-1] + after.max_frames[0],), before.labels[-1:],
                   bonus=before.bonus if len(before) == 1 else 0.0)


def _part(seg: Segment, a: int, b: int, bonus: float = 0.0) -> Segment:
    """Phones ``a .. b - 1`` of ``seg`` as a segment of their own, carrying ``bonus``."""
    return replace(seg, classes=seg.classes[a:b], mean=seg.mean[a:b], std=seg.std[a:b],
                   max_frames=seg.max_frames[a:b], labels=seg.labels[a:b], bonus=bonus)


def linear_graph(segment: Segment) -> PhoneGraph:
    """The graph of one fixed phone sequence (one word, one alternative, no pauses)."""
    return build_word_graph([[segment]], None, leading="none", trailing="none")
