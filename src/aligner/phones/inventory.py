"""A model's phone inventory from its training data: which symbols become classes, and each
class's broad class (vowel, glide, nasal, stop, affricate, fricative, silence).

A corpus of hand-aligned phones in any symbols trains a model of its own classes
(:class:`~aligner.phones.sets.PhoneInventory`). :func:`build_inventory` decides them:

* **Silence.** Empty intervals (MFA's and Praat's gaps), the usual silence spellings
  (:data:`SILENCE_SPELLINGS`) and stop closures written with IPA's no-audible-release mark
  (``b̚``, U+031A; TIMIT's ``bcl``) all fall into the one silence class, each keeping its own
  spelling (and so its own duration statistics), as TIMIT's closures and pauses do in the 39
  classes.
* **Classes.** Every other symbol is a class of its own, unless it is rare: a symbol seen fewer
  than ``min_tokens`` times joins the most frequent class of its broad class that is nearest to
  it in phonological features (a rare class trains a poor frame classifier).
* **Broad classes** come from phonological features of the symbol's IPA reading, through
  ``panphon`` (the ``languages`` extra). Symbols in another code (X-SAMPA, ARPAbet, TIMIT,
  Buckeye) are read as IPA through ``phonecodes``; TIMIT-61 and ARPAbet symbols need neither
  library (the project's own table, :mod:`aligner.phones.sets`, knows them).
* A ``--phone-classes`` file (:func:`read_phone_classes`) gives any symbol's broad class, and
  optionally the class it joins, by hand: then no library is needed for those symbols, and
  symbols of no code at all (``p01``) can train a model.
"""

from __future__ import annotations

import os
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from aligner.errors import AlignerError, TranscriptError
from aligner.phones.sets import (BROAD_CLASS_OF, BROAD_CLASSES, SILENCE, TIMIT61_TO_39,
                               PhoneInventory)

#: labels read as silence (compared in lower case), besides the empty label
SILENCE_SPELLINGS = frozenset(("sil", "sp", "spn", "pau", "h#", "#", "<sil>", "<p>", "<p:>", "_", "silence"))
#: IPA's "no audible release" mark: a stop written with it is a closure interval
CLOSURE_MARK = "\u031a"
#: the symbol empty intervals are given in a model's phone set
EMPTY_LABEL_SYMBOL = "sil"
#: a symbol seen fewer times in training joins a class of the same broad class
MIN_CLASS_TOKENS = 20
#: phone codes :func:`to_ipa` reads; ``auto`` = IPA unless every symbol is TIMIT-61 or ARPAbet
PHONE_CODES = ("auto", "ipa", "xsampa", "arpabet", "timit", "buckeye")
_RHOTIC_VOWELS = {"ɝ": "ɜ˞", "ɚ": "ə˞"}  # precomposed letters panphon does not read


class PhoneClassError(AlignerError):
    """A symbol whose class cannot be found: no IPA reading, no features, a bad classes file."""


def normalize_symbol(label: str) -> str:
    """A transcript label as a model's phone symbol: stripped, Unicode NFC; an empty label is
    :data:`EMPTY_LABEL_SYMBOL`."""
    key = unicodedata.normalize("NFC", label.strip())
    return key or EMPTY_LABEL_SYMBOL


def is_silence(symbol: str) -> bool:
    """True for the empty label and the spellings of :data:`SILENCE_SPELLINGS`."""
    return not symbol.strip() or symbol.strip().lower() in SILENCE_SPELLINGS


def is_closure(symbol: str) -> bool:
    """True for a symbol written with the no-audible-release mark (``b̚``), or a TIMIT closure."""
    return CLOSURE_MARK in unicodedata.normalize("NFD", symbol) or TIMIT61_TO_39.get(symbol) == SILENCE


# -- IPA readings and their features ------------------------------------------------------------------------
def to_ipa(symbol: str, code: str) -> str:
    """The IPA reading of ``symbol`` written in ``code`` (one of :data:`PHONE_CODES` but ``auto``),
    through ``phonecodes`` for codes other than IPA. Raises :class:`PhoneClassError` naming the
    symbol when it has none."""
    if code == "ipa":
        return unicodedata.normalize("NFC", symbol)
    try:
        from phonecodes import phonecodes
    except ImportError:
        raise PhoneClassError(f"reading {code} symbols needs the phonecodes library: pip install 'aligner[languages]' "
                              "(or give every symbol's broad class with --phone-classes FILE)") from None
    key = symbol.upper() if code == "arpabet" else symbol
    try:
        ipa = phonecodes.convert(key, code, "ipa")
    except Exception:  # noqa: BLE001 - the library raises several kinds for an unknown symbol
        ipa = ""
    if not ipa or ipa == key and code != "xsampa":
        raise PhoneClassError(f"phone {symbol!r} has no IPA reading in {code}")
    return unicodedata.normalize("NFC", ipa)


_FEATURE_TABLE = None


def _feature_table():
    global _FEATURE_TABLE
    if _FEATURE_TABLE is None:
        try:
            import panphon
        except ImportError:
            raise PhoneClassError("finding phone classes from IPA needs the panphon library: "
                                  "pip install 'aligner[languages]' (or give every symbol's broad class with "
                                  "--phone-classes FILE)") from None
        _FEATURE_TABLE = panphon.FeatureTable()
    return _FEATURE_TABLE


def panphon_form(ipa: str) -> str:
    """``ipa`` as panphon reads it: NFC, ASCII ``g`` as IPA ``ɡ`` (G2Ps write either), the
    precomposed rhotic vowels ``ɝ``/``ɚ`` as vowel + rhotic hook."""
    return "".join(_RHOTIC_VOWELS.get(ch, "ɡ" if ch == "g" else ch) for ch in unicodedata.normalize("NFC", ipa))


def ipa_features(ipa: str) -> list[dict]:
    """The phonological features (panphon's, each -1, 0 or +1) of each segment of an IPA string;
    an empty list unless panphon reads every letter of it (diacritics it does not know are
    dropped; a letter or digit it does not know is not: ``p01`` is no ``p``) or, failing that,
    :func:`aligner.phones.ipa.read_ipa` does (an apostrophe or colon of a field transcription,
    a combination of diacritics panphon has no row for)."""
    ft = _feature_table()
    base = panphon_form(ipa)
    if not ft.validate_word(base):
        bare = unicodedata.normalize("NFC", "".join(
            ch for ch in unicodedata.normalize("NFD", base)
            if not unicodedata.combining(ch) and unicodedata.category(ch) != "Lm"))
        if not bare or not ft.validate_word(bare):
            return _read_features(ipa)
        base = bare
    return [dict(zip(ft.names, seg.numeric())) for seg in ft.word_fts(base)]


def _read_features(symbol: str) -> list[dict]:
    """The features of a symbol panphon does not read as it is written (field transcriptions'
    ``j'``, ``m'ː``; combinations of diacritics it has no row for), by
    :func:`aligner.phones.ipa.read_ipa`; an empty list when that cannot read it either."""
    from aligner.phones.ipa import FEATURE_NAMES, IpaError, read_ipa

    try:
        segment = read_ipa(symbol)
    except IpaError:
        return []
    return [dict(zip(FEATURE_NAMES, (int(v) for v in part))) for part in segment.parts]


def broad_class_of_ipa(ipa: str) -> str | None:
    """The broad class (a key of :data:`~aligner.phones.sets.BROAD_CLASSES`) of an IPA phone from
    its features, or None when panphon reads no segment of it.

    All segments syllabic and not consonantal: vowel (diphthongs, long and nasal vowels);
    a stop then a fricative, or a delayed release: affricate; nasal: nasal (``m̩``, ``ɾ̃``);
    taps: stop (TIMIT's flap); glottal continuants (``h``, ``ɦ``): fricative; other sonorant
    continuants (laterals, trills, approximants): glide; other continuants: fricative; the
    rest: stop.
    """
    from aligner.phones.ipa import broad_class_of_features

    segments = ipa_features(ipa)
    return broad_class_of_features(segments, ipa) if segments else None


def _feature_vector(ipa: str) -> np.ndarray:
    segments = ipa_features(ipa)
    return np.array(list(segments[0].values()), float) if segments else np.zeros(0)


# -- the --phone-classes file ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PhoneClassEntry:
    """One line of a phone-classes file: ``symbol``'s broad class, and the class it joins (None: its own)."""

    broad: str
    joins: str | None = None


def read_phone_classes(path: str | os.PathLike) -> dict[str, PhoneClassEntry]:
    """A phone-classes file: one symbol per line, ``SYMBOL BROAD [CLASS]`` separated by tabs or
    spaces; ``#`` starts a comment. ``BROAD`` is one of vowel, glide, nasal, stop, affricate,
    fricative, silence; ``CLASS`` (optional) names the class the symbol joins (another symbol of
    the file or the data). Raises :class:`PhoneClassError` naming the file and line."""
    from aligner.io.transcripts import read_text

    path = Path(path)
    text = read_text(path, "phone-classes file", PhoneClassError)
    out: dict[str, PhoneClassEntry] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise PhoneClassError(f"{path}:{line_no}: expected 'SYMBOL BROAD_CLASS [CLASS]', got {line.strip()!r}")
        symbol, broad = normalize_symbol(fields[0]), fields[1].lower()
        if broad not in BROAD_CLASSES:
            raise PhoneClassError(f"{path}:{line_no}: unknown broad class {fields[1]!r}; choose from "
                                  f"{', '.join(BROAD_CLASSES)}")
        if symbol in out:
            raise PhoneClassError(f"{path}:{line_no}: symbol {fields[0]!r} listed twice")
        out[symbol] = PhoneClassEntry(broad, normalize_symbol(fields[2]) if len(fields) == 3 else None)
    if not out:
        raise PhoneClassError(f"{path}: no phone classes in the file")
    return out


# -- the inventory ------------------------------------------------------------------------------------------------
@dataclass
class InventoryChoice:
    """What :func:`build_inventory` decided: the inventory, each symbol's class, each class's
    broad class and where it came from, and the symbols folded into another class."""

    inventory: PhoneInventory
    symbol_class: dict  #: symbol -> class name
    source: dict  #: symbol -> how its broad class was found ("table", "features", "file", "silence")
    folded: dict  #: rare symbol -> the class it joined

    def describe(self) -> list[str]:
        """One line per class: its name, broad class and the symbols in it."""
        members: dict = {}
        for sym, cls in sorted(self.symbol_class.items()):
            members.setdefault(cls, []).append(sym)
        return [f"{c}\t{b}\t{' '.join(members.get(c, []))}"
                for c, b in zip(self.inventory.classes, self.inventory.broad)]


def _table_class(symbol: str) -> str | None:
    """The 39-class of a TIMIT-61 symbol (as TIMIT writes it) or an ARPAbet one (stress digits on
    vowels only), else None."""
    from aligner.phones.sets import get_phone_set

    if symbol in TIMIT61_TO_39:
        return TIMIT61_TO_39[symbol]
    arpabet = get_phone_set("arpabet")
    return arpabet.class_of(symbol) if symbol in arpabet else None


def _detect_code(symbols) -> str:
    if all(is_silence(s) or _table_class(s) is not None for s in symbols):
        return "table"
    return "ipa"


def build_inventory(counts: Mapping[str, int], code: str = "auto",
                    phone_classes: Mapping[str, PhoneClassEntry] | None = None,
                    min_tokens: int = MIN_CLASS_TOKENS, where: Mapping[str, str] | None = None) -> InventoryChoice:
    """The inventory of a training corpus whose phone symbols occur ``counts`` times each.

    ``code``: the symbols' phone code (:data:`PHONE_CODES`); ``phone_classes``: a
    :func:`read_phone_classes` table (its entries win); ``min_tokens``: symbols seen fewer
    times join a class (:data:`MIN_CLASS_TOKENS`); ``where``: a file each symbol was seen in,
    named by the error for a symbol whose class cannot be found.
    """
    if code not in PHONE_CODES:
        raise PhoneClassError(f"unknown phone code {code!r}; choose from {', '.join(PHONE_CODES)}")
    phone_classes = dict(phone_classes or {})
    where = where or {}
    symbols = sorted(counts)
    if code == "auto":
        code = _detect_code([s for s in symbols if s not in phone_classes])
    broad, source, ipa_of = {}, {}, {}
    for s in symbols:
        if s in phone_classes:
            broad[s], source[s] = phone_classes[s].broad, "file"
        elif is_silence(s) or is_closure(s):
            broad[s], source[s] = "silence", "silence"
        elif code == "table":
            broad[s], source[s] = BROAD_CLASS_OF[_table_class(s)], "table"
        else:
            try:
                ipa_of[s] = to_ipa(s, code)
                b = broad_class_of_ipa(ipa_of[s])
            except PhoneClassError as exc:
                raise PhoneClassError(f"{where.get(s, 'training data')}: {exc}") from None
            if b is None:
                raise PhoneClassError(f"{where.get(s, 'training data')}: phone {s!r} has no phonological features "
                                      f"(read as IPA {ipa_of[s]!r}); give its broad class with --phone-classes FILE")
            broad[s], source[s] = b, "features"
    # the classes: silence, then every symbol named as a class or frequent enough, then the rest folded
    symbol_class = {s: SILENCE for s in symbols if broad[s] == "silence"}
    for s in symbols:
        entry = phone_classes.get(s)
        if entry is not None and entry.joins is not None and broad[s] != "silence":
            symbol_class[s] = entry.joins
    heads = [s for s in symbols if s not in symbol_class and counts[s] >= min_tokens]
    for s in heads:
        symbol_class[s] = s
    folded = {}
    rare = [s for s in symbols if s not in symbol_class]
    for s in rare:
        peers = [h for h in heads if broad[h] == broad[s]]
        if not peers:  # the only one of its broad class: a class of its own
            heads.append(s)
            symbol_class[s] = s
            continue
        if s in ipa_of and all(h in ipa_of for h in peers):
            v = _feature_vector(ipa_of[s])
            dist = [float(np.abs(_feature_vector(ipa_of[h]) - v).sum()) if len(v) else 0.0 for h in peers]
            target = peers[int(np.lexsort((-np.array([counts[h] for h in peers]), dist))[0])]
        else:
            target = max(peers, key=lambda h: (counts[h], h))
        symbol_class[s] = folded[s] = target
    class_names = sorted({c for c in symbol_class.values() if c != SILENCE}) + [SILENCE]
    class_broad = {}
    for s, c in symbol_class.items():
        if c == SILENCE:
            continue
        if c not in broad and c not in class_broad:
            raise PhoneClassError(f"the phone-classes file joins {s!r} to {c!r}, which is neither a symbol of the "
                                  "data nor of the file")
        class_broad.setdefault(c, broad.get(c, broad[s]))
    bad = [s for s, c in symbol_class.items() if c != SILENCE and broad[s] != class_broad[c]
           and source[s] == "file"]
    if bad:
        s = bad[0]
        raise PhoneClassError(f"the phone-classes file joins {s!r} ({broad[s]}) to {symbol_class[s]!r} "
                              f"({class_broad[symbol_class[s]]}): a class has one broad class")
    if len(class_names) < 2:
        raise TranscriptError("the training data hold silence only: no phone to train")
    inventory = PhoneInventory(class_names, [class_broad.get(c, "silence") for c in class_names])
    return InventoryChoice(inventory, symbol_class, source, folded)


def count_symbols(label_lists) -> Counter:
    """How often each (normalised) symbol occurs in the label lists."""
    counts: Counter = Counter()
    for labels in label_lists:
        counts.update(normalize_symbol(s) for s in labels)
    return counts
