"""The banded graph decode (aligner.alignment.decoding.graph_band): the first pass is a path of the
graph, a band never admits a path the exact DP would not, a band as long as the utterance is
the exact DP, and on planted examples and the shared utterances the default band decodes the
exact path."""

from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.decoding.graph import PhoneGraph, build_word_graph
from aligner.alignment.decoding.graph_band import WORD_BAND_FRAMES, decode_banded, graph_viterbi, restrict_to_band, word_bands
from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input
from tests.decoding.test_graph_task import planted_example, toy_graph_input

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


@pytest.mark.parametrize("seed", range(5))
def test_first_pass_is_a_path_of_the_graph(seed):
    rng = np.random.default_rng(300 + seed)
    x = toy_graph_input(rng, T=int(rng.integers(12, 40)), n_words=3)
    nodes, starts = graph_viterbi(x)
    assert len(nodes) >= 1
    assert x.graph.is_path(nodes)
    assert starts[0] == 0 and np.all(np.diff(starts) > 0) and starts[-1] < x.n_frames


def test_first_pass_leaves_a_node_once_it_has_stayed_its_longest_length():
    """With every length allowed (``max_len`` T) the first pass holds some node longer than the
    input's own longest length on some of these inputs; with the input's own, never."""
    import dataclasses

    held_too_long = 0
    for seed in range(20):
        rng = np.random.default_rng(700 + seed)
        x = toy_graph_input(rng, T=40, n_words=3)
        nodes, starts = graph_viterbi(x)
        if len(nodes):
            assert x.graph.is_path(nodes)
            assert np.all(np.diff(np.append(starts, x.n_frames)) <= x.max_len[nodes])
        free = dataclasses.replace(x, max_len=np.full_like(x.max_len, x.n_frames))
        nodes, starts = graph_viterbi(free)
        if len(nodes):
            held_too_long += int(np.any(np.diff(np.append(starts, x.n_frames)) > x.max_len[nodes]))
    assert held_too_long > 0


def test_first_pass_finds_a_planted_path():
    rng = np.random.default_rng(5)
    x, truth = planted_example(rng, T=80, n_words=4)
    nodes, starts = graph_viterbi(x)
    assert np.array_equal(nodes, truth.nodes)
    assert np.mean(np.abs(starts - truth.starts) <= 2) >= 0.8  # a rough pass: most starts near


@pytest.mark.parametrize("seed", range(6))
def test_banded_decode_never_beats_the_exact_one_and_the_whole_band_is_exact(seed):
    rng = np.random.default_rng(400 + seed)
    x = toy_graph_input(rng, T=int(rng.integers(20, 60)), n_words=4)
    task = GraphAlignmentTask(phone_bonus=float(rng.normal()))
    for _ in range(3):
        w = rng.normal(size=7)
        exact = task.decode(x, w)
        for band in (1, 3, 8):
            path = decode_banded(task, x, w, band)
            assert x.graph.is_path(path.nodes)
            assert task.score(x, path, w) <= task.score(x, exact, w) + 1e-9
        assert decode_banded(task, x, w, x.n_frames) == exact


def test_a_band_keeps_every_start_inside_it():
    rng = np.random.default_rng(9)
    x, _ = planted_example(rng, T=80, n_words=4)
    nodes, starts = graph_viterbi(x)
    lo, hi = word_bands(x, nodes, starts, 3)
    banded = restrict_to_band(x, lo, hi)
    path = GraphAlignmentTask().decode(banded, np.array([1.0, 0.2, 0.2, 0.2, 0.2, 0.1, -0.1]))
    assert np.all(path.starts >= lo[path.nodes]) and np.all(path.starts <= hi[path.nodes])
    # the band only narrows the exact feasible ranges
    assert np.all(banded.s_lo >= x.s_lo) and np.all(banded.s_hi <= x.s_hi)


@pytest.mark.parametrize("seed", range(4))
def test_default_band_decodes_the_exact_path_on_planted_examples(seed):
    rng = np.random.default_rng(500 + seed)
    x, _ = planted_example(rng, T=120, n_words=5)
    task = GraphAlignmentTask(phone_bonus=2.0)
    w = np.array([1.0, 0.3, 0.3, 0.3, 0.3, 0.2, -0.05])
    assert decode_banded(task, x, w, WORD_BAND_FRAMES) == task.decode(x, w)


def test_graph_validation_names_the_bad_node():
    rng = np.random.default_rng(2)
    from tests.decoding.test_graph_task import pause_seg, seg

    g = build_word_graph([[seg(rng, 2)], [seg(rng, 2)]], pause_seg(rng))
    fields = {f: getattr(g, f) for f in g.__dataclass_fields__}
    backward = dict(fields, pred_idx=np.where(np.arange(len(g.pred_idx)) == 2, 5, g.pred_idx))
    with pytest.raises(ValueError, match="predecessor not before it"):
        PhoneGraph(**backward)
    ptr = g.pred_ptr.copy()
    twice = dict(fields, pred_idx=np.concatenate([g.pred_idx[:1], g.pred_idx[:1], g.pred_idx[1:]]),
                 pred_ptr=np.concatenate([ptr[:2], ptr[2:] + 1]))
    with pytest.raises(ValueError, match="lists a predecessor twice"):
        PhoneGraph(**twice)


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"the shared TIMIT sample is not at {SHARED}")
def test_banded_decode_equals_the_exact_one_on_shared_utterances():
    from benchmarks.words.bench_graph_band import _inputs
    from benchmarks.words.bench_words import find_utterances

    from aligner import api

    model, dictionary = api.load_model(None), api.load_dictionary()
    for utt in find_utterances(SHARED)[::12]:
        x, task, _ = _inputs(model, utt, dictionary)
        assert decode_banded(task, x, model.weights) == task.decode(x, model.weights), utt.name
