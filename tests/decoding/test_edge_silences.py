"""Silence of any length at a recording's edges: any-length graph nodes (a flat duration
density), the edge silence taking a stop's closure beside it, and words of recordings cut
tight (TIMIT: the shipped model)."""

import warnings

import numpy as np
import pytest

from aligner.alignment.decoding.graph import Segment, build_word_graph
from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input
from aligner.alignment.evaluation.words import read_wrd

from tests.conftest import TIMIT, needs_timit
from tests.decoding.test_graph_task import D, P, all_outputs, seg

SIL = P - 1


def flat_pause(level, mean=4.0, std=1.5, max_frames=8):
    return Segment.make([SIL], [mean], [std], [max_frames], ["h#"], flat_log_density=level)


def test_any_length_node_has_one_density_for_every_length():
    rng = np.random.default_rng(1)
    g = build_word_graph([[seg(rng, 2)]], Segment.make([SIL], [4.0], [1.5], [8], ["pau"]),
                         leading_pause=flat_pause(-1.7), trailing_pause=flat_pause(-2.9))
    assert g.any_length.tolist() == [True, False, False, True]
    x = make_graph_input(rng.normal(size=(12, P)), rng.normal(size=(12, D)), g)
    assert np.all(x.log_dur[0, 1:] == -1.7) and np.all(x.log_dur[-1, 1:] == -2.9)
    assert np.ptp(x.log_dur[1, 1:]) > 0  # the word's phones keep their Gaussian
    with pytest.raises(ValueError):
        Segment.make([SIL], [4.0], [1.5], [8], flat_log_density=float("nan"))


@pytest.mark.parametrize("seed", range(3))
def test_decode_with_any_length_edges_matches_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    words = [[seg(rng, int(rng.integers(1, 3))), seg(rng, int(rng.integers(1, 3)))] for _ in range(2)]
    g = build_word_graph(words, Segment.make([SIL], [3.0], [1.0], [6], ["pau"]),
                         leading_pause=flat_pause(rng.normal()), trailing_pause=flat_pause(rng.normal()))
    T = int(rng.integers(10, 13))
    x = make_graph_input(rng.normal(size=(T, P)), rng.normal(size=(T, D)), g)
    outs = list(all_outputs(x))
    task = GraphAlignmentTask(phone_bonus=0.4)
    for _ in range(3):
        w = rng.normal(size=7)
        y, v = task.decode_with_value(x, w)
        best = max(task.score(x, o, w) for o in outs)
        assert v == pytest.approx(best, abs=1e-9)
        assert task.score(x, y, w) == pytest.approx(best, abs=1e-9)


def test_a_short_leading_silence_divides_its_agreement_by_the_floor(monkeypatch):
    """The silence before the first word divides its summed agreement by at least
    LEADING_SILENCE_MEAN_FRAMES frames (the trailing one and every other phone by their
    length), in the feature map and in the decoder alike."""
    from aligner.alignment.decoding import graph_task
    from aligner.alignment.decoding.graph_task import LEADING_SILENCE_MEAN_FRAMES, GraphPath

    assert LEADING_SILENCE_MEAN_FRAMES == 3
    rng = np.random.default_rng(5)
    g = build_word_graph([[seg(rng, 2)]], Segment.make([SIL], [4.0], [1.5], [8], ["pau"]),
                         leading_pause=flat_pause(-1.0), trailing_pause=flat_pause(-1.0))
    x = make_graph_input(rng.normal(size=(12, P)), rng.normal(size=(12, D)), g)
    assert x.agreement_floors().tolist() == [3, 0, 0, 0]
    task = GraphAlignmentTask()
    for first in (1, 2, 3, 4):  # the leading silence's length, frames
        y = GraphPath(np.array([0, 1, 2, 3]), np.array([0, first, first + 3, 10]), g.word_start[[0, 1, 2, 3]])
        ends = np.append(y.starts[1:], 12)
        classes = g.classes[y.nodes]
        sums = x.cum_agree[classes, ends] - x.cum_agree[classes, y.starts]
        lengths = (ends - y.starts).astype(float)
        want = sums[0] / max(first, 3) + np.sum(sums[1:] / lengths[1:])
        assert task.raw_features(x, y)[0] == pytest.approx(want, rel=1e-12)
    outs = list(all_outputs(x))
    for _ in range(3):  # the decoder's argmax and value under the floor
        w = rng.normal(size=7)
        y, v = task.decode_with_value(x, w)
        assert v == pytest.approx(max(task.score(x, o, w) for o in outs), abs=1e-9)
    monkeypatch.setattr(graph_task, "LEADING_SILENCE_MEAN_FRAMES", 0)
    assert make_graph_input(rng.normal(size=(12, P)), rng.normal(size=(12, D)), g).agreement_floors().tolist() == [0] * 4


def test_edge_silence_takes_a_closure_beside_it():
    closure_first = Segment.make([SIL, 1, 2], [2.0, 2.0, 3.0], [1.0, 1.0, 1.0], [6, 6, 6], ["bcl", "b", "ay"])
    release_first = Segment.make([1, 2], [2.0, 3.0], [1.0, 1.0], [6, 6], ["b", "ay"])
    closure_last = Segment.make([3, SIL], [3.0, 2.0], [1.0, 1.0], [6, 6], ["ae", "tcl"])
    vowel_last = Segment.make([3], [3.0], [1.0], [6], ["ae"])
    pau = Segment.make([SIL], [3.0], [1.0], [6], ["pau"])

    def alternatives(g, w):
        return {tuple(g.labels[n] for n in np.flatnonzero((g.word == w) & (g.alt == a)))
                for a in set(g.alt[g.word == w].tolist())}

    words = [[closure_first, release_first], [closure_last, vowel_last]]
    g = build_word_graph(words, pau, leading_pause=flat_pause(-2.0), trailing_pause=flat_pause(-3.0))
    assert alternatives(g, 0) == {("b", "ay")} and alternatives(g, 1) == {("ae",)}
    # pauses with a duration of their own (between words) leave every alternative
    g = build_word_graph(words, pau)
    assert alternatives(g, 0) == {("bcl", "b", "ay"), ("b", "ay")}
    assert alternatives(g, 1) == {("ae", "tcl"), ("ae",)}
    # a word whose every pronunciation begins with the closure keeps them
    g = build_word_graph([[closure_first]], pau, leading_pause=flat_pause(-2.0))
    assert alternatives(g, 0) == {("bcl", "b", "ay")}


def _timit_samples(name):
    from aligner.io.audio import load_audio

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the repaired SPHERE headers
        return load_audio(TIMIT / f"{name}.wav")


@needs_timit
def test_first_word_after_12_ms_of_silence_before_a_prevoiced_stop():
    """``birthday`` (dr3-madc0/sx107): its /b/ voiced for 65 ms before the release, which
    TIMIT's annotators leave in h#; cut 12 ms before the voicing, the word was placed at 0 s."""
    from aligner import api

    name = "dr3-madc0/sx107"
    samples = _timit_samples(name)
    cut_s = 0.063  # 12 ms before the voicing (benchmarks.words.eval_tight_edges's prevoiced copy)
    ref = read_wrd(TIMIT / f"{name}.wrd")[0]
    result = api.align_words(samples[int(cut_s * 16000):], TIMIT / f"{name}.txt", sr=16000)
    first = dict(result.tiers)["words"][0]
    assert first.label == "birthday"
    assert abs(first.start_s - (ref.start_s - cut_s)) < 0.020


@needs_timit
def test_first_words_of_recordings_cut_30_ms_before_them():
    """Cut to 30 ms before the first word, most first words start within 20 ms (before the
    edge silence could be of any length, fewer than 3 in 10 did over the sample)."""
    from aligner import api

    errors = []
    for speaker in ("dr1-fvmh0", "dr3-madc0"):
        for txt in sorted((TIMIT / speaker).glob("*.txt")):
            name = f"{speaker}/{txt.stem}"
            ref = read_wrd(TIMIT / f"{name}.wrd")
            cut = int(round((ref[0].start_s - 0.030) * 16000))
            result = api.align_words(_timit_samples(name)[cut:], txt, sr=16000)
            errors.append(dict(result.tiers)["words"][0].start_s - (ref[0].start_s - cut / 16000))
    assert len(errors) == 20
    # 0.65 when the leading silence's agreement was its mean over its own frames (floor 0)
    assert np.mean(np.abs(errors) < 0.020) >= 0.75


def test_the_last_words_last_phone_is_lengthened():
    """Phrase-final lengthening: the last word's last phone has its mean and deviation
    FINAL_LENGTHENING times the same phone's in the word before (the English model has no
    statistics of phones before a pause); a model that has them gives them to the last word's
    last phone alone, every other word's phones keeping those within an utterance."""
    import dataclasses

    from aligner import api
    from aligner.alignment.decoding import words as wd

    model = api.load_model()
    g, _ = wd.word_graph(model, [[("DH", "AH0")], [("DH", "AH0")]])
    first, last = (np.flatnonzero(g.word == w) for w in (0, 1))
    # the first word's last phone twice: on to the next word, and lengthened into a pause (below)
    assert [g.labels[n] for n in first] == ["DH", "AH0", "AH0"] and [g.labels[n] for n in last] == ["DH", "AH0"]
    assert g.dur_mean[last[0]] == g.dur_mean[first[0]] and g.dur_std[last[0]] == g.dur_std[first[0]]
    assert g.dur_mean[last[1]] == pytest.approx(wd.FINAL_LENGTHENING * g.dur_mean[first[1]])
    assert g.dur_std[last[1]] == pytest.approx(wd.FINAL_LENGTHENING * g.dur_std[first[1]])
    assert g.max_frames[last[1]] >= g.max_frames[first[1]]
    d = model.durations
    with_final = dataclasses.replace(model, durations=dataclasses.replace(  # by class alone, as the universal views
        d, final_mean=d.mean * 2, final_std=d.std * 3, final_max_frames=d.max_frames,
        silence_class=model.inventory.silence_index, symbols=np.zeros(0, "<U8"), symbol_mean=np.zeros(0),
        symbol_std=np.zeros(0), symbol_max_frames=np.zeros(0, np.int64)))
    g, _ = wd.word_graph(with_final, [[("DH", "AH0")], [("DH", "AH0")]])
    first, last = (np.flatnonzero(g.word == w) for w in (0, 1))
    assert [g.labels[n] for n in first] == ["DH", "AH0"]  # no second node before a pause: its own statistics
    ah = g.classes[first[1]]
    assert g.dur_mean[first[1]] == pytest.approx(d.mean[ah]) and g.dur_std[first[1]] == pytest.approx(d.std[ah])
    assert g.dur_mean[last[1]] == pytest.approx(2 * d.mean[ah]) and g.dur_std[last[1]] == pytest.approx(3 * d.std[ah])
    assert g.dur_mean[last[0]] == g.dur_mean[first[0]]


def test_a_final_fricative_is_lengthened_by_its_broad_class_factor():
    """A last phone of a broad class in FINAL_LENGTHENING_BY_BROAD_CLASS (a fricative) takes its
    class's factor, before the utterance's end and before a pause between words alike; a vowel
    keeps FINAL_LENGTHENING."""
    from aligner import api
    from aligner.alignment.decoding import words as wd

    model = api.load_model()
    s_class = model.inventory.classes.index("s")
    assert model.inventory.broad[s_class] == "fricative"
    factor = wd.FINAL_LENGTHENING_BY_BROAD_CLASS["fricative"]
    assert factor != wd.FINAL_LENGTHENING
    assert wd.final_lengthening(model, s_class) == factor
    assert wd.final_lengthening(model, model.inventory.classes.index("aa")) == wd.FINAL_LENGTHENING
    g, _ = wd.word_graph(model, [[("AH0", "S")], [("AH0", "S")]])
    first, last = (np.flatnonzero(g.word == w) for w in (0, 1))
    assert [g.labels[n] for n in first] == ["AH0", "S", "S"]  # on to the next word / into a pause
    assert g.dur_mean[last[1]] == pytest.approx(factor * g.dur_mean[first[1]])
    assert g.dur_std[last[1]] == pytest.approx(factor * g.dur_std[first[1]])
    assert g.dur_mean[first[2]] == pytest.approx(factor * g.dur_mean[first[1]])
    assert g.dur_mean[last[0]] == g.dur_mean[first[0]]


def test_a_words_first_stop_or_glide_is_lengthened():
    """Initial strengthening: a word's first phone of a class in WORD_INITIAL_LENGTHENING (a stop's
    release, a glide) has its mean and deviation that factor times the same symbol's inside a word;
    its closure, a vowel and a model with statistics before a pause are left as they are."""
    import dataclasses

    from aligner import api
    from aligner.alignment.decoding import words as wd

    model = api.load_model()
    words = [[("AH0",)], [("T", "AH0")], [("AH0", "T", "AH0")], [("W", "AH0")], [("AH0", "W", "AH0")], [("AH0",)]]
    g, _ = wd.word_graph(model, words)

    def node(w, label):
        return [int(n) for n in np.flatnonzero(g.word == w) if g.labels[n] == label][0]

    stop, glide = wd.WORD_INITIAL_LENGTHENING["stop"], wd.WORD_INITIAL_LENGTHENING["glide"]
    assert stop > 1 and glide > 1
    assert g.dur_mean[node(1, "T")] == pytest.approx(stop * g.dur_mean[node(2, "T")])
    assert g.dur_std[node(1, "T")] == pytest.approx(stop * g.dur_std[node(2, "T")])
    assert g.dur_mean[node(1, "tcl")] == pytest.approx(g.dur_mean[node(2, "tcl")])
    assert g.dur_mean[node(3, "W")] == pytest.approx(glide * g.dur_mean[node(4, "W")])
    assert g.dur_mean[node(2, "AH0")] == pytest.approx(g.dur_mean[node(4, "AH0")])  # a vowel: no factor
    d = model.durations
    g, _ = wd.word_graph(dataclasses.replace(model, durations=dataclasses.replace(
        d, final_mean=d.mean, final_std=d.std, final_max_frames=d.max_frames,
        silence_class=model.inventory.silence_index)), words)
    assert g.dur_mean[node(1, "T")] == pytest.approx(g.dur_mean[node(2, "T")])


def _successors(g, node: int) -> set:
    return {int(m) for m in range(len(g.classes)) if node in g.pred_idx[g.pred_ptr[m]:g.pred_ptr[m + 1]]}


@pytest.mark.parametrize("pronunciation", [("DH", "AH0"), ("AH0",)], ids=["two phones", "one phone"])
def test_a_words_last_phone_before_a_pause_is_lengthened(pronunciation):
    """Before a pause between words, a word's last phone takes the utterance-final statistics
    (PRE_PAUSE_LENGTHENING): the graph holds it twice, its own statistics leading on to the next
    word and the lengthened ones leading into the pause alone; both after the same phones."""
    from aligner import api
    from aligner.alignment.decoding import words as wd

    g, _ = wd.word_graph(api.load_model(), [[pronunciation], [("DH", "AH0")]])
    first = np.flatnonzero(g.word == 0)
    plain, longer = first[-2:]
    assert g.labels[plain] == g.labels[longer] == "AH0" and g.word[plain] == g.word[longer] == 0
    assert g.dur_mean[longer] == pytest.approx(wd.FINAL_LENGTHENING * g.dur_mean[plain])
    pause = [n for n in range(len(g.classes)) if g.is_pause[n] and g.pause_slot[n] == 1]
    assert len(pause) == 1 and _successors(g, longer) == set(pause)
    next_word = int(np.flatnonzero(g.word == 1)[0])
    assert _successors(g, plain) == {next_word} and next_word in _successors(g, pause[0])
    preds = lambda n: set(g.pred_idx[g.pred_ptr[n]:g.pred_ptr[n + 1]].tolist())  # noqa: E731
    assert preds(plain) == preds(longer)


@needs_timit
def test_last_words_of_recordings_cut_30_ms_after_them():
    """Cut to 30 ms after the last word, the last word ends within 25 ms of the reference on
    average (before the last phone was lengthened and the trailing silence scored like the
    leading one, about 30 ms: last words ran to the recording's end, or ended early where a
    fading end sounded like silence)."""
    from aligner import api

    errors = []
    for speaker in ("dr1-fvmh0", "dr3-madc0"):
        for txt in sorted((TIMIT / speaker).glob("*.txt")):
            name = f"{speaker}/{txt.stem}"
            ref = read_wrd(TIMIT / f"{name}.wrd")
            end = int(round((ref[-1].end_s + 0.030) * 16000))
            result = api.align_words(_timit_samples(name)[:end], txt, sr=16000)
            errors.append(dict(result.tiers)["words"][-1].end_s - ref[-1].end_s)
    assert len(errors) == 20
    assert np.mean(np.abs(errors)) < 0.025


def test_a_phone_transcripts_last_phone_is_lengthened():
    """A phone transcript's last phone (before its final silence, or the last one) takes the
    word graph's phrase-final factor for a duration table without statistics of phones before
    a pause (the English model); a closure last (silence class) and inner phones keep theirs."""
    from aligner import api
    from aligner.alignment.decoding.task import (FINAL_LENGTHENING, FINAL_LENGTHENING_BY_BROAD_CLASS,
                                                 phrase_final_lengthened)
    from aligner.phones.sets import TIMIT39_INVENTORY as inv

    c = inv.classes.index
    mean, std, mx = np.array([20.0, 8.0, 10.0, 9.0]), np.array([5.0, 2.0, 3.0, 2.0]), np.array([90, 30, 40, 35])
    classes = np.array([c("sil"), c("aa"), c("t"), c("sil")])
    m2, s2, x2 = phrase_final_lengthened(inv, classes, mean, std, mx)
    assert m2[2] == pytest.approx(10.0 * FINAL_LENGTHENING) and s2[2] == pytest.approx(3.0 * FINAL_LENGTHENING)
    assert x2[2] == int(np.ceil(40 * FINAL_LENGTHENING))
    assert np.array_equal(np.delete(m2, 2), np.delete(mean, 2)) and mean[2] == 10.0  # the arguments kept
    fric = np.array([c("sil"), c("aa"), c("s")])  # no final silence: the last phone
    assert phrase_final_lengthened(inv, fric, mean[:3], std[:3], mx[:3])[0][2] == pytest.approx(
        10.0 * FINAL_LENGTHENING_BY_BROAD_CLASS["fricative"])
    closure = np.array([c("aa"), c("sil"), c("sil")])  # an unreleased closure before the silence
    assert np.array_equal(phrase_final_lengthened(inv, closure, mean[:3], std[:3], mx[:3])[0], mean[:3])
    model = api.load_model()
    assert not len(model.durations.final_mean)
    got = model.phone_durations(classes, ["h#", "aa", "t", "h#"])
    table = model.durations.for_phones(classes, ["h#", "aa", "t", "h#"])
    assert got[0][2] == pytest.approx(table[0][2] * FINAL_LENGTHENING) and np.array_equal(got[0][:2], table[0][:2])
