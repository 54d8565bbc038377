"""The frame phoneme classifier (aligner.features.frame_classifier)."""

import io

import numpy as np
import pytest

from aligner.features.frame_classifier import FrameClassifier, stack_context
from aligner.errors import FeatureError, ModelError

from tests.conftest import TIMIT, needs_timit
SMALL = dict(n_components=150, max_iter=60, kmeans_iter=2)


def _synthetic(n_utt, n_classes=4, seed=0, T=60, separation=1.5):
    """Utterances of runs of classes; each class a Gaussian blob in 42 dims."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(123).standard_normal((n_classes, 42)) * separation
    frames, labels = [], []
    for _ in range(n_utt):
        runs = rng.integers(0, n_classes, T // 6)
        y = np.repeat(runs, 6)[:T]
        frames.append((centres[y] + rng.standard_normal((T, 42))).astype(np.float32))
        labels.append(y)
    return frames, labels


@pytest.fixture(scope="module")
def trained():
    frames, labels = _synthetic(12)
    return FrameClassifier(n_classes=4, context=2, **SMALL).fit(frames, labels)


def test_stack_context():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    s = stack_context(x, 1)
    assert s.shape == (4, 9)
    np.testing.assert_array_equal(s[0], np.r_[x[0], x[0], x[1]])
    np.testing.assert_array_equal(s[2], np.r_[x[1], x[2], x[3]])
    np.testing.assert_array_equal(s[3], np.r_[x[2], x[3], x[3]])
    np.testing.assert_array_equal(stack_context(x, 0), x)


def test_separable_problem_is_learned(trained):
    frames, labels = _synthetic(4, seed=7)
    acc = np.mean(np.concatenate([trained.predict(f) == y for f, y in zip(frames, labels)]))
    assert acc > 0.9  # chance is 0.25


def test_scores_shapes_and_calibration(trained):
    frames, labels = _synthetic(2, seed=3)
    s = trained.scores(frames[0])
    assert s.shape == (60, 4) and s.dtype == np.float32 and np.all(np.isfinite(s))
    lp = trained.log_posteriors(frames[0])
    np.testing.assert_allclose(np.log(np.exp(lp).sum(axis=1)), 0, atol=1e-5)
    np.testing.assert_allclose(s, lp - trained.log_prior, atol=1e-5)  # prior division is on by default
    assert np.array_equal(trained.predict(frames[0]), trained.decision_function(frames[0]).argmax(1))
    assert trained.temperature > 0


def _assert_round_trip_is_identical(trained):
    """Saved by np.savez and loaded without pickle, ``trained`` scores and predicts the same bits."""
    arrays = trained.to_arrays()
    assert all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values())
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as loaded:
        clf = FrameClassifier.from_arrays(loaded)
    assert clf.get_params() == trained.get_params()
    frames, _ = _synthetic(2, seed=5)
    for f in frames:
        assert np.array_equal(clf.scores(f), trained.scores(f))
        assert np.array_equal(clf.predict(f), trained.predict(f))


def test_save_load_round_trip_is_identical(trained):
    _assert_round_trip_is_identical(trained)


def test_pca_variant_round_trip_and_accuracy():
    frames, labels = _synthetic(12)
    clf = FrameClassifier(n_classes=4, context=2, pca_dims=20, **SMALL).fit(frames, labels)
    assert clf.projection.shape == (5 * 42, 20) and clf.landmarks.shape[1] == 20
    test_frames, test_labels = _synthetic(3, seed=9)
    acc = np.mean(np.concatenate([clf.predict(f) == y for f, y in zip(test_frames, test_labels)]))
    assert acc > 0.9
    buffer = io.BytesIO()
    np.savez(buffer, **clf.to_arrays())
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as loaded:
        again = FrameClassifier.from_arrays(loaded)
    assert np.array_equal(again.scores(test_frames[0]), clf.scores(test_frames[0]))


def test_arrays_missing_from_a_file_are_named():
    frames, labels = _synthetic(6)
    clf = FrameClassifier(n_classes=4, context=2, pca_dims=0, **SMALL).fit(frames, labels)
    partial = {k: v for k, v in clf.to_arrays().items() if k not in ("pca_dims", "projection")}
    with pytest.raises(ModelError, match="lack projection, pca_dims|lack pca_dims, projection"):
        FrameClassifier.from_arrays(partial)


def test_from_arrays_rejects_bad_input(trained):
    arrays = trained.to_arrays()
    with pytest.raises(ModelError, match="weights"):
        FrameClassifier.from_arrays({k: v for k, v in arrays.items() if k != "weights"})
    with pytest.raises(ModelError, match="shape"):
        FrameClassifier.from_arrays({**arrays, "bias": np.zeros(5, np.float32)})
    with pytest.raises(ModelError, match="NaN"):
        FrameClassifier.from_arrays({**arrays, "mean": np.full_like(arrays["mean"], np.nan)})
    with pytest.raises(ModelError, match="format"):
        FrameClassifier.from_arrays({**arrays, "format_version": np.array(99)})


def test_untrained_and_bad_input_raise(trained):
    with pytest.raises(ModelError):
        FrameClassifier().scores(np.zeros((5, 42), np.float32))
    with pytest.raises(FeatureError):
        trained.scores(np.zeros((5, 13), np.float32))
    with pytest.raises(FeatureError):
        trained.scores(np.full((5, 42), np.nan, np.float32))
    frames, labels = _synthetic(2)
    with pytest.raises(ValueError):
        FrameClassifier(n_classes=3, **SMALL).fit(frames, labels)  # label 3 out of range
    with pytest.raises(ValueError):
        FrameClassifier(n_classes=4, **SMALL).fit(frames, labels[:1])


def test_single_frame_and_single_utterance():
    frames, labels = _synthetic(1)
    clf = FrameClassifier(n_classes=4, context=3, **SMALL).fit(frames, labels)  # no calibration split
    assert clf.scores(frames[0][:1]).shape == (1, 4)


def test_subsampling_bounds_training_set():
    frames, labels = _synthetic(6)
    clf = FrameClassifier(n_classes=4, max_train_frames=100, **SMALL).fit(frames, labels)
    assert clf.landmarks.shape[0] == 100


@needs_timit
def test_real_timit_frames():
    """Train on two utterances of one speaker, score a third: better than the majority class."""
    import soundfile as sf

    from aligner.features.mfcc import mfcc_features, time_to_boundary_frame
    from aligner.phones.sets import CLASSES39, TIMIT61_TO_39

    frames, labels = [], []
    for wav in sorted((TIMIT / "dr1-mcpm0").glob("*.wav"))[:3]:
        audio, sr = sf.read(str(wav))
        f = mfcc_features(audio, sr)
        rows = [line.split() for line in wav.with_suffix(".phn").read_text().splitlines() if line.strip()]
        starts = time_to_boundary_frame(np.array([int(r[0]) for r in rows]) / 16000, len(f))
        starts[0] = 0
        classes = [CLASSES39.index(TIMIT61_TO_39[r[2]]) for r in rows]
        labels.append(np.repeat(classes, np.diff(np.append(starts, len(f)))))
        frames.append(f)
    clf = FrameClassifier(n_components=200, max_iter=40, kmeans_iter=1).fit(frames[:2], labels[:2])
    s = clf.scores(frames[2])
    assert s.shape == (len(frames[2]), 39) and np.all(np.isfinite(s))
    acc = np.mean(clf.predict(frames[2]) == labels[2])
    majority = np.bincount(labels[2]).max() / len(labels[2])
    assert acc > majority + 0.05, (acc, majority)


def test_groups_keep_copies_together_in_calibration():
    """Copies of one recording (VTLP) share a group; the group count must match the utterances."""
    frames, labels = _synthetic(6, seed=5)
    copies = [f + 0.01 for f in frames]
    clf = FrameClassifier(n_classes=4, context=1, calibration_fraction=0.34, **SMALL)
    clf.fit(frames + copies, labels + labels, groups=list(range(6)) * 2)
    assert clf.temperature > 0 and np.isfinite(clf.temperature)
    with pytest.raises(ValueError, match="groups"):
        FrameClassifier(n_classes=4, **SMALL).fit(frames, labels, groups=[0, 1])


# -- the network feature map (hidden > 0) ------------------------------------------------------

NETWORK = dict(hidden=32, alpha=1.0, epochs=30, max_iter=60)


@pytest.fixture(scope="module")
def network():
    frames, labels = _synthetic(12)
    return FrameClassifier(n_classes=4, context=2, **NETWORK).fit(frames, labels)


def test_network_feature_map_learns_and_calibrates(network):
    frames, labels = _synthetic(4, seed=7)
    acc = np.mean(np.concatenate([network.predict(f) == y for f, y in zip(frames, labels)]))
    assert acc > 0.9  # chance is 0.25
    assert network.hidden_weights.shape == (network.projection.shape[1], 32)
    assert network.weights.shape == (32, 4) and network.landmarks.shape[0] == 0
    E = network.kernel_values(frames[0])
    assert E.shape == (60, 32) and E.dtype == np.float32 and E.min() >= 0  # ReLU units
    lp = network.log_posteriors(frames[0])
    np.testing.assert_allclose(np.log(np.exp(lp).sum(axis=1)), 0, atol=1e-5)
    np.testing.assert_allclose(network.decision_function(frames[0]), E @ network.weights + network.bias, rtol=1e-5,
                               atol=1e-5)


def test_network_round_trip_is_identical(network):
    assert {"hidden", "alpha", "epochs", "hidden_weights", "hidden_bias"} <= set(network.to_arrays())
    _assert_round_trip_is_identical(network)


def test_network_arrays_are_checked(network):
    arrays = network.to_arrays()
    with pytest.raises(ModelError, match="lack hidden_bias"):
        FrameClassifier.from_arrays({k: v for k, v in arrays.items() if k != "hidden_bias"})
    with pytest.raises(ModelError, match="hidden_weights.*shape"):
        FrameClassifier.from_arrays({**arrays, "hidden_weights": arrays["hidden_weights"][:, :5]})
    with pytest.raises(ModelError, match="hidden units"):
        FrameClassifier.from_arrays({**arrays, "hidden": np.array(0)})
    with pytest.raises(ModelError, match="NaN"):
        FrameClassifier.from_arrays({**arrays, "hidden_bias": np.full_like(arrays["hidden_bias"], np.nan)})


def test_kernel_classifier_files_carry_no_network_keys(trained):
    arrays = trained.to_arrays()
    assert not {"hidden", "hidden_weights"} & set(arrays)  # files of the kernel map keep their layout
    assert FrameClassifier.from_arrays(arrays).hidden == 0


def test_network_training_stops_on_held_out_loss():
    frames, labels = _synthetic(12, separation=0.1)  # barely separable: the network overfits soon
    clf = FrameClassifier(n_classes=4, context=2, hidden=16, alpha=0.0, epochs=200).fit(frames, labels)
    again = FrameClassifier(n_classes=4, context=2, hidden=16, alpha=0.0, epochs=200).fit(frames, labels)
    assert 1 <= clf.network_epochs_ < 200  # stopped once the held-out loss stalled
    assert np.array_equal(clf.hidden_weights, again.hidden_weights)  # seeded: reproducible
    with pytest.raises(ValueError, match="epochs"):
        FrameClassifier(hidden=16, epochs=0)


def _subnormals(a: np.ndarray) -> int:
    return int(np.sum((a != 0) & (np.abs(a) < np.finfo(np.float32).tiny)))


def test_subnormal_weights_are_flushed_on_load_without_changing_scores(network):
    """Dead units' weights decay below float32's smallest normal value under the L2 penalty;
    x86 processors multiply such operands many times slower, so loading sets them to zero, which
    changes no score."""
    arrays = network.to_arrays()
    tiny = np.finfo(np.float32).tiny
    sub_w, sub_o = arrays["hidden_weights"].copy(), arrays["weights"].copy()
    sub_w[:, :8] = tiny / 64  # eight dead units
    sub_o[::3] = -tiny / 8
    given = {**arrays, "hidden_weights": sub_w, "weights": sub_o}
    loaded = FrameClassifier.from_arrays(given)
    assert _subnormals(loaded.hidden_weights) == 0 and _subnormals(loaded.weights) == 0
    assert _subnormals(given["hidden_weights"]) == 8 * sub_w.shape[0]  # the caller's arrays untouched
    assert np.all(loaded.hidden_weights[:, :8] == 0) and np.array_equal(loaded.hidden_weights[:, 8:], sub_w[:, 8:])
    frames, _ = _synthetic(2, seed=3)
    P = loaded._standardised(frames[0])  # the same outputs as the unflushed arithmetic, in float64
    Q = P.astype(np.float64) @ arrays["projection"] if arrays["projection"].size else P.astype(np.float64)
    H = np.maximum(Q @ sub_w.astype(np.float64) + arrays["hidden_bias"], 0)
    np.testing.assert_allclose(loaded._outputs(P), H @ sub_o.astype(np.float64) + arrays["bias"],
                               rtol=1e-4, atol=1e-4)


def test_network_training_leaves_no_subnormal_weights():
    frames, labels = _synthetic(12)
    for f in frames:  # six silent inputs: their weights feel only the L2 penalty and decay geometrically
        f[:, 36:] = 0
    clf = FrameClassifier(n_classes=4, context=2, hidden=64, alpha=30.0, epochs=600, pca_dims=0,
                          calibration_fraction=0.0).fit(frames, labels)  # 1,800 Adam steps: past 1e-38
    assert all(_subnormals(getattr(clf, k)) == 0 for k in ("hidden_weights", "hidden_bias", "weights", "bias"))


def test_averaged_networks_give_the_mean_of_their_calibrated_outputs(network):
    from aligner.features.frame_classifier import _log_softmax, averaged_networks

    frames, labels = _synthetic(12)
    other = FrameClassifier(n_classes=4, context=2, **dict(NETWORK, seed=5)).fit(frames, labels)
    dead = FrameClassifier.from_arrays({**network.to_arrays()})
    dead.hidden_weights[:, :3] = 0  # three units that never fire: left out, changing nothing
    dead.hidden_bias[:3] = -1.0
    merged = averaged_networks([dead, other])
    assert merged.networks == 2 and merged.hidden_weights.shape[1] == 2 * 32 - 3
    test, _ = _synthetic(2, seed=9)
    want = _log_softmax(np.mean([c.temperature * c.decision_function(test[0]).astype(np.float64)
                                 for c in (dead, other)], axis=0))
    np.testing.assert_allclose(merged.log_posteriors(test[0]), want, atol=1e-4)
    gap = np.mean([c.scores(test[0]) for c in (dead, other)], axis=0) - merged.scores(test[0])
    np.testing.assert_allclose(gap - gap.mean(axis=1, keepdims=True), 0, atol=1e-4)  # a per-frame constant
    again = FrameClassifier.from_arrays(merged.to_arrays())  # a file of several networks loads back
    assert again.networks == 2 and np.array_equal(again.scores(test[0]), merged.scores(test[0]))
    with pytest.raises(ModelError, match="trained network"):
        averaged_networks([network, FrameClassifier(n_classes=4, context=2, **SMALL).fit(frames, labels)])
    with pytest.raises(ModelError, match="context"):
        averaged_networks([network, FrameClassifier(n_classes=4, context=1, **NETWORK).fit(frames, labels)])


def test_several_networks_are_trained_with_successive_seeds_and_averaged():
    from aligner.features.frame_classifier import averaged_networks

    frames, labels = _synthetic(12)
    params = dict(n_classes=4, context=2, **NETWORK)
    two = FrameClassifier(**params, networks=2).fit(frames, labels)
    by_hand = averaged_networks([FrameClassifier(**dict(params, seed=s)).fit(frames, labels) for s in (0, 1)])
    test, y = _synthetic(2, seed=9)
    assert np.array_equal(two.scores(test[0]), by_hand.scores(test[0]))
    assert np.mean(two.predict(test[0]) == y[0]) > 0.9
    assert two.get_params()["networks"] == 2 and "networks" in two.to_arrays()
    assert "networks" not in FrameClassifier(**params).fit(frames, labels).to_arrays()  # one network: as before
    arrays = two.to_arrays()
    with pytest.raises(ModelError, match="hidden_weights.*shape"):  # more units than its networks hold
        FrameClassifier.from_arrays({**arrays, "hidden_weights": np.zeros((arrays["hidden_weights"].shape[0], 65),
                                                                          np.float32)})
    with pytest.raises(ValueError, match="networks"):
        FrameClassifier(hidden=8, networks=0)
