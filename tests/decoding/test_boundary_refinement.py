"""Sub-frame boundary refinement (aligner.alignment.decoding.refinement)."""

import numpy as np
import pytest

from aligner.alignment.model import AlignmentModel, DurationStats
from aligner.alignment.decoding.refinement import (ENERGY_COLUMN, N_BASIC_FEATURES, N_BROAD, N_REFINER_FEATURES,
                                         BoundaryRefiner, boundary_features, refined_start_times)
from aligner.features.frame_classifier import FrameClassifier
from aligner.errors import ModelError
from aligner.features.mfcc import boundary_time
from aligner.phones.sets import CLASSES39


def _utterance(seed=0, T=40):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((T, 39))
    frames = rng.standard_normal((T, 42))
    classes = np.array([CLASSES39.index(c) for c in ("sil", "s", "iy", "sil")])
    y = np.array([0, 8, 20, 33])
    return scores, frames, classes, y


MEAN, STD = np.array([10.0, 9.0, 11.0, 20.0]), np.array([2.0, 3.0, 4.0, 5.0])


def test_features_by_hand():
    scores, frames, classes, y = _utterance()
    F = boundary_features(scores, frames, classes, y, MEAN, STD)
    assert F.shape == (3, N_REFINER_FEATURES)
    # boundary 2 (s -> iy) at frame 20: score differences at frames 17..22
    np.testing.assert_allclose(F[1, :6], np.clip(scores[17:23, classes[1]] - scores[17:23, classes[2]], -10, 10))
    # spectral change ||s_t - s_{t-1}|| / sqrt(42) at t = 18..22
    expect = np.linalg.norm(frames[18:23] - frames[17:22], axis=1) / np.sqrt(42)
    np.testing.assert_allclose(F[1, 6:11], expect)
    # exactly one broad-pair indicator per boundary, and different pairs differ
    pairs = F[:, 11:N_BASIC_FEATURES]
    assert pairs.shape[1] == N_BROAD * N_BROAD
    np.testing.assert_array_equal(pairs.sum(axis=1), 1)
    assert len({int(np.argmax(p)) for p in pairs[:, :N_BROAD * N_BROAD]}) == 3
    # log energy at frames 17..22
    np.testing.assert_allclose(F[1, 60:66], frames[17:23, ENERGY_COLUMN])
    # decoded lengths (T = 40): 8, 12, 13, 7 frames; z-scores and logs of left and right phone
    np.testing.assert_allclose(F[:, 66], (np.array([8, 12, 13]) - MEAN[:3]) / STD[:3])
    np.testing.assert_allclose(F[:, 67], (np.array([12, 13, 7]) - MEAN[1:]) / STD[1:])
    np.testing.assert_allclose(F[:, 68], np.log([8, 12, 13]))
    np.testing.assert_allclose(F[:, 69], np.log([12, 13, 7]))
    # first / last boundary indicators
    np.testing.assert_array_equal(F[:, 70:], [[1, 0], [0, 0], [0, 1]])


def test_features_clip_frames_at_the_edges():
    scores, frames, classes, _ = _utterance(T=12)
    F = boundary_features(scores, frames, classes, np.array([0, 1, 2, 11]), MEAN, STD)
    assert np.all(np.isfinite(F))
    np.testing.assert_allclose(F[0, 0], np.clip(scores[0, classes[0]] - scores[0, classes[1]], -10, 10))


def test_ridge_fit_recovers_a_linear_shift():
    rng = np.random.default_rng(1)
    feats = [rng.standard_normal((50, N_REFINER_FEATURES)) for _ in range(10)]
    shifts = [3.0 * f[:, 0] - 2.0 * f[:, 7] + 1.5 for f in feats]
    ref = BoundaryRefiner(hidden=0, alpha=1e-3, target_clip_ms=100, max_shift_ms=100).fit(feats, shifts)
    test = rng.standard_normal((20, N_REFINER_FEATURES))
    np.testing.assert_allclose(ref.shifts_ms(test), 3.0 * test[:, 0] - 2.0 * test[:, 7] + 1.5, atol=0.05)
    clipped = BoundaryRefiner(hidden=0, alpha=1e-3, target_clip_ms=100, max_shift_ms=2.0).fit(feats, shifts)
    assert np.abs(clipped.shifts_ms(test)).max() <= 2.0 + 1e-12


def test_network_learns_a_shift_no_linear_map_can():
    # the shift is |feature 0|: ridge can't fit it, the hidden layer can
    rng = np.random.default_rng(4)
    X = rng.standard_normal((3000, N_REFINER_FEATURES))
    t = 4.0 * np.abs(X[:, 0])
    test = rng.standard_normal((500, N_REFINER_FEATURES))
    truth = 4.0 * np.abs(test[:, 0])
    net = BoundaryRefiner(hidden=16, alpha=1e-3).fit([X], [t])
    lin = BoundaryRefiner(hidden=0, alpha=1e-3).fit([X], [t])
    net_err = np.abs(net.shifts_ms(test) - truth).mean()
    lin_err = np.abs(lin.shifts_ms(test) - truth).mean()
    assert net_err < 0.5 * lin_err, (net_err, lin_err)


def test_a_refiner_of_another_width_is_refused():
    rng = np.random.default_rng(5)
    arrays = BoundaryRefiner(hidden=0, alpha=1.0).fit([rng.standard_normal((50, N_REFINER_FEATURES))],
                                                    [rng.standard_normal(50)]).to_arrays()
    BoundaryRefiner.from_arrays(arrays)  # its own width loads
    narrow = {k: (v[:N_BASIC_FEATURES] if k in ("mean", "scale", "output_weights") else v) for k, v in arrays.items()}
    narrow["hidden_weights"] = np.zeros((N_BASIC_FEATURES, 0))
    with pytest.raises(ModelError, match=f"expected {N_REFINER_FEATURES} features"):
        BoundaryRefiner.from_arrays(narrow)


def test_refined_times_stay_ordered_and_inside_the_recording():
    y = np.array([0, 5, 6, 7, 50])
    grid = boundary_time(y[1:])
    t = refined_start_times(y, np.array([0.0, 0.0, 0.0, 0.0]), duration_s=0.6)
    np.testing.assert_allclose(t, np.r_[0.0, grid])
    t = refined_start_times(y, np.array([30.0, -30.0, 9.0, 9.0]), duration_s=0.505)
    assert t[0] == 0 and np.all(np.diff(t) > 0) and t[-1] < 0.505
    # a shift never carries a boundary past the grid time of the next or previous one
    assert t[1] <= grid[1] + 1e-12 and t[2] >= grid[0] - 1e-12


def test_round_trip_and_tampering(tmp_path):
    rng = np.random.default_rng(2)
    feats = [rng.standard_normal((300, N_REFINER_FEATURES))]
    ref = BoundaryRefiner().fit(feats, [rng.standard_normal(300)])
    again = BoundaryRefiner.from_arrays(ref.to_arrays())
    np.testing.assert_array_equal(again.shifts_ms(feats[0]), ref.shifts_ms(feats[0]))
    assert again.hidden == 32 and again.hidden_weights.shape == (N_REFINER_FEATURES, 32)
    bad = ref.to_arrays()
    bad["hidden_weights"] = bad["hidden_weights"][:, :-1]
    with pytest.raises(ModelError, match="shapes"):
        BoundaryRefiner.from_arrays(bad)
    bad = ref.to_arrays()
    bad["mean"] = np.full_like(bad["mean"], np.nan)
    with pytest.raises(ModelError):
        BoundaryRefiner.from_arrays(bad)
    with pytest.raises(ModelError):
        BoundaryRefiner().shifts_ms(feats[0])


def test_alignment_model_saves_and_uses_its_refiner(tmp_path):
    rng = np.random.default_rng(3)
    frames = [rng.standard_normal((60, 42)).astype(np.float32) for _ in range(4)]
    labels = [np.repeat(rng.integers(0, 39, 6), 10) for _ in range(4)]
    clf = FrameClassifier(n_components=40, max_iter=10, kmeans_iter=1).fit(frames, labels)
    durations = DurationStats(np.full(39, 8.0), np.full(39, 3.0), np.full(39, 30))
    feats = [rng.standard_normal((30, N_REFINER_FEATURES))]
    refiner = BoundaryRefiner(hidden=0, alpha=1.0).fit(feats, [np.full(30, 4.0)])  # a constant +4 ms
    model = AlignmentModel(clf, durations, np.array([1.0, 0, 0, 0, 0, 1.0, 0]), refiner=refiner)
    model.save(tmp_path / "m")
    loaded = AlignmentModel.load(tmp_path / "m")
    assert loaded.refiner is not None
    samples = rng.standard_normal(16000).astype(np.float32) * 0.1
    from aligner.phones.sets import get_phone_set
    ps = get_phone_set("timit39", ["sil", "s", "iy", "sil"])
    with_shift = loaded.align(samples, ["sil", "s", "iy", "sil"], ps)
    loaded.refiner = None
    on_grid = loaded.align(samples, ["sil", "s", "iy", "sil"], ps)
    starts = np.array([iv[0] for iv in with_shift[1:]]) - np.array([iv[0] for iv in on_grid[1:]])
    np.testing.assert_allclose(starts, 0.004, atol=1e-9)
    (tmp_path / "m" / "refiner.npz").write_bytes(b"garbage")
    with pytest.raises(ModelError):
        AlignmentModel.load(tmp_path / "m")
