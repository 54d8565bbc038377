"""Cutting CVC vowel tokens from hand-labelled TIMIT-layout utterances (SPEC section 5).

A token is a vowel whose neighbours on both sides are runs of obstruents or nasals: stops with
their closures, fricatives, affricates, nasals, the flap and the glottal stop. The cut runs from
the first phone of the (maximal) run before the vowel to the last phone of the run after it, so
each token holds consonants, one vowel, consonants, as a phonologist's CVC recording would.

Times are in samples of the 16 kHz recording unless a name says seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aligner.phones.sets import BROAD_CLASS_OF, TIMIT61, TIMIT61_CLOSURES, TIMIT61_TO_39, TIMIT61_VOWELS

#: TIMIT-61 vowels (including the reduced and r-coloured ones)
TIMIT_VOWELS = TIMIT61_VOWELS
#: TIMIT-61 obstruents and nasals that may flank a CVC token's vowel: stops (with their closures
#: and the flap), affricates, fricatives and nasals, and the glottal stop; not /h/ (``hh``, ``hv``),
#: which constricts no more than the vowel it precedes (TIMIT's own tables list it with the glides)
TIMIT_FLANKS = frozenset(
    s for s in TIMIT61
    if BROAD_CLASS_OF[TIMIT61_TO_39[s]] in ("stop", "affricate", "fricative", "nasal")
    and TIMIT61_TO_39[s] != "hh") | TIMIT61_CLOSURES | {"q"}


@dataclass(frozen=True)
class VowelToken:
    """One CVC token of an utterance: the cut and the vowel inside it, in samples."""

    cut_start: int
    cut_end: int  #: exclusive
    vowel_start: int
    vowel_end: int  #: exclusive
    vowel: str
    context: tuple  #: the phone labels of the cut, in order

    @property
    def onset_in_cut(self) -> int:
        """Vowel onset relative to the cut start, samples."""
        return self.vowel_start - self.cut_start

    @property
    def offset_in_cut(self) -> int:
        """Vowel offset (exclusive) relative to the cut start, samples."""
        return self.vowel_end - self.cut_start


def cvc_tokens(starts, ends, labels) -> list:
    """The CVC tokens of one utterance given its phones (``.phn`` rows: start, end, label).

    A vowel qualifies when the phone right before it and the phone right after it are both in
    :data:`TIMIT_FLANKS`; each run is extended while its phones stay in that set.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    labels = [str(x) for x in labels]
    tokens = []
    for i, label in enumerate(labels):
        if label not in TIMIT_VOWELS or i == 0 or i == len(labels) - 1:
            continue
        if labels[i - 1] not in TIMIT_FLANKS or labels[i + 1] not in TIMIT_FLANKS:
            continue
        first = i - 1
        while first > 0 and labels[first - 1] in TIMIT_FLANKS:
            first -= 1
        last = i + 1
        while last < len(labels) - 1 and labels[last + 1] in TIMIT_FLANKS:
            last += 1
        tokens.append(VowelToken(int(starts[first]), int(ends[last]), int(starts[i]), int(ends[i]), label,
                                 tuple(labels[first:last + 1])))
    return tokens
