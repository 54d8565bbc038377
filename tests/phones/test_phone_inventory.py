"""Models of any phone set: inventories from the data, broad classes from IPA features, training
on TextGrids of hand-aligned phones, and aligning with such a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aligner.phones.inventory import (PhoneClassError, PhoneClassEntry, build_inventory, is_closure,
                                         is_silence, normalize_symbol, read_phone_classes)
from aligner.errors import ModelError, TranscriptError
from aligner.io.textgrids import Interval, write_textgrid
from aligner.io.transcripts import read_reference_phones
from aligner.phones.sets import (BROAD_CLASS_OF, TIMIT39_INVENTORY, TIMIT61, TIMIT61_TO_39, PhoneInventory,
                               model_phone_set)

from tests.conftest import TIMIT, needs_timit, one_line_error, run


def _textgrid(path: Path, intervals, tier="phones", xmax=None):
    write_textgrid(path, [(tier, [Interval(*iv) for iv in intervals])], xmax or intervals[-1][1])
    return path


# -- the inventory ---------------------------------------------------------------------------------------------------
def test_inventory_validates_and_round_trips_through_json():
    inv = PhoneInventory(["a", "t", "sil"], ["vowel", "stop", "silence"])
    assert inv.silence == "sil" and inv.silence_index == 2 and list(inv.indices_of("vowel")) == [0]
    assert PhoneInventory.from_json(json.loads(json.dumps(inv.to_json()))) == inv
    # a model saved before inventories were stored lists the 39 classes only
    assert PhoneInventory.from_json({"classes": list(TIMIT39_INVENTORY.classes)}) is TIMIT39_INVENTORY
    with pytest.raises(ValueError, match="broad"):
        PhoneInventory.from_json({"classes": ["a", "sil"]})
    with pytest.raises(ValueError, match="exactly one silence"):
        PhoneInventory(["a", "b"], ["vowel", "stop"])
    with pytest.raises(ValueError, match="unknown broad class"):
        PhoneInventory(["a", "sil"], ["vowl", "silence"])
    with pytest.raises(ValueError, match="distinct"):
        PhoneInventory(["a", "a", "sil"], ["vowel", "vowel", "silence"])


def test_a_models_phone_set_is_case_sensitive_and_unicode_normalised():
    inv = PhoneInventory(["A", "a", "sil"], ["vowel", "vowel", "silence"])
    pset = model_phone_set(inv, {"A": "A", "a": "a", "e\u0301": "a", "sil": "sil"})
    assert list(pset.class_indices(["A", "a", "\u00e9", "sil"])) == [0, 1, 1, 2]  # é precomposed = e + accent
    assert "E" not in pset
    with pytest.raises(TranscriptError, match="unknown phone 'E'"):
        pset.validate(["a", "E"], "t.txt")


def test_silences_and_closures_share_the_silence_class_and_keep_their_spellings():
    counts = {normalize_symbol(k): v for k, v in {"sil": 40, "b̚": 30, "b": 30, "a": 50, "sp": 25, "<p:>": 20}.items()}
    entries = {"b": PhoneClassEntry("stop"), "a": PhoneClassEntry("vowel")}
    choice = build_inventory(counts, "auto", entries)
    assert choice.inventory.silence == "sil"
    assert {s for s, c in choice.symbol_class.items() if c == "sil"} == {"sil", "b̚", "sp", "<p:>"}
    assert is_closure("d̚") and is_closure("dcl") and not is_closure("d")
    assert is_silence("") and is_silence("SIL") and not is_silence("s")


def test_rare_symbols_join_the_nearest_frequent_class_of_their_broad_class():
    pytest.importorskip("panphon")
    counts = {"sil": 100, "s": 80, "ʃ": 60, "ʒ": 3, "i": 90, "u": 70, "ʉ": 2, "t": 50}
    choice = build_inventory(counts, "ipa", min_tokens=20)
    assert choice.folded == {"ʒ": "ʃ", "ʉ": "u"}  # by phonological features, not by count (s is commoner)
    assert choice.inventory.classes == ("i", "s", "t", "u", "ʃ", "sil")
    assert dict(zip(choice.inventory.classes, choice.inventory.broad))["ʃ"] == "fricative"
    # the only one of its broad class stays a class of its own, however rare
    lone = build_inventory({"sil": 10, "a": 30, "m": 2}, "ipa")
    assert "m" in lone.inventory.classes and not lone.folded


def test_broad_classes_from_ipa_features_agree_with_the_timit_table():
    pytest.importorskip("panphon")
    phonecodes = pytest.importorskip("phonecodes.phonecodes")
    from aligner.phones.inventory import broad_class_of_ipa

    for s in TIMIT61:
        if is_closure(s) or s in ("h#", "pau", "epi"):
            continue
        ipa = phonecodes.convert(s, "timit", "ipa")
        assert broad_class_of_ipa(ipa) == BROAD_CLASS_OF[TIMIT61_TO_39[s]], (s, ipa)
    # other languages' phones
    expect = {"ɲ": "nasal", "ʎ": "glide", "r": "glide", "x": "fricative", "β": "fricative", "ã": "vowel",
              "y": "vowel", "t͡s": "affricate", "ts": "affricate", "ʁ": "fricative", "ɐ̃w̃": "vowel", "ɬ": "fricative"}
    assert {k: broad_class_of_ipa(k) for k in expect} == expect


def test_symbols_of_no_code_need_a_phone_classes_file(tmp_path):
    pytest.importorskip("panphon")
    with pytest.raises(PhoneClassError, match=r"corpus/a\.TextGrid: phone 'p01' has no phonological features"):
        build_inventory({"sil": 5, "p01": 30}, "ipa", where={"p01": "corpus/a.TextGrid"})
    table = tmp_path / "classes.txt"
    table.write_text("# names and their broad classes\np01 vowel\np02\tstop\np03 stop p02\n", encoding="utf-8")
    entries = read_phone_classes(table)
    choice = build_inventory({"sil": 5, "p01": 30, "p02": 30, "p03": 30}, "auto", entries)
    assert choice.symbol_class == {"sil": "sil", "p01": "p01", "p02": "p02", "p03": "p02"}
    assert choice.source["p01"] == "file"


@pytest.mark.parametrize("text, message", [
    ("p01 vowl\n", r"classes\.txt:1: unknown broad class 'vowl'"),
    ("p01 vowel\np01 stop\n", r"classes\.txt:2: symbol 'p01' listed twice"),
    ("p01 vowel a b\n", r"classes\.txt:1: expected 'SYMBOL BROAD_CLASS \[CLASS\]'"),
    ("# nothing\n", r"classes\.txt: no phone classes"),
])
def test_bad_phone_classes_files_name_the_line(tmp_path, text, message):
    path = tmp_path / "classes.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PhoneClassError, match=message):
        read_phone_classes(path)


def test_a_class_keeps_one_broad_class():
    entries = {"p01": PhoneClassEntry("vowel"), "p02": PhoneClassEntry("stop", "p01")}
    with pytest.raises(PhoneClassError, match="a class has one broad class"):
        build_inventory({"sil": 5, "p01": 30, "p02": 30}, "auto", entries)
    with pytest.raises(PhoneClassError, match="neither a symbol"):
        build_inventory({"sil": 5, "p01": 30}, "auto", {"p01": PhoneClassEntry("vowel", "zz")})


# -- reading hand-aligned phones -------------------------------------------------------------------------------------
def test_reference_phones_keep_empty_intervals_and_refuse_broken_tiers(tmp_path):
    good = _textgrid(tmp_path / "a.TextGrid", [(0, 0.1, ""), (0.1, 0.25, "a"), (0.25, 0.4, "t"), (0.4, 0.5, "")])
    starts, ends, labels = read_reference_phones(good)
    assert labels == ["", "a", "t", ""] and starts[1] == pytest.approx(0.1) and ends[-1] == pytest.approx(0.5)
    with pytest.raises(TranscriptError, match=r"tier 'segments' not found \(interval tiers: 'phones'\)"):
        read_reference_phones(good, "segments")
    text = good.read_text(encoding="utf-8")
    zero = tmp_path / "zero.TextGrid"
    zero.write_text(text.replace("xmax = 0.25\n", "xmax = 0.1\n", 1).replace("xmin = 0.25\n", "xmin = 0.1\n", 1),
                    encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"zero-length interval at 0\.1 s \('a'\)"):
        read_reference_phones(zero)
    gap = tmp_path / "gap.TextGrid"
    gap.write_text(text.replace("xmin = 0.25\n", "xmin = 0.3\n", 1), encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"gap between 0\.25 and 0\.3 s"):
        read_reference_phones(gap)
    overlap = tmp_path / "overlap.TextGrid"
    overlap.write_text(text.replace("xmin = 0.25\n", "xmin = 0.2\n", 1), encoding="utf-8")
    with pytest.raises(TranscriptError, match="overlap"):
        read_reference_phones(overlap)
    empty = _textgrid(tmp_path / "empty.TextGrid", [(0, 0.5, "")])
    with pytest.raises(TranscriptError, match="holds no labelled intervals"):
        read_reference_phones(empty)


# -- training and aligning ---------------------------------------------------------------------------------------------
def _ipa_corpus(root: Path, n_speakers=4, per_speaker=2, rename=None):
    """A few TIMIT utterances as TextGrids of IPA phones (closures as b̚, silence empty), in
    speaker folders, the audio linked."""
    phonecodes = pytest.importorskip("phonecodes.phonecodes")
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn

    utts = find_utterances(TIMIT)
    speakers = sorted({u.speaker for u in utts})[:n_speakers]
    chosen = [u for s in speakers for u in [v for v in utts if v.speaker == s][:per_speaker]]
    for u in chosen:
        starts, ends, labels = read_phn(u.transcript)
        ipa = ["" if s in ("h#", "pau", "epi") else "ʔ" if s == "q"
               else phonecodes.convert(s[0], "timit", "ipa") + "\u031a" if s.endswith("cl")
               else phonecodes.convert(s, "timit", "ipa") for s in labels]
        if rename is not None:
            ipa = [rename.setdefault(s, f"p{len(rename) + 1:02d}") if s else "" for s in ipa]
        out = root / Path(u.name)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".wav").symlink_to(u.audio.resolve())
        _textgrid(out.with_suffix(".TextGrid"), [(a / 16000, b / 16000, s) for a, b, s in zip(starts, ends, ipa)])
    return [u for u in utts if u.speaker not in speakers]


@needs_timit
def test_train_on_ipa_textgrids_and_align_with_the_model(tmp_path):
    pytest.importorskip("panphon")
    from aligner import api
    from aligner.alignment.model import AlignmentModel

    held_out = _ipa_corpus(tmp_path / "corpus")
    seen = []
    model = api.train(tmp_path / "corpus", tmp_path / "model", trainer_params={"epochs": 1},
                      classifier_params={"hidden": 64, "epochs": 10},
                      n_folds=2, n_val_speakers=1, phones_tier="phones", on_inventory=seen.append)
    assert seen and seen[0].inventory is model.inventory
    assert model.inventory != TIMIT39_INVENTORY and model.classifier.n_classes == len(model.inventory)
    # the refiner was fitted after the model was made: it reads the model's broad classes all the same
    np.testing.assert_array_equal(model.refiner.broad_of_class, model.inventory.broad_indices)
    closures = [s for s in model.phone_set.symbols if is_closure(s)]
    assert closures and all(model.phone_set.class_of(s) == "sil" for s in closures + ["sil"])
    loaded = AlignmentModel.load(tmp_path / "model")
    assert loaded.inventory == model.inventory and loaded.phone_symbols == model.phone_symbols
    np.testing.assert_array_equal(loaded.refiner.broad_of_class, model.inventory.broad_indices)

    # align a held-out utterance given in the model's own symbols
    import phonecodes.phonecodes as pc

    from aligner.io.transcripts import read_phn

    def as_ipa(labels):
        return [normalize_symbol("sil" if s in ("h#", "pau", "epi") else "ʔ" if s == "q" else
                                 pc.convert(s[0], "timit", "ipa") + "\u031a" if s.endswith("cl")
                                 else pc.convert(s, "timit", "ipa")) for s in labels]

    # the first held-out utterance whose phones the small training set all had
    test, ipa = next((u, as_ipa(read_phn(u.transcript)[2])) for u in held_out
                     if all(s in model.phone_set for s in as_ipa(read_phn(u.transcript)[2])))
    intervals = api.align(test.audio, ipa, model=tmp_path / "model")
    assert [iv.label for iv in intervals] == ipa
    times = np.array([iv.start_s for iv in intervals])
    assert times[0] == 0 and np.all(np.diff(times) > 0)

    # the command line: align with the model; a standard phone set, or words, are refused in one line
    phones = tmp_path / "t.txt"
    phones.write_text(" ".join(ipa), encoding="utf-8")
    code, out = run("align", test.audio, phones, "-o", tmp_path / "t.TextGrid", "--model", tmp_path / "model")
    assert code == 0, out
    code, out = run("align", test.audio, phones, "-o", tmp_path / "u.TextGrid", "--model", tmp_path / "model",
                    "--phone-set", "timit61")
    assert code == 1 and "trained on its own phones" in one_line_error(out)
    code, out = run("align", test.audio, "she had your dark suit", "-o", tmp_path / "w.TextGrid",
                    "--model", tmp_path / "model", "--transcript", "words")
    assert code == 1 and "word transcripts need a --dictionary in those phones" in one_line_error(out)

    # words, with a dictionary in the model's phones (here: each word's phones in the reference)
    from aligner.io.transcripts import read_sample_intervals

    starts, ends, labels = read_phn(test.transcript)
    phones_ipa = as_ipa(labels)
    w_starts, w_ends, words = read_sample_intervals(test.transcript.with_suffix(".wrd"), "words", "word")
    lines = {}
    for a, b, w in zip(w_starts, w_ends, words):
        lines.setdefault(w, " ".join(p for s, e, p in zip(starts, ends, phones_ipa) if s >= a and e <= b))
    lexicon = tmp_path / "lexicon.txt"
    lexicon.write_text("".join(f"{w}\t{p}\n" for w, p in lines.items()), encoding="utf-8")
    result = api.align_words(test.audio, " ".join(words), model=tmp_path / "model", dictionary=lexicon)
    aligned = dict(result.tiers)
    assert [iv.label for iv in aligned["words"]] == list(words)
    word_err = np.mean([abs(iv.start_s - a / 16000) for iv, a in zip(aligned["words"], w_starts)])
    assert word_err < 0.05  # a tiny model, but the words land near their references
    # a corpus of such words, and of phones in the model's symbols, through align-corpus's workers
    corpus = tmp_path / "to-align" / "spk"
    corpus.mkdir(parents=True)
    (corpus / "w.wav").symlink_to(test.audio.resolve())
    (corpus / "w.lab").write_text(" ".join(words), encoding="utf-8")
    code, out = run("align-corpus", corpus.parent, tmp_path / "aligned", "--model", tmp_path / "model",
                    "--dictionary", lexicon, "--jobs", "2")
    assert code == 0 and (tmp_path / "aligned" / "spk" / "w.TextGrid").is_file(), out
    (corpus / "p.wav").symlink_to(test.audio.resolve())
    (corpus / "p.phones").write_text(" ".join(ipa), encoding="utf-8")
    code, out = run("align-corpus", corpus.parent, tmp_path / "aligned-phones", "--model", tmp_path / "model",
                    "--transcript", "phones")
    assert code == 0 and (tmp_path / "aligned-phones" / "spk" / "p.TextGrid").is_file(), out
    # vowels from an alignment in the model's own phones: the model's broad classes say which are vowels
    csv = tmp_path / "vowels.csv"
    code, out = run("vowels", test.audio, "--mode", "align", "--alignment-model", tmp_path / "model",
                    "--transcript", phones, "-o", csv, "--no-fuse")
    assert code == 0, out
    rows = csv.read_text(encoding="utf-8").splitlines()[1:]
    vowels_given = [p for p in ipa if model.inventory.broad[model.inventory.index(model.phone_set.class_of(p))]
                    == "vowel"]
    assert len(rows) == len(vowels_given) > 3
    bad = tmp_path / "bad-lexicon.txt"
    bad.write_text("dark d ɑ ɹ kk\n", encoding="utf-8")
    code, out = run("align", test.audio, "dark", "-o", tmp_path / "d.TextGrid", "--model", tmp_path / "model",
                    "--dictionary", bad)
    assert code == 1 and "phone 'kk' in the pronunciation of 'dark' is not one of the model's phones" in \
        one_line_error(out)

    # a damaged inventory in the model's JSON is one ModelError
    params = tmp_path / "model" / "params.json"
    if params.is_file():
        bad = json.loads(params.read_text(encoding="utf-8"))
        bad["alignment"]["phone_symbols"]["zz"] = "nope"
        (tmp_path / "bad").mkdir()
        for f in (tmp_path / "model").iterdir():
            (tmp_path / "bad" / f.name).write_bytes(f.read_bytes())
        (tmp_path / "bad" / "params.json").write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(ModelError):
            AlignmentModel.load(tmp_path / "bad")


@needs_timit
def test_meaningless_names_train_with_a_phone_classes_file(tmp_path):
    from aligner.alignment.training import read_training_corpus

    names: dict = {}
    _ipa_corpus(tmp_path / "corpus", n_speakers=2, per_speaker=1, rename=names)
    with pytest.raises(PhoneClassError, match="has no phonological features|needs the panphon"):
        read_training_corpus(tmp_path / "corpus")
    from aligner.phones.inventory import broad_class_of_ipa

    pytest.importorskip("panphon")
    table = tmp_path / "classes.txt"
    table.write_text("".join(f"{n}\t{'silence' if is_closure(ipa) else broad_class_of_ipa(ipa)}\n"
                             for ipa, n in names.items()), encoding="utf-8")
    corpus = read_training_corpus(tmp_path / "corpus", phone_classes=table)
    assert corpus.phone_set is not None and all(src == "file" for s, src in corpus.choice.source.items() if s != "sil")
    closures = [n for ipa, n in names.items() if is_closure(ipa)]
    assert closures and all(corpus.phone_set.class_of(n) == "sil" for n in closures)


@needs_timit
def test_phones_running_past_the_audio_are_refused(tmp_path):
    from aligner.alignment.training import load_utterances, read_training_corpus

    _ipa_corpus(tmp_path / "corpus", n_speakers=1, per_speaker=1)
    grid = next((tmp_path / "corpus").rglob("*.TextGrid"))
    starts, ends, labels = read_reference_phones(grid)
    _textgrid(grid, [(a, b, s) for a, b, s in zip(starts, ends, labels)] + [(ends[-1], ends[-1] + 1.0, "a")])
    corpus = read_training_corpus(tmp_path / "corpus", phone_classes=None, phone_code="ipa", min_class_tokens=1)
    with pytest.raises(TranscriptError, match="past the end of"):
        load_utterances(corpus.utterances, warps=(), phone_set=corpus.phone_set, tier=corpus.tier)


@needs_timit
def test_train_cli_names_the_file_for_a_missing_tier_or_an_unreadable_symbol(tmp_path):
    pytest.importorskip("panphon")
    _ipa_corpus(tmp_path / "corpus", n_speakers=1, per_speaker=1)
    code, out = run("train", tmp_path / "corpus", tmp_path / "m", "--phones-tier", "segments")
    assert code == 1 and "tier 'segments' not found (interval tiers: 'phones')" in one_line_error(out)
    grid = next((tmp_path / "corpus").rglob("*.TextGrid"))
    starts, ends, labels = read_reference_phones(grid)
    _textgrid(grid, [(a, b, "q9" if i == 3 else s) for i, (a, b, s) in enumerate(zip(starts, ends, labels))])
    code, out = run("train", tmp_path / "corpus", tmp_path / "m")
    assert code == 1 and f"{grid}: phone 'q9' has no phonological features" in one_line_error(out)
    assert not (tmp_path / "m").exists()
    code, out = run("train", "--help")
    assert "--phones-tier" in out and "--phone-classes" in out and "--phone-code" in out


def test_a_training_corpus_leaves_out_bad_files_and_names_each(tmp_path):
    """An empty phones tier, a file without one, phones running past the audio: each file is left
    out with a one-line message naming it, the others are read (a UTF-16 TextGrid among them)."""
    import soundfile as sf
    from aligner.alignment.training import load_utterances, read_training_corpus

    pytest.importorskip("panphon")
    corpus = tmp_path / "corpus" / "xyz"
    corpus.mkdir(parents=True)
    rng = np.random.default_rng(0)
    good = [(0.0, 0.2, ""), (0.2, 0.5, "a"), (0.5, 0.7, "t'"), (0.7, 1.0, "")]
    for name, tiers in {"good": [("words", [(0.2, 0.7, "at")]), ("phones", good)],
                        "empty": [("phones", [])],
                        "no-tier": [("words", [(0.0, 1.0, "a")]), ("segs", [(0.0, 1.0, "a")])],
                        "too-long": [("phones", good + [(1.0, 2.0, "a")])]}.items():
        sf.write(corpus / f"{name}.wav", (0.1 * rng.standard_normal(16000)).astype(np.float32), 16000)
        write_textgrid(corpus / f"{name}.TextGrid", [(n, [Interval(*iv) for iv in ivs]) for n, ivs in tiers],
                       max(iv[1] for _, ivs in tiers for iv in ivs) if any(ivs for _, ivs in tiers) else 1.0)
    grid = corpus / "good.TextGrid"
    grid.write_bytes("\ufeff".encode("utf-16-be") + grid.read_text(encoding="utf-8").encode("utf-16-be"))
    read = read_training_corpus(tmp_path / "corpus", min_class_tokens=1)
    left_out = {u.name: message for u, message in read.failed}
    assert set(left_out) == {"xyz/empty", "xyz/no-tier"}
    assert all("\n" not in m for m in left_out.values())
    assert "holds no labelled intervals" in left_out["xyz/empty"] and "no phones tier" in left_out["xyz/no-tier"]
    failed: list = []
    data = load_utterances(read.utterances, warps=(), phone_set=read.phone_set, tier=read.tier, failed=failed)
    assert [d.name for d in data] == ["xyz/good"] and data[0].symbols == ["sil", "a", "t'", "sil"]
    assert [(u.name, "past the end of" in m) for u, m in failed] == [("xyz/too-long", True)]
    with pytest.raises(TranscriptError, match="past the end of"):
        load_utterances(read.utterances, warps=(), phone_set=read.phone_set, tier=read.tier)
