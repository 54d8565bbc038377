"""Weak forms of English function words: the reduced pronunciations connected speech uses.

Unstressed, most English function words lose their full vowel (``at`` /ət/, ``but`` /bət/,
``could`` /kəd/), often a consonant too (``and`` /ən/, ``of`` /ə/, ``have`` /əv/, ``him``
/ɪm/), the forms phonetics textbooks list as weak forms (Roach, *English Phonetics and
Phonology*, ch. 12; Cruttenden, *Gimson's Pronunciation of English*, 11.4). CMUdict holds some
of them (``the`` DH AH0, ``to`` T AH0, ``for`` F ER0) and not others. :data:`WEAK_FORMS` adds
the missing ones, in ARPAbet; :func:`with_weak_forms` offers them beside the dictionary's
pronunciations of those words, each a :class:`WeakForm` (a rule's form, as a dialect rule's is),
which the decoder weighs by :data:`aligner.alignment.decoding.words.WEAK_FORM_BONUS` and
chooses per token by the acoustics.
"""

from __future__ import annotations

from typing import Sequence

from aligner.phones.sets import ARPABET as _CMU_PHONES
from aligner.words.dialects import DialectForm
from aligner.words.g2p import strip_stress

#: function word (lower case) -> its weak forms missing from CMUdict (ARPAbet, stress digits kept)
WEAK_FORMS = {
    "and": ("AH0 N",),
    "of": ("AH0 V", "AH0"),
    "at": ("AH0 T",),
    "as": ("AH0 Z",),
    "but": ("B AH0 T",),
    "from": ("F R AH0 M",),
    "some": ("S AH0 M",),
    "you": ("Y AH0",),
    "your": ("Y ER0",),
    "he": ("IY0", "HH IY0"),
    "her": ("ER0",),
    "his": ("IH0 Z",),
    "him": ("IH0 M",),
    "them": ("AH0 M",),
    "have": ("HH AH0 V", "AH0 V"),
    "has": ("AH0 Z",),
    "had": ("HH AH0 D", "AH0 D"),
    "do": ("D AH0",),
    "does": ("D AH0 Z",),
    "could": ("K AH0 D",),
    "would": ("W AH0 D", "AH0 D"),
    "should": ("SH AH0 D",),
    "must": ("M AH0 S T", "M AH0 S"),
    "there": ("DH ER0",),
    "were": ("W ER0",),
    "she": ("SH IY0",),
    "we": ("W IY0",),
    "me": ("M IY0",),
    "us": ("AH0 S",),
    "shall": ("SH AH0 L",),
    "who": ("HH UW0", "UW0"),
}


#: the ARPAbet phones (:data:`aligner.phones.sets.ARPABET`, upper case, no stress digits): a word is
#: given weak forms only when its pronunciations are written in them (English words, not a
#: language's IPA through ``--language``)
ARPABET = frozenset(p.upper() for p in _CMU_PHONES)


class WeakForm(DialectForm):
    """A function word's weak form from :data:`WEAK_FORMS`, not the dictionary's pronunciation
    (a rule's form, as a :class:`~aligner.words.dialects.DialectForm` is)."""

    __slots__ = ()


def _plain(phones: Sequence[str]) -> tuple:
    """The phones without stress digits, upper case: the key two pronunciations share when they
    differ in stress alone."""
    return strip_stress(p.upper() for p in phones)


def with_weak_forms(words: Sequence[str], pronunciations: Sequence[Sequence[Sequence[str]]]) -> list:
    """Each word's alternatives (ARPAbet) with the weak forms of :data:`WEAK_FORMS` after them
    where ``words[i]`` (any case, surrounding punctuation ignored) is one of its words and its
    pronunciations are ARPAbet (:data:`ARPABET`); a weak form the word already has (up to
    stress) is not added twice."""
    out = []
    for word, alternatives in zip(words, pronunciations):
        alternatives = list(alternatives)
        extra = WEAK_FORMS.get(str(word).strip(".,;:!?\"'()").lower())
        if extra and all(set(_plain(p)) <= ARPABET for p in alternatives):
            seen = {_plain(p) for p in alternatives}
            for form in extra:
                phones = tuple(form.split())
                if _plain(phones) not in seen:
                    seen.add(_plain(phones))
                    alternatives.append(WeakForm(phones))
        out.append(alternatives)
    return out
