"""Adapting a model to a corpus (:mod:`aligner.alignment.adaptation.rounds`, issue 24)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.adaptation import rounds as ad
from aligner.alignment.model import DurationStats
from aligner.features.frame_classifier import FrameClassifier
from tests.conftest import cut_classifier, speaker_recordings

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"
MODEL = Path(__file__).resolve().parents[2] / "models" / "timit-alignment"


def _speaker_frames(**classifier_params):
    """A small classifier (5 classes) of ``classifier_params`` trained on synthetic frames, and
    held-out frames of a 'new speaker' whose features are shifted, with their true labels."""
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 0.5, (5, 42))

    def make(n, shift):
        y = rng.integers(0, 5, n)
        return (centres[y] + shift + rng.normal(0, 1.5, (n, 42))).astype(np.float32), y

    frames, labels = [], []
    for _ in range(8):
        f, y = make(300, 0.0)
        frames.append(f)
        labels.append(y)
    clf = FrameClassifier(n_classes=5, context=0, max_train_frames=0, **classifier_params).fit(frames, labels)
    shift = rng.normal(0, 1.0, 42)
    new_f, new_y = make(1500, shift)
    return clf, new_f, new_y


@pytest.fixture(scope="module")
def small():
    """:func:`_speaker_frames` with a kernel classifier of 60 landmarks."""
    return _speaker_frames(n_components=60, pca_dims=16, max_iter=40, kmeans_iter=2, calibration_fraction=0.0)


def _stats(clf, frames, labels, weights=None):
    stats = ad.OutputLayerStats(clf.landmarks.shape[0], clf.n_classes)
    E = clf.kernel_values(frames)
    stats.add(E, labels, np.ones(len(labels)) if weights is None else weights, clf.weights, clf.bias)
    return stats


def test_kernel_values_reproduce_the_classifier(small):
    clf, frames, _ = small
    E = clf.kernel_values(frames)
    assert E.shape == (len(frames), clf.landmarks.shape[0])
    np.testing.assert_allclose(E @ clf.weights + clf.bias, clf.decision_function(frames), atol=1e-3)


def test_whitening_recovers_the_svm_weights(small):
    clf, _, _ = small
    M, S = ad.whitening(clf)
    np.testing.assert_allclose(S @ M, np.eye(M.shape[1]), atol=1e-6)
    np.testing.assert_allclose(M @ (S @ clf.weights), clf.weights, atol=1e-4 * np.abs(clf.weights).max())


def test_refit_on_correct_labels_lowers_the_frame_error(small):
    clf, frames, labels = small
    before = np.mean(clf.predict(frames) != labels)
    assert before > 0.3  # the shift makes the new speaker hard
    stats = _stats(clf, frames[:1000], labels[:1000])
    W, b = ad.refit_output_layer(stats, ad.whitening(clf), clf.weights, clf.bias, clf.weights, clf.bias, prior=10.0)
    adapted = ad.with_output_layer(clf, W, b)
    # on the adapted frames and on frames of the same speaker not used
    assert np.mean(adapted.predict(frames[:1000]) != labels[:1000]) < before - 0.1
    held_out_before = np.mean(clf.predict(frames[1000:]) != labels[1000:])
    assert np.mean(adapted.predict(frames[1000:]) != labels[1000:]) < held_out_before
    # the base classifier is untouched
    assert adapted is not clf and not np.array_equal(adapted.weights, clf.weights)


def test_a_strong_prior_returns_the_base_weights(small):
    clf, frames, labels = small
    stats = _stats(clf, frames, labels)
    W, b = ad.refit_output_layer(stats, ad.whitening(clf), clf.weights, clf.bias, clf.weights, clf.bias,
                                 prior=1e12, bias_prior=1e12)
    np.testing.assert_allclose(W, clf.weights, atol=1e-4 * np.abs(clf.weights).max())
    np.testing.assert_allclose(b, clf.bias, atol=1e-4)
    # ... and pulls toward the base, not toward the current layer
    W2, _ = ad.refit_output_layer(stats, ad.whitening(clf), clf.weights * 0, clf.bias, clf.weights, clf.bias,
                                  prior=1e12, bias_prior=1e12)
    np.testing.assert_allclose(W2, clf.weights, atol=1e-4 * np.abs(clf.weights).max())


def test_zero_weight_frames_do_not_count(small):
    clf, frames, labels = small
    wrong = (labels + 1) % 5
    a = np.zeros(len(labels))
    a[:500] = 1.0
    mixed = _stats(clf, frames, np.where(a > 0, labels, wrong), a)
    clean = _stats(clf, frames[:500], labels[:500])
    np.testing.assert_allclose(mixed.H, clean.H, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mixed.G, clean.G, rtol=1e-5, atol=1e-4)
    assert mixed.frames == clean.frames == 500


def test_frame_weights_drop_only_near_doubtful_boundaries():
    y = np.array([0, 10, 20, 30])
    conf = np.array([1.0, 0.9, 0.2, 0.8])
    w = ad.frame_weights(40, y, conf, ad.AdaptSettings(confidence="drop", guard_frames=2, confidence_threshold=0.5))
    assert np.all(w[18:22] == 0) and w[17] == 1 and w[22] == 1
    assert np.all(w[8:12] == 1) and np.all(w[28:32] == 1)
    w = ad.frame_weights(40, y, conf, ad.AdaptSettings(confidence="weight", guard_frames=1))
    assert w[19] == pytest.approx(0.2) and w[10] == pytest.approx(0.9) and w[5] == 1
    assert np.all(ad.frame_weights(40, y, None, ad.AdaptSettings()) == 1)
    w = ad.frame_weights(40, y, None, ad.AdaptSettings(boundary_guard=1))
    assert list(np.flatnonzero(w == 0)) == [9, 10, 19, 20, 29, 30]


def test_duration_prior():
    base = DurationStats.fit([[5, 7]] + [[10]] * 38, lengths_by_symbol={"aa": (0, [5, 7] * 6)})
    lengths = [[20, 20, 20, 20]] + [[]] * 38
    strong = ad.adapt_durations(base, lengths, {"aa": [20] * 4}, prior=1e9)
    np.testing.assert_allclose(strong.mean, base.mean)
    np.testing.assert_allclose(strong.symbol_mean, base.symbol_mean)
    none = ad.adapt_durations(base, lengths, {"aa": [20] * 4}, prior=0.0)
    assert none.mean[0] == pytest.approx(20.0) and none.std[0] == pytest.approx(1.0)  # floor 1 frame
    assert none.symbol_mean[0] == pytest.approx(20.0)
    assert none.mean[1] == base.mean[1]  # a class the corpus lacks keeps the base's
    half = ad.adapt_durations(base, lengths, {}, prior=4.0)
    assert half.mean[0] == pytest.approx((4 * 6.0 + 80) / 8)
    np.testing.assert_array_equal(half.max_frames, base.max_frames)
    # "scaled": the same means, the base's deviations times the change of the mean
    scaled = ad.adapt_durations(base, lengths, {"aa": [20] * 4}, prior=4.0, spread="scaled")
    np.testing.assert_allclose(scaled.mean, half.mean)
    assert scaled.std[0] == pytest.approx(base.std[0] * scaled.mean[0] / base.mean[0])
    # lengths all at the mean (a decoder's pull) narrow the estimated deviation; scaled keeps it
    spread = DurationStats.fit([[4, 8, 12]] + [[10]] * 38)
    at_mean = [[8] * 40] + [[]] * 38
    assert ad.adapt_durations(spread, at_mean, {}, prior=4.0).std[0] < 0.5 * spread.std[0]
    assert ad.adapt_durations(spread, at_mean, {}, prior=4.0, spread="scaled").std[0] == pytest.approx(spread.std[0])
    assert scaled.symbol_std[0] == pytest.approx(base.symbol_std[0] * scaled.symbol_mean[0] / base.symbol_mean[0])
    assert scaled.std[1] == base.std[1]
    with pytest.raises(ValueError, match="spread"):
        ad.adapt_durations(base, lengths, {}, prior=4.0, spread="wide")
    with pytest.raises(ValueError, match="durations_spread"):
        ad.AdaptSettings(durations_spread="wide").check()


def test_bad_input_errors():
    rec = ad.Recording(np.zeros(1600, np.float32), ["h#", "aa", "h#"], "s", "r")
    with pytest.raises(ValueError, match="no recordings"):
        ad.check_recordings([])
    with pytest.raises(ValueError, match="kind"):
        ad.check_recordings([ad.Recording(rec.samples, rec.transcript, kind="syllables")])
    with pytest.raises(ValueError, match="NaN"):
        ad.check_recordings([ad.Recording(np.full(1600, np.nan, np.float32), rec.transcript, name="nan")])
    with pytest.raises(ValueError, match="1-d"):
        ad.check_recordings([ad.Recording(np.zeros((2, 800), np.float32), rec.transcript)])
    with pytest.raises(ValueError, match="list of symbols"):
        ad.check_recordings([ad.Recording(rec.samples, "h# aa h#")])
    for bad in (dict(confidence="maybe"), dict(classifier_prior=0.0), dict(confidence_threshold=2.0),
                dict(durations_prior=-1.0), dict(decoded_weight=-1.0), dict(boundary_guard=-1)):
        with pytest.raises(ValueError):
            ad.AdaptSettings(**bad).check()
    with pytest.raises(ValueError, match="rounds"):
        ad.adapt_model(None, [rec], rounds=0)


@pytest.fixture(scope="module")
def timit():
    if not DATA.is_dir():
        pytest.skip(f"shared TIMIT sample not found at {DATA} (it is never part of the project)")
    if not (MODEL / "manifest.json").is_file() and not any(MODEL.glob("*")):
        pytest.skip(f"shipped model not found at {MODEL}")
    from aligner.alignment.model import AlignmentModel

    recs = speaker_recordings(DATA, 2)
    model = AlignmentModel.load(MODEL)
    # the shipped classifier cut to its first 300 units or landmarks: the whitening and the refit
    # take a fraction of a second instead of seconds
    small = dataclasses.replace(model, classifier=cut_classifier(model.classifier))
    return small, recs, model


def test_adapt_on_timit_keeps_the_base_and_reports(timit):
    model, recs, _ = timit
    mean0, w0 = model.durations.mean.copy(), model.classifier.weights.copy()
    seen = []
    adapted, reports = ad.adapt_model(model, recs, rounds=2, settings=ad.AdaptSettings(
        classifier_prior=None, durations_prior=10.0, skip_flagged=False), on_round=lambda r, m, rep: seen.append(r))
    assert seen == [1, 2] and [r.round for r in reports] == [1, 2]
    np.testing.assert_array_equal(model.durations.mean, mean0)  # the base is not modified
    assert not np.array_equal(adapted.durations.mean, mean0)
    np.testing.assert_array_equal(adapted.classifier.weights, w0)
    r1, r2 = reports
    assert r1.files_used + len(r1.files_left_out) == len(recs)
    assert r1.frames > 100 and r1.boundaries == 0 and r2.boundaries > 0
    assert r1.mean_confidence is None or 0 < r1.mean_confidence <= 1
    assert adapted.training["adapted"]["rounds"] == 2


def test_classifier_refit_on_timit(timit):
    from aligner.phones.sets import get_phone_set

    model, recs, _ = timit
    w0, b0 = model.classifier.weights.copy(), model.classifier.bias.copy()
    adapted, (report,) = ad.adapt_model(model, recs, rounds=1, settings=ad.AdaptSettings(
        classifier_prior=3.0, refined_labels=True, boundary_guard=1, skip_flagged=False))
    np.testing.assert_array_equal(model.classifier.weights, w0)  # the base is not modified
    np.testing.assert_array_equal(model.classifier.bias, b0)
    assert not np.array_equal(adapted.classifier.weights, w0)
    assert report.dropped_frames > 0  # the guard left frames out
    out = adapted.align(recs[0].samples, recs[0].transcript, get_phone_set("timit61"))
    assert [iv.label for iv in out] == list(recs[0].transcript)


def test_nothing_to_adapt_keeps_the_classifier(timit):
    model, recs, _ = timit
    adapted, _ = ad.adapt_model(model, recs[:1], rounds=1,
                                settings=ad.AdaptSettings(classifier_prior=None, durations_prior=None,
                                                          skip_flagged=False))
    assert adapted is not model
    np.testing.assert_array_equal(adapted.classifier.weights, model.classifier.weights)


def test_references_replace_the_decoded_labels(timit):
    from aligner.io.transcripts import read_phn

    model, recs, _ = timit
    folder = sorted(p for p in DATA.iterdir() if p.is_dir())[0]
    starts, ends, labels = read_phn(sorted(folder.glob("*.phn"))[0])
    rec = recs[0]
    ref = list(zip(np.asarray(starts) / 16000, np.asarray(ends) / 16000, labels))
    with_ref = ad.Recording(rec.samples, rec.transcript, rec.speaker, rec.name, "phones", "timit61", ref)
    frames = ad.mfcc_features(rec.samples)
    dec = ad._decode_for_round(model, with_ref, frames, None, ad.AdaptSettings(reference_weight=3.0))
    assert dec.reference and np.all(dec.weights == 3.0)
    assert len(dec.labels) == len(frames)
    bad = ad.Recording(rec.samples, rec.transcript, name="bad", reference=ref[::-1])
    with pytest.raises(ValueError, match="in order"):
        ad._decode_for_round(model, bad, frames, None, ad.AdaptSettings())


def test_flagged_transcripts_are_left_out(timit):
    _, recs, full = timit
    assert full.utterance_check is not None
    swapped = ad.Recording(recs[0].samples, recs[1].transcript, name="swapped", phone_set="timit61")
    _, (report,) = ad.adapt_model(full, [swapped, recs[0]], rounds=1, settings=ad.AdaptSettings(
        classifier_prior=None, durations_prior=10.0))
    assert report.files_used == 1 and list(report.files_left_out) == ["swapped"]
    _, (report,) = ad.adapt_model(full, [swapped, recs[0]], rounds=1, settings=ad.AdaptSettings(
        classifier_prior=None, durations_prior=10.0, skip_flagged=False))
    assert report.files_used == 2 or "not aligned" in report.files_left_out.get("swapped", "")


def test_refit_survives_a_nearly_singular_system(small):
    clf, frames, labels = small
    stats = _stats(clf, frames[:20], labels[:20], np.full(20, 1e6))  # few frames, huge weights
    W, b = ad.refit_output_layer(stats, ad.whitening(clf), clf.weights, clf.bias, clf.weights, clf.bias,
                                 prior=1e-9, bias_prior=1e-9)
    assert np.all(np.isfinite(W)) and np.all(np.isfinite(b))


def test_refiner_refit_follows_the_references_and_a_strong_prior_keeps_the_base():
    """The refiner's output layer refit on boundaries whose annotated times lie 4 ms later than
    the base refiner predicts moves its predictions toward them; a huge prior keeps the base."""
    from aligner import api
    from aligner.alignment.decoding.refinement import N_REFINER_FEATURES

    base = api.load_model().refiner
    before = (base.output_weights.copy(), base.output_bias)
    rng = np.random.default_rng(3)
    X = base.mean + base.scale * rng.normal(0, 1, (400, N_REFINER_FEATURES))
    want = np.clip(base.shifts_ms(X) + 4.0, -base.target_clip_ms, base.target_clip_ms)
    refit = ad.refit_refiner_output(base, [X[:200], X[200:]], [want[:200], want[200:]], prior=1.0)
    moved = refit.shifts_ms(X) - base.shifts_ms(X)
    assert 2.5 < float(np.mean(moved)) < 4.5
    assert np.abs(base.shifts_ms(X) + moved - want).mean() < np.abs(base.shifts_ms(X) - want).mean()
    kept = ad.refit_refiner_output(base, [X], [want], prior=1e12)
    np.testing.assert_allclose(kept.shifts_ms(X), base.shifts_ms(X), atol=1e-6)
    assert np.array_equal(base.output_weights, before[0]) and base.output_bias == before[1]  # base unchanged
    with pytest.raises(ValueError, match="refiner_prior"):
        ad.AdaptSettings(refiner_prior=0.0).check()


@pytest.fixture(scope="module")
def small_network():
    """:func:`_speaker_frames` with a network classifier (16 ReLU units, softmax output layer)."""
    return _speaker_frames(pca_dims=0, hidden=16, alpha=1.0, epochs=40)


def test_a_network_output_layer_is_refit_on_its_softmax_loss(small_network):
    clf, frames, labels = small_network
    stats = ad.OutputLayerStats.for_classifier(clf)
    assert stats.loss == "softmax" and stats.H.shape == (16, 16)
    M, S = ad.whitening(clf)
    np.testing.assert_array_equal(M, np.eye(16))  # the units are not whitened
    stats.add(clf.kernel_values(frames[:1000]), labels[:1000], np.ones(1000), clf.weights, clf.bias)

    def log_loss(W, b, f, y):
        z = clf.kernel_values(f) @ W + b
        z = z - z.max(axis=1, keepdims=True)
        return -np.mean(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(axis=1)))

    W, b = clf.weights, clf.bias
    losses = [log_loss(W, b, frames[:1000], labels[:1000])]
    for _ in range(3):  # the bound's steps never raise the penalised loss on these frames
        stats = ad.OutputLayerStats.for_classifier(clf)
        stats.add(clf.kernel_values(frames[:1000]), labels[:1000], np.ones(1000), W, b)
        W, b = ad.refit_output_layer(stats, (M, S), W, b, clf.weights, clf.bias, prior=1.0)
        losses.append(log_loss(W, b, frames[:1000], labels[:1000]))
    assert losses[-1] < losses[0] - 0.05 and all(b_ <= a_ + 1e-6 for a_, b_ in zip(losses, losses[1:]))
    assert log_loss(W, b, frames[1000:], labels[1000:]) < log_loss(clf.weights, clf.bias, frames[1000:], labels[1000:])
    # a strong prior keeps the base layer
    W0, b0 = ad.refit_output_layer(stats, (M, S), W, b, clf.weights, clf.bias, prior=1e12, bias_prior=1e12)
    np.testing.assert_allclose(W0, clf.weights, atol=1e-4 * np.abs(clf.weights).max())
    with pytest.raises(ValueError, match="merge"):
        ad.OutputLayerStats(16, 5).merge(stats)


def test_phones_lengthened_before_a_pause_stay_out_of_the_duration_statistics():
    """From words, a speech phone before silence or at the recording's end is decoded with
    phrase-final statistics, so its length is left out of the within-utterance ones; silences
    and every other phone count."""
    sil = 0
    keep = ad._within_utterance(np.array([sil, 5, 6, sil, 7, 8]), sil)
    assert keep.tolist() == [True, True, False, True, True, False]
    assert ad._within_utterance(np.array([5, sil]), sil).tolist() == [False, True]
    assert ad._within_utterance(np.array([5]), sil).tolist() == [False]
    assert ad._within_utterance(np.array([], np.int64), sil).tolist() == []


def test_a_recording_with_a_long_pause_is_decoded_with_its_middle_cut(timit):
    """A words recording with 2.5 s of its own room tone before its middle word: the adaptation's
    decode cuts the pause's middle out of its frames and scores (as aligning does) and maps the
    frames and times back; no word's phones take the pause, and the pause's silence spans the cut."""
    from aligner.alignment.decoding.silent_edges import INNER_KEEP_FRAMES, pauses_cut_rows

    model, _, full = timit
    rec = speaker_recordings(DATA, 1, "words")[0]
    samples = rec.samples
    at = len(samples) // 2
    tone = np.resize(np.concatenate([samples[:800], samples[:800][::-1]]), 40000).astype(np.float32)
    paused = dataclasses.replace(rec, samples=np.concatenate([samples[:at], tone, samples[at:]]))
    frames = ad.frames_of(paused, 1.0, full)
    scores = full.classifier.scores(frames)
    rows, cut = pauses_cut_rows(full, scores, len(paused.samples))
    assert len(frames) - len(rows) >= 250 - 2 * INNER_KEEP_FRAMES  # the added pause, less what is kept
    classes, symbols, y, starts, _, _, compare_s = ad.decode_recording(
        full, paused, frames, scores, ad._prons(paused, None, full))
    assert y[0] == 0 and np.all(np.diff(y) > 0) and y[-1] < len(frames)
    removed = np.setdiff1d(np.arange(len(frames)), rows)
    k = np.searchsorted(y, removed[0], side="right") - 1  # the phone holding the cut frames
    assert classes[k] == full.inventory.silence_index
    assert k + 1 == len(y) or y[k + 1] > removed[-1]  # the whole cut inside that silence
    assert removed[0] - y[k] >= INNER_KEEP_FRAMES - 5


def test_long_silent_edges_are_cut_before_adapting(timit):
    """A words and a phones recording with 3 s of their own room tone at both ends are cut to their
    speech before adapting (as aligning them cuts), the file's range kept in ``source``; a
    recording with reference times and an unpadded one stay whole; the cut recording is used."""
    from aligner.alignment.adaptation.edges import edges_cut_recordings
    from aligner.alignment.decoding.silent_edges import MARGIN_FRAMES
    from aligner.frames import FRAME_SHIFT
    from aligner.io.transcripts import read_phn

    _, recs, full = timit
    words = speaker_recordings(DATA, 1, "words")[0]

    def padded(rec, seconds=3.0):
        s = rec.samples
        tone = np.resize(np.concatenate([s[:800], s[:800][::-1]]), int(seconds * 16000)).astype(np.float32)
        return dataclasses.replace(rec, samples=np.concatenate([tone, s, tone]),
                                   source=("file.wav", 100, 100 + len(s) + 2 * len(tone)))

    pw, pp = padded(words), padded(recs[0])
    referenced = dataclasses.replace(pp, reference=[(0.0, pp.duration_s, "h#")])
    prons = [ad._prons(pw, None, full), None, None, None]
    out, n_cut = edges_cut_recordings(full, [pw, pp, referenced, recs[0]], prons)
    assert n_cut == 2 and out[2] is referenced and out[3] is recs[0]
    folder = sorted(p for p in DATA.iterdir() if p.is_dir())[0]
    for before, after, original in ((pw, out[0], words), (pp, out[1], recs[0])):
        cut_s = (len(before.samples) - len(after.samples)) / 16000
        assert 4.0 < cut_s < 7.0  # most of the 6 s added (and some of the recording's own edge silence)
        first = after.source[1] - before.source[1]
        assert first % FRAME_SHIFT == 0 and first >= 40000
        np.testing.assert_array_equal(after.samples, before.samples[first:first + len(after.samples)])
        assert after.source[2] - after.source[1] == len(after.samples)
        starts, ends, _ = read_phn(folder / f"{original.name}.phn")
        speech = (48000 + starts[1], 48000 + ends[-2])  # the first to the last phone between the h#s
        assert first <= speech[0] - MARGIN_FRAMES * FRAME_SHIFT // 2
        assert first + len(after.samples) >= speech[1] + MARGIN_FRAMES * FRAME_SHIFT // 2
    _, reports = ad.adapt_model(full, [out[0]], rounds=1, settings=ad.AdaptSettings(
        classifier_prior=None, durations_prior=100.0))
    assert reports[0].files_used == 1


def test_a_recording_the_edges_cut_cannot_read_is_left_whole(timit):
    """A phones recording with a symbol no phone set reads, and a words one whose words cannot be looked
    up: the edges' cut leaves them whole (the rounds leave them out and say why), and cuts the others."""
    from aligner.alignment.adaptation.edges import edges_cut_recordings

    _, recs, full = timit
    s = recs[0].samples
    tone = np.resize(np.concatenate([s[:800], s[:800][::-1]]), 48000).astype(np.float32)
    padded = dataclasses.replace(recs[0], samples=np.concatenate([tone, s, tone]))
    bad_phones = dataclasses.replace(padded, transcript=["h#", "zzz", "h#"])
    bad_words = ad.Recording(padded.samples, "", name="no words", kind="words")
    out, n_cut = edges_cut_recordings(full, [bad_phones, bad_words, padded])
    assert n_cut == 1 and out[0] is bad_phones and out[1] is bad_words and len(out[2].samples) < len(padded.samples)


def test_a_views_pause_is_decoded_as_two_silences_while_adapting(timit):
    """A view (``pauses_unpaced``) adapting on a phones recording with a pause decodes the pause as
    two silences, as aligning it does (:func:`aligner.alignment.pipeline.align_ipa_phones`); the
    English model decodes its transcript as written."""
    _, recs, full = timit
    rec = dataclasses.replace(recs[0], transcript=["h#", "ah", "pau", "b", "h#"])
    symbols, classes = ad._phone_sequence(rec, full)
    assert "pau" in symbols and symbols.count("pau") == 1
    view = dataclasses.replace(full, pauses_unpaced=True)
    doubled, classes2 = ad._phone_sequence(rec, view)
    assert doubled.count("pau") == 2 and len(classes2) == len(classes) + 1
    i = doubled.index("pau")
    assert doubled[i + 1] == "pau" and classes2[i] == classes2[i + 1] == full.inventory.silence_index
