"""The word-junction benchmark's grouping (benchmarks.words.eval_junctions): each word edge by what
the reference phones put between it and the next word."""

from __future__ import annotations

import pytest

from aligner.io.textgrids import Interval

junctions = pytest.importorskip("benchmarks.words.eval_junctions")


def test_a_gap_is_named_by_the_phones_inside_it():
    phones = [(0.0, 0.10, "h#"), (0.10, 0.30, "ay"), (0.30, 0.38, "q"), (0.38, 0.50, "ao"), (0.50, 0.62, "pau"),
              (0.62, 0.70, "s")]
    assert junctions.junction_of(phones, 0.30, 0.38) == "q"
    assert junctions.junction_of(phones, 0.50, 0.62) == "pau"
    assert junctions.junction_of(phones, 0.30, 0.302) == "none"
    assert junctions.junction_of(phones, 0.31, 0.37) == "unlabelled"  # no phone lies wholly inside


def test_each_edge_goes_to_its_group_with_its_signed_error_and_our_gap():
    ref = [Interval(0.10, 0.30, "i"), Interval(0.38, 0.50, "all"), Interval(0.62, 0.90, "see")]
    phones = [(0.10, 0.30, "ay"), (0.30, 0.38, "q"), (0.38, 0.50, "ao"), (0.50, 0.62, "pau"), (0.62, 0.90, "s")]
    hyp = [Interval(0.11, 0.34, "I"), Interval(0.34, 0.52, "all"), Interval(0.60, 0.90, "see")]
    rows = junctions.edge_rows(ref, hyp, phones)
    groups = [g for g, _, _ in rows]
    assert groups == ["edge", "q", "q", "pau", "pau", "edge"]
    errors = [round(e) for _, e, _ in rows]
    assert errors == [10, 40, -40, 20, -20, 0]
    assert [gap for _, _, gap in rows] == [False, False, False, True, True, False]
