"""Splitting ARPAbet stops and affricates into closure + release for decoding, and merging back.

In ARPAbet (and in the folded ``timit39`` set) a stop such as ``D`` covers its closure *and*
its burst. In TIMIT, which the model is trained on, the closure is a phone of its own (``dcl``,
classifier class ``sil``) and ``d`` is the burst alone, about 2 frames long; the affricates
are written ``tcl ch`` and ``dcl jh``. Decoding an ARPAbet ``D`` as one phone would give it the
duration statistics of a burst and ask the classifier for class ``d`` over frames that sound
like silence.

So, for phone sets without closure symbols, the aligner decodes an *expanded* sequence in which
every stop or affricate is preceded by its TIMIT closure (:func:`expand_stop_closures`): class
``sil``, written with the TIMIT closure symbol so that per-symbol duration statistics
(:meth:`aligner.alignment.model.DurationStats.for_phones`) give it closure durations. After
decoding, each (closure, stop) pair is merged back into one phone that starts at the closure's
start and carries the user's symbol (:func:`merge_stop_closures`), so the output holds exactly
the input symbols in input order.

TIMIT-61 transcripts write their closures and are decoded as given.

A universal model's view decodes each pause between two phones as two silences in a row
(:func:`pauses_as_two_silences`), merged back the same way: the model learned its silences from
recordings of a word each, with a silence before and after it, and a pause between two words of a
session is one such recording's end and the next one's start. Decoded as one silence, the pause's
agreement (a mean over its frames) spread over twice the frames, each of its frames weighed half
against the phones beside it, and the words reached into the pause (docs/results.md, sessions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from aligner.phones.sets import CLASSES39, PhoneSet, SILENCE, TIMIT39_INVENTORY, TIMIT61_CLOSURES

__all__ = [
    "CLOSURE_OF_STOP",
    "ExpandedTranscript",
    "phone_set_has_closures",
    "should_split_stops",
    "expand_stop_closures",
    "merge_stop_closures",
    "pauses_as_two_silences",
]

#: Class-level stop/affricate symbol -> the TIMIT closure symbol that precedes it.
CLOSURE_OF_STOP: dict[str, str] = {
    "b": "bcl", "d": "dcl", "g": "gcl",
    "p": "pcl", "t": "tcl", "k": "kcl",
    "ch": "tcl", "jh": "dcl",
}  # fmt: skip

_SILENCE_CLASS = CLASSES39.index(SILENCE)


@dataclass(frozen=True)
class ExpandedTranscript:
    """A transcript with a closure inserted before every stop and affricate.

    ``symbols`` (N internal symbols: closures as TIMIT closure symbols, every other phone as
    written by the user), ``classes`` (N,) their indices in :data:`aligner.phones.sets.CLASSES39`,
    and ``owner`` (N,) the index of the output (user) phone each internal phone belongs to,
    non-decreasing, from 0 to ``n_output - 1``.
    """

    symbols: list
    classes: np.ndarray
    owner: np.ndarray
    n_output: int

    @property
    def n_closures(self) -> int:
        """How many closures were inserted."""
        return len(self.symbols) - self.n_output


def phone_set_has_closures(phone_set: PhoneSet) -> bool:
    """True if the phone set writes stop closures as phones of their own (TIMIT-61)."""
    return all(c in phone_set for c in TIMIT61_CLOSURES)


def should_split_stops(phone_set: PhoneSet, split_stops: bool | None = None) -> bool:
    """Whether to split stops before decoding: ``split_stops`` if given, else automatic (split
    exactly when ``phone_set`` has no closure symbols: ``arpabet`` and ``timit39``). A model's
    own phone set (not of the 39 classes) never splits: the closures are TIMIT's."""
    if phone_set.inventory is not TIMIT39_INVENTORY:
        return False
    if split_stops is None:
        return not phone_set_has_closures(phone_set)
    return bool(split_stops)


def expand_stop_closures(symbols: Sequence[str], phone_set: PhoneSet) -> ExpandedTranscript:
    """Insert the TIMIT closure before every stop and affricate of ``symbols``.

    A symbol is a stop or affricate when its class (:meth:`PhoneSet.class_of`) is one of
    :data:`CLOSURE_OF_STOP`; ARPAbet ``D``, ``CH``, timit39 ``d`` all are. The inserted closure
    has class ``sil`` and the closure symbol (``dcl`` for ``D``), which is its duration key.
    Every symbol must be in ``phone_set`` (KeyError otherwise).
    """
    out_symbols: list = []
    classes: list = []
    owner: list = []
    for i, symbol in enumerate(symbols):
        cls = phone_set.class_of(symbol)
        closure = CLOSURE_OF_STOP.get(cls)
        if closure is not None:
            out_symbols.append(closure)
            classes.append(_SILENCE_CLASS)
            owner.append(i)
        out_symbols.append(symbol)
        classes.append(phone_set.class_index(symbol))
        owner.append(i)
    return ExpandedTranscript(out_symbols, np.array(classes, np.int64), np.array(owner, np.int64),
                              len(symbols))


def merge_stop_closures(internal_starts_s: np.ndarray, expanded: ExpandedTranscript) -> np.ndarray:
    """Start times (s), shape (``n_output``,), of the user's phones from the start times (s)
    of the ``expanded`` internal phones: each phone starts where its first internal phone
    (its closure, for a stop) starts."""
    starts = np.asarray(internal_starts_s, dtype=float)
    if starts.shape != expanded.owner.shape:
        raise ValueError(f"{len(starts)} start times for {len(expanded.owner)} internal phones")
    first = np.ones(len(starts), dtype=bool)
    first[1:] = expanded.owner[1:] != expanded.owner[:-1]
    return starts[first]


def pauses_as_two_silences(symbols: Sequence[str], phone_set: PhoneSet) -> ExpandedTranscript | None:
    """``symbols`` (K, edge silences included) with each silence between two phones (a pause
    between words) decoded as two silences in a row (module docstring), or None where they hold no
    such pause. Every symbol must be in ``phone_set`` (KeyError otherwise)."""
    classes = np.asarray(phone_set.class_indices(symbols), np.int64)
    silent = classes == phone_set.inventory.silence_index
    pauses = np.flatnonzero(silent[1:-1] & ~silent[:-2] & ~silent[2:]) + 1
    if not len(pauses):
        return None
    owner = np.sort(np.concatenate([np.arange(len(symbols)), pauses]))
    return ExpandedTranscript([symbols[i] for i in owner], classes[owner], owner, len(symbols))
