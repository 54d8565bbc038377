"""Forced-alignment task: feature map, costs, and the segmental DP against brute force."""

import itertools
import math

import numpy as np
import pytest

from aligner.errors import AlignmentError
from aligner.learn.costs import onset_offset_cost, tau_alignment_cost, tau_insensitive_cost
from aligner.alignment.decoding.task import AlignmentTask, make_alignment_input

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def all_segmentations(x):
    """Every valid y (start frames) of x: lengths in [min_frames, max_len[k]]."""
    T, K, m = x.n_frames, x.n_phones, int(x.min_len)
    for cuts in itertools.combinations(range(1, T), K - 1):
        y = np.array((0,) + cuts, dtype=np.int64)
        lengths = np.diff(np.append(y, T))
        if np.all(lengths >= m) and np.all(lengths <= x.max_len):
            yield y


def random_input(rng, T, K, P=5, D=3, min_frames=1):
    return make_alignment_input(
        rng.normal(size=(T, P)),
        rng.normal(size=(T, D)),
        rng.integers(0, P, size=K),
        rng.uniform(1.0, 6.0, size=K),
        rng.uniform(0.3, 3.0, size=K),
        rng.integers(max(min_frames, math.ceil(T / K)), T + 1, size=K),
        min_frames,
    )


# --------------------------------------------------------------------------------------
# costs
# --------------------------------------------------------------------------------------


def test_costs_hand_values():
    y = np.array([0, 5, 9, 20])
    y_pred = np.array([0, 6, 12, 20])  # |diff| = 0 1 3 0
    assert tau_alignment_cost(y, y_pred, 1) == pytest.approx(1 / 4)
    assert tau_insensitive_cost(y, y_pred, 1) == pytest.approx(2 / 4)
    assert tau_alignment_cost(y, y_pred, 0) == pytest.approx(2 / 4)
    assert tau_insensitive_cost(y, y_pred, 0) == pytest.approx(4 / 4)
    assert onset_offset_cost([10, 30], [12, 25], 1, 2) == pytest.approx(1 + 3)
    for f in (tau_alignment_cost, tau_insensitive_cost):
        assert f(y, y, 0) == 0.0
        assert f(y, y, 1) == 0.0
    assert onset_offset_cost([10, 30], [10, 30], 0, 0) == 0.0
    # small integer dtypes must not wrap around
    assert tau_insensitive_cost(np.array([0, 250], np.uint8), np.array([0, 2], np.uint8), 0) == 124.0


def test_task_cost_uses_all_k_starts():
    y = np.array([0, 4, 8])
    y_pred = np.array([0, 7, 8])
    assert AlignmentTask("tau_insensitive", tau=1).cost(y, y_pred) == pytest.approx(2 / 3)
    assert AlignmentTask("tau_alignment", tau=1).cost(y, y_pred) == pytest.approx(1 / 3)
    assert AlignmentTask().cost(y, y) == 0.0


# --------------------------------------------------------------------------------------
# feature map
# --------------------------------------------------------------------------------------


def test_phi_hand_computed_two_phones():
    scores = np.array([[1.0, 0.0], [0.5, 0.7], [0.0, 2.0], [0.3, 0.1], [0.0, 1.0], [1.0, 1.0]])
    frames = np.array([0.0, 1.0, 3.0, 6.0, 10.0, 15.0])[:, None]
    x = make_alignment_input(scores, frames, [0, 1], [2.0, 3.0], [1.0, 2.0], [6, 6], dist_scale=1.0)
    phi = AlignmentTask().phi(x, [0, 2])
    # agreement: phone 0 (class 0) frames 0-1: A = 0, -0.2; phone 1 (class 1) frames 2-5: 0, -0.2, 0, 0
    agree = (-0.1 + -0.05) / 2
    # boundary at frame 2: |s1-s3|, |s0-s4|, |s0-s5| (clipped), |s0-s5| (clipped)
    dists = np.array([5.0, 10.0, 15.0, 15.0]) / 2
    # l = 2, 4; N(2; 2, 1) and N(4; 3, 2)
    logdur = ((-LOG_SQRT_2PI) + (-LOG_SQRT_2PI - math.log(2.0) - 0.5 * 0.25)) / 2
    rate = (4 / 3 - 2 / 2) ** 2 / 2
    np.testing.assert_allclose(phi, [agree, *dists, logdur, rate], rtol=1e-12, atol=1e-12)


def test_phi_three_phones_duration_terms_and_default_scale():
    T, D = 9, 8
    rng = np.random.default_rng(1)
    frames = rng.normal(size=(T, D))
    x = make_alignment_input(np.zeros((T, 3)), frames, [0, 1, 2], [2.0, 4.0, 0.5], [0.2, 1.0, 1.0], 9,
                             sigma_floor=0.5)
    phi = AlignmentTask().phi(x, [0, 3, 5])  # lengths 3, 2, 4; mu 2, 4, floored to 1
    assert phi[0] == 0.0  # all-zero scores agree everywhere
    scale = 1 / math.sqrt(2 * D)
    d1 = (np.linalg.norm(frames[2] - frames[4]) + np.linalg.norm(frames[4] - frames[6])) * scale
    assert phi[1] == pytest.approx(d1 / 3)
    # sigma 0.2 is floored to 0.5; mu 0.5 is floored to 1 frame
    logdur = ((-LOG_SQRT_2PI - math.log(0.5) - 0.5 * (1 / 0.5) ** 2)
              + (-LOG_SQRT_2PI - 0.5 * (2 - 4) ** 2)
              + (-LOG_SQRT_2PI - 0.5 * (4 - 1) ** 2)) / 3
    assert phi[5] == pytest.approx(logdur)
    rate = ((2 / 4 - 3 / 2) ** 2 + (4 / 1 - 2 / 4) ** 2) / 3
    assert phi[6] == pytest.approx(rate)


# --------------------------------------------------------------------------------------
# decoder
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cost_name", ["tau_insensitive", "tau_alignment"])
def test_dp_equals_brute_force(cost_name):
    rng = np.random.default_rng(12345 if cost_name == "tau_insensitive" else 777)
    n_checked = 0
    for trial in range(30):
        T = int(rng.integers(10, 15))
        K = int(rng.integers(1, 5)) if trial else 1
        min_frames = int(rng.integers(1, 3))
        x = random_input(rng, T, K, min_frames=min_frames)
        task = AlignmentTask(cost_name, tau=int(rng.integers(0, 3)))
        candidates = list(all_segmentations(x))
        w = rng.normal(size=7) * rng.choice([0.3, 1.0, 10.0])
        if trial % 5 == 0:
            w[6] = 0.0  # the no-rate-term fast path
        y_ref = candidates[rng.integers(len(candidates))]
        for eps in (0.0, 1.0, -1.5):
            objective = [task.score(x, y, w) + eps * task.cost(y_ref, y) for y in candidates]
            best = max(objective)
            y_dp = task.decode_augmented(x, y_ref, w, eps) if eps else task.decode(x, w)
            assert any(np.array_equal(y_dp, y) for y in candidates), "DP returned an invalid segmentation"
            got = task.score(x, y_dp, w) + eps * task.cost(y_ref, y_dp)
            assert got == pytest.approx(best, rel=1e-6, abs=1e-9)
            # the DP's own value is the objective of the path it returns
            _, value = task._run(x, w, y_ref, eps)
            assert value == pytest.approx(got, rel=1e-9, abs=1e-12)
            n_checked += 1
    assert n_checked == 90


def test_dp_with_unpaced_phones_equals_brute_force():
    # pauses left out of the tempo term (dim 7): the DP still finds the argmax of w . phi
    rng = np.random.default_rng(2468)
    for trial in range(30):
        T, K = int(rng.integers(10, 15)), int(rng.integers(2, 5))
        unpaced = rng.random(K) < 0.5
        scores = rng.normal(size=(T, 5))
        args = (scores, rng.normal(size=(T, 3)), rng.integers(0, 5, size=K), rng.uniform(1.0, 6.0, size=K),
                rng.uniform(0.3, 3.0, size=K), rng.integers(math.ceil(T / K), T + 1, size=K))
        xu = make_alignment_input(*args, unpaced=unpaced)
        task = AlignmentTask()
        candidates = list(all_segmentations(xu))
        w = rng.normal(size=7) * rng.choice([0.3, 1.0, 10.0])
        objective = [task.score(xu, y, w) for y in candidates]
        y_dp = task.decode(xu, w)
        assert task.score(xu, y_dp, w) == pytest.approx(max(objective), rel=1e-6, abs=1e-9)
        _, value = task._run(xu, w, None, 0.0)
        assert value == pytest.approx(task.score(xu, y_dp, w), rel=1e-9, abs=1e-12)
        if not unpaced.any():
            assert xu.paced is None  # every phone paced: the input of old


def test_phi_leaves_unpaced_pairs_out_of_the_tempo_term():
    T = 12
    x = make_alignment_input(np.zeros((T, 3)), np.zeros((T, 2)), [0, 1, 2], [2.0, 4.0, 3.0], [1.0, 1.0, 1.0], T,
                             unpaced=[False, True, False])
    y = [0, 3, 9]  # lengths 3, 6, 3; the middle phone is a pause
    assert AlignmentTask().phi(x, y)[6] == 0.0
    x = make_alignment_input(np.zeros((T, 3)), np.zeros((T, 2)), [0, 1, 2], [2.0, 4.0, 3.0], [1.0, 1.0, 1.0], T,
                             unpaced=[False, False, True])
    assert AlignmentTask().phi(x, y)[6] == pytest.approx((6 / 4 - 3 / 2) ** 2 / 3)
    with pytest.raises(ValueError, match="one flag per phone"):
        make_alignment_input(np.zeros((T, 3)), np.zeros((T, 2)), [0, 1, 2], [2.0] * 3, [1.0] * 3, T, unpaced=[True])


def test_decode_respects_length_limits():
    rng = np.random.default_rng(3)
    x = random_input(rng, 40, 6, min_frames=3)
    task = AlignmentTask()
    for _ in range(10):
        y = task.decode(x, rng.normal(size=7))
        lengths = np.diff(np.append(y, x.n_frames))
        assert y[0] == 0 and np.all(lengths >= 3) and np.all(lengths <= x.max_len)


def test_wide_band_is_exact_and_narrow_band_is_honoured():
    rng = np.random.default_rng(4)
    args = (rng.normal(size=(60, 5)), rng.normal(size=(60, 3)), rng.integers(0, 5, 8),
            np.full(8, 7.5), np.full(8, 2.0), 20)
    task = AlignmentTask()
    w = rng.normal(size=7)
    exact = task.decode(make_alignment_input(*args), w)
    assert np.array_equal(task.decode(make_alignment_input(*args, band=60), w), exact)
    y = task.decode(make_alignment_input(*args, band=3), w)
    assert np.all(np.abs(y - np.arange(8) * 7.5) <= 3.5)


def test_decode_many_matches_loop():
    rng = np.random.default_rng(5)
    x = random_input(rng, 80, 10, P=8, D=6)
    task = AlignmentTask(n_jobs=2)
    ws = rng.normal(size=(9, 7))
    many = task.decode_many(x, ws)
    assert len(many) == 9
    for y, w in zip(many, ws):
        np.testing.assert_array_equal(y, task.decode(x, w))


def test_alignment_error_names_the_numbers():
    rng = np.random.default_rng(6)
    message = r"utt1: 3 phones need at least 6 frames \(2 each\), got 5 frames"
    with pytest.raises(AlignmentError, match=message):
        make_alignment_input(rng.normal(size=(5, 4)), rng.normal(size=(5, 2)), [0, 1, 2],
                             [2.0] * 3, [1.0] * 3, 5, min_frames=2, name="utt1")
    with pytest.raises(AlignmentError, match=r"cover at most 6 frames, got 20 frames"):
        make_alignment_input(rng.normal(size=(20, 4)), rng.normal(size=(20, 2)), [0, 1, 2],
                             [2.0] * 3, [1.0] * 3, 2)


def test_bad_y_and_w_are_rejected():
    rng = np.random.default_rng(7)
    x = random_input(rng, 12, 3)
    task = AlignmentTask()
    for bad in ([1, 4, 8], [0, 4, 4], [0, 4, 12], [0, 4]):
        with pytest.raises(ValueError):
            task.phi(x, bad)
    with pytest.raises(ValueError):
        task.decode(x, np.ones(6))


def test_long_phones_use_wider_back_pointers():
    # lengths up to 299 frames do not fit uint8 back-pointers; K = 2 is brute-forced cheaply
    rng = np.random.default_rng(8)
    x = make_alignment_input(rng.normal(size=(300, 4)), rng.normal(size=(300, 3)), [1, 2],
                             [150.0, 100.0], [40.0, 30.0], 299)
    task = AlignmentTask()
    w = rng.normal(size=7)
    best = max(task.score(x, [0, s], w) for s in range(1, 300))
    assert task.score(x, task.decode(x, w), w) == pytest.approx(best, rel=1e-9)


def test_with_durations_is_the_input_made_with_those_durations():
    """The tempo pass's input (:func:`with_durations`) holds exactly the values a fresh input with the
    other durations holds, the scores' sums and distances shared with the first."""
    from aligner.alignment.decoding.task import with_durations

    rng = np.random.default_rng(5)
    T, K, P = 30, 4, 5
    scores, frames, classes = rng.normal(size=(T, P)), rng.normal(size=(T, 3)), rng.integers(0, P, size=K)
    mean, std, longest = rng.uniform(2, 8, K), rng.uniform(0.2, 3, K), np.full(K, 12)
    first = make_alignment_input(scores, frames, classes, mean, std, longest)
    factor = np.array([1.0, 1.3, 1.3, 1.0])
    fresh = make_alignment_input(scores, frames, classes, mean * factor, std * factor, longest)
    again = with_durations(first, mean * factor, std * factor)
    for field in ("cum_agree", "dist", "phone_classes", "dur_mean", "dur_std", "max_len", "log_dur", "start_lo",
                  "start_hi", "min_len"):
        assert np.array_equal(getattr(again, field), getattr(fresh, field)), field
    assert again.cum_agree is first.cum_agree
    w = rng.normal(size=7)
    assert np.array_equal(AlignmentTask().decode(again, w), AlignmentTask().decode(fresh, w))
    with pytest.raises(ValueError):
        with_durations(first, mean[:2], std)
