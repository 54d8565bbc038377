"""`aligner adapt` on a corpus folder: the bundle it writes, and bad input refused with one line.

The core (what is re-estimated and how) is tested in tests/adaptation/test_adaptation.py; here the corpus
around it: reading, references, MODEL_OUT, the report, the command line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aligner import api
from aligner.alignment.adaptation import corpus as AC
from aligner.cli import main
from aligner.errors import AlignerError, ModelError, TranscriptError
from aligner.io.bundles import default_model_dir
from aligner.io.textgrids import write_textgrid
from aligner.io.transcripts import read_phn

from tests.conftest import TIMIT, needs_timit

pytestmark = pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")


def _corpus(root: Path, speakers=("dr1-fvmh0",), n: int = 10, suffixes=(".wav", ".txt")) -> Path:
    """An MFA-layout corpus of TIMIT recordings with their words (``.txt``), one folder per speaker."""
    for spk in speakers:
        (root / spk).mkdir(parents=True, exist_ok=True)
        for wav in sorted((TIMIT / spk).glob("*.wav"))[:n]:
            for suffix in suffixes:
                shutil.copy(wav.with_suffix(suffix), root / spk / wav.with_suffix(suffix).name)
    return root


def _reference_grid(wav: Path, out: Path, edit=None) -> Path:
    """The TIMIT .phn of ``wav`` as a reference TextGrid (a phones tier), optionally edited."""
    starts, ends, labels = read_phn(wav.with_suffix(".phn"))
    intervals = [(s / 16000, e / 16000, lab) for s, e, lab in zip(starts, ends, labels)]
    if edit is not None:
        intervals = edit(intervals)
    xmax = max(e for _, e, _ in intervals)
    # written by hand: write_textgrid itself refuses overlapping intervals
    lines = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "xmin = 0", f"xmax = {xmax}",
             "tiers? <exists>", "size = 1", "item []:", "    item [1]:", '        class = "IntervalTier"',
             '        name = "phones"', "        xmin = 0", f"        xmax = {xmax}",
             f"        intervals: size = {len(intervals)}"]
    for i, (s, e, lab) in enumerate(intervals, 1):
        lines += [f"        intervals [{i}]:", f"            xmin = {s}", f"            xmax = {e}",
                  f'            text = "{lab}"']
    out.write_text("\n".join(lines) + "\n")
    return out


# -- refused before any work ------------------------------------------------------------------

def test_a_corpus_without_transcripts_is_refused(tmp_path):
    corpus = tmp_path / "c" / "spk"
    corpus.mkdir(parents=True)
    (corpus / "a.wav").write_bytes(b"RIFF")
    with pytest.raises(AlignerError, match=r"no audio file with a transcript .* nothing to adapt on"):
        api.adapt(tmp_path / "c", tmp_path / "out")
    with pytest.raises(AlignerError, match="corpus directory not found"):
        api.adapt(tmp_path / "nowhere", tmp_path / "out")


@needs_timit
def test_model_out_inside_the_corpus_or_equal_to_the_base_is_refused(tmp_path):
    corpus = _corpus(tmp_path / "c", n=1)
    with pytest.raises(AlignerError, match="inside the corpus"):
        api.adapt(corpus, corpus / "model")
    base = tmp_path / "base"
    shutil.copytree(default_model_dir("alignment"), base)
    with pytest.raises(AlignerError, match="this is the base model"):
        api.adapt(corpus, base, model=base)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(AlignerError, match="not a model bundle"):
        api.adapt(corpus, tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


@needs_timit
def test_a_damaged_base_is_refused_naming_it(tmp_path):
    corpus = _corpus(tmp_path / "c", n=1)
    base = tmp_path / "base"
    shutil.copytree(default_model_dir("alignment"), base)
    (base / "classifier.npz").write_bytes(b"garbage")
    with pytest.raises(ModelError, match=r"base model: .*base"):
        api.adapt(corpus, tmp_path / "out", model=base)
    assert not (tmp_path / "out").exists()


@needs_timit
def test_too_little_speech_says_the_minimum(tmp_path):
    corpus = _corpus(tmp_path / "c", n=2)  # about 6 s
    with pytest.raises(AlignerError, match=rf"adapting needs at least {AC.MIN_ADAPT_SECONDS:.0f} s"):
        api.adapt(corpus, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@needs_timit
@pytest.mark.parametrize("damage, message", [
    (lambda ivs: [(s, e, "xx9" if i == 3 else lab) for i, (s, e, lab) in enumerate(ivs)], "xx9"),
    (lambda ivs: ivs[:-1] + [(ivs[-1][0], ivs[-1][1] + 2.0, ivs[-1][2])], "runs to"),
    (lambda ivs: ivs[:5] + [(ivs[5][0] - 0.05, ivs[5][1], ivs[5][2])] + ivs[6:], "overlap"),
])
def test_a_bad_reference_is_refused_naming_it(tmp_path, damage, message):
    corpus = _corpus(tmp_path / "c", n=8)
    refs = tmp_path / "refs"
    refs.mkdir()
    wav = sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[0]
    grid = _reference_grid(wav, refs / wav.with_suffix(".TextGrid").name, damage)
    with pytest.raises(TranscriptError, match=message) as err:
        api.adapt(corpus, tmp_path / "out", references=refs)
    assert str(grid) in str(err.value)
    assert not (tmp_path / "out").exists()


def test_reference_blank_intervals_read_as_silence(tmp_path):
    path = tmp_path / "r.TextGrid"
    write_textgrid(path, [("words", [(0.1, 0.5, "hello")]),
                          ("phones", [(0.1, 0.2, "HH"), (0.2, 0.3, "AH0"), (0.3, 0.4, "L"), (0.4, 0.5, "OW1")])],
                   xmax=0.6)
    phones = AC.read_reference(path, 0.6)
    assert [p[2] for p in phones] == ["sil", "HH", "AH0", "L", "OW1", "sil"]
    assert phones[0][:2] == (0.0, 0.1) and abs(phones[-1][1] - 0.6) < 1e-9


# -- the bundle --------------------------------------------------------------------------------

def test_an_interrupted_save_leaves_no_partial_bundle(tmp_path, monkeypatch):
    model = api.load_model()
    out = tmp_path / "adapted"
    AC.save_atomically(model, out)  # a bundle there already: kept whole when the next save dies
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def dies(directory):
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "classifier.npz").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(type(model), "save", lambda self, directory: dies(directory))
    with pytest.raises(KeyboardInterrupt):
        AC.save_atomically(model, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapted"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_save_whose_check_fails_replaces_nothing(tmp_path):
    model = api.load_model()
    out = tmp_path / "adapted"
    AC.save_atomically(model, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    checked = []

    def refuses(folder):
        checked.append(sorted(p.name for p in Path(folder).iterdir()))
        raise ModelError(f"{folder}: refused")

    with pytest.raises(ModelError, match="refused"):
        AC.save_atomically(model, out, check=refuses)
    assert checked and "manifest.json" in checked[0]  # it saw the whole written bundle
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapted"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@needs_timit
def test_adapt_writes_a_bundle_that_records_its_base_and_aligns(tmp_path):
    corpus = _corpus(tmp_path / "c", speakers=("dr1-fvmh0", "dr2-faem0"), n=5)
    lonely = tmp_path / "c" / "lonely"  # a speaker with one short file
    lonely.mkdir()
    wav = sorted((TIMIT / "dr3-falk0").glob("*.wav"))[0]
    for suffix in (".wav", ".txt"):
        shutil.copy(wav.with_suffix(suffix), lonely / wav.with_suffix(suffix).name)
    (tmp_path / "c" / "lonely" / "broken.wav").write_bytes(b"RIFF....WAVE")
    (tmp_path / "c" / "lonely" / "broken.txt").write_text("hello there")
    messages = []
    report = api.adapt(corpus, tmp_path / "adapted", rounds=1, message=messages.append,
                       output_dir=tmp_path / "aligned")
    assert len(messages) == 2 and messages[1].startswith("round 1:")
    assert "looks degraded" in messages[0] and messages[0].endswith("adapting the clean classifier")
    assert report.recordings == 11 and report.speakers == 3 and report.audio_seconds > 20
    assert [Path(p).name for p, _ in report.failed] == ["broken.wav"]
    manifest = json.loads((tmp_path / "adapted" / "manifest.json").read_text())
    adapted = manifest["training"]["adapted"]
    assert adapted["base"]["shipped"] is True and adapted["recordings"] == 11 and adapted["rounds"] == 1
    assert adapted["round_reports"][0]["files_used"] >= 1
    # words transcripts on the clean model: the durations re-estimated (deviations scaled), the classifier kept
    assert adapted["settings"]["durations_prior"] == AC.WORDS_ADAPT_SETTINGS["durations_prior"]
    assert adapted["settings"]["durations_spread"] == "scaled"
    assert adapted["settings"]["classifier_prior"] is None
    model = api.load_model(tmp_path / "adapted")
    assert model.classifier.weights.shape == api.load_model().classifier.weights.shape
    intervals = api.align(wav, wav.with_suffix(".phn"), model=tmp_path / "adapted")
    assert intervals[0].start_s == 0.0 and len(intervals) == len(read_phn(wav.with_suffix(".phn"))[2])
    assert len(report.alignment.written) == 11
    # the vowels of an alignment with the adapted model (aligner vowels --alignment-model)
    from click.testing import CliRunner

    csv = tmp_path / "vowels.csv"
    result = CliRunner().invoke(main, ["vowels", str(wav), "--mode", "align", "--alignment-model",
                                       str(tmp_path / "adapted"), "-o", str(csv)])
    assert result.exit_code == 0, result.output
    rows = csv.read_text().splitlines()
    assert rows[0].startswith("file,speaker,word") and len(rows) > 3


@needs_timit
def test_phone_transcripts_keep_the_base_durations(tmp_path):
    """Only a corpus transcribed in words re-estimates the durations by default (WORDS_ADAPT_SETTINGS);
    ``reestimate`` chooses the parts."""
    corpus = _corpus(tmp_path / "c", speakers=("dr1-fvmh0", "dr2-faem0"), n=4, suffixes=(".wav", ".phn"))
    api.adapt(corpus, tmp_path / "adapted", rounds=1)
    settings = json.loads((tmp_path / "adapted" / "manifest.json").read_text())["training"]["adapted"]["settings"]
    assert settings["durations_prior"] is None and settings["classifier_prior"] == 10.0
    api.adapt(corpus, tmp_path / "both", rounds=1, reestimate="both")
    settings = json.loads((tmp_path / "both" / "manifest.json").read_text())["training"]["adapted"]["settings"]
    assert settings["durations_prior"] == 30.0 and settings["classifier_prior"] == 10.0
    assert settings["durations_spread"] == "scaled"
    with pytest.raises(ValueError, match="reestimate"):
        api.adapt(corpus, tmp_path / "bad", rounds=1, reestimate="everything")


@needs_timit
def test_rounds_default_by_what_is_reestimated(tmp_path):
    """Words on the clean model (durations re-estimated) adapt for WORDS_ADAPT_ROUNDS, phones for
    DEFAULT_ADAPT_ROUNDS; a number given is kept."""
    assert AC.WORDS_ADAPT_ROUNDS == 1 < AC.DEFAULT_ADAPT_ROUNDS
    words = _corpus(tmp_path / "w", speakers=("dr1-fvmh0", "dr2-faem0"), n=4)
    phones = _corpus(tmp_path / "p", speakers=("dr1-fvmh0", "dr2-faem0"), n=4, suffixes=(".wav", ".phn"))

    def rounds_of(bundle):
        return json.loads((bundle / "manifest.json").read_text())["training"]["adapted"]["rounds"]

    assert len(api.adapt(words, tmp_path / "aw").rounds) == rounds_of(tmp_path / "aw") == AC.WORDS_ADAPT_ROUNDS
    assert rounds_of(api.adapt(phones, tmp_path / "ap").model_dir) == AC.DEFAULT_ADAPT_ROUNDS
    assert rounds_of(api.adapt(words, tmp_path / "aw2", rounds=2).model_dir) == 2


def test_reestimating_keeps_the_priors_it_is_given():
    from aligner.alignment.adaptation.rounds import AdaptSettings

    assert AC._reestimating(None, "durations", False).classifier_prior is None
    assert AC._reestimating(None, "classifier", True).classifier_prior == AC.MULTI_CONDITION_PRIOR
    given = AdaptSettings(classifier_prior=3.0, durations_prior=5.0, durations_spread="estimated")
    both = AC._reestimating(given, "both", False)
    assert (both.classifier_prior, both.durations_prior, both.durations_spread) == (3.0, 5.0, "estimated")
    assert AC._reestimating(given, "classifier", False).durations_prior is None


def test_every_transcript_mismatched_is_refused(tmp_path):
    corpus = _corpus(tmp_path / "c", speakers=("dr1-fvmh0",), n=10)
    texts = [p.read_text() for p in sorted((corpus / "dr1-fvmh0").glob("*.txt"))]
    for p, text in zip(sorted((corpus / "dr1-fvmh0").glob("*.txt")), texts[1:] + texts[:1]):
        p.write_text(text)  # every file gets another file's words
    with pytest.raises(AlignerError, match=r"nothing to adapt on|no recording could be used"):
        api.adapt(corpus, tmp_path / "adapted", rounds=1)
    assert not (tmp_path / "adapted").exists()


@needs_timit
def test_the_command_line(tmp_path):
    from click.testing import CliRunner

    corpus = _corpus(tmp_path / "c", n=8)
    result = CliRunner().invoke(main, ["adapt", str(corpus), str(tmp_path / "m"), "--rounds", "1"])
    assert result.exit_code == 0, result.output
    assert "round 1:" in result.output and f"wrote {tmp_path / 'm'}" in result.output
    bad = CliRunner().invoke(main, ["adapt", str(corpus), str(corpus / "m")])
    assert bad.exit_code == 1 and bad.output.strip().startswith("error:") and len(bad.output.strip().splitlines()) == 1


def test_adapting_reads_phones_with_the_edge_silences_aligning_adds(tmp_path):
    """A phone transcript without edge silences is adapted on with them, as it is aligned; a
    recording too short for them keeps the phones as written."""
    from aligner.alignment.adaptation.corpus import read_recordings
    from aligner.alignment.pipeline import load_model, with_edge_silences_if_they_fit
    from aligner.frames import n_frames
    from aligner.phones.sets import get_phone_set

    arpabet = get_phone_set("arpabet")
    model = load_model()
    assert with_edge_silences_if_they_fit(model, ["D", "AA1", "T"], arpabet, n_frames(16000))[0] == [
        "sil", "D", "AA1", "T", "sil"]
    assert with_edge_silences_if_they_fit(model, ["sil", "D", "AA1", "T", "sil"], arpabet, n_frames(16000))[0] == [
        "sil", "D", "AA1", "T", "sil"]
    short = int(0.06 * 16000)  # 4 frames: room for the 3 phones (no closures), not for 5
    assert with_edge_silences_if_they_fit(model, ["D", "AA1", "T"], arpabet, n_frames(short))[0] == ["D", "AA1", "T"]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo.wav"
    (corpus / "demo.wav").write_bytes(demo.read_bytes())
    (corpus / "demo.phones").write_text("D AA1 T\n")
    recordings, failed, _ = read_recordings(corpus, kind="phones", model=model)
    assert not failed and list(recordings[0].transcript) == ["sil", "D", "AA1", "T", "sil"]


@needs_timit
def test_long_silent_edges_are_cut_before_adapting(tmp_path):
    """A corpus whose recordings hold 3 s of their own room tone at both ends (a lab prompt): each is
    cut to its speech before the first round, as aligning it cuts, so none is left out as not
    matching its words (before, every one was, and adapting stopped), and the condition gates judge
    the speech, not the room tone. The report and the bundle say how many were cut."""
    import numpy as np
    import soundfile as sf
    from click.testing import CliRunner

    from aligner.io.audio import load_audio

    corpus = tmp_path / "c" / "dr1-fvmh0"
    corpus.mkdir(parents=True)
    for wav in sorted((TIMIT / "dr1-fvmh0").glob("*.wav"))[:4]:
        samples = load_audio(wav)
        tone = np.resize(np.concatenate([samples[:800], samples[:800][::-1]]), 48000)
        sf.write(corpus / wav.name, np.concatenate([tone, samples, tone]), 16000, subtype="PCM_16")
        shutil.copy(wav.with_suffix(".txt"), corpus / wav.with_suffix(".txt").name)
    messages = []
    report = api.adapt(tmp_path / "c", tmp_path / "adapted", rounds=1, message=messages.append)
    assert report.edges_cut == 4 and report.recordings == 4
    assert report.rounds[0].files_used == 4 and not report.rounds[0].files_left_out
    assert messages[0].startswith("0% of the audio looks degraded")
    adapted = json.loads((tmp_path / "adapted" / "manifest.json").read_text())["training"]["adapted"]
    assert adapted["edges_cut"] == 4
    result = CliRunner().invoke(main, ["adapt", str(tmp_path / "c"), str(tmp_path / "again"), "--rounds", "1"])
    assert result.exit_code == 0, result.output
    assert "4 cut to their speech (long silent edges)" in result.output
