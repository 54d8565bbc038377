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
