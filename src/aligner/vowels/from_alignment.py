"""Vowels from a forced alignment: one row per vowel of the phones tier, with its word.

When a transcript exists, aligning it measures every vowel of a recording at once (the way
FAVE users get vowel tables from forced alignments): the vowel's interval is its phone's
interval, its word the words-tier interval that holds it, its stress the dictionary's digit
(ARPAbet ``AE1`` -> vowel ``AE``, stress ``1``; TIMIT phone transcripts have no stress: ``""``),
and its confidence the lower of the confidences of its two boundaries (the probability that
each lies within 20 ms of an annotator's; :mod:`aligner.alignment.review.confidence`). A vowel followed
by a pause or by the end of the recording takes its onset's confidence alone (the words
alignment does not list pauses, so their starts carry no confidence).

Times are in seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from aligner.phones.sets import ARPABET_VOWELS, TIMIT61_VOWELS

_STRESS = re.compile(r"^([A-Za-z]+)([012])$")


@dataclass(frozen=True)
class AlignedVowel:
    """One vowel of an aligned recording (seconds)."""

    word: str
    word_start_s: Optional[float]
    word_end_s: Optional[float]
    vowel: str
    stress: str
    onset_s: float
    offset_s: float
    confidence: Optional[float]
    #: both aligned neighbours are obstruents or nasals touching it (:func:`aligner.vowels.fused.cvc_context`)
    cvc: bool = False
    #: the vowel with the aligned obstruent/nasal runs around it (:func:`aligner.vowels.fused.consonant_runs`)
    runs_start_s: Optional[float] = None
    runs_end_s: Optional[float] = None

    @property
    def duration_s(self) -> float:
        return self.offset_s - self.onset_s


def vowel_and_stress(symbol: str, broad_of=None) -> Optional[tuple[str, str]]:
    """``(vowel, stress)`` of a phone symbol that is a vowel (ARPAbet with or without its stress
    digit, or TIMIT-61), else None: ``AE1`` -> ``("AE", "1")``, ``ix`` -> ``("ix", "")``.
    ``broad_of``: symbol -> its broad class or None, for a model's own phones (no stress)."""
    if broad_of is not None:
        return (symbol, "") if broad_of(symbol) == "vowel" else None
    m = _STRESS.match(symbol)
    if m and m.group(1).lower() in ARPABET_VOWELS:
        return m.group(1), m.group(2)
    if symbol.lower() in ARPABET_VOWELS or symbol in TIMIT61_VOWELS:
        return symbol, ""
    return None


def aligned_vowels(tiers: Sequence[tuple[str, Sequence]], confidences: Optional[dict] = None,
                   words: Optional[Sequence[str]] = None, stressed_only: bool = False,
                   broad_of=None) -> list[AlignedVowel]:
    """The vowels of an alignment's ``phones`` tier(s), in time order, each with its word.

    ``tiers``: ``[(name, [(start_s, end_s, label), ...]), ...]`` as :class:`aligner.api.Alignment`
    holds them (``phones`` and optionally ``words``; ``SPEAKER - phones`` / ``SPEAKER - words``
    pairs for several speakers); ``confidences``: tier name -> each interval's start confidence.
    ``words``: keep only vowels of these words (case-insensitive); ``stressed_only``: keep only
    vowels with primary or secondary stress (1 or 2). ``broad_of``: symbol -> broad class, for the
    phones of a model trained on its own phone set (:func:`broad_reader`).
    """
    from aligner.vowels.fused import consonant_runs, cvc_context

    wanted = None if words is None else {w.strip().lower() for w in words if w.strip()}
    by_name = dict(tiers)
    out = []
    for name, phones in tiers:
        kind = name.rsplit(" - ", 1)[-1]
        if kind != "phones":
            continue
        word_tier = by_name.get(name[:-len("phones")] + "words", [])
        conf = (confidences or {}).get(name)
        w = 0
        for i, (start, end, label) in enumerate(phones):
            found = vowel_and_stress(label, broad_of)
            if found is None:
                continue
            while w < len(word_tier) and word_tier[w][1] <= start + 1e-9:
                w += 1
            word = word_tier[w] if w < len(word_tier) and word_tier[w][0] <= start + 1e-9 else None
            if wanted is not None and (word is None or word[2].lower() not in wanted):
                continue
            if stressed_only and found[1] not in ("1", "2"):
                continue
            c = None
            if conf is not None:  # the offset's confidence is the next phone's start's, if it starts there
                adjacent = i + 1 < len(phones) and abs(phones[i + 1][0] - end) < 1e-9
                c = float(min(conf[i], conf[i + 1])) if adjacent else float(conf[i])
            out.append(AlignedVowel(word[2] if word else "", word[0] if word else None, word[1] if word else None,
                                    found[0], found[1], float(start), float(end), c,
                                    cvc_context(phones, i, broad_of), *consonant_runs(phones, i, broad_of)))
    return out


def broad_reader(model):
    """``symbol -> broad class or None`` of an alignment model trained on its own phones or of the
    universal model (each IPA phone by its features), or None for a 39-class model (whose TIMIT-61
    and ARPAbet symbols the tables of :mod:`aligner.phones.sets` know)."""
    if not hasattr(model, "phone_set"):  # the universal model: any IPA phone, a vowel by its features
        from aligner.phones.ipa import IpaError, broad_class, read_ipa

        def broad_of_ipa(symbol: str):
            try:
                return broad_class(read_ipa(symbol))
            except IpaError:
                return None

        return broad_of_ipa
    pset = model.phone_set
    if pset is None:
        return None
    inventory = model.inventory

    def broad_of(symbol: str):
        return inventory.broad[inventory.index(pset.class_of(symbol))] if symbol in pset else None

    return broad_of
