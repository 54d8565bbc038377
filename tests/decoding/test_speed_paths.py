"""The fast paths of alignment give what the straightforward computations give, bit for bit.

Each fast path (banded phone DP, fused classifier kernels, MFCC pre-emphasis kernel,
boundary distances, feasible starts, refiner change features, per-symbol durations, SPHERE repair
kernels, cached durations, the output-overwrites-input check) is checked against the plain
computation it replaces.
"""

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.decoding import task as T
from aligner.alignment.decoding.long_recordings import first_pass_starts
from aligner.alignment.model import DurationStats
from aligner.alignment.decoding.refinement import CHANGE_OFFSETS, SCORE_OFFSETS, boundary_features
from aligner.features import frame_classifier as FC
from aligner.features import mfcc as M
from aligner.io import sphere_repair as S
from aligner.io.audio import audio_duration

from tests.conftest import needs_timit


# --------------------------------------------------------------------------------------
# the banded phone DP
# --------------------------------------------------------------------------------------

def _input(rng, T_, K, band=None, centre=None):
    P = 6
    scores = rng.normal(size=(T_, P))
    classes = rng.integers(0, P, size=K)
    frames = rng.normal(size=(T_, 4))
    mean = rng.uniform(2.0, 9.0, size=K)
    shortest = math.ceil(T_ / K) + 5  # so that K phones can cover T_ frames
    return T.make_alignment_input(scores, frames, classes, mean, rng.uniform(0.5, 3.0, size=K),
                                  rng.integers(shortest, shortest + 30, size=K), 1,
                                  band=band, band_centre=centre)


def test_band_input_is_make_alignment_input_with_that_band():
    rng = np.random.default_rng(0)
    for _ in range(20):
        T_, K = int(rng.integers(30, 200)), int(rng.integers(3, 15))
        seed = int(rng.integers(1 << 30))
        x = _input(np.random.default_rng(seed), T_, K)
        centre = np.sort(rng.integers(0, T_, size=K))
        centre[0] = 0
        band = int(rng.integers(1, 30))
        banded = T.band_input(x, centre, band)
        try:
            ref = _input(np.random.default_rng(seed), T_, K, band, centre)
        except Exception:
            assert banded is None
            continue
        assert banded is not None
        np.testing.assert_array_equal(banded.start_lo, ref.start_lo)
        np.testing.assert_array_equal(banded.start_hi, ref.start_hi)
        assert banded.cum_agree is x.cum_agree  # the tables are shared, not recomputed


@pytest.mark.parametrize("band", [1, 3, 10])
def test_decode_banded_equals_the_exact_dp(band):
    rng = np.random.default_rng(band)
    task = T.AlignmentTask()
    for _ in range(30):
        T_, K = int(rng.integers(20, 160)), int(rng.integers(2, 14))
        x = _input(rng, T_, K)
        w = np.array([1.0, 0.3, 0.3, 0.3, 0.3, 0.5, -0.2])
        exact = task.decode(x, w)
        # a first pass far off (the doubling must recover) and one close to the answer
        for centre in (np.sort(rng.integers(0, T_, size=K)), exact + rng.integers(-2, 3, size=K)):
            centre[0] = 0
            np.testing.assert_array_equal(T.decode_banded(task, x, w, centre, band), exact)


def test_first_pass_then_band_on_a_clear_utterance():
    # scores that make each phone's class win on its own frames: the band never needs widening
    rng = np.random.default_rng(1)
    lengths = rng.integers(4, 12, size=12)
    truth = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    T_ = int(lengths.sum())
    classes = rng.integers(0, 39, size=12)
    scores = np.full((T_, 39), -5.0, np.float32)
    for k, (s, n) in enumerate(zip(truth, lengths)):
        scores[s:s + n, classes[k]] = 0.0
    centre = first_pass_starts(scores, classes, lengths.astype(float))
    x = T.make_alignment_input(scores, rng.normal(size=(T_, 4)), classes, lengths.astype(float),
                               np.ones(12), 30, 1)
    w = np.array([10.0, 0, 0, 0, 0, 0.1, 0])
    y = T.decode_banded(T.AlignmentTask(), x, w, centre, 3)
    np.testing.assert_array_equal(y, T.AlignmentTask().decode(x, w))
    np.testing.assert_array_equal(y, truth)


def test_feasible_starts_matches_the_python_loops():
    def reference(T_, max_len, min_len, band_lo, band_hi):
        K = len(max_len)
        lo, hi = np.empty(K + 1, np.int64), np.empty(K + 1, np.int64)
        lo[0] = hi[0] = 0
        if band_lo[0] > 0 or band_hi[0] < 0:
            return None, None
        for k in range(1, K + 1):
            lo[k], hi[k] = lo[k - 1] + min_len, hi[k - 1] + max_len[k - 1]
            if k < K:
                lo[k], hi[k] = max(lo[k], band_lo[k]), min(hi[k], band_hi[k])
            if lo[k] > hi[k]:
                return None, None
        if not lo[K] <= T_ <= hi[K]:
            return None, None
        lo[K] = hi[K] = T_
        for k in range(K - 1, -1, -1):
            lo[k], hi[k] = max(lo[k], lo[k + 1] - max_len[k]), min(hi[k], hi[k + 1] - min_len)
            if lo[k] > hi[k]:
                return None, None
        return lo, hi

    rng = np.random.default_rng(2)
    for _ in range(500):
        K, T_ = int(rng.integers(1, 20)), int(rng.integers(1, 200))
        max_len, min_len = rng.integers(1, 40, size=K), int(rng.integers(1, 3))
        centre = np.sort(rng.integers(0, T_, size=K))
        b = int(rng.integers(0, 30))
        for lo_b, hi_b in ((np.full(K, -1), np.full(K, T_)), (centre - b, centre + b)):
            got, want = T._feasible_starts(T_, max_len, min_len, lo_b, hi_b), reference(T_, max_len, min_len, lo_b, hi_b)
            if want[0] is None:
                assert got == (None, None)
            else:
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_reviews_frame_maxima_are_each_rows_largest_score_widened(dtype):
    from aligner.alignment.review.evidence import _frame_max

    scores = np.random.default_rng(5).normal(size=(37, 39)).astype(dtype)
    scores[3, 7] = -np.inf  # an unscored class
    got = _frame_max(scores)
    assert got.dtype == np.float64 and got.shape == (37,)
    want = [max(float(v) for v in row) for row in scores]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_boundary_distances_match_clipped_indexing(dtype):
    rng = np.random.default_rng(3)
    for T_ in (1, 2, 3, 8, 9, 100):
        frames = rng.normal(size=(T_, 42)).astype(dtype)
        t = np.arange(T_)
        want = np.empty((T_, 4))
        for j in range(1, 5):
            d = frames[np.clip(t - j, 0, T_ - 1)] - frames[np.clip(t + j, 0, T_ - 1)]
            want[:, j - 1] = np.sqrt(np.sum(d ** 2, axis=1))
        want *= 0.1
        np.testing.assert_array_equal(T.boundary_distances(frames, 0.1), want)


# --------------------------------------------------------------------------------------
# features
# --------------------------------------------------------------------------------------

def _fitted_classifier(rng):
    clf = FC.FrameClassifier(n_classes=4, context=1, n_components=20, max_iter=5, kmeans_iter=1,
                             calibration_fraction=0.0, n_features=6, pca_dims=5)
    frames = [rng.normal(size=(60, 6)).astype(np.float32) for _ in range(3)]
    return clf.fit(frames, [rng.integers(0, 4, size=60) for _ in range(3)])


def test_classifier_outputs_equal_the_numpy_sequence():
    rng = np.random.default_rng(4)
    clf = _fitted_classifier(rng)
    frames = rng.normal(size=(50, 6)).astype(np.float32)
    P = (FC.stack_context(frames, clf.context) - clf.mean) * clf.inv_std
    g = np.float32(clf.gamma / P.shape[1])
    P = P @ clf.projection
    # the same products as _svm_outputs (same shapes and operand layouts: a BLAS may pick
    # another kernel, and sum in another order, for a transposed view), checked below
    E = P @ np.ascontiguousarray(clf.landmarks.T)
    E *= 2 * g
    E -= g * clf.landmark_sqnorm
    E -= (g * np.einsum("ij,ij->i", P, P))[:, None]
    np.minimum(E, 0, out=E)
    np.exp(E, out=E)
    want = E @ clf.weights + clf.bias
    got = clf._svm_outputs(frames)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    # a new landmark array is picked up, not the cached transpose of the old one
    clf.landmarks = clf.landmarks[::-1].copy()
    np.testing.assert_array_equal(clf._landmarks_by_column(), clf.landmarks.T)


def _static_reference(y, a, b):
    """:func:`aligner.features.mfcc._static_features` without warp, as plain numpy."""
    seg = np.asarray(y[160 * a:160 * (b - 1) + 400], dtype=np.float64)
    n = b - a
    frames = np.lib.stride_tricks.sliding_window_view(seg, 400)[::160][:n]
    log_energy = np.log(np.maximum(np.sum(frames ** 2, axis=1), 1e-10))
    prev = np.empty_like(frames)
    prev[:, 1:] = frames[:, :-1]
    first = frames[0, 0] if a == 0 else float(y[160 * a - 1])
    prev[:, 0] = np.concatenate([[first], seg[160 * np.arange(1, n) - 1]])
    emph = (frames - 0.97 * prev) * np.hamming(400)
    spectrum = np.fft.rfft(emph, n=512, axis=1)
    power = spectrum.real ** 2 + spectrum.imag ** 2  # |X|^2 without np.abs's square root
    np.testing.assert_allclose(power, np.abs(spectrum) ** 2, rtol=1e-13, atol=0)
    mel = power @ M._mel_basis(16000).T
    return np.column_stack([np.log(np.maximum(mel, 1e-10)) @ M._dct_matrix(), log_energy])


def test_standardised_context_equals_stack_then_standardise():
    rng = np.random.default_rng(8)
    clf = _fitted_classifier(rng)
    for T_ in (1, 2, 3, 7, 50):
        frames = (rng.normal(size=(T_, 6)) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)
        want = (FC.stack_context(frames, clf.context) - clf.mean) * clf.inv_std
        got = clf._standardised(frames)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    # float64 frames (not the predict path's dtype) take the numpy sequence
    frames = rng.normal(size=(9, 6))
    np.testing.assert_array_equal(clf._standardised(frames),
                                  (FC.stack_context(frames, clf.context) - clf.mean) * clf.inv_std)


def test_mfcc_static_features_equal_the_numpy_sequence():
    rng = np.random.default_rng(5)
    y = rng.normal(size=16000).astype(np.float32)
    T_ = M.n_frames(len(y))
    for a, b in ((0, T_), (0, 1), (7, 30), (T_ - 1, T_)):
        np.testing.assert_array_equal(M._static_features(y, a, b, 1.0, 16000), _static_reference(y, a, b))
    loud = (rng.normal(size=4000) * 10.0 ** rng.integers(-4, 5, size=4000)).astype(np.float32)
    T_ = M.n_frames(len(loud))
    for a, b in ((0, T_), (3, T_ - 2)):
        np.testing.assert_array_equal(M._static_features(loud, a, b, 1.0, 16000), _static_reference(loud, a, b))


def test_refiner_change_features_match_the_whole_recording_computation():
    rng = np.random.default_rng(6)
    for T_, K in ((1, 1), (2, 2), (40, 6), (300, 30)):
        frames = rng.normal(size=(T_, 42)).astype(np.float32)
        scores = rng.normal(size=(T_, 39)).astype(np.float32)
        y = np.concatenate([[0], np.sort(rng.choice(np.arange(1, T_), K - 1, replace=False))]).astype(np.int64)
        f = boundary_features(scores, frames, rng.integers(0, 39, size=K), y, np.full(K, 5.0), np.ones(K))
        step = np.zeros(T_)
        if T_ > 1:
            step[1:] = np.linalg.norm(np.diff(frames.astype(np.float64), axis=0), axis=1) / np.sqrt(42)
        want = step[np.clip(y[1:, None] + CHANGE_OFFSETS[None, :], 0, T_ - 1)]
        n = len(SCORE_OFFSETS)  # the change columns follow the score differences
        np.testing.assert_array_equal(f[:, n:n + len(CHANGE_OFFSETS)], want)


def _boundary_features_reference(scores, frames, classes, y, dur_mean, dur_std, broad):
    """:func:`boundary_features` as plain numpy (its columns side by side, the module's table)."""
    from aligner.alignment.decoding.refinement import ENERGY_COLUMN, ENERGY_OFFSETS, N_BROAD

    T, K = frames.shape[0], len(y)
    b = y[1:, None]
    t = np.clip(b + SCORE_OFFSETS[None, :], 0, T - 1)
    diff = np.clip(scores[t, classes[:-1, None]].astype(np.float64)
                   - scores[t, classes[1:, None]].astype(np.float64), -10.0, 10.0)
    at = np.clip(b + CHANGE_OFFSETS[None, :], 0, T - 1).ravel()
    change = np.linalg.norm(frames[at].astype(np.float64) - frames[np.maximum(at - 1, 0)].astype(np.float64),
                            axis=1) / np.sqrt(frames.shape[1])
    change[at == 0] = 0.0
    pair = np.zeros((K - 1, N_BROAD * N_BROAD))
    pair[np.arange(K - 1), broad[classes[:-1]] * N_BROAD + broad[classes[1:]]] = 1.0
    energy = frames[np.clip(b + ENERGY_OFFSETS[None, :], 0, T - 1), ENERGY_COLUMN].astype(np.float64)
    lengths = np.diff(np.append(y, T)).astype(np.float64)
    z = (lengths - dur_mean) / dur_std
    log_len = np.log(np.maximum(lengths, 1.0))
    edge = np.zeros((K - 1, 2))
    if K > 1:
        edge[0, 0] = edge[-1, 1] = 1.0
    return np.hstack([diff, change.reshape(K - 1, len(CHANGE_OFFSETS)), pair, energy, np.stack([z[:-1], z[1:]], axis=1),
                      np.stack([log_len[:-1], log_len[1:]], axis=1), edge])


def test_refiner_features_equal_the_numpy_computation():
    rng = np.random.default_rng(11)
    for _ in range(200):
        T_ = int(rng.integers(1, 150))
        C, K, D = int(rng.integers(2, 40)), int(rng.integers(1, min(T_, 25) + 1)), int(rng.choice([14, 42, 5]))
        scores = (rng.normal(size=(T_, C)) * rng.choice([1.0, 30.0])).astype(np.float32)
        frames = rng.normal(size=(T_, max(D, 14))).astype(np.float32)[:, :max(D, 14)]
        classes = rng.integers(0, C, size=K)
        y = np.concatenate([[0], np.sort(rng.choice(np.arange(1, T_), K - 1, replace=False))]).astype(np.int64)
        mean, std, broad = rng.uniform(1, 20, K), rng.uniform(0.5, 5, K), rng.integers(0, 7, C)
        got = boundary_features(scores, frames, classes, y, mean, std, broad)
        want = _boundary_features_reference(scores, frames, classes, y, mean, std, broad)
        assert got.shape == want.shape == (K - 1, 72)
        np.testing.assert_array_equal(got, want)


def test_for_phones_takes_each_symbols_own_statistics():
    d = DurationStats(np.arange(39.0) + 1, np.ones(39), np.full(39, 20, np.int64), np.array(["aa", "sh"], "<U8"),
                      np.array([7.5, 9.5]), np.array([2.0, 3.0]), np.array([30, 40], np.int64))
    classes = np.array([0, 1, 2, 1])
    for _ in range(2):  # the second call reads the cached symbol rows
        mean, std, mx = d.for_phones(classes, ["AA1", "x", "SH", "aa0"])
        np.testing.assert_array_equal(mean, [7.5, 2.0, 9.5, 7.5])
        np.testing.assert_array_equal(std, [2.0, 1.0, 3.0, 2.0])
        np.testing.assert_array_equal(mx, [30, 20, 40, 30])
    np.testing.assert_array_equal(d.for_phones(classes)[0], [1.0, 2.0, 3.0, 2.0])
    assert d.mean[0] == 1.0  # the table itself is untouched


# --------------------------------------------------------------------------------------
# audio
# --------------------------------------------------------------------------------------

def _misread_reference(buf, big):
    def rough(x):
        r = np.abs(np.diff(x)).astype(np.float64)
        c = np.concatenate([[0.0], np.cumsum(r)])
        start = np.arange(len(r))
        end = np.minimum(start + S._WINDOW, len(r))
        return (c[end] - c[start]) / np.maximum(end - start, 1)

    ra, rb = rough(S._samples(buf, 0, big)), rough(S._samples(buf, 1, big))
    n = min(len(ra), len(rb))
    return ra[:n] > 4.0 * rb[:n] + 200.0


def test_misread_flags_match_the_numpy_roughness():
    S.warm_up()
    rng = np.random.default_rng(7)
    for n in list(range(0, 60)) + [500, 3001]:
        for scale in (5, 3000, 30000):
            buf = rng.integers(-scale, scale, n).astype("<i2").tobytes() + bytes(int(rng.integers(0, 2)))
            for big in (False, True):
                np.testing.assert_array_equal(S._misread(buf, big), _misread_reference(buf, big))


def test_one_lost_cr_candidates_match_running_sums():
    rng = np.random.default_rng(8)
    for _ in range(200):
        n = int(rng.integers(2, 400))
        raw = bytearray(rng.integers(-3000, 3000, n).astype("<i2").tobytes())
        for _ in range(int(rng.integers(1, 8))):
            raw[int(rng.integers(0, len(raw)))] = 0x0A
        del raw[int(rng.integers(0, len(raw)))]
        payload = bytes(raw)
        lf = np.flatnonzero(np.frombuffer(payload, np.uint8) == 0x0A)
        for big in (False, True):
            a, b = S._samples(payload, 0, big), S._samples(payload, 1, big)
            if len(lf) == 0 or len(a) < 2 or len(b) < 1:
                continue
            keep, rough, lo, hi = S._one_cr_candidates(np.frombuffer(payload, np.uint8), lf, big)
            for i, p in enumerate(lf.tolist()):
                k = p // 2
                assert keep[i] == (k < len(b) and (k < 1 or k <= len(a)))
                if not keep[i]:
                    continue
                pair = bytes([payload[p - 1], 0x0D]) if p % 2 else bytes([0x0D, payload[p]])
                mid = int(np.frombuffer(pair, ">i2" if big else "<i2")[0])
                # the repaired stream: a[:k], the sample holding the CR, b[k:]
                x = np.concatenate([a[:k], [mid], b[k:]])
                assert rough[i] == np.abs(np.diff(x)).sum()
                assert (lo[i], hi[i]) == (x.min(), x.max())


def test_audio_duration_is_read_again_when_the_file_changes(tmp_path):
    import soundfile as sf

    path = tmp_path / "a.wav"
    sf.write(path, np.zeros(1600, np.float32), 16000)
    assert audio_duration(path) == pytest.approx(0.1)
    time.sleep(0.01)
    sf.write(path, np.zeros(3200, np.float32), 16000)
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert audio_duration(path) == pytest.approx(0.2)


@needs_timit
@pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")
def test_banded_phone_path_equals_the_exact_dp_on_shared_utterances(timit_dir, monkeypatch):
    from aligner import api
    from aligner.alignment import model as model_module
    from aligner.io.audio import load_audio
    from aligner.io.corpus import find_utterances

    m = api.load_model(None)
    utts = find_utterances(timit_dir)[:12]
    audio = [load_audio(u.audio) for u in utts]

    def starts():
        return [api.align_transcript(a, u.transcript, m, kind="phones", sr=16000).tiers for a, u in zip(audio, utts)]

    banded = starts()
    monkeypatch.setattr(model_module, "PHONE_BAND_FRAMES", None)
    assert starts() == banded


# --------------------------------------------------------------------------------------
# output checks
# --------------------------------------------------------------------------------------

def _check_output_resolving_every_input(out, *inputs) -> None:
    """The overwrite check as it was: every existing input resolved and compared."""
    from aligner.errors import AlignerError

    target = Path(out).resolve()
    for item in inputs:
        if isinstance(item, (str, os.PathLike)) and os.path.exists(item) and Path(item).resolve() == target:
            raise AlignerError(f"{out}: the output would overwrite the input {item}; choose another -o")


def test_new_output_check_refuses_what_the_full_check_refuses(tmp_path):
    from aligner import api
    from aligner.errors import AlignerError

    audio, text = tmp_path / "a.wav", tmp_path / "a.phn"
    audio.write_bytes(b"x")
    text.write_text("h#")
    (tmp_path / "link.TextGrid").symlink_to(audio)
    (tmp_path / "sub").mkdir()
    cases = [audio, text, tmp_path / "link.TextGrid", tmp_path / "sub" / ".." / "a.wav",
             tmp_path / "nowhere" / ".." / "a.phn", tmp_path / "new.TextGrid", tmp_path / "sub" / "b.TextGrid"]
    for out in cases:
        outcomes = []
        for check in (_check_output_resolving_every_input, api.check_output_not_input):
            try:
                check(out, audio, text, None)
                outcomes.append(None)
            except AlignerError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1], out
    with pytest.raises(AlignerError):
        api.check_output_not_input(tmp_path / "link.TextGrid", audio, text, None)
