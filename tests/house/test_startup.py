"""Start-up (issue 15): the command line's fast exit, what a command imports, the vowel front
end without librosa (librosa stays its reference), atomic writes without fsync by default."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO, run

DEMO_WAV, DEMO_PHONES = REPO / "examples" / "demo.wav", REPO / "examples" / "demo.phones"

#: run the command line as the console script does: ``main()``, i.e. AlignerGroup.__call__
PROGRAM = "import sys; from aligner.cli import main; sys.argv[0] = 'aligner'; main()"


def program(*args, env=None, importtime=False) -> subprocess.CompletedProcess:
    cmd = [sys.executable] + (["-X", "importtime"] if importtime else []) + ["-c", PROGRAM] + [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)


def imported(stderr: str) -> set:
    return {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_program_exit_status_and_flushed_output(tmp_path):
    ok = program("--version")
    assert ok.returncode == 0 and "aligner, version" in ok.stdout
    bad = program("align", tmp_path / "missing.wav", "sil aa sil", "-o", tmp_path / "o.TextGrid")
    assert bad.returncode == 1
    assert "error:" in bad.stderr and "missing.wav" in bad.stderr
    usage = program("align")
    assert usage.returncode == 2 and "Usage:" in usage.stderr


def test_exit_status_of_system_exit_codes():
    from aligner.cli import _exit_status

    assert _exit_status(None) == 0 and _exit_status(0) == 0 and _exit_status(3) == 3
    assert _exit_status("a message") == 1


def test_cli_runner_still_returns_normally(tmp_path):
    """Tests (and other callers) use main.main() through CliRunner: no os._exit there."""
    code, output = run("--version")
    assert code == 0 and "version" in output


def test_align_program_output_and_lean_imports(tmp_path):
    out = tmp_path / "demo.TextGrid"
    proc = program("align", DEMO_WAV, DEMO_PHONES, "-o", out, importtime=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.read_text().startswith('File type = "ooTextFile"')
    assert str(out) in proc.stdout  # printed and flushed before the fast exit
    modules = imported(proc.stderr)
    for heavy in ("librosa", "scipy.linalg", "scipy.fft", "scipy.optimize", "sklearn", "tqdm", "cffi.api",
                  "textgrid.textgrid"):
        assert heavy not in modules, heavy


def test_vowels_program_lean_imports(tmp_path):
    import soundfile as sf

    from tests.vowels.test_vowels_cli import SR, synthetic_cvc

    wav = tmp_path / "cvc.wav"
    sf.write(wav, synthetic_cvc(), SR)
    proc = program("vowels", wav, "-o", tmp_path / "v.csv", importtime=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "v.csv").read_text().startswith("file,onset_s")
    modules = imported(proc.stderr)
    for heavy in ("librosa", "scipy.linalg", "scipy.fft", "tqdm"):
        assert heavy not in modules, heavy


def test_lighten_numba_keeps_scipy_linalg_importable():
    code = ("import aligner.cli as c; c._lighten_numba_start_up(); import sys; "
            "assert 'scipy.linalg' not in sys.modules and 'scipy.linalg.cython_blas' in sys.modules; "
            "blas = sys.modules['scipy.linalg.cython_blas']; "
            "import scipy.linalg, numpy as np; from scipy.linalg import cython_blas; assert cython_blas is blas; "
            "assert np.allclose(scipy.linalg.inv(np.eye(2) * 2), np.eye(2) / 2); "
            "from numba import njit; f = njit(lambda a: a @ a); "
            "assert np.allclose(f(np.eye(3)), np.eye(3)); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# -- the vowel front end without librosa: librosa stays the reference ----------------------------

def _signal(n=16000, seed=0):
    rng = np.random.default_rng(seed)
    y = 0.3 * np.sin(np.arange(n) * 2 * np.pi * 140 / 16000) + 0.05 * rng.standard_normal(n)
    y[rng.integers(0, n, 200)] = 0.0
    y[1000:1400] = 1e-12  # within librosa's zero threshold
    return y


def test_vowel_front_end_matches_librosa():
    librosa = pytest.importorskip("librosa")
    import scipy.fft

    from aligner.features import vowel_acoustics as V

    assert V._PITCH_NFFT == scipy.fft.next_fast_len(V.PITCH_WINDOW + V._PITCH_LAGS[1] + 1, real=True)
    assert np.array_equal(V._mel_basis(), librosa.filters.mel(sr=16000, n_fft=512, n_mels=40, fmin=20.0,
                                                                htk=True))
    y = _signal()
    for start in (0, 3):
        seg = y[start:start + 8000]
        assert np.array_equal(V._zero_crossing_rate(seg, 400, 80),
                              librosa.feature.zero_crossing_rate(seg, frame_length=400, hop_length=80,
                                                                 center=False)[0])
    frames = np.lib.stride_tricks.sliding_window_view(y, 400)[::80]
    power = np.abs(np.fft.rfft(frames * np.hanning(400), n=512, axis=1)) ** 2
    assert np.array_equal(V._spectral_flatness(power.T),
                          librosa.feature.spectral_flatness(S=power.T, power=1.0, amin=1e-10)[0])
    mel = V._mel_basis() @ power.T
    db = V._power_to_db(mel)
    assert np.array_equal(db, librosa.power_to_db(mel, amin=1e-10, top_db=None))
    np.testing.assert_allclose(V._dct_basis() @ db, librosa.feature.mfcc(S=db, n_mfcc=5), rtol=1e-10, atol=1e-9)
    # numpy's FFT is scipy's pocketfft: the same bits
    assert np.array_equal(np.fft.rfft(frames, n=960, axis=1), scipy.fft.rfft(frames, n=960, axis=1))


def test_vowel_front_end_does_not_import_librosa():
    code = ("import sys, numpy as np; from aligner.features.vowel_acoustics import vowel_acoustics; "
            "from aligner import api; m = api.load_vowel_model(None); "
            "clf = getattr(m, 'classifier', None) or api.load_model(None).classifier; "
            "vowel_acoustics(np.random.default_rng(0).standard_normal(8000) * 0.1, clf); "
            "print(sorted(x for x in ('librosa', 'scipy.fft', 'scipy.signal') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


# -- atomic writes ---------------------------------------------------------------------------

def test_atomic_write_fsyncs_only_when_durable(tmp_path, monkeypatch):
    from aligner.io import atomic

    calls = []
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: calls.append(fd))
    monkeypatch.delenv("ALIGNER_DURABLE_WRITES", raising=False)
    atomic.atomic_write_text(tmp_path / "a.txt", "one\n")
    assert (tmp_path / "a.txt").read_text() == "one\n" and calls == []
    atomic.atomic_write_text(tmp_path / "a.txt", "two\n", durable=True)
    assert (tmp_path / "a.txt").read_text() == "two\n" and len(calls) == 2  # the file, its directory
    monkeypatch.setenv("ALIGNER_DURABLE_WRITES", "1")
    atomic.atomic_write_bytes(tmp_path / "b.bin", b"x")
    assert len(calls) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin"]  # no temporary left


def test_one_blas_thread_only_for_aligning_commands(monkeypatch):
    from aligner import cli

    assert "align" in cli.ONE_BLAS_THREAD and "vowels" in cli.ONE_BLAS_THREAD
    assert "train" not in cli.ONE_BLAS_THREAD and "train-vowels" not in cli.ONE_BLAS_THREAD
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                             "MKL_NUM_THREADS")}
    code = ("import os, sys; import aligner.cli as c; c._one_blas_thread(); "
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "1"
    code = "import numpy, os; import aligner.cli as c; c._one_blas_thread(); print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "None"  # numpy already loaded its BLAS: left alone
