"""Model bundles (no pickle, tamper detection), alignment metrics, corpus discovery."""

import json

import numpy as np
import pytest

from aligner.io.corpus import find_utterances, speaker_folds, speaker_of
from aligner.errors import AlignerError, ModelError
from aligner.alignment.evaluation.phones import boundary_errors_ms, evaluate_directories, score_alignments
from aligner.io.bundles import MANIFEST, load_bundle, save_bundle
from aligner.io.textgrids import write_textgrid


def make_bundle(tmp_path):
    arrays = {"weights": {"w": np.arange(6.0).reshape(2, 3), "n": np.array(3)}}
    params = {"config": {"alpha": 0.5, "names": ["a", "b"]}}
    return save_bundle(tmp_path / "m", "alignment", arrays, params, {"utterances": 7})


def test_bundle_round_trip(tmp_path):
    d = make_bundle(tmp_path)
    arrays, params, manifest = load_bundle(d, "alignment")
    np.testing.assert_array_equal(arrays["weights"]["w"], np.arange(6.0).reshape(2, 3))
    assert params["config"] == {"alpha": 0.5, "names": ["a", "b"]}
    assert manifest["training"] == {"utterances": 7}
    assert set(manifest["files"]) == {"weights.npz", "config.json"}
    assert "numpy" in manifest["versions"]


def test_bundle_refuses_object_arrays(tmp_path):
    with pytest.raises(ValueError, match="pickle"):
        save_bundle(tmp_path / "m", "alignment", {"a": {"x": np.array([{"k": 1}], dtype=object)}}, {}, {})


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "manifest", "no_manifest", "kind"])
def test_damaged_bundle_gives_clear_error(tmp_path, damage):
    d = make_bundle(tmp_path)
    npz = d / "weights.npz"
    if damage == "truncate":
        npz.write_bytes(npz.read_bytes()[:50])
    elif damage == "flip":
        data = bytearray(npz.read_bytes())
        data[len(data) // 2] ^= 0xFF
        npz.write_bytes(bytes(data))
    elif damage == "delete":
        npz.unlink()
    elif damage == "manifest":
        (d / MANIFEST).write_text("{ not json")
    elif damage == "no_manifest":
        (d / MANIFEST).unlink()
    elif damage == "kind":
        with pytest.raises(ModelError, match="not a 'vowels' model"):
            load_bundle(d, "vowels")
        return
    with pytest.raises(ModelError) as exc:
        load_bundle(d, "alignment")
    assert str(d) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_pickled_npz_is_refused_even_with_matching_checksum(tmp_path):
    """A bundle whose npz holds a pickled object fails to load (allow_pickle=False)."""
    d = make_bundle(tmp_path)
    np.savez(d / "weights.npz", w=np.array([{"evil": 1}], dtype=object))
    manifest = json.loads((d / MANIFEST).read_text())
    import hashlib

    manifest["files"]["weights.npz"] = hashlib.sha256((d / "weights.npz").read_bytes()).hexdigest()
    (d / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match="cannot be read"):
        load_bundle(d, "alignment")


def test_missing_model_directory(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        load_bundle(tmp_path / "nope", "alignment")


def test_boundary_errors_skip_first_phone():
    err = boundary_errors_ms([0.0, 0.1, 0.2], [0.05, 0.115, 0.2])
    np.testing.assert_allclose(err, [15.0, 0.0])


def test_score_alignments_hand_computed():
    # errors 5, 15, 25, 45 ms over 2 utterances of K = 3
    pairs = [([0, 0.100, 0.200], [0, 0.105, 0.215]), ([0, 0.300, 0.500], [0, 0.325, 0.455])]
    s = score_alignments(pairs)
    assert s.n_boundaries == 4
    assert s.within_ms == {10: 25.0, 20: 50.0, 30: 75.0, 40: 75.0}
    assert s.mean_ms == pytest.approx(22.5)
    assert s.median_ms == pytest.approx(20.0)
    # tau-insensitive, frames: utt 1 (0 + 0.5)/3, utt 2 (1.5 + 3.5)/3
    assert s.tau_insensitive == pytest.approx(((0.5) / 3 + (5.0) / 3) / 2)


def test_evaluate_directories_matches_by_relative_path(tmp_path):
    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    (ref / "spk").mkdir(parents=True)
    (ref / "spk" / "u1.phn").write_text("0 1600 h#\n1600 3200 aa\n3200 4800 h#\n")
    write_textgrid(hyp / "spk" / "u1.TextGrid",
                   [("phones", [(0, 0.11, "h#"), (0.11, 0.2, "aa"), (0.2, 0.3, "h#")])], 0.3)
    write_textgrid(hyp / "spk" / "orphan.TextGrid", [("phones", [(0, 0.3, "h#")])], 0.3)
    scores, problems = evaluate_directories(ref, hyp)
    assert scores.n_utterances == 1
    assert scores.mean_ms == pytest.approx(5.0)
    assert len(problems) == 1 and "orphan" in str(problems[0][0])


def test_evaluate_directories_reports_phone_count_mismatch(tmp_path):
    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    ref.mkdir()
    (ref / "u.phn").write_text("0 1600 h#\n1600 3200 aa\n")
    write_textgrid(hyp / "u.TextGrid", [("phones", [(0, 0.2, "h#")])], 0.2)
    with pytest.raises(AlignerError, match="no hypothesis file matched"):
        evaluate_directories(ref, hyp)


def test_find_utterances_both_layouts(tmp_path):
    import soundfile as sf

    tone = np.sin(np.arange(1600) / 5.0).astype(np.float32)
    for rel in ["dr1-fvmh0/sa1", "TRAIN/DR1/MCPM0/SI1194", "TEST/DR2/FAEM0/sx2"]:
        p = tmp_path / f"{rel}.wav"
        p.parent.mkdir(parents=True, exist_ok=True)
        sf.write(p, tone, 16000)
        suffix = ".PHN" if rel.isupper() or "TRAIN" in rel else ".phn"
        p.with_suffix(suffix).write_text("0 1600 h#\n")
    (tmp_path / "dr1-fvmh0" / "no_transcript.wav").write_bytes(b"")
    utts = find_utterances(tmp_path)
    assert [(u.speaker, u.part) for u in utts] == [("faem0", "test"), ("mcpm0", "train"), ("fvmh0", "")]
    assert speaker_of(tmp_path / "dr3-madc0" / "x.wav") == "madc0"
    assert speaker_folds(utts, 3) == [["faem0"], ["fvmh0"], ["mcpm0"]]
    assert speaker_folds([u.speaker for u in utts] * 2, 3) == speaker_folds(utts, 3)  # names work too


def test_corpus_of_linked_speaker_folders_is_found_and_a_link_cycle_ends(tmp_path):
    import soundfile as sf

    real = tmp_path / "real" / "dr1-fvmh0"
    real.mkdir(parents=True)
    sf.write(real / "sa1.wav", np.sin(np.arange(1600) / 5.0).astype(np.float32), 16000)
    (real / "sa1.phn").write_text("0 1600 h#\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "dr1-fvmh0").symlink_to(real, target_is_directory=True)
    (real / "loop").symlink_to(corpus, target_is_directory=True)  # corpus -> speaker -> corpus
    utts = find_utterances(corpus)
    assert [(u.name, u.speaker) for u in utts] == [("dr1-fvmh0/sa1", "fvmh0")]
    # evaluate walks linked folders the same way
    hyp = tmp_path / "hyp"
    write_textgrid(hyp / "dr1-fvmh0" / "sa1.TextGrid", [("phones", [(0, 0.1, "h#")])], 0.1)
    scores, problems = evaluate_directories(corpus, hyp)
    assert scores.n_utterances == 1 and problems == []


def test_evaluate_reports_missing_hypotheses_and_other_labels(tmp_path):
    from click.testing import CliRunner

    from aligner.cli import main
    from aligner.io.textgrids import write_textgrid

    ref, hyp = tmp_path / "ref", tmp_path / "hyp"
    phones = [(0.0, 0.1, "h#"), (0.1, 0.3, "aa"), (0.3, 0.5, "h#")]
    for i in range(4):
        write_textgrid(ref / f"u{i}.TextGrid", [("phones", phones)], 0.5)
    write_textgrid(hyp / "u0.TextGrid", [("phones", [(0.0, 0.12, "h#"), (0.12, 0.3, "aa"), (0.3, 0.5, "h#")])], 0.5)
    result = CliRunner().invoke(main, ["evaluate", str(ref), str(hyp)])
    assert result.exit_code == 1 and result.output.count("reference without a hypothesis") == 3
    assert CliRunner().invoke(main, ["evaluate", str(ref), str(hyp), "--allow-missing"]).exit_code == 0
    write_textgrid(hyp / "u1.TextGrid", [("phones", [(0.0, 0.1, "h#"), (0.1, 0.3, "iy"), (0.3, 0.5, "h#")])], 0.5)
    result = CliRunner().invoke(main, ["evaluate", str(ref), str(hyp), "--allow-missing"])
    assert result.exit_code == 1 and "phone 2 is 'iy'" in result.output
