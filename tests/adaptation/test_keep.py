"""Keep-or-revert of each round's re-estimated components on held-back recordings
(:mod:`aligner.alignment.adaptation.keep`, issue 46)."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.adaptation import keep
from aligner.alignment.adaptation import rounds as ad
from tests.conftest import cut_classifier, speaker_recordings

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"
MODEL = Path(__file__).resolve().parents[2] / "models" / "timit-alignment"


def _recs(n, with_reference=()):
    return [types.SimpleNamespace(reference=[(0.0, 1.0, "h#")] if i in with_reference else None) for i in range(n)]


def test_every_fifth_plain_recording_is_held_back():
    assert keep.held_back(_recs(9)) == []  # too few
    assert keep.held_back(_recs(10)) == [4, 9]
    # recordings with references are never held back and do not count
    assert keep.held_back(_recs(12, with_reference={4, 5})) == [6, 11]
    assert keep.held_back(_recs(20), every=4) == [3, 7, 11, 15, 19]


class _Judge(keep.HeldBackJudge):
    """A judge whose value is a model's ``score`` attribute (no decoding)."""

    def __init__(self):
        self.judge, self.recordings, self._values = "own", [None] * 3, {}

    def value(self, model):
        return model.score, 7, 3


def test_a_component_is_kept_only_when_it_raises_the_value():
    current = types.SimpleNamespace(score=0.80)
    gains = {"classifier": 0.05, "durations": -0.01}

    def build(chosen):
        return types.SimpleNamespace(score=0.80 + sum(gains[k] for k in chosen))

    chosen, record = _Judge().choose(current, {"classifier": "new clf", "durations": "new durations"}, build)
    assert chosen == {"classifier": "new clf", "durations": None}
    assert record["components"]["classifier"]["kept"] and not record["components"]["durations"]["kept"]
    assert record["held_back"] == 3 and record["current_confidence"] == pytest.approx(0.80)
    assert "0.8000 -> 0.8500" in record["components"]["classifier"]["why"]


def test_settings_check_the_judge():
    with pytest.raises(ValueError, match="keep_judge"):
        ad.AdaptSettings(keep_judge="mine").check()


@pytest.fixture(scope="module")
def ten():
    if not DATA.is_dir() or not (MODEL / "manifest.json").is_file():
        pytest.skip("shared TIMIT sample or shipped model not found")
    from aligner.alignment.model import AlignmentModel

    recs = speaker_recordings(DATA, 10)
    model = AlignmentModel.load(MODEL)
    if model.confidence is None:
        pytest.skip("the shipped model has no confidence model")
    return dataclasses.replace(model, classifier=cut_classifier(model.classifier)), recs


@pytest.mark.parametrize("gain, kept", [(-1.0, True), (1.0, False)])
def test_adapt_model_keeps_or_reverts_on_held_back_recordings(ten, monkeypatch, gain, kept):
    model, recs = ten
    assert len(recs) == 10
    monkeypatch.setattr(keep, "MIN_GAIN", gain)  # -1: any change passes; +1: none can
    settings = ad.AdaptSettings(classifier_prior=None, durations_prior=3.0, skip_flagged=False,
                                keep_better=True, keep_judge="base")
    adapted, (report,) = ad.adapt_model(model, recs, rounds=1, settings=settings)
    assert report.held_back == 2
    assert report.files_used + len(report.files_left_out) == 8  # held-back recordings never re-estimate
    got = report.kept["components"]["durations"]
    assert got["kept"] is kept and 0 < got["confidence"] <= 1 and report.kept["boundaries"] > 20
    assert adapted.training["adapted"]["kept"] == report.kept
    assert adapted.training["adapted"]["recordings"] == 10
    same = np.array_equal(adapted.durations.mean, model.durations.mean)
    assert same is (not kept)


def test_without_enough_recordings_every_change_is_kept_and_said(ten):
    model, recs = ten
    settings = ad.AdaptSettings(classifier_prior=None, durations_prior=3.0, skip_flagged=False, keep_better=True)
    adapted, (report,) = ad.adapt_model(model, recs[:3], rounds=1, settings=settings)
    assert report.held_back == 0 and "too few" in report.kept["why"]
    assert not np.array_equal(adapted.durations.mean, model.durations.mean)
