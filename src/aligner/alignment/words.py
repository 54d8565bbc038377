"""Alignment from words: pronunciations -> a pronunciation graph -> words and phones tiers.

The decoder (:mod:`aligner.alignment.graph_task`) chooses, exactly, one pronunciation per word
(the dictionary's variants, or a G2P guess) and whether a pause lies between two words and at
either end of the utterance; the 7 weights are the alignment model's own. Stops and affricates
are decoded as TIMIT closure + release (as for ARPAbet phone transcripts,
:mod:`aligner.alignment.stop_closures`) and merged back into the dictionary's symbol; the boundary
refiner moves every decoded boundary off the 10 ms grid as for phone transcripts.

Pauses use the duration statistics of TIMIT's ``pau`` between words and of ``h#`` at the edges.
Paths of different lengths are compared through a constant divisor (the fewest phones on any
path) plus :data:`PHONE_BONUS` per phone, which offsets the negative per-phone score a phone adds
(``docs/results.md`` has the measurement behind the value).

Times are in seconds; frames are the 10 ms frames of :mod:`aligner.frames`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from aligner.alignment.graph import Segment, build_word_graph
from aligner.alignment.graph_task import GraphAlignmentTask, make_graph_input
from aligner.alignment.stop_closures import ExpandedTranscript, expand_stop_closures
from aligner.frames import phone_start_times
from aligner.io.textgrids import Interval
from aligner.phonetics import CLASSES39, SILENCE, TIMIT61_CLOSURES, VOWEL_CLASSES, get_phone_set

#: per-phone bonus of the graph decoder (units of the per-phone score ``w . features``)
PHONE_BONUS = 2.0
#: duration-statistics symbols of a pause between words and of the silence at either end
PAUSE_SYMBOL, EDGE_SYMBOL = "pau", "h#"
_SIL = CLASSES39.index(SILENCE)


@dataclass
class WordAlignment:
    """Words and phones of one utterance (times in seconds, pauses not listed).

    ``words``: one :class:`Interval` per word, labelled with its written form; ``phones``: the
    phones of every word as the dictionary writes them (ARPAbet with stress);
    ``pronunciations``: the pronunciation chosen for each word.
    """

    words: list = field(default_factory=list)
    phones: list = field(default_factory=list)
    pronunciations: list = field(default_factory=list)

    def shifted(self, offset_s: float) -> "WordAlignment":
        """The same alignment ``offset_s`` seconds later (a segment placed in its recording)."""
        def move(ivs):
            return [Interval(s + offset_s, e + offset_s, lab) for s, e, lab in ivs]
        return WordAlignment(move(self.words), move(self.phones), list(self.pronunciations))


#: connected-speech variants the decoder may choose besides each dictionary pronunciation
#: (TIMIT's narrow transcriptions show all three): ``flap``: T or D between a vowel and an
#: unstressed vowel as a flap (``dx``); ``unreleased``: a word-final stop or affricate as its
#: closure alone; ``reduced``: an unstressed AH or IH as TIMIT's reduced vowel (``ax``/``ix``);
#: ``no_initial_closure``: a word-initial stop without its closure (after a pause the closure is
#: silence, and annotators start the word at the release).
VARIANT_RULES = ("flap", "unreleased", "reduced", "no_initial_closure")
#: the rules used by default (chosen on validation speakers: docs/results.md)
DEFAULT_RULES = ("no_initial_closure",)
_VOWEL_CLASS_INDICES = frozenset(CLASSES39.index(c) for c in VOWEL_CLASSES)


def _expansions(phones: Sequence[str], arpabet, rules: Sequence[str]) -> list:
    """The internal phone sequences of one pronunciation: stops split into closure + release,
    then each rule of ``rules`` applied on its own (one more sequence per rule that changes it)."""
    base = expand_stop_closures(list(phones), arpabet)
    out = [base]
    syms, cls, own = list(base.symbols), list(base.classes), list(base.owner)

    def add(s, c, o):
        if s != list(base.symbols) or c != list(base.classes):
            out.append(ExpandedTranscript(s, np.array(c, np.int64), np.array(o, np.int64), base.n_output))

    up = [p.upper() for p in phones]
    if "flap" in rules:
        s, c, o = list(syms), list(cls), list(own)
        changed, k = False, 0
        while k < len(s):
            i = o[k]
            if (s[k] in ("tcl", "dcl") and k + 2 < len(s) and o[k + 1] == i and up[i] in ("T", "D")
                    and k > 0 and c[k - 1] in _VOWEL_CLASS_INDICES and c[k + 2] in _VOWEL_CLASS_INDICES
                    and s[k + 2].endswith("0")):
                s[k:k + 2], c[k:k + 2], o[k:k + 2] = ["dx"], [CLASSES39.index("dx")], [i]
                changed = True
            k += 1
        if changed:
            add(s, c, o)
    if "unreleased" in rules and len(syms) >= 2 and syms[-2] in TIMIT61_CLOSURES and own[-2] == own[-1]:
        add(syms[:-1], cls[:-1], own[:-1])
    if "no_initial_closure" in rules and len(syms) >= 2 and syms[0] in TIMIT61_CLOSURES and own[0] == own[1]:
        add(syms[1:], cls[1:], own[1:])
    if "reduced" in rules:
        s, c = list(syms), list(cls)
        for k, sym in enumerate(s):
            if sym.upper() in ("AH0", "IH0"):
                s[k], c[k] = ("ax", CLASSES39.index("ah")) if sym.upper() == "AH0" else ("ix", CLASSES39.index("ih"))
        add(s, c, list(own))
    return out


def _alternative(model, expanded) -> Segment:
    mean, std, mx = model.durations.for_phones(expanded.classes, expanded.symbols)
    return Segment.make(expanded.classes, mean, std, mx, labels=expanded.symbols)


def _pause(model, symbol: str) -> Segment:
    mean, std, mx = model.durations.for_phones(np.array([_SIL]), [symbol])
    return Segment.make([_SIL], mean, std, mx, labels=[symbol])


def align_words_scored(model, frames: np.ndarray, scores: np.ndarray, labels: Sequence[str],
                       pronunciations: Sequence[Sequence[Sequence[str]]], duration_s: float,
                       name: str = "<utterance>", phone_bonus: float = PHONE_BONUS,
                       rules: Sequence[str] = DEFAULT_RULES, pause_bonus: float = 0.0) -> WordAlignment:
    """Align W words to an utterance's MFCC frames (T, 42) and classifier scores (T, 39).

    ``labels``: W word labels for the words tier; ``pronunciations``: for each word, its
    alternatives, each a sequence of ARPAbet phones (stress digits allowed). Raises
    :class:`~aligner.errors.AlignmentError` naming ``name`` when no path fits the frames.
    """
    arpabet = get_phone_set("arpabet")
    words, expansions = [], []
    for alternatives in pronunciations:
        segs, exps = [], []
        for phones in alternatives:
            for exp in _expansions(phones, arpabet, rules):
                segs.append(_alternative(model, exp))
                exps.append((tuple(phones), exp))
        words.append(segs)
        expansions.append(exps)
    graph = build_word_graph(words, _pause(model, PAUSE_SYMBOL), leading_pause=_pause(model, EDGE_SYMBOL),
                             trailing_pause=_pause(model, EDGE_SYMBOL))
    x = make_graph_input(scores, frames, graph, model.min_frames, name=name)
    path = GraphAlignmentTask(phone_bonus=phone_bonus, pause_bonus=pause_bonus).decode(x, model.weights)
    nodes = path.nodes
    if model.refiner is None:
        starts_s = phone_start_times(path.starts)
    else:
        starts_s = model.refiner.start_times(scores, frames, graph.classes[nodes], path.starts,
                                             x.dur_mean[nodes], x.dur_std[nodes], duration_s)
    ends_s = np.append(starts_s[1:], duration_s)
    out = WordAlignment()
    k = 0
    while k < len(nodes):
        n = nodes[k]
        if graph.is_pause[n]:
            k += 1
            continue
        w = int(graph.word[n])
        phones, expanded = _chosen(expansions[w], graph.labels, nodes, k, graph)
        m = len(expanded.symbols)
        first = np.ones(m, dtype=bool)
        first[1:] = expanded.owner[1:] != expanded.owner[:-1]
        own_starts = starts_s[k:k + m][first]
        own_ends = np.append(own_starts[1:], ends_s[k + m - 1])
        out.phones += [Interval(float(s), float(e), p) for s, e, p in zip(own_starts, own_ends, phones)]
        out.words.append(Interval(float(starts_s[k]), float(ends_s[k + m - 1]), labels[w]))
        out.pronunciations.append(phones)
        k += m
    return out


def _chosen(alternatives, node_labels, nodes, k, graph):
    """The (phones, expansion) of the alternative whose nodes start at path position ``k``
    (identical alternatives are kept once in the graph, so match by the labels on the path)."""
    for phones, expanded in alternatives:
        m = len(expanded.symbols)
        if k + m <= len(nodes) and [node_labels[n] for n in nodes[k:k + m]] == list(expanded.symbols) \
                and all(graph.word[n] == graph.word[nodes[k]] for n in nodes[k:k + m]):
            return phones, expanded
    raise AssertionError("decoded path does not follow any pronunciation of the word")
