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
