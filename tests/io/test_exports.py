"""Alignment outputs in MFA's TextGrid, JSON and CSV layouts."""

import csv
import json

import pytest

from aligner.io.exports import SUFFIXES, alignment_csv, tier_name, write_alignment
from aligner.io.textgrids import read_interval_tier

TIERS = [("words", [(0.1, 0.5, "hello"), (0.6, 1.0, "world")]),
         ("phones", [(0.1, 0.3, "HH"), (0.3, 0.5, "AH0"), (0.6, 1.0, "W")])]


def test_textgrid_tiers_cover_the_recording(tmp_path):
    out = write_alignment(tmp_path / "a.TextGrid", TIERS, 1.2)
    words = read_interval_tier(out, "words")
    assert [w.label for w in words] == ["", "hello", "", "world", ""]
    assert words[-1].end_s == pytest.approx(1.2)


def test_json_is_mfa_layout(tmp_path):
    data = json.loads(write_alignment(tmp_path / "a.json", TIERS, 1.2, "json").read_text())
    assert data["start"] == 0 and data["end"] == 1.2
    assert list(data["tiers"]) == ["words", "phones"]
    assert data["tiers"]["words"] == {"type": "interval", "entries": [[0.1, 0.5, "hello"], [0.6, 1.0, "world"]]}


def test_csv_is_mfa_layout_with_speakers(tmp_path):
    rows = list(csv.DictReader(write_alignment(tmp_path / "spk1.csv", TIERS, 1.2, "csv").read_text().splitlines()))
    assert list(rows[0]) == ["Begin", "End", "Label", "Type", "Speaker"]
    assert [(r["Label"], r["Type"], r["Speaker"]) for r in rows][:2] == [("hello", "words", "spk1"), ("world", "words", "spk1")]
    two = [(tier_name("words", "anna"), TIERS[0][1]), (tier_name("phones", "anna"), TIERS[1][1])]
    assert two[0][0] == "anna - words"
    rows = list(csv.DictReader(alignment_csv(two, "file").splitlines()))
    assert {r["Speaker"] for r in rows} == {"anna"} and {r["Type"] for r in rows} == {"words", "phones"}


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="textgrid, json, csv"):
        write_alignment(tmp_path / "a.x", TIERS, 1.2, "xml")
    assert set(SUFFIXES) == {"textgrid", "json", "csv"}


CONFIDENCES = {"words": [0.9, 0.25], "phones": [0.95, 0.5, 0.125]}


def test_confidences_in_every_format(tmp_path):
    import textgrid

    rows = list(csv.DictReader(write_alignment(tmp_path / "a.csv", TIERS, 1.2, "csv",
                                               confidences=CONFIDENCES).read_text().splitlines()))
    assert [r["Confidence"] for r in rows] == ["0.9000", "0.2500", "0.9500", "0.5000", "0.1250"]
    data = json.loads(write_alignment(tmp_path / "a.json", TIERS, 1.2, "json", confidences=CONFIDENCES).read_text())
    assert data["tiers"]["words"]["entries"] == [[0.1, 0.5, "hello", 0.9], [0.6, 1.0, "world", 0.25]]
    out = write_alignment(tmp_path / "a.TextGrid", TIERS, 1.2, confidences=CONFIDENCES, confidence_tiers=True)
    grid = textgrid.TextGrid.fromFile(str(out))  # Praat's point tiers, as a third-party reader sees them
    assert [t.name for t in grid.tiers] == ["words", "phones", "words confidence", "phones confidence"]
    points = grid.tiers[3]
    assert [(round(p.time, 3), p.mark) for p in points] == [(0.1, "0.95"), (0.3, "0.50"), (0.6, "0.12")]
    plain = write_alignment(tmp_path / "b.TextGrid", TIERS, 1.2, confidences=CONFIDENCES)
    assert len(textgrid.TextGrid.fromFile(str(plain)).tiers) == 2  # point tiers only on request


def test_confidences_must_match_the_intervals(tmp_path):
    with pytest.raises(ValueError, match="tier 'words': 1 confidences for 2 intervals"):
        write_alignment(tmp_path / "a.csv", TIERS, 1.2, "csv", confidences={"words": [0.5]})
