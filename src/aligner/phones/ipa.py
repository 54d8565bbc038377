"""Any phone written in IPA (or X-SAMPA) read as phonological features.

A phone symbol of a transcript (``d͡ʒ``, ``ʃʲ``, ``kʷʼ``, ``aː``, ``w͡a``, ``t'``) is read into
its *parts*: one segment for a plain or modified letter, two or three for a symbol that holds
several (a diphthong ``ai``, a glide and vowel tied ``w͡a``, a pre-nasalised stop ``ⁿd``). Each
part is panphon's 24 features (-1, 0, +1) of its base letter (``ipa_bases.csv`` of the
``panphon`` library, the ``languages`` extra), changed by the diacritics and modifier letters
after it (:data:`DIACRITICS`: length, voicelessness, aspiration, ejectives and glottalisation,
breathy and creaky voice, nasalisation, labialisation, palatalisation, velarisation,
pharyngealisation, rhoticity, syllabicity, tongue root); tone marks (accents over a vowel, tone
letters ``˥˦˧˨˩``, tone numbers) set the tone features. Affricates and double articulations
tied or untied (``t͡ʃ``, ``tʃ``, ``k͡p``) are the one segment panphon knows.

Field transcriptions' ASCII habits are read too (:func:`ascii_habits`): an apostrophe after a
consonant is an ejective (``t'`` = ``tʼ``) or, after a sonorant, glottalisation (``j'`` =
``jˀ``), a colon is length (``a:`` = ``aː``), ASCII ``g`` is IPA ``ɡ``. A stress mark before a
phone (``ˈa``, as G2P output writes stressed syllables) is left out, and the click letters the
IPA withdrew in 1989 (``ʇ ʗ ʖ``) read as today's (``ǀ ǃ ǁ``).

A mark that carries no feature here (advanced, retracted, centralised, raised, lowered, ...)
is accepted and left out; a character that is neither a letter of the IPA nor a mark is an
error naming the symbol. :func:`composition_vector` turns the parts into the fixed-length
vector from which the universal model composes a phone's score, duration and refinement
(:mod:`aligner.alignment.universal`).
"""

from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from aligner.errors import TranscriptError

#: panphon's features, in its order (each -1, 0 or +1 per segment)
FEATURE_NAMES = ("syl", "son", "cons", "cont", "delrel", "lat", "nas", "strid", "voi", "sg", "cg", "ant", "cor",
                 "distr", "lab", "hi", "lo", "back", "round", "velaric", "tense", "long", "hitone", "hireg")
N_FEATURES = len(FEATURE_NAMES)
_F = {name: i for i, name in enumerate(FEATURE_NAMES)}
#: labels read as silence (compared stripped and in lower case), besides the empty label
SILENCE_SYMBOLS = frozenset(("sil", "sp", "spn", "pau", "h#", "#", "<sil>", "<p>", "<p:>", "_", "silence"))
#: the most parts one phone symbol may hold (a triphthong); more is a word, not a phone
MAX_PARTS = 3
TIE_BARS = ("\u0361", "\u035c")
#: diacritics and modifier letters after a letter: the features each sets (panphon's
#: ``diacritic_definitions.yml`` where it has them)
DIACRITICS: dict = {
    "ʼ": {"cg": 1},                      # ejective
    "\u0325": {"voi": -1},               # voiceless (ring below)
    "\u030a": {"voi": -1},               # voiceless (ring above, under a descender)
    "ʰ": {"sg": 1},                      # aspirated
    "ʱ": {"sg": 1, "voi": 1},            # breathy-voiced release
    "\u0329": {"syl": 1},                # syllabic
    "\u030d": {"syl": 1},                # syllabic (above)
    "\u032f": {"syl": -1},               # non-syllabic
    "\u0311": {"syl": -1},               # non-syllabic (above)
    "˞": {"ant": -1, "hi": 1, "round": 1},  # rhotacised
    "\u0324": {"sg": 1},                 # breathy voiced
    "\u0330": {"cg": 1},                 # creaky voiced
    "ˀ": {"cg": 1},                      # glottalised
    "\u033c": {"lab": 1},                # linguolabial
    "ʷ": {"round": 1, "back": 1, "hi": 1},  # labialised
    "ʲ": {"hi": 1, "back": -1},          # palatalised
    "ᶣ": {"hi": 1, "back": -1, "round": 1},  # labio-palatalised
    "ˠ": {"hi": 1, "back": 1},           # velarised
    "ˤ": {"lo": 1, "back": 1},           # pharyngealised
    "\u0334": {"hi": 1, "back": 1},      # velarised or pharyngealised
    "\u0318": {"tense": 1},              # advanced tongue root
    "\u0319": {"tense": -1},             # retracted tongue root
    "\u0323": {"tense": -1},             # dot below: open (lax) vowel, as Africanist orthographies write it
    "\u0331": {"tense": -1},             # macron below: retracted, lax
    "\u033a": {"distr": -1},             # apical
    "\u033b": {"distr": 1},              # laminal
    "\u0303": {"nas": 1},                # nasalised
    "ⁿ": {"nas": 1},                     # nasal release
    "ᵐ": {"nas": 1},                     # nasal release (labial)
    "ᵑ": {"nas": 1},                     # nasal release (velar)
    "ˡ": {"lat": 1, "delrel": 1},        # lateral release
    "ː": {"long": 1},                    # long
    "ˑ": {"long": 1},                    # half-long
    "\u0306": {"long": -1},              # extra short
    # tone: accents and tone letters (level or contour), read as high/low tone
    "\u0301": {"hitone": 1}, "\u030b": {"hitone": 1, "hireg": 1}, "\u0300": {"hitone": -1},
    "\u030f": {"hitone": -1, "hireg": -1}, "\u0304": {"hitone": -1, "hireg": 1}, "\u0302": {"hitone": 1},
    "\u030c": {"hitone": -1},
    "˥": {"hitone": 1, "hireg": 1}, "˦": {"hitone": 1}, "˧": {"hitone": -1, "hireg": 1}, "˨": {"hitone": -1},
    "˩": {"hitone": -1, "hireg": -1},
}
#: marks (diacritics, modifier letters, digits) that are tone
TONE_MARKS = frozenset("\u0301\u030b\u0300\u030f\u0304\u0302\u030c˥˦˧˨˩0123456789¹²³⁴⁵")
_TONE_DIGITS = frozenset("0123456789¹²³⁴⁵")
#: marks after a letter accepted without a feature of their own: advanced, retracted, centralised,
#: mid-centralised, raised, lowered, more and less rounded, no audible release, dental, stress,
#: syllable and linking marks, upstep and downstep, global rise and fall; any other combining mark
#: (Unicode category Mn) is accepted so too
NEUTRAL_MARKS = frozenset("\u031f\u0320\u0308\u033d\u031d\u031e\u0339\u031c\u031a\u032a\u0307\u0305"
                          "ˈˌ.‿ˣᵊꜛꜜ↗↘")
#: marks before a letter (pre-nasalised, pre-aspirated, pre-glottalised): the features they set on it
PRE_MARKS = {"ⁿ": {"nas": 1}, "ᵐ": {"nas": 1}, "ᵑ": {"nas": 1}, "ʰ": {"sg": 1}, "ˀ": {"cg": 1}}
_RHOTIC_VOWELS = {"ɝ": "ɜ˞", "ɚ": "ə˞"}
#: letters panphon has no row for, written as one it has (with the diacritics they imply)
#: (and letters the IPA withdrew, which older field transcriptions still use: the clicks ``ʇ``
#: dental, ``ʗ`` (post)alveolar, ``ʖ`` lateral (1989); ``ɼ`` the raised trill (Czech ř), ``ʆ ʓ``
#: the palatalised fricatives, ``ʚ`` the open-mid rounded central vowel; the Sinologists' rounded
#: apical vowels ``ʮ ʯ`` beside ``ɿ ʅ``; and the barred ``ᵻ ᵿ`` of dictionaries' reduced vowels;
#: the voiceless implosives ``ƥ ƭ ƈ ƙ ʠ`` (withdrawn 1993), syllabic ``ƞ`` (1976) and palatalised
#: ``ƫ`` (1989); the Sinologists' alveolo-palatal ``ȶ ȡ ȵ ȴ``; the Africanists' schwa ``ǝ``; the
#: retroflex affricate ligatures ``ꭧ ꭦ``)
_EXTRA_LETTERS = {"ⱱ": "ɾ", "ʢ": "ʕ", "ʜ": "ħ", "ʡ": "ʔ", "ɿ": "ɨ", "ʅ": "ɨ", "ᴀ": "a", "ɷ": "ʊ", "ɩ": "ɪ",
                  "ʦ": "t͡s", "ʧ": "t͡ʃ", "ʤ": "d͡ʒ", "ʣ": "d͡z", "ʨ": "t͡ɕ", "ʥ": "d͡ʑ",
                  "ʇ": "ǀ", "ʗ": "ǃ", "ʖ": "ǁ", "ɼ": "r̝", "ʆ": "ʃʲ", "ʓ": "ʒʲ", "ʚ": "ɞ",
                  "ʮ": "ʉ", "ʯ": "ʉ", "ᵻ": "ɨ", "ᵿ": "ʊ̈",
                  "ƥ": "ɓ̥", "ƭ": "ɗ̥", "ƈ": "ʄ̊", "ƙ": "ɠ̊", "ʠ": "ʛ̥", "ƞ": "n̩", "ƫ": "tʲ",
                  "ȶ": "t̠ʲ", "ȡ": "d̠ʲ", "ȵ": "n̠ʲ", "ȴ": "l̠ʲ", "ǝ": "ə", "ꭧ": "ʈ͡ʂ", "ꭦ": "ɖ͡ʐ"}
#: a modifier letter written as a phone of its own (an annotator who gives the aspiration, the
#: release of a prenasalised stop or a glottal catch an interval of its own): the sound it stands for
LONE_MODIFIERS = {"ʰ": "h", "ʱ": "ɦ", "ⁿ": "n", "ᵐ": "m", "ᵑ": "ŋ", "ʲ": "j", "ʷ": "w", "ˀ": "ʔ", "ʼ": "ʔ",
                  "ˤ": "ʕ"}
#: marks a phone may begin with that carry no feature here, left out of its canonical spelling:
#: stress (a G2P's ``ˈa`` is the phone ``a``), upstep and downstep, global rise and fall
LEADING_NEUTRAL_MARKS = "ˈˌꜛꜜ↗↘"


class IpaError(TranscriptError):
    """A phone symbol that cannot be read as IPA."""


@dataclass(frozen=True)
class Segment:
    """One phone symbol read as IPA.

    ``symbol``: as written; ``ipa``: the canonical spelling (NFC, ASCII habits read, a leading stress mark left out);
    ``parts``: (P, 24) int8 features of its P parts, in order (P = 0 for silence);
    ``tone``: it carries a tone mark; ``silence``: a silence or pause label."""

    symbol: str
    ipa: str
    parts: np.ndarray
    tone: bool = False

    @property
    def silence(self) -> bool:
        return len(self.parts) == 0

    def feature(self, name: str, part: int = 0) -> int:
        """Feature ``name`` of part ``part`` (-1, 0 or +1)."""
        return int(self.parts[part, _F[name]])


def is_silence_symbol(symbol: str) -> bool:
    """True for the empty label (blank, or holding only invisible format characters) and the
    spellings of :data:`SILENCE_SYMBOLS`."""
    visible = _visible(symbol)
    return not visible or visible.lower() in SILENCE_SYMBOLS


def _visible(symbol: str) -> str:
    """``symbol`` stripped of white space and of the invisible format characters (Unicode category
    Cf: zero-width spaces and joiners, byte-order and direction marks, soft hyphens) that a label
    copied from a document or a word processor may carry."""
    return "".join(ch for ch in symbol if unicodedata.category(ch) != "Cf").strip()


@lru_cache(maxsize=1)
def _bases() -> dict:
    """``{NFD spelling: (24,) int8 features}`` of panphon's base letters (``ipa_bases.csv``)."""
    try:
        from importlib.util import find_spec

        # its data file is read where the package lies, without importing it (panphon imports
        # pandas: about 0.4 s of a process's start)
        spec = find_spec("panphon")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("panphon")
        table = Path(list(spec.submodule_search_locations)[0]) / "data" / "ipa_bases.csv"
        text = table.read_text(encoding="utf-8")
    except (ImportError, OSError, ValueError):  # ValueError: a module entry without a spec
        raise IpaError("reading IPA phones needs the panphon library: pip install 'aligner[languages]'") from None
    rows = list(csv.reader(text.splitlines()))
    header = rows[0]
    if tuple(header[1:]) != FEATURE_NAMES:
        raise IpaError("panphon's feature table has other columns than this aligner reads")
    value = {"+": 1, "-": -1, "0": 0}
    out = {}
    for row in rows[1:]:
        if len(row) == len(header) and row[0]:
            out[unicodedata.normalize("NFD", row[0])] = np.array([value[v] for v in row[1:]], np.int8)
    return out


@lru_cache(maxsize=1)
def _longest_base() -> int:
    return max(len(b) for b in _bases())


def ascii_habits(symbol: str) -> str:
    """``symbol`` (NFC) with field transcriptions' ASCII habits read as IPA: ``'`` (or ``’``)
    after a letter is an ejective ``ʼ`` after an obstruent and glottalisation ``ˀ`` after a
    sonorant; ``:`` is length ``ː``; ``g`` is ``ɡ`` (also under a mark that Unicode composes
    with it, ``ǧ`` ``ḡ``); ``ɝ``/``ɚ`` are ``ɜ˞``/``ə˞``; invisible format characters are dropped
    (:func:`_visible`)."""
    out = []
    for ch in unicodedata.normalize("NFD", _visible(symbol)):
        if ch in "'’":
            base = _last_letter(out)
            if base is None:
                out.append(ch)  # no letter before it: left for the reader to refuse
                continue
            feats = _bases().get(unicodedata.normalize("NFD", base))
            sonorant = feats is not None and feats[_F["son"]] == 1
            out.append("ˀ" if sonorant else "ʼ")
        elif ch == ":":
            out.append("ː")
        elif ch == "g":
            out.append("ɡ")
        else:
            out.append(_RHOTIC_VOWELS.get(ch, ch))
    return unicodedata.normalize("NFC", "".join(out))


def _last_letter(chars: list) -> str | None:
    for ch in reversed(unicodedata.normalize("NFD", "".join(chars))):
        if not unicodedata.combining(ch) and ch not in DIACRITICS and ch not in TIE_BARS:
            return ch
    return None


def _is_mark(ch: str) -> bool:
    return (ch in DIACRITICS or ch in NEUTRAL_MARKS or ch in TONE_MARKS or unicodedata.combining(ch) != 0
            or (unicodedata.category(ch) in ("Lm", "Sk") and ch not in PRE_MARKS and ch not in _EXTRA_LETTERS))


def _superscript_base(ch: str) -> str | None:
    """The letter a superscript modifier letter ``ch`` writes small (``ᵗ`` -> ``t``), or None."""
    decomposition = unicodedata.decomposition(ch)
    if not decomposition.startswith("<super> "):
        return None
    return chr(int(decomposition.split()[1], 16))


def _parse(nfd: str, symbol: str) -> tuple[list, bool]:
    """The parts (a list of (24,) int8 arrays) and the tone flag of an NFD IPA string."""
    bases, longest = _bases(), _longest_base()
    parts: list = []
    tone = False
    pending: dict = {}
    i, n = 0, len(nfd)
    while i < n:
        ch = nfd[i]
        if ch in TIE_BARS:  # a tie not inside a known letter: the parts it joins stay parts of the phone
            i += 1
            continue
        if ch in _EXTRA_LETTERS and ch not in bases:
            nfd = nfd[:i] + unicodedata.normalize("NFD", _EXTRA_LETTERS[ch]) + nfd[i + 1:]
            n = len(nfd)
            ch = nfd[i]
        match = None
        for width in range(min(longest, n - i), 0, -1):
            if nfd[i:i + width] in bases:
                match = nfd[i:i + width]
                break
        if match is None and ch in PRE_MARKS and not parts and i + 1 < n:
            pending.update(PRE_MARKS[ch])
            i += 1
            continue
        if match is None and not parts and i + 1 < n and (onset := _superscript_base(ch)) in bases:
            parts.append(bases[onset].copy())  # pre-stopped ``ᵗs``, ``ᵈz``: an onset part
            i += 1
            continue
        if match is None and _is_mark(ch):
            if not parts:
                raise IpaError(f"phone {symbol!r} starts with the mark {ch!r} (U+{ord(ch):04X}), not a letter")
            if ch in _TONE_DIGITS and parts[-1][_F["syl"]] != 1 and parts[-1][_F["son"]] != 1:
                raise IpaError(f"phone {symbol!r}: the digit {ch!r} is a tone number only after a vowel or sonorant")
            tone |= ch in TONE_MARKS
            for name, value in DIACRITICS.get(ch, {}).items():
                parts[-1][_F[name]] = value
            i += 1
            continue
        if match is None:
            raise IpaError(f"phone {symbol!r}: {ch!r} (U+{ord(ch):04X}, {unicodedata.name(ch, 'unnamed')}) is not "
                           "a letter of the IPA")
        # an untied affricate or double articulation the table holds tied (``tʃ`` = ``t͡ʃ``)
        j = i + len(match)
        if j < n and nfd[j] not in TIE_BARS:
            for width in range(min(longest, n - j), 0, -1):
                tied = match + TIE_BARS[0] + nfd[j:j + width]
                if tied in bases and bases[match][_F["cont"]] == -1 and bases[match][_F["son"]] == -1:
                    match, j = tied, j + width
                    break
        feats = bases[match].copy()
        if match in "˥˦˧˨˩":  # a tone letter after a vowel: a mark of it
            if not parts:
                raise IpaError(f"phone {symbol!r} starts with the tone letter {match!r}: a tone letter marks the "
                               f"vowel or sonorant before it; write it there, with no space (as in 'a{match}')")
            tone = True
            for name, value in DIACRITICS[match].items():
                parts[-1][_F[name]] = value
            i = j
            continue
        for name, value in pending.items():
            feats[_F[name]] = value
        pending = {}
        parts.append(feats)
        i = j
    return parts, tone


@lru_cache(maxsize=65536)
def read_ipa(symbol: str) -> Segment:
    """``symbol`` (one phone, as a transcript writes it) read as IPA: a :class:`Segment`.
    Silence labels (:func:`is_silence_symbol`) have no parts. Raises :class:`IpaError` (one
    line, naming the symbol) for a character that is not IPA or a symbol of more than
    :data:`MAX_PARTS` segments."""
    if is_silence_symbol(symbol):
        return Segment(symbol, "sil", np.zeros((0, N_FEATURES), np.int8))
    ipa = ascii_habits(symbol)
    ipa = ipa.lstrip(LEADING_NEUTRAL_MARKS) or ipa  # a stress mark alone is left for _parse to refuse
    ipa = LONE_MODIFIERS.get(ipa, ipa)
    if any(ch.isspace() for ch in ipa):
        raise IpaError(f"phone {symbol!r} holds a space: one phone per symbol")
    parts, tone = _parse(unicodedata.normalize("NFD", ipa), symbol)
    if not parts:
        raise IpaError(f"phone {symbol!r} holds no IPA letter")
    if len(parts) > MAX_PARTS:
        raise IpaError(f"phone {symbol!r} reads as {len(parts)} segments; give one phone per symbol")
    out = np.stack(parts).astype(np.int8)
    out.setflags(write=False)
    return Segment(symbol, ipa, out, tone)


@lru_cache(maxsize=65536)
def read_xsampa(symbol: str) -> Segment:
    """``symbol`` written in X-SAMPA, read as IPA (through ``phonecodes``, the ``languages`` extra)."""
    if is_silence_symbol(symbol):
        return read_ipa(symbol)
    try:
        from phonecodes import phonecodes
    except ImportError:
        raise IpaError("reading X-SAMPA phones needs the phonecodes library: pip install 'aligner[languages]'") from None
    try:
        ipa = phonecodes.convert(symbol.strip(), "xsampa", "ipa")
    except Exception:  # noqa: BLE001 - the library raises several kinds for a symbol it cannot read
        ipa = ""
    if not ipa:
        raise IpaError(f"phone {symbol!r} has no IPA reading in X-SAMPA")
    seg = read_ipa(ipa)
    return Segment(symbol, seg.ipa, seg.parts, seg.tone)


#: the phone codes :func:`read_phone` reads
CODES = ("ipa", "xsampa")


def read_phone(symbol: str, code: str = "ipa") -> Segment:
    """``symbol`` read in ``code`` (:data:`CODES`)."""
    if code == "ipa":
        return read_ipa(symbol)
    if code == "xsampa":
        return read_xsampa(symbol)
    raise ValueError(f"unknown phone code {code!r}; choose from {', '.join(CODES)}")


# -- the broad class and the composition vector ----------------------------------------------------------------
def _segment_key(segment: Segment) -> tuple:
    """What a segment's broad class and composition vector depend on: its features and tone."""
    return (segment.parts.tobytes(), segment.parts.shape[0], bool(segment.tone), segment.ipa[:1])


_BROAD_CACHE: dict = {}
_COMPOSITION_CACHE: dict = {}


def broad_class(segment: Segment) -> str:
    """The broad class (a key of :data:`~aligner.phones.sets.BROAD_CLASSES`) of a phone, by the
    rules of :func:`aligner.phones.inventory.broad_class_of_ipa` (remembered per features: a
    universal model asks again for the same phones with every transcript)."""
    key = _segment_key(segment)
    out = _BROAD_CACHE.get(key)
    if out is None:
        out = _BROAD_CACHE[key] = _broad_class(segment)
    return out


def _broad_class(segment: Segment) -> str:
    if segment.silence:
        return "silence"
    return broad_class_of_features([dict(zip(FEATURE_NAMES, p.tolist())) for p in segment.parts], segment.ipa)


def broad_class_of_features(parts: Sequence[dict], ipa: str) -> str:
    """The broad class of a phone written ``ipa`` whose parts have the features ``parts`` (a
    ``{feature: -1, 0 or +1}`` each, at least one); the rules are those documented at
    :func:`aligner.phones.inventory.broad_class_of_ipa`, which reads the parts with panphon."""
    first = parts[0]
    if all(p["syl"] == 1 and p["cons"] == -1 for p in parts) or (first["syl"] == 1 and first["cons"] == -1):
        return "vowel"  # (the first part a vowel: a vowel and a glide, ``ɐ̃w̃``)
    if first["cont"] == -1 and (first["delrel"] == 1 or (
            len(parts) == 2 and first["son"] == -1 and parts[1]["cont"] == 1 and parts[1]["son"] == -1)):
        return "affricate"
    if first["nas"] == 1:
        return "nasal"
    letters = [ch for ch in unicodedata.normalize("NFD", ipa) if not unicodedata.combining(ch)]
    if letters and letters[0] in "ɾɽⱱ":  # taps: TIMIT's flap is a stop
        return "stop"
    if first["son"] == 1 and first["cont"] == 1:
        glottal = all(first.get(k, 0) != 1 for k in ("lab", "cor", "hi", "lo"))
        # glottal continuants are fricatives; laterals, trills and approximants glides
        return "fricative" if glottal and first["cons"] == 1 else "glide"
    if first["cont"] == 1:
        return "fricative"
    return "stop"


#: layout of :func:`composition_vector`: a constant, silence, several parts, tone, the broad
#: class (7), then each of the 24 features as a +1 and a -1 indicator, for the first part and
#: for the last part
COMPOSITION_HEAD = ("constant", "silence", "contour", "tone")
#: broad classes in the order of their indicators (those of :data:`~aligner.phones.sets.BROAD_CLASSES`)
BROAD_ORDER = ("vowel", "glide", "nasal", "stop", "affricate", "fricative", "silence")
COMPOSITION_DIMS = len(COMPOSITION_HEAD) + len(BROAD_ORDER) + 2 * 2 * N_FEATURES


def composition_vector(segment: Segment) -> np.ndarray:
    """(:data:`COMPOSITION_DIMS`,) float32 description of a phone from which the universal model
    composes its score: 1; silence; more than one part; tone; one-hot broad class; for the first
    and the last part, each feature's +1 and -1 indicators (a 0 feature sets neither). Remembered
    per features; the array returned is read-only."""
    key = _segment_key(segment)
    v = _COMPOSITION_CACHE.get(key)
    if v is None:
        v = _COMPOSITION_CACHE[key] = _composition_vector(segment)
        v.flags.writeable = False
    return v


def _composition_vector(segment: Segment) -> np.ndarray:
    v = np.zeros(COMPOSITION_DIMS, np.float32)
    v[0] = 1.0
    head = len(COMPOSITION_HEAD)
    v[head + BROAD_ORDER.index(broad_class(segment))] = 1.0
    if segment.silence:
        v[1] = 1.0
        return v
    v[2] = float(len(segment.parts) > 1)
    v[3] = float(segment.tone)
    at = head + len(BROAD_ORDER)
    for part in (segment.parts[0], segment.parts[-1]):
        v[at:at + N_FEATURES] = part == 1
        v[at + N_FEATURES:at + 2 * N_FEATURES] = part == -1
        at += 2 * N_FEATURES
    return v


def composition_matrix(segments: Sequence[Segment]) -> np.ndarray:
    """(len(segments), :data:`COMPOSITION_DIMS`) float32 rows of :func:`composition_vector`."""
    return np.stack([composition_vector(s) for s in segments]) if segments else np.zeros((0, COMPOSITION_DIMS),
                                                                                        np.float32)


class OpenPhoneSet:
    """The phone set of a code (:data:`CODES`: ``ipa``, ``xsampa``): every symbol the code reads
    (:func:`read_phone`), silence labels included. It reads and checks transcripts; the classes come
    from the model that aligns them (the universal model's view of the transcript's phones, or an
    English or own-phone model's closest phones by features)."""

    def __init__(self, code: str):
        if code not in CODES:
            raise ValueError(f"unknown phone code {code!r}; choose from {', '.join(CODES)}")
        self.name = self.code = code
        self.description = {"ipa": "any phone in IPA", "xsampa": "any phone in X-SAMPA"}[code]

    def __repr__(self) -> str:
        return f"OpenPhoneSet({self.code!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpenPhoneSet) and other.code == self.code

    def __hash__(self) -> int:
        return hash(("OpenPhoneSet", self.code))

    def read(self, symbol: str) -> Segment:
        """``symbol`` read in this code (:class:`IpaError` when it cannot be)."""
        return read_phone(symbol, self.code)

    def normalize(self, symbol: str) -> str | None:
        """``symbol`` stripped and in Unicode NFC if the code reads it, else None."""
        try:
            self.read(symbol)
        except IpaError:
            return None
        return unicodedata.normalize("NFC", symbol.strip())

    def __contains__(self, symbol: object) -> bool:
        return isinstance(symbol, str) and self.normalize(symbol) is not None

    def first_unknown(self, symbols: Sequence[str]) -> int | None:
        for i, s in enumerate(symbols):
            if s not in self:
                return i
        return None

    def validate(self, symbols: Sequence[str], source: str, lines: Sequence[int] | None = None) -> None:
        """Raise :class:`TranscriptError` (one line naming ``source``, the symbol, its position and
        line, and why) if ``symbols`` is empty or holds a symbol the code cannot read."""
        if not symbols:
            raise TranscriptError(f"{source}: transcript is empty (no phone symbols)")
        for i, s in enumerate(symbols):
            try:
                self.read(s)
            except IpaError as exc:
                where = f"symbol {i + 1} of {len(symbols)}" + (f", line {lines[i]}" if lines is not None else "")
                raise TranscriptError(f"{source}: {exc} ({where})") from None
