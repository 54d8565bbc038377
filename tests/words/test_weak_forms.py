"""Weak forms of English function words offered beside the dictionary's pronunciations."""

import numpy as np

from aligner.words.dialects import DialectForm, dialect_pronunciations
from aligner.words.weak_forms import WEAK_FORMS, WeakForm, with_weak_forms


def test_weak_forms_follow_the_dictionarys_and_are_marked():
    prons = [[("AH0", "N", "D"), ("AE1", "N", "D")], [("K", "AE1", "T")], [("AH1", "V")]]
    out = with_weak_forms(["And,", "cat", "OF"], prons)
    assert out[0][:2] == prons[0] and out[0][2:] == [("AH0", "N")]
    assert all(isinstance(p, WeakForm) for p in out[0][2:]) and not isinstance(out[0][0], WeakForm)
    assert out[1] == prons[1]  # not a function word
    assert out[2] == [("AH1", "V"), ("AH0",)]  # AH0 V is AH1 V up to stress: not added
    # a weak form the dictionary has already (up to stress) is not added twice
    assert with_weak_forms(["him"], [[("HH", "IH1", "M"), ("IH1", "M")]])[0] == [("HH", "IH1", "M"), ("IH1", "M")]
    assert all(form.split() for forms in WEAK_FORMS.values() for form in forms)


def test_a_weak_form_stays_one_through_the_dialect_rules():
    out = dialect_pronunciations([("Y", "UW1"), WeakForm(("Y", "ER0"))], "auto")
    assert isinstance(out[1], WeakForm) and out[1] == ("Y", "ER0")
    assert ("Y", "AH0") in out and isinstance(out[out.index(("Y", "AH0"))], DialectForm)


def test_the_english_word_graph_weighs_weak_forms_and_other_models_get_none():
    from aligner import api
    from aligner.alignment.decoding import words as wd

    model = api.load_model()
    prons = wd.with_dialect(model, [[("AH0", "N", "D"), ("AE1", "N", "D")], [("K", "AE1", "T")]], "rhotic",
                            labels=["and", "cat"])
    assert prons[0][-1] == ("AH0", "N") and isinstance(prons[0][-1], WeakForm)
    g, exps = wd.word_graph(model, prons)
    first = {g.alt[n]: g.node_bonus[n] for n in np.flatnonzero(g.word_start == 0)}
    weak = [a for a, (phones, _) in enumerate(exps[0]) if phones == ("AH0", "N")]
    by_rule = [a for a in range(len(exps[0])) if a and exps[0][a][0] == exps[0][a - 1][0]]  # final /d/ unreleased
    # the first word's glottal onsets stay out of the graph (the leading silence is the edge's); the
    # graph numbers the alternatives it keeps in order
    kept = [a for a, (_, exp) in enumerate(exps[0]) if exp.symbols[0] != "q"]
    assert weak and by_rule and set(first) == set(range(len(kept))) and len(kept) < len(exps[0])
    for alt, value in first.items():
        a = kept[alt]
        assert value == (wd.WEAK_FORM_BONUS if a in weak else 0.0) + (wd.RULE_VARIANT_BONUS if a in by_rule else 0.0)
    # without labels, nothing is added
    assert wd.with_dialect(model, [[("AH0", "N", "D")]], "rhotic") == [[("AH0", "N", "D")]]


def test_words_of_another_language_written_in_ipa_get_no_weak_forms():
    ipa = [[("m", "e")], [("a", "n", "d")]]
    assert with_weak_forms(["me", "and"], ipa) == ipa
