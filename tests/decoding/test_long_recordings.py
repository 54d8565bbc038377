"""Recordings of any length: the first pass, the chunked banded DP, bounded-memory front end."""

from __future__ import annotations

import numpy as np
import pytest

from aligner import api
from aligner.alignment import pipeline
from aligner.alignment.decoding import long_recordings as LR
from aligner.alignment.decoding.refinement import boundary_features
from aligner.errors import AlignmentError
from aligner.features import frame_classifier as FC
from aligner.features import mfcc as M
from aligner.io.transcripts import read_phn
from aligner.phones.sets import get_phone_set

from tests.conftest import TIMIT, needs_timit

pytestmark = pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")


def _utterances(n):
    return sorted(TIMIT.rglob("*.wav"))[:n]


def _joined(n):
    """Samples and TIMIT-61 phones of the first ``n`` shared utterances, one after another."""
    xs, labels = [], []
    for wav in _utterances(n):
        xs.append(pipeline._samples(wav, None, None)[0])
        labels += list(read_phn(wav.with_suffix(".phn"))[2])
    return np.concatenate(xs), labels


def _blocky_scores(starts, classes, T, n_classes=39, seed=0):
    """Classifier-like scores: phone k's class is clearly best over its own frames."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(-3.0, 0.3, (T, n_classes)).astype(np.float32)
    ends = np.append(starts[1:], T)
    for s, e, c in zip(starts, ends, classes):
        scores[s:e, c] = 0.0
    return scores


def test_first_pass_recovers_clear_segments():
    rng = np.random.default_rng(1)
    K = 600
    lengths = rng.integers(3, 15, K)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    classes = np.array([(k * 7) % 39 for k in range(K)])  # neighbours differ
    scores = _blocky_scores(starts, classes, int(lengths.sum()))
    got = LR.first_pass_starts(scores, classes, np.full(K, 8.0), window=64)
    assert np.array_equal(got, starts)


def test_first_pass_longest_lengths_stop_an_attractor():
    # class 5 (phone 1's) outscores every class everywhere, the right one by 0.5: without a
    # longest length the HMM stays in phone 1 for most of the recording; with one it keeps to the phones
    K, length = 60, 10
    starts = np.arange(K) * length
    classes = np.array([5 if k == 1 else 10 + k % 20 for k in range(K)])
    scores = _blocky_scores(starts, classes, K * length, seed=2)
    scores[scores == 0.0] = -0.5
    scores[:, 5] = 0.0
    free = LR.first_pass_starts(scores, classes, np.full(K, 2.0 * length))
    assert free[2] > 20 * length  # the attractor took the frames of many phones
    capped = LR.first_pass_starts(scores, classes, np.full(K, 2.0 * length), max_frames=np.full(K, 2 * length))
    assert np.all(np.diff(np.append(capped, K * length)) <= 2 * length)
    assert np.mean(np.abs(capped - starts) <= 2) > 0.9
    # a limit no path can keep to: the unlimited search's answer
    assert np.array_equal(LR.first_pass_starts(scores, classes, np.full(K, 2.0 * length), max_frames=np.full(K, 3)),
                          free)


def test_first_pass_single_phone_and_too_many_phones():
    scores = np.zeros((50, 39), np.float32)
    assert LR.first_pass_starts(scores, np.array([3]), np.array([10.0])).tolist() == [0]
    with pytest.raises(AlignmentError, match="utt: 60 phones need at least 60 frames"):
        LR.first_pass_starts(scores, np.zeros(60, np.int64), np.full(60, 5.0), name="utt")


def test_chunks_cover_every_phone_once():
    chunks = LR._chunks(1003, 100, 10)
    kept = np.concatenate([np.arange(a, b) for a, b, _, _ in chunks])
    assert np.array_equal(kept, np.arange(1003))
    for a, b, lo, hi in chunks:
        assert lo == max(0, a - 10) and hi == min(1003, b + 10)


@needs_timit
def test_chunked_alignment_matches_the_exact_dp_on_real_speech(monkeypatch):
    """Ten utterances joined (about 30 s), decoded in chunks of 60 phones: the boundaries
    agree with the exact DP's almost everywhere and are as accurate."""
    model = api.load_model()
    samples, labels = _joined(10)
    pset = get_phone_set("timit61")
    frames = M.mfcc_features(samples)
    scores = model.classifier.scores(frames)
    classes = pset.class_indices(labels)
    duration = len(samples) / 16000
    exact = model.phone_starts(frames, scores, classes, labels, duration)
    monkeypatch.setattr(LR, "EXACT_DP_BUDGET_CELLS", 0)
    monkeypatch.setattr(LR, "CHUNK_PHONES", 60)
    monkeypatch.setattr(LR, "CHUNK_OVERLAP", 15)
    # align_long reads its defaults at definition time: pass the small chunks explicitly
    original = LR.align_long
    monkeypatch.setattr(LR, "align_long", lambda *a, **k: original(*a, chunk_phones=60, overlap=15, **k))
    chunked = model.phone_starts(frames, scores, classes, labels, duration)
    assert len(chunked) == len(exact) > 300
    assert np.all(np.diff(chunked) > 0)
    same = np.mean(np.abs(chunked - exact) < 1e-9)
    assert same > 0.97, f"only {same:.1%} of the boundaries equal the exact DP's"


@needs_timit
def test_long_recording_goes_through_the_linear_path(monkeypatch):
    """Past the exact DP's budget, align() takes the first pass + chunks, and the result is a
    valid, accurate segmentation."""
    calls = []
    original = LR.align_long
    monkeypatch.setattr(LR, "align_long", lambda *a, **k: calls.append(1) or original(*a, **k))
    monkeypatch.setattr(LR, "EXACT_DP_BUDGET_CELLS", 1000)
    model = api.load_model()
    wav = _utterances(1)[0]
    starts, _, labels = read_phn(wav.with_suffix(".phn"))
    got = api.align(wav, list(labels), model)
    assert calls == [1]
    err = np.abs(np.array([iv.start_s for iv in got][1:]) - starts[1:] / 16000)
    assert np.mean(err <= 0.02) > 0.8


@needs_timit
def test_transcript_that_cannot_fit_fails_before_features(monkeypatch):
    """A one-phone transcript for a 3 s recording fails at once, before any MFCC."""
    def no_features(*a, **k):
        raise AssertionError("features computed for a transcript that cannot fit")

    monkeypatch.setattr("aligner.alignment.model.mfcc_features", no_features)
    wav = _utterances(1)[0]
    with pytest.raises(AlignmentError, match=r"cover at most .* far too long for the transcript"):
        api.align(wav, "h#")
    with pytest.raises(AlignmentError, match=r"too long for the audio"):
        api.align(wav, " ".join(["aa"] * 2000))


@needs_timit
def test_block_by_block_front_end_is_identical(monkeypatch):
    """MFCC, classifier scores and refiner features computed in blocks equal the one-block values,
    and so do the decoded boundaries.

    The blocks' matrix products have other row counts than the whole recording's, and a BLAS
    library may sum a product's terms in another order for another shape (which kernel it picks
    depends on the CPU: on AVX-512 hosts OpenBLAS's small-matrix kernels do): so the values are
    compared to a tolerance far below anything a decision depends on, and what the user sees,
    the decoded frames, must be the same."""
    samples, labels = _joined(2)
    frames = M.mfcc_features(samples)
    model = api.load_model()
    scores = model.classifier.scores(frames)
    classes = get_phone_set("timit61").class_indices(labels)
    y_whole, t_whole = model.decode_phones(frames, scores, classes, labels, len(samples) / 16000)
    monkeypatch.setattr(M, "MFCC_BLOCK_FRAMES", 97)
    monkeypatch.setattr(FC, "SCORE_BLOCK_FRAMES", 101)
    blocked_frames = M.mfcc_features(samples)
    np.testing.assert_allclose(blocked_frames, frames, rtol=0, atol=1e-5)
    blocked = model.classifier.scores(blocked_frames)
    np.testing.assert_allclose(blocked, scores, rtol=0, atol=2e-3)  # log units; scores span about 25
    y_blocks, t_blocks = model.decode_phones(blocked_frames, blocked, classes, labels, len(samples) / 16000)
    assert np.array_equal(y_blocks, y_whole)
    np.testing.assert_allclose(t_blocks, t_whole, rtol=0, atol=1e-4)  # seconds: 0.1 ms
    y = np.arange(0, len(frames) - 10, 9)
    classes = np.arange(len(y)) % 39
    mu, sd = np.full(len(y), 9.0), np.full(len(y), 3.0)
    f32 = boundary_features(scores, frames, classes, y, mu, sd)
    f64 = boundary_features(scores.astype(np.float64), frames.astype(np.float64), classes, y, mu, sd)
    assert np.array_equal(f32, f64)


@needs_timit
def test_words_of_a_long_recording_are_aligned_in_chunks(monkeypatch):
    """Five utterances joined, aligned from their words in chunks of 6 words: the same word
    starts as the one exact DP, and a valid words tier."""
    import aligner.alignment.decoding.words as W

    wavs = _utterances(5)
    samples = np.concatenate([pipeline._samples(w, None, None)[0] for w in wavs])
    text = " ".join(w.with_suffix(".txt").read_text().split(maxsplit=2)[2] for w in wavs)
    exact = dict(api.align_words(samples, text, sr=16000).tiers)
    calls = []
    original = W._join_chunks
    monkeypatch.setattr(W, "_join_chunks", lambda *a: calls.append(1) or original(*a))
    monkeypatch.setattr(LR, "EXACT_DP_BUDGET_CELLS", 0)
    monkeypatch.setattr(W, "CHUNK_WORDS", 6)
    monkeypatch.setattr(W, "CHUNK_OVERLAP_WORDS", 3)
    chunked = dict(api.align_words(samples, text, sr=16000).tiers)
    assert calls == [1]
    words, phones = chunked["words"], chunked["phones"]
    assert [w.label for w in words] == [w.label for w in exact["words"]]
    assert all(a.end_s <= b.start_s + 1e-12 for a, b in zip(words, words[1:]))
    assert all(p.start_s < p.end_s for p in phones)
    same = np.mean([abs(a.start_s - b.start_s) < 1e-9 for a, b in zip(words, exact["words"])])
    assert same > 0.9, f"only {same:.0%} of the word starts equal the exact DP's"


@needs_timit
def test_vowel_acoustics_block_by_block_are_identical(monkeypatch):
    from aligner.features import vowel_acoustics as VA

    samples, _ = _joined(2)
    model = api.load_vowel_model()
    whole = VA.vowel_acoustics(samples, model.classifier)
    monkeypatch.setattr(VA, "BLOCK_FRAMES", 113)
    np.testing.assert_allclose(VA.vowel_acoustics(samples, model.classifier), whole, rtol=1e-12, atol=1e-12)


@needs_timit
def test_a_window_of_a_long_recording_is_decoded_on_its_own_frames():
    """decode_frames reads only the frames around its window; the result equals the search
    over the whole recording's frames."""
    from aligner.vowels.task import make_vowel_input

    samples, _ = _joined(3)
    model = api.load_vowel_model()
    features = model.acoustics(samples)
    T = features.shape[0]
    for first, last in ((40, 140), (T // 2, T // 2 + 80), (T - 120, T - 1)):
        got = model.decode_frames(features, "w", first, last)
        lo, hi = max(first, model.edge_margin), min(last, T - 1 - model.edge_margin)
        x = make_vowel_input(features, model.min_dur, model.max_dur, (lo, hi), (lo, hi), columns=model.columns,
                             widths=model.widths, outside_width=model.outside_width)
        y, value = model.task.decode_with_value(x, model.weights)
        assert got[0] == (int(y[0]), int(y[1]))
        assert abs(got[1] - value) < 1e-9 * max(1.0, abs(value))


def test_an_hour_that_cannot_fit_its_transcript_is_refused_from_the_header(tmp_path, monkeypatch):
    """A long file with a one-phone (or two-word) transcript fails before its samples are read."""
    import soundfile as sf

    path = tmp_path / "long.wav"
    with sf.SoundFile(path, "w", samplerate=16000, channels=1, subtype="PCM_16") as f:
        block = (np.random.default_rng(0).standard_normal(16000 * 60) * 300).astype(np.int16)
        for _ in range(60):
            f.write(block)

    def no_samples(*a, **k):
        raise AssertionError("samples read for a transcript that cannot fit")

    monkeypatch.setattr(pipeline, "_samples", no_samples)
    with pytest.raises(AlignmentError, match=r"long.wav: 1 phones .* far too long for the transcript"):
        api.align(path, "h#")
    with pytest.raises(AlignmentError, match=r"far too long for the transcript"):
        api.align_words(path, "hello there")


def test_a_small_wav_is_read_without_its_header_and_refused_alike(tmp_path, monkeypatch):
    """A WAV too small to hold STREAM_SECONDS is read at once, its header never consulted; a
    transcript too long for it is still refused in one line naming the file. A larger one is
    checked from its header first."""
    import soundfile as sf

    from aligner.io import audio

    path = tmp_path / "short.wav"
    sf.write(path, (np.random.default_rng(0).standard_normal(8000) * 0.1).astype(np.float32), 16000,
             subtype="PCM_16")
    headers = []
    original = audio.audio_duration
    monkeypatch.setattr(audio, "audio_duration", lambda p: headers.append(p) or original(p))
    with pytest.raises(AlignmentError, match=r"short.wav: 82 phones need at least 82 frames"):
        api.align(path, "h# " + "aa b " * 40 + "h#")
    assert not headers
    monkeypatch.setattr(pipeline, "STREAM_SECONDS", path.stat().st_size / pipeline.WAV_LEAST_BYTES_PER_SECOND / 2)
    with pytest.raises(AlignmentError, match=r"short.wav: 82 phones need at least 82 frames"):
        api.align(path, "h# " + "aa b " * 40 + "h#")
    assert headers

@needs_timit
def test_a_long_recording_is_reviewed_block_by_block(monkeypatch):
    """Confidences computed in blocks of phones (memory bounded) equal the one-pass values."""
    import aligner.alignment.model as AM

    model = api.load_model()
    samples, labels = _joined(4)
    frames = M.mfcc_features(samples)
    scores = model.classifier.scores(frames)
    classes = get_phone_set("timit61").class_indices(labels)
    y, starts = model.decode_phones(frames, scores, classes, labels, len(samples) / 16000)
    whole, match = model.review(frames, scores, classes, labels, y, starts)
    monkeypatch.setattr(AM, "REVIEW_BLOCK_FRAMES", 100)
    monkeypatch.setattr(AM, "REVIEW_BLOCK_PHONES", 40)
    blocks, block_match = model.review(frames, scores, classes, labels, y, starts)
    np.testing.assert_allclose(blocks, whole, atol=1e-9)
    assert 0.0 <= block_match <= 1.0 and block_match <= match + 0.5


def test_a_long_file_is_read_block_by_block_as_load_audio_reads_it(tmp_path):
    """FileSamples (a long recording read on demand) gives load_audio's samples, DC removed,
    channels mixed, and the same MFCC; files it cannot stream (other rates) are left to load_audio."""
    import soundfile as sf

    from aligner.io.audio import file_samples, load_audio

    rng = np.random.default_rng(5)
    stereo = (0.2 * rng.standard_normal((70000, 2)) + 0.05).astype(np.float32)
    path = tmp_path / "s.wav"
    sf.write(path, stereo, 16000, subtype="FLOAT")
    whole, lazy = load_audio(path), file_samples(path)
    assert len(lazy) == len(whole) and lazy.shape == whole.shape
    np.testing.assert_allclose(lazy[10:60000], whole[10:60000], atol=1e-6)
    assert abs(lazy[123] - whole[123]) < 1e-6
    np.testing.assert_allclose(M.mfcc_features(lazy), M.mfcc_features(whole), atol=1e-4)
    sf.write(tmp_path / "r.wav", stereo, 22050, subtype="FLOAT")
    assert file_samples(tmp_path / "r.wav") is None


def test_standardisation_by_blocks_equals_the_one_block_values(monkeypatch):
    rng = np.random.default_rng(6)
    y = rng.standard_normal(16000 * 20).astype(np.float32) * np.sin(np.linspace(0, 90, 16000 * 20))
    whole = M.mfcc_features(y)
    monkeypatch.setattr(M, "NORMALISE_BLOCK_FRAMES", 100)
    monkeypatch.setattr(M, "MFCC_BLOCK_FRAMES", 37)
    np.testing.assert_allclose(M.mfcc_features(y), whole, atol=1e-5)


def test_long_recording_classifier_and_refiner_blocks_are_identical(monkeypatch):
    """Smoothing, log-softmax and the refiner's boundary features in blocks give the values of one block."""
    import aligner.alignment.decoding.refinement as R

    rng = np.random.default_rng(9)
    y16 = (0.1 * rng.standard_normal(16000 * 12)).astype(np.float32) * np.sin(np.linspace(0, 60, 16000 * 12))
    model = api.load_model()
    frames = M.mfcc_features(y16)
    scores = model.classifier.scores(frames)
    K = 150
    starts = np.sort(rng.choice(np.arange(1, len(frames) - 1), K - 1, replace=False))
    y = np.concatenate(([0], starts))
    classes = rng.integers(0, 39, K)
    mu, sd = np.full(K, 8.0), np.full(K, 4.0)
    whole = model.refiner.start_times(scores, frames, classes, y, mu, sd, len(y16) / 16000)
    monkeypatch.setattr(FC, "SMOOTH_BLOCK_FRAMES", 173)
    monkeypatch.setattr(R, "REFINE_BLOCK_PHONES", 17)
    assert np.array_equal(model.classifier.scores(frames), scores)  # row-wise smoothing, no product
    # the refiner's products have other row counts in blocks (BLAS may sum in another order)
    blocks = model.refiner.start_times(scores, frames, classes, y, mu, sd, len(y16) / 16000)
    np.testing.assert_allclose(blocks, whole, rtol=0, atol=1e-9)  # seconds


def _word_chunks(shift_s):
    """A fake ``decode_chunk`` of two-phone words: the first chunk puts word k at k .. k + 0.9 s,
    every later chunk ``shift_s`` seconds later (negative: earlier)."""
    from aligner.io.textgrids import Interval

    def decode(lo, hi):
        offset = 0.0 if lo == 0 else shift_s
        out = []
        for k in range(lo, hi):
            s = k + offset
            out.append((Interval(s, s + 0.9, f"w{k}"), [Interval(s, s + 0.4, "AA1"), Interval(s + 0.4, s + 0.9, "B")],
                        ("AA1", "B"), None))
        return out
    return decode


@pytest.mark.parametrize("shift_s", [-5.0, -0.95, -0.3, 0.05, 0.5])
def test_chunks_that_disagree_are_joined_in_order(shift_s):
    """Chunks of a long recording that disagree (as a first pass misled by noise makes them)
    still give words and phones in order, each lasting at least a frame: never a reversed
    interval (which no TextGrid can hold)."""
    import aligner.alignment.decoding.words as W

    out = W._join_chunks(_word_chunks(shift_s), 30, 10, 4)
    assert [w.label for w in out.words] == [f"w{k}" for k in range(30)] and len(out.phones) == 60
    assert all(p.end_s - p.start_s >= W.FRAME_SECONDS - 1e-9 for p in out.phones)
    assert all(a.end_s <= b.start_s + 1e-9 for a, b in zip(out.phones, out.phones[1:]))
    assert all(w.start_s == out.phones[2 * i].start_s and w.end_s == out.phones[2 * i + 1].end_s
               for i, w in enumerate(out.words))


def test_chunks_that_follow_each_other_are_joined_without_mending():
    """No word starts at the same time in both chunks, and at the nominal cut the later chunk's
    word starts before the earlier chunk's word ends; two words on, it follows it: the join
    is made there, and every interval is a chunk's own."""
    import aligner.alignment.decoding.words as W
    from aligner.io.textgrids import Interval

    def decode(lo, hi):  # later chunks: 0.5 s early up to 2 words past the cut, then 0.05 s late
        out = []
        for k in range(lo, hi):
            s = k + (0.0 if lo == 0 else -0.5 if k < lo + 6 else 0.05)
            out.append((Interval(s, s + 0.9, f"w{k}"), [Interval(s, s + 0.4, "AA1"), Interval(s + 0.4, s + 0.9, "B")],
                        ("AA1", "B"), None))
        return out

    out = W._join_chunks(decode, 30, 10, 4)
    assert all(p.end_s - p.start_s == pytest.approx(0.4) or p.end_s - p.start_s == pytest.approx(0.5)
               for p in out.phones)
    assert [round(w.start_s - k, 2) for k, w in enumerate(out.words)][10:14] == [0.0, 0.0, 0.05, 0.05]


def test_the_first_pass_keeps_as_many_states_as_its_back_pointer_budget_allows():
    frames_per_hour = 360_000
    assert LR.first_pass_window(3000) == LR.FIRST_PASS_MAX_WINDOW  # an utterance: the widest
    hour = LR.first_pass_window(frames_per_hour)
    assert LR.FIRST_PASS_WINDOW < hour < LR.FIRST_PASS_MAX_WINDOW
    assert hour * frames_per_hour // 8 <= LR.FIRST_PASS_BACKPOINTER_BYTES  # within the budget
    assert LR.first_pass_window(3 * frames_per_hour) == LR.FIRST_PASS_WINDOW  # never narrower


@needs_timit
def test_a_long_pause_in_a_file_read_on_demand_is_cut_as_in_memory(tmp_path, monkeypatch):
    """Two utterances with 3 s of room tone between them, aligned from their words from the file
    read on demand (FileSamples): the pause's middle is cut out as for the samples in memory (the
    same word times), and no word takes the pause."""
    import soundfile as sf

    wavs = _utterances(2)
    xs = [pipeline._samples(w, None, None)[0] for w in wavs]
    tone = np.resize(np.concatenate([xs[1][:800], xs[1][:800][::-1]]), 3 * 16000).astype(np.float32)
    samples = np.concatenate([xs[0], tone, xs[1]])
    path = tmp_path / "paused.wav"
    sf.write(path, np.round(samples * 32767).astype(np.int16), 16000, subtype="PCM_16")
    text = " ".join(w.with_suffix(".txt").read_text().split(maxsplit=2)[2] for w in wavs)
    in_memory = dict(api.align_words(pipeline._samples(path, None, None)[0], text, sr=16000).tiers)["words"]
    monkeypatch.setattr(pipeline, "STREAM_SECONDS", 1.0)
    from aligner.io import audio

    opened = []
    original = audio.file_samples
    monkeypatch.setattr(audio, "file_samples", lambda *a, **k: opened.append(1) or original(*a, **k))
    streamed = dict(api.align_words(path, text).tiers)["words"]
    assert opened, "the recording was not read on demand"
    assert [w.label for w in streamed] == [w.label for w in in_memory]
    np.testing.assert_allclose([w.start_s for w in streamed], [w.start_s for w in in_memory], atol=0.011)
    pause_start, pause_end = len(xs[0]) / 16000, (len(xs[0]) + len(tone)) / 16000
    assert not any(w.label and w.start_s < pause_end - 0.5 and w.end_s > pause_start + 0.5 for w in streamed)


@needs_timit
def test_a_cut_of_a_few_percent_is_aligned_from_the_first_scorings_rows(monkeypatch):
    """Sixteen utterances with 1.5 s of room tone in the middle: the cut takes under RESCORE_MIN_FRACTION
    of the frames, so the cut recording's frames and scores are the first scoring's rows (not scored
    again); with the fraction set to 0 the cut is scored again, and the same pause is cut."""
    import aligner.alignment.decoding.silent_edges as S

    xs = [pipeline._samples(w, None, None)[0] for w in _utterances(16)]
    tone = np.resize(np.concatenate([xs[8][:800], xs[8][:800][::-1]]), 24000).astype(np.float32)
    samples = np.concatenate(xs[:8] + [tone] + xs[8:])
    model = api.load_model(None)
    decoder, scores, frames = model.scored(None, samples)
    cut, _, cut_scores, cut_frames = S.inner_silences_cut(model, decoder, scores, samples, frames)
    kept = np.concatenate([np.arange(a, b) for a, b in cut.kept[:-1]] + [np.arange(cut.kept[-1][0], len(frames))])
    assert len(frames) - len(kept) < S.RESCORE_MIN_FRACTION * len(frames)
    np.testing.assert_array_equal(cut_frames, frames[kept])
    np.testing.assert_array_equal(cut_scores, scores[kept])
    monkeypatch.setattr(S, "RESCORE_MIN_FRACTION", 0.0)
    again, _, rescored, refeatured = S.inner_silences_cut(model, decoder, scores, samples, frames)
    assert again.kept == cut.kept and len(refeatured) == len(kept)
    assert not np.array_equal(refeatured, frames[kept])  # standardised over the cut recording
