"""`aligner align`, `align-corpus` and `evaluate` end to end with the shipped model, and bad input."""

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from aligner.io.bundles import default_model_dir
from aligner.io.textgrids import read_interval_tier

from tests.conftest import TIMIT, needs_timit, one_line_error, run

REPO = Path(__file__).resolve().parents[2]
DEMO_WAV = REPO / "examples" / "demo.wav"
DEMO_PHONES = REPO / "examples" / "demo.phones"


@pytest.fixture
def demo(tmp_path):
    wav = tmp_path / "demo.wav"
    shutil.copy(DEMO_WAV, wav)
    return wav


def test_align_demo_writes_textgrid_with_input_symbols(demo):
    code, out = run("align", demo, DEMO_PHONES)
    assert code == 0, out
    tg = demo.with_suffix(".TextGrid")
    intervals = read_interval_tier(tg, "phones")
    symbols = DEMO_PHONES.read_text().split()
    assert [label for _, _, label in intervals] == symbols
    starts = [s for s, _, _ in intervals]
    assert starts[0] == 0.0 and all(a < b for a, b in zip(starts, starts[1:]))
    assert intervals[-1][1] == pytest.approx(sf.info(str(demo)).duration, abs=1e-4)


def test_align_inline_phones_and_output_option(demo, tmp_path):
    out_tg = tmp_path / "sub" / "x.TextGrid"
    code, out = run("align", demo, DEMO_PHONES.read_text().strip(), "-o", out_tg)
    assert code == 0, out
    assert len(read_interval_tier(out_tg, "phones")) == len(DEMO_PHONES.read_text().split())


@pytest.mark.parametrize("rate,channels", [(8000, 1), (44100, 2)])
def test_other_rates_and_stereo_are_aligned(demo, tmp_path, rate, channels):
    import librosa

    audio, sr = sf.read(str(demo))
    audio = librosa.resample(audio, orig_sr=sr, target_sr=rate)
    if channels == 2:
        audio = np.stack([audio, 0.5 * audio], axis=1)
    path = tmp_path / f"demo_{rate}.wav"
    sf.write(path, audio, rate)
    code, out = run("align", path, DEMO_PHONES)
    assert code == 0, out
    assert len(read_interval_tier(path.with_suffix(".TextGrid"), "phones")) == 36


def bad_case(tmp_path, kind):
    """(audio, phones, extra args, text expected in the error)."""
    wav = tmp_path / "a.wav"
    phones = str(DEMO_PHONES)
    extra = []
    if kind == "missing":
        return tmp_path / "nope.wav", phones, extra, "not found"
    if kind == "not_audio":
        wav.write_text("hello, I am text")
        return wav, phones, extra, "not a readable audio file"
    if kind == "empty_audio":
        sf.write(wav, np.zeros(0, dtype=np.float32), 16000)
        return wav, phones, extra, str(wav)
    if kind == "silent_audio":
        sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
        return wav, phones, extra, "silent"
    shutil.copy(DEMO_WAV, wav)
    if kind == "unknown_symbol":
        return wav, "sil HH AH0 QQ OW1 sil", extra, "QQ"
    if kind == "too_many_phones":
        return wav, " ".join(["AA"] * 400), extra, "400 phones"
    if kind == "empty_transcript":
        empty = tmp_path / "empty.phones"
        empty.write_text("  \n")
        return wav, str(empty), extra, "empty"
    if kind in ("model_missing_file", "model_corrupted"):
        model = tmp_path / "model"
        shutil.copytree(default_model_dir(), model)
        victim = model / "classifier.npz"
        if kind == "model_missing_file":
            victim.unlink()
            expect = "missing"
        else:
            victim.write_bytes(victim.read_bytes()[:1000])
            expect = "corrupted"
        return wav, phones, ["--model", model], expect
    raise ValueError(kind)


@pytest.mark.parametrize("kind", [
    "missing", "not_audio", "empty_audio", "silent_audio", "unknown_symbol", "too_many_phones",
    "empty_transcript", "model_missing_file", "model_corrupted",
])
def test_bad_input_gives_one_line_error_and_no_textgrid(tmp_path, kind):
    audio, phones, extra, expected = bad_case(tmp_path, kind)
    out_tg = tmp_path / "out.TextGrid"
    code, out = run("align", audio, phones, "-o", out_tg, *extra)
    assert code == 1, out
    assert expected in one_line_error(out)
    assert not out_tg.exists()
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_align_corpus_goes_on_past_bad_files(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "spk").mkdir(parents=True)
    shutil.copy(DEMO_WAV, corpus / "spk" / "good.wav")
    (corpus / "spk" / "good.phn").write_text("\n".join(DEMO_PHONES.read_text().split()) + "\n")
    (corpus / "spk" / "bad.wav").write_text("not audio")
    (corpus / "spk" / "bad.phn").write_text("sil\nAA\nsil\n")
    (corpus / "spk" / "lonely.wav").write_bytes(DEMO_WAV.read_bytes())  # no transcript: skipped
    out_dir = tmp_path / "out"
    code, out = run("align-corpus", corpus, out_dir)
    assert code == 1
    assert (out_dir / "spk" / "good.TextGrid").is_file()
    assert not (out_dir / "spk" / "bad.TextGrid").exists()
    assert "1 files failed" in out and "bad.wav" in out


@needs_timit
def test_align_corpus_and_evaluate_on_timit_speaker(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(TIMIT / "dr1-fvmh0", corpus / "dr1-fvmh0")
    out_dir = tmp_path / "out"
    code, out = run("align-corpus", corpus, out_dir, "--jobs", "2")
    assert code == 0, out
    assert len(list(out_dir.rglob("*.TextGrid"))) == 10
    code, out = run("evaluate", corpus, out_dir, "--json")
    assert code == 0, out
    import json

    scores = json.loads(out.strip().splitlines()[-1])
    assert scores["n_utterances"] == 10
    # a broken pipeline (time convention, features, weights) falls far below this: the
    # duration-only baseline places 14 % of TIMIT boundaries within 20 ms; the model 77 % here
    assert scores["within_ms"]["20"] > 70.0


def test_corpus_collisions_mp3_and_skipped_files_are_reported(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    audio, sr = sf.read(str(DEMO_WAV))
    sf.write(corpus / "dup.wav", audio, sr)
    sf.write(corpus / "dup.flac", audio, sr)
    sf.write(corpus / "song.mp3", audio, sr, format="MP3")
    sf.write(corpus / "lonely.wav", audio, sr)
    for stem in ("dup", "song"):
        (corpus / f"{stem}.phn").write_text("\n".join(DEMO_PHONES.read_text().split()) + "\n")
    code, out = run("align-corpus", corpus, tmp_path / "out")
    assert code == 1
    assert "aligned 2 files" in out and "is also that of" in out  # dup.flac collides with dup.wav
    assert (tmp_path / "out" / "song.TextGrid").is_file()  # .mp3 found and aligned
    assert "skipped 1 audio files" in out and "lonely.wav" in out


def test_vowels_refuses_to_overwrite_its_input(tmp_path):
    wav = tmp_path / "v.wav"
    shutil.copy(DEMO_WAV, wav)
    code, out = run("vowels", wav, "-o", wav)
    assert code == 1 and "would overwrite the input" in one_line_error(out)
    assert wav.read_bytes() == DEMO_WAV.read_bytes()


def test_a_file_name_that_is_not_utf8_works_and_prints(tmp_path):
    import os

    name = os.fsdecode(b"caf\xe9.wav")  # Latin-1 bytes: a surrogate escape in Python
    wav = tmp_path / name
    shutil.copy(DEMO_WAV, wav)
    code, out = run("align", wav, DEMO_PHONES)
    assert code == 0, out
    assert "caf\\xe9.TextGrid" in out and wav.with_suffix(".TextGrid").is_file()
    code, out = run("align", wav, "sil HH AH0 QQ OW1 sil")
    assert code == 1 and "QQ" in one_line_error(out)


def test_boundary_confidences_and_a_transcript_that_does_not_match(demo, tmp_path):
    import csv
    import textgrid

    out = tmp_path / "demo.csv"
    code, _ = run("align", demo, DEMO_PHONES, "-o", out, "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(out.read_text().splitlines()))
    values = [float(r["Confidence"]) for r in rows]
    assert len(values) == len(DEMO_PHONES.read_text().split()) and all(0 <= v <= 1 for v in values)
    grid = tmp_path / "demo.TextGrid"
    code, _ = run("align", demo, REPO / "examples" / "demo.lab", "-o", grid, "--confidence-tier")
    assert code == 0
    names = [t.name for t in textgrid.TextGrid.fromFile(str(grid)).tiers]
    assert names == ["words", "phones", "words confidence", "phones confidence"]
    code, output = run("align", demo, "the cat sat on the mat in the morning", "-o", tmp_path / "x.TextGrid")
    assert code == 0  # aligned all the same, with a warning
    assert "the transcript probably does not match" in output


@needs_timit
def test_align_corpus_ends_with_where_to_look(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    wavs = sorted(TIMIT.rglob("*.wav"))[:4]
    for w in wavs:
        shutil.copy(w, corpus / w.name)
        shutil.copy(w.with_suffix(".phn"), corpus / w.with_suffix(".phn").name)
    # one recording with another's transcript
    shutil.copy(wavs[1].with_suffix(".phn"), corpus / wavs[0].with_suffix(".phn").name)
    code, output = run("align-corpus", corpus, tmp_path / "out")
    assert code == 0
    assert "probably do not match their audio" in output and wavs[0].stem in output
    assert "least confident" in output
