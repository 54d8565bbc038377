"""Phone sets, their mapping onto the 39 classes of Lee & Hon (1989), and transcript readers.

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

import os
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from aligner.errors import TranscriptError
from aligner.io.transcripts import read_text

__all__ = [
    "SILENCE",
    "CLASSES39",
    "TIMIT61",
    "TIMIT61_TO_39",
    "ARPABET",
    "ARPABET_TO_39",
    "PHONE_SET_NAMES",
    "PhoneSet",
    "get_phone_set",
    "detect_phone_set",
    "read_transcript",
    "read_phn",
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

_ARPABET_VOWELS = frozenset(
    {"aa", "ae", "ah", "ao", "aw", "ay", "eh", "er", "ey", "ih", "iy", "ow", "oy", "uh", "uw"}
)
_ARPABET_SILENCES = ("sil", "sp")

#: ARPAbet symbol (lower case, no stress) -> its class; includes the silence symbols sil and sp.
ARPABET_TO_39: dict[str, str] = {
    **{p: {"ao": "aa", "zh": "sh"}.get(p, p) for p in ARPABET},
    **{s: SILENCE for s in _ARPABET_SILENCES},
}

PHONE_SET_NAMES = ("timit61", "timit39", "arpabet")

_TIMIT61_SET = frozenset(TIMIT61)
_CLASS_INDEX = {c: i for i, c in enumerate(CLASSES39)}
_STRESSED_VOWEL = re.compile(r"^([a-z]+)[012]$")


class PhoneSet:
    """A named set of phone symbols, each mapped onto one of the 39 classes.

    Symbols are looked up case-insensitively; the ``arpabet`` set also strips a vowel's stress
    digit. Use :func:`get_phone_set` rather than building one.
    """

    def __init__(self, name: str, description: str, to_class: Mapping[str, str], strip_stress: bool):
        self.name = name
        self.description = description
        self._to_class = dict(to_class)
        self._strip_stress = strip_stress
        #: The set's canonical symbols (lower case, without stress), sorted.
        self.symbols: tuple[str, ...] = tuple(sorted(self._to_class))

    def __repr__(self) -> str:
        return f"PhoneSet({self.name!r}, {len(self.symbols)} symbols)"

    def normalize(self, symbol: str) -> str | None:
        """The canonical spelling of ``symbol`` in this set, or None if it is not in the set."""
        key = symbol.strip().lower()
        if self._strip_stress:
            m = _STRESSED_VOWEL.match(key)
            if m and m.group(1) in _ARPABET_VOWELS:
                key = m.group(1)
        return key if key in self._to_class else None

    def __contains__(self, symbol: object) -> bool:
        return isinstance(symbol, str) and self.normalize(symbol) is not None

    def class_of(self, symbol: str) -> str:
        """The 39-class label of ``symbol`` (e.g. TIMIT ``ix`` -> ``ih``); KeyError if unknown."""
        key = self.normalize(symbol)
        if key is None:
            raise KeyError(f"{symbol!r} is not in the {self.name} phone set")
        return self._to_class[key]

    def class_index(self, symbol: str) -> int:
        """The index of ``symbol``'s class in :data:`CLASSES39`; KeyError if unknown."""
        return _CLASS_INDEX[self.class_of(symbol)]

    def class_indices(self, symbols: Iterable[str]) -> np.ndarray:
        """:meth:`class_index` of every symbol, as an int64 array."""
        return np.array([self.class_index(s) for s in symbols], dtype=np.int64)

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


def get_phone_set(name: str, symbols: Sequence[str] | None = None, source: str = "transcript") -> PhoneSet:
    """The phone set called ``name`` (``timit61``, ``timit39``, ``arpabet`` or ``auto``).

    ``auto`` needs ``symbols`` and returns :func:`detect_phone_set` of them. An unknown name
    raises :class:`TranscriptError`.
    """
    key = name.strip().lower()
    if key == "auto":
        if symbols is None:
            raise TypeError("get_phone_set('auto') needs the transcript's symbols to detect the set")
        return detect_phone_set(symbols, source)
    try:
        return _PHONE_SETS[key]
    except KeyError:
        raise TranscriptError(
            f"unknown phone set {name!r}; choose one of {', '.join(PHONE_SET_NAMES)} or auto"
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


# --------------------------------------------------------------------------------------------
# Transcript files

_TRANSCRIPT_SUFFIXES = (".phn", ".phones", ".txt", ".lab")


def _describe_inline(text: str) -> str:
    short = " ".join(text.split())
    if len(short) > 40:
        short = short[:37] + "..."
    return f"inline transcript {short!r}"


def _looks_like_path(text: str) -> bool:
    """True if a string that names no existing file was probably meant as a file name."""
    tokens = text.split()
    if len(tokens) != 1:
        return False
    token = tokens[0]
    return "/" in token or os.sep in token or token.lower().endswith(_TRANSCRIPT_SUFFIXES)


_INT = re.compile(r"^[+-]?[0-9]+$")


def _is_int(token: str) -> bool:
    return _INT.match(token) is not None


def _tokens_with_lines(text: str, strict_phn: bool, source: str) -> list[tuple[str, int]]:
    """Split a transcript into (symbol, 1-based line number) pairs.

    A line ``start end label`` (two integers and a symbol, as in TIMIT ``.phn``) yields its label;
    any other line yields all its whitespace-separated tokens. With ``strict_phn`` (a ``.phn``
    file) a line must be either ``start end label`` or a single label.
    """
    out: list[tuple[str, int]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if len(tokens) == 3 and _is_int(tokens[0]) and _is_int(tokens[1]):
            out.append((tokens[2], line_no))
        elif strict_phn and len(tokens) > 1:
            raise TranscriptError(
                f"{source}: line {line_no}: expected 'start end label' or 'label', got {line.strip()!r}"
            )
        else:
            out.extend((t, line_no) for t in tokens)
    return out


def read_transcript(
    source: str | os.PathLike, phone_set: str | PhoneSet = "auto"
) -> tuple[list[str], PhoneSet]:
    """Read a phone transcript and check its symbols against a phone set.

    ``source`` is a path to a TIMIT ``.phn`` file (``start end label`` lines, times ignored, or
    ``label`` lines), a path to a text file of whitespace/newline-separated symbols, or - if it
    is a string that names no existing file - the symbols themselves (``"sil dh ax sil"``).
    ``phone_set`` is a :class:`PhoneSet`, a set name, or ``"auto"`` (see :func:`detect_phone_set`).

    Returns the symbols as written (stress digits and case kept, so output labels match the
    input) and the phone set, whose :meth:`PhoneSet.class_index` maps each onto
    :data:`CLASSES39`. Raises :class:`TranscriptError` for a missing, empty or unreadable
    transcript, or a symbol outside the phone set (naming the symbol, its position and line).
    """
    if isinstance(source, os.PathLike) or (isinstance(source, str) and os.path.exists(source)):
        path = Path(source)
        name, from_file = str(path), True
        text = read_text(path, "transcript", TranscriptError)
        pairs = _tokens_with_lines(text, strict_phn=path.suffix.lower() == ".phn", source=name)
    elif isinstance(source, str):
        if _looks_like_path(source):
            raise TranscriptError(f"{source}: transcript not found")
        name, from_file = _describe_inline(source), False
        pairs = _tokens_with_lines(source, strict_phn=False, source=name)
    else:
        raise TypeError(f"transcript source must be a path or a string, not {type(source).__name__}")

    symbols = [s for s, _ in pairs]
    if not symbols:
        raise TranscriptError(f"{name}: transcript is empty (no phone symbols)")
    if not isinstance(phone_set, PhoneSet):
        phone_set = get_phone_set(phone_set, symbols, name)
    phone_set.validate(symbols, name, lines=[line for _, line in pairs] if from_file else None)
    return symbols, phone_set


def read_phn(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a TIMIT ``.phn`` reference alignment.

    Each non-blank line is ``start end label`` with ``start``/``end`` in samples (16 kHz in
    TIMIT), ``end`` exclusive. Returns ``(starts, ends, labels)``: two int64 arrays in samples and
    the labels. Raises :class:`TranscriptError` naming the file and line for a missing or empty
    file, a malformed line, negative times, ``end <= start`` or a start before the previous one.
    """
    path = Path(path)
    text = read_text(path, "phone alignment (.phn)", TranscriptError)
    starts: list[int] = []
    ends: list[int] = []
    labels: list[str] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        where = f"{path}: line {line_no}"
        if len(tokens) != 3 or not (_is_int(tokens[0]) and _is_int(tokens[1])):
            raise TranscriptError(
                f"{where}: expected 'start_sample end_sample label', got {line.strip()!r}"
            )
        start, end = int(tokens[0]), int(tokens[1])
        if start < 0:
            raise TranscriptError(f"{where}: negative start sample {start}")
        if end <= start:
            raise TranscriptError(f"{where}: end sample {end} is not after start sample {start}")
        if starts and start < starts[-1]:
            raise TranscriptError(
                f"{where}: start sample {start} is before the previous phone's start {starts[-1]}"
            )
        starts.append(start)
        ends.append(end)
        labels.append(tokens[2])
    if not labels:
        raise TranscriptError(f"{path}: phone alignment (.phn) is empty")
    return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64), labels
