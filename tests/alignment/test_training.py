"""Training a forced aligner (aligner.alignment.training): duration statistics and a small end-to-end run."""


import numpy as np
import pytest

from aligner.alignment.model import AlignmentModel, DurationStats, duration_key
from aligner.phones.sets import CLASSES39
from aligner.alignment.training import UtteranceData, duration_stats

from tests.conftest import TIMIT, needs_timit
SIL = CLASSES39.index("sil")


def _utt(symbols, lengths, name="u"):
    classes = np.array([SIL if s in ("h#", "pau", "tcl", "q") else CLASSES39.index(s) for s in symbols])
    y = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return UtteranceData(name, "spk", np.zeros((int(sum(lengths)), 42)), classes, list(symbols), y, 1.0)


def test_per_symbol_durations_separate_closures_from_pauses():
    # 12 utterances: h# 50 frames at both ends, a tcl of 4 frames, t of 3, iy of 10 or 12
    data = [_utt(["h#", "tcl", "t", "iy", "h#"], [50, 4, 3, 10 + 2 * (i % 2), 50], f"u{i}") for i in range(12)]
    stats = duration_stats(data)
    mean, std, mx = stats.for_phones(np.array([SIL, SIL, CLASSES39.index("iy")]), ["h#", "tcl", "IY1"])
    assert mean[0] == pytest.approx(50) and mean[1] == pytest.approx(4)  # the class mean would be 104/3
    assert mx[1] == 15 and mx[0] == 100  # twice the longest, at least 15 frames
    assert mean[2] == pytest.approx(11) and std[2] == pytest.approx(1.0)  # ARPAbet IY1 -> iy
    class_only = stats.for_phones(np.array([SIL]), None)
    assert class_only[0][0] == pytest.approx(104 / 3)
    # a symbol seen fewer than MIN_SYMBOL_COUNT times falls back to its class
    rare = duration_stats(data[:3])
    assert len(rare.symbols) == 0
    assert duration_key("AH0") == "ah" and duration_key("h#") == "h#"


def test_duration_arrays_round_trip_and_refuse_incomplete_tables():
    data = [_utt(["h#", "tcl", "t", "iy", "h#"], [50, 4, 3, 10, 50], f"u{i}") for i in range(10)]
    stats = duration_stats(data)
    again = DurationStats.from_arrays(stats.to_arrays())
    assert again.symbols.tolist() == stats.symbols.tolist()
    np.testing.assert_array_equal(again.symbol_mean, stats.symbol_mean)
    old = {k: v for k, v in stats.to_arrays().items() if k in ("mean", "std", "max_frames")}
    with pytest.raises(KeyError):  # AlignmentModel.load turns it into a one-line ModelError
        DurationStats.from_arrays(old)
    bad = stats.to_arrays()
    bad["symbol_std"] = bad["symbol_std"][:-1]
    with pytest.raises(ValueError):
        DurationStats.from_arrays(bad)


@needs_timit
def test_train_small_model_end_to_end(tmp_path):
    from aligner.io.audio import load_audio
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn
    from aligner.phones.sets import get_phone_set
    from aligner.alignment.training import load_utterances, train_alignment_model

    utts = find_utterances(TIMIT)
    speakers = sorted({u.speaker for u in utts})[:4]
    chosen = [u for s in speakers for u in [v for v in utts if v.speaker == s][:2]]
    data = load_utterances(chosen, warps=(1.1,))
    assert all(len(d.warped) == 1 and d.warped[0].shape == d.frames.shape for d in data)
    from aligner.alignment.training import ETA0_GRID

    model, result = train_alignment_model(
        data, "orbit", {"epochs": 1}, {"hidden": 64, "epochs": 10},
        n_folds=2, n_val_speakers=1, eta0_grid=ETA0_GRID)
    assert np.all(np.isfinite(model.weights)) and model.refiner is not None
    assert model.training["vtlp_copies_per_utterance"] == 1 and model.training["boundary_refinement"]
    # eta0 left open with a grid: every step size was fitted and scored on validation
    assert sorted(model.training["eta0_validation_costs"]) == sorted(str(e) for e in ETA0_GRID)
    costs = model.training["eta0_validation_costs"]
    assert model.training["trainer_params"]["eta0"] == float(min(costs, key=costs.get))
    model.save(tmp_path / "m")
    loaded = AlignmentModel.load(tmp_path / "m")
    test = [u for u in utts if u.speaker not in speakers][0]
    starts, _, labels = read_phn(test.transcript)
    samples = load_audio(test.audio)
    intervals = loaded.align(samples, labels, get_phone_set("auto", labels))
    assert [iv[2] for iv in intervals] == list(labels)
    times = np.array([iv[0] for iv in intervals])
    assert times[0] == 0 and np.all(np.diff(times) > 0) and intervals[-1][1] == pytest.approx(len(samples) / 16000)
    # even this tiny model beats spreading the phones evenly over the recording
    err = np.abs(times[1:] - starts[1:] / 16000).mean()
    even = np.abs(np.linspace(0, len(samples) / 16000, len(labels), endpoint=False)[1:] - starts[1:] / 16000).mean()
    assert err < even


@pytest.mark.parametrize("options, expected", [
    ((), {"hidden": 512, "alpha": 3.0, "pca_dims": 0, "networks": 3}),
    (("--classifier", "kernel"), {"hidden": 0, "alpha": 1.0, "pca_dims": 128, "networks": 1}),
    (("--max-frames", "150000"), {"hidden": 512, "alpha": 3.0, "pca_dims": 0, "networks": 3,
                                  "max_train_frames": 150000}),
    (("--networks", "1"), {"hidden": 512, "alpha": 3.0, "pca_dims": 0, "networks": 1}),
])
def test_train_cli_passes_the_classifier_choice(tmp_path, monkeypatch, options, expected):
    """`aligner train` trains the network by default; --classifier kernel gives every kernel setting
    back (the defaults are the network's, so an empty dict would not), --max-frames caps its frames."""
    from types import SimpleNamespace

    from aligner import api
    from aligner.alignment.training import DEFAULT_CLASSIFIER_PARAMS
    from aligner.features.frame_classifier import FrameClassifier
    from tests.conftest import run

    seen = {}

    def fake_train(corpus_dir, out_dir, trainer, params, classifier_params, *args, **kwargs):
        seen["classifier"] = classifier_params
        return SimpleNamespace(weights=np.zeros(7))

    monkeypatch.setattr(api, "train", fake_train)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    code, out = run("train", corpus, tmp_path / "model", *options)
    assert code == 0, out
    assert seen["classifier"] == expected
    built = FrameClassifier(**dict(DEFAULT_CLASSIFIER_PARAMS, **seen["classifier"]))
    assert (built.hidden > 0) == ("kernel" not in options)


def test_train_cli_refuses_networks_of_the_kernel(tmp_path):
    from tests.conftest import run

    (tmp_path / "corpus").mkdir()
    code, out = run("train", tmp_path / "corpus", tmp_path / "model", "--classifier", "kernel", "--networks", "2")
    assert code != 0 and "--networks needs --classifier network" in out
