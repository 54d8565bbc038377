"""align-corpus and vowels on a real Dask scheduler with two workers (subprocesses on this machine):
the same outputs and failure lists as the local pool, nothing lost to a killed worker, --resume,
and a one-line error naming the extra when Dask is not installed."""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aligner import api
from aligner.runtime.batch import LOST_MESSAGE

from tests.conftest import one_line_error, run

REPO = Path(__file__).resolve().parents[2]
DEMO_WAV = REPO / "examples" / "demo.wav"
DEMO_PHONES = REPO / "examples" / "demo.phones"
SPEAKERS = ("dr1-fvmh0", "dr2-faem0")  # 20 TIMIT utterances


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """The address of a ``dask scheduler`` with two ``dask worker`` processes (1 process, 1 thread
    each), started from another working directory than the tests'."""
    pytest.importorskip("distributed", reason='Dask is not installed (pip install "aligner[dask]")')
    from benchmarks.speed.bench_dask import running_cluster

    with running_cluster(2, tmp_path_factory.mktemp("dask-cluster")) as address:
        yield address


def copy_speakers(timit_dir: Path, target: Path, speakers=SPEAKERS) -> Path:
    for speaker in speakers:
        shutil.copytree(timit_dir / speaker, target / speaker)
    return target


def files_under(directory: Path) -> dict:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def failure_lines(output: str) -> list:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "failed:" in line)
    return [line for line in lines[start:] if line.startswith(("  ", "error:")) or "failed:" in line]


@pytest.mark.filterwarnings("ignore")
def test_dask_outputs_and_failures_match_the_local_pool(scheduler, timit_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths here; the workers run elsewhere
    copy_speakers(timit_dir, tmp_path / "corpus")
    (tmp_path / "corpus" / "bad.wav").write_text("not audio")
    (tmp_path / "corpus" / "bad.phn").write_text("h#\naa\nh#\n")
    code_local, out_local = run("align-corpus", "corpus", "out-local")
    code_dask, out_dask = run("align-corpus", "corpus", "out-dask", "--scheduler", scheduler)
    assert code_local == code_dask == 1, out_dask
    assert "aligned 20 files" in out_dask
    assert failure_lines(out_dask) == failure_lines(out_local)  # the same list, files named as given
    assert "  corpus/bad.wav: " in out_dask
    local, dask = files_under(tmp_path / "out-local"), files_under(tmp_path / "out-dask")
    assert len(local) == 20 and dask == local  # byte-identical

    wavs = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "corpus" / SPEAKERS[0]).glob("s*.wav"))[:4]
    code_local, out_local = run("vowels", *wavs, "corpus/bad.wav", "-o", "local.csv", "--textgrid-dir", "tg-local")
    code_dask, out_dask = run("vowels", *wavs, "corpus/bad.wav", "-o", "dask.csv", "--textgrid-dir", "tg-dask",
                              "--scheduler", scheduler)
    assert code_local == code_dask == 1, out_dask
    assert failure_lines(out_dask) == failure_lines(out_local)
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert files_under(tmp_path / "tg-dask") == files_under(tmp_path / "tg-local") and len(files_under(tmp_path / "tg-local")) == 4


@pytest.mark.filterwarnings("ignore")
def test_a_worker_killed_mid_run_loses_no_file(scheduler, timit_dir, tmp_path):
    from distributed import Client

    corpus = copy_speakers(timit_dir, tmp_path / "corpus", sorted(p.name for p in timit_dir.iterdir()
                                                                 if p.is_dir())[:4])
    n_files = len(list(corpus.rglob("*.phn")))
    out = tmp_path / "out"
    result = {}
    aligning = threading.Thread(target=lambda: result.update(report=api.align_corpus(corpus, out, scheduler=scheduler)))
    with Client(scheduler, set_as_default=False) as client:
        pids = client.run(os.getpid)
        aligning.start()
        killed = None
        deadline = time.monotonic() + 60
        while killed is None and aligning.is_alive() and time.monotonic() < deadline:
            busy = [w for w, keys in client.processing().items() if keys and w in pids]
            if busy and len(list(out.rglob("*.TextGrid"))) >= 2:  # aligning, the start-up behind us
                killed = pids[busy[0]]
                os.kill(killed, signal.SIGKILL)  # what the out-of-memory killer does
            time.sleep(0.005)
        aligning.join(timeout=120)
    assert killed is not None, "the run ended before a worker could be killed"
    report = result["report"]
    written = {Path(p) for p in report.written}
    failed = {Path(a) for a, _ in report.failed}
    assert len(written) + len(failed) == n_files and not written & failed
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)
    assert all(LOST_MESSAGE in message for _, message in report.failed)  # retried, or listed as lost
    assert len(written) == n_files  # Dask reran the killed worker's files on the other one


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("engine", ["local", "dask"])
def test_resume_keeps_complete_outputs_and_redoes_the_rest(engine, scheduler, timit_dir, tmp_path):
    corpus = copy_speakers(timit_dir, tmp_path / "corpus", SPEAKERS[:1])
    out = tmp_path / "out"
    first = api.align_corpus(corpus, out)
    before = files_under(out)
    grids = sorted(out.rglob("*.TextGrid"))
    grids[0].unlink()  # never written
    grids[1].write_bytes(b"")  # empty
    phn = corpus / grids[2].relative_to(out).with_suffix(".phn")
    earlier = phn.stat().st_mtime - 10
    os.utime(grids[2], (earlier, earlier))  # the transcript was edited after this output was written
    options = {"scheduler": scheduler} if engine == "dask" else {"jobs": 2}
    report = api.align_corpus(corpus, out, resume=True, **options)
    assert sorted(report.written) == grids[:3] and not report.failed
    assert sorted(report.resumed) == grids[3:] and len(first.written) == len(grids)
    assert files_under(out) == before
    code, output = run("align-corpus", corpus, out, "--resume", *(["--scheduler", scheduler] if engine == "dask" else []))
    assert code == 0 and f"kept {len(grids)} complete outputs" in output and "aligned 0 files" in output


def test_vowels_refuses_resume(tmp_path):
    code, output = run("vowels", DEMO_WAV, "-o", tmp_path / "v.csv", "--resume")
    assert code == 1 and "--resume is for align-corpus only" in one_line_error(output)
    assert not (tmp_path / "v.csv").exists()


@pytest.mark.parametrize("options", [["--engine", "dask"], ["--scheduler", "tcp://127.0.0.1:8786"]])
def test_missing_dask_gives_one_line_error_naming_the_extra(options, tmp_path, monkeypatch):
    for name in ("distributed", "dask"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(DEMO_WAV, corpus / "demo.wav")
    shutil.copy(DEMO_PHONES, corpus / "demo.phones")
    code, output = run("align-corpus", corpus, tmp_path / "out", *options)
    assert code == 1 and 'pip install "aligner[dask]"' in one_line_error(output)
    code, output = run("vowels", DEMO_WAV, "-o", tmp_path / "v.csv", *options)
    assert code == 1 and 'pip install "aligner[dask]"' in one_line_error(output)
    assert not (tmp_path / "out").exists() and not (tmp_path / "v.csv").exists()


def test_conflicting_engine_options_give_one_line_errors(tmp_path):
    code, output = run("align-corpus", tmp_path, tmp_path / "out", "--engine", "local", "--scheduler", "tcp://h:1")
    assert code == 1 and "needs the dask engine" in one_line_error(output)
    pytest.importorskip("distributed", reason='Dask is not installed (pip install "aligner[dask]")')
    code, output = run("align-corpus", tmp_path, tmp_path / "out", "--scheduler", "tcp://h:1", "--jobs", "2")
    assert code == 1 and "a running scheduler's workers are its own" in one_line_error(output)


def test_importing_the_api_does_not_import_dask():
    code = ("import sys, aligner.api, aligner.cli; "
            "assert not {'dask', 'distributed'} & set(sys.modules), sorted(m for m in sys.modules if 'dask' in m)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tasks_hold_chunks_and_a_failing_item_is_run_alone(scheduler):
    """Several items per task (in order), and an item that fails takes none of its chunk's
    other items with it: the chunk runs again one item per task."""
    import math

    from aligner.runtime.distributed import MAX_DASK_CHUNK, DaskPool, dask_chunksize

    assert dask_chunksize(40, 2) == 5 and dask_chunksize(3, 2) == 1 and dask_chunksize(10_000, 4) == MAX_DASK_CHUNK
    items = [float(i * i) for i in range(40)]
    items[13] = -1.0  # math.sqrt fails on it
    lost = []
    with DaskPool(scheduler) as pool:
        out = list(pool.map(math.sqrt, items, lambda item, message: lost.append((item, message)) or "lost"))
        chunk_tasks = pool.tasks - 5  # the failing item's chunk of 5 ran again, one item per task
    assert out[:13] == [float(i) for i in range(13)] and out[14:] == [float(i) for i in range(14, 40)]
    assert out[13] == "lost" and lost[0][0] == -1.0 and "ValueError" in lost[0][1]
    assert chunk_tasks < len(items) / 3
