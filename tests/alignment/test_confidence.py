"""Per-boundary confidence and the transcript-mismatch check (aligner.alignment.review.confidence)."""

import io

import numpy as np
import pytest

from aligner.alignment.review.confidence import (UTTERANCE_EVIDENCE_NAMES, BoundaryConfidence, UtteranceCheck,
                                                 boundary_confidences, utterance_evidence)
from aligner.alignment.review.evidence import MARGIN_CAP, MAX_MOVE, N_EVIDENCE, N_NUMERIC, boundary_evidence, move_drops
from aligner.alignment.model import AlignmentModel, DurationStats
from aligner.alignment.decoding.task import AlignmentTask
from aligner.errors import ModelError
from aligner.phones.sets import CLASSES39

from tests.conftest import TIMIT, needs_timit


class _Model:
    """What the confidence code reads of an AlignmentModel: durations, weights, min_frames."""

    def __init__(self, weights=(1.0, 0.5, 0.5, 0.2, 0.2, 0.5, -0.3)):
        n = len(CLASSES39)
        self.durations = DurationStats(np.full(n, 8.0), np.full(n, 3.0), np.full(n, 30, np.int64))
        self.weights = np.asarray(weights, float)
        self.min_frames = 1

    always_scored = None  # every class scored
    pauses_unpaced = False  # every phone in the tempo term, as the English models

    def unpaced(self, classes):
        return AlignmentModel.unpaced(self, classes)

    def transcript_scores(self, scores, classes):
        return AlignmentModel.transcript_scores(self, scores, classes)

    def make_input(self, frames, classes, scores):
        return AlignmentModel.make_input(self, frames, classes, scores)


def _utterance(seed=0, T=80, K=8):
    rng = np.random.default_rng(seed)
    classes = rng.choice(len(CLASSES39), size=K, replace=False)
    true = np.sort(rng.choice(np.arange(3, T - 3), size=K - 1, replace=False))
    labels = np.repeat(classes, np.diff(np.r_[0, true, T]))
    scores = rng.normal(scale=1.0, size=(T, len(CLASSES39)))
    scores[np.arange(T), labels] += 2.5
    frames = rng.normal(size=(T, 42)) + 2.0 * np.eye(42)[labels % 42]
    return frames, scores.astype(np.float32), classes


def _decode(model, frames, scores, classes):
    x = model.make_input(frames, classes, scores)
    return AlignmentTask().decode(x, model.weights)


def _fake_evidence(n, seed=0):
    """Evidence rows whose first column drives correctness, with valid class columns."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(n, N_EVIDENCE))
    E[:, N_NUMERIC:] = rng.integers(0, len(CLASSES39), size=(n, 2))
    correct = rng.random(n) < 1 / (1 + np.exp(-(1.5 + 2.0 * E[:, 0])))
    groups = np.arange(n) % 5
    return E, correct, groups


def test_evidence_shape_and_finite():
    model = _Model()
    frames, scores, classes = _utterance()
    y = _decode(model, frames, scores, classes)
    E = boundary_evidence(model, frames, scores, classes, y)
    assert E.shape == (len(classes) - 1, N_EVIDENCE)
    assert np.all(np.isfinite(E))
    np.testing.assert_array_equal(E[:, -2:], np.c_[classes[:-1], classes[1:]])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("neighbours", [0, 1])
def test_margins_are_non_negative_at_the_dp_optimum(seed, neighbours):
    model = _Model()
    frames, scores, classes = _utterance(seed)
    y = _decode(model, frames, scores, classes)
    D = move_drops(model, frames, scores, classes, y, max_move=MAX_MOVE, neighbour_moves=neighbours)
    assert D.shape == (len(classes), 2 * MAX_MOVE + 1)
    assert D.min() >= -1e-9
    np.testing.assert_array_equal(D[:, MAX_MOVE], 0.0)


def test_margin_equals_the_objective_difference():
    """A single-boundary drop is K w . (phi(y) - phi(y')) of the task's own feature map."""
    model = _Model()
    frames, scores, classes = _utterance(3)
    y = _decode(model, frames, scores, classes)
    x = model.make_input(frames, classes, scores)
    task = AlignmentTask()
    D = move_drops(model, frames, scores, classes, y, neighbour_moves=0)
    K = len(y)
    for k in (1, K // 2, K - 1):
        for d in (-2, 1, 3):
            y2 = y.copy()
            y2[k] += d
            lengths = np.diff(np.r_[y2, len(frames)])
            if np.any(lengths < 1) or np.any(lengths > x.max_len):
                assert D[k, MAX_MOVE + d] == MARGIN_CAP
                continue
            expect = K * (task.score(x, y, model.weights) - task.score(x, y2, model.weights))
            assert D[k, MAX_MOVE + d] == pytest.approx(min(expect, MARGIN_CAP), abs=1e-9)


def test_neighbours_free_margins_are_at_most_the_fixed_ones():
    model = _Model()
    frames, scores, classes = _utterance(4)
    y = _decode(model, frames, scores, classes)
    fixed = move_drops(model, frames, scores, classes, y, neighbour_moves=0)
    free = move_drops(model, frames, scores, classes, y, neighbour_moves=1)
    assert np.all(free <= fixed + 1e-9)



@pytest.mark.parametrize("seed", [3, 6])
def test_margins_with_free_neighbours_equal_brute_force_rescoring(seed):
    """With its neighbours free to follow, each drop is the best objective difference over every
    (e1, d, e2) move that keeps all lengths within the decoder's limits, scored by the task."""
    model = _Model()
    model.durations.max_frames[:] = 14  # some moves break the length limit
    frames, scores, classes = _utterance(seed, T=70, K=8)
    y = _decode(model, frames, scores, classes)
    x = model.make_input(frames, classes, scores)
    task = AlignmentTask()
    K, T = len(y), len(frames)
    D = move_drops(model, frames, scores, classes, y, neighbour_moves=1)
    base = K * task.score(x, y, model.weights)
    capped = 0
    for k in range(1, K):
        for d in range(-MAX_MOVE, MAX_MOVE + 1):
            best = -np.inf
            for e1 in ((-1, 0, 1) if k >= 2 else (0,)):
                for e2 in ((-1, 0, 1) if k + 1 < K else (0,)):
                    y2 = y.copy()
                    y2[k] += d
                    y2[k - 1] += e1
                    if k + 1 < K:
                        y2[k + 1] += e2
                    lengths = np.diff(np.r_[y2, T])
                    if np.all(lengths >= 1) and np.all(lengths <= x.max_len):
                        best = max(best, K * task.score(x, y2, model.weights))
            if d == 0:
                best = max(best, base)
            expect = MARGIN_CAP if best == -np.inf else min(base - best, MARGIN_CAP)
            capped += expect == MARGIN_CAP
            assert D[k, MAX_MOVE + d] == pytest.approx(expect, abs=1e-9), (k, d)
    assert capped > 0


def test_evidence_is_the_same_for_float32_and_float64_inputs():
    model = _Model()
    frames, scores, classes = _utterance(7)
    y = _decode(model, frames, scores, classes)
    E32 = boundary_evidence(model, frames.astype(np.float32), scores.astype(np.float32), classes, y)
    E64 = boundary_evidence(model, frames.astype(np.float32).astype(np.float64), scores.astype(np.float64),
                            classes, y)
    np.testing.assert_allclose(E32, E64, rtol=0, atol=1e-12)


def test_evidence_columns_match_their_definitions():
    """Spot checks of the evidence against the module docstring's formulas."""
    model = _Model()
    frames, scores, classes = _utterance(8, T=90, K=9)
    y = _decode(model, frames, scores, classes)
    E = boundary_evidence(model, frames, scores, classes, y)
    s = scores.astype(np.float64)
    agree = s - s.max(axis=1, keepdims=True)
    T, K = len(frames), len(y)
    lengths = np.diff(np.r_[y, T])
    D = np.maximum(move_drops(model, frames, scores, classes, y, neighbour_moves=1)[1:], 0.0)
    for k in range(1, K):
        row, b, p, q = E[k - 1], y[k], classes[k - 1], classes[k]
        assert row[0] == pytest.approx(np.log1p(D[k - 1, [MAX_MOVE - 1, MAX_MOVE + 1]].min()))
        assert row[1] == pytest.approx(np.log1p(np.r_[D[k - 1, :MAX_MOVE - 1], D[k - 1, MAX_MOVE + 2:]].min()))
        w = np.exp(-D[k - 1] + D[k - 1].min())
        assert row[2] == pytest.approx(np.log(w[MAX_MOVE - 1:MAX_MOVE + 2].sum() / w.sum()))
        for i, off in enumerate(range(-3, 3)):
            t = min(max(b + off, 0), T - 1)
            assert row[3 + i] == pytest.approx(np.clip(s[t, p] - s[t, q], -10, 10))
        assert row[11] == pytest.approx(max(agree[b - 1, p], -10))
        assert row[12] == pytest.approx(max(agree[b, q], -10))
        assert row[13] == pytest.approx(agree[y[k - 1]:b, p].mean())
        assert row[16] == pytest.approx(np.clip((lengths[k] - 8.0) / 3.0, -6, 6))
        assert row[20] == pytest.approx(np.log(lengths[k]))
        assert row[21] == pytest.approx(np.linalg.norm(frames[b - 1] - frames[min(b + 1, T - 1)]) / np.sqrt(42))
        assert row[24] == frames[b, 13]
        assert (row[26], row[27]) == (float(k == 1), float(k == K - 1))


@pytest.mark.parametrize("hidden,thresholds", [(0, (20.0,)), (6, (20.0,)), (5, (10.0, 20.0, 40.0))])
def test_network_logit_equals_the_design_matrix_formula(hidden, thresholds):
    """The logit equals the standardised design matrix through each threshold's network, averaged."""
    E, c, g = _fake_evidence(400, seed=3)
    rng = np.random.default_rng(4)
    errors = np.where(c, rng.uniform(0, 20, len(c)), rng.uniform(20.5, 80, len(c)))
    conf = BoundaryConfidence(hidden=hidden, alpha=1.0, thresholds_ms=thresholds).fit(E, c, g, errors_ms=errors)
    p = conf._params
    Z = (BoundaryConfidence._design(E, p) - p["mean"]) / p["scale"]
    expect = np.zeros(len(E))
    for i in range(len(thresholds)):
        H = np.maximum(Z @ p["hidden_weights"][i] + p["hidden_bias"][i], 0.0) if hidden else Z
        expect += H @ p["output_weights"][i] + p["output_bias"][i]
    np.testing.assert_allclose(conf.decision_function(E), expect / len(thresholds), rtol=0, atol=1e-10)


@pytest.mark.parametrize("hidden,calibration", [(0, "platt"), (8, "platt"), (8, "isotonic"), (0, "none")])
def test_calibrator_monotone_and_round_trips(hidden, calibration):
    E, c, g = _fake_evidence(600)
    conf = BoundaryConfidence(hidden=hidden, alpha=1.0, calibration=calibration).fit(E, c, g)
    p = conf.predict_proba(E)
    assert p.shape == (600,) and np.all((p >= 0) & (p <= 1))
    z = conf.decision_function(E)
    order = np.argsort(z)
    assert np.all(np.diff(p[order]) >= -1e-12)  # calibration map is monotone
    # it learned the planted signal
    assert np.corrcoef(z, E[:, 0])[0, 1] > 0.5
    buffer = io.BytesIO()
    np.savez(buffer, **conf.to_arrays())
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as arrays:
        back = BoundaryConfidence.from_arrays(dict(arrays))
    np.testing.assert_allclose(back.predict_proba(E), p)


def test_multi_threshold_model_averages_and_round_trips():
    E, c, g = _fake_evidence(600)
    rng = np.random.default_rng(1)
    errors = np.where(c, rng.uniform(0, 20, len(c)), rng.uniform(20.5, 80, len(c)))
    conf = BoundaryConfidence(hidden=4, alpha=1.0, thresholds_ms=(10, 20, 40)).fit(E, c, g, errors_ms=errors)
    arrays = conf.to_arrays()
    assert arrays["hidden_weights"].shape[0] == 3 and list(arrays["thresholds_ms"]) == [10, 20, 40]
    p = conf.predict_proba(E)
    assert np.corrcoef(conf.decision_function(E), E[:, 0])[0, 1] > 0.5
    back = BoundaryConfidence.from_arrays(dict(arrays))
    np.testing.assert_allclose(back.predict_proba(E), p)
    with pytest.raises(ValueError, match="errors"):
        BoundaryConfidence(thresholds_ms=(10, 20)).fit(E, c, g)


def test_an_old_format_is_refused_with_one_line():
    E, c, g = _fake_evidence(400)
    arrays = BoundaryConfidence(hidden=4, alpha=1.0).fit(E, c, g).to_arrays()
    old = _damaged(arrays, "format_version", np.array(1))
    del old["thresholds_ms"]
    with pytest.raises(ModelError, match="format 1") as exc:
        BoundaryConfidence.from_arrays(old)
    assert "\n" not in str(exc.value)


def test_utterance_threshold_comes_from_training_out_of_fold_scores():
    rng = np.random.default_rng(2)
    ok = np.c_[rng.normal(-0.8, 0.3, 200), rng.uniform(0.7, 0.95, 200), rng.uniform(0, 0.2, 200), rng.normal(0.6, 0.2, 200)]
    bad = np.c_[rng.normal(-2.0, 0.6, 200), rng.uniform(0.3, 0.8, 200), rng.uniform(0.1, 0.8, 200), rng.normal(1.0, 0.3, 200)]
    groups = np.arange(200) % 10
    chk = UtteranceCheck(false_flag_rate=0.02).fit(ok, bad, groups, groups)
    assert 0.0 < chk.flag(ok).mean() <= 0.06
    assert chk.flag(bad).mean() > 0.8
    arrays = chk.to_arrays()
    back = UtteranceCheck.from_arrays(arrays)
    assert back.false_flag_rate == 0.02 and back.threshold_logit == chk.threshold_logit
    # a check saved before the rate was stored (one setting) still loads
    assert UtteranceCheck.from_arrays(_damaged(arrays, "settings", np.array([1.0]))).false_flag_rate == 0.01


def _utterance_rows(n, seed, bad=False):
    """Synthetic utterance evidence (n, 7): mismatched rows have lower agreement columns."""
    rng = np.random.default_rng(seed)
    shift = 1.5 if bad else 0.0
    return np.c_[rng.normal(-0.8 - shift, 0.3, n), rng.uniform(0.7, 0.95, n), rng.uniform(0, 0.2, n),
                 rng.normal(0.6, 0.2, n), rng.normal(-2.0 - 2 * shift, 0.5, n), rng.normal(-2.5 - 2 * shift, 0.5, n),
                 rng.normal(-1.5 - 2 * shift, 0.4, n)]


def test_utterance_evidence_has_local_agreement_columns():
    model = _Model()
    frames, scores, classes = _utterance(5, T=120, K=12)
    y = _decode(model, frames, scores, classes)
    p = np.ones(len(y))
    ev = utterance_evidence(model, frames, scores, classes, y, p)
    assert ev.shape == (len(UTTERANCE_EVIDENCE_NAMES),) == (7,) and np.all(np.isfinite(ev))
    assert np.all(ev[[0, 4, 5, 6]] <= 0.0)
    # one stretch of phones wrong: the local columns drop more than the utterance mean
    wrong = classes.copy()
    wrong[4:7] = (wrong[4:7] + 7) % len(CLASSES39)
    y2 = _decode(model, frames, scores, wrong)
    ev2 = utterance_evidence(model, frames, scores, wrong, y2, p)
    assert ev2[4] < ev[4] and ev2[5] < ev[5]
    assert ev[0] - ev2[0] < ev[4] - ev2[4]
    # the columns by their definitions
    T = len(frames)
    lengths = np.diff(np.r_[y, T])
    agree = scores[np.arange(T), np.repeat(classes, lengths)].astype(np.float64) - scores.max(axis=1)
    phone = np.array([agree[a:a + n].mean() for a, n in zip(y, lengths)])
    q = np.linspace(0.2, 0.9, len(y))
    ev3 = utterance_evidence(model, frames, scores, classes, y, q)
    window = np.convolve(agree, np.ones(40) / 40, mode="valid").min()
    np.testing.assert_allclose(ev3, [agree.mean(), q[1:].mean(), np.mean(q[1:] < 0.5),
                                     np.mean(np.abs((lengths - 8.0) / 3.0)),
                                     np.convolve(phone, np.ones(4) / 4, mode="valid").min(),
                                     np.sort(phone)[:5].mean(), window], rtol=0, atol=1e-12)
    # a single phone and a recording shorter than the window still give finite columns
    one = utterance_evidence(model, frames[:10], scores[:10], classes[:1], np.array([0]), np.ones(1))
    assert np.all(np.isfinite(one)) and one[4] == one[5] == pytest.approx(one[0])


@pytest.mark.parametrize("rule", ["gaussian", "quantile"])
def test_utterance_threshold_rules_round_trip(rule):
    ok, bad = _utterance_rows(200, 0), _utterance_rows(200, 1, bad=True)
    groups = np.arange(200) % 10
    chk = UtteranceCheck(false_flag_rate=0.01, rule=rule).fit(ok, bad, groups, groups)
    assert chk.flag(ok).mean() <= 0.05 and chk.flag(bad).mean() > 0.9
    back = UtteranceCheck.from_arrays(chk.to_arrays())
    assert back.rule == rule and back.threshold_logit == chk.threshold_logit and back.n_columns == 7
    np.testing.assert_array_equal(back.flag(bad), chk.flag(bad))
    with pytest.raises(ValueError, match="rule"):
        UtteranceCheck(rule="median")


def test_utterance_threshold_from_a_subset_of_the_correct_utterances():
    """The threshold can come from some of the correct utterances only (e.g. those given as words,
    whose evidence is lower): set from the lower half, it is lower than when set from all."""
    high, low = _utterance_rows(200, 0), _utterance_rows(200, 2)
    low[:, 0] -= 0.4  # correct, but agreeing less (a dictionary pronunciation, say)
    ok, bad = np.vstack([high, low]), _utterance_rows(200, 1, bad=True)
    groups = np.arange(400) % 10
    pooled = UtteranceCheck().fit(ok, bad, groups, groups[:200])
    subset = UtteranceCheck().fit(ok, bad, groups, groups[:200], threshold_from=np.arange(400) >= 200)
    np.testing.assert_array_equal(subset.coef, pooled.coef)  # the regression is the same
    assert subset.threshold_logit < pooled.threshold_logit
    assert subset.flag(low).sum() <= pooled.flag(low).sum()  # a lower threshold flags none of them more
    with pytest.raises(ValueError, match="threshold_from"):
        UtteranceCheck().fit(ok, bad, groups, groups[:200], threshold_from=np.zeros(400, bool))


def test_a_four_column_check_still_loads_and_reads_the_first_four_columns():
    """Checks saved before the local agreement columns (format 1: no format_version, 4 columns,
    1-2 settings, quantile rule) keep scoring the full evidence as they did."""
    ok, bad = _utterance_rows(100, 2), _utterance_rows(100, 3, bad=True)
    old = UtteranceCheck(rule="quantile").fit(ok[:, :4], bad[:, :4]).to_arrays()
    assert int(old["format_version"]) == 1
    del old["format_version"]
    old["settings"] = old["settings"][:2]
    back = UtteranceCheck.from_arrays(old)
    assert back.rule == "quantile" and back.n_columns == 4
    np.testing.assert_allclose(back.logit(bad), back.logit(bad[:, :4]))
    # a 7-column check needs the 7 columns; a newer format is refused in one line
    new = UtteranceCheck().fit(ok, bad).to_arrays()
    with pytest.raises(ValueError, match="7 columns"):
        UtteranceCheck.from_arrays(new).logit(bad[:, :4])
    for damaged, match in [(_damaged(new, "format_version", np.array(3)), "format 3"),
                           (_damaged(new, "coef", new["coef"][:4]), "format 2"),
                           (_damaged(new, "settings", np.array([1.0, 0.01, 5.0])), "rule")]:
        with pytest.raises(ModelError, match=match) as exc:
            UtteranceCheck.from_arrays(damaged)
        assert "\n" not in str(exc.value)


def _damaged(arrays, key, value):
    out = dict(arrays)
    out[key] = value
    return out


def test_damaged_arrays_are_refused_with_one_line():
    E, c, g = _fake_evidence(400)
    arrays = BoundaryConfidence(hidden=4, alpha=1.0).fit(E, c, g).to_arrays()
    bad = [
        {k: v for k, v in arrays.items() if k != "coef" and k != "output_weights"},
        _damaged(arrays, "mean", arrays["mean"][:-1]),
        _damaged(arrays, "scale", np.zeros_like(arrays["scale"])),
        _damaged(arrays, "hidden_weights", np.full_like(arrays["hidden_weights"], np.nan)),
        _damaged(arrays, "platt", np.array([-1.0, 0.0])),
        _damaged(arrays, "settings", arrays["settings"][:3]),
        _damaged(arrays, "pair_logit", np.zeros(3)),
    ]
    for a in bad:
        with pytest.raises(ModelError) as exc:
            BoundaryConfidence.from_arrays(a)
        assert "\n" not in str(exc.value) and "boundary confidence" in str(exc.value)


def test_unfitted_and_one_sided_fits_fail_clearly():
    with pytest.raises(ModelError):
        BoundaryConfidence().predict_proba(np.zeros((1, N_EVIDENCE)))
    E, c, g = _fake_evidence(50)
    with pytest.raises(ValueError, match="both"):
        BoundaryConfidence().fit(E, np.ones(50, bool), g)


def test_utterance_check_separates_and_round_trips():
    rng = np.random.default_rng(0)
    ok = np.c_[rng.normal(-0.8, 0.3, 60), rng.uniform(0.8, 0.95, 60), rng.uniform(0, 0.1, 60), rng.normal(0.6, 0.1, 60)]
    bad = np.c_[rng.normal(-3.5, 0.5, 60), rng.uniform(0.3, 0.6, 60), rng.uniform(0.3, 0.8, 60), rng.normal(1.2, 0.3, 60)]
    chk = UtteranceCheck().fit(ok, bad)
    assert not chk.flag(ok).any() and chk.flag(bad).all()
    back = UtteranceCheck.from_arrays({k: np.asarray(v) for k, v in chk.to_arrays().items()})
    np.testing.assert_array_equal(back.flag(bad), chk.flag(bad))
    with pytest.raises(ModelError):
        UtteranceCheck.from_arrays(_damaged(chk.to_arrays(), "coef", np.zeros(2)))


# --------------------------------------------------------------------------------------
# real data
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def timit_confidence():
    """The shipped model, its decodes of a few TIMIT utterances, and a confidence model fitted on
    them (in-sample; enough to compare a boundary with a deliberately shifted copy)."""
    from tests.conftest import TIMIT

    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT}")
    import warnings

    from aligner import api
    from aligner.alignment.training import load_utterance
    from aligner.io.corpus import find_utterances

    model = api.load_model()
    decodes = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        utts = [u for u in find_utterances(TIMIT)][::8][:12]
        for u in utts:
            d = load_utterance(u)
            scores = model.classifier.scores(d.frames)
            x = model.make_input(d.frames, d.classes, scores, symbols=d.symbols)
            y = model.align_frames(x)
            starts = model.start_times(x, y, scores, d.frames, d.duration_s)
            E = boundary_evidence(model, d.frames, scores, d.classes, y, starts, d.symbols)
            correct = np.abs(starts[1:] - d.starts_s[1:]) <= 0.020 + 1e-9
            decodes.append((d, scores, y, starts, E, correct))
    E = np.vstack([t[4] for t in decodes])
    c = np.concatenate([t[5] for t in decodes])
    g = np.concatenate([[t[0].speaker] * len(t[5]) for t in decodes])
    conf = BoundaryConfidence(hidden=0, alpha=10.0).fit(E, c, g)
    return model, conf, decodes


def test_shifted_boundaries_get_lower_confidence(timit_confidence):
    from aligner.frames import phone_start_times

    model, conf, decodes = timit_confidence
    lower = total = 0
    for d, scores, y, starts, _, _ in decodes[:6]:
        p = boundary_confidences(model, d.frames, scores, d.classes, y, starts, confidence=conf, symbols=d.symbols)
        assert p.shape == (len(y),) and p[0] == 1.0 and np.all((p >= 0) & (p <= 1))
        for k in range(2, len(y) - 2, 3):
            for shift in (-3, 3):
                y2 = y.copy()
                y2[k] += shift
                if not (y2[k - 1] < y2[k] < y2[k + 1]):
                    continue
                p2 = boundary_confidences(model, d.frames, scores, d.classes, y2, phone_start_times(y2),
                                          confidence=conf, symbols=d.symbols)
                total += 1
                lower += p2[k] < p[k]
    assert total >= 20
    assert lower / total >= 0.9


def test_a_wrong_transcript_scores_lower_agreement(timit_confidence):
    model, conf, decodes = timit_confidence
    (d, scores, y, _, E, _), (other, *_) = decodes[0], decodes[1]
    p = np.r_[1.0, conf.predict_proba(E)]
    right = utterance_evidence(model, d.frames, scores, d.classes, y, p, d.symbols)
    x = model.make_input(d.frames, other.classes, scores, symbols=other.symbols)
    y2 = model.align_frames(x)
    starts2 = model.start_times(x, y2, scores, d.frames, d.duration_s)
    p2 = boundary_confidences(model, d.frames, scores, other.classes, y2, starts2, confidence=conf,
                              symbols=other.symbols)
    wrong = utterance_evidence(model, d.frames, scores, other.classes, y2, p2, other.symbols)
    assert wrong[0] < right[0] - 1.0
    assert wrong[1] < right[1]


@needs_timit
def test_the_shipped_model_reviews_its_alignments():
    """The shipped model carries a confidence model: every output phone gets a probability, and
    a transcript of another utterance is judged far less likely to match than its own."""
    from aligner import api
    from aligner.io.audio import load_audio
    from aligner.io.transcripts import read_phn
    from aligner.phones.sets import get_phone_set

    model = api.load_model()
    assert model.confidence is not None and model.utterance_check is not None
    wavs = sorted(TIMIT.rglob("*.wav"))
    x = load_audio(wavs[0])
    own = list(read_phn(wavs[0].with_suffix(".phn"))[2])
    other = list(read_phn(wavs[3].with_suffix(".phn"))[2])
    intervals, conf, match = model.align_with_review(x, own, get_phone_set("timit61"))
    assert len(conf) == len(intervals) == len(own) and conf[0] == 1.0
    assert np.all((conf >= 0) & (conf <= 1))
    _, _, wrong = model.align_with_review(x, other, get_phone_set("timit61"))
    assert match > 0.5 > wrong
    # ARPAbet symbols, stops decoded as closure + release: one confidence per input symbol
    arpa = "sil sh iy hh ae d y er d aa r k s uw t sil".split()
    intervals, conf, _ = model.align_with_review(x, arpa, get_phone_set("arpabet"))
    assert len(conf) == len(arpa)


def test_a_recording_checked_in_stretches_is_not_flagged_by_its_worst_one():
    """recording_match: one probability is itself; many give the CHECK_BLOCK_QUANTILE quantile of their
    logits, so one poor stretch in twenty does not flag the recording, and a poor third does."""
    from aligner.alignment.review.confidence import CHECK_BLOCK_QUANTILE, recording_match

    assert recording_match([0.3]) == pytest.approx(0.3)
    good = [0.9] * 19
    assert recording_match(good + [1e-6]) == pytest.approx(0.9)
    assert recording_match(good[:13] + [1e-6] * 7) < 1e-5
    logits = np.linspace(-3, 3, 11)
    p = 1 / (1 + np.exp(-logits))
    assert recording_match(p) == pytest.approx(1 / (1 + np.exp(-np.quantile(logits, CHECK_BLOCK_QUANTILE))))


@needs_timit
def test_minutes_of_speech_with_their_transcript_are_not_flagged_and_another_transcript_is():
    """Forty of the sample's utterances joined (two minutes) with their sentences: not flagged by the
    shipped model's check, which flagged every such recording when it checked it whole; with
    forty other sentences: flagged."""
    import warnings

    from aligner import api
    from aligner.io.audio import load_audio
    from aligner.io.corpus import find_utterances

    utts = find_utterances(TIMIT)
    texts = [u.audio.with_suffix(".txt").read_text().split(maxsplit=2)[2].strip() for u in utts]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = np.concatenate([load_audio(u.audio) for u in utts[:40]])
    model = api.load_model(None)
    right = api.align_words(samples, " ".join(texts[:40]), model, sr=16000)
    wrong = api.align_words(samples, " ".join(texts[40:80]), model, sr=16000)
    assert not model.utterance_check.flags_probability(right.transcript_match)
    assert model.utterance_check.flags_probability(wrong.transcript_match)
