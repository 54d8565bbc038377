"""The learned boundary detector and the evidence it adds to the DP (aligner.alignment.decoding.boundary_evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from aligner.alignment.decoding.boundary_evidence import (CONTEXT_LEFT, CONTEXT_RIGHT, BoundaryDetector,
                                                          boundary_labels, check_detector, context_rows,
                                                          evidence_column, with_boundary_evidence)
from aligner.alignment.decoding.task import AlignmentTask, make_alignment_input
from aligner.errors import ModelError


def _recordings(n: int, seed: int = 0, width: int = 6) -> tuple:
    """``(frames list, boundary frames list, groups)``: recordings of steady segments of 8-20 frames,
    each a level of its own plus noise; the boundaries are where the level changes."""
    rng = np.random.default_rng(seed)
    frames, bounds, groups = [], [], []
    for i in range(n):
        lengths = rng.integers(8, 21, size=int(rng.integers(3, 7)))
        levels = rng.standard_normal((len(lengths), width)) * 2.0
        f = np.vstack([np.tile(lv, (n_, 1)) for lv, n_ in zip(levels, lengths)])
        frames.append((f + 0.3 * rng.standard_normal(f.shape)).astype(np.float32))
        bounds.append(np.cumsum(lengths)[:-1])
        groups.append(f"lang{i % 5}")
    return frames, bounds, groups


def test_context_rows_hold_the_frames_around_each_boundary_frame_edges_repeated():
    frames = np.arange(7 * 2, dtype=np.float32).reshape(7, 2)
    rows = context_rows(frames)
    width = CONTEXT_LEFT + CONTEXT_RIGHT + 1
    assert rows.shape == (7, width * 2)
    # row t holds frames t-5 .. t+4, clipped to the recording
    for t in range(7):
        expect = np.concatenate([frames[min(max(u, 0), 6)] for u in range(t - CONTEXT_LEFT, t + CONTEXT_RIGHT + 1)])
        np.testing.assert_array_equal(rows[t], expect)
    np.testing.assert_array_equal(context_rows(frames, 2, 5), rows[2:5])
    np.testing.assert_array_equal(boundary_labels(6, np.array([0, 2, 5, 6, 9])), [0, 0, 1, 0, 0, 1])


def test_a_detector_learns_where_the_frames_change_and_round_trips():
    frames, bounds, groups = _recordings(300)
    det = BoundaryDetector(hidden=32, max_epochs=8, n_val_groups=2).fit(frames, bounds, groups)
    assert 1 <= det.epochs_ <= 8 and len(det.history_) == 8
    test_frames, test_bounds, _ = _recordings(10, seed=1)
    at, away = [], []
    for f, b in zip(test_frames, test_bounds):
        lo = det.log_odds(f)
        assert lo.shape == (len(f),) and np.all(np.abs(lo) <= np.log(1e4) + 1e-9)
        at += list(lo[b])
        inside = np.ones(len(f), bool)
        for k in b:
            inside[max(0, k - 2):k + 3] = False
        away += list(lo[inside])
    assert np.median(at) > np.median(away) + 3.0
    again = BoundaryDetector.from_arrays(det.to_arrays())
    np.testing.assert_array_equal(again.log_odds(test_frames[0]), det.log_odds(test_frames[0]))
    assert check_detector(again, 6) is again
    with pytest.raises(ValueError, match="reads 60 values per frame, not 10 frames of 42"):
        check_detector(again, 42)


def test_damaged_detector_arrays_are_one_error():
    frames, bounds, groups = _recordings(12)
    arrays = BoundaryDetector(hidden=4, max_epochs=2).fit(frames, bounds, groups).to_arrays()
    for key, bad in [("hidden_weights", arrays["hidden_weights"][:, :3]),
                     ("output_weights", np.full_like(arrays["output_weights"], np.nan)),
                     ("settings", arrays["settings"][:5])]:
        with pytest.raises(ModelError, match="boundary detector arrays"):
            BoundaryDetector.from_arrays(dict(arrays, **{key: bad}))
    with pytest.raises(ModelError, match="boundary detector arrays unusable"):
        BoundaryDetector.from_arrays({k: v for k, v in arrays.items() if k != "output_bias"})
    with pytest.raises(ModelError, match="not fitted"):
        BoundaryDetector().log_odds(frames[0])


def test_the_evidence_moves_a_boundary_the_acoustics_leave_open():
    """Two phones of equal scores over 20 frames: the DP puts the boundary where the durations want
    it; evidence of a boundary at frame 6 moves it there, and weight 0 changes nothing."""
    T = 20
    scores = np.zeros((T, 2))
    frames = np.zeros((T, 42), np.float32)
    x = make_alignment_input(scores, frames, np.array([0, 1]), np.array([10.0, 10.0]), np.array([3.0, 3.0]), 20)
    weights = np.array([1.0, 0.5, 2.0, 0.5, 0.5, 1.0, 0.0])
    task = AlignmentTask()
    assert task.decode(x, weights)[1] == 10
    log_odds = np.full(T, -3.0)
    log_odds[6] = 5.0
    assert evidence_column(weights) == 1 and evidence_column(-weights) is None
    moved = with_boundary_evidence(x, log_odds, 1.0, weights)
    assert task.decode(moved, weights)[1] == 6
    assert np.all(x.dist == 0)  # the input itself is left as it was
    np.testing.assert_allclose(moved.dist[:, 1] * weights[2], log_odds)
    assert with_boundary_evidence(x, log_odds, 0.0, weights) is x
    assert with_boundary_evidence(x, log_odds, 1.0, -weights) is x
    with pytest.raises(ValueError, match="19 log-odds for 20 frames"):
        with_boundary_evidence(x, log_odds[1:], 1.0, weights)


def test_a_detector_trains_on_at_most_max_frames_frames_of_whole_recordings(monkeypatch):
    """More frames than ``max_frames``: whole recordings drawn at random, the frames it trains on
    within the cap; fewer: every recording, as if there were no cap."""
    import aligner.alignment.decoding.boundary_evidence as be

    seen = []
    real = be.context_rows
    monkeypatch.setattr(be, "context_rows", lambda f, *a: seen.append(len(f)) or real(f, *a))
    frames, bounds, groups = _recordings(40)
    total = sum(len(f) for f in frames)
    capped = BoundaryDetector(hidden=4, max_epochs=1, max_frames=total // 2).fit(frames, bounds, groups)
    assert total // 2 - 120 < sum(seen) <= total // 2 and len(seen) < len(frames)  # a recording: at most 120
    seen.clear()
    whole = BoundaryDetector(hidden=4, max_epochs=1, max_frames=total).fit(frames, bounds, groups)
    assert sum(seen) == total
    again = BoundaryDetector(hidden=4, max_epochs=1).fit(frames, bounds, groups)
    np.testing.assert_array_equal(whole.log_odds(frames[0]), again.log_odds(frames[0]))
    assert not np.array_equal(capped.log_odds(frames[0]), whole.log_odds(frames[0]))
