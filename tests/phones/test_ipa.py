"""Any phone in IPA or X-SAMPA read as phonological features (aligner.phones.ipa)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("panphon")

from aligner.phones.ipa import (COMPOSITION_DIMS, IpaError, ascii_habits, broad_class,  # noqa: E402
                                composition_vector, is_silence_symbol, read_ipa, read_xsampa)


def test_field_transcriptions_ascii_habits():
    assert ascii_habits("t'") == "tʼ"  # ejective after an obstruent
    assert ascii_habits("j'") == "jˀ" and ascii_habits("m'ː") == "mˀː"  # glottalised after a sonorant
    assert ascii_habits("a:") == "aː" and ascii_habits("g") == "ɡ"
    # an ASCII g under a tone or length mark that Unicode composes with it (ǧ, ḡ, ğ): still the IPA ɡ
    for composed, mark in (("ǧ", "\u030c"), ("ḡ", "\u0304"), ("ğ", "\u0306"), ("ǵ", "\u0301")):
        assert ascii_habits(composed) == "ɡ" + mark
        assert np.array_equal(read_ipa(composed).parts, read_ipa("ɡ" + mark).parts)
    assert read_ipa("t'").feature("cg") == 1 and read_ipa("t'").feature("voi") == -1
    # invisible format characters a label copied from a document may carry: dropped
    for invisible in ("\u200b", "\ufeff", "\u200d", "\u200e", "\u00ad"):
        assert read_ipa(f"{invisible}t\u0283{invisible}").ipa == "t\u0283", repr(invisible)
        assert is_silence_symbol(invisible) and read_ipa(invisible).ipa == "sil"
    assert read_ipa("a:").feature("long") == 1 and read_ipa("a").feature("long") == -1


def test_leading_stress_and_withdrawn_click_letters():
    stressed = read_ipa("ˈaː")
    assert stressed.ipa == "aː" and stressed.symbol == "ˈaː"  # the canonical phone; the output keeps the symbol
    assert np.array_equal(stressed.parts, read_ipa("aː").parts) and read_ipa("ˌe").ipa == "e"
    for old, new in (("ʇ", "ǀ"), ("ʗ", "ǃ"), ("ʖ", "ǁ"), ("ʗʰ", "ǃʰ")):
        assert np.array_equal(read_ipa(old).parts, read_ipa(new).parts), old
        assert read_ipa(old).feature("velaric") == 1
    with pytest.raises(IpaError, match="starts with the mark"):
        read_ipa("ˈ")  # a stress mark alone is no phone


def test_intonation_marks_carry_no_feature():
    for marked, plain in (("ꜜá", "á"), ("ꜛa", "a"), ("↗ba", "ba"), ("a↘", "a"), ("e↗", "e")):
        assert np.array_equal(read_ipa(marked).parts, read_ipa(plain).parts), marked
        assert read_ipa(marked).symbol == marked
    assert read_ipa("ꜜa").ipa == "a"  # a leading downstep is left out of the canonical spelling
    with pytest.raises(IpaError, match="starts with the mark"):
        read_ipa("↗")  # an intonation mark alone is no phone


def test_other_withdrawn_and_sinological_letters_read_as_their_successors():
    for old, new in (("ɼ", "r̝"), ("ʆ", "ʃʲ"), ("ʓ", "ʒʲ"), ("ʚ", "ɞ"), ("ʮ", "ʉ"), ("ʯ", "ʉ"), ("ᵻ", "ɨ"),
                     ("ᵿ", "ʊ̈"), ("ɼː", "r̝ː"), ("ƥ", "ɓ̥"), ("ƭ", "ɗ̥"), ("ƈ", "ʄ̊"), ("ƙ", "ɠ̊"), ("ʠ", "ʛ̥"),
                     ("ƞ", "n̩"), ("ƫ", "tʲ"), ("ȶ", "t̠ʲ"), ("ȡ", "d̠ʲ"), ("ȵ", "n̠ʲ"), ("ȴ", "l̠ʲ"), ("ǝ", "ə"),
                     ("ꭧ", "ʈ͡ʂ"), ("ꭦ", "ɖ͡ʐ"), ("ƭʰ", "ɗ̥ʰ")):
        assert np.array_equal(read_ipa(old).parts, read_ipa(new).parts), old
        assert read_ipa(old).symbol == old
    assert read_ipa("ʆ").feature("hi") == 1 and read_ipa("ʃ").feature("hi") == -1  # palatalised
    with pytest.raises(IpaError, match="not a letter of the IPA"):
        read_ipa("A")  # an ASCII capital stays an error naming the symbol


def test_a_modifier_letter_alone_is_the_sound_it_stands_for():
    for lone, sound in (("ʰ", "h"), ("ʱ", "ɦ"), ("ⁿ", "n"), ("ᵐ", "m"), ("ᵑ", "ŋ"), ("ʼ", "ʔ"), ("ʷ", "w")):
        seg = read_ipa(lone)
        assert seg.symbol == lone and seg.ipa == sound and np.array_equal(seg.parts, read_ipa(sound).parts), lone
    assert read_ipa("tʰ").feature("sg") == 1 and len(read_ipa("ⁿd").parts) == 1  # as marks they stay marks
    for released in ("tⁿ", "pᵐ", "kᵑ"):  # nasal release after a stop, of any place
        seg = read_ipa(released)
        assert len(seg.parts) == 1 and seg.feature("nas") == 1, released
    with pytest.raises(IpaError, match="starts with the mark"):
        read_ipa("ː")  # length alone is no sound


def test_a_superscript_letter_before_a_letter_is_an_onset_part():
    """Pre-stopped fricatives (``ᵗs``, ``ᵈz``, ``ᵏx``) read as the letters' two parts, the stop first (as the
    untied ``ts``); the pre-marks that set a feature (``ⁿd``, ``ʰt``) stay one part."""
    for pre, plain in (("ᵗs", "ts"), ("ᵈz", "dz"), ("ᵏx", "kx"), ("ᵖf", "pf")):
        seg = read_ipa(pre)
        assert seg.symbol == pre and len(seg.parts) == 2, pre
        assert np.array_equal(seg.parts[0], read_ipa(plain[0]).parts[0]), pre
        assert np.array_equal(seg.parts[1], read_ipa(plain[1]).parts[0]), pre
    assert len(read_ipa("ⁿd").parts) == 1 and len(read_ipa("ʰt").parts) == 1
    with pytest.raises(IpaError, match="starts with the mark"):
        read_ipa("ᵗ")  # a superscript letter alone (not a modifier the transcriptions use as a phone)
    with pytest.raises(IpaError, match="tone letter '˥'.*as in 'a˥'"):
        read_ipa("˥")  # a tone letter written apart from its vowel: the message says where it goes


def test_diacritics_length_and_tie_bars_are_features():
    assert read_ipa("ʃʲ").feature("back") == -1 and read_ipa("ʃʲ").feature("hi") == 1
    assert read_ipa("kʷ").feature("round") == 1 and read_ipa("k").feature("round") == -1
    assert read_ipa("ã").feature("nas") == 1 and read_ipa("l̥").feature("voi") == -1
    assert read_ipa("bˀː").feature("cg") == 1 and read_ipa("bˀː").feature("long") == 1  # no row in panphon
    for affricate in ("d͡ʒ", "dʒ", "t͡s", "ts"):  # tied or not, one segment
        seg = read_ipa(affricate)
        assert len(seg.parts) == 1 and broad_class(seg) == "affricate", affricate
    assert len(read_ipa("k͡p").parts) == 1 and broad_class(read_ipa("k͡p")) == "stop"
    glide_vowel = read_ipa("w͡a")
    assert len(glide_vowel.parts) == 2 and glide_vowel.feature("syl", 1) == 1
    assert broad_class(read_ipa("ai")) == "vowel" and len(read_ipa("ai").parts) == 2


def test_tone_marks_are_read():
    for toned in ("á", "a˥˩", "a55", "ā"):
        assert read_ipa(toned).tone, toned
    assert read_ipa("á").feature("hitone") == 1 and not read_ipa("a").tone


def test_silence_labels():
    for s in ("", "sil", "SP", "<p:>"):
        seg = read_ipa(s)
        assert seg.silence and broad_class(seg) == "silence"


@pytest.mark.parametrize("symbol, names", [("A", "'A'"), ("p01", "'0'"), ("ʼa", "starts with the mark"),
                                           ("abcd", "4 segments"), ("a b", "space")])
def test_a_symbol_that_is_not_ipa_is_one_line_naming_it(symbol, names):
    with pytest.raises(IpaError) as err:
        read_ipa(symbol)
    message = str(err.value)
    assert f"phone {symbol!r}" in message and names in message and "\n" not in message


def test_x_sampa():
    assert read_xsampa("t_h").ipa == "tʰ" and read_xsampa("tS").feature("delrel") == 1
    assert read_xsampa("E").ipa == "ɛ" and read_xsampa("a:").feature("long") == 1


def test_composition_vectors_tell_phones_apart_by_their_features():
    t, d, tw = (composition_vector(read_ipa(s)) for s in ("t", "d", "tʷ"))
    assert t.shape == (COMPOSITION_DIMS,) and t[0] == 1.0
    assert 0 < np.abs(t - d).sum() < np.abs(t - composition_vector(read_ipa("a"))).sum()
    assert np.abs(t - tw).sum() > 0
    sil = composition_vector(read_ipa(""))
    assert sil[1] == 1.0 and sil[0] == 1.0


def test_reading_ipa_does_not_import_panphon():
    # its table is read where the package lies: importing panphon (and pandas) would cost a
    # process about 0.4 s of start-up
    code = ("import sys; from aligner.phones.ipa import read_ipa; read_ipa('d͡ʒ'); "
            "print('panphon' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_reading_ipa_without_panphon_says_what_to_install(monkeypatch):
    import importlib.util

    from aligner.phones import ipa

    ipa._bases.cache_clear()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    try:
        with pytest.raises(ipa.IpaError, match=r"pip install 'aligner\[languages\]'"):
            ipa._bases()
    finally:
        ipa._bases.cache_clear()
