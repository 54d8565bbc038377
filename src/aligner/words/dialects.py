"""Dialect variants of CMUdict's (General American) pronunciations: r-less, non-rhotic English.

CMUdict writes every /r/ and r-coloured vowel an American speaker says. Non-rhotic Englishes
(RP, Australian, New Zealand, South African, much of the US East Coast and South) say /r/ only
before a vowel: ``offer`` /ɒfə/, ``north`` /nɔːθ/, ``near`` /nɪə/. :func:`non_rhotic` rewrites
an ARPAbet pronunciation (stress digits kept) that way:

* ``ER0``/``ER1``/``ER2`` (an r-coloured vowel) -> ``AH0``/``AH1``/``AH2``, followed by ``R``
  when a vowel follows in the word (``camera`` K AE1 M AH0 R AH0);
* a vowel + ``R`` not followed by a vowel of the word loses the ``R``: ``AA R`` -> ``AA``
  (START), ``AO R`` and ``OW R`` -> ``AO`` (NORTH, FORCE), ``AH R`` -> ``AH``; ``IY R``/``IH R``
  -> ``IH AH0`` (NEAR), ``EH R``/``EY R``/``AE R`` -> ``EH AH0`` (SQUARE), ``UH R``/``UW R`` ->
  ``UH AH0`` (CURE), ``AY R``, ``AW R``, ``OY R`` -> the diphthong + ``AH0`` (the centring
  glide; ``AH0`` is the 39-class model's schwa);
* an ``R`` between vowels, or after a consonant (``very``, ``tree``), stays.

``linking``: the word's r-less form with the ``R`` of a word-final r kept (``far away``: the
linking r before a vowel-initial word). :func:`dialect_pronunciations` gives a word's
alternatives for a ``--dialect``: ``rhotic`` the dictionary's own, ``non-rhotic`` their r-less
forms (and the linking forms where the next word begins with a vowel), ``auto`` both: the
decoder chooses by the acoustics, per token. A rule-made form is a :class:`DialectForm` (a
tuple), so that the decoder can weigh it against the dictionary's own (``auto``:
:data:`aligner.alignment.decoding.words.DIALECT_FORM_BONUS`).
"""

from __future__ import annotations

from typing import Sequence

#: the --dialect choices: ``auto`` offers the dictionary's and the r-less pronunciations
DIALECTS = ("auto", "rhotic", "non-rhotic")
#: the dialect used when none is given
DEFAULT_DIALECT = "auto"

#: vowel (no stress digit) -> what it becomes before a dropped post-vocalic R: (vowel, centring glide?)
_BEFORE_R = {"AA": ("AA", False), "AO": ("AO", False), "OW": ("AO", False), "AH": ("AH", False),
             "IY": ("IH", True), "IH": ("IH", True), "EH": ("EH", True), "EY": ("EH", True), "AE": ("EH", True),
             "UH": ("UH", True), "UW": ("UH", True), "AY": ("AY", True), "AW": ("AW", True), "OY": ("OY", True)}
GLIDE = "AH0"


class DialectForm(tuple):
    """A pronunciation (tuple of ARPAbet phones) made by a dialect rule, not the dictionary's."""

    __slots__ = ()


def _is_vowel(phone: str) -> bool:
    return phone[-1:].isdigit()


def _split(phone: str) -> tuple:
    """``(base, stress digit or "")`` of an ARPAbet phone."""
    return (phone[:-1], phone[-1]) if _is_vowel(phone) else (phone, "")


def non_rhotic(phones: Sequence[str], linking: bool = False) -> tuple:
    """The r-less (non-rhotic) form of an ARPAbet pronunciation (module docstring), upper case,
    stress digits kept; ``linking``: with the R of a word-final r kept."""
    up = [p.upper() for p in phones]
    out: list = []
    final_r = False
    for i, p in enumerate(up):
        vowel_next = i + 1 < len(up) and _is_vowel(up[i + 1])
        base, stress = _split(p)
        if base == "ER":
            out.append("AH" + stress)
            if vowel_next:
                out.append("R")
            elif i == len(up) - 1:
                final_r = True
            continue
        if p == "R" and out and _is_vowel(out[-1]) and not vowel_next and i > 0 and _is_vowel(up[i - 1]):
            vbase, vstress = _split(out[-1])
            new, glide = _BEFORE_R.get(vbase, (vbase, False))
            out[-1] = new + vstress
            if glide:
                out.append(GLIDE)
            final_r = i == len(up) - 1
            continue
        out.append(p)
    if linking and final_r:
        out.append("R")
    return tuple(out)


def ends_in_r(phones: Sequence[str]) -> bool:
    """Whether a pronunciation ends in an r a non-rhotic speaker drops (a final ``R`` after a
    vowel, or ``ER``)."""
    up = [p.upper() for p in phones]
    return bool(up) and (up[-1].startswith("ER") or (up[-1] == "R" and len(up) > 1 and _is_vowel(up[-2])))


def dialect_pronunciations(alternatives: Sequence[Sequence[str]], dialect: str = DEFAULT_DIALECT,
                           vowel_follows: bool = False) -> list:
    """A word's pronunciation alternatives (ARPAbet) for ``dialect`` (:data:`DIALECTS`; module
    docstring), each a tuple, without repeats, the dictionary's first. ``vowel_follows``: the
    next word of the transcript may begin with a vowel (then ``non-rhotic`` also offers the
    linking r)."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")
    # a marked form (a rule's DialectForm, a G2P variant: tuple subclasses) keeps its mark
    own = [p if isinstance(p, tuple) and type(p) is not tuple else tuple(p) for p in alternatives]
    if dialect == "rhotic":
        return own
    plain = {tuple(q.upper() for q in p) for p in own}

    def form(p: tuple) -> tuple:
        return p if p in plain else DialectForm(p)

    rless = [form(non_rhotic(p)) for p in own]
    if dialect == "auto":
        out = own + rless
    else:
        out = rless + [form(non_rhotic(p, linking=True)) for p in own if vowel_follows and ends_in_r(p)]
    seen: set = set()
    kept = []
    for p in out:
        key = tuple(q.upper() for q in p)
        if key not in seen:
            seen.add(key)
            kept.append(p)
    return kept


def begins_with_vowel(alternatives: Sequence[Sequence[str]]) -> bool:
    """Whether some pronunciation of a word begins with a vowel (ARPAbet stress digit)."""
    return any(p and _is_vowel(str(p[0])) for p in alternatives)
