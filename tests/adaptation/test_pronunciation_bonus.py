"""Pronunciation bonuses re-estimated from the decoder's choices
(:mod:`aligner.alignment.adaptation.pronunciations`, issue 46)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from aligner.alignment.adaptation import pronunciations as pr
from aligner.alignment.adaptation import rounds as ad
from aligner.words.dialects import DialectForm
from tests.conftest import cut_classifier, speaker_recordings

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"
MODEL = Path(__file__).resolve().parents[2] / "models" / "timit-alignment"


def test_word_key_leaves_dialect_forms_out_and_ignores_order():
    a = [("DH", "AH0"), ("DH", "IY0")]
    assert pr.word_key(a) == pr.word_key(list(reversed(a))) == "DH AH0|DH IY0"
    assert pr.word_key(a + [DialectForm(("DH", "AH0", "R"))]) == pr.word_key(a)


def test_bonuses_follow_the_counts_and_shrink_toward_zero():
    opts = {"w": ["w\ta", "w\tb"], "one": ["one\tx"]}
    counts = {"w\ta": 9, "w\tb": 1, "one\tx": 5}
    b1 = pr.pronunciation_bonuses(counts, opts, alpha=1.0)
    assert "one\tx" not in b1  # a single alternative has nothing to choose
    assert b1["w\ta"] == pytest.approx(math.log(2 * 10 / 12)) and b1["w\tb"] == pytest.approx(math.log(2 * 2 / 12))
    b10 = pr.pronunciation_bonuses(counts, opts, alpha=10.0)
    assert 0 < b10["w\ta"] < b1["w\ta"] and b1["w\tb"] < b10["w\tb"] < 0  # a stronger prior: nearer 0
    assert pr.pronunciation_bonuses({"w\ta": 5, "w\tb": 5}, opts, 1.0) == {}  # even counts: no bonus
    clipped = pr.pronunciation_bonuses({"w\ta": 10**6}, opts, 0.01)
    assert clipped["w\tb"] == -pr.MAX_BONUS
    with pytest.raises(ValueError):
        pr.pronunciation_bonuses(counts, opts, 0.0)
    with pytest.raises(ValueError):
        pr.check_bonuses({"w\ta": float("nan")})


@pytest.fixture(scope="module")
def words_corpus():
    if not DATA.is_dir() or not (MODEL / "manifest.json").is_file():
        pytest.skip("shared TIMIT sample or shipped model not found")
    from aligner.alignment.model import AlignmentModel

    recs = speaker_recordings(DATA, 3, 'words')
    model = AlignmentModel.load(MODEL)
    return dataclasses.replace(model, classifier=cut_classifier(model.classifier)), recs


def test_word_graph_adds_the_bonus_of_an_alternative(words_corpus):
    from aligner.alignment.decoding.words import word_graph

    model, _ = words_corpus
    prons = [[("DH", "AH0"), ("DH", "IY0")], [("K", "AE1", "T")]]
    graph0, exps = word_graph(model, prons)
    word = pr.word_key(prons[0])
    key = pr.alternative_key(word, exps[0][1][1].symbols)  # the second alternative of "the"
    biased = dataclasses.replace(model, pronunciation_bonus={key: 1.5})
    graph1, _ = word_graph(biased, prons)
    added = graph1.node_bonus - graph0.node_bonus  # graph0's own: the rules' variants of "cat"
    assert sorted(added[added != 0]) == [1.5]


def test_adapting_words_counts_choices_and_saves_the_bonuses(words_corpus, tmp_path):
    from aligner.alignment.model import AlignmentModel

    model, recs = words_corpus
    settings = ad.AdaptSettings(classifier_prior=None, pronunciation_prior=1.0, skip_flagged=False)
    adapted, (report,) = ad.adapt_model(model, recs, rounds=1, settings=settings)
    assert report.pronunciations["words"] >= 15  # every word of the used recordings counted once
    bonus = adapted.pronunciation_bonus
    assert bonus and model.pronunciation_bonus is None
    assert all(abs(v) <= pr.MAX_BONUS for v in bonus.values())
    assert any(v > 0 for v in bonus.values()) and any(v < 0 for v in bonus.values())
    adapted.save(tmp_path / "m")
    assert AlignmentModel.load(tmp_path / "m").pronunciation_bonus == pytest.approx(bonus)
    # the phones path is untouched: no bonus without words
    phones = ad.adapt_model(model, [dataclasses.replace(recs[0], kind="phones", transcript=["h#", "sh", "h#"],
                                                        phone_set="timit61")], rounds=1,
                            settings=settings)[0]
    assert phones.pronunciation_bonus is None


def test_a_variant_level_bonus_reaches_every_expansion_of_the_variant(words_corpus):
    from aligner.alignment.decoding.words import word_graph

    model, _ = words_corpus
    prons = [[("D", "OW1", "N", "T"), ("D", "OW1", "N")], [("AE1", "S", "K")]]
    graph0, exps = word_graph(model, prons)
    key = pr.alternative_key(pr.word_key(prons[0]), prons[0][0], "phones")
    assert key.endswith("\t=D OW1 N T")
    n_expansions = sum(1 for phones, _ in exps[0] if phones == prons[0][0])
    graph1, _ = word_graph(dataclasses.replace(model, pronunciation_bonus={key: -0.5}), prons)
    added = graph1.node_bonus - graph0.node_bonus
    assert 1 <= np.count_nonzero(added) <= n_expansions  # expansions may share a first node
    assert np.all(added[added != 0] == -0.5)


def test_variant_level_choices_name_dictionary_variants(words_corpus):
    model, recs = words_corpus
    settings = ad.AdaptSettings(classifier_prior=None, pronunciation_prior=1.0, pronunciation_level="phones",
                                skip_flagged=False)
    adapted, _ = ad.adapt_model(model, recs[:1], rounds=1, settings=settings)
    assert adapted.pronunciation_bonus and all("\t=" in k for k in adapted.pronunciation_bonus)
    with pytest.raises(ValueError, match="pronunciation_level"):
        ad.AdaptSettings(pronunciation_level="words").check()
