"""Vowel duration task: AVD reader, feature map by hand, decoder against brute force."""

import math

import numpy as np
import pytest
from scipy import stats

from aligner.errors import AlignmentError, FeatureError
from aligner.features.vowel_acoustics import COLUMN_NAMES, VOWEL_COLUMNS
from aligner.learn import make_trainer
from aligner.learn.costs import onset_offset_cost
from aligner.vowels.task import (
    DEFAULT_N_COLUMNS,
    DurationPrior,
    VowelTask,
    fit_vowel_task,
    make_vowel_input,
    n_vowel_features,
    normalise_cut,
    vowel_feature_names,
)
from benchmarks.vowels.avd import (
    PEER_COLUMN_NAMES,
    PEER_COLUMNS,
    PEER_COLUMNS_NO_NASAL,
    PEER_SEARCH,
    PEER_UNIT_COLUMNS,
    PEER_ZSCORED_COLUMNS,
    crop_avd_example,
    peer_ranges,
    random_avd_crops,
    read_avd_example,
    read_avd_features,
    read_avd_labels,
    read_avd_list,
)

from tests.conftest import VOWEL_TUTORIAL as VOWELS


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def random_case(rng, T=28, C=3, widths=(1, 3), min_dur=2, max_dur=9, ranges=True):
    feats = rng.normal(size=(T, C))
    onset_range = (int(rng.integers(0, 4)), int(rng.integers(T - 8, T))) if ranges else None
    offset_range = (int(rng.integers(2, 8)), int(rng.integers(T - 4, T))) if ranges else None
    x = make_vowel_input(feats, min_dur, max_dur, onset_range, offset_range, columns=None,
                         widths=widths, outside_width=int(rng.integers(1, 5)))
    prior = DurationPrior(mean=float(rng.uniform(3, 8)), std=float(rng.uniform(1, 3)),
                          log_mean=float(rng.uniform(1, 2)), log_std=float(rng.uniform(0.2, 0.6)))
    task = VowelTask(tau_on=float(rng.integers(0, 3)), tau_off=float(rng.integers(0, 3)),
                     n_columns=C, n_widths=len(widths), prior=prior,
                     center=rng.normal(size=n_vowel_features(C, len(widths))),
                     scale=rng.uniform(0.5, 2.0, size=n_vowel_features(C, len(widths))))
    return x, task


def all_pairs(x):
    for b in range(x.onset_lo, x.onset_hi + 1):
        for e in range(max(b + x.min_dur, x.offset_lo), min(b + x.max_dur, x.offset_hi) + 1):
            yield b, e


def brute_force(task, x, w, y=None, eps=0.0):
    best, arg = -np.inf, None
    for b, e in all_pairs(x):
        v = task.score(x, (b, e), w)
        if y is not None:
            v += eps * task.cost(y, np.array([b, e]))
        if v > best:
            best, arg = v, (b, e)
    return np.array(arg), best


# --------------------------------------------------------------------------------------
# layout
# --------------------------------------------------------------------------------------


def test_default_layout_is_116():
    assert n_vowel_features() == 116
    assert DEFAULT_N_COLUMNS == len(VOWEL_COLUMNS) == len(PEER_COLUMNS) == len(PEER_COLUMN_NAMES)
    FEATURE_NAMES = tuple(vowel_feature_names([COLUMN_NAMES[c] for c in VOWEL_COLUMNS]))
    assert len(FEATURE_NAMES) == 116 == len(set(FEATURE_NAMES))
    assert VowelTask().n_features == 116
    assert FEATURE_NAMES[0] == "onset_edge_short_term_energy_10ms"
    assert FEATURE_NAMES[48] == "offset_edge_short_term_energy_10ms"
    assert FEATURE_NAMES[96] == "inside_vs_outside_short_term_energy"
    assert FEATURE_NAMES[112:] == ("dur_log_gamma", "dur_log_gauss", "dur_log_lognormal", "dur_linear")
    assert len(vowel_feature_names(["a", "b"], (1, 2, 3, 4))) == n_vowel_features(2, 4) == 2 * 9 + 4


# --------------------------------------------------------------------------------------
# the feature map by hand
# --------------------------------------------------------------------------------------


def test_phi_edges_and_inside_by_hand():
    T = 40
    ramp = np.arange(T, dtype=float)  # column 0: x_t = t
    step = np.zeros(T)
    step[10:20] = 1.0  # column 1: 1 inside frames 10..19, 0 elsewhere
    x = make_vowel_input(np.column_stack([ramp, step]), 3, 20, columns=None, widths=(2, 5),
                         outside_width=4)
    task = VowelTask(n_columns=2, n_widths=2)
    f = task.phi_raw(x, (10, 19))
    # onset edges at t_b = 10 (dims: col0 w2, col0 w5, col1 w2, col1 w5)
    # ramp: mean x[t:t+w] - mean x[t-w:t] = w;  step at its rise: 1 - 0
    np.testing.assert_allclose(f[0:4], [2.0, 5.0, 1.0, 1.0])
    # offset edges before frame t_e + 1 = 20: ramp again w; step falls 0 - 1
    np.testing.assert_allclose(f[4:8], [2.0, 5.0, -1.0, -1.0])
    # inside vs outside: ramp mean(10..19) = 14.5, before 6..9 -> 7.5, after 20..23 -> 21.5
    np.testing.assert_allclose(f[8], 14.5 - 0.5 * (7.5 + 21.5))
    np.testing.assert_allclose(f[9], 1.0 - 0.0)
    # clipped window at the start of the cut: onset 1, width 5 -> before = x[0:1]
    g = task.phi_raw(x, (1, 12))
    np.testing.assert_allclose(g[1], np.mean(ramp[1:6]) - ramp[0])


def test_phi_duration_prior_matches_scipy():
    prior = DurationPrior(mean=50.0, std=12.0, log_mean=3.9, log_std=0.25)
    d = np.array([9.0, 37.0, 50.0, 91.0])
    got = prior.features(d)
    k, theta = 50.0 ** 2 / 144.0, 144.0 / 50.0
    np.testing.assert_allclose(got[:, 0], stats.gamma.logpdf(d, k, scale=theta))
    np.testing.assert_allclose(got[:, 1], stats.norm.logpdf(d, 50.0, 12.0))
    np.testing.assert_allclose(got[:, 2], stats.lognorm.logpdf(d, 0.25, scale=math.exp(3.9)))
    np.testing.assert_allclose(got[:, 3], d / 50.0)
    # and phi uses them for d = t_e - t_b
    x = make_vowel_input(np.random.default_rng(0).normal(size=(120, 2)), 9, 91, columns=None)
    task = VowelTask(n_columns=2, prior=prior)
    np.testing.assert_allclose(task.phi_raw(x, (10, 47))[-4:], prior.features(37.0))


def test_duration_prior_fit():
    p = DurationPrior.fit([40, 50, 60])
    assert p.mean == pytest.approx(50.0)
    assert p.std == pytest.approx(np.std([40, 50, 60]))
    assert p.log_mean == pytest.approx(np.mean(np.log([40, 50, 60])))
    assert DurationPrior.fit([30, 30]).std == 1.0  # floored
    with pytest.raises(ValueError):
        DurationPrior.fit([0, 10])


def test_standardisation():
    rng = np.random.default_rng(1)
    X = [make_vowel_input(rng.normal(size=(60, 3)) * [1, 10, 100], 4, 20, columns=None) for _ in range(4)]
    Y = [np.array([10, 30]), np.array([12, 25]), np.array([20, 35]), np.array([5, 22])]
    task = fit_vowel_task(X, Y, n_per_input=300)
    assert task.prior.mean == pytest.approx(np.mean([20, 13, 15, 17]))
    raw = np.array([task.phi_raw(X[0], (b, e)) for b, e in [(10, 30), (3, 20), (30, 45)]])
    np.testing.assert_allclose(raw, np.array([task.phi(X[0], (b, e)) for b, e in
                                              [(10, 30), (3, 20), (30, 45)]]) * task.scale + task.center)
    # the scale brings the columns of very different ranges to comparable phi spreads
    assert task.scale[3:6].mean() > 5 * task.scale[0:3].mean()
    # center does not change the argmax
    w = rng.normal(size=task.n_features)
    other = VowelTask(n_columns=3, prior=task.prior, scale=task.scale)
    np.testing.assert_array_equal(task.decode(X[1], w), other.decode(X[1], w))


@pytest.mark.parametrize("form", ["gamma", "lognormal", "off"])
def test_prior_forms_and_widening(form):
    d = np.array([9.0, 37.0, 50.0, 91.0])
    p = DurationPrior(mean=50.0, std=12.0, log_mean=3.9, log_std=0.25, form=form, widen=2.0)
    got = p.features(d)
    live = {"gamma": [0], "lognormal": [2], "off": []}[form]
    dead = [i for i in range(4) if i not in live]
    np.testing.assert_array_equal(got[:, dead], 0.0)
    if form == "gamma":  # std widened 2x
        np.testing.assert_allclose(got[:, 0], stats.gamma.logpdf(d, 50.0 ** 2 / 24.0 ** 2, scale=24.0 ** 2 / 50.0))
    if form == "lognormal":  # log std widened 2x
        np.testing.assert_allclose(got[:, 2], stats.lognorm.logpdf(d, 0.5, scale=math.exp(3.9)))
    # the fitted task carries the form; dead dims have zero spread, so scale 1 and phi 0
    rng = np.random.default_rng(4)
    X = [make_vowel_input(rng.normal(size=(60, 2)), 4, 20, columns=None) for _ in range(3)]
    Y = [np.array([10, 30]), np.array([12, 25]), np.array([20, 35])]
    task = fit_vowel_task(X, Y, prior_form=form, prior_widen=2.0)
    assert task.prior.form == form and task.prior.widen == 2.0
    for i in dead:
        assert task.scale[-4 + i] == 1.0
        assert task.phi(X[0], (10, 30))[-4 + i] == 0.0
    with pytest.raises(ValueError):
        DurationPrior(form="bogus")
    with pytest.raises(ValueError):
        DurationPrior(widen=0.0)


def test_cut_norm_is_applied_in_phi_and_decode():
    rng = np.random.default_rng(5)
    feats = rng.normal(size=(50, 3)) * [1.0, 10.0, 100.0] + [0.0, 5.0, -300.0]
    feats[:, 2] = 7.0  # a constant column becomes 0, not NaN
    z = normalise_cut(feats)
    np.testing.assert_allclose(z[:, :2].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z[:, :2].std(axis=0), 1.0)
    np.testing.assert_array_equal(z[:, 2], 0.0)
    x = make_vowel_input(feats, 3, 15, columns=None, widths=(1, 3), cut_norm=True)
    ref = make_vowel_input(z, 3, 15, columns=None, widths=(1, 3))
    task = VowelTask(n_columns=3, n_widths=2, center=rng.normal(size=n_vowel_features(3, 2)),
                     scale=rng.uniform(0.5, 2.0, size=n_vowel_features(3, 2)))
    np.testing.assert_allclose(task.phi(x, (10, 20)), task.phi(ref, (10, 20)))
    # decode on the normalised input is the brute-force argmax of the standardised phi
    w = rng.normal(size=task.n_features)
    want, _ = brute_force(task, x, w)
    np.testing.assert_array_equal(task.decode(x, w), want)
    np.testing.assert_array_equal(task.decode(x, w), task.decode(ref, w))
    # column selection happens first: the normalisation is over the selected columns only
    x2 = make_vowel_input(feats, 3, 15, columns=[1, 0], widths=(1, 3), cut_norm=True)
    np.testing.assert_allclose(x2.cum[-1], z[:, [1, 0]].sum(axis=0), atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_decoder_brute_force_with_prior_forms_and_cut_norm(seed):
    rng = np.random.default_rng(100 + seed)
    x, task = random_case(rng, ranges=True)
    feats = rng.normal(size=(28, 3)) * 5 + 2
    x = make_vowel_input(feats, 2, 9, columns=None, widths=(1, 3), cut_norm=True)
    for form in ("full", "gamma", "lognormal", "off"):
        task.prior = DurationPrior(mean=5.0, std=2.0, log_mean=1.5, log_std=0.4, form=form, widen=1.5)
        w = rng.normal(size=task.n_features)
        y = np.array(list(all_pairs(x))[int(rng.integers(0, x.n_candidates))])
        want, best = brute_force(task, x, w, y, 1.0)
        got, value = task.decode_with_value(x, w, y, 1.0)
        np.testing.assert_array_equal(got, want)
        assert value == pytest.approx(best, rel=1e-9, abs=1e-9)


# --------------------------------------------------------------------------------------
# the decoder
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("eps", [0.0, 1.0, -1.0])
def test_decoder_equals_brute_force(seed, eps):
    rng = np.random.default_rng(seed)
    x, task = random_case(rng, ranges=seed % 2 == 0)
    w = rng.normal(size=task.n_features)
    y = np.array(list(all_pairs(x))[int(rng.integers(0, x.n_candidates))])
    if eps == 0.0:
        got, value = task.decode_with_value(x, w)
        assert np.array_equal(got, task.decode(x, w))
    else:
        got, value = task.decode_with_value(x, w, y, eps)
        assert np.array_equal(got, task.decode_augmented(x, y, w, eps))
    want, best = brute_force(task, x, w, y, eps)
    assert value == pytest.approx(best, rel=1e-9, abs=1e-9)
    np.testing.assert_array_equal(got, want)
    assert got.dtype.kind == "i" and got.shape == (2,)


def test_augmented_decode_with_large_eps():
    rng = np.random.default_rng(7)
    x, task = random_case(rng)
    w = rng.normal(size=task.n_features) * 1e-6
    y = np.array(list(all_pairs(x))[5])
    # a huge negative eps forces a zero-cost output; a huge positive one the costliest
    assert task.cost(y, task.decode_augmented(x, y, w, -1e6)) == 0.0
    worst = max(task.cost(y, np.array(p)) for p in all_pairs(x))
    assert task.cost(y, task.decode_augmented(x, y, w, 1e6)) == worst


def test_cost_is_onset_offset_cost():
    task = VowelTask(tau_on=1, tau_off=2)
    assert task.cost([10, 50], [13, 51]) == onset_offset_cost([10, 50], [13, 51], 1, 2) == 2.0
    assert task.cost([10, 50], [10, 50]) == 0.0


def test_decode_many_matches_decode():
    rng = np.random.default_rng(3)
    x, task = random_case(rng, T=50, max_dur=20)
    task.n_jobs = 2
    ws = rng.normal(size=(37, task.n_features))
    got = task.decode_many(x, ws)
    assert len(got) == 37
    for w, y in zip(ws, got):
        np.testing.assert_array_equal(y, task.decode(x, w))


def test_short_cut_raises_clear_error():
    feats = np.zeros((6, 3))
    with pytest.raises(AlignmentError, match=r"clip\.data: no vowel of 9-91 frames fits in 6 frames"):
        make_vowel_input(feats, 9, 91, columns=None, name="clip.data")
    # the peer's margins (onsets in [11, T-10]) leave no onset in a 20-frame cut
    with pytest.raises(AlignmentError, match="too short"):
        make_vowel_input(np.zeros((20, 3)), 9, 91, peer_ranges(20), columns=None)
    # a cut exactly long enough has exactly one candidate
    x = make_vowel_input(np.zeros((10, 3)), 9, 91, columns=None)
    assert x.n_candidates == 1
    np.testing.assert_array_equal(VowelTask(n_columns=3).decode(x, np.ones(n_vowel_features(3))), [0, 9])


def test_input_validation():
    with pytest.raises(FeatureError, match="5 columns but the selection needs column 19"):
        make_vowel_input(np.zeros((100, 5)), 9, 91, columns=PEER_COLUMNS)
    with pytest.raises(FeatureError, match="5 columns but the selection needs column 17"):
        make_vowel_input(np.zeros((100, 5)), 9, 91, columns=VOWEL_COLUMNS)
    with pytest.raises(TypeError, match="columns"):  # no default layout: the caller says which
        make_vowel_input(np.zeros((100, 22)), 9, 91)
    bad = np.zeros((100, 3))
    bad[4, 1] = np.nan
    with pytest.raises(FeatureError, match="frame 4"):
        make_vowel_input(bad, 9, 91, columns=None)
    with pytest.raises(ValueError):
        make_vowel_input(np.zeros((100, 3)), 0, 91, columns=None)
    x = make_vowel_input(np.zeros((100, 3)), 9, 91, columns=None)
    with pytest.raises(ValueError, match="expects 16"):
        VowelTask().decode(x, np.zeros(116))
    with pytest.raises(ValueError, match="onset < offset"):
        VowelTask(n_columns=3).phi(x, (50, 50))


# --------------------------------------------------------------------------------------
# the AVD reader
# --------------------------------------------------------------------------------------


def test_read_features_nan_columns(tmp_path):
    p = tmp_path / "a.data"
    p.write_text("1.5 nan -2e-1 nan\n2.5 nan 3.0e+00 nan\n\n")
    a = read_avd_features(p)
    assert a.dtype == np.float64 and a.shape == (2, 4)
    np.testing.assert_array_equal(a, [[1.5, 0.0, -0.2, 0.0], [2.5, 0.0, 3.0, 0.0]])
    b = read_avd_features(p, nan_to_zero=False)
    assert np.isnan(b[:, 1]).all() and np.isnan(b[:, 3]).all()


def test_read_features_malformed(tmp_path):
    p = tmp_path / "bad.data"
    p.write_text("1 2 3\n4 five 6\n")
    with pytest.raises(FeatureError, match=r"bad\.data, line 2: 'five' is not a number"):
        read_avd_features(p)
    p.write_text("1 2 3\n4 5 6\n7 8\n")
    with pytest.raises(FeatureError, match=r"line 3: 2 values but line 1 has 3 \(ragged rows\)"):
        read_avd_features(p)
    p.write_text("1 inf 3\n")
    with pytest.raises(FeatureError, match="line 1: infinite"):
        read_avd_features(p)
    p.write_text("\n\n")
    with pytest.raises(FeatureError, match="empty"):
        read_avd_features(p)
    with pytest.raises(FeatureError, match=r"missing\.data: feature file not found"):
        read_avd_features(tmp_path / "missing.data")


def test_read_labels(tmp_path):
    p = tmp_path / "a.labels"
    p.write_text("1 2\n90 150\n")
    assert read_avd_labels(p) == (90, 150)
    p.write_text("1 2\n90.0 150.0\n")  # the whole-recording example writes floats
    assert read_avd_labels(p, n_frames=441) == (90, 150)
    with pytest.raises(FeatureError, match=r"line 2: offset frame 150 is out of range \(.* 100 frames"):
        read_avd_labels(p, n_frames=100)
    for text, msg in [("90 150\n", "expected 2 lines"), ("1 2\n90\n", "2 values"),
                      ("1 2\n90 x\n", "'x' is not a number"), ("1 2\n90.5 150\n", "not an integer"),
                      ("1 2\n150 90\n", "not after onset"), ("1 2\n-1 90\n", "negative")]:
        p.write_text(text)
        with pytest.raises(FeatureError, match=msg):
            read_avd_labels(p)
    with pytest.raises(FeatureError, match="label file not found"):
        read_avd_labels(tmp_path / "nope.labels")


def test_read_list(tmp_path):
    (tmp_path / "feat").mkdir()
    (tmp_path / "lab").mkdir()
    (tmp_path / "feat" / "x.data").write_text("0 1\n" * 30)
    (tmp_path / "lab" / "x.labels").write_text("1 2\n3 20\n")
    lst = tmp_path / "train.txt"
    lst.write_text("feat/x.data lab/x.labels")  # no trailing newline, as the peer's files
    pairs = read_avd_list(lst)
    assert pairs == [(tmp_path / "feat" / "x.data", tmp_path / "lab" / "x.labels")]
    feats, y = read_avd_example(*pairs[0])
    assert feats.shape == (30, 2) and y == (3, 20)
    lst.write_text("feat/x.data lab/x.labels\nfeat/y.data lab/y.labels\n")
    with pytest.raises(FeatureError, match=r"train\.txt, line 2: .*y\.data not found"):
        read_avd_list(lst)
    lst.write_text("feat/x.data\n")
    with pytest.raises(FeatureError, match="line 1: expected 'features labels'"):
        read_avd_list(lst)
    lst.write_text("\n")
    with pytest.raises(FeatureError, match="no examples"):
        read_avd_list(lst)
    (tmp_path / "lab" / "x.labels").write_text("1 2\n3 40\n")
    with pytest.raises(FeatureError, match="out of range"):
        read_avd_example(*pairs[0])


# --------------------------------------------------------------------------------------
# the peer's real files
# --------------------------------------------------------------------------------------


@pytest.mark.skipif(not VOWELS.is_dir(), reason=f"AutoVowelDuration tutorial data not found at {VOWELS}")
def test_real_files():
    train = read_avd_list(VOWELS / "train.txt")
    test = read_avd_list(VOWELS / "test.txt")
    assert len(train) == 20 and len(test) == 10
    X, Y = [], []
    n_all_nan = 0
    for data, labels in train + test:
        raw = read_avd_features(data, nan_to_zero=False)
        assert raw.shape[1] == 22
        n_all_nan += bool(np.isnan(raw[:, 10]).all())
        feats, y = read_avd_example(data, labels)
        assert np.isfinite(feats).all()
        X.append(make_vowel_input(feats, PEER_SEARCH["min_dur"], PEER_SEARCH["max_dur"],
                                  peer_ranges(len(feats)), columns=PEER_COLUMNS, name=str(data)))
        Y.append(np.array(y))
    assert n_all_nan == 14  # the README: nasal probability all-NaN in 14 of 30 files
    bad, y_bad = read_avd_example(VOWELS / "wav" / "ex_bad.data", VOWELS / "wav" / "ex_bad.labels")
    assert bad.shape[1] == 20 and y_bad == (90, 150)
    assert max(PEER_COLUMNS) < 20  # the peer's selection fits the 20-column layout too

    task = fit_vowel_task(X[:20], Y[:20], n_jobs=1)
    for x, y in zip(X, Y):
        assert np.all(np.isfinite(task.phi(x, y)))
    # a few perceptron epochs already beat a 100-frame error on the training set
    result = make_trainer("perceptron", epochs=3, eval_train=False).fit(task, X[:20], Y[:20])
    assert task.mean_cost(X[:20], Y[:20], result.w_) < 10.0


# --------------------------------------------------------------------------------------
# shorter recordings (crop augmentation) and the nasal-free column set
# --------------------------------------------------------------------------------------


def _peer_front_end(raw):
    """What the peer's front end writes for raw columns: z-scores, [0, 1] scaling, the rest as is."""
    out = raw.copy()
    z, u = list(PEER_ZSCORED_COLUMNS), list(PEER_UNIT_COLUMNS)
    out[:, z] = (raw[:, z] - raw[:, z].mean(0)) / raw[:, z].std(0)
    out[:, u] = (raw[:, u] - raw[:, u].min(0)) / (raw[:, u].max(0) - raw[:, u].min(0))
    return out


def test_crop_equals_front_end_on_the_shorter_recording():
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(120, 22)) * rng.uniform(0.5, 20, size=22) + rng.uniform(-5, 5, size=22)
    start, stop, y = 17, 95, (40, 70)
    cut, y_cut = crop_avd_example(_peer_front_end(raw), y, start, stop)
    assert y_cut == (23, 53)
    np.testing.assert_allclose(cut, _peer_front_end(raw[start:stop]), atol=1e-9)
    # per-frame columns (classifier, cepstral distances) are untouched
    np.testing.assert_array_equal(cut[:, 9], raw[start:stop, 9])
    # the whole file is its own crop
    full, y_full = crop_avd_example(_peer_front_end(raw), y, 0, 120)
    np.testing.assert_allclose(full, _peer_front_end(raw), atol=1e-9)
    assert y_full == y


def test_crop_keeps_constant_and_missing_columns_and_checks_the_vowel():
    feats = np.random.default_rng(0).normal(size=(60, 20))
    feats[:, 8] = 0.0  # a column the file lacked (NaN read as 0)
    feats[:, 6] = 0.5
    cut, _ = crop_avd_example(feats, (20, 30), 5, 50)
    assert np.all(cut[:, 8] == 0.0) and np.all(cut[:, 6] == 0.5)
    with pytest.raises(ValueError, match="must hold the vowel"):
        crop_avd_example(feats, (20, 30), 21, 50)
    with pytest.raises(ValueError, match="must hold the vowel"):
        crop_avd_example(feats, (20, 30), 0, 30)


def test_random_crops_bounds_and_seed():
    feats = np.random.default_rng(1).normal(size=(200, 22))
    crops = random_avd_crops(feats, (80, 120), 20, np.random.default_rng(5), before=20, after=30)
    assert len(crops) == 20
    lengths = set()
    for f, (b, e) in crops:
        assert b >= 20 and len(f) - 1 - e >= 29 and e - b == 40
        lengths.add(len(f))
    assert len(lengths) > 5  # cuts of many lengths
    again = random_avd_crops(feats, (80, 120), 20, np.random.default_rng(5), before=20, after=30)
    assert all(np.array_equal(a[0], b[0]) and a[1] == b[1] for a, b in zip(crops, again))


def test_no_nasal_columns():
    assert 10 not in PEER_COLUMNS_NO_NASAL
    assert set(PEER_COLUMNS_NO_NASAL) | {10} == set(PEER_COLUMNS)
    x = make_vowel_input(np.random.default_rng(0).normal(size=(100, 22)), 9, 40, columns=PEER_COLUMNS_NO_NASAL)
    assert x.n_columns == 15
    assert fit_vowel_task([x], [(20, 50)], n_jobs=1).n_features == n_vowel_features(15) == 109


def _bench():
    import benchmarks.vowels.bench_vowels_peer as mod
    return mod


def test_bench_folds_keep_the_cuts_of_an_example_on_one_side():
    """A held-out example's cuts must never be trained on in that fold (and vice versa)."""
    import types
    bench = _bench()
    rng = np.random.default_rng(0)
    groups = []
    for i in range(10):
        feats = rng.normal(size=(100, 22))
        cuts = [(feats, (40, 60))] + random_avd_crops(feats, (40, 60), 3, rng)
        groups.append([(make_vowel_input(f, 9, 40, columns=PEER_COLUMNS, name=f"ex{i}#{j}"), np.array(y)) for j, (f, y) in enumerate(cuts)])
    args = types.SimpleNamespace(cv_repeats=2, folds=5, seed=0, crops=2, val_crops=1, tau_on=0.0, tau_off=0.0, jobs=1)
    folds = bench.make_folds(groups, args, "full")
    assert len(folds) == 10
    for _task, Xtr, _Ytr, Xva, _Yva in folds:
        train_ex = {x.name.split("#")[0] for x in Xtr}
        val_ex = {x.name.split("#")[0] for x in Xva}
        assert not train_ex & val_ex and len(train_ex | val_ex) == 10
        assert len(Xtr) == 3 * len(train_ex) and len(Xva) == 2 * len(val_ex)  # file + crops / val_crops cuts
    X, Y = bench.flatten(groups, 0)
    assert [x.name for x in X] == [f"ex{i}#0" for i in range(10)]


def test_bench_runs_average_the_seeds_weights():
    import types
    from aligner.learn import SeedAveragedTrainer, SVMTrainer
    bench = _bench()
    one = bench.build_trainer("svm", {"epochs": 2, "seed": 3}, types.SimpleNamespace(runs=1))
    assert isinstance(one, SVMTrainer) and one.seed == 3
    many = bench.build_trainer("svm", {"epochs": 2, "seed": 3}, types.SimpleNamespace(runs=4))
    assert isinstance(many, SeedAveragedTrainer) and many.n_runs == 4
    assert [many.run(r).seed for r in range(4)] == [3, 4, 5, 6]
