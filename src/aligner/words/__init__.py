"""Aligning from words: pronouncing dictionaries, transcript normalisation, unknown words.

* :mod:`aligner.words.dictionary`: :class:`PronouncingDictionary`, the CMU Pronouncing
  Dictionary (:func:`load_cmudict`) and user dictionaries in MFA format
  (:func:`read_user_dictionary`).
* :mod:`aligner.words.normalize`: :func:`normalize_transcript` / :func:`read_words_transcript`,
  orthographic text -> :class:`Token` lookup words, with documented rules.
* :mod:`aligner.words.oov`: :func:`find_oovs` and :func:`format_oov_report`.
* :mod:`aligner.words.dialects`: r-less (non-rhotic) forms of CMUdict's pronunciations for
  ``--dialect`` (:func:`~aligner.words.dialects.dialect_pronunciations`).

Importing this package is cheap: the CMU data is read on the first :func:`load_cmudict` call, and
num2words / numpy are imported only when needed.
"""

from aligner.words.dictionary import (
    PronouncingDictionary,
    fold_word,
    load_cmudict,
    load_dictionary,
    read_user_dictionary,
)
from aligner.words.normalize import Token, normalize_transcript, read_words_transcript, words_of
from aligner.words.oov import find_oovs, format_oov_report

__all__ = [
    "PronouncingDictionary",
    "Token",
    "find_oovs",
    "fold_word",
    "format_oov_report",
    "load_cmudict",
    "load_dictionary",
    "normalize_transcript",
    "read_user_dictionary",
    "read_words_transcript",
    "words_of",
]
