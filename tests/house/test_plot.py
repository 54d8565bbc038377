"""`aligner plot` and :mod:`aligner.plotting`: review pictures of an alignment (issue 16)."""

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from aligner.io.exports import write_alignment
from aligner.io.textgrids import write_textgrid

from tests.conftest import TIMIT, needs_timit, one_line_error, run

SR = 16000
PHONES = [(0.0, 0.2, ""), (0.2, 0.35, "s"), (0.35, 0.55, "aa"), (0.55, 0.58, "t"), (0.58, 0.8, "iy"),
          (0.8, 1.0, "")]
WORDS = [(0.2, 0.8, "seat")]


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk; fails unless the file is a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def pair(tmp_path):
    """A 1 s synthetic recording (noise, a vowel-like tone, noise) and a words + phones TextGrid."""
    rng = np.random.default_rng(0)
    t = np.arange(SR) / SR
    y = 0.01 * rng.standard_normal(SR)
    vowel = (t > 0.35) & (t < 0.8)
    y[vowel] += 0.3 * np.sin(2 * np.pi * 180 * t[vowel]) + 0.1 * np.sin(2 * np.pi * 900 * t[vowel])
    wav = tmp_path / "utt.wav"
    sf.write(wav, y, SR)
    tg = tmp_path / "utt.TextGrid"
    write_textgrid(tg, [("words", WORDS), ("phones", PHONES)], xmax=1.0)
    return wav, tg


def test_default_output_is_a_png_beside_the_textgrid(pair):
    pytest.importorskip("matplotlib")
    wav, tg = pair
    code, out = run("plot", wav, tg, "--width", 8, "--height", 5, "--dpi", 50)
    assert code == 0, out
    png = tg.with_suffix(".png")
    assert out.strip() == str(png)
    assert png_size(png) == (400, 250)
    assert not list(png.parent.glob(".*.tmp"))  # the temporary file was renamed


def test_library_function_default_size_and_tiers(pair, tmp_path):
    pytest.importorskip("matplotlib")
    from aligner.plotting import DPI, WIDTH_IN, plot_alignment

    wav, tg = pair
    out = plot_alignment(wav, tg, tmp_path / "pics" / "a.png", tiers=["phones"])
    width, height = png_size(out)
    assert width == round(WIDTH_IN * DPI) and height > 400


def test_zoom_into_a_time_range(pair, tmp_path):
    pytest.importorskip("matplotlib")
    wav, tg = pair
    whole, part = tmp_path / "whole.png", tmp_path / "part.png"
    assert run("plot", wav, tg, "-o", whole, "--dpi", 40)[0] == 0
    code, out = run("plot", wav, tg, "-o", part, "--start", 0.3, "--end", 0.6, "--dpi", 40)
    assert code == 0, out
    assert png_size(part) == png_size(whole) and part.read_bytes() != whole.read_bytes()


def test_confidences_from_point_tiers_and_from_csv(tmp_path, pair):
    pytest.importorskip("matplotlib")
    from aligner import plotting

    wav, _ = pair
    tiers = [("words", WORDS), ("phones", [p for p in PHONES if p[2]])]
    conf = {"words": [0.9], "phones": [0.95, 0.2, 0.5, 0.8]}
    tg = tmp_path / "conf.TextGrid"
    write_alignment(tg, tiers, 1.0, confidences=conf, confidence_tiers=True)
    csv_path = write_alignment(tmp_path / "conf.csv", tiers, 1.0, fmt="csv", confidences=conf)
    shown, from_grid, _ = plotting._read_tiers(tg, None)
    assert [name for name, _ in shown] == ["words", "phones"]  # point tiers are not drawn as rows
    assert from_grid["phones"] == [(0.2, 0.95), (0.35, 0.2), (0.55, 0.5), (0.58, 0.8)]
    from_csv = plotting._read_confidence_csv(csv_path, ["words", "phones"])
    assert from_csv["phones"] == from_grid["phones"]
    bounds = plotting._boundaries(shown[1][1], from_grid["phones"], 1.0)
    assert bounds == [(0.2, 0.95), (0.35, 0.2), (0.55, 0.5), (0.58, 0.8), (0.8, None)]
    assert run("plot", wav, tg, "-o", tmp_path / "a.png", "--dpi", 40)[0] == 0
    code, out = run("plot", wav, tg, "--confidence", csv_path, "-o", tmp_path / "b.png", "--dpi", 40)
    assert code == 0, out


def test_without_matplotlib_one_line_error_names_the_extra(pair, monkeypatch):
    wav, tg = pair
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, out = run("plot", wav, tg)
    assert code == 1
    assert 'pip install "aligner[plot]"' in one_line_error(out)
    assert not tg.with_suffix(".png").exists()


def test_aligner_and_help_do_not_import_matplotlib():
    code = ("import sys, aligner, aligner.plotting, aligner.cli.plot\n"
            "from click.testing import CliRunner\n"
            "from aligner.cli import main\n"
            "assert CliRunner().invoke(main, ['plot', '--help']).exit_code == 0\n"
            "print('matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_help():
    code, out = run("plot", "--help")
    assert code == 0
    for option in ("--start", "--end", "--tiers", "--confidence", "--width", "--height", "--dpi", "-o"):
        assert option in out


def _point_only_textgrid(path: Path) -> Path:
    path.write_text('File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = 1\n'
                    'tiers? <exists>\nsize = 1\nitem []:\n    item [1]:\n        class = "TextTier"\n'
                    '        name = "marks"\n        xmin = 0\n        xmax = 1\n        points: size = 1\n'
                    '        points [1]:\n            number = 0.5\n            mark = "x"\n')
    return path


@pytest.mark.parametrize("case,expected", [
    ("missing audio", "audio file not found"),
    ("missing textgrid", "TextGrid not found"),
    ("point tiers only", "no interval tier"),
    ("unknown tier", "tier 'vowels' not found"),
    ("outside", "outside the recording"),
    ("reversed", "the end must come after the start"),
    ("overwrite textgrid", "would overwrite the input"),
    ("overwrite audio", "would overwrite the input"),
    ("not png", "ending in .png"),
    ("csv without confidence", "no Confidence column"),
    ("missing csv", "confidence CSV not found"),
    ("csv of another alignment", "is it the same alignment?"),
])
def test_bad_input_gives_one_line_error_naming_the_file(pair, tmp_path, case, expected):
    pytest.importorskip("matplotlib")
    wav, tg = pair
    args = {
        "missing audio": ([tmp_path / "nope.wav", tg], "nope.wav"),
        "missing textgrid": ([wav, tmp_path / "nope.TextGrid"], "nope.TextGrid"),
        "point tiers only": ([wav, _point_only_textgrid(tmp_path / "points.TextGrid")], "points.TextGrid"),
        "unknown tier": ([wav, tg, "--tiers", "phones,vowels"], "utt.TextGrid"),
        "outside": ([wav, tg, "--start", 0.5, "--end", 3], "utt.wav"),
        "reversed": ([wav, tg, "--start", 0.6, "--end", 0.4], "utt.wav"),
        "overwrite textgrid": ([wav, tg, "-o", tg], "utt.TextGrid"),
        "overwrite audio": ([wav, tg, "-o", wav], "utt.wav"),
        "not png": ([wav, tg, "-o", tmp_path / "pic.jpg"], "pic.jpg"),
        "csv without confidence": ([wav, tg, "--confidence", write_alignment(tmp_path / "x.csv", [("phones", PHONES)],
                                                                             1.0, fmt="csv")], "x.csv"),
        "missing csv": ([wav, tg, "--confidence", tmp_path / "none.csv"], "none.csv"),
        "csv of another alignment": ([wav, tg, "--confidence", write_alignment(
            tmp_path / "other.csv", [("phones", [(0.1, 0.3, "a"), (0.3, 0.7, "b")])], 1.0, fmt="csv",
            confidences={"phones": [0.5, 0.5]})], "other.csv"),
    }
    argv, name = args[case]
    code, out = run("plot", *argv)
    assert code == 1, out
    line = one_line_error(out)
    assert expected in line and name in line, line
    assert not list(tmp_path.glob("*.png"))


def test_long_recording_is_refused_before_decoding_and_a_part_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(1)
    wav = tmp_path / "long.wav"
    sf.write(wav, 0.05 * rng.standard_normal(61 * SR).astype(np.float32), SR)
    tg = tmp_path / "long.TextGrid"
    write_textgrid(tg, [("words", [(10.0, 10.5, "hello")])], xmax=61.0)
    code, out = run("plot", wav, tg)
    assert code == 1
    line = one_line_error(out)
    assert "long.wav" in line and "--start/--end" in line
    code, out = run("plot", wav, tg, "--start", 9.5, "--end", 11, "--dpi", 40)
    assert code == 0, out


def test_textgrid_longer_than_audio_warns(pair, tmp_path):
    pytest.importorskip("matplotlib")
    wav, _ = pair
    tg = tmp_path / "other.TextGrid"
    write_textgrid(tg, [("phones", [(0.1, 0.5, "a")])], xmax=3.0)
    code, out = run("plot", wav, tg, "--dpi", 40)
    assert code == 0, out
    assert "warning:" in out and "longer than the recording" in out


def test_timit_utterance_with_its_reference_phones(timit_dir, tmp_path):
    pytest.importorskip("matplotlib")
    from aligner.io.transcripts import read_phn

    wav = sorted(timit_dir.glob("*/sa1.wav"))[0]
    starts, ends, labels = read_phn(wav.with_suffix(".phn"))
    duration = sf.info(str(wav)).duration
    tg = tmp_path / "sa1.TextGrid"
    write_textgrid(tg, [("phones", [(s / SR, min(e / SR, duration), lab)
                                    for s, e, lab in zip(starts, ends, labels)])], xmax=duration)
    code, out = run("plot", wav, tg, "--width", 10, "--height", 4, "--dpi", 60)
    assert code == 0, out
    assert png_size(tg.with_suffix(".png")) == (600, 240)


@needs_timit
def test_align_corpus_draws_review_pictures(tmp_path):
    import shutil

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    wav = sorted(TIMIT.rglob("*.wav"))[0]
    shutil.copy(wav, corpus / wav.name)
    shutil.copy(wav.with_suffix(".phn"), corpus / wav.with_suffix(".phn").name)
    code, output = run("align-corpus", corpus, tmp_path / "out", "--plot-dir", tmp_path / "plots")
    assert code == 0, output
    png = tmp_path / "plots" / (wav.stem + ".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, output = run("align-corpus", corpus, tmp_path / "out2", "--plot-dir", tmp_path / "p2", "--format", "csv")
    assert code != 0 and "drawn from TextGrids" in output
