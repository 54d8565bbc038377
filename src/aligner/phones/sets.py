"""Phone sets, the 39 classes of Lee & Hon (1989) and the broad classes: the one phonetic table.

Three phone sets are known:

``timit61``
    The 61 symbols of the TIMIT ``.phn`` files (lower case as the corpus writes them).
``timit39``
    The 39 folded classes themselves (:data:`CLASSES39`), for transcripts already folded.
``arpabet``
    The 39 phones of the CMU Pronouncing Dictionary, case-insensitive, with the vowel stress
    digits 0/1/2 ignored (``AH0`` = ``ah``), plus the silence symbols ``sil`` and ``sp``.

Every set maps each of its symbols onto one of the 39 classes, which is what the frame classifier
and the duration model see. The folding is the one of Lee & Hon (1989) as used by Keshet et al.
(closures, pauses and ``h#`` become ``sil``). One choice is ours: TIMIT's glottal stop ``q`` is
also mapped to ``sil`` (Lee & Hon drop it from the label sequence; an aligner cannot drop a
phone, and a glottal stop is acoustically a short closure).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Mapping, Sequence

import numpy as np

from aligner.errors import TranscriptError

__all__ = [
    "SILENCE",
    "CLASSES39",
    "TIMIT61",
    "TIMIT61_TO_39",
    "ARPABET",
    "ARPABET_TO_39",
    "ARPABET_VOWELS",
    "BROAD_CLASSES",
    "BROAD_CLASS_OF",
    "VOWEL_CLASSES",
    "NASAL_CLASSES",
    "GLIDE_CLASSES",
    "TIMIT61_VOWELS",
    "TIMIT61_CLOSURES",
    "PHONE_SET_NAMES",
    "OPEN_PHONE_SET_NAMES",
    "PhoneInventory",
    "TIMIT39_INVENTORY",
    "PhoneSet",
    "model_phone_set",
    "get_phone_set",
    "detect_phone_set",
]

SILENCE = "sil"

#: The 39 classes of Lee & Hon (1989): 38 phone classes in alphabetical order, then ``sil`` last.
#: A symbol's class index is its position in this tuple.
CLASSES39: tuple[str, ...] = (
    "aa", "ae", "ah", "aw", "ay", "b", "ch", "d", "dh", "dx",
    "eh", "er", "ey", "f", "g", "hh", "ih", "iy", "jh", "k",
    "l", "m", "n", "ng", "ow", "oy", "p", "r", "s", "sh",
    "t", "th", "uh", "uw", "v", "w", "y", "z",
    SILENCE,
)  # fmt: skip

#: Broad classes of the 39 classes: manner of articulation, one name per class. ``hh`` is a
#: (glottal) fricative; ``dx`` (the flap) a stop.
BROAD_CLASSES: dict[str, tuple[str, ...]] = {
    "vowel": ("iy", "ih", "eh", "ae", "ah", "uw", "uh", "aa", "ey", "ay", "oy", "aw", "ow", "er"),
    "glide": ("l", "r", "w", "y"),
    "nasal": ("m", "n", "ng"),
    "stop": ("b", "d", "g", "p", "t", "k", "dx"),
    "affricate": ("jh", "ch"),
    "fricative": ("s", "sh", "z", "f", "th", "v", "dh", "hh"),
    "silence": (SILENCE,),
}  # fmt: skip

#: class (one of :data:`CLASSES39`) -> its broad class (a key of :data:`BROAD_CLASSES`)
BROAD_CLASS_OF: dict[str, str] = {c: b for b, members in BROAD_CLASSES.items() for c in members}
assert sorted(BROAD_CLASS_OF) == sorted(CLASSES39)

#: the vowel classes, in the order of :data:`CLASSES39`
VOWEL_CLASSES: tuple[str, ...] = tuple(c for c in CLASSES39 if BROAD_CLASS_OF[c] == "vowel")
NASAL_CLASSES: tuple[str, ...] = tuple(c for c in CLASSES39 if BROAD_CLASS_OF[c] == "nasal")
GLIDE_CLASSES: tuple[str, ...] = tuple(c for c in CLASSES39 if BROAD_CLASS_OF[c] == "glide")


#: broad class -> its index in :data:`BROAD_CLASSES`
_BROAD_INDEX: dict[str, int] = {b: i for i, b in enumerate(BROAD_CLASSES)}


class PhoneInventory:
    """The classes a model tells apart, each with its broad class (a key of :data:`BROAD_CLASSES`).

    ``classes``: the class names, in the order of the frame classifier's outputs;
    ``broad``: the broad class of each. Exactly one class is silence (broad class ``silence``):
    pauses, utterance edges and (in TIMIT's convention) stop closures. The shipped models use
    :data:`TIMIT39_INVENTORY` (the 39 classes of Lee & Hon); a model trained on another phone set
    stores its own (:meth:`to_json`), so nothing that reads a model assumes English.
    """

    def __init__(self, classes, broad):
        self.classes: tuple[str, ...] = tuple(map(str, classes))
        self.broad: tuple[str, ...] = tuple(map(str, broad))
        if len(self.classes) != len(self.broad) or len(self.classes) < 2:
            raise ValueError("a phone inventory needs at least two classes, each with one broad class")
        if len(set(self.classes)) != len(self.classes) or any(not c.strip() for c in self.classes):
            raise ValueError("phone inventory class names must be distinct and non-empty")
        unknown = sorted(set(self.broad) - set(BROAD_CLASSES))
        if unknown:
            raise ValueError(f"unknown broad class {unknown[0]!r}; choose from {', '.join(BROAD_CLASSES)}")
        silences = [i for i, b in enumerate(self.broad) if b == "silence"]
        if len(silences) != 1:
            raise ValueError(f"a phone inventory needs exactly one silence class, got {len(silences)}")
        #: index of the silence class
        self.silence_index: int = silences[0]
        self._index = {c: i for i, c in enumerate(self.classes)}
        #: (C,) int64: index of every class's broad class in :data:`BROAD_CLASSES`
        self.broad_indices: np.ndarray = np.array([_BROAD_INDEX[b] for b in self.broad], np.int64)
        self.broad_indices.setflags(write=False)

    def __len__(self) -> int:
        return len(self.classes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PhoneInventory) and (self.classes, self.broad) == (other.classes, other.broad)

    def __hash__(self) -> int:
        return hash((self.classes, self.broad))

    def __repr__(self) -> str:
        return f"PhoneInventory({len(self.classes)} classes)"

    @property
    def silence(self) -> str:
        return self.classes[self.silence_index]

    def index(self, name: str) -> int:
        """The index of class ``name``; KeyError if the inventory has no such class."""
        return self._index[name]

    def indices_of(self, broad: str) -> np.ndarray:
        """(n,) int64 indices of the classes of broad class ``broad``, in inventory order."""
        return np.array([i for i, b in enumerate(self.broad) if b == broad], np.int64)

    def to_json(self) -> dict:
        return {"classes": list(self.classes), "broad_classes": list(self.broad)}

    @classmethod
    def from_json(cls, d: Mapping) -> "PhoneInventory":
        """The inventory of a model's JSON (``classes`` and ``broad_classes``); a model saved
        before inventories were stored has ``classes`` only, which must then be the 39."""
        classes = d["classes"]
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise ValueError("classes must be a list of names")
        if "broad_classes" not in d:
            if classes != list(CLASSES39):
                raise ValueError("phone classes differ from the 39 and the model names no broad classes")
            return TIMIT39_INVENTORY
        broad = d["broad_classes"]
        if not isinstance(broad, list) or not all(isinstance(b, str) for b in broad):
            raise ValueError("broad_classes must be a list of names")
        return cls(classes, broad)


#: The inventory of the shipped models: the 39 classes of Lee & Hon and their broad classes.
TIMIT39_INVENTORY = PhoneInventory(CLASSES39, [BROAD_CLASS_OF[c] for c in CLASSES39])


# TIMIT symbols that fold into another class; every other TIMIT-61 symbol is its own class.
_TIMIT_FOLDS: dict[str, str] = {
    "ao": "aa",
    "ax": "ah", "ax-h": "ah",
    "axr": "er",
    "hv": "hh",
    "ix": "ih",
    "el": "l",
    "em": "m",
    "en": "n", "nx": "n",
    "eng": "ng",
    "zh": "sh",
    "ux": "uw",
    # closures, pauses, utterance edges and (our choice, see the module docstring) the glottal stop
    "pcl": SILENCE, "tcl": SILENCE, "kcl": SILENCE,
    "bcl": SILENCE, "dcl": SILENCE, "gcl": SILENCE,
    "h#": SILENCE, "pau": SILENCE, "epi": SILENCE, "q": SILENCE,
}  # fmt: skip

#: The 61 TIMIT phone symbols, in alphabetical order.
TIMIT61: tuple[str, ...] = tuple(
    sorted((set(CLASSES39) - {SILENCE}) | set(_TIMIT_FOLDS))
)

#: TIMIT-61 symbol -> its class in :data:`CLASSES39`.
TIMIT61_TO_39: dict[str, str] = {s: _TIMIT_FOLDS.get(s, s) for s in TIMIT61}

#: The 39 phones of the CMU Pronouncing Dictionary (lower case, without stress digits).
ARPABET: tuple[str, ...] = (
    "aa", "ae", "ah", "ao", "aw", "ay", "b", "ch", "d", "dh",
    "eh", "er", "ey", "f", "g", "hh", "ih", "iy", "jh", "k",
    "l", "m", "n", "ng", "ow", "oy", "p", "r", "s", "sh",
    "t", "th", "uh", "uw", "v", "w", "y", "z", "zh",
)  # fmt: skip

_ARPABET_SILENCES = ("sil", "sp")

#: TIMIT-61 symbols of the vowel classes (reduced and r-coloured vowels included).
TIMIT61_VOWELS = frozenset(s for s in TIMIT61 if BROAD_CLASS_OF[TIMIT61_TO_39[s]] == "vowel")

#: TIMIT-61 stop closures, which TIMIT writes as phones of their own before the release.
TIMIT61_CLOSURES = frozenset(("bcl", "dcl", "gcl", "pcl", "tcl", "kcl"))

#: ARPAbet symbol (lower case, no stress) -> its class; includes the silence symbols sil and sp.
ARPABET_TO_39: dict[str, str] = {
    **{p: {"ao": "aa", "zh": "sh"}.get(p, p) for p in ARPABET},
    **{s: SILENCE for s in _ARPABET_SILENCES},
}

#: ARPAbet vowels (lower case, no stress digit): the ones that carry stress in the dictionary.
ARPABET_VOWELS = frozenset(p for p in ARPABET if BROAD_CLASS_OF[ARPABET_TO_39[p]] == "vowel")

PHONE_SET_NAMES = ("timit61", "timit39", "arpabet")
#: phone sets of any phone, read as features (:class:`~aligner.phones.ipa.OpenPhoneSet`): a
#: transcript in them is aligned by the universal model, or through an English model's closest phones
OPEN_PHONE_SET_NAMES = ("ipa", "xsampa")

_TIMIT61_SET = frozenset(TIMIT61)
_STRESSED_VOWEL = re.compile(r"^([a-z]+)[012]$")


class PhoneSet:
    """A named set of phone symbols, each mapped onto one class of a :class:`PhoneInventory`.

    The sets of :func:`get_phone_set` map onto the 39 classes (:data:`TIMIT39_INVENTORY`) and
    are looked up case-insensitively (the ``arpabet`` set also strips a vowel's stress digit);
    a model trained on its own phones has a case-sensitive set of them
    (:func:`model_phone_set`). Use those functions rather than building one.
    """

    def __init__(self, name: str, description: str, to_class: Mapping[str, str], strip_stress: bool,
                 inventory: "PhoneInventory | None" = None, case_sensitive: bool = False):
        self.name = name
        self.description = description
        self._to_class = dict(to_class)
        self._strip_stress = strip_stress
        self._case_sensitive = case_sensitive
        #: the classes the symbols map onto
        self.inventory: PhoneInventory = TIMIT39_INVENTORY if inventory is None else inventory
        missing = sorted(set(self._to_class.values()) - set(self.inventory.classes))
        if missing:
            raise ValueError(f"phone set {name!r} maps onto {missing[0]!r}, which is not a class of its inventory")
        #: The set's canonical symbols (lower case, without stress), sorted.
        self.symbols: tuple[str, ...] = tuple(sorted(self._to_class))
        self._class_index_of: dict[str, int] = {}  # transcript spelling -> class index, filled as met

    def __repr__(self) -> str:
        return f"PhoneSet({self.name!r}, {len(self.symbols)} symbols)"

    def normalize(self, symbol: str) -> str | None:
        """The canonical spelling of ``symbol`` in this set, or None if it is not in the set."""
        if self._case_sensitive:
            key = unicodedata.normalize("NFC", symbol.strip())
            return key if key in self._to_class else None
        key = symbol.strip().lower()
        if self._strip_stress:
            m = _STRESSED_VOWEL.match(key)
            if m and m.group(1) in ARPABET_VOWELS:
                key = m.group(1)
        return key if key in self._to_class else None

    def __contains__(self, symbol: object) -> bool:
        return isinstance(symbol, str) and self.normalize(symbol) is not None

    def class_of(self, symbol: str) -> str:
        """The class of ``symbol`` (e.g. TIMIT ``ix`` -> ``ih``); KeyError if unknown."""
        key = self.normalize(symbol)
        if key is None:
            raise KeyError(f"{symbol!r} is not in the {self.name} phone set")
        return self._to_class[key]

    def class_index(self, symbol: str) -> int:
        """The index of ``symbol``'s class in :attr:`inventory`; KeyError if unknown."""
        return self.inventory.index(self.class_of(symbol))

    def class_indices(self, symbols: Iterable[str]) -> np.ndarray:
        """:meth:`class_index` of every symbol, as an int64 array (each spelling looked up once
        per phone set: a transcript's phones recur)."""
        known = self._class_index_of
        out = []
        for s in symbols:
            index = known.get(s)
            if index is None:
                index = self.class_index(s)
                if len(known) < 10_000:  # bounded, whatever spellings a corpus holds
                    known[s] = index
            out.append(index)
        return np.array(out, dtype=np.int64)

    def first_unknown(self, symbols: Sequence[str]) -> int | None:
        """The position (0-based) of the first symbol not in this set, or None if all are."""
        for i, s in enumerate(symbols):
            if s not in self:
                return i
        return None

    def validate(self, symbols: Sequence[str], source: str, lines: Sequence[int] | None = None) -> None:
        """Raise :class:`TranscriptError` if ``symbols`` is empty or holds a symbol not in the set.

        ``source`` names where the symbols came from (a path or a description); ``lines``, if
        given, holds each symbol's line number in that file. The message names the first
        unknown symbol, its position (and line), the source and this phone set.
        """
        if not symbols:
            raise TranscriptError(f"{source}: transcript is empty (no phone symbols)")
        i = self.first_unknown(symbols)
        if i is not None:
            where = f"symbol {i + 1} of {len(symbols)}"
            if lines is not None:
                where += f", line {lines[i]}"
            raise TranscriptError(
                f"{source}: unknown phone {symbols[i]!r} ({where}) in the {self.name} phone set "
                f"({self.description})"
            )


_PHONE_SETS = {
    "timit61": PhoneSet("timit61", "the 61 TIMIT symbols", TIMIT61_TO_39, strip_stress=False),
    "timit39": PhoneSet(
        "timit39", "the 39 Lee & Hon classes", {c: c for c in CLASSES39}, strip_stress=False
    ),
    "arpabet": PhoneSet(
        "arpabet", "the 39 CMU ARPAbet phones, stress 0/1/2, plus sil and sp", ARPABET_TO_39,
        strip_stress=True,
    ),
}


def model_phone_set(inventory: PhoneInventory, to_class: Mapping[str, str], description: str = "") -> PhoneSet:
    """The phone set of a model trained on its own phones: ``to_class`` maps each symbol (as the
    training transcripts write it, Unicode NFC) onto a class of ``inventory``. Case-sensitive
    (IPA and X-SAMPA tell ``A`` from ``a``)."""
    symbols = {unicodedata.normalize("NFC", s): c for s, c in to_class.items()}
    return PhoneSet("model", description or f"the model's {len(symbols)} phones", symbols,
                    strip_stress=False, inventory=inventory, case_sensitive=True)


def get_phone_set(name: str, symbols: Sequence[str] | None = None, source: str = "transcript") -> PhoneSet:
    """The phone set called ``name`` (``timit61``, ``timit39``, ``arpabet``, ``auto``, or ``ipa``
    and ``xsampa``: an :class:`~aligner.phones.ipa.OpenPhoneSet` of any phone in that code).

    ``auto`` needs ``symbols`` and returns :func:`detect_phone_set` of them. An unknown name
    raises :class:`TranscriptError`.
    """
    key = name.strip().lower()
    if key in OPEN_PHONE_SET_NAMES:
        from aligner.phones.ipa import OpenPhoneSet

        return OpenPhoneSet(key)
    if key == "auto":
        if symbols is None:
            raise TypeError("get_phone_set('auto') needs the transcript's symbols to detect the set")
        return detect_phone_set(symbols, source)
    try:
        return _PHONE_SETS[key]
    except KeyError:
        raise TranscriptError(
            f"unknown phone set {name!r}; choose one of {', '.join(PHONE_SET_NAMES + OPEN_PHONE_SET_NAMES)} or auto"
        ) from None


def detect_phone_set(symbols: Sequence[str], source: str = "transcript") -> PhoneSet:
    """Guess the phone set of a transcript from its symbols.

    In order: ``timit61`` if every symbol is a TIMIT-61 symbol as written (lower case);
    ``arpabet`` if every symbol is ARPAbet (any case, stress stripped, sil/sp allowed);
    ``timit39`` if every symbol is one of the 39 classes; ``timit61`` if every symbol is TIMIT-61
    in some other case (e.g. ``H#``). Lower-case ARPAbet without stress digits is therefore
    reported as ``timit61``, which maps those symbols onto the same classes.
    Raises :class:`TranscriptError` naming the first symbol that is in none of the sets.
    """
    if not symbols:
        raise TranscriptError(f"{source}: transcript is empty (no phone symbols)")
    timit61, arpabet, timit39 = (_PHONE_SETS[n] for n in ("timit61", "arpabet", "timit39"))
    if all(s in _TIMIT61_SET for s in symbols):  # exact: TIMIT writes its symbols lower case
        return timit61
    for phone_set in (arpabet, timit39, timit61):
        if phone_set.first_unknown(symbols) is None:
            return phone_set
    for i, s in enumerate(symbols):
        if not any(s in p for p in (timit61, arpabet, timit39)):
            raise TranscriptError(
                f"{source}: unknown phone {s!r} (symbol {i + 1} of {len(symbols)}): it is in none of "
                "the phone sets timit61, arpabet or timit39"
            )
    # Every symbol is known to some set, but no single set holds them all.
    i = arpabet.first_unknown(symbols)
    j = timit61.first_unknown(symbols)
    raise TranscriptError(
        f"{source}: mixes phone sets: {symbols[i]!r} (symbol {i + 1}) is not ARPAbet and "
        f"{symbols[j]!r} (symbol {j + 1}) is not TIMIT-61; pass the phone set explicitly"
    )
