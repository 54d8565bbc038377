"""`aligner adapt` beyond the 39 classes: a base model trained on its own phones (transcripts,
dictionaries and references in its symbols; the adapted model keeps its inventory), and a
language the model never heard (``--language``: the words through the language's G2P and the
feature mapping, as ``align-corpus --language``).

The own-phone base is a tiny model trained here on a few TIMIT utterances written in IPA (as in
tests/phones/test_phone_inventory.py): a handful of classes, not 39.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from aligner import api
from aligner.alignment.adaptation import corpus as AC
from aligner.alignment.adaptation.rounds import AdaptSettings
from aligner.alignment.model import AlignmentModel
from aligner.errors import TranscriptError
from aligner.io.bundles import default_model_dir
from aligner.io.textgrids import Interval, write_textgrid
from aligner.phones.sets import TIMIT39_INVENTORY

from tests.conftest import TIMIT, one_line_error, run

pytestmark = [pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning"),
              pytest.mark.skipif(not TIMIT.is_dir(), reason=f"TIMIT sample not found at {TIMIT}")]

#: durations re-estimated too, so that a change of the per-class and per-symbol tables shows
SETTINGS = AdaptSettings(durations_prior=5.0)


def _as_ipa(labels) -> list:
    """TIMIT-61 symbols as the tiny model's IPA symbols (closures ``b̚``, silence ``sil``)."""
    import phonecodes.phonecodes as pc

    from aligner.phones.inventory import normalize_symbol

    return [normalize_symbol("sil" if s in ("h#", "pau", "epi") else "ʔ" if s == "q" else
                             pc.convert(s[0], "timit", "ipa") + "\u031a" if s.endswith("cl")
                             else pc.convert(s, "timit", "ipa")) for s in labels]


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """``(model directory, model, utterances)``: a tiny model trained on IPA TextGrids of 8 TIMIT
    utterances, and the held-out utterances ``[(Utterance, IPA phones)]`` whose phones it knows."""
    pytest.importorskip("panphon")
    pytest.importorskip("phonecodes.phonecodes")
    from aligner.io.transcripts import read_phn
    from tests.phones.test_phone_inventory import _ipa_corpus

    root = tmp_path_factory.mktemp("own-phones")
    held_out = _ipa_corpus(root / "corpus")
    model = api.train(root / "corpus", root / "model", trainer_params={"epochs": 1},
                      classifier_params={"hidden": 64, "epochs": 10},
                      n_folds=2, n_val_speakers=1, phones_tier="phones")
    usable = []
    for u in held_out:
        ipa = _as_ipa(read_phn(u.transcript)[2])
        if all(s in model.phone_set for s in ipa):
            usable.append((u, ipa))
    assert len(usable) >= 12
    return root / "model", model, usable


def _phones_corpus(root: Path, usable, n: int = 10) -> Path:
    """A corpus of ``n`` recordings with ``.lab`` phone transcripts in the model's IPA symbols."""
    for u, ipa in usable[:n]:
        folder = root / u.speaker
        folder.mkdir(parents=True, exist_ok=True)
        (folder / u.audio.name).symlink_to(u.audio.resolve())
        (folder / u.audio.with_suffix(".lab").name).write_text(" ".join(ipa), encoding="utf-8")
    return root


def _reference(path: Path, u, ipa, rename=None) -> Path:
    """The hand-aligned phones of ``u`` in IPA (silence blank) as a reference TextGrid."""
    from aligner.io.transcripts import read_phn

    starts, ends, _ = read_phn(u.transcript)
    labels = ["" if s == "sil" else (rename or {}).get(s, s) for s in ipa]
    intervals = [Interval(a / 16000, b / 16000, s) for a, b, s in zip(starts, ends, labels)]
    write_textgrid(path, [("phones", intervals)], intervals[-1].end_s)
    return path


# -- a model of its own phones -----------------------------------------------------------------------------------

def test_an_own_phone_model_adapts_on_its_symbols_and_keeps_its_inventory(own, tmp_path):
    base_dir, base, usable = own
    assert base.inventory != TIMIT39_INVENTORY and len(base.inventory) < 39  # really not the 39 classes
    corpus = _phones_corpus(tmp_path / "c", usable)
    messages = []
    report = api.adapt(corpus, tmp_path / "adapted", model=base_dir, rounds=2, settings=SETTINGS,
                       message=messages.append, output_dir=tmp_path / "aligned")
    assert report.recordings == 10 and not report.failed and len(messages) == 2
    assert all(r.files_used == 10 and r.frames > 0 for r in report.rounds)
    adapted = AlignmentModel.load(tmp_path / "adapted")
    assert adapted.inventory == base.inventory and adapted.phone_symbols == base.phone_symbols
    assert adapted.classifier.n_classes == len(base.inventory)
    assert adapted.durations.mean.shape == (len(base.inventory),)
    np.testing.assert_array_equal(adapted.durations.symbols, base.durations.symbols)
    # what adaptation re-estimates did change: the output layer, and the per-class and per-symbol durations
    assert np.abs(adapted.classifier.weights - base.classifier.weights).max() > 1e-3
    assert np.abs(adapted.durations.mean - base.durations.mean).max() > 0.1
    assert np.abs(adapted.durations.symbol_mean - base.durations.symbol_mean).max() > 0.1
    np.testing.assert_array_equal(adapted.refiner.broad_of_class, base.inventory.broad_indices)
    manifest = json.loads((tmp_path / "adapted" / "manifest.json").read_text())
    assert manifest["training"]["adapted"]["base"]["path"] == str(base_dir.resolve())
    # the adapted model aligns transcripts in the base's symbols, and aligned the corpus (--output-dir)
    u, ipa = usable[0]
    intervals = api.align(u.audio, ipa, model=tmp_path / "adapted")
    assert [iv.label for iv in intervals] == ipa
    assert np.all(np.diff([iv.start_s for iv in intervals]) > 0)
    assert len(report.alignment.written) == 10 and not report.alignment.failed


def test_an_own_phone_adapt_on_two_jobs_gives_the_serial_model(own, tmp_path):
    base_dir, _, usable = own
    corpus = _phones_corpus(tmp_path / "c", usable)
    one = api.adapt(corpus, tmp_path / "one", model=base_dir, rounds=1, settings=SETTINGS)
    two = api.adapt(corpus, tmp_path / "two", model=base_dir, rounds=1, settings=SETTINGS, jobs=2)
    assert one.rounds[0].frames == two.rounds[0].frames
    a, b = AlignmentModel.load(tmp_path / "one"), AlignmentModel.load(tmp_path / "two")
    np.testing.assert_allclose(a.classifier.weights, b.classifier.weights, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a.durations.mean, b.durations.mean)


@pytest.mark.filterwarnings("ignore")
def test_an_own_phone_adapt_on_dask_gives_the_serial_model(own, tmp_path):
    """Dask workers load the own-phone base (its inventory and symbols travel in the bundle) and
    read the corpus in its symbols: the same frames and model as one process."""
    distributed = pytest.importorskip("distributed", reason="Dask not installed (pip install 'aligner[dask]')")
    import warnings

    base_dir, _, usable = own
    corpus = _phones_corpus(tmp_path / "c", usable)
    one = api.adapt(corpus, tmp_path / "one", model=base_dir, rounds=1, settings=SETTINGS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            dask = api.adapt(corpus, tmp_path / "dask", model=base_dir, rounds=1, settings=SETTINGS,
                             scheduler=cluster.scheduler_address)
    assert (one.rounds[0].files_used, one.rounds[0].frames) == (dask.rounds[0].files_used, dask.rounds[0].frames)
    a, b = AlignmentModel.load(tmp_path / "one"), AlignmentModel.load(tmp_path / "dask")
    assert b.inventory == a.inventory and b.phone_symbols == a.phone_symbols
    np.testing.assert_allclose(a.classifier.weights, b.classifier.weights, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a.durations.mean, b.durations.mean)


def test_own_phone_words_through_a_dictionary_in_its_phones_and_references_in_its_symbols(own, tmp_path):
    from aligner.io.transcripts import read_phn, read_sample_intervals

    base_dir, base, usable = own
    corpus, lexicon = tmp_path / "c", {}
    for u, ipa in usable[:10]:
        starts, ends, _ = read_phn(u.transcript)
        w_starts, w_ends, words = read_sample_intervals(u.transcript.with_suffix(".wrd"), "words", "word")
        for a, b, w in zip(w_starts, w_ends, words):
            lexicon.setdefault(w, " ".join(p for s, e, p in zip(starts, ends, ipa) if s >= a and e <= b))
        (corpus / u.speaker).mkdir(parents=True, exist_ok=True)  # stems told apart: a reference is found by its stem
        (corpus / u.speaker / f"{u.speaker}-{u.audio.name}").symlink_to(u.audio.resolve())
        (corpus / u.speaker / f"{u.speaker}-{u.audio.stem}.lab").write_text(" ".join(words), encoding="utf-8")
    dictionary = tmp_path / "lexicon.txt"
    dictionary.write_text("".join(f"{w}\t{p}\n" for w, p in lexicon.items() if p), encoding="utf-8")
    refs = tmp_path / "refs"
    refs.mkdir()
    u, ipa = usable[0]
    reference = _reference(refs / f"{u.speaker}-{u.audio.stem}.TextGrid", u, ipa)
    report = api.adapt(corpus, tmp_path / "adapted", model=base_dir, dictionary=dictionary, references=refs,
                       rounds=1, settings=SETTINGS)
    assert report.recordings == 10 and report.references == 1 and not report.failed and not report.oovs
    assert report.rounds[0].files_used == 10
    adapted = AlignmentModel.load(tmp_path / "adapted")
    assert adapted.inventory == base.inventory and adapted.phone_symbols == base.phone_symbols
    result = api.align_words(u.audio, (corpus / u.speaker / f"{u.speaker}-{u.audio.stem}.lab").read_text(),
                             model=tmp_path / "adapted", dictionary=dictionary)
    assert all(iv.label in base.phone_set for iv in dict(result.tiers)["phones"] if iv.label)

    # the reference's blank intervals are the model's silence, its symbols the model's own
    from aligner.io.audio import load_audio

    duration = len(load_audio(u.audio)) / 16000
    phones = AC.read_reference(reference, duration, base)
    assert phones[0][2] == "sil" and [p[2] for p in phones] == ipa
    # a reference in other symbols is refused, naming the file
    bad_refs = tmp_path / "bad-refs"
    bad_refs.mkdir()
    bad = _reference(bad_refs / reference.name, u, ipa, rename={ipa[1]: "q9"})
    with pytest.raises(TranscriptError, match="unknown phone 'q9'") as err:
        api.adapt(corpus, tmp_path / "never", model=base_dir, dictionary=dictionary, references=bad_refs)
    assert str(bad) in str(err.value) and not (tmp_path / "never").exists()


def test_own_phone_refusals_are_one_line(own, tmp_path):
    base_dir, _, usable = own
    corpus = _phones_corpus(tmp_path / "c", usable, n=1)
    bad = tmp_path / "bad-lexicon.txt"
    bad.write_text("dark d ɑ ɹ kk\n", encoding="utf-8")
    code, out = run("adapt", corpus, tmp_path / "m", "--model", base_dir, "--dictionary", bad)
    line = one_line_error(out)
    assert code == 1 and str(bad) in line and "phone 'kk' in the pronunciation of 'dark' is not one of the model's" \
        in line
    code, out = run("adapt", corpus, tmp_path / "m", "--model", base_dir, "--transcript", "words")
    assert code == 1 and "word transcripts need a --dictionary in those phones" in one_line_error(out)
    assert not (tmp_path / "m").exists()


# -- a language the model never heard -----------------------------------------------------------------------------

def _words_corpus(root: Path, n: int = 8) -> Path:
    """``n`` TIMIT recordings of one speaker with their words (``.lab``)."""
    from aligner.io.transcripts import read_sample_intervals

    folder = root / "dr1-fvmh0"
    folder.mkdir(parents=True)
    for wav in sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[:n]:
        shutil.copy(wav, folder / wav.name)
        words = read_sample_intervals(wav.with_suffix(".wrd"), "words", "word")[2]
        (folder / wav.with_suffix(".lab").name).write_text(" ".join(words), encoding="utf-8")
    return root


def _needs_english_g2p() -> None:
    """Skip unless gruut with its English pack and panphon are installed (the languages extra)."""
    pytest.importorskip("gruut")
    pytest.importorskip("panphon")
    from aligner.phones.languages import check_language

    try:
        check_language("en-us")
    except Exception as exc:  # noqa: BLE001 - the English pack is missing here
        pytest.skip(str(exc))


def test_language_adapt_reads_words_through_the_g2p_and_the_mapping(tmp_path):
    _needs_english_g2p()
    corpus = _words_corpus(tmp_path / "c")
    phone_map = tmp_path / "map.txt"
    phone_map.write_text("ʌ aa\n", encoding="utf-8")  # the feature mapping says ah
    # each word's pronunciation: its IPA phones as the model phones of the mapping, the override first
    mapping: dict = {}
    recordings, failed, _ = AC.read_recordings(corpus, model=api.load_model(), language="en-us",
                                               phone_map={"ʌ": "aa"}, mapping=mapping)
    assert len(recordings) == 8 and not failed and mapping["ʌ"] == "aa" and mapping["ʃ"] == "sh"
    allowed = {m.upper() for m in mapping.values()}
    assert all(r.kind == "words" and set(p for word in r.pronunciations for p in word[0]) <= allowed
               for r in recordings)

    # the English model named (--language alone means the universal model)
    report = api.adapt(corpus, tmp_path / "adapted", default_model_dir(), rounds=1, language="en-us",
                       phone_map=phone_map)
    assert report.recordings == 8 and report.rounds[0].files_used >= 6
    assert report.phone_map == dict(sorted(mapping.items()))
    adapted = AlignmentModel.load(tmp_path / "adapted")
    base = api.load_model()
    assert adapted.inventory == TIMIT39_INVENTORY and adapted.phone_symbols is None
    assert np.abs(adapted.classifier.weights - base.classifier.weights).max() > 1e-3
    record = json.loads((tmp_path / "adapted" / "manifest.json").read_text())["training"]["adapted"]
    assert record["language"] == "en-us" and record["phone_map"]["ʌ"] == "aa"
    # then align-corpus --language with the adapted model: the language's IPA phones out
    code, out = run("align-corpus", corpus, tmp_path / "aligned", "--model", tmp_path / "adapted",
                    "--language", "en-us", "--phone-map", phone_map)
    assert code == 0, out
    from aligner.io.textgrids import read_interval_tier

    grids = sorted((tmp_path / "aligned").rglob("*.TextGrid"))
    assert len(grids) == 8
    labels = {iv.label for g in grids for iv in read_interval_tier(g, "phones") if iv.label}
    assert labels <= set(mapping) and "ʃ" in labels


def test_language_references_are_read_in_its_ipa_through_the_mapping(tmp_path):
    """With --language, a reference TextGrid's phones are the language's IPA (as align-corpus
    --language writes them), each read as the model phone the mapping gives it; a symbol with
    no features is refused with one line naming the file."""
    _needs_english_g2p()
    pytest.importorskip("phonecodes.phonecodes")
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn

    corpus = _words_corpus(tmp_path / "c", n=2)
    first = TIMIT / "dr1-fvmh0" / sorted((corpus / "dr1-fvmh0").glob("*.wav"))[0].name
    u = next(x for x in find_utterances(TIMIT) if x.audio.resolve() == first.resolve())
    labels = read_phn(u.transcript)[2]
    ipa = [p.rstrip("\u031a") for p in _as_ipa(labels)]  # closures as their stops' IPA
    refs = tmp_path / "refs" / "dr1-fvmh0"
    refs.mkdir(parents=True)
    _reference(refs / u.audio.with_suffix(".TextGrid").name, u, ipa)
    mapping: dict = {}
    recordings, failed, _ = AC.read_recordings(corpus, model=api.load_model(), language="en-us",
                                               references=tmp_path / "refs", mapping=mapping)
    assert not failed
    with_ref = [r for r in recordings if r.reference is not None]
    assert len(with_ref) == 1
    ref = with_ref[0].reference
    spoken = [p for p in ipa if p != "sil"]
    silence = ref[0][2]  # the file starts in silence (h#), read as the detected set's silence
    assert silence in ("sil", "pau", "h#")
    assert [iv[2] for iv in ref if iv[2] != silence] == [mapping[p] for p in spoken]  # model phones, in order
    assert mapping["ʃ"] == "sh" and all(p in mapping for p in spoken)
    np.testing.assert_allclose(ref[0][0], 0.0)
    _reference(refs / u.audio.with_suffix(".TextGrid").name, u, ipa, rename={ipa[3]: "\u2603"})
    with pytest.raises(TranscriptError) as err:
        AC.read_recordings(corpus, model=api.load_model(), language="en-us", references=tmp_path / "refs")
    message = str(err.value)
    assert "\n" not in message and "refs" in message and u.audio.stem in message and "phone-map" in message


def test_language_refusals_are_one_line_as_align_corpus(tmp_path):
    pytest.importorskip("gruut")
    pytest.importorskip("gruut_lang_es")
    pytest.importorskip("panphon")
    corpus = _words_corpus(tmp_path / "c", n=1)
    code, out = run("adapt", corpus, tmp_path / "m", "--language", "xx")
    assert code == 1 and "pip install gruut-lang-xx" in one_line_error(out)
    code_ac, out_ac = run("align-corpus", corpus, tmp_path / "a", "--language", "xx")
    assert one_line_error(out_ac) == one_line_error(out)  # the same refusal as align-corpus
    bad_map = tmp_path / "map.txt"
    bad_map.write_text("r qq\n", encoding="utf-8")
    code, out = run("adapt", corpus, tmp_path / "m", "--language", "es", "--phone-map", bad_map,
                    "--model", default_model_dir())  # a phone map maps onto the English model's phones
    line = one_line_error(out)
    assert code == 1 and str(bad_map) in line and "'qq', which is not a phone of the model" in line
    assert not (tmp_path / "m").exists()
