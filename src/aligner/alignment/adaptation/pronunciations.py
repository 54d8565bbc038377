"""Pronunciation probabilities re-estimated on the user's corpus (issue 46), as a bonus per
pronunciation alternative of the word decoder.

The word decoder (:mod:`aligner.alignment.decoding.words`) chooses, per word, one of its
alternatives: the dictionary's variants, their rule expansions (optional closures, reductions:
``_expansions``) and, with ``--dialect auto``, the r-less forms. Each alternative is a segment
of the pronunciation graph whose ``bonus`` is added to the path's score when the path takes it.
In each adaptation round (``AdaptSettings.pronunciation_prior``) the decoder's choices on the
corpus are counted per *word type*, and turned into one bonus per alternative:

    p_a = (c_a + alpha) / (N + alpha n),    bonus_a = log(n p_a)   (units of the path score)

for a word type with ``n`` alternatives chosen ``c_a`` times out of ``N``: the log of the
alternative's smoothed relative frequency over the uniform ``1/n``; ``alpha`` (the prior) pulls
every bonus toward 0 (no evidence: 0, the decoder as it was), and the bonus is clipped to
+-:data:`MAX_BONUS`. The bonuses are computed afresh each round from that round's counts (not
accumulated), stored in the adapted model (:attr:`AlignmentModel.pronunciation_bonus`, saved in
its bundle) and added by :func:`~aligner.alignment.decoding.words.word_graph` whenever that model
decodes words.

A word type is named by its alternatives, not its spelling: :func:`word_key` of the sorted
dictionary alternatives (dialect forms left out, so that adapting without them and aligning with
``--dialect auto`` name the same type); an alternative by :func:`alternative_key`: at ``level="expansion"`` the word key
and the internal phone symbols of the expansion (TIMIT closures split), so each rule expansion
has a bonus of its own; at ``level="phones"`` the word key, ``=`` and the ARPAbet phones of the
dictionary variant or dialect form, whose bonus every rule expansion of it then carries.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from aligner.alignment.decoding.words import (  # noqa: F401  (re-exported)
    LEVELS, MAX_PRONUNCIATION_BONUS as MAX_BONUS, alternative_key, path_words,
    check_pronunciation_bonus as check_bonuses,
    word_key)


def _key(word: str, phones, expanded, level: str) -> str:
    """The :func:`alternative_key` of a graph alternative ``(phones, expanded)`` of word type ``word``."""
    return alternative_key(word, phones if level == "phones" else expanded.symbols, level)


def graph_alternatives(expansions: Sequence, words: Sequence[str], level: str = "expansion") -> list:
    """Per word, the sorted distinct :func:`alternative_key` of its graph alternatives;
    ``expansions``: :func:`~aligner.alignment.decoding.words.word_graph`'s per-word
    ``[(phones, expansion), ...]``; ``words``: the :func:`word_key` of each word."""
    return [sorted({_key(w, ph, exp, level) for ph, exp in alts}) for alts, w in zip(expansions, words)]


def chosen_alternatives(graph, expansions: Sequence, path, pronunciations: Sequence,
                        level: str = "expansion") -> list:
    """``[(word key, [alternative keys of the word], chosen alternative key)]`` of one decoded
    path, one per word (W,), as :func:`~aligner.alignment.decoding.words.align_words_scored`
    reads the path."""
    words = [word_key(alts) for alts in pronunciations]
    options = graph_alternatives(expansions, words, level)
    return [(words[w], options[w], _key(words[w], phones, expanded, level))
            for _, w, phones, expanded in path_words(graph, expansions, path.nodes)]


def count_choices(choices: Sequence) -> tuple:
    """``(counts {alternative key: times chosen}, options {word key: [alternative keys]})``
    summed over the ``(word, options, chosen)`` of :func:`chosen_alternatives` of any number of
    recordings."""
    counts: Counter = Counter()
    options: dict = {}
    for word, opts, chosen in choices:
        counts[chosen] += 1
        options.setdefault(word, set()).update(opts)
    return dict(counts), {w: sorted(o) for w, o in options.items()}


def pronunciation_bonuses(counts: dict, options: dict, alpha: float) -> dict:
    """``{alternative key: bonus}`` (module docstring) of every alternative of the word types
    in ``options`` with more than one alternative; ``alpha`` > 0, pseudo-count per alternative."""
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    out = {}
    for word, opts in options.items():
        n = len(opts)
        if n < 2:
            continue
        c = np.array([counts.get(a, 0) for a in opts], float)
        p = (c + alpha) / (c.sum() + alpha * n)
        for a, v in zip(opts, np.clip(np.log(n * p), -MAX_BONUS, MAX_BONUS)):
            if abs(v) > 1e-12:
                out[a] = float(v)
    return out
