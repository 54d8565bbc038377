"""The composed frame scorer: with ``refit`` the groups held out to choose the epochs train too;
several networks averaged into one wider network."""

from __future__ import annotations

import numpy as np
import pytest

from aligner.features.composed_network import (ComposedNetwork, averaged_network, mean_activations, pruned_network,
                                               unit_contributions)


def _groups(seed: int = 0, repeats: int = 4, noise_seed: int | None = None):
    """Frames (T, 42) of 4 groups of ``repeats`` recordings; classes 0-2 everywhere, class 3 in group
    "d" alone; each class a mean of its own (drawn by ``seed``) plus noise (drawn by ``noise_seed``,
    None: ``seed``'s), so a network that never saw group "d" cannot know class 3's."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((4, 42)) * 2.0
    if noise_seed is not None:
        rng = np.random.default_rng(noise_seed)
    frames, labels, groups = [], [], []
    for g in "abcd":
        for _ in range(repeats):
            classes = [0, 1, 2] + ([3] if g == "d" else [])
            y = np.repeat(rng.permutation(classes), 20)
            frames.append((centres[y] + rng.standard_normal((len(y), 42))).astype(np.float32))
            labels.append(y)
            groups.append(g)
    return frames, labels, groups


def test_refit_trains_on_the_held_out_groups_for_the_epochs_they_chose():
    frames, labels, groups = _groups()
    Phi = np.eye(4, dtype=np.float32)
    settings = dict(hidden=16, epochs=8, seed=3, calibration_fraction=0.25, patience=8, context=1, batch=64)
    held_out = ComposedNetwork(**settings).fit(frames, labels, Phi, groups)
    refit = ComposedNetwork(refit=True, **settings).fit(frames, labels, Phi, groups)
    # the same held-out choice: the same epoch and temperature, other layers
    assert refit.best_epoch_ == held_out.best_epoch_ >= 1
    assert refit.temperature == held_out.temperature
    assert not np.array_equal(refit.hidden_weights, held_out.hidden_weights)
    # with this seed group "d" is the one held out: class 3, heard there alone, is never the
    # best class of its own frames without the refit, and is with it
    d_frames = np.vstack([f for f, y in zip(frames, labels) if 3 in y])
    d_labels = np.concatenate([y for y in labels if 3 in y])
    best_a = held_out.frame_classifier(Phi).scores(d_frames).argmax(axis=1)
    best_b = refit.frame_classifier(Phi).scores(d_frames).argmax(axis=1)
    assert np.mean(best_a[d_labels == 3] == 3) < 0.2
    assert np.mean(best_b[d_labels == 3] == 3) > 0.8
    # saved and read back, the setting stays (and a file saved before it reads as False)
    again = ComposedNetwork.from_arrays(refit.to_arrays())
    assert again.refit is True
    old = {k: v for k, v in held_out.to_arrays().items() if k != "refit"}
    assert ComposedNetwork.from_arrays(old).refit is False


def test_balanced_groups_weigh_each_held_out_group_the_same():
    """With ``balanced_groups`` the held-out loss is the mean of the groups' means: a group of
    many frames no longer decides alone when training stops."""
    frames, labels, groups = _groups()
    # group "a" ten times the frames of the others
    big = [(np.tile(f, (10, 1)), np.tile(y, 10)) for f, y, g in zip(frames, labels, groups) if g == "a"]
    frames = [f for f, _ in big] + [f for f, g in zip(frames, groups) if g != "a"]
    labels = [y for _, y in big] + [y for y, g in zip(labels, groups) if g != "a"]
    groups = ["a"] * len(big) + [g for g in groups if g != "a"]
    Phi = np.eye(4, dtype=np.float32)
    settings = dict(hidden=8, epochs=2, seed=0, calibration_fraction=0.5, context=1, batch=64)
    net = ComposedNetwork(balanced_groups=True, **settings).fit(frames, labels, Phi, groups)
    w = net._held_weights
    assert w is not None and abs(w.sum() - 1.0) < 1e-9
    # two groups held out, "a" (10x the frames) one of them with this seed: each carries half the
    # weight, whatever its number of frames
    values, counts = np.unique(w, return_counts=True)
    assert len(values) == 2 and counts.max() >= 5 * counts.min()
    np.testing.assert_allclose(values * counts, 0.5)
    plain = ComposedNetwork(**settings).fit(frames, labels, Phi, groups)
    assert plain._held_weights is None
    assert ComposedNetwork.from_arrays(net.to_arrays()).balanced_groups is True


def test_averaged_network_scores_the_mean_of_its_members_up_to_a_constant_per_frame():
    """Networks of their own standardisations and temperatures folded into one: each class's
    score is the members' mean score plus a constant per frame, so every score difference (what
    the DP's agreement and the refiner read) is the members' mean difference."""
    frames, labels, groups = _groups()
    Phi = np.eye(4, dtype=np.float32)
    settings = dict(hidden=8, epochs=3, calibration_fraction=0.25, context=1, batch=64)
    nets = [ComposedNetwork(seed=k, **settings).fit(frames[k:], labels[k:], Phi, groups[k:]) for k in range(3)]
    assert len({float(n.temperature) for n in nets}) > 1 and not np.array_equal(nets[0].mean, nets[1].mean)
    both = averaged_network(nets)
    assert both.hidden == 24 and both.hidden_weights.shape == (nets[0].mean.shape[0], 24)
    test = np.vstack(frames[:2])
    prior = np.log(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    mean = np.mean([n.frame_classifier(Phi, prior).scores(test) for n in nets], axis=0)
    got = both.frame_classifier(Phi, prior).scores(test)
    np.testing.assert_allclose(got - got[:, :1], mean - mean[:, :1], atol=2e-4)
    assert not np.allclose(got - got[:, :1], nets[0].frame_classifier(Phi, prior).scores(test)
                           - nets[0].frame_classifier(Phi, prior).scores(test)[:, :1], atol=1e-2)
    # saved and read back as any network; one member is itself
    again = ComposedNetwork.from_arrays(both.to_arrays())
    np.testing.assert_array_equal(again.frame_classifier(Phi).scores(test), both.frame_classifier(Phi).scores(test))
    assert averaged_network(nets[:1]) is nets[0]
    other = ComposedNetwork(context=2, hidden=8, epochs=1).fit(frames, labels, Phi, groups)
    with pytest.raises(ValueError, match="different frames"):
        averaged_network([nets[0], other])


def test_units_never_positive_on_the_training_frames_are_pruned_at_no_cost_to_their_scores():
    """A unit that is 0 on every frame moves no score: left out, the frames score the same."""
    frames, labels, groups = _groups()
    Phi = np.eye(4, dtype=np.float32)
    net = ComposedNetwork(hidden=16, epochs=2, context=1, batch=64).fit(frames, labels, Phi, groups)
    net.hidden_bias[:3] = -1e4  # three units that never fire
    activations = mean_activations(net, frames)
    keep = activations > 0
    assert keep.shape == (16,) and not keep[:3].any() and keep.sum() <= 13
    contribution = unit_contributions(net, activations)
    assert np.all(contribution[:3] == 0) and np.all(contribution[keep] > 0)
    small = pruned_network(net, keep)
    assert small.hidden == keep.sum() and small.projection.shape == (keep.sum(), 4)
    test = np.vstack(frames)
    np.testing.assert_allclose(small.frame_classifier(Phi).scores(test), net.frame_classifier(Phi).scores(test),
                               atol=1e-5)
    assert ComposedNetwork.from_arrays(small.to_arrays()).hidden == small.hidden
    assert pruned_network(net, np.ones(16, bool)) is net
    with pytest.raises(ValueError, match="a unit kept"):
        pruned_network(net, np.zeros(16, bool))
