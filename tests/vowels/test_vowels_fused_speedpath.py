"""The fusion's shared acoustics (issue 27, speed): :func:`aligner.features.vowel_acoustics.
vowel_acoustics_cuts` (each frame of a recording analysed once for all the cuts that hold it)
against :func:`~aligner.features.vowel_acoustics.vowel_acoustics_many` of the cuts one by one,
and the fused rows they give.

Columns 0-8 (the per-cut z-scores of the shared per-frame values) are the same bits; the others
go through matrix products over several cuts' frames at once (the cepstra), whose last bits
BLAS may round differently, so they are compared to 1e-9.
"""

from __future__ import annotations

import copy
import functools
import warnings
from dataclasses import replace

import numpy as np
import pytest

from aligner import api
from aligner.errors import FeatureError
from aligner.features import vowel_acoustics as VA
from aligner.features import vowel_kernels as VK
from aligner.vowels.fused import DEFAULT_FUSION, fuse_vowels, fusion_cut, fusion_features
from tests.conftest import needs_timit


def _recording(n: int, seed: int = 3) -> np.ndarray:
    """Noise, a voiced stretch, near-silence and digital silence, float32."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 16000
    y = 0.02 * rng.standard_normal(n)
    v = slice(n // 5, n // 2)
    y[v] += 0.3 * np.sin(2 * np.pi * 130 * t[v]) * (1 + 0.3 * np.sin(2 * np.pi * 3 * t[v]))
    y[int(0.6 * n): int(0.7 * n)] = 1e-12
    y[int(0.8 * n): int(0.85 * n)] = 0.0
    return y.astype(np.float32)


def _assert_same(got, want, where=""):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, Exception):
            assert type(g) is type(w) and str(g) == str(w), (where, i)
            continue
        assert g.shape == w.shape, (where, i)
        assert np.array_equal(g[:, :9].view(np.int64), np.ascontiguousarray(w[:, :9]).view(np.int64)), (where, i)
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-9, err_msg=f"{where} cut {i}")


def _cuts(n: int) -> list:
    """Overlapping cuts on even and odd frames, at both ends of the recording, nested and
    repeated, plus cuts the shared path leaves to the per-cut one (not on a frame, too short
    for the classifier's two frames, shorter than a window)."""
    cuts = [(0, 4000), (1680, 6400), (3200, 9680), (3200, 9680), (4000, 4800 + 561), (80 * 61, n),
            (80 * 100, 80 * 100 + 2400), (80 * 99, 80 * 99 + 5000), (n - 2001, n), (0, n)]
    cuts += [(8003, 12000), (800, 800 + 559), (800, 800 + 560), (1600, 1600 + 399), (80 * 7, 80 * 7 + 400)]
    return cuts


def test_shared_acoustics_equal_one_cut_at_a_time(monkeypatch, vowel_classifier):
    monkeypatch.setattr(VA, "CUT_SINGLE_FFT", False)  # the sharing alone (single precision: below)
    for n in (16000, 16001, 16079):
        y = _recording(n)
        cuts = _cuts(n)
        want = VA.vowel_acoustics_many([y[a:b] for a, b in cuts], vowel_classifier)
        assert isinstance(want[-2], FeatureError)  # 399 samples
        for group in (VA.CUT_GROUP_FRAMES, 8192, 64, 1):  # the shipped size, one group, several, a cut each
            monkeypatch.setattr(VA, "CUT_GROUP_FRAMES", group)
            _assert_same(VA.vowel_acoustics_cuts(y, cuts, vowel_classifier), want, f"n {n}, group {group}")
        _assert_same(VA.vowel_acoustics_cuts(y.astype(np.float64), cuts, vowel_classifier), want, "float64")


def test_shared_acoustics_fall_back_to_one_cut_at_a_time(monkeypatch):
    model = api.load_vowel_model()
    y = _recording(12000)
    cuts = [(0, 4000), (1680, 6400)]
    bad = y.copy()
    bad[5000] = np.nan  # every cut of the recording goes the per-cut way: the same errors and frames
    _assert_same(VA.vowel_acoustics_cuts(bad, cuts, model.classifier),
                 VA.vowel_acoustics_many([bad[a:b] for a, b in cuts], model.classifier), "nan")
    monkeypatch.setattr(VA, "FAST_PATH", False)
    _assert_same(VA.vowel_acoustics_cuts(y, cuts, model.classifier),
                 VA.vowel_acoustics_many([y[a:b] for a, b in cuts], model.classifier), "no fast path")
    assert VA.vowel_acoustics_cuts(y, [], model.classifier) == []


class _CountingClassifier:
    """A frame classifier that counts its ``log_posteriors`` calls and the frames they scored."""

    def __init__(self, inner):
        self._inner, self.calls, self.frames = inner, 0, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def log_posteriors(self, frames):
        self.calls += 1
        self.frames += frames.shape[0]
        return self._inner.log_posteriors(frames)


def test_recording_posteriors_give_the_recordings_classifier_columns(monkeypatch):
    from aligner.features.mfcc import mfcc_features

    # a cut too long for the cut classifier is analysed alone, in double precision; with the
    # recording's columns it is shared: the same bits only when the shared FFTs are double too
    monkeypatch.setattr(VA, "CUT_SINGLE_FFT", False)
    model = api.load_vowel_model()
    n = 16079
    y = _recording(n)
    cuts = _cuts(n)
    own = VA.vowel_acoustics_cuts(y, cuts, model.classifier)
    whole = VA.classifier_columns(model.classifier, y, VA.n_frames(n))  # (T, 5) of the whole recording
    counting = _CountingClassifier(model.classifier)
    got = VA.vowel_acoustics_cuts(y, cuts, counting, recording_posteriors=True)
    assert counting.calls == 1 and counting.frames == mfcc_features(y).shape[0]  # one call, the recording
    changed = 0
    for (a, b), g, w in zip(cuts, got, own):
        if isinstance(w, Exception):
            assert type(g) is type(w) and str(g) == str(w)
            continue
        assert g.shape == w.shape
        np.testing.assert_array_equal(g[:, :9], w[:, :9])
        np.testing.assert_allclose(g[:, 14:], w[:, 14:], rtol=0, atol=1e-9)  # the cepstra: to rounding
        at = a / 80 + np.arange(g.shape[0])  # the cut's frames in the recording's frames
        want = np.column_stack([np.interp(at, np.arange(whole.shape[0]), whole[:, j]) for j in range(5)])
        np.testing.assert_allclose(g[:, 9:14], want, rtol=0, atol=1e-12)
        changed += not np.allclose(g[:, 9:14], w[:, 9:14], atol=1e-3)
    assert changed > 0  # the cuts' own columns differ: the classifier input is standardised otherwise
    # the caller's log posteriors of the recording: the same columns, no classifier call
    lp = model.classifier.log_posteriors(mfcc_features(y))
    counting = _CountingClassifier(model.classifier)
    again = VA.vowel_acoustics_cuts(y, cuts, counting, log_posteriors=lp)
    assert counting.calls == 0
    for g, w in zip(again, got):
        if not isinstance(w, Exception):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(FeatureError):
        VA.recording_classifier_columns(model.classifier, y, lp[1:])
    bad = y.copy()  # a non-finite recording: each cut its own columns, as without
    bad[5000] = np.nan
    _assert_same(VA.vowel_acoustics_cuts(bad, cuts, model.classifier, recording_posteriors=True),
                 VA.vowel_acoustics_cuts(bad, cuts, model.classifier), "nan")


def test_frame_rows_equal_frame_buffers():
    y = _recording(9000).astype(np.float64)
    a, b = 1680, 7201
    cut = y[a:b]
    T = VA.n_frames(cut.shape[0])
    k = VA._fast_constants()
    want = [np.empty(T), np.empty(T), np.empty(T), np.empty((T, VA.N_FFT)), np.empty((T, VA._PITCH_NFFT))]
    VK._frame_buffers(cut, T, k["hann"], k["pitch_hann"], *want)
    got = [np.empty(T), np.empty(T), np.empty(T), np.empty((T, VA.N_FFT)), np.empty((T, VA._PITCH_NFFT))]
    centres = a + 80 * np.arange(T)
    VK._frame_rows(y, centres, np.full(T, a), np.full(T, b), k["hann"], k["pitch_hann"], *got)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


@pytest.mark.parametrize("chunk", [1, 7, 32, 10_000])
def test_row_values_in_chunks_equal_all_rows_at_once(monkeypatch, chunk):
    """:func:`VA._row_values` (rows through the FFTs ROW_CHUNK at a time, reused buffers) gives
    the bits of :func:`VK._frame_rows` and :func:`VA._frame_values` over all rows at once, for
    frames inside the recording and frames of a cut near its edges (zeros beyond them),
    over noise, voicing, near-silence and digital silence."""
    monkeypatch.setattr(VA, "ROW_CHUNK", chunk)
    y = _recording(24000).astype(np.float64)
    n = y.shape[0]
    k = VA._fast_constants()
    centres = np.concatenate([80 * np.arange(VA.n_frames(n)), 1680 + 80 * np.arange(12), [7200, 14400, 23920]])
    lo = np.concatenate([np.zeros(VA.n_frames(n), np.int64), np.full(12, 1680), [6000, 14000, 0]])
    hi = np.concatenate([np.full(VA.n_frames(n), n), np.full(12, 2640), [7500, n, n]])
    R = centres.shape[0]
    want_rows = [np.empty(R), np.empty(R), np.empty(R), np.empty((R, VA.N_FFT)), np.empty((R, VA._PITCH_NFFT))]
    VK._frame_rows(y, centres, lo, hi, k["hann"], k["pitch_hann"], *want_rows)
    logs, log_flatness, log2_f0, voicing, power = VA._frame_values(want_rows[0], want_rows[3], want_rows[4])
    got = VA._row_values(y, centres, lo, hi)
    want = (logs, log_flatness, log2_f0, voicing, power, want_rows[1], want_rows[2])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.tobytes() == w.tobytes()
    assert np.ptp(voicing) > 0.5 and np.isfinite(log2_f0).all()  # voiced and unvoiced rows both present


def _aligned_utterances(timit_dir):
    """``(stem, samples, vowel spans, the shipped fusion settings)`` of three utterances of the
    sample aligned as shipped, one from its ``.phn`` phones and two from their ``.txt`` words;
    each span ``(onset, offset, runs start, runs end)`` in seconds."""
    from aligner.alignment.pipeline import align_transcript
    from aligner.io.audio import load_audio
    from aligner.vowels.from_alignment import aligned_vowels

    for stem, suffix in (("dr1-fvmh0/sx206.wav", ".phn"), ("dr5-ftlg0/si483.wav", ".txt"),
                         ("dr8-mbcg0/sx327.wav", ".txt")):
        audio = timit_dir / stem
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = align_transcript(audio, audio.with_suffix(suffix))
            samples = load_audio(audio)
        spans = [(v.onset_s, v.offset_s, v.runs_start_s if v.runs_start_s is not None else v.onset_s,
                  v.runs_end_s if v.runs_end_s is not None else v.offset_s)
                 for v in aligned_vowels(result.tiers, result.confidences)]
        yield stem, samples, spans, DEFAULT_FUSION["phones" if suffix == ".phn" else "words"]


@needs_timit
def test_fused_rows_from_shared_acoustics_equal_those_cut_by_cut(timit_dir, monkeypatch):
    """Every aligned vowel of a few utterances (phones and words), fused with the shared
    acoustics (their FFTs in double precision, as each cut's own) and with the acoustics of
    each cut alone: the same boundaries, modes and notes, scores equal to 1e-9."""
    from aligner.features.mfcc import mfcc_features

    monkeypatch.setattr(VA, "CUT_SINGLE_FFT", False)

    model = api.load_vowel_model()
    n_rows = 0
    for stem, samples, spans, shipped in _aligned_utterances(timit_dir):
        # each cut's own classifier columns, nothing relocated: the shared acoustics against each cut alone
        settings = replace(shipped, recording_posteriors=False, relocate=None)
        cuts = [fusion_cut(v, samples.shape[0], settings) for v in spans]
        one_by_one = VA.vowel_acoustics_many([samples[a:b] for a, b, _ in cuts], model.classifier)
        shared = fusion_features(model, samples, spans, settings)
        _assert_same(shared[1], one_by_one, stem)
        want = fuse_vowels(model, samples, spans, settings, stem, features=(cuts, one_by_one))
        got = fuse_vowels(model, samples, spans, settings, stem)
        _assert_same_rows(got, want)
        n_rows += len(got)
        # the shipped settings: the recording's classifier columns in each cut alone give the same rows
        whole = VA.classifier_columns(model.classifier, samples, VA.n_frames(samples.shape[0]))
        cuts, feats = fusion_features(model, samples, spans, shipped)
        alone = VA.vowel_acoustics_many([samples[c[0]:c[1]] for c in cuts], model.classifier)
        for (a, b, *_), f in zip(cuts, alone):
            f[:, 9:14] = whole[a // 80:a // 80 + f.shape[0]]
        _assert_same(feats, alone, f"{stem}, shipped")
        rows = fuse_vowels(model, samples, spans, shipped, stem)
        _assert_same_rows(rows, fuse_vowels(model, samples, spans, shipped, stem, features=(cuts, alone)))
        # the recording's log posteriors from the caller (as the aligner computes them): the same rows
        lp = model.classifier.log_posteriors(mfcc_features(samples))
        _assert_same_rows(rows, fuse_vowels(model, samples, spans, shipped, stem, log_posteriors=lp))
    assert n_rows > 30


def _assert_same_rows(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.onset_s, g.offset_s, g.mode, g.note) == (w.onset_s, w.offset_s, w.mode, w.note)
        assert g.score == pytest.approx(w.score, rel=1e-9, abs=1e-9, nan_ok=True)


@functools.lru_cache(maxsize=1)
def _vowel_model_sharing_the_classifier():
    """The shipped vowel model with a copy of the shipped alignment model's classifier (a vowel
    bundle trained on that alignment model carries such a copy): the case where the fusion can
    take the aligner's scores. Its rows mean nothing; the paths must agree. One per process."""
    from aligner.alignment.pipeline import load_model
    from aligner.features.frame_classifier import FrameClassifier

    copy = FrameClassifier.from_arrays(load_model().classifier.to_arrays())
    return replace(api.load_vowel_model(), classifier=copy)


def _aligned_rows(monkeypatch, audio, transcript, share: bool, vowel_model=None) -> tuple:
    """``aligner vowels``' rows of one aligned file (shipped fusion) and how often the fusion
    called the vowel model's classifier and read the audio: with the aligner's scoring handed
    to the fusion (``share``), or as before it was (the fusion scores and reads for itself).
    ``vowel_model``: None (the shipped one) or a loaded one."""
    from aligner.vowels import pipeline as vp

    vp._vowel_worker_init(vowel_model, None, True, None, True)
    classifier = vp._WORKER_VOWEL_MODEL.classifier
    calls = {"classifier": 0, "read": 0}
    inner_lp, inner_read, inner_align = classifier.log_posteriors, vp.load_audio, vp.align_transcript

    def log_posteriors(frames):
        calls["classifier"] += 1
        return inner_lp(frames)

    def load_audio(*args, **kwargs):
        calls["read"] += 1
        return inner_read(*args, **kwargs)

    def align_transcript(*args, on_scored=None, **kwargs):
        return inner_align(*args, on_scored=on_scored if share else None, **kwargs)

    with monkeypatch.context() as mp:
        mp.setattr(classifier, "log_posteriors", log_posteriors)
        mp.setattr(vp, "load_audio", load_audio)
        mp.setattr(vp, "align_transcript", align_transcript)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records, failures, _ = vp._measure_aligned(str(audio), audio.name, None, None, str(transcript), None,
                                                       False, None, DEFAULT_FUSION)
    assert not failures
    return records, calls


@needs_timit
@pytest.mark.parametrize("sharing", [True, False], ids=["same-classifier", "shipped"])
def test_fusion_reuses_the_aligners_scoring(timit_dir, monkeypatch, sharing):
    """The fusion takes the aligner's samples and, for a recording the aligner decoded with its
    own classifier when the vowel model's is a copy of it, its classifier scores: no second
    read, no second classifier call, and the same rows (CSV) as when it reads and scores the
    recording itself. A recording the aligner sent to its condition expert, or any recording
    when the two classifiers differ (the shipped vowel model keeps the kernel, the alignment
    model has the network), is scored by the fusion itself."""
    from aligner.alignment.pipeline import align_transcript
    from aligner.features.mfcc import mfcc_features
    from aligner.io.audio import load_audio
    from aligner.vowels import pipeline as vp
    from aligner.vowels.fused import same_classifier

    vowel_model = _vowel_model_sharing_the_classifier() if sharing else None
    vp._vowel_worker_init(vowel_model, None, True, None, True)
    aligner_model = vp.worker_model()
    shared = same_classifier(aligner_model.classifier, vp._WORKER_VOWEL_MODEL.classifier)
    assert shared or not sharing
    kinds = {True: 0, False: 0}
    # phones and words; fvmh0/sx206 and maeb0/si990 have a header a sample longer than their data
    for stem, suffix in (("dr1-fvmh0/sx206", ".phn"), ("dr3-falk0/si658", ".txt"), ("dr8-mbcg0/sx327", ".txt"),
                         ("dr4-maeb0/si990", ".txt"), ("dr5-ftlg0/si483", ".txt"), ("dr4-maeb0/si1411", ".phn")):
        audio = timit_dir / f"{stem}.wav"
        transcript = audio.with_suffix(suffix)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept = []
            result = align_transcript(audio, transcript, aligner_model, on_scored=kept.append)
            plain = align_transcript(audio, transcript, aligner_model)
            samples = load_audio(audio)
        assert result == plain  # the alignment (tiers, confidences, transcript check) unchanged
        assert len(kept) == 1
        np.testing.assert_array_equal(kept[0].samples, samples)
        np.testing.assert_array_equal(kept[0].frames, mfcc_features(samples))
        own = kept[0].decoder is aligner_model or (kept[0].own is not None and kept[0].own[1] is not None)  # scored
        kinds[own] += 1
        new, new_calls = _aligned_rows(monkeypatch, audio, transcript, share=True, vowel_model=vowel_model)
        old, old_calls = _aligned_rows(monkeypatch, audio, transcript, share=False, vowel_model=vowel_model)
        assert old_calls["classifier"] >= 1 and old_calls["read"] == 1
        assert new_calls == {"classifier": 0 if own and shared else old_calls["classifier"], "read": 0}, stem
        assert api.vowels_csv(new) == api.vowels_csv(old), stem
        assert any(r.mode == "fused" for r in new)
        for g, w in zip(new, old):
            assert replace(g, score=0.0) == replace(w, score=0.0)
            assert g.score == pytest.approx(w.score, rel=1e-5, abs=1e-6, nan_ok=True)
    assert kinds[True] >= 1  # the hand-off was exercised (the expert: the next test, whatever the gates say)


@needs_timit
def test_a_recording_sent_to_the_condition_expert_is_scored_by_the_fusion(timit_dir, monkeypatch):
    """Whatever the gates decide: a recording the aligner decodes with its condition expert
    (forced here) hands out the expert's scores, and the fusion scores the recording itself."""
    from aligner.vowels import pipeline as vp

    vp._vowel_worker_init(None, None, True, None, True)
    aligner_model = vp.worker_model()
    expert = aligner_model.condition_expert
    if expert is None:
        pytest.skip("the shipped alignment model has no condition expert")
    audio = timit_dir / "dr8-mbcg0/sx327.wav"
    own, _ = _aligned_rows(monkeypatch, audio, audio.with_suffix(".txt"), share=True)
    # this model object only (the shipped one is cached for the other tests): every recording to the expert
    def to_the_expert(frames, samples=None):  # sent before the model scored it: no scores of its own
        frames = aligner_model.frames_of(samples) if frames is None else frames
        return expert, expert.classifier.scores(frames), frames, None

    aligner_model.__dict__["scored_keeping_own"] = to_the_expert
    try:
        new, new_calls = _aligned_rows(monkeypatch, audio, audio.with_suffix(".txt"), share=True)
        old, old_calls = _aligned_rows(monkeypatch, audio, audio.with_suffix(".txt"), share=False)
    finally:
        del aligner_model.__dict__["scored_keeping_own"]
    assert new_calls == {"classifier": old_calls["classifier"], "read": 0} and old_calls["classifier"] >= 1
    assert new == old
    assert [(r.onset_s, r.offset_s) for r in new] != [(r.onset_s, r.offset_s) for r in own]  # the expert's alignment


def test_shared_log_posteriors_only_from_the_same_classifier():
    """The aligner's scores become the vowel model's log posteriors only when its decoder is
    the alignment model itself and that model's classifier equals the vowel model's."""
    from types import SimpleNamespace

    from aligner.alignment.pipeline import ScoredRecording, align_transcript, load_model
    from aligner.features.frame_classifier import FrameClassifier
    from aligner.features.mfcc import mfcc_features
    from aligner.io.audio import load_audio
    from aligner.vowels.fused import same_classifier, shared_log_posteriors

    from tests.conftest import REPO

    aligner_model, vowel_model = load_model(), _vowel_model_sharing_the_classifier()
    audio = REPO / "examples" / "demo.wav"
    kept = []
    result = align_transcript(audio, audio.with_suffix(".lab"), aligner_model, on_scored=kept.append)
    assert result == align_transcript(audio, audio.with_suffix(".lab"), aligner_model)
    assert len(kept) == 1 and kept[0].decoder is aligner_model  # the demo is clean speech
    samples = load_audio(audio)
    lp = vowel_model.classifier.log_posteriors(mfcc_features(samples))
    assert aligner_model.classifier is not vowel_model.classifier  # a copy in the vowel bundle
    assert same_classifier(aligner_model.classifier, vowel_model.classifier)
    shipped = api.load_vowel_model().classifier  # the kernel the shipped vowel model keeps: not shared
    assert not same_classifier(aligner_model.classifier, shipped)
    assert shared_log_posteriors(kept[0], aligner_model, shipped) is None
    got = shared_log_posteriors(kept[0], aligner_model, vowel_model.classifier)
    assert got.dtype == np.float32 and got.shape == lp.shape
    np.testing.assert_allclose(got, lp, rtol=0, atol=1e-5)  # the priors taken off and added back in float32
    assert shared_log_posteriors(None, aligner_model, vowel_model.classifier) is None
    if aligner_model.condition_expert is not None:
        expert = replace(kept[0], decoder=aligner_model.condition_expert)
        assert shared_log_posteriors(expert, aligner_model, vowel_model.classifier) is None
    arrays = vowel_model.classifier.to_arrays()
    arrays["bias"] = arrays["bias"] + np.float32(0.5)
    other = FrameClassifier.from_arrays(arrays)
    assert not same_classifier(aligner_model.classifier, other)
    assert shared_log_posteriors(kept[0], aligner_model, other) is None
    arrays = vowel_model.classifier.to_arrays()
    arrays["prior_division"] = np.array(False)
    plain = FrameClassifier.from_arrays(arrays)  # scores are the log posteriors themselves
    holder = SimpleNamespace(classifier=plain)
    scored = ScoredRecording(samples, kept[0].frames, holder, plain.scores(kept[0].frames))
    np.testing.assert_array_equal(shared_log_posteriors(scored, holder, plain), plain.log_posteriors(kept[0].frames))


def test_scores_shared_when_the_entropy_gate_sent_the_recording_to_the_expert():
    """A recording the model scored before its entropy gate sent it to the expert hands the
    fusion the model's own frames and scores (:attr:`ScoredRecording.own`); one a gate on the
    samples sent there first (never scored by the model) its frames alone, where the expert read
    them, and nothing where the expert's front end changed the recording."""
    from aligner.alignment.pipeline import align_transcript, load_model
    from aligner.features.mfcc import mfcc_features
    from aligner.io.audio import load_audio
    from aligner.vowels.fused import shared_log_posteriors, shared_mfcc_frames

    from tests.conftest import REPO

    aligner_model, vowel_model = load_model(), _vowel_model_sharing_the_classifier()
    if aligner_model.condition_expert is None:
        pytest.skip("the shipped model has no condition expert")
    audio = REPO / "examples" / "demo.wav"
    samples = load_audio(audio)
    unsure = copy.copy(aligner_model)  # every recording too uncertain: the entropy gate decides
    unsure.condition_gate, unsure.condition_range_gate, unsure.condition_band_gate = 1e-9, None, None
    kept = []
    align_transcript(audio, audio.with_suffix(".lab"), unsure, on_scored=kept.append)
    assert kept[0].decoder is unsure.condition_expert and kept[0].own is not None
    frames = mfcc_features(samples)
    np.testing.assert_array_equal(kept[0].own[0], frames)
    np.testing.assert_array_equal(kept[0].own[1], unsure.classifier.scores(frames))
    np.testing.assert_array_equal(shared_mfcc_frames(kept[0], unsure), frames)
    np.testing.assert_allclose(shared_log_posteriors(kept[0], unsure, vowel_model.classifier),
                               vowel_model.classifier.log_posteriors(frames), rtol=0, atol=1e-5)
    quiet = copy.copy(aligner_model)  # every recording below the range gate: sent before scoring
    quiet.condition_range_gate = 200.0
    kept = []
    align_transcript(audio, audio.with_suffix(".lab"), quiet, on_scored=kept.append)
    assert kept[0].decoder is quiet.condition_expert
    assert quiet.condition_expert.cleaned(samples) is None  # the expert reads the model's own frames
    assert kept[0].own[1] is None  # never scored by the model: its frames alone
    assert shared_log_posteriors(kept[0], quiet, vowel_model.classifier) is None
    np.testing.assert_array_equal(shared_mfcc_frames(kept[0], quiet), frames)
    cleaning = copy.copy(quiet)  # an expert whose front end changes the recording: nothing of the model's
    cleaning.condition_expert = copy.copy(quiet.condition_expert)
    cleaning.condition_expert.cleaned = lambda samples, reverberant=None: samples * np.float32(0.5)
    kept = []
    align_transcript(audio, audio.with_suffix(".lab"), cleaning, on_scored=kept.append)
    assert kept[0].decoder is cleaning.condition_expert and kept[0].own is None
    assert shared_mfcc_frames(kept[0], cleaning) is None


def test_shared_mfcc_frames_only_when_they_are_the_samples():
    """The aligner's MFCC frames feed the vowel model's classifier (another classifier) only
    when the alignment model itself decoded the recording and hears it through no front end of
    its own; they are then the samples' :func:`mfcc_features`, and the fused rows are the same."""
    from aligner.alignment.pipeline import align_transcript, load_model
    from aligner.features.mfcc import mfcc_features
    from aligner.io.audio import load_audio
    from aligner.vowels.from_alignment import aligned_vowels
    from aligner.vowels.fused import shared_mfcc_frames

    from tests.conftest import REPO

    aligner_model = load_model()
    audio = REPO / "examples" / "demo.wav"
    kept = []
    result = align_transcript(audio, audio.with_suffix(".lab"), aligner_model, on_scored=kept.append)
    samples = load_audio(audio)
    frames = shared_mfcc_frames(kept[0], aligner_model)
    np.testing.assert_array_equal(frames, mfcc_features(samples))
    assert shared_mfcc_frames(None, aligner_model) is None
    if aligner_model.condition_expert is not None:
        assert shared_mfcc_frames(replace(kept[0], decoder=aligner_model.condition_expert), aligner_model) is None
    banded = copy.copy(aligner_model)
    banded.front_band_hz = (300.0, 3400.0)
    assert shared_mfcc_frames(replace(kept[0], decoder=banded), banded) is None
    assert shared_mfcc_frames(replace(kept[0], frames=frames[1:]), aligner_model) is None
    model = api.load_vowel_model()
    spans = [(v.onset_s, v.offset_s, v.runs_start_s if v.runs_start_s is not None else v.onset_s,
              v.runs_end_s if v.runs_end_s is not None else v.offset_s)
             for v in aligned_vowels(result.tiers, result.confidences)]
    settings = DEFAULT_FUSION["phones"]
    _assert_same_rows(fuse_vowels(model, samples, spans, settings, mfcc_frames=frames),
                      fuse_vowels(model, samples, spans, settings))


def test_row_values_in_single_precision_stay_near_double():
    """:func:`_row_values` with ``single`` (FFTs in float32): the same time-domain sums, spectra
    and levels within float32 rounding, the voicing and pitch of nearly every frame the same."""
    y = _recording(16000).astype(np.float64)
    T = VA.n_frames(y.shape[0])
    centres = 80 * np.arange(T, dtype=np.int64)
    lo, hi = np.zeros(T, np.int64), np.full(T, y.shape[0], np.int64)
    want = VA._row_values(y, centres, lo, hi)
    got = VA._row_values(y, centres, lo, hi, single=True)
    logs, log_flatness, log2_f0, voicing, power, r0, r1 = got
    assert r0.tobytes() == want[5].tobytes() and r1.tobytes() == want[6].tobytes()  # time domain: untouched
    assert logs[:, 0].tobytes() == want[0][:, 0].tobytes()  # the short-term energy: no FFT
    np.testing.assert_allclose(logs, want[0], rtol=0, atol=1e-4)
    loud = want[0][:, 1] > want[0][:, 1].max() - 6  # within 60 dB of the loudest frame
    np.testing.assert_allclose(log_flatness[loud], want[1][loud], rtol=0, atol=1e-3)
    np.testing.assert_allclose(voicing, want[3], rtol=0, atol=1e-4)
    assert np.mean(log2_f0 == want[2]) > 0.97


@needs_timit
def test_single_precision_ffts_move_no_fused_boundary(timit_dir, monkeypatch):
    """Fused rows of a few utterances with the cuts' FFTs in single precision
    (:data:`~aligner.features.vowel_acoustics.CUT_SINGLE_FFT`) and in double: the same
    boundaries, modes and notes, scores to 1e-6."""

    model = api.load_vowel_model()
    n_rows = 0
    for stem, samples, spans, settings in _aligned_utterances(timit_dir):
        rows = {}
        for single in (False, True):
            monkeypatch.setattr(VA, "CUT_SINGLE_FFT", single)
            rows[single] = fuse_vowels(model, samples, spans, settings, stem)
        assert len(rows[True]) == len(rows[False])
        for g, w in zip(rows[True], rows[False]):
            assert (g.onset_s, g.offset_s, g.mode, g.note) == (w.onset_s, w.offset_s, w.mode, w.note)
            assert g.score == pytest.approx(w.score, rel=1e-6, abs=1e-6, nan_ok=True)
        n_rows += len(rows[True])
    assert n_rows > 30
