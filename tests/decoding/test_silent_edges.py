"""Long silent edges found from a classifier's silence posteriors (aligner.alignment.decoding.silent_edges)."""

from __future__ import annotations

import numpy as np
import pytest

from aligner.alignment.decoding.silent_edges import (_frame_levels_db, cut_frames, energy_speech_span, narrowed,
                                                     silence_posteriors, speech_span)
from aligner.frames import n_frames


def test_silence_posteriors_are_the_softmax_of_the_log_posteriors():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(50, 6)) * 4
    log_post = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    want = np.exp(log_post[:, 5])
    np.testing.assert_allclose(silence_posteriors(log_post, None, 5), want, rtol=1e-12)
    log_prior = np.log(rng.dirichlet(np.ones(6)))
    # scaled likelihoods (the prior subtracted) give the same posteriors back
    np.testing.assert_allclose(silence_posteriors(log_post - log_prior, log_prior, 5), want, rtol=1e-12)


def test_the_speech_span_runs_from_the_first_to_the_last_run_of_speech():
    p = np.ones(100)
    p[40:60] = 0.1
    assert speech_span(p) == (40, 60)
    p[10] = p[11] = 0.2  # a blip of two frames is not speech
    p[80:83] = 0.3  # three frames are, with runs of 3
    assert speech_span(p, min_run=3) == (40, 83)
    assert speech_span(p) == (40, 60)  # not with the default runs of 5
    assert speech_span(p, min_run=1) == (10, 83)
    assert speech_span(np.ones(30)) is None
    assert speech_span(np.full(2, 0.1), min_run=3) is None  # shorter than a run
    assert speech_span(np.full(3, 0.1), min_run=3) == (0, 3)


def test_a_recording_is_cut_only_where_enough_silence_goes():
    assert cut_frames((400, 500), 900) == (370, 530)
    assert cut_frames((40, 860), 900) is None  # 10 frames would go at either end
    assert cut_frames((40, 500), 900) == (10, 530)  # enough at the end: both ends cut
    assert cut_frames((10, 890), 900, margin=5, min_cut=5) == (5, 895)
    assert cut_frames((0, 900), 900) is None
    assert cut_frames(None, 900) is None


def test_the_speech_span_by_frame_energy():
    rng = np.random.default_rng(1)
    quiet = lambda n: 0.001 * rng.standard_normal(n)  # noqa: E731
    loud = 0.3 * rng.standard_normal(16000)
    y = np.concatenate([quiet(32000), loud, quiet(48000)]).astype(np.float32)
    first, end = energy_speech_span(y)
    assert abs(first - 200) <= 3 and abs(end - 300) <= 3  # frames of 25 ms every 10 ms
    click = y.copy()
    click[8000:8080] = 0.5  # 5 ms: one frame louder, no run of speech
    assert energy_speech_span(click) == (first, end)
    noisy = (y + 0.1 * rng.standard_normal(len(y))).astype(np.float32)  # 10 dB below the speech
    assert energy_speech_span(noisy) is None  # the loud level lies 10 dB above the quiet one: not enough
    hissy = (y + 0.05 * rng.standard_normal(len(y))).astype(np.float32)  # 15 dB below: enough
    first, end = energy_speech_span(hissy)
    assert abs(first - 200) <= 3 and abs(end - 300) <= 3
    assert energy_speech_span(y[:300]) is None  # shorter than a frame


def test_frame_levels_are_the_frames_sums_of_squares_in_db():
    y = (0.1 * np.random.default_rng(2).standard_normal(16000 + 37)).astype(np.float32)
    y[4000:4400] = 0.0  # a silent frame: the floor, not -inf
    T = n_frames(len(y))
    got = np.empty(T)
    _frame_levels_db(y, got)
    want = [10 * np.log10(max(np.sum(y[160 * t:160 * t + 400].astype(np.float64) ** 2), 1e-12)) for t in range(T)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert got[25] == -120.0


def test_a_cut_keeps_what_both_the_classifier_and_the_energies_keep():
    assert narrowed((10, 900), (300, 600)) == (300, 600)  # the energies found quiet the classifier heard as speech
    assert narrowed((350, 900), (300, 600)) == (350, 600)
    assert narrowed(None, (300, 600)) == (300, 600)
    assert narrowed((10, 900), None) == (10, 900)
    assert narrowed(None, None) is None
    assert narrowed((10, 200), (300, 600)) == (10, 200)  # nothing in common: the classifier's
    assert narrowed((10, 340), (300, 600)) == (10, 340)  # 40 frames in common, fewer than two margins


def test_long_pauses_inside_lose_their_middles_and_times_map_back():
    from aligner.alignment.decoding.silent_edges import INNER_KEEP_FRAMES, InnerCut, inner_silences

    p = np.zeros(400)
    p[:50] = 1.0  # a silent edge: the edges' cut's business, not this one's
    p[100:130] = 1.0  # a short pause: kept whole
    p[200:320] = 1.0  # a long pause: its middle goes
    k = INNER_KEEP_FRAMES
    assert inner_silences(p) == [(200 + k, 320 - k)]
    p[200:200 + 2 * k + 19] = 1.0
    p[200 + 2 * k + 19:320] = 0.0
    assert inner_silences(p) == []  # one frame short of a cut
    samples = np.arange(400 * 160 + 240, dtype=np.float32)
    cut = InnerCut([(0, 230), (290, 400)], len(samples))
    first, later, at_cut = cut.original_times([1.0, 2.5, 2.3])
    assert first == 1.0 and later == pytest.approx(3.1)
    assert at_cut == pytest.approx(2.9)  # a time at the cut: the range after it
    assert cut.original_times([2.299])[0] == pytest.approx(2.299)  # just before it: the range before
    joined = cut.samples(samples)
    assert len(joined) == len(samples) - 60 * 160 and joined[230 * 160] == samples[290 * 160]
    assert cut.duration_s == pytest.approx(len(joined) / 16000)


def test_a_cut_of_samples_read_on_demand_reads_what_the_array_cut_holds():
    """InnerCut of a recording read by slices (a SampleReader) reads, slice by slice, the samples the
    cut of the same samples in memory holds; samples_between reads a part the same way."""
    from aligner.alignment.decoding.silent_edges import InnerCut
    from aligner.io.audio import SampleReader, SplicedSamples, samples_between

    class Reader(SampleReader):
        def __init__(self, x):
            self.x, self.n = x, len(x)

        def _read(self, start, stop):
            return self.x[start:stop].copy()

    samples = np.random.default_rng(3).standard_normal(400 * 160 + 240).astype(np.float32)
    cut = InnerCut([(0, 230), (290, 330), (370, 400)], len(samples))
    joined, lazy = cut.samples(samples), cut.samples(Reader(samples))
    assert isinstance(lazy, SplicedSamples) and len(lazy) == len(joined)
    for a, b in [(0, len(joined)), (230 * 160 - 7, 230 * 160 + 5), (0, 0), (100, 30000), (len(joined) - 3, len(joined))]:
        np.testing.assert_array_equal(lazy[a:b], joined[a:b])
    assert lazy[230 * 160] == samples[290 * 160] and lazy[-1] == samples[-1]
    part = samples_between(Reader(samples), 1000, 10 ** 9)
    np.testing.assert_array_equal(part[:], samples[1000:])
    assert samples_between(samples, 5, 9).base is samples  # an array: a view, nothing read
    with pytest.raises(ValueError, match="do not lie in order"):
        SplicedSamples(samples, [(0, len(samples) + 1)])


def test_frame_levels_of_samples_read_on_demand_equal_the_arrays(monkeypatch):
    """The quiet frames of a recording read by slices, block by block, are those of its array."""
    import aligner.alignment.decoding.silent_edges as S

    rng = np.random.default_rng(4)
    samples = (0.001 * rng.standard_normal(16000 * 6)).astype(np.float32)
    samples[16000:40000] += np.sin(np.arange(24000) * 0.3).astype(np.float32) * 0.3
    samples[60000:80000] += np.sin(np.arange(20000) * 0.2).astype(np.float32) * 0.3
    monkeypatch.setattr(S, "LEVEL_BLOCK_FRAMES", 77)  # blocks that end anywhere
    whole = S.quiet_frames(samples, n_frames(len(samples)))
    lazy = S.quiet_frames(_Reader(samples), n_frames(len(samples)))
    assert whole.sum() > 100 and np.array_equal(whole, lazy)


class _Reader:
    """A recording read by slices only (len and slicing), as FileSamples is read."""

    def __init__(self, x):
        self.x = x

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index].copy()
