"""Reference alignments in another transcription style: TIMIT references as ARPAbet.

A TIMIT reference (``.phn``) writes closures, flaps, syllabic consonants, glottal stops and
several kinds of silence that an ARPAbet transcript (CMUdict style, what most users of the
aligner write) does not. To score the aligner on ARPAbet-style input, the reference is
converted into what an ARPAbet user would write and when each of those phones starts
(:func:`arpabet_reference`); ``python -m benchmarks.alignment.eval_arpabet_style`` does this for a
whole corpus.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from aligner.alignment.decoding.stop_closures import CLOSURE_OF_STOP

__all__ = ["RELEASES_OF_CLOSURE", "STOP_OF_CLOSURE", "TIMIT_TO_ARPABET", "GLOTTAL_STOP",
           "arpabet_reference"]

#: TIMIT closure -> the stops/affricates it can be the closure of (``tcl ch``, ``dcl jh``).
RELEASES_OF_CLOSURE: dict = {}
for _stop, _closure in CLOSURE_OF_STOP.items():
    RELEASES_OF_CLOSURE.setdefault(_closure, set()).add(_stop)
#: TIMIT closure -> the stop an unreleased closure is written as in ARPAbet.
STOP_OF_CLOSURE = {"bcl": "b", "dcl": "d", "gcl": "g", "pcl": "p", "tcl": "t", "kcl": "k"}
#: TIMIT-only symbols -> ARPAbet (every other TIMIT symbol is ARPAbet already; ``q`` is dropped).
TIMIT_TO_ARPABET = {
    "ix": "ih", "ax": "ah", "ax-h": "ah", "axr": "er", "hv": "hh", "el": "l", "em": "m",
    "en": "n", "nx": "n", "eng": "ng", "ux": "uw", "dx": "d",
    "h#": "sil", "pau": "sil", "epi": "sil",
}  # fmt: skip
#: the TIMIT glottal stop, which ARPAbet does not write
GLOTTAL_STOP = "q"


def arpabet_reference(starts_s, labels: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """What an ARPAbet user writes for a TIMIT reference, and when each of those phones starts.

    ``starts_s``: (K,) TIMIT phone start times in seconds; ``labels``: K TIMIT-61 symbols.
    Returns ``(starts_s, symbols)`` (lower-case ARPAbet, ``sil`` for silences):

    * a closure followed by its release (``dcl d``, ``tcl ch``, ``dcl jh``) is one phone, the
      release's symbol, starting at the closure's start;
    * a closure without its release (unreleased, or before another stop) becomes its stop;
    * :data:`TIMIT_TO_ARPABET` maps TIMIT-only symbols (``dx`` -> ``d``, ``h#``/``pau``/``epi``
      -> ``sil``, ...); consecutive silences become one ``sil``;
    * the glottal stop ``q`` is dropped and its time given to the *next* phone (which starts at
      the ``q``'s start: in TIMIT a ``q`` is the glottal onset of the following vowel); a final
      ``q`` goes to the phone before it.
    """
    out_starts: list = []
    out_symbols: list = []
    pending_start = None  # start of a dropped q, taken by the next phone
    i, n = 0, len(labels)
    while i < n:
        label, start = labels[i], float(starts_s[i])
        if pending_start is not None:
            start, pending_start = pending_start, None
        if label == GLOTTAL_STOP:
            pending_start = start
            i += 1
            continue
        if label in RELEASES_OF_CLOSURE:
            if i + 1 < n and labels[i + 1] in RELEASES_OF_CLOSURE[label]:
                symbol, i = labels[i + 1], i + 2
            else:
                symbol, i = STOP_OF_CLOSURE[label], i + 1
        else:
            symbol, i = TIMIT_TO_ARPABET.get(label, label), i + 1
        if symbol == "sil" and out_symbols and out_symbols[-1] == "sil":
            continue  # one silence: the earlier one extends over this one
        out_starts.append(start)
        out_symbols.append(symbol)
    return np.array(out_starts, float), out_symbols
