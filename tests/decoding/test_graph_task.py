"""Alignment over a pronunciation graph: graph building, the exact graph DP against the linear
DP and against brute force, the cost, and a trainer of the learning core on graph examples."""

import itertools

import numpy as np
import pytest

from aligner.alignment.decoding.graph import Segment, build_word_graph, linear_graph
from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input, make_path
from aligner.alignment.decoding.task import AlignmentTask, make_alignment_input
from aligner.errors import AlignmentError
from aligner.learn import make_trainer

P, D = 6, 4


def seg(rng, k, max_frames=None):
    cl = rng.integers(0, P - 1, size=k)
    return Segment.make(cl, rng.uniform(1.5, 5.0, size=k), rng.uniform(0.5, 2.5, size=k),
                        max_frames if max_frames is not None else rng.integers(3, 9, size=k))


def pause_seg(rng):
    return Segment.make([P - 1], [rng.uniform(2, 5)], [rng.uniform(1, 3)], [8], ["sil"])


# --------------------------------------------------------------------------------------
# the graph
# --------------------------------------------------------------------------------------


def test_build_word_graph_structure():
    rng = np.random.default_rng(0)
    the = [seg(rng, 2), seg(rng, 2)]
    either = [seg(rng, 3), seg(rng, 4)]
    g = build_word_graph([the, either], pause_seg(rng))
    g.check_words()
    # 1 + 4 + 1 + 7 + 1 nodes; 2 alts x 2 alts x 2^3 pause choices
    assert g.n_nodes == 14
    paths = list(g.paths())
    assert len(paths) == 2 * 2 * 8
    assert g.phone_count_range() == (5, 9)
    assert len({tuple(p) for p in paths}) == len(paths)
    for p in paths:
        assert g.is_path(p)
        assert np.count_nonzero(g.word_start[p] >= 0) == 2
    # choices -> path
    p = g.path_of([1, 0], [False, True, False])
    assert g.word[p].tolist() == [0, 0, -1, 1, 1, 1]
    assert g.alt[p][:2].tolist() == [1, 1]
    # required / none modes
    g2 = build_word_graph([the, either], pause_seg(rng), between="required", leading="none", trailing="none")
    assert len(list(g2.paths())) == 4
    assert all(g2.is_pause[p].sum() == 1 for p in g2.paths())
    # identical alternatives are kept once
    g3 = build_word_graph([[the[0], the[0]]], None, leading="none", trailing="none")
    assert g3.n_nodes == 2


@pytest.mark.parametrize("between", ["optional", "required", "none"])
def test_before_pause_gives_the_phone_before_a_pause_its_own_node(between):
    """``before_pause``: an optional pause splits each alternative's last phone (one node on to the
    next word, one lengthened into the pause); a required pause lengthens it outright; with no
    pause the graph is as without. Every path still passes every word once."""
    rng = np.random.default_rng(7)
    words = [[seg(rng, 3), seg(rng, 1)], [seg(rng, 2)]]
    pause = pause_seg(rng)
    longer = lambda s: Segment.make(s.classes, s.mean[:-1] + (s.mean[-1] * 2,), s.std, s.max_frames)  # noqa: E731
    plain = build_word_graph(words, pause, between=between)
    g = build_word_graph(words, pause, between=between, before_pause=longer)
    g.check_words()
    extra = {"optional": 2, "required": 0, "none": 0}[between]  # one more node per alternative of word 0
    assert len(g.classes) == len(plain.classes) + extra
    lengthened = np.flatnonzero((g.word == 0) & (g.dur_mean > 0) & ~np.isin(g.dur_mean, plain.dur_mean))
    assert len(lengthened) == (0 if between == "none" else 2)
    mid = np.flatnonzero(g.pause_slot == 1)
    for n in lengthened:
        succ = [m for m in range(len(g.classes)) if n in g.pred_idx[g.pred_ptr[m]:g.pred_ptr[m + 1]]]
        assert succ == mid.tolist()  # a lengthened last phone leads into the pause alone


@pytest.mark.parametrize("lengthen", [False, True])
def test_an_alternative_ending_in_the_pause_class_does_not_lead_into_the_pause(lengthen):
    """A word-final closure without its release (the pause's class) and an optional pause after it
    would share one silence: that alternative goes on to the next word only, unless every
    alternative of the word ends so."""
    rng = np.random.default_rng(3)
    pause = pause_seg(rng)
    released = Segment.make([1, P - 1, 2], [3, 3, 2], [1, 1, 1], [8, 8, 8])
    closure_only = Segment.make([1, P - 1], [3, 3], [1, 1], [8, 8])
    longer = (lambda s: s) if lengthen else None
    g = build_word_graph([[released, closure_only], [seg(rng, 2)]], pause, before_pause=longer)
    g.check_words()
    mid = np.flatnonzero(g.pause_slot == 1)
    into_pause = {g.alt[m] for n in mid for m in g.pred_idx[g.pred_ptr[n]:g.pred_ptr[n + 1]]}
    assert into_pause == {0}
    paths = list(g.paths())
    assert any(g.alt[p][g.word[p] == 0][0] == 1 for p in paths)  # the closure still leads on to word 1
    assert not any(g.alt[p][g.word[p] == 0][0] == 1 and g.is_pause[p][1:-1].any() for p in paths)
    # a word with no other ending keeps its pause
    g = build_word_graph([[closure_only], [seg(rng, 2)]], pause, before_pause=longer)
    assert any(g.is_pause[p][1:-1].any() for p in g.paths())


def test_graph_rejects_bad_input():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError):
        build_word_graph([], pause_seg(rng))
    with pytest.raises(ValueError):
        build_word_graph([[seg(rng, 2)]], None)  # optional pauses need a pause segment
    with pytest.raises(ValueError):
        build_word_graph([[[0, 1]]], None, leading="none", trailing="none")  # classes need stats
    g = build_word_graph([[[0, 1]]], None, leading="none", trailing="none",
                         stats=lambda c, s: (np.full(len(c), 3.0), np.ones(len(c)), np.full(len(c), 9)))
    assert g.n_nodes == 2
    # no path fits: 5 phones in 3 frames
    sc = rng.normal(size=(3, P))
    with pytest.raises(AlignmentError, match="no path"):
        make_graph_input(sc, rng.normal(size=(3, D)), linear_graph(seg(rng, 5)))


# --------------------------------------------------------------------------------------
# (a) one path == the linear task
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_single_path_matches_linear_dp(seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(30, 160))
    K = int(rng.integers(2, max(3, T // 5)))
    scores, frames = rng.normal(size=(T, P)), rng.normal(size=(T, D))
    cl = rng.integers(0, P, size=K)
    mean, std = rng.uniform(2, 8, size=K), rng.uniform(0.5, 3, size=K)
    mx = rng.integers(int(np.ceil(T / K)), T + 1, size=K)
    x = make_alignment_input(scores, frames, cl, mean, std, mx)
    xg = make_graph_input(scores, frames, linear_graph(Segment.make(cl, mean, std, mx)))
    lin, gt = AlignmentTask(), GraphAlignmentTask()
    for trial in range(3):
        w = rng.normal(size=7)
        if trial == 1:
            w[6] = 0.0  # the no-rate-term branch
        y, v = lin._run(x, w, None, 0.0)
        yg, vg = gt.decode_with_value(xg, w)
        assert np.array_equal(yg.starts, y) and np.array_equal(yg.nodes, np.arange(K))
        assert vg == pytest.approx(v, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(gt.phi(xg, yg), lin.phi(x, y), rtol=1e-12, atol=1e-12)
        # loss-augmented, both signs: same cost on one path
        y_ref = lin.decode(x, rng.normal(size=7))
        path_ref = make_path(xg.graph, np.arange(K), y_ref)
        for eps in (0.8, -0.5):
            ya, va = lin._run(x, w, y_ref, eps)
            yga, vga = gt._run(xg, w, path_ref, eps, 1.0 / gt.z(xg), 0.0)
            assert np.array_equal(yga.starts, ya)
            assert vga == pytest.approx(va, rel=1e-10, abs=1e-10)
            assert gt.cost(path_ref, yga) == pytest.approx(lin.cost(y_ref, ya))


# --------------------------------------------------------------------------------------
# (b) brute force over paths x segmentations
# --------------------------------------------------------------------------------------


def segmentations(T, max_len, min_len=1):
    K = len(max_len)
    for cuts in itertools.combinations(range(1, T), K - 1):
        y = np.array((0,) + cuts, dtype=np.int64)
        lengths = np.diff(np.append(y, T))
        if np.all(lengths >= min_len) and np.all(lengths <= max_len):
            yield y


def all_outputs(x):
    g = x.graph
    for nodes in g.paths():
        for st in segmentations(x.n_frames, x.max_len[nodes], x.min_len):
            yield make_path(g, nodes, st)


def toy_graph_input(rng, T, n_words=2):
    words = [[seg(rng, int(rng.integers(1, 3))), seg(rng, int(rng.integers(1, 3)))] for _ in range(n_words)]
    g = build_word_graph(words, pause_seg(rng))
    return make_graph_input(rng.normal(size=(T, P)), rng.normal(size=(T, D)), g)


@pytest.mark.parametrize("seed", range(4))
def test_decode_matches_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    x = toy_graph_input(rng, T=int(rng.integers(10, 14)))
    outs = list(all_outputs(x))
    assert len({(tuple(o.nodes),) for o in outs}) > 4  # several paths are feasible
    for divisor, b, bp in [("min_phones", 0.0, 0.0), ("frames", 0.7, -0.4), ("min_phones", -0.3, 1.1)]:
        task = GraphAlignmentTask(divisor=divisor, phone_bonus=b, pause_bonus=bp)
        for _ in range(2):
            w = rng.normal(size=7)
            y, v = task.decode_with_value(x, w)
            vals = np.array([task.score(x, o, w) for o in outs])
            assert v == pytest.approx(vals.max(), abs=1e-9)
            assert task.score(x, y, w) == pytest.approx(vals.max(), abs=1e-9)
            # augmented, both signs, against a random reference output
            y_ref = outs[int(rng.integers(len(outs)))]
            for eps in (1.3, -0.6):
                ya = task.decode_augmented(x, y_ref, w, eps)
                aug = vals + eps * np.array([task.cost(y_ref, o) for o in outs])
                assert task.score(x, ya, w) + eps * task.cost(y_ref, ya) == pytest.approx(aug.max(), abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_path_divisor_matches_brute_force(seed):
    """divisor='path' (Dinkelbach) finds the max of w . raw / K(y) exactly."""
    rng = np.random.default_rng(200 + seed)
    x = toy_graph_input(rng, T=int(rng.integers(10, 14)))
    outs = list(all_outputs(x))
    task = GraphAlignmentTask(divisor="path", pause_bonus=0.3)
    for _ in range(3):
        w = rng.normal(size=7)
        y, v = task.decode_with_value(x, w)
        vals = np.array([task.score(x, o, w) for o in outs])
        assert v == pytest.approx(vals.max(), abs=1e-9)
        assert task.score(x, y, w) == pytest.approx(vals.max(), abs=1e-9)
    with pytest.raises(NotImplementedError):
        task.decode_augmented(x, y, w, 1.0)


def test_cost_properties():
    rng = np.random.default_rng(7)
    x = toy_graph_input(rng, T=12)
    outs = list(all_outputs(x))
    task = GraphAlignmentTask(tau=0)
    for _ in range(50):
        a, b = outs[int(rng.integers(len(outs)))], outs[int(rng.integers(len(outs)))]
        c = task.cost(a, b)
        assert c >= 0
        assert (c == 0) == (a == b)

    # hand values: word 0 = [n0 n1] | [n2], word 1 = [n3]; no pauses
    g = build_word_graph([[seg(rng, 2), seg(rng, 1)], [seg(rng, 1)]], None, between="none",
                         leading="none", trailing="none")
    ref = make_path(g, [0, 1, 3], [0, 4, 9])
    t1 = GraphAlignmentTask(tau=1)
    assert t1.cost(ref, make_path(g, [0, 1, 3], [0, 6, 9])) == pytest.approx(1 / 3)  # |6-4|-1 = 1
    # other pronunciation: node 2 (starts word 0 at 0: d = 0) is extra, nodes 0, 1 missing: 3 P;
    # shared node 3 starts at 12: |12-9|-1 = 2
    assert t1.cost(ref, make_path(g, [2, 3], [0, 12])) == pytest.approx((3 * 2.0 + 2) / 3)
    t2 = GraphAlignmentTask(cost_name="tau_alignment", tau=1)
    assert t2.cost(ref, make_path(g, [2, 3], [0, 12])) == pytest.approx((3 * 1.0 + 1) / 3)


def test_decode_many_matches_decode():
    rng = np.random.default_rng(11)
    x = toy_graph_input(rng, T=30, n_words=3)
    task = GraphAlignmentTask(n_jobs=2)
    ws = rng.normal(size=(5, 7))
    assert all(a == task.decode(x, w) for a, w in zip(task.decode_many(x, ws), ws))


# --------------------------------------------------------------------------------------
# (c) a trainer of the learning core on graph examples
# --------------------------------------------------------------------------------------


def planted_example(rng, T=60, n_words=3):
    """Scores that favour the true phones in their true segments; a graph with distractors."""
    words, truth_alts = [], []
    for _ in range(n_words):
        alts = [seg(rng, int(rng.integers(2, 4)), 12) for _ in range(2)]
        words.append(alts)
        truth_alts.append(int(rng.integers(2)))
    g = build_word_graph(words, pause_seg(rng))
    pauses = rng.random(n_words + 1) < 0.5
    nodes = g.path_of(truth_alts, pauses)
    K = len(nodes)
    cuts = np.sort(rng.choice(np.arange(2, T - 1), size=K - 1, replace=False))
    while np.any(np.diff(np.concatenate(([0], cuts, [T]))) < 2) or np.any(np.diff(np.concatenate(([0], cuts, [T]))) > 12):
        cuts = np.sort(rng.choice(np.arange(2, T - 1), size=K - 1, replace=False))
    starts = np.concatenate(([0], cuts)).astype(np.int64)
    scores = rng.normal(scale=1.0, size=(T, P))
    frames = rng.normal(scale=0.3, size=(T, D))
    ends = np.append(starts[1:], T)
    for n, s, e in zip(nodes, starts, ends):
        scores[s:e, g.classes[n]] += 2.0
        frames[s:e] += rng.normal(size=D)  # a spectral jump at every boundary
    x = make_graph_input(scores, frames, g)
    return x, make_path(g, nodes, starts)


def test_trainer_runs_and_reduces_cost():
    rng = np.random.default_rng(3)
    data = [planted_example(rng) for _ in range(6)]
    X = [d[0] for d in data]
    Y = [d[1] for d in data]
    task = GraphAlignmentTask()
    w0 = np.zeros(7)
    cost0 = task.mean_cost(X, Y, w0)
    for name in ("perceptron", "svm"):
        trainer = make_trainer(name, epochs=3, seed=0)
        res = trainer.fit(task, X, Y)
        w = getattr(res, "w_", None)
        w = res.w if w is None else w
        assert w.shape == (7,) and np.all(np.isfinite(w))
        assert task.mean_cost(X, Y, w) < cost0
