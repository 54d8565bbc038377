"""A pronunciation's prior in the graph (a segment's ``bonus`` on its first node): the exact DP
against brute force, and its effect; a word's chosen pronunciation when one is another's start."""

import dataclasses

import numpy as np
import pytest

from aligner.alignment.decoding.graph import Segment, build_word_graph
from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input
from aligner.alignment.decoding.words import _chosen

from tests.decoding.test_graph_task import D, P, all_outputs, pause_seg, seg


@pytest.mark.parametrize("seed", range(3))
def test_decode_with_pronunciation_bonuses_matches_brute_force(seed):
    rng = np.random.default_rng(300 + seed)
    words = [[dataclasses.replace(seg(rng, int(rng.integers(1, 3))), bonus=float(rng.normal()))
              for _ in range(2)] for _ in range(2)]
    g = build_word_graph(words, pause_seg(rng))
    assert np.count_nonzero(g.node_bonus) == 4  # one per alternative, on its first node
    T = int(rng.integers(10, 13))
    x = make_graph_input(rng.normal(size=(T, P)), rng.normal(size=(T, D)), g)
    outs = list(all_outputs(x))
    for divisor in ("min_phones", "path"):
        task = GraphAlignmentTask(divisor=divisor, phone_bonus=0.3, pause_bonus=-0.2)
        w = rng.normal(size=7)
        y, _ = task.decode_with_value(x, w)
        best = max(task.score(x, o, w) for o in outs)
        assert task.score(x, y, w) == pytest.approx(best, abs=1e-9)


def test_a_large_penalty_keeps_an_alternative_off_the_path():
    rng = np.random.default_rng(7)
    a, b = seg(rng, 2, max_frames=8), seg(rng, 2, max_frames=8)  # both fit the frames
    T = 12
    scores, frames = rng.normal(size=(T, P)), rng.normal(size=(T, D))
    task = GraphAlignmentTask(phone_bonus=0.5)
    w = np.array([1.0, 0, 0, 0, 0, 1.0, 0])
    for penalised in (0, 1):
        alts = [a, b]
        alts[penalised] = dataclasses.replace(alts[penalised], bonus=-1e3)
        g = build_word_graph([alts], None, leading="none", trailing="none")
        y = task.decode(make_graph_input(scores, frames, g), w)
        assert set(g.alt[y.nodes].tolist()) == {1 - penalised}


def test_chosen_pronunciation_when_one_begins_another():
    """``were``: ``W AH1`` and ``W AH1 R`` (a non-rhotic form and its linking r)."""
    from aligner.alignment.decoding.stop_closures import ExpandedTranscript

    def exp(symbols):
        n = len(symbols)
        return ExpandedTranscript(list(symbols), np.arange(n), np.arange(n, dtype=np.int64), n)

    short, long_ = ("W", "AH1"), ("W", "AH1", "R")
    alternatives = [(short, exp(short)), (long_, exp(long_))]
    mk = lambda k: Segment.make(list(range(k)), 2.0, 1.0, 5, labels=long_[:k])  # noqa: E731
    g = build_word_graph([[mk(2), mk(3)], [Segment.make([4], 2.0, 1.0, 5, labels=["IY1"])]], None,
                         between="none", leading="none", trailing="none")
    for k, want in ((2, short), (3, long_)):
        nodes = np.concatenate([np.flatnonzero((g.word == 0) & (g.alt == k - 2)), np.flatnonzero(g.word == 1)])
        assert g.is_path(nodes)
        assert _chosen(alternatives, g.labels, nodes, 0, g)[0] == want
