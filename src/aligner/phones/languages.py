"""Aligning a language the model never heard: a G2P gives each word's IPA phones, and each IPA
phone is reached through the model's closest phone by phonological features.

The route of "A Robin Hood approach to forced alignment" (Babinski et al. 2019): align with a
model of another language through a phone mapping, then (``aligner adapt``) adapt it on the
corpus. :func:`language_pronunciations` reads words with ``gruut`` (a rule-and-lexicon G2P that
works offline, one pip package per language: the ``languages`` extra); :func:`phone_mapping`
maps each IPA phone to the model phone at the least weighted feature edit distance
(``panphon``), unless a ``--phone-map`` file (:func:`read_phone_map`) says otherwise; the
alignment's phones tier is then written back in the language's own IPA symbols.
"""

from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from aligner.phones.inventory import PhoneClassError, ipa_features, panphon_form, to_ipa
from aligner.errors import AlignerError, TranscriptError
from aligner.phones.sets import ARPABET, get_phone_set

LANGUAGES_EXTRA = "pip install 'aligner[languages]'"
#: stress and syllable marks a G2P writes on phones; they are not phones
_PROSODY = str.maketrans("", "", "ˈˌ.‿")


class LanguageError(AlignerError):
    """A language the G2P cannot read, or its library missing."""


def _gruut():
    try:
        import gruut
    except ImportError:
        raise LanguageError(f"--language needs the gruut G2P: {LANGUAGES_EXTRA} (and the language's pack, e.g. "
                            "pip install gruut-lang-es)") from None
    return gruut


@lru_cache(maxsize=16)
def check_language(code: str) -> str:
    """``code`` (e.g. ``es``, ``de``, ``en-us``) if gruut reads it here; else a one-line
    :class:`LanguageError` naming the extra or the language pack to install."""
    gruut = _gruut()
    try:
        supported = gruut.is_language_supported(code)
    except Exception:  # noqa: BLE001 - gruut raises several kinds for an unknown code
        supported = False
    if not supported:
        raise LanguageError(f"language {code!r} is not supported by gruut here; install its pack "
                            f"(pip install gruut-lang-{code.split('-')[0].lower()}) or check the code "
                            "(gruut: ar, cs, de, en-us, es, fa, fr, it, lb, nl, pt, ru, sv, sw)")
    return code


def language_pronunciations(words: list[str], code: str) -> dict[str, list[str]]:
    """``{word: its IPA phones}`` of ``words`` in language ``code``, each word read on its own
    by gruut (stress marks dropped; length and other diacritics kept). A word the G2P gives no
    phones is an error naming it."""
    gruut = _gruut()
    check_language(code)
    out: dict[str, list[str]] = {}
    known = _G2P_CACHE.setdefault(code, {})
    for word in dict.fromkeys(words):
        if word in known:
            out[word] = list(known[word])
            continue
        phones: list[str] = []
        try:
            for sentence in gruut.sentences(word, lang=code):
                for w in sentence:
                    if w.is_spoken and w.phonemes:
                        phones += [p.translate(_PROSODY) for p in w.phonemes]
        except Exception as exc:  # noqa: BLE001 - the G2P's own failure, named in one line
            raise TranscriptError(f"the {code} G2P cannot read {word!r} ({exc})") from None
        phones = [unicodedata.normalize("NFC", p) for p in phones if p.translate(_PROSODY).strip()]
        if not phones:
            raise TranscriptError(f"the {code} G2P gives no phones for {word!r}")
        out[word] = phones
        if len(known) < 100_000:  # bounded, whatever a corpus holds
            known[word] = tuple(phones)
    return out


#: language -> word -> its phones (a corpus repeats its words; the G2P takes milliseconds a word)
_G2P_CACHE: dict = {}
#: (IPA phone, the model's candidates) -> the closest model phone
_NEAREST_CACHE: dict = {}


def model_phones_ipa(model) -> dict[str, str]:
    """``{model phone symbol: its IPA reading}``, silence left out: for the 39-class models the
    ARPAbet phones (as a words transcript reaches them), for a model of its own phones every
    symbol with an IPA reading."""
    cached = model.__dict__.get("_phones_ipa")
    if cached is not None:
        return cached
    if model.phone_set is None:
        out = {p: to_ipa(p, "arpabet") for p in ARPABET}
    else:
        pset, out = model.phone_set, {}
        for s in pset.symbols:
            if pset.class_of(s) != model.inventory.silence and ipa_features(s):
                out[s] = s
    model.__dict__["_phones_ipa"] = out
    return out


def read_phone_map(path: str | os.PathLike) -> dict[str, str]:
    """A ``--phone-map`` file: lines ``LANGUAGE_PHONE MODEL_PHONE`` (tabs or spaces; ``#``
    comments). Raises :class:`PhoneClassError` naming the file and line."""
    from aligner.io.transcripts import read_text

    path = Path(path)
    out: dict[str, str] = {}
    for line_no, line in enumerate(read_text(path, "phone map", PhoneClassError).splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            raise PhoneClassError(f"{path}:{line_no}: expected 'LANGUAGE_PHONE MODEL_PHONE', got {line.strip()!r}")
        out[unicodedata.normalize("NFC", fields[0])] = fields[1]
    if not out:
        raise PhoneClassError(f"{path}: no phones mapped in the file")
    return out


_DISTANCE = None
_TIE_BARS = str.maketrans("", "", "\u0361\u035c")


def _untied(ipa: str) -> str:
    """``ipa`` as compared by feature distance: panphon's reading, tie bars dropped (G2Ps write
    ``t͡ʃ``, phone codes ``tʃ``: the same affricate)."""
    return panphon_form(ipa).translate(_TIE_BARS)


def _distance():
    global _DISTANCE
    if _DISTANCE is None:
        try:
            from panphon.distance import Distance
        except ImportError:
            raise PhoneClassError(f"mapping phones by their features needs panphon: {LANGUAGES_EXTRA}") from None
        _DISTANCE = Distance()
    return _DISTANCE


def phone_mapping(ipa_phones, model, overrides: dict | None = None) -> dict[str, str]:
    """``{IPA phone: model phone}`` for every phone of ``ipa_phones``: ``overrides`` first (each
    must name a phone of the model), else the model phone of least weighted feature edit
    distance (panphon), ties to the earlier phone. Raises :class:`PhoneClassError` for a phone
    with no features and no override, or an override the model lacks."""
    candidates = model_phones_ipa(model)
    known = set(candidates) | (set(model.phone_set.symbols) if model.phone_set is not None
                               else {p for p in get_phone_set("arpabet").symbols})
    overrides = dict(overrides or {})
    for phone, target in overrides.items():
        if target.lower() not in known and target not in known:
            raise PhoneClassError(f"the phone map sends {phone!r} to {target!r}, which is not a phone of the model")
    distance = _distance()
    out: dict[str, str] = {}
    for phone in dict.fromkeys(ipa_phones):
        if phone in overrides:
            out[phone] = overrides[phone]
            continue
        if not ipa_features(phone):
            raise PhoneClassError(f"phone {phone!r} has no phonological features; map it with --phone-map FILE")
        key = (phone, tuple(sorted(candidates.items())))
        best = _NEAREST_CACHE.get(key)
        if best is None:
            form = _untied(phone)
            best = min(candidates, key=lambda m: (distance.weighted_feature_edit_distance(form, _untied(candidates[m])),
                                                  list(candidates).index(m)))
            _NEAREST_CACHE[key] = best
        out[phone] = best
    return out


_ANNOTATION = re.compile(r"\[[^\]]*\]|\{[^}]*\}|<[^>]*>")
_WORD = re.compile(r"\w+(?:['’-]\w+)*")


def language_words(text: str) -> list[str]:
    """The words of a transcript in any language: runs of letters and digits (apostrophes and
    hyphens inside a word kept), lower case; ``[...]``, ``{...}`` and ``<...>`` annotations
    left out. Numbers stay as written: the language's G2P reads them."""
    return [w.lower() for w in _WORD.findall(_ANNOTATION.sub(" ", unicodedata.normalize("NFC", text)))]
