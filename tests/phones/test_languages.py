"""Aligning a language the model never heard (--language): G2P, feature mapping, IPA phones out."""

from __future__ import annotations

from pathlib import Path

import pytest

from aligner.phones.inventory import PhoneClassError
from aligner.phones.languages import language_words, phone_mapping, read_phone_map

from tests.conftest import TIMIT, needs_timit, one_line_error, run


def test_words_of_any_language_keep_letters_and_drop_annotations():
    assert language_words("¿Dónde está el niño? [risa] <ruido> L'homme arc-en-ciel 12") == [
        "dónde", "está", "el", "niño", "l'homme", "arc-en-ciel", "12"]
    assert language_words("  ") == []


def test_phones_map_to_the_closest_model_phone_unless_a_map_says_otherwise(tmp_path):
    pytest.importorskip("panphon")
    pytest.importorskip("phonecodes")
    from aligner.alignment.pipeline import load_model

    model = load_model()
    mapping = phone_mapping(["ʃ", "i", "g", "ɲ", "θ", "β"], model)
    assert mapping["ʃ"] == "sh" and mapping["i"] == "iy" and mapping["g"] == "g"  # ASCII g read as IPA ɡ
    assert mapping["ɲ"] in ("n", "ng") and mapping["θ"] == "th"
    assert mapping["β"] in ("b", "v")
    table = tmp_path / "map.txt"
    table.write_text("# trill as the English r\nr r\nβ b\n", encoding="utf-8")
    overrides = read_phone_map(table)
    assert phone_mapping(["r", "β"], model, overrides) == {"r": "r", "β": "b"}
    with pytest.raises(PhoneClassError, match="'ʀ' to 'qq', which is not a phone of the model"):
        phone_mapping(["ʀ"], model, {"ʀ": "qq"})
    with pytest.raises(PhoneClassError, match="has no phonological features"):
        phone_mapping(["5"], model)
    bad = tmp_path / "bad.txt"
    bad.write_text("r\n", encoding="utf-8")
    with pytest.raises(PhoneClassError, match=r"bad\.txt:1: expected 'LANGUAGE_PHONE MODEL_PHONE'"):
        read_phone_map(bad)


@needs_timit
def test_align_spanish_words_writes_spanish_phones_and_prints_the_mapping(tmp_path):
    pytest.importorskip("gruut")
    pytest.importorskip("gruut_lang_es")
    pytest.importorskip("panphon")
    audio = TIMIT / "dr1-fvmh0" / "sa1.wav"
    out = tmp_path / "es.TextGrid"
    english = Path(__file__).resolve().parents[2] / "models" / "timit-alignment"  # (the universal model needs no map)
    code, output = run("align", audio, "El perro come pan en la casa", "-o", out, "--language", "es",
                       "--model", english)
    assert code == 0, output
    assert "es phones aligned as model phones:" in output and "ɲ" not in output  # only the phones met
    from aligner.io.textgrids import read_interval_tier

    words = [iv.label for iv in read_interval_tier(out, "words") if iv.label]
    phones = [iv.label for iv in read_interval_tier(out, "phones") if iv.label]
    assert words == ["el", "perro", "come", "pan", "en", "la", "casa"]
    assert phones[:6] == ["e", "l", "p", "e", "r", "o"]  # the language's own IPA, not ARPAbet


@needs_timit
def test_unknown_language_is_one_line_naming_the_pack(tmp_path):
    pytest.importorskip("gruut")
    code, output = run("align", TIMIT / "dr1-fvmh0" / "sa1.wav", "hallo", "-o", tmp_path / "x.TextGrid",
                       "--language", "xx")
    assert code == 1 and "pip install gruut-lang-xx" in one_line_error(output)


@needs_timit
@pytest.mark.parametrize("command", ["align", "align-corpus", "adapt"])
def test_a_phone_map_without_a_language_is_refused(tmp_path, command):
    mapping = tmp_path / "map.txt"
    mapping.write_text("r ɹ\n")
    wav = TIMIT / "dr1-fvmh0" / "sa1.wav"
    if command == "align":
        args = ("align", wav, "she had your dark suit", "-o", tmp_path / "x.TextGrid")
    elif command == "align-corpus":
        args = ("align-corpus", TIMIT / "dr1-fvmh0", tmp_path / "out")
    else:
        args = ("adapt", TIMIT / "dr1-fvmh0", tmp_path / "adapted")
    code, output = run(*args, "--phone-map", mapping)
    assert code != 0 and "give the language too" in one_line_error(output)
    assert not (tmp_path / "x.TextGrid").exists() and not (tmp_path / "out").exists()
    assert not (tmp_path / "adapted").exists()
