"""Orthographic transcripts -> the words to look up in a pronouncing dictionary.

:func:`normalize_transcript` turns text into a list of :class:`Token`; each token is one word to
look up (``token.word``) and remembers the whitespace-delimited piece of the transcript it came
from (``token.original``, as written, and ``token.index``, its 0-based position among those
pieces), so output labels can show the user's spelling: ``"42"`` gives two tokens ``forty`` and
``two``, both with ``original="42"`` and the same ``index``.

Rules, in the order they apply (``->`` shows the resulting words):

1. **Splitting.** The text is split at whitespace. A bracketed span ``[...]``, ``{...}`` or
   ``<...>`` is one piece even if it holds spaces. En and em dashes, ``/``, ``\\``, ``|``, ``_``,
   ``~`` and ``…`` also separate words: ``and/or`` -> ``and or``; ``yes—no`` -> ``yes no``.
2. **Annotations.** A piece wholly inside ``[]``, ``{}`` or ``<>`` is a non-speech annotation
   (MFA style: ``[laughter]``, ``{LG}``, ``<unk>``). It becomes one token with
   ``annotation=True`` and ``word`` = the lower-cased text, brackets kept, inner whitespace as
   ``_`` (``[Background noise]`` -> ``[background_noise]``). Annotations are never reported as
   unknown words; an aligner should align them only if the dictionary has them (e.g. a user
   line ``{LG} sil``) and otherwise skip them.
3. **Case and Unicode.** NFKC normalisation, then lower case; curly apostrophes ``’ ‘ ʼ`` become
   ``'``: ``Don’t`` -> ``don't``. Accents are kept, but see rule 5.
4. **Punctuation at the edges** of a piece is removed (``"Hello,`` -> ``hello``; ``(yes)!`` ->
   ``yes``), except: apostrophes touching the word (rule 7), a ``$`` or ``-``/``+`` sign directly
   before a digit and a ``%`` directly after one (rule 6). A piece with no letter or digit
   disappears (``--``, ``...``, ``?``), except a lone ``&`` -> ``and``.
5. **Dictionary forms first.** If a ``dictionary`` is given, a word is kept whole whenever the
   dictionary has it, *before* rules 7-9 split or trim it. A word followed by a full stop is
   first looked up with the stop: ``Mr.`` -> ``mr.``, ``a.m.`` -> ``a.m.`` (both in CMU). A word
   with accents that the dictionary lacks is looked up without them: ``café`` -> ``cafe``.
6. **Numbers written in digits** are spelled out with ``num2words`` (English); commas between
   thousands are allowed (``1,000``). The words are split at hyphens and commas and num2words'
   British ``and`` is dropped (American reading): ``101`` -> ``one hundred one``.

   * Integers: ``42`` -> ``forty two``; ``-5`` -> ``minus five``.
   * Years: a piece that is exactly four digits from 1100 to 2099 (no sign, comma, decimals,
     ``$``, ``%``) is read as a year: ``1999`` -> ``nineteen ninety nine``, ``1905`` ->
     ``nineteen oh five``, ``2005`` -> ``two thousand five``, ``2010`` -> ``twenty ten``. So
     ``1500`` -> ``fifteen hundred``. Write the number in words when it was read otherwise.
   * Ordinals ``1st 2nd 3rd 4th 21st``: the digits before ``st/nd/rd/th`` -> ``third``,
     ``twenty first`` (the suffix is not checked against the number).
   * Decimals: the integer part, ``point``, then each digit: ``3.14`` -> ``three point one four``,
     ``12.50`` -> ``twelve point five zero``.
   * Percent: ``50%`` -> ``fifty percent``; ``2.5%`` -> ``two point five percent``.
   * Dollars: ``$12`` -> ``twelve dollars``; ``$1`` -> ``one dollar``; ``$12.50`` -> ``twelve
     dollars fifty cents``; ``$0.05`` -> ``five cents``; ``$1.5`` -> ``one point five dollars``.
   * Anything else with digits (``1990s``, ``mp3``, ``4x4``) is left as it is and will be
     reported as an unknown word, except that hyphens split first: ``covid-19`` -> ``covid
     nineteen``.
7. **Apostrophes.** Word-internal apostrophes are kept: ``don't``, ``o'clock``. Apostrophes at
   the start or end are kept only if the dictionary has that form (``'em``, ``'cause``,
   ``dogs'``, ``goin'`` are in CMU); otherwise, or without a dictionary, they are removed
   (``'quoted'`` -> ``quoted``; without a dictionary ``'em`` -> ``em``).
8. **Hyphens, ``&`` and inner full stops** split a word that the dictionary does not have (or
   always, without a dictionary), and each part goes through rules 5-9 again:
   ``merry-go-round`` stays whole with CMU, ``blue-green`` -> ``blue green``; ``AT&T`` -> ``at and
   t``; ``u.s.`` stays ``u.s.`` with CMU and gives ``u s`` without a dictionary.
9. What is left is the word, whether or not the dictionary has it.

An empty or punctuation-only transcript gives ``[]``; :func:`read_words_transcript` turns that
into a :class:`~aligner.errors.TranscriptError`, since there is nothing to align.

:func:`read_words_transcript` reads a transcript file (UTF-8, BOM accepted). TIMIT's ``.txt``
files begin with the utterance's first and last sample numbers (``0 46797 She had your dark
suit in greasy wash water all year.``): for a file named ``*.txt`` whose first two words are
non-negative integers, those two are dropped. (A ``.txt`` transcript that really begins with two
numbers must spell them out.)
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aligner.errors import AlignerError, TranscriptError
from aligner.words.dictionary import fold_word

if TYPE_CHECKING:
    from aligner.words.dictionary import PronouncingDictionary

__all__ = ["Token", "normalize_transcript", "read_words_transcript", "spell_number", "words_of"]


@dataclass(frozen=True)
class Token:
    """One word to look up, with the piece of the transcript it came from.

    ``word``: the normalised lookup form (lower case). ``original``: the whitespace-delimited
    piece as written in the transcript (shared by all tokens made from it). ``index``: that
    piece's 0-based position in the transcript. ``annotation``: True for ``[...]``, ``{...}``,
    ``<...>`` non-speech annotations.
    """

    word: str
    original: str
    index: int
    annotation: bool = False


_PIECE = re.compile(r"\[[^\]]*\]|\{[^}]*\}|<[^>]*>|\S+")
_CLOSING = {"[": "]", "{": "}", "<": ">"}
_SEPARATORS = re.compile(r"[\u2012\u2013\u2014\u2015\u2026/\\|_~]+")
_INT = r"\d{1,3}(?:,\d{3})+|\d+"
_NUMBER = re.compile(rf"(?P<sign>[-+])?(?P<cur>\$)?(?P<int>{_INT})(?:\.(?P<frac>\d+))?(?P<pct>%)?")
_ORDINAL = re.compile(rf"(?P<int>{_INT})(?:st|nd|rd|th)")
_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def words_of(tokens: list[Token]) -> list[str]:
    """The lookup words of ``tokens``, annotations left out."""
    return [t.word for t in tokens if not t.annotation]


def _num2words(value: int, to: str = "cardinal") -> list[str]:
    try:
        from num2words import num2words
    except ImportError:
        raise AlignerError(
            "spelling out numbers written in digits needs the 'num2words' package: "
            "pip install num2words"
        ) from None
    text = num2words(value, lang="en", to=to)
    return [w for w in text.lower().replace("-", " ").replace(",", " ").split() if w != "and"]


def spell_number(piece: str) -> list[str] | None:
    """The words of a number written in digits (rule 6 of the module docstring), else None.

    ``piece`` is lower case with the surrounding punctuation removed:
    ``spell_number("1999")`` -> ``["nineteen", "ninety", "nine"]``; ``spell_number("abc")`` -> None.
    """
    m = _ORDINAL.fullmatch(piece)
    if m:
        return _num2words(int(m["int"].replace(",", "")), to="ordinal")
    m = _NUMBER.fullmatch(piece)
    if m is None or (m["cur"] and m["pct"]):
        return None
    digits, frac = m["int"].replace(",", ""), m["frac"]
    value = int(digits)
    try:
        if m["cur"] and (frac is None or len(frac) == 2):
            cents = int(frac or 0)
            words = []
            if value or not cents:
                words += _num2words(value) + ["dollar" if value == 1 else "dollars"]
            if cents:
                words += _num2words(cents) + ["cent" if cents == 1 else "cents"]
        else:
            year = (not m["sign"] and frac is None and not m["pct"] and not m["cur"]
                    and digits == m["int"] and len(digits) == 4 and 1100 <= value <= 2099)
            words = _num2words(value, to="year" if year else "cardinal")
            if frac is not None:
                words += ["point"] + [_DIGITS[int(d)] for d in frac]
            if m["cur"]:
                words.append("dollars")
            if m["pct"]:
                words.append("percent")
    except (OverflowError, NotImplementedError):  # beyond num2words' range
        return None
    if m["sign"]:
        words.insert(0, "minus" if m["sign"] == "-" else "plus")
    return words


def _trim(s: str) -> tuple[str, bool]:
    """Remove edge punctuation (rule 4); also say whether a full stop followed the last letter."""
    alnum = [i for i, c in enumerate(s) if c.isalnum()]
    if not alnum:
        return "", False
    i, j = alnum[0], alnum[-1] + 1
    dot = j < len(s) and s[j] == "."
    if s[i].isdigit():
        if i > 0 and s[i - 1] == "$":
            i -= 1
        if i > 0 and s[i - 1] in "+-":
            i -= 1
    if s[j - 1].isdigit() and j < len(s) and s[j] == "%":
        j += 1
    while i > 0 and s[i - 1] == "'":
        i -= 1
    while j < len(s) and s[j] == "'":
        j += 1
    return s[i:j], dot


def _resolve(s: str, dictionary: PronouncingDictionary | None, dot: bool = False) -> list[str]:
    """Rules 5-9 for one trimmed, lower-case piece."""
    if not s:
        return []
    if dictionary is not None:
        if dot and s + "." in dictionary:
            return [s + "."]
        if s in dictionary:
            return [s]
        if not s.isascii():
            plain = "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c))
            if plain != s and plain in dictionary:
                return [plain]
    if any(c.isdigit() for c in s):
        words = spell_number(s)
        if words is not None:
            return words
    bare = s.strip("'")
    if bare != s:
        return _resolve(bare, dictionary, dot)
    for sep, joiner in (("-", None), ("&", "and"), (".", None)):
        if sep in s:
            out: list[str] = []
            for k, part in enumerate(s.split(sep)):
                if k and joiner:
                    out.append(joiner)
                part, part_dot = _trim(part)
                out += _resolve(part, dictionary, part_dot)
            return out
    return [s]


def normalize_transcript(text: str, dictionary: PronouncingDictionary | None = None) -> list[Token]:
    """Split and normalise an orthographic transcript by the rules of the module docstring.

    ``dictionary`` (optional) lets hyphenated, abbreviated and apostrophe-edged forms it knows stay
    whole. Returns one :class:`Token` per lookup word, in order; ``[]`` if the text has no words.

    >>> [t.word for t in normalize_transcript("Don't pay $12 on the 3rd & 4th!")]
    ["don't", 'pay', 'twelve', 'dollars', 'on', 'the', 'third', 'and', 'fourth']
    """
    tokens: list[Token] = []
    for index, m in enumerate(_PIECE.finditer(text)):
        original = m.group()
        if original[0] in _CLOSING and original[-1] == _CLOSING[original[0]]:
            word = "_".join(fold_word(original).split())
            tokens.append(Token(word, original, index, annotation=True))
            continue
        folded = fold_word(original)
        for sub in _SEPARATORS.split(folded):
            if sub == "&":
                words = ["and"]
            else:
                trimmed, dot = _trim(sub)
                words = _resolve(trimmed, dictionary, dot)
            tokens += [Token(w, original, index) for w in words]
    return tokens


def read_words_transcript(path: str | os.PathLike,
                          dictionary: PronouncingDictionary | None = None) -> list[Token]:
    """Read and normalise an orthographic transcript file (see the module docstring).

    Raises :class:`~aligner.errors.TranscriptError` (one line, naming the file) if the file is
    missing, not UTF-8, or has no words (only punctuation and/or annotations).
    """
    path = Path(path)
    from aligner.io.transcripts import read_text  # numpy: only when a file is read

    text = read_text(path, "transcript", TranscriptError)
    if path.suffix.lower() == ".txt":
        head = text.split(maxsplit=2)
        if len(head) >= 2 and head[0].isdecimal() and head[1].isdecimal():
            text = head[2] if len(head) == 3 else ""
    tokens = normalize_transcript(text, dictionary)
    if not words_of(tokens):
        raise TranscriptError(f"{path}: transcript has no words to align (only punctuation or annotations)")
    return tokens
