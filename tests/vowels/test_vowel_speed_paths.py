"""The fast paths of ``aligner vowels`` (issue 15) give the bits of the code they replace.

- :func:`aligner.features.vowel_acoustics._acoustics_short` (numba kernels, one FFT call per
  frame length) against the block path :func:`~aligner.features.vowel_acoustics._acoustics_blocks`;
- its pairwise sums against ``np.sum``;
- :func:`aligner.vowels.task._window_arrays` against ``np.cumsum`` and ``_window_means``;
- :func:`aligner.vowels.wav.read_pcm16_mono` against :func:`aligner.io.audio.load_audio`;
- the frame classifier's columns of a short recording (:func:`~aligner.features.vowel_acoustics.
  _classifier_columns_many`: the MFCC tail and the posterior columns in kernels, several
  recordings per call) against
  :func:`~aligner.features.vowel_acoustics.classifier_columns`, one recording at a time;
- :func:`~aligner.features.vowel_acoustics.vowel_acoustics_many` and
  :meth:`~aligner.vowels.model.VowelModel.measure_many` against one call per recording;
- the decoder's cached weight terms (:meth:`aligner.vowels.task.VowelTask._weight_terms`)
  against a fresh task;
- ``aligner.vowels.pipeline._measure_chunk`` (the worker's unit of work) against ``_measure_one`` per file, and
  the pool's chunks (:func:`aligner.runtime.batch._chunk_sizes`, ``WorkerPool.map(chunk_fn=...)``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from aligner import api
from aligner.runtime import blas
from aligner.vowels import pipeline as VP
from aligner.features import vowel_acoustics as VA
from aligner.features import vowel_kernels as VK
from aligner.io.audio import load_audio
from aligner.vowels.task import _window_arrays, _window_means
from aligner.vowels.wav import read_pcm16_mono

TUTORIAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "vowel-tutorial" / "wav"


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.int64 if a.dtype == np.float64 else np.int32)


def _signals():
    rng = np.random.default_rng(7)
    out = []
    for n in (400, 401, 479, 480, 881, 2500, 6000, 16000, 80 * 2047, 80 * 2048 - 1):
        out.append((0.1 * rng.standard_normal(n)).astype(np.float32))
        s = 0.3 * np.sin(np.arange(n) * 2 * np.pi * 140 / 16000) + 0.02 * rng.standard_normal(n)
        s[: n // 3] = 0.0
        s[n // 2: n // 2 + 200] = 1e-12  # within the zero-crossing threshold
        out.append(s.astype(np.float32))
        z = np.zeros(n, np.float32)
        z[n // 2] = 1e-12
        out.append(z)  # silence: floors everywhere
    if TUTORIAL.is_dir():
        out += [load_audio(p) for p in sorted(TUTORIAL.glob("*.wav"))]
    return out


@pytest.mark.parametrize("step", [1, 3])
def test_pairwise_sum_is_numpys(step):
    rng = np.random.default_rng(0)
    for n in list(range(0, 300)) + [383, 384, 385, 400, 640, 767, 768, 769, 1000, 2047, 2048, 4099]:
        a = rng.standard_normal(n * step + 5) * 10.0 ** rng.integers(-5, 5, n * step + 5)
        view = a[2:2 + n * step:step]
        assert VK._pairwise_sum(a, 2, n, step) == view.sum(), n
        assert VK._pairwise_sum(a, 2, n, step) == np.add.reduce(view), n
    assert str(VK._pairwise_sum(np.array([-0.0, -0.0]), 0, 2, 1)) == str(np.array([-0.0, -0.0]).sum())


def test_short_path_equals_block_path(monkeypatch):
    model = api.load_vowel_model()
    for y in _signals():
        monkeypatch.setattr(VA, "FAST_PATH", False)
        slow = VA.vowel_acoustics(y, model.classifier)
        monkeypatch.setattr(VA, "FAST_PATH", True)
        fast = VA.vowel_acoustics(y, model.classifier)
        assert fast.shape == slow.shape
        assert np.array_equal(_bits(fast), _bits(slow)), np.flatnonzero(np.any(fast != slow, axis=0))


def test_short_path_with_blas_already_single_threaded(monkeypatch):
    model = api.load_vowel_model()
    y = _signals()[4]
    base = VA.vowel_acoustics(y, model.classifier)
    monkeypatch.setattr(blas, "ONE_THREAD", True)
    assert np.array_equal(_bits(VA.vowel_acoustics(y, model.classifier)), _bits(base))


def test_window_arrays_equal_cumsum_and_window_means():
    rng = np.random.default_rng(3)
    widths = np.array([2, 5, 10], dtype=np.int64)
    for T in (1, 2, 3, 11, 25, 80):
        X = rng.standard_normal((T, 16))
        X[0, 0] = -0.0
        cum = np.zeros((T + 1, 16))
        np.cumsum(X, axis=0, out=cum[1:])
        edge = np.empty((T + 1, 16, 3))
        for j, w in enumerate(widths):
            b, a = _window_means(cum, int(w))
            edge[:, :, j] = a - b
        before, after = _window_means(cum, 10)
        got = [np.empty((T + 1, 16)), np.empty((T + 1, 48)), np.empty((T + 1, 16)), np.empty((T + 1, 16))]
        _window_arrays(X, widths, 10, *got)
        for g, want in zip(got, (cum, edge.reshape(T + 1, 48), before, after)):
            assert np.array_equal(_bits(g), _bits(want))


def test_pcm16_reader_equals_load_audio(tmp_path):
    rng = np.random.default_rng(5)
    y = (0.2 * rng.standard_normal(6000) + 0.01).astype(np.float32)  # with a DC offset to remove
    plain = tmp_path / "plain.wav"
    sf.write(plain, y, 16000, subtype="PCM_16")
    got = read_pcm16_mono(plain)
    assert got is not None and np.array_equal(_bits(got), _bits(load_audio(plain)))
    for p in sorted(TUTORIAL.glob("*.wav")) if TUTORIAL.is_dir() else []:
        got = read_pcm16_mono(p)
        assert got is not None and np.array_equal(_bits(got), _bits(load_audio(p)))
    # anything else is left to load_audio
    others = {"pcm24.wav": (y, 16000, "PCM_24"), "stereo.wav": (np.stack([y, y], 1), 16000, "PCM_16"),
              "rate.wav": (y, 8000, "PCM_16"), "short.wav": (y[:500], 16000, "PCM_16"),
              "float.wav": (y, 16000, "FLOAT")}
    for name, (data, rate, subtype) in others.items():
        sf.write(tmp_path / name, data, rate, subtype=subtype)
        assert read_pcm16_mono(tmp_path / name) is None, name
    (tmp_path / "junk.wav").write_bytes(b"RIFF\x00\x00")
    assert read_pcm16_mono(tmp_path / "junk.wav") is None
    assert read_pcm16_mono(tmp_path / "missing.wav") is None
    truncated = plain.read_bytes()[:-100]
    (tmp_path / "truncated.wav").write_bytes(truncated)
    assert read_pcm16_mono(tmp_path / "truncated.wav") is None


def test_pcm16_reader_refuses_silence_as_load_audio_does(tmp_path):
    from aligner.errors import AudioError

    p = tmp_path / "silent.wav"
    sf.write(p, np.zeros(4000, np.float32), 16000, subtype="PCM_16")
    with pytest.raises(AudioError) as fast:
        read_pcm16_mono(str(p))
    with pytest.raises(AudioError) as slow:
        load_audio(str(p))
    assert str(fast.value) == str(slow.value)


def _cut_signals():
    """Short recordings (CVC-cut lengths and the edge cases of the classifier's fast path)."""
    rng = np.random.default_rng(11)
    out = [s for s in _signals() if s.shape[0] <= 80 * VA.BLOCK_FRAMES]
    for n in (400, 559, 560, 561, 719, 720, 3000, 7000, 9000):
        t = np.arange(n) / 16000
        out.append((0.3 * np.sin(2 * np.pi * 120 * t) * np.hanning(n) + 0.01 * rng.standard_normal(n))
                   .astype(np.float32))
    return out


def test_classifier_columns_fast_path_equals_classifier_columns(vowel_classifier):
    assert VA._fast_classifier(vowel_classifier, 100)  # both feature maps take the fast path
    signals = _cut_signals()
    items = []
    for y in signals:
        y32 = np.asarray(y, np.float64).astype(np.float32)
        items.append((y32, VA.n_frames(y32.shape[0]), np.zeros((VA.n_frames(y32.shape[0]), VA.N_COLUMNS))))
    for size in (1, 3, len(items)):  # one at a time, small batches, all in one call
        for a in range(0, len(items), size):
            VA._classifier_columns_many(vowel_classifier, items[a:a + size])
        for y32, T, out in items:
            want = VA.classifier_columns(vowel_classifier, y32, T)
            assert np.array_equal(_bits(out[:, 9:14]), _bits(want)), (y32.shape, size)
            out[:] = 0.0


def test_mfcc_tail_kernel_equals_mfcc_features():
    from aligner.features import mfcc as mf

    for y in _cut_signals():
        y32 = np.asarray(y, np.float32)
        Tc = mf.n_frames(y32.shape[0])
        static = mf._static_features(y32, 0, Tc, 1.0, 16000)
        got = np.empty((Tc, 42), np.float32)
        VA._mfcc_normalised(static, mf._STD_FLOOR, got)
        assert np.array_equal(_bits(got), _bits(mf.mfcc_features(y32))), y32.shape


def test_acoustics_many_equals_one_at_a_time():
    model = api.load_vowel_model()
    signals = _cut_signals() + [np.zeros(100, np.float32), np.array([0.1, np.nan] * 300, np.float32)]
    want = []
    for y in signals:
        try:
            want.append(VA.vowel_acoustics(y, model.classifier))
        except Exception as exc:  # noqa: BLE001 - compared below
            want.append(exc)
    got = VA.vowel_acoustics_many(signals, model.classifier)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, Exception):
            assert type(g) is type(w) and str(g) == str(w)
        else:
            assert np.array_equal(_bits(g), _bits(w))
    recordings = [(y, [None], ["x"]) for y in signals]
    one = [model.measure_windows(y, [None], ["x"]) for y in signals]
    many = model.measure_many(recordings)
    assert [[repr(r) for r in rs] for rs in many] == [[repr(r) for r in rs] for rs in one]


def test_decoder_weight_terms_cache_equals_a_fresh_task():
    from aligner.vowels.task import DurationPrior, VowelTask

    from aligner.vowels.task import make_vowel_input

    model = api.load_vowel_model()
    x = model.acoustics(_cut_signals()[-2])
    vx = make_vowel_input(x, model.min_dur, model.max_dur, columns=model.columns, widths=model.widths,
                          outside_width=model.outside_width)

    def fresh(w, prior=model.prior):
        task = VowelTask(n_columns=len(model.columns), n_widths=len(model.widths), prior=prior,
                         center=model.task.center, scale=model.task.scale)
        y, v = task.decode_with_value(vx, w)
        return tuple(y), v

    for w in (model.weights, model.weights * 0.5, model.weights):  # a new weight vector, then the old again
        y, v = model.task.decode_with_value(vx, w)
        assert (tuple(y), v) == fresh(w)
    other = DurationPrior(40.0, 10.0, 3.6, 0.3)
    model.task.prior, kept = other, model.task.prior
    try:
        y, v = model.task.decode_with_value(vx, model.weights)
        assert (tuple(y), v) == fresh(model.weights, other)
    finally:
        model.task.prior = kept
    w = model.weights.copy()
    w[0] = np.nan
    with pytest.raises(ValueError):
        model.task.decode_with_value(vx, w)


def test_measure_chunk_equals_measure_one(tmp_path):
    model = api.load_vowel_model()
    VP._vowel_worker_init(model)
    rng = np.random.default_rng(2)
    jobs = []
    for k, y in enumerate(_cut_signals()[-9:]):
        path = tmp_path / f"cut{k}.wav"
        sf.write(path, y, 16000, subtype="PCM_16")
        jobs.append((str(path), path.name, None, 0.0, None, None))
    sf.write(tmp_path / "silent.wav", np.zeros(4000, np.float32), 16000, subtype="PCM_16")
    sf.write(tmp_path / "noise.wav", (0.1 * rng.standard_normal(6000)).astype(np.float32), 16000)
    jobs[3:3] = [(str(tmp_path / "silent.wav"), "silent.wav", None, 0.0, None, None),
                 (str(tmp_path / "missing.wav"), "missing.wav", None, 0.0, None, None),
                 (str(tmp_path / "noise.wav"), "noise.wav", None, 0.0, tmp_path / "tg" / "noise.TextGrid", None)]
    tg_job = jobs[-1][:4] + (tmp_path / "tg" / "last.TextGrid", None)
    jobs.append(tg_job)
    n = VP.VOWEL_BATCH_MAX_SAMPLES + 16000  # measured as soon as read
    long = 0.3 * np.sin(2 * np.pi * 130 * np.arange(n) / 16000) * (np.arange(n) % 8000 < 3000)
    sf.write(tmp_path / "long.wav", (long + 0.01 * rng.standard_normal(n)).astype(np.float32), 16000)
    jobs.insert(5, (str(tmp_path / "long.wav"), "long.wav", None, 0.0, None, None))
    one = [VP._measure_one(job) for job in jobs]
    chunk = VP._measure_chunk(jobs)
    assert [repr(r) for r in chunk] == [repr(r) for r in one]
    assert any(failures for _, failures, _ in chunk) and any(records for records, _, _ in chunk)


def _square(x):
    return x * x


def _squares(xs):
    return [("chunk", len(xs), x * x) for x in xs]


def test_pool_chunks_cover_the_items_and_use_chunk_fn():
    from aligner.runtime.batch import WorkerPool, _chunk_sizes

    for n, size, jobs in ((0, 4, 2), (1, 32, 2), (671, 32, 2), (100, 1, 2), (50, 8, 3)):
        chunks = _chunk_sizes(n, size, jobs)
        assert [a for a, _ in chunks] == list(np.cumsum([0] + [m for _, m in chunks])[:-1])
        assert sum(m for _, m in chunks) == n and all(1 <= m <= size for _, m in chunks)
    for jobs in (1, 2):
        with WorkerPool(jobs, chunksize=5) as pool:
            out = list(pool.map(_square, range(23), None, _squares))
        assert [x for _, _, x in out] == [x * x for x in range(23)]
        assert all(n <= 5 for _, n, _ in out)
