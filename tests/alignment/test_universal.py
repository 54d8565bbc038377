"""The universal model: trained from IPA TextGrids of several languages (a tiny synthetic corpus
here), it scores phones it never heard by their features, round-trips through its bundle, and is
the default of every command given IPA phones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("panphon")

from aligner.errors import AlignerError, ModelError, TranscriptError  # noqa: E402
from aligner.io.textgrids import Interval, write_textgrid  # noqa: E402

from tests.conftest import one_line_error, run  # noqa: E402

#: each synthetic phone: the frequencies (Hz) of its tones; silence is quiet noise
_TONES = {"a": (700, 1200), "i": (300, 2300), "u": (300, 800), "s": (5000, 6500), "m": (250, 500), "t": (3500, 4500),
          "aː": (700, 1200)}
_LANGUAGES = {"xaa": ["a", "s", "m", "i"], "xbb": ["i", "t", "a", "aː"], "xcc": ["m", "a", "s", "t"]}


def _synthetic_corpus(root: Path, per_language: int = 6, seed: int = 0) -> Path:
    """Three 'languages', each a folder of 16 kHz recordings of silence, 3-4 phones of its own
    and silence, with a TextGrid (UTF-16 for one language, as Praat writes IPA) of their times."""
    import soundfile as sf

    rng = np.random.default_rng(seed)
    for lang, inventory in _LANGUAGES.items():
        (root / lang).mkdir(parents=True, exist_ok=True)
        for k in range(per_language):
            phones = list(rng.choice(inventory, size=int(rng.integers(3, 5))))
            lengths = [int(rng.integers(15, 30)) * 160 for _ in phones]
            pieces, intervals, t = [0.01 * rng.standard_normal(3200)], [(0.0, 0.2, "")], 3200
            for p, n in zip(phones, lengths):
                x = np.arange(n) / 16000
                f1, f2 = _TONES[p]
                pieces.append(0.3 * np.sin(2 * np.pi * f1 * x) + 0.2 * np.sin(2 * np.pi * f2 * x)
                              + 0.02 * rng.standard_normal(n))
                intervals.append((t / 16000, (t + n) / 16000, p))
                t += n
            pieces.append(0.01 * rng.standard_normal(3200))
            intervals.append((t / 16000, (t + 3200) / 16000, ""))
            audio = np.concatenate(pieces).astype(np.float32)
            sf.write(root / lang / f"{lang}-{k}.wav", audio, 16000)
            grid = root / lang / f"{lang}-{k}.TextGrid"
            write_textgrid(grid, [("words", [(0.2, t / 16000, "w")]),
                                  ("phone", [Interval(*iv) for iv in intervals])], len(audio) / 16000)
            if lang == "xbb":
                grid.write_bytes("\ufeff".encode("utf-16-be") + grid.read_text(encoding="utf-8").encode("utf-16-be"))
    return root


def _edit_bundle_json(directory: Path, file_name: str, /, **changes) -> dict:
    """Set ``changes`` in a saved bundle's JSON file ``file_name`` (``universal.json``,
    ``alignment.json``) and update its checksum in the manifest, so that only the values' own
    checks can refuse the bundle; returns the file's values as they were."""
    import hashlib

    path = directory / file_name
    params = json.loads(path.read_text(encoding="utf-8"))
    before = dict(params)
    params.update(changes)
    path.write_text(json.dumps(params), encoding="utf-8")
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][file_name] = hashlib.sha256(path.read_bytes()).hexdigest()
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return before


@pytest.fixture(scope="module")
def universal(tmp_path_factory):
    """``(corpus, model directory)``: a tiny universal model trained on the synthetic corpus."""
    from aligner.alignment.universal_training import UniversalSettings, read_universal_corpus, train_universal_model

    root = tmp_path_factory.mktemp("universal")
    corpus = _synthetic_corpus(root / "corpus")
    data = read_universal_corpus(corpus, warps=())
    settings = UniversalSettings(hidden=32, epochs=6, max_train_frames=20000, n_folds=3, n_val_groups=1,
                                 trainer_params={"epochs": 2}, alignment_background=None)  # views keep the background
    model = train_universal_model(data, settings)
    model.save(root / "model")
    return corpus, root / "model"


def test_by_default_a_trained_model_aligns_without_the_background(tmp_path):
    """The weights train on views with the commonest training phones; the saved model's views score
    the transcript's phones and silence alone (``alignment_background=0``)."""
    from aligner.alignment.universal import UniversalModel
    from aligner.alignment.universal_training import UniversalSettings, read_universal_corpus, train_universal_model

    data = read_universal_corpus(_synthetic_corpus(tmp_path / "corpus"), warps=())
    settings = UniversalSettings(hidden=32, epochs=3, max_train_frames=20000, n_folds=3, n_val_groups=1,
                                 trainer_params={"epochs": 1})
    assert settings.background > 0 and settings.alignment_background == 0
    model = train_universal_model(data, settings)
    assert model.background == ()
    # its scorer: the final network and the 3 out-of-fold ones averaged, side by side
    assert settings.ensemble and model.network.hidden == 32 * (settings.n_folds + 1)
    model.save(tmp_path / "model")
    view = UniversalModel.load(tmp_path / "model").view(["sil", "a", "ʃ", "sil"])
    assert list(view.inventory.classes) == ["a", "ʃ", "sil"]


def test_the_scorer_scores_a_phone_it_never_heard_by_its_features(universal):
    from aligner.alignment.universal import UniversalModel

    _, path = universal
    model = UniversalModel.load(path)
    assert set(model.durations.classes) == {"a", "aː", "i", "m", "s", "t", "sil"}
    view = model.view(["sil", "a", "ʃ", "tʼ", "sil"])  # ʃ and tʼ were never heard
    assert view.inventory.classes[-1] == "sil" and {"ʃ", "tʼ"} <= set(view.inventory.classes)
    assert dict(zip(view.inventory.classes, view.inventory.broad))["ʃ"] == "fricative"
    frames = np.random.default_rng(0).standard_normal((50, 42)).astype(np.float32)
    scores = view.classifier.scores(frames)
    # the transcript's phones, then the commonest training phones (the background), silence last
    assert list(view.inventory.classes[:3]) == ["a", "tʼ", "ʃ"]
    assert set(view.inventory.classes[3:-1]) <= set(model.background) and len(model.background) == 6
    assert scores.shape == (50, len(view.inventory.classes)) and np.all(np.isfinite(scores))
    # an unseen phone's duration comes from its features, a seen one's from its tokens
    mean = dict(zip(view.inventory.classes, view.durations.mean))
    assert mean["ʃ"] > 1 and mean["tʼ"] > 1
    # the same phones in another spelling are the same class: t' is tʼ
    assert model.view(["a", "t'"]).phone_set.class_of("t'") == "tʼ"


def test_a_view_from_the_class_table_is_the_view_worked_out_afresh(universal):
    from aligner.alignment.universal import SILENCE_CLASS, UniversalModel
    from aligner.phones.ipa import composition_matrix, read_ipa

    _, path = universal
    warm, fresh = UniversalModel.load(path), UniversalModel.load(path)
    for symbols in (["sil", "a", "ʃ", "sil"], ["m", "i", "tʼ"], ["u", "ɓ", "a", "s"]):  # classes met before
        warm.view(symbols)
    symbols = ["sil", "ʃ", "a", "ɓ", "kʷ", "sil"]
    a, b = warm.view(symbols), fresh.view(symbols)
    for m, v in ((warm, a), (fresh, b)):  # the output layer, prior and durations as the model gives them
        names = list(v.inventory.classes)
        segments = [read_ipa(c) for c in names]
        clf = m.network.frame_classifier(composition_matrix(segments), m.prior.predict(segments))
        np.testing.assert_array_equal(v.classifier.weights, clf.weights)
        np.testing.assert_array_equal(v.classifier.bias, clf.bias)
        np.testing.assert_array_equal(v.classifier.log_prior, clf.log_prior)
        assert v.classifier.weights.flags.c_contiguous
        stats = m.durations.stats(segments, names.index(SILENCE_CLASS))
        for key in ("mean", "max_frames", "final_mean", "final_max_frames"):
            np.testing.assert_array_equal(getattr(v.durations, key), getattr(stats, key))
        for key in ("std", "final_std"):
            np.testing.assert_array_equal(getattr(v.durations, key), getattr(stats, key) * m.duration_spread)
    # and the same whatever the model met before: a phone's prediction never depends on the others'
    for key in ("weights", "bias", "log_prior"):
        np.testing.assert_array_equal(getattr(a.classifier, key), getattr(b.classifier, key))
    for key in ("mean", "std", "max_frames", "final_mean", "final_std", "final_max_frames"):
        np.testing.assert_array_equal(getattr(a.durations, key), getattr(b.durations, key))
    assert a.inventory == b.inventory and a.phone_symbols == b.phone_symbols
    np.testing.assert_array_equal(a.always_scored, b.always_scored)


def test_a_views_pauses_last_what_the_speaker_took(universal, tmp_path):
    """A silence inside a transcript takes the edge silences' statistics, may last up to
    UNIVERSAL_MAX_SILENCE_FRAMES, and is left out of the tempo term; a model saved with that
    setting reads it back, and a damaged value is one error."""
    from aligner.alignment.model import AlignmentModel
    from aligner.alignment.universal import UNIVERSAL_MAX_SILENCE_FRAMES, UniversalModel

    _, path = universal
    view = UniversalModel.load(path).view(["sil", "m", "a", "sil", "s", "i", "sil"])
    d, sil = view.durations, view.inventory.silence_index
    assert (d.mean[sil], d.std[sil]) == (d.final_mean[sil], d.final_std[sil])
    assert d.max_frames[sil] == d.final_max_frames[sil] == UNIVERSAL_MAX_SILENCE_FRAMES
    classes = view.phone_set.class_indices(["sil", "m", "a", "sil", "s", "i", "sil"])
    mean, _, _ = d.for_phones(classes, None)
    assert mean[3] == mean[0] == mean[-1]  # the pause between two words as the edges
    assert view.pauses_unpaced
    frames = np.random.default_rng(3).standard_normal((300, 42)).astype(np.float32)
    x = view.make_input(frames, classes)
    np.testing.assert_array_equal(x.paced, np.asarray(classes) != sil)
    view.save(tmp_path / "v")
    assert AlignmentModel.load(tmp_path / "v").pauses_unpaced
    assert _edit_bundle_json(tmp_path / "v", "alignment.json", pauses_unpaced="yes")["pauses_unpaced"] is True
    with pytest.raises(ModelError, match="pauses_unpaced must be true or false"):
        AlignmentModel.load(tmp_path / "v")
    assert view.crops_silent_edges  # the default
    view.crops_silent_edges = False
    view.save(tmp_path / "w")
    view.crops_silent_edges = True
    assert not AlignmentModel.load(tmp_path / "w").crops_silent_edges
    assert _edit_bundle_json(tmp_path / "w", "alignment.json", crops_silent_edges=1)["crops_silent_edges"] is False
    with pytest.raises(ModelError, match="crops_silent_edges must be true or false"):
        AlignmentModel.load(tmp_path / "w")


def test_the_bundle_round_trips_and_a_damaged_one_is_one_error(universal, tmp_path):
    from aligner.alignment.universal import UniversalModel

    _, path = universal
    a, b = UniversalModel.load(path), UniversalModel.load(path)
    frames = np.random.default_rng(1).standard_normal((30, 42)).astype(np.float32)
    symbols = ["sil", "m", "a", "sil"]
    np.testing.assert_array_equal(a.view(symbols).classifier.scores(frames), b.view(symbols).classifier.scores(frames))
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in path.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    params = json.loads((bad / "universal.json").read_text(encoding="utf-8"))
    params["weights"] = [1.0, 2.0]
    (bad / "universal.json").write_text(json.dumps(params), encoding="utf-8")
    with pytest.raises(ModelError, match="corrupted or modified"):  # the checksum catches it first
        UniversalModel.load(bad)
    import hashlib

    manifest = json.loads((bad / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["universal.json"] = hashlib.sha256((bad / "universal.json").read_bytes()).hexdigest()
    (bad / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ModelError, match="weights must be 7 finite numbers"):  # and the values are checked
        UniversalModel.load(bad)


def test_the_duration_spread_widens_every_views_deviations_and_is_checked_on_load(universal, tmp_path):
    from aligner.alignment.universal import UniversalModel

    _, path = universal
    base = UniversalModel.load(path)
    assert base.duration_spread == 2.0  # the trained default
    base.duration_spread = 1.0
    symbols = ["sil", "m", "a", "ʃ", "sil"]
    wide = UniversalModel.load(path)
    wide.duration_spread = 3.0
    wide.save(tmp_path / "wide")
    reloaded = UniversalModel.load(tmp_path / "wide")
    assert reloaded.duration_spread == 3.0
    b, w = base.view(symbols).durations, reloaded.view(symbols).durations
    np.testing.assert_allclose(w.std, 3.0 * b.std)
    np.testing.assert_allclose(w.final_std, 3.0 * b.final_std)
    np.testing.assert_array_equal(w.mean, b.mean)
    _edit_bundle_json(tmp_path / "wide", "universal.json", duration_spread=-1)
    with pytest.raises(ModelError, match="duration_spread must be a number"):
        UniversalModel.load(tmp_path / "wide")


def test_a_view_of_a_whole_corpus_decodes_each_transcript_as_its_own_view(universal, tmp_path):
    """A corpus's view (what adapt starts from) scores the corpus's every phone, but the agreement's
    maximum of one transcript runs over that transcript's phones, the background and silence, as
    in the transcript's own view: the same times; the classes scored in every transcript are kept
    in the saved model and checked on load."""
    import soundfile as sf

    from aligner.alignment.model import UNSCORED, AlignmentModel
    from aligner.alignment.universal import UniversalModel

    corpus, path = universal
    model = UniversalModel.load(path)
    transcripts = [["sil", "a", "ʃ", "m", "sil"], ["sil", "i", "tʼ", "a", "sil"], ["sil", "o", "s", "a", "sil"]]
    whole = model.view(sorted({p for t in transcripts for p in t}))
    assert {"ʃ", "tʼ", "o"} <= set(whole.inventory.classes)
    rng = np.random.default_rng(5)
    for t, wav in zip(transcripts, ["xaa/xaa-0.wav", "xbb/xbb-1.wav", "xcc/xcc-2.wav"]):
        samples = sf.read(corpus / wav, dtype="float32")[0]
        own = model.view(t)
        a = [iv.start_s for iv in own.align(samples, t, own.phone_set)]
        b = [iv.start_s for iv in whole.align(samples, t, whole.phone_set)]
        np.testing.assert_allclose(b, a, atol=1e-9)
        # with 2 s of quiet at each end the silent edges are cut: silence is heard among the
        # transcript's phones in both views, so the cut and the times are the same (0.25.0)
        edge = (0.01 * rng.standard_normal(32000)).astype(np.float32)
        padded = np.concatenate([edge, samples, edge])
        a = [iv.start_s for iv in own.align(padded, t, own.phone_set)]
        b = [iv.start_s for iv in whole.align(padded, t, whole.phone_set)]
        np.testing.assert_allclose(b, a, atol=1e-4)
        frames = whole.frames_of(samples)
        scores = whole.transcript_scores(whole.classifier.scores(frames), whole.phone_set.class_indices(t))
        others = [c for c in ("ʃ", "tʼ", "o") if c not in t]
        assert all(np.all(scores[:, whole.inventory.index(c)] == UNSCORED) for c in others)
        assert np.all(scores[:, whole.inventory.index(t[2])] > UNSCORED)
    whole.save(tmp_path / "whole")
    again = AlignmentModel.load(tmp_path / "whole")
    np.testing.assert_array_equal(again.always_scored, whole.always_scored)
    params = _edit_bundle_json(tmp_path / "whole", "alignment.json", always_scored=["Q"])
    assert params["always_scored"] == [whole.inventory.classes[i] for i in whole.always_scored]
    with pytest.raises(ModelError, match="always_scored must list classes"):
        AlignmentModel.load(tmp_path / "whole")


def test_align_reads_ipa_and_writes_the_users_symbols(universal, tmp_path):
    corpus, path = universal
    wav = corpus / "xaa" / "xaa-0.wav"
    out = tmp_path / "out.TextGrid"
    code, output = run("align", wav, "a s t' ʃʲ", "--phone-set", "ipa", "--model", path, "-o", out)
    assert code == 0, output
    text = out.read_text(encoding="utf-8")
    labels = [line.split('"')[1] for line in text.splitlines() if "text =" in line]
    assert labels == ["", "a", "s", "t'", "ʃʲ", ""]  # silences added at the edges, written empty
    # a TextGrid's phones tier is a transcript too
    code, output = run("align", wav, corpus / "xaa" / "xaa-0.TextGrid", "--phone-set", "ipa", "--model", path,
                       "-o", tmp_path / "tg.TextGrid")
    assert code == 0, output
    code, output = run("align", wav, "a Q i", "--phone-set", "ipa", "--model", path, "-o", tmp_path / "x.TextGrid")
    assert code == 1 and "phone 'Q'" in one_line_error(output) and "symbol 2 of 3" in output


def test_a_session_with_long_pauses_and_edges_is_aligned(universal):
    """Three words of the synthetic corpus joined with 4 s of quiet between them and 6 s at either end, their
    pauses written once: aligned, every phone in order within the recording (0.21.0 refused it: its silences
    could last 3 s at most, and the words' phones 0.6 s); the pauses' middles are cut out first (0.27.1: the
    classifier hears speech in seconds of pause)."""
    import soundfile as sf

    from aligner.alignment.universal import UniversalModel
    from aligner.io.transcripts import read_reference_phones

    corpus, path = universal
    rng = np.random.default_rng(4)
    quiet = lambda seconds: (0.01 * rng.standard_normal(int(seconds * 16000))).astype(np.float32)  # noqa: E731
    pieces, symbols, t = [quiet(6.0)], ["sil"], 6.0
    for k in range(3):
        samples, _ = sf.read(corpus / "xaa" / f"xaa-{k}.wav", dtype="float32")
        _, _, labels = read_reference_phones(corpus / "xaa" / f"xaa-{k}.TextGrid")
        symbols += [label for label in labels if label.strip()] + ["sil"]
        pieces += [samples, quiet(4.0 if k < 2 else 6.0)]
        t += len(samples) / 16000 + (4.0 if k < 2 else 6.0)
    model = UniversalModel.load(path)
    view = model.view(symbols)
    intervals = view.align(np.concatenate(pieces), symbols, view.phone_set)
    got = np.array([iv.start_s for iv in intervals])
    assert len(got) == len(symbols) and got[0] == 0.0 and np.all(np.diff(got) > 0)
    assert intervals[-1].end_s == pytest.approx(t, abs=0.02)
    from aligner.alignment.decoding.silent_edges import INNER_KEEP_FRAMES, inner_silences_cut

    decoder, scores, _ = view.scored(None, np.concatenate(pieces))
    cut = inner_silences_cut(view, decoder, scores, np.concatenate(pieces))[0]  # the pauses' middles go
    assert len(cut.kept) == 3
    gone_s = len(np.concatenate(pieces)) / 16000 - cut.duration_s
    assert 2 * (4.0 - 2 * INNER_KEEP_FRAMES / 100) - 0.5 < gone_s < 8.0  # with the words' own edge silences
    # the old limit, 300 frames a silence, refused it; a pause now decodes as two silences (0.28.0), so each
    # half limited to 150 frames is that limit for the whole pause
    with pytest.raises(AlignerError, match="far too long"):
        view.durations.max_frames[view.inventory.silence_index] = 150
        view.durations.final_max_frames[view.inventory.silence_index] = 150
        view.align(np.concatenate(pieces), symbols, view.phone_set)


def test_a_pause_between_words_is_decoded_as_two_silences_and_written_as_one(universal):
    """A view decodes each silence between two phones as two silences in a row (the end of one word's
    recording and the start of the next's, as the model heard silences in training) and writes it as
    one interval with the transcript's label; edge silences and silences already in a row stay as
    written; where the frames have no room for the extra silences, the pause is decoded as one; the
    English model decodes its pauses as written."""
    import soundfile as sf

    from aligner.alignment.decoding.stop_closures import pauses_as_two_silences
    from aligner.alignment.pipeline import align_ipa_phones
    from aligner.alignment.universal import UniversalModel
    from aligner.io.transcripts import read_reference_phones

    corpus, path = universal
    rng = np.random.default_rng(5)
    pieces, symbols = [], []
    for k in range(2):
        samples, _ = sf.read(corpus / "xaa" / f"xaa-{k}.wav", dtype="float32")
        _, _, labels = read_reference_phones(corpus / "xaa" / f"xaa-{k}.TextGrid")
        symbols += [label for label in labels if label.strip()] + ["sil"]
        pieces += [samples, (0.01 * rng.standard_normal(8000)).astype(np.float32)]
    audio = np.concatenate(pieces)
    model = UniversalModel.load(path)
    view = model.view(["sil"] + symbols)
    pause = symbols.index("sil") + 1  # in the transcript with its leading silence
    phones = ["sil"] + symbols
    doubled = pauses_as_two_silences(phones, view.phone_set)
    assert doubled.owner.tolist() == sorted(list(range(len(phones))) + [pause])
    assert pauses_as_two_silences(phones[:pause] + ["sil"] + phones[pause:], view.phone_set) is None  # in a row
    assert pauses_as_two_silences(phones[:pause] + phones[pause + 1:], view.phone_set) is None  # edges only
    expanded, internal, _ = view._decoding_sequence(phones, view.phone_set, None, len(audio) // 160)
    assert expanded is not None and internal[pause] == internal[pause + 1] == "sil" and len(internal) == len(phones) + 1
    assert view._decoding_sequence(phones, view.phone_set, None, len(phones))[0] is None  # no room: one silence

    intervals, _, _ = align_ipa_phones(model, audio, symbols, "ipa", sr=16000, review=False)
    assert [iv.label for iv in intervals[1:-1]] == symbols[:-1] and len(intervals) == len(symbols) + 1
    assert all(a.end_s == b.start_s for a, b in zip(intervals, intervals[1:]))
    english = UniversalModel.load(path).view(phones)
    english.pauses_unpaced = False  # a model whose pauses keep their statistics (the English model's)
    assert english._decoding_sequence(phones, english.phone_set, None, len(audio) // 160)[0] is None


def test_a_word_with_seconds_of_silence_around_it_aligns_as_its_tight_cut(universal):
    """A word of the synthetic corpus with 3 s of quiet added at either end: the view finds its
    speech, cuts the recording there (scoring the cut again) and aligns the cut, so the word's
    inner boundaries land where they do in the tight recording (shifted by 3 s), its edges near
    theirs, and the edge silences reach the recording's ends; aligned whole, they land far off."""
    import soundfile as sf

    from aligner.alignment.universal import UniversalModel
    from aligner.io.transcripts import read_reference_phones

    corpus, path = universal
    rng = np.random.default_rng(7)
    samples, _ = sf.read(corpus / "xaa" / "xaa-1.wav", dtype="float32")
    _, _, labels = read_reference_phones(corpus / "xaa" / "xaa-1.TextGrid")
    symbols = ["sil"] + [label for label in labels if label.strip()] + ["sil"]
    quiet = (0.01 * rng.standard_normal(3 * 16000)).astype(np.float32)
    view = UniversalModel.load(path).view(symbols)
    tight = np.array([iv.start_s for iv in view.align(samples, symbols, view.phone_set)])
    long = np.concatenate([quiet, samples, quiet])
    intervals = view.align(long, symbols, view.phone_set)
    got = np.array([iv.start_s for iv in intervals]) - 3.0
    assert got[0] == -3.0 and intervals[-1].end_s == pytest.approx(len(long) / 16000)
    np.testing.assert_allclose(got[2:-1], tight[2:-1], atol=0.015)  # the word's inner boundaries
    np.testing.assert_allclose(got[[1, -1]], tight[[1, -1]], atol=0.15)  # its edges
    view.crops_silent_edges = False
    whole = np.array([iv.start_s for iv in view.align(long, symbols, view.phone_set)]) - 3.0
    assert np.abs(whole[1:] - tight[1:]).max() > 5 * np.abs(got[1:] - tight[1:]).max()


def test_the_english_model_takes_ipa_through_its_closest_phones(universal, tmp_path):
    from aligner import api

    corpus, _ = universal
    result = api.align(corpus / "xcc" / "xcc-1.wav", ["m", "a", "s"], phone_set="ipa",
                       model=Path(__file__).resolve().parents[2] / "models" / "timit-alignment")
    assert [iv.label for iv in result] == ["", "m", "a", "s", ""]


def test_an_ipa_dictionary_gives_the_words(universal, tmp_path):
    corpus, path = universal
    dictionary = tmp_path / "ipa.dict"
    dictionary.write_text("masi\tm a s i\nta\tt a\n", encoding="utf-8")
    out = tmp_path / "w.TextGrid"
    code, output = run("align", corpus / "xaa" / "xaa-2.wav", "masi ta", "--phone-set", "ipa", "--dictionary",
                       dictionary, "--model", path, "-o", out)
    assert code == 0, output
    text = out.read_text(encoding="utf-8")
    assert '"masi"' in text and '"ta"' in text and 'name = "phones"' in text
    bad = tmp_path / "bad.dict"  # (a dictionary is read once per process and path)
    bad.write_text("masi\tm a X\n", encoding="utf-8")
    code, output = run("align", corpus / "xaa" / "xaa-2.wav", "masi", "--phone-set", "ipa", "--dictionary",
                       bad, "--model", path, "-o", out)
    assert code == 1 and "bad.dict:1" in one_line_error(output) and "'X'" in output


def test_align_corpus_and_adapt_with_ipa(universal, tmp_path):
    from aligner.alignment.model import AlignmentModel

    corpus, path = universal
    lab_corpus = tmp_path / "lab" / "xbb"
    lab_corpus.mkdir(parents=True)
    from aligner.io.transcripts import read_reference_phones

    for copy in range(4):  # adapting needs 20 s of speech
        for wav in sorted((corpus / "xbb").glob("*.wav")):
            (lab_corpus / f"{copy}-{wav.name}").write_bytes(wav.read_bytes())
            labels = [lab for lab in read_reference_phones(wav.with_suffix(".TextGrid"))[2] if lab.strip()]
            (lab_corpus / f"{copy}-{wav.stem}.lab").write_text(" ".join(labels), encoding="utf-8")
    (lab_corpus / "bad.wav").write_bytes((lab_corpus / "0-xbb-0.wav").read_bytes())
    (lab_corpus / "bad.lab").write_text("a Q", encoding="utf-8")
    code, output = run("align-corpus", tmp_path / "lab", tmp_path / "aligned", "--phone-set", "ipa",
                       "--model", path)
    assert code == 1 and "1 files failed" in output and "phone 'Q'" in output
    assert len(list((tmp_path / "aligned" / "xbb").glob("*.TextGrid"))) == 24
    (lab_corpus / "bad.lab").unlink()
    (lab_corpus / "bad.wav").unlink()
    code, output = run("adapt", tmp_path / "lab", tmp_path / "adapted", "--phone-set", "ipa", "--model", path,
                       "--rounds", "1")
    assert code == 0, output
    adapted = AlignmentModel.load(tmp_path / "adapted")  # an ordinary model of the language's phones
    assert set(adapted.phone_set.symbols) >= {"a", "i", "t", "aː"}
    assert adapted.tempo_range == (0.7, 1.4)  # it keeps decoding a second time at each recording's tempo
    code, output = run("align", lab_corpus / "0-xbb-0.wav", lab_corpus / "0-xbb-0.lab", "--phone-set", "ipa",
                       "--model", tmp_path / "adapted", "-o", tmp_path / "again.TextGrid")
    assert code == 0, output


def test_train_universal_from_the_command_line_names_left_out_files(universal, tmp_path):
    corpus, _ = universal
    copy = tmp_path / "corpus"
    for f in corpus.rglob("*"):
        if f.is_file():
            (copy / f.relative_to(corpus)).parent.mkdir(parents=True, exist_ok=True)
            (copy / f.relative_to(corpus)).write_bytes(f.read_bytes())
    write_textgrid(copy / "xaa" / "xaa-0.TextGrid", [("phone", [(0.0, 0.3, "a"), (0.3, 0.6, "Q")])], 0.6)
    recipe = tmp_path / "quiet.json"  # no simulated rooms: fast, and no pyroomacoustics needed
    recipe.write_text(json.dumps({"copies": 1, "room_probability": 0.0, "snr_db": [20, 30]}), encoding="utf-8")
    code, output = run("train", copy, tmp_path / "m", "--universal", "--max-frames", "3000", "--epochs", "1",
                       "--folds", "2", "--augment", recipe, "--distil-units", "16")
    assert code == 1 and "1 files left out of the training" in output and "phone 'Q'" in output
    assert (tmp_path / "m" / "manifest.json").is_file()
    # without --trainer a universal model's weights get the universal trainer, not aligner train's orbit
    from aligner.alignment.universal import UniversalModel
    from aligner.alignment.universal_training import UNIVERSAL_TRAINER

    trained = UniversalModel.load(tmp_path / "m")
    assert trained.training["trainer"] == UNIVERSAL_TRAINER != "orbit"
    assert trained.duration_spread == 2.0
    # --distil-units: the scorer distilled into a network of at most that many units
    assert trained.training["settings"]["distil_units"] == 16
    assert trained.training["distil"]["teacher_units"] > 16 >= trained.network.hidden
    conditions = trained.training["settings"]["conditions"]
    assert conditions["copies"] == 1 and conditions["room_probability"] == 0.0 and conditions["snr_db"] == [20, 30]
    code, output = run("train", copy, tmp_path / "m2", "--universal", "--phone-classes", copy / "xaa" / "xaa-1.wav")
    assert code == 2 and "--universal" in output
    code, output = run("train", copy, tmp_path / "m4", "--distil-units", "64")  # an English model's: not this way
    assert code == 2 and "--distil-units" in output and "--universal" in output and not (tmp_path / "m4").exists()
    (tmp_path / "bad.json").write_text(json.dumps({"copies": 1, "snr": 3}), encoding="utf-8")
    code, output = run("train", copy, tmp_path / "m3", "--universal", "--augment", tmp_path / "bad.json")
    assert code == 2 and "bad.json" in output and "snr" in output and not (tmp_path / "m3").exists()


def test_the_scorer_may_also_train_on_degraded_copies(tmp_path):
    """With ``UniversalSettings.conditions`` (``aligner train --universal --augment RECIPE``) a
    universal scorer also trains on degraded copies of each recording after its VTLP copies; each
    copy depends on the recipe and the recording alone; by default there are none."""
    from aligner.alignment.universal_training import UniversalSettings, read_universal_corpus
    from aligner.features.augment import AugmentationRecipe

    field = Path(__file__).resolve().parents[2] / "recipes" / "conditions" / "field.json"
    assert AugmentationRecipe.from_json_file(field).copies == 1  # the recipe measured in CHANGELOG 0.16.0
    assert UniversalSettings().conditions is None
    assert UniversalSettings().network().context == 4 and UniversalSettings(context=6).network().context == 6
    corpus = _synthetic_corpus(tmp_path / "corpus", per_language=2)
    quiet = {"copies": 2, "room_probability": 0.0, "noise_probability": 1.0, "snr_db": [5, 10],
             "telephone_probability": 0.0, "clip_probability": 0.0}
    plain = read_universal_corpus(corpus, warps=(0.9,))
    noisy = read_universal_corpus(corpus, warps=(0.9,), conditions=quiet)
    again = read_universal_corpus(corpus, warps=(0.9,), conditions=quiet)
    assert [len(d.warped) for d in plain] == [1] * 6 and [len(d.warped) for d in noisy] == [3] * 6
    for p, n, a in zip(plain, noisy, again):
        assert np.array_equal(p.frames, n.frames) and np.array_equal(p.warped[0], n.warped[0])
        assert n.warped[1].shape == p.frames.shape and not np.allclose(n.warped[1], p.frames)
        assert not np.allclose(n.warped[1], n.warped[2]) and np.array_equal(n.warped[2], a.warped[2])


def test_vowels_from_ipa_phones(universal, tmp_path):
    corpus, path = universal
    wav = corpus / "xaa" / "xaa-3.wav"
    out = tmp_path / "vowels.csv"
    code, output = run("vowels", wav, "--transcript", "m a s i", "--phone-set", "ipa", "--alignment-model", path,
                       "--no-fuse", "-o", out)
    assert code == 0, output
    rows = out.read_text(encoding="utf-8").splitlines()
    assert [r.split(",")[5] for r in rows[1:]] == ["a", "i"]  # the vowels, by their features


def test_a_languages_words_go_through_the_universal_model_unmapped(universal, tmp_path):
    pytest.importorskip("gruut")
    pytest.importorskip("gruut_lang_es")
    corpus, path = universal
    out = tmp_path / "es.TextGrid"
    code, output = run("align", corpus / "xcc" / "xcc-2.wav", "mesa", "--language", "es", "--model", path, "-o", out)
    assert code == 0, output
    assert "phones aligned as model phones" not in output  # no mapping: the G2P's own IPA is aligned
    from aligner.io.textgrids import read_interval_tier

    assert [iv.label for iv in read_interval_tier(out, "words") if iv.label] == ["mesa"]
    assert [iv.label for iv in read_interval_tier(out, "phones") if iv.label] == ["m", "e", "s", "a"]


def test_a_second_pass_decodes_at_the_recordings_own_tempo(universal, tmp_path):
    """Each view decodes again with its speech phones' durations scaled by the first pass's tempo
    (clipped to the model's range; silences keep theirs); the range is saved and checked on load."""
    from aligner.alignment.universal import UniversalModel

    _, path = universal
    model = UniversalModel.load(path)
    assert model.tempo_range == (0.7, 1.4)  # the trained default
    symbols = ["sil", "m", "a", "s", "sil"]
    view = model.view(symbols)
    assert view.tempo_range == (0.7, 1.4)
    classes = view.phone_set.class_indices(symbols)
    mean, std, max_frames = view.durations.for_phones(classes, symbols)
    frames = np.random.default_rng(2).standard_normal((200, 42)).astype(np.float32)
    scores = view.transcript_scores(view.classifier.scores(frames), classes)
    x = view.make_input(frames, classes, scores)
    speech = np.array([c != view.inventory.silence_index for c in classes])
    for tempo, expected in ((3.0, 1.4), (1.2, 1.2), (0.5, 0.7)):
        # a first pass whose speech phones last `tempo` times their means, the rest silence
        lengths = np.maximum(np.round(mean * tempo), 1).astype(int)
        lengths[-1] = 200 - lengths[:-1].sum()
        y = np.concatenate([[0], np.cumsum(lengths[:-1])])
        x2, y2 = view._decode_at_tempo(x, y, classes, mean, std)
        factor = lengths[speech].sum() / mean[speech].sum()
        np.testing.assert_allclose(x2.dur_mean[speech], mean[speech] * np.clip(factor, 0.7, 1.4))
        np.testing.assert_allclose(x2.dur_std[speech], std[speech] * np.clip(factor, 0.7, 1.4))
        np.testing.assert_array_equal(x2.dur_mean[~speech], mean[~speech])
        assert abs(np.clip(factor, 0.7, 1.4) - expected) < 0.1
        assert y2.shape == y.shape and y2[0] == 0 and np.all(np.diff(y2) >= 1)
    # saved, read back, and a damaged range is one error naming it
    model.tempo_range = (0.8, 1.25)
    model.save(tmp_path / "m")
    assert UniversalModel.load(tmp_path / "m").tempo_range == (0.8, 1.25)
    _edit_bundle_json(tmp_path / "m", "universal.json", tempo_range=[1.5, 2.0])
    with pytest.raises(ModelError, match="tempo_range must hold 1"):
        UniversalModel.load(tmp_path / "m")


def test_views_suppress_noise_past_the_models_gate_and_the_gate_is_saved(universal, tmp_path):
    """A trained model's views denoise a recording whose noise floor passes the universal gate
    (white noise over a quiet recording), not a clean one; the settings are saved, read back and
    checked on load, and a model without them never denoises."""
    from aligner.alignment.universal import UniversalModel
    from aligner.alignment.universal_training import UNIVERSAL_DENOISE_GATE_DB

    _, path = universal
    model = UniversalModel.load(path)
    assert model.front_denoise is not None and model.front_denoise.gate_db == UNIVERSAL_DENOISE_GATE_DB
    view = model.view(["sil", "m", "a", "s", "sil"])
    assert view.front_denoise == model.front_denoise
    rng = np.random.default_rng(5)
    speech = np.concatenate([np.zeros(8000), rng.standard_normal(16000) * np.hanning(16000), np.zeros(8000)])
    clean = (speech * 0.3 + rng.normal(0, 1e-3, speech.size)).astype(np.float32)
    noisy = (clean + rng.normal(0, 0.1, speech.size)).astype(np.float32)
    assert view.cleaned(clean) is None and view.cleaned(noisy) is not None
    model.save(tmp_path / "m")
    assert UniversalModel.load(tmp_path / "m").front_denoise == model.front_denoise
    _edit_bundle_json(tmp_path / "m", "universal.json", front_denoise={"gate_db": "loud"})
    with pytest.raises(ModelError, match="not a usable universal"):
        UniversalModel.load(tmp_path / "m")
    _edit_bundle_json(tmp_path / "m", "universal.json", front_denoise=None)
    plain = UniversalModel.load(tmp_path / "m")
    assert plain.front_denoise is None and plain.view(["sil", "m", "a", "sil"]).cleaned(noisy) is None


def test_an_output_column_of_the_shipped_model_is_the_same_in_a_product_of_any_width():
    """A view's new classes are worked out beside silence alone (no background phones) or beside
    others; BLAS rounds a column by the product's width and the column's place (by another kernel for
    2 columns, and on some CPUs at any width): each column must still be its class's own, and so
    must each entry of the bias."""
    from aligner.alignment.pipeline import load_model
    from aligner.phones.ipa import composition_matrix, read_ipa

    network = load_model(None, universal=True).network
    Phi = composition_matrix([read_ipa(c) for c in ("a", "sil", "i", "u", "s", "t", "k", "m", "n", "ʃ")])
    full, _ = network.output_layer(Phi, None, "weights")
    for width in (2, 3, 5, 10):
        part, _ = network.output_layer(Phi[:width], None, "weights")
        np.testing.assert_array_equal(part, full[:, :width])
        assert part.flags.c_contiguous and part.dtype == np.float32
        shuffled = np.random.default_rng(width).permutation(10)[:width]
        part, bias = network.output_layer(Phi[shuffled], None)
        np.testing.assert_array_equal(part, full[:, shuffled])
        np.testing.assert_array_equal(bias, network.output_layer(Phi, None, "bias")[1][shuffled])


def test_training_reads_the_corpus_with_the_settings_warps(tmp_path, monkeypatch):
    """``aligner train --universal`` makes the VTLP copies its settings name (``warps``), not the default ones."""
    import aligner.alignment.universal_training as ut
    from aligner import api

    seen = {}

    def reader(corpus_dir, code="ipa", tier=None, warps=ut.UNIVERSAL_WARPS, **kwargs):
        seen["warps"] = tuple(warps)
        raise RuntimeError("stop here")

    monkeypatch.setattr(ut, "read_universal_corpus", reader)
    with pytest.raises(RuntimeError, match="stop here"):
        api.train(tmp_path, tmp_path / "out", universal=True, classifier_params={"warps": [0.85, 1.15]})
    assert seen["warps"] == (0.85, 1.15)


def test_a_distilled_scorer_is_narrower_reproduces_its_teacher_and_aligns(tmp_path):
    """``distil_units``: the averaged scorer (the teacher) distilled into fewer units after the rest
    is trained; the weights and the refiner are the teacher's model's, the bundle loads and aligns."""
    from aligner.alignment.universal import UniversalModel
    from aligner.alignment.universal_training import UniversalSettings, read_universal_corpus, train_universal_model

    corpus = _synthetic_corpus(tmp_path / "corpus")
    data = read_universal_corpus(corpus, warps=())
    common = dict(hidden=32, epochs=6, max_train_frames=20000, n_folds=3, n_val_groups=1, trainer_params={"epochs": 2})
    scorers: dict = {}
    teacher = train_universal_model(data, UniversalSettings(**common), scorers=scorers)
    stages = []
    student = train_universal_model(data, UniversalSettings(distil_units=12, distil_epochs=30, **common),
                                    progress=lambda stage, done, total: stages.append(stage), scorers=scorers)
    assert "distil" in stages and "distil" not in teacher.training
    record = student.training["distil"]
    assert student.network.hidden == record["units"] <= 12 < record["teacher_units"] == teacher.network.hidden
    np.testing.assert_array_equal(student.weights, teacher.weights)
    frames = np.vstack([d.frames for d in data])
    e_t, e_s = teacher.network.embeddings(frames), student.network.embeddings(frames)
    # closer to the teacher's images than the teacher's own 12 units that matter most, where it started
    from aligner.features.composed_network import mean_activations, pruned_network, unit_contributions

    contribution = unit_contributions(teacher.network, mean_activations(teacher.network, [d.frames for d in data]))
    first = np.zeros(teacher.network.hidden, bool)
    first[np.argsort(-contribution)[:12]] = True
    e_p = pruned_network(teacher.network, first).embeddings(frames)
    assert np.mean((e_s - e_t) ** 2) < min(0.3 * np.var(e_t), 0.5 * np.mean((e_p - e_t) ** 2))
    student.save(tmp_path / "model")
    loaded = UniversalModel.load(tmp_path / "model")
    assert loaded.network.hidden == student.network.hidden
    wav = corpus / "xaa" / "xaa-0.wav"
    out = tmp_path / "out.TextGrid"
    code, output = run("align", wav, corpus / "xaa" / "xaa-0.TextGrid", "--phone-set", "ipa", "--model",
                       tmp_path / "model", "-o", out)
    assert code == 0, output
    from aligner.io.transcripts import read_reference_phones

    ref_starts, _, ref_labels = read_reference_phones(corpus / "xaa" / "xaa-0.TextGrid")
    starts, _, labels = read_reference_phones(out)
    assert [lab.strip() for lab in labels] == [lab.strip() for lab in ref_labels]
    assert np.median(np.abs(np.asarray(starts) - np.asarray(ref_starts))) < 0.03  # within 30 ms, a clean tone corpus


def test_distillation_settings_are_checked_and_leave_the_scorers_alone():
    from aligner.alignment.universal_training import UniversalSettings

    for bad in ({"distil_units": 0}, {"distil_units": 2.5}, {"distil_units": True}, {"distil_units": 768},
                {"distil_units": 64, "scorer_units": 32}, {"distil_units": 64, "residual_alpha": 1.0},
                {"distil_epochs": 0}, {"distil_seconds": 0}, {"distil_max_frames": 0}):
        with pytest.raises(ValueError, match="distil"):
            UniversalSettings(**bad)
    assert UniversalSettings(distil_units=256, scorer_units=None).distil_units == 256
    # a setting acting after the scorers shares their cache (benchmarks.languages.eval_languages_cv)
    from benchmarks.languages.eval_languages_cv import scorer_key

    assert scorer_key(UniversalSettings(distil_units=256, distil_epochs=5)) == scorer_key(UniversalSettings())


def test_an_adapted_view_keeps_how_the_view_decodes(universal):
    """A view adapted to a language (aligner adapt --phone-set ipa) keeps the view's always-scored
    classes, tempo range and unpaced pauses (0.24.0's adapted model dropped the last)."""
    import soundfile as sf

    from aligner.alignment.adaptation.rounds import AdaptSettings, Recording, adapt_model
    from aligner.alignment.universal import UniversalModel

    corpus, path = universal
    model = UniversalModel.load(path)
    wavs = sorted((corpus / "xaa").glob("*.wav"))[:3]
    transcripts = [["sil", "a", "s", "sil"], ["sil", "m", "i", "sil"], ["sil", "i", "a", "sil"]]
    view = model.view(sorted({p for t in transcripts for p in t}))
    assert view.pauses_unpaced
    recordings = [Recording(sf.read(w, dtype="float32")[0], t, "xaa", w.name, "phones", "model")
                  for w, t in zip(wavs, transcripts)]
    adapted, _ = adapt_model(view, recordings, 1, AdaptSettings(classifier_prior=None, durations_prior=5.0))
    assert adapted is not view and adapted.pauses_unpaced
    assert adapted.tempo_range == view.tempo_range
    np.testing.assert_array_equal(adapted.always_scored, view.always_scored)


def test_views_decode_with_the_boundary_detectors_evidence_and_keep_it_saved_and_adapted(universal, tmp_path):
    """A trained universal model has a boundary detector (``boundary_units``); its views add the
    detector's evidence to every boundary, an adapted view and a saved view keep it, and a detector
    that does not read the model's frames is refused on load."""
    import copy

    import soundfile as sf

    from aligner.alignment.adaptation.rounds import AdaptSettings, Recording, adapt_model
    from aligner.alignment.decoding.boundary_evidence import BoundaryDetector
    from aligner.alignment.model import AlignmentModel
    from aligner.alignment.universal import UniversalModel
    from aligner.frames import boundary_time

    corpus, path = universal
    model = UniversalModel.load(path)
    assert model.boundary_detector is not None and model.boundary_detector.hidden == 256
    symbols = ["sil", "m", "a", "sil"]
    view = model.view(symbols)
    assert view.boundary_detector is model.boundary_detector
    samples = sf.read(sorted((corpus / "xaa").glob("*.wav"))[0], dtype="float32")[0]

    class Spikes:  # evidence of a boundary before frames 30, 45 and 60 alone, weighed far above the rest
        weight = 200.0

        def log_odds(self, frames):
            lo = np.full(len(frames), -5.0)
            lo[[30, 45, 60]] = 5.0
            return lo

    spiked = copy.copy(view)
    spiked.boundary_detector = Spikes()
    starts = np.array([iv.start_s for iv in spiked.align(samples, symbols, spiked.phone_set)])
    np.testing.assert_allclose(starts[1:], [boundary_time(t) for t in (30, 45, 60)], atol=0.0205)
    assert not np.allclose(starts, [iv.start_s for iv in view.align(samples, symbols, view.phone_set)], atol=0.0205)

    view.save(tmp_path / "view")
    again = AlignmentModel.load(tmp_path / "view").boundary_detector
    frames = view.frames_of(samples)
    np.testing.assert_array_equal(again.log_odds(frames), model.boundary_detector.log_odds(frames))
    adapted, _ = adapt_model(view, [Recording(samples, symbols, "xaa", "x.wav", "phones", "model")], 1,
                             AdaptSettings(classifier_prior=None, durations_prior=5.0))
    assert adapted.boundary_detector is view.boundary_detector

    rng = np.random.default_rng(0)
    model.boundary_detector = BoundaryDetector(hidden=4, max_epochs=1).fit(
        [rng.standard_normal((40, 6)).astype(np.float32)], [np.array([10, 20])], ["x"])
    model.save(tmp_path / "narrow")
    with pytest.raises(ModelError, match="boundary detector reads 60 values per frame, not 10 frames of 42"):
        UniversalModel.load(tmp_path / "narrow")


def test_the_recipe_gives_a_saved_model_a_new_detector_and_keeps_its_other_files(universal, tmp_path):
    """``recipes/universal/boundary_detector.py CORPUS MODEL OUT``: OUT is MODEL with a detector
    trained on the corpus, every other file byte for byte; an existing OUT is refused first."""
    import runpy
    import sys

    from aligner.alignment.universal import UniversalModel

    corpus, path = universal
    script = Path(__file__).resolve().parents[2] / "recipes" / "universal" / "boundary_detector.py"
    argv = sys.argv
    try:
        sys.argv = [str(script), str(corpus), str(path), str(tmp_path / "out"), "--units", "8"]
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(script), run_name="__main__")
        assert done.value.code == 0
        with pytest.raises(SystemExit) as refused:  # again: OUT is there now
            runpy.run_path(str(script), run_name="__main__")
        assert refused.value.code == 2
    finally:
        sys.argv = argv
    model = UniversalModel.load(tmp_path / "out")
    assert model.boundary_detector.hidden == 8 and model.training["boundary_detector"]["units"] == 8
    for f in path.iterdir():
        if f.name not in ("boundary_detector.npz", "manifest.json"):
            assert (tmp_path / "out" / f.name).read_bytes() == f.read_bytes(), f.name
