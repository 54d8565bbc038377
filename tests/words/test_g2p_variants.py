"""Unknown words: the G2P's n-best pronunciations offered to the word decoder, marked and weighed."""

import numpy as np

from aligner.words.dialects import dialect_pronunciations
from aligner.words.oov import G2P_VARIANTS, G2PVariant, g2p_pronunciations


def test_the_shipped_g2p_offers_its_close_n_best():
    from aligner.words.g2p import default_g2p, strip_stress

    g2p = default_g2p()
    offered = {w: g2p_pronunciations(w) for w in ("nguyen", "tomato", "gif", "zelensky", "kubernetes")}
    for word, prons in offered.items():
        assert prons[0] == g2p.predict(word) and type(prons[0]) is tuple
        assert all(isinstance(p, G2PVariant) for p in prons[1:])
        assert len({strip_stress(p) for p in prons}) == len(prons)
        assert [tuple(p) for p in prons] == [p for p, _ in g2p.predict_n_best(word, G2P_VARIANTS)]
    assert all(len(p) == G2P_VARIANTS for p in offered.values())


def test_a_g2p_variant_keeps_its_mark_through_the_dialect_rules():
    out = dialect_pronunciations([("T", "AH0", "M", "AA1", "T", "OW0"), G2PVariant(("T", "AH0", "M", "EY1", "T", "OW0"))],
                                 "auto")
    assert out[1] == ("T", "AH0", "M", "EY1", "T", "OW0") and isinstance(out[1], G2PVariant)


def test_the_word_graph_weighs_g2p_variants():
    from aligner import api
    from aligner.alignment.decoding import words as wd

    model = api.load_model()
    prons = wd.with_dialect(model, [[("B", "IH1", "G")], [("T", "AH0", "M", "AA1", "T", "OW0"),
                                                        G2PVariant(("T", "AH0", "M", "EY1", "T", "OW0"))],
                                    [("K", "AE1", "T")]], "rhotic", labels=["big", "tomato", "cat"])
    g, exps = wd.word_graph(model, prons)
    first = {g.alt[n]: g.node_bonus[n] for n in np.flatnonzero(g.word_start == 1)}
    variant = [a for a, (phones, _) in enumerate(exps[1]) if phones == ("T", "AH0", "M", "EY1", "T", "OW0")]
    # each pronunciation's first expansion carries the pronunciation's bonus; a rule's (here the
    # initial /t/ without its closure) one RULE_VARIANT_BONUS more
    by_rule = [a for a in range(len(exps[1])) if a and exps[1][a][0] == exps[1][a - 1][0]]
    assert variant and by_rule and set(first) == set(range(len(exps[1])))
    for a, value in first.items():
        assert value == ((wd.G2P_VARIANT_BONUS if a in variant else 0.0)
                         + (wd.RULE_VARIANT_BONUS if a in by_rule else 0.0))


def test_the_pipeline_offers_an_unknown_words_variants_and_reports_the_best():
    from aligner.alignment import pipeline

    class Nothing:
        def pronunciations(self, word):
            return []

    from aligner.words.normalize import normalize_transcript

    oovs: dict = {}
    labels, prons = pipeline._pronunciations(normalize_transcript("nguyen tomato"), Nothing(), "g2p", "x", oovs)
    assert labels == ["nguyen", "tomato"]
    assert all(p[0] == tuple(oovs[w].split()) for w, p in zip(labels, prons))
    assert any(isinstance(q, G2PVariant) for p in prons for q in p[1:])
