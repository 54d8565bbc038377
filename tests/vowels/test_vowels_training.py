"""Vowel training in the library and `aligner train-vowels`: small real runs on a few speakers of
the shared TIMIT sample (skipped without ../shared/data), settings errors, the metrics, and the
CLI's one-line errors on a bad corpus."""

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from aligner.cli import main
from aligner.errors import AlignerError
from aligner.io.audio import load_audio
from aligner.io.corpus import find_utterances
from aligner.vowels.evaluation import format_table, middle_third, score_vowels, vowel_metrics
from aligner.vowels.model import VowelModel
from aligner.vowels.training import (VowelSettingsError, check_settings, load_cvc_examples, predict_seconds,
                                     train_vowel_model, validation_speakers)

from tests.conftest import TIMIT as SAMPLE

pytestmark = pytest.mark.filterwarnings("ignore::aligner.io.audio.RepairedAudioWarning")  # damaged shared files
needs_sample = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"shared TIMIT sample not found at {SAMPLE}")

#: the smallest useful run: one candidate, two epochs, two folds of two speakers
SMALL = dict(trainers=["perceptron"], grid={"perceptron": [{"average": True}]}, width_sets=[(2, 5, 10)], epochs=2)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """4 speakers x 4 utterances of the shared sample, linked into a TIMIT-layout folder."""
    if not SAMPLE.is_dir():
        pytest.skip(f"shared TIMIT sample not found at {SAMPLE}")
    root = tmp_path_factory.mktemp("corpus")
    speakers = sorted(p for p in SAMPLE.iterdir() if p.is_dir())[:4]
    for spk in speakers:
        (root / spk.name).mkdir()
        for phn in sorted(spk.glob("*.phn"))[:4]:
            for f in (phn, phn.with_suffix(".wav")):
                os.symlink(f, root / spk.name / f.name)
    return root


@pytest.fixture(scope="module")
def trained(corpus):
    stages = []
    model = train_vowel_model(corpus, n_folds=2, progress=lambda s, d, t: stages.append((s, d, t)), **SMALL)
    return model, stages


# -- the library --------------------------------------------------------------------------------

@needs_sample
def test_training_gives_a_model_that_saves_loads_and_measures(trained, corpus, tmp_path):
    model, stages = trained
    t = model.training
    assert t["trainer"] == "perceptron" and t["widths"] == [2, 5, 10] and t["n_tokens"] > 20
    assert len(t["speakers"]) == 4 and t["n_skipped"] == 0 and 0 <= t["epochs"] <= 2
    cv = t["cv"]
    assert len(cv["folds"]) == 2 and all(len(v) == 1 for v in cv["validation_speakers"])
    assert cv["chosen"]["n"] == t["n_tokens"]
    # even two epochs on one training speaker beat the middle third of the cut by far
    assert cv["chosen"]["onset_mae_ms"] < cv["middle_third_baseline"]["onset_mae_ms"] / 2
    assert ("features", 16, 16) in stages and stages[-1] == ("final fit", 1, 1)

    model.save(tmp_path / "m")
    loaded = VowelModel.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.weights, model.weights)
    assert loaded.widths == (2, 5, 10) and loaded.training["cv"]["chosen"] == cv["chosen"]

    examples, _ = load_cvc_examples(corpus, loaded.classifier)
    utt = find_utterances(corpus)[0]
    audio = load_audio(utt.audio)
    pred = predict_seconds(loaded, examples)
    scores = score_vowels(pred, [e.true_s for e in examples])
    assert scores.n == len(examples) and scores.onset_mae_ms < 20 and scores.duration_r > 0.7
    # the whole-recording measuring path, on one token's window of its utterance
    first = next(e for e in examples if e.name.startswith(utt.name + "#"))
    from aligner.io.transcripts import read_phn
    from aligner.vowels.cvc import cvc_tokens

    tok = cvc_tokens(*read_phn(utt.transcript))[0]
    m = loaded.measure(audio, window=(tok.cut_start / 16000, tok.cut_end / 16000), name=first.name)
    assert tok.cut_start / 16000 <= m.onset_s < m.offset_s <= tok.cut_end / 16000
    assert abs(m.onset_s - tok.vowel_start / 16000) < 0.05


@needs_sample
def test_fixed_candidate_without_cross_validation(corpus):
    model = train_vowel_model(corpus, n_folds=0, **{**SMALL, "epochs": 1, "width_sets": [(1, 2, 5, 10)]})
    assert "cv" not in model.training and model.training["epochs"] == 1
    assert model.widths == (1, 2, 5, 10) and model.weights.shape == (16 * 9 + 4,)


@needs_sample
def test_too_few_speakers_for_the_folds(corpus):
    with pytest.raises(AlignerError, match="too few for 5 speaker folds"):
        train_vowel_model(corpus, n_folds=5, **SMALL)


def test_settings_are_checked_before_any_audio_is_read(tmp_path):
    missing = tmp_path / "no-such-corpus"
    with pytest.raises(VowelSettingsError, match="exactly one candidate"):
        train_vowel_model(missing, n_folds=0)  # the default grid has many candidates
    with pytest.raises(VowelSettingsError, match="no vowel settings for trainer"):
        train_vowel_model(missing, trainers=["nope"])
    with pytest.raises(VowelSettingsError, match="eta0"):
        check_settings(["svm"], {"svm": [{"eta0": -1.0}]})
    with pytest.raises(VowelSettingsError, match="n_folds"):
        check_settings(n_folds=1)
    assert isinstance(VowelSettingsError("x"), ValueError)
    assert len(check_settings()) == 2 * (2 + 4 + 4)  # 2 width sets x (perceptron, svm, orbit settings)


def test_validation_speakers_rotate_and_leave_a_training_speaker():
    rest = [f"s{i}" for i in range(9)]
    assert validation_speakers(rest, 0) == ["s0", "s4"]
    assert validation_speakers(rest, 1) == ["s1", "s5"]
    assert validation_speakers(["a", "b"], 0) == ["a"]
    with pytest.raises(ValueError):
        validation_speakers(["a"], 0)


def test_vowel_metrics():
    true = [(0.100, 0.200), (0.300, 0.380), (0.050, 0.170)]
    pred = [(0.105, 0.200), (0.320, 0.380), (0.050, 0.200)]
    s = score_vowels(pred, true)
    assert s.n == 3
    assert s.onset_mae_ms == pytest.approx((5 + 20 + 0) / 3)
    assert s.offset_mae_ms == pytest.approx((0 + 0 + 30) / 3)
    assert s.onset_within_10ms_pct == pytest.approx(200 / 3) and s.offset_within_20ms_pct == pytest.approx(200 / 3)
    assert s.duration_mae_ms == pytest.approx((5 + 20 + 30) / 3)
    assert s.duration_r == pytest.approx(np.corrcoef([95, 60, 150], [100, 80, 120])[0, 1])
    assert vowel_metrics(true, true)["onset_mae_ms"] == 0 and middle_third(0.3) == pytest.approx((0.1, 0.2))
    assert np.isnan(score_vowels([(0.1, 0.2)] * 2, true[:2]).duration_r)  # constant predicted durations
    assert "onset ms" in format_table([("x", s)]) and s.format().startswith("3 vowels")
    with pytest.raises(ValueError):
        score_vowels(pred, true[:2])


# -- the command line ---------------------------------------------------------------------------

def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@needs_sample
def test_cli_trains_a_model_end_to_end(corpus, tmp_path):
    out, record = tmp_path / "vowels-model", tmp_path / "training.json"
    code, stdout, stderr = run("train-vowels", corpus, out, "--trainers", "perceptron", "--params",
                               '{"average": true}', "--widths", "2,5,10", "--epochs", "2", "--folds", "2",
                               "--json", record)
    assert code == 0, stderr
    assert "chosen on validation" in stdout and f"wrote {out}" in stdout
    assert "features: 16/16" in stderr and "final fit: 1/1" in stderr
    model = VowelModel.load(out)
    assert model.training["trainer_params"] == {"average": True, "seed": 0, "eval_train": False}
    assert json.loads(record.read_text())["cv"]["chosen"] == model.training["cv"]["chosen"]


def _one_line_error(code, stdout, stderr, match):
    assert code == 1
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0], stderr
    assert "Traceback" not in stdout + stderr


def test_cli_bad_corpus_is_a_one_line_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(*run("train-vowels", empty, tmp_path / "out"), "no audio file with a .phn transcript")
    no_phn = tmp_path / "no-phn" / "dr1-abcd0"
    no_phn.mkdir(parents=True)
    (no_phn / "sa1.wav").write_bytes(b"RIFF")
    _one_line_error(*run("train-vowels", no_phn.parent, tmp_path / "out"), "no audio file with a .phn transcript")
    _one_line_error(*run("train-vowels", tmp_path / "missing", tmp_path / "out"), "not found")
    _one_line_error(*run("train-vowels", empty, tmp_path / "out", "--folds", "0"), "exactly one candidate")
    assert not (tmp_path / "out").exists()


def test_cli_rejects_bad_options(tmp_path):
    code, _, stderr = run("train-vowels", tmp_path, tmp_path / "out", "--trainers", "nope")
    assert code == 2 and "choose from" in stderr
    code, _, stderr = run("train-vowels", tmp_path, tmp_path / "out", "--params", "{bad")
    assert code == 2 and "not JSON" in stderr
    code, _, stderr = run("train-vowels", tmp_path, tmp_path / "out", "--widths", "2,x")
    assert code == 2 and "comma-separated" in stderr


# -- vowels of any language: a vowel tier of TextGrids ---------------------------------------------

@pytest.fixture(scope="module")
def tier_corpus(corpus, tmp_path_factory):
    """The same 16 utterances with a TextGrid beside each: a ``vowels`` tier holding every vowel
    of the ``.phn`` (labelled in IPA, as another language's corpus would), nothing else."""
    from aligner.io.textgrids import Interval, write_textgrid
    from aligner.io.transcripts import read_phn
    from aligner.phones.sets import TIMIT61_VOWELS

    ipa = {"aa": "ɑ", "ae": "æ", "ah": "ʌ", "ao": "ɔ", "aw": "aʊ", "ax": "ə", "ax-h": "ə̥", "axr": "ɚ", "ay": "aɪ",
           "eh": "ɛ", "er": "ɝ", "ey": "eɪ", "ih": "ɪ", "ix": "ɨ", "iy": "i", "ow": "oʊ", "oy": "ɔɪ", "uh": "ʊ",
           "uw": "u", "ux": "ʉ"}
    root = tmp_path_factory.mktemp("tier-corpus")
    for utt in find_utterances(corpus):
        starts, ends, labels = read_phn(utt.transcript)
        vowels = [Interval(a / 16000, b / 16000, ipa[s]) for a, b, s in zip(starts, ends, labels)
                  if s in TIMIT61_VOWELS]
        out = root / utt.name
        out.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(utt.audio.resolve(), out.with_suffix(".wav"))
        write_textgrid(out.with_suffix(".TextGrid"), [("vowels", vowels)], len(load_audio(utt.audio)) / 16000)
    return root


@needs_sample
def test_train_vowels_from_a_vowel_tier(tier_corpus):
    model = train_vowel_model(tier_corpus, n_folds=2, vowel_tier="vowels", pad_s=0.08, **SMALL)
    t = model.training
    assert t["vowel_tier"] == "vowels" and t["pad_s"] == 0.08 and len(t["speakers"]) == 4
    assert t["n_tokens"] > 100  # every vowel, not only the CVC ones
    cv = t["cv"]["chosen"]
    # two epochs on two speakers: a working model (the cut's edges sit a fixed pad from the vowel,
    # so the middle-third baseline is no yardstick here)
    assert cv["onset_mae_ms"] < 25 and cv["offset_mae_ms"] < 25 and cv["duration_r"] > 0.6
    with pytest.raises(AlignerError, match="tier 'vowel' not found"):
        train_vowel_model(tier_corpus, n_folds=2, vowel_tier="vowel", **SMALL)
    with pytest.raises(VowelSettingsError, match="--held-out-classifier needs TIMIT"):
        train_vowel_model(tier_corpus, n_folds=2, vowel_tier="vowels", held_out_classifier=True, **SMALL)


@needs_sample
def test_cli_trains_vowels_from_a_tier_and_names_a_missing_one(tier_corpus, tmp_path):
    code, stdout, stderr = run("train-vowels", tier_corpus, tmp_path / "m", "--trainers", "perceptron", "--params",
                               '{"average": true}', "--widths", "2,5,10", "--epochs", "1", "--folds", "0",
                               "--vowel-tier", "vowels", "--pad", "0.05")
    assert code == 0, stderr
    assert VowelModel.load(tmp_path / "m").training["vowel_tier"] == "vowels"
    _one_line_error(*run("train-vowels", tier_corpus, tmp_path / "n", "--vowel-tier", "nuclei"),
                    match="tier 'nuclei' not found")
