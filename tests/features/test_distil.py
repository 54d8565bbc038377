"""A smaller network classifier distilled from a larger one (aligner.features.distil)."""

import numpy as np
import pytest

from aligner.errors import ModelError
from aligner.features.distil import distil_network
from aligner.features.frame_classifier import FrameClassifier, averaged_networks

from tests.features.test_classifier import _synthetic

TEACHER = dict(hidden=48, alpha=1.0, epochs=30, max_iter=60)


@pytest.fixture(scope="module")
def teacher():
    """Three networks averaged, as the shipped clean classifier is."""
    frames, labels = _synthetic(16, n_classes=5, separation=1.0)
    members = [FrameClassifier(n_classes=5, context=2, seed=s, **TEACHER).fit(frames, labels) for s in range(3)]
    return averaged_networks(members)


def test_the_student_reproduces_the_teachers_scores(teacher):
    frames, _ = _synthetic(16, n_classes=5, separation=1.0)
    student = distil_network(teacher, frames, hidden=16, groups=[f"u{i}" for i in range(len(frames))], seed=0,
                             batch_size=32, epochs=60)
    assert student.hidden_weights.shape[1] <= 16 < teacher.hidden_weights.shape[1]
    assert student.hidden_weights.shape[0] == teacher.hidden_weights.shape[0]
    unseen, _ = _synthetic(6, n_classes=5, seed=11, separation=1.0)
    agree, gaps = [], []
    for f in unseen:
        s, t = student.scores(f), teacher.scores(f)
        agree.append(s.argmax(axis=1) == t.argmax(axis=1))
        # the scores the decoder reads, up to a per-frame constant
        gaps.append(np.abs((s - s.mean(axis=1, keepdims=True)) - (t - t.mean(axis=1, keepdims=True))))
    assert np.mean(np.concatenate(agree)) > 0.95
    assert np.median(np.concatenate(gaps)) < 0.05 * np.ptp(teacher.scores(unseen[0]))
    # what the model keeps of the teacher: standardisation, priors, context
    np.testing.assert_array_equal(student.mean, teacher.mean)
    np.testing.assert_array_equal(student.log_prior, teacher.log_prior)
    assert student.context == teacher.context and student.networks == 1
    assert 1 <= student.network_epochs_ and np.isfinite(student.distil_loss_)


def test_the_student_saves_and_loads_as_any_network(teacher):
    frames, _ = _synthetic(8, n_classes=5, separation=1.0)
    student = distil_network(teacher, frames, hidden=8, epochs=3, seed=1)
    again = FrameClassifier.from_arrays(student.to_arrays())
    np.testing.assert_array_equal(again.scores(frames[0]), student.scores(frames[0]))


def test_bad_input_is_refused(teacher):
    frames, _ = _synthetic(2, n_classes=5)
    with pytest.raises(ModelError, match="trained teacher"):
        distil_network(FrameClassifier(n_classes=5, hidden=8), frames)
    with pytest.raises(ValueError, match="hidden >= 1"):
        distil_network(teacher, frames, hidden=0)
    with pytest.raises(ValueError, match="groups"):
        distil_network(teacher, frames, groups=["a"])


# ---------------------------------------------------------------- composed networks (the universal scorer)
from aligner.features.composed_network import ComposedNetwork, averaged_network  # noqa: E402
from aligner.features.distil import distil_composed_network  # noqa: E402

from tests.features.test_composed_network import _groups  # noqa: E402


@pytest.fixture(scope="module")
def composed_teacher():
    """Four composed networks of 32 units averaged (128 units), as the universal model's scorer."""
    frames, labels, groups = _groups(seed=0)
    Phi = np.eye(4, dtype=np.float32)
    members = [ComposedNetwork(hidden=32, epochs=8, seed=s, context=1, batch=64).fit(frames, labels, Phi, groups)
               for s in range(4)]
    return averaged_network(members), frames


def test_the_composed_student_reproduces_the_teachers_images_on_unseen_frames(composed_teacher):
    teacher, _ = composed_teacher
    frames, _, _ = _groups(seed=0, repeats=12)  # more recordings of the same classes to learn from
    student = distil_composed_network(teacher, frames, hidden=16, groups=[f"u{i}" for i in range(len(frames))],
                                      epochs=40, batch_size=64, seed=0)
    assert student.hidden <= 16 < teacher.hidden == 128
    unseen = np.vstack(_groups(seed=0, repeats=2, noise_seed=99)[0])  # the same classes, frames never heard
    e_t, e_s = teacher.embeddings(unseen), student.embeddings(unseen)
    # the images, and so every class's logit, within a few percent of their spread
    assert np.mean((e_s - e_t) ** 2) < 0.05 * np.var(e_t)
    Phi = np.eye(4, dtype=np.float32)
    best_t = teacher.frame_classifier(Phi).scores(unseen).argmax(1)
    agree = best_t == student.frame_classifier(Phi).scores(unseen).argmax(1)
    assert agree.mean() > 0.95
    # what a model keeps of the teacher: standardisation, context, temperature, settings
    np.testing.assert_array_equal(student.mean, teacher.mean)
    np.testing.assert_array_equal(student.inv_std, teacher.inv_std)
    assert (student.context, student.temperature, student.n_descriptions) == (
        teacher.context, teacher.temperature, teacher.n_descriptions)
    assert 1 <= student.distil_epochs_ <= 40 and np.isfinite(student.distil_loss_)
    # saved and read back as any composed network, the same scores
    again = ComposedNetwork.from_arrays(student.to_arrays())
    assert again.hidden == student.hidden
    np.testing.assert_array_equal(again.embeddings(unseen), e_s)


def test_units_of_the_student_that_never_fire_are_dropped(composed_teacher):
    teacher, frames = composed_teacher
    import copy

    initial = copy.copy(teacher)
    initial.__dict__.pop("_base", None)
    initial.hidden = 12
    initial.hidden_weights = teacher.hidden_weights[:, :12].copy()
    initial.hidden_bias = teacher.hidden_bias[:12].copy()
    initial.hidden_bias[[3, 7]] = -1e4  # never positive: no gradient reaches them, they stay off
    initial.projection = teacher.projection[:12].copy()
    student = distil_composed_network(teacher, frames, hidden=12, initial=initial, epochs=2, batch_size=64)
    assert student.hidden == 10 == student.hidden_weights.shape[1] == student.projection.shape[0]
    assert np.all(student.hidden_bias > -1e3)
    # a time bound of almost nothing still ends after one epoch with a working student
    quick = distil_composed_network(teacher, frames, hidden=8, epochs=50, max_seconds=1e-6)
    assert quick.distil_epochs_ == 1


def test_bad_composed_input_is_refused(composed_teacher):
    teacher, frames = composed_teacher
    with pytest.raises(ModelError, match="trained teacher"):
        distil_composed_network(ComposedNetwork(hidden=8), frames)
    with pytest.raises(ValueError, match="hidden >= 1"):
        distil_composed_network(teacher, frames, hidden=0)
    with pytest.raises(ValueError, match="initial network"):
        distil_composed_network(teacher, frames, hidden=8, initial=teacher)
    with pytest.raises(ValueError, match="groups"):
        distil_composed_network(teacher, frames, groups=["a"])
