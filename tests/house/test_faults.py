"""Faults a user meets: a full or read-only disk, a damaged model, a mistyped transcript path,
options that would be ignored. Each gives one line naming the user's file and what to do, and
writes nothing (issue 14, items 9 and 10; the other items are tested where their code lives:
test_batch.py, test_cli_align.py, test_evaluation, test_sphere_repair.py, test_audio.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run

REPO = Path(__file__).resolve().parents[2]
DEMO_WAV = REPO / "examples" / "demo.wav"
DEMO_PHONES = REPO / "examples" / "demo.phones"


def _small_mount(path: Path, options: str) -> bool:
    """Mount a tmpfs at ``path`` (root on Linux only); False where the platform does not allow."""
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("mount"):
        return False
    path.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True).returncode == 0


@pytest.fixture
def full_disk(tmp_path):
    where = tmp_path / "full"
    if not _small_mount(where, "size=16k"):
        pytest.skip("cannot mount a small file system here (needs root on Linux)")
    try:
        (where / "filler").write_bytes(b"\0" * 16384)
    except OSError:
        pass
    yield where
    subprocess.run(["umount", str(where)], capture_output=True)


@pytest.fixture
def read_only_dir(tmp_path):
    where = tmp_path / "ro"
    if not _small_mount(where, "size=16k,ro"):
        pytest.skip("cannot mount a read-only file system here (needs root on Linux)")
    yield where
    subprocess.run(["umount", str(where)], capture_output=True)


def test_a_full_disk_names_the_output_and_leaves_nothing(full_disk):
    out = full_disk / "demo.TextGrid"
    code, output = run("align", DEMO_WAV, DEMO_PHONES, "-o", out)
    assert code == 1
    line = one_line_error(output)
    assert str(out) in line and "disk is full" in line and ".tmp" not in line
    assert not out.exists() and not [p for p in full_disk.iterdir() if p.name.endswith(".tmp")]


def test_a_read_only_target_names_the_output(read_only_dir):
    out = read_only_dir / "demo.TextGrid"
    code, output = run("align", DEMO_WAV, DEMO_PHONES, "-o", out)
    assert code == 1
    line = one_line_error(output)
    assert str(out) in line and "read-only" in line and ".tmp" not in line


def _model_with(tmp_path, **changes) -> Path:
    model = tmp_path / "model"
    shutil.copytree(REPO / "models" / "timit-alignment", model)
    params = json.loads((model / "alignment.json").read_text())
    params.update(changes)
    (model / "alignment.json").write_text(json.dumps(params))
    manifest = json.loads((model / "manifest.json").read_text())
    manifest["files"]["alignment.json"] = hashlib.sha256((model / "alignment.json").read_bytes()).hexdigest()
    (model / "manifest.json").write_text(json.dumps(manifest))
    return model


@pytest.mark.parametrize("changes, says", [
    ({"min_frames": 0}, "min_frames = 0 is outside"),
    ({"min_frames": 10 ** 9}, "min_frames = 1000000000 is outside"),
    ({"min_frames": 2.5}, "min_frames must be a whole number"),
    ({"sample_rate": 8000}, "sample_rate 8000"),
    ({"weights": [1, 2, 3]}, "weights must be 7 finite numbers"),
])
def test_every_model_value_is_checked_on_load(tmp_path, changes, says):
    model = _model_with(tmp_path, **changes)
    code, output = run("align", DEMO_WAV, DEMO_PHONES, "--model", model, "-o", tmp_path / "x.TextGrid")
    assert code == 1
    line = one_line_error(output)
    assert str(model) in line and says in line
    assert not (tmp_path / "x.TextGrid").exists()


def test_a_mistyped_transcript_path_is_not_aligned_as_text(tmp_path):
    code, output = run("align", DEMO_WAV, "demo.phnoes", "-o", tmp_path / "x.TextGrid")
    assert code == 1
    assert "demo.phnoes: transcript not found" in one_line_error(output)
    assert not (tmp_path / "x.TextGrid").exists()


def test_an_option_that_would_be_ignored_is_refused(tmp_path):
    code, output = run("vowels", DEMO_WAV, "--pad", "0.1", "-o", tmp_path / "v.csv")
    assert code == 1
    assert "give the tier (--tier NAME) or drop the pad" in one_line_error(output)
    assert not (tmp_path / "v.csv").exists()


def test_a_warning_is_one_line_naming_the_file(tmp_path):
    """The SPHERE repair warning (and every other warning) prints as one line, not as a raw
    Python warning with its source line."""
    from tests.conftest import TIMIT
    from aligner.io.sphere_repair import looks_newline_damaged, missing_bytes, read_sphere_header_file

    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT}")
    damaged = None
    for wav in sorted(TIMIT.rglob("*.wav")):
        header = read_sphere_header_file(wav)
        if header is not None and looks_newline_damaged(header, missing_bytes(header, wav.stat().st_size)):
            damaged = wav
            break
    if damaged is None:
        pytest.skip("no newline-damaged recording in the sample")
    copy = tmp_path / "d.wav"
    shutil.copy(damaged, copy)
    import sys

    done = subprocess.run([sys.executable, "-c", "from aligner.cli import main; main()", "align", str(copy),
                           str(damaged.with_suffix(".phn")), "-o", str(tmp_path / "d.TextGrid")],
                          capture_output=True, text=True)
    code, output = done.returncode, done.stdout + done.stderr
    assert code == 0, output
    lines = [line for line in output.splitlines() if "repaired" in line]
    assert lines and all(line.startswith("warning: ") and str(copy) in line for line in lines)
    assert "RepairedAudioWarning" not in output and "warnings.warn" not in output
