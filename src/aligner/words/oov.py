"""Unknown (out-of-vocabulary) words: which words of the transcripts a dictionary lacks, and what
the aligner offers for them.

:func:`find_oovs` counts them; :func:`format_oov_report` writes the counts as text, one word a
line (``word<TAB>count``, most frequent first), under a one-line summary, ready for a user to add
pronunciations to a dictionary in MFA format. :func:`g2p_pronunciations` gives the
pronunciations the word decoder chooses among for an unknown word: the G2P's best and, as
:class:`G2PVariant`, the next ones of its n-best list (:meth:`~aligner.words.g2p.G2PModel.predict_n_best`).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Iterable

from aligner.words.dictionary import PronouncingDictionary, fold_word
from aligner.words.normalize import Token

__all__ = ["G2PVariant", "find_oovs", "format_oov_report", "g2p_pronunciations"]

#: pronunciations of an unknown word offered to the word decoder: the G2P's best and the next ones
#: of its n-best list, this many in all. Every word of the TIMIT sample aligned as unknown through a
#: G2P that never saw those words (``python -m benchmarks.words.bench_unknown_words``): 1, 3, 4 and
#: 5 compared on the first 60 utterances, 4 the best (3 close); offering only variants within a
#: score margin of the best lost most of the gain
G2P_VARIANTS = 4


class G2PVariant(tuple):
    """A pronunciation (tuple of ARPAbet phones) from the G2P's n-best list after its best."""

    __slots__ = ()


def g2p_pronunciations(word: str, model=None, n: int | None = None) -> list:
    """The pronunciations offered for an unknown ``word``: the G2P's best (a plain tuple of
    ARPAbet phones with stress), then the next ``n - 1`` of its n-best list as
    :class:`G2PVariant` (default :data:`G2P_VARIANTS` in all; fewer where the G2P has fewer
    distinct ones). ``model``: a :class:`~aligner.words.g2p.G2PModel` (default: the shipped
    one). ``[()]`` for a word without letters (as :meth:`~aligner.words.g2p.G2PModel.predict`
    gives)."""
    n = max(1, int(G2P_VARIANTS if n is None else n))
    if model is None:
        from aligner.words.g2p import default_g2p

        return list(_offered(default_g2p(), word, n))  # a corpus repeats its unknown words
    return list(_offered.__wrapped__(model, word, n))


@lru_cache(maxsize=4096)
def _offered(model, word: str, n: int) -> tuple:
    ranked = model.predict_n_best(word, n)
    if not ranked:
        return (tuple(model.predict(word)),)
    return (tuple(ranked[0][0]),) + tuple(G2PVariant(phones) for phones, _ in ranked[1:])


def find_oovs(words: Iterable[Token | str], dictionary: PronouncingDictionary) -> dict[str, int]:
    """Words not in ``dictionary`` -> how often they occur, most frequent first (ties A-Z).

    ``words`` are :class:`~aligner.words.normalize.Token` (annotations are skipped) or strings
    (folded to lower case). An empty dict means every word is known.
    """
    counts: Counter[str] = Counter()
    for w in words:
        if isinstance(w, Token):
            if w.annotation:
                continue
            w = w.word
        else:
            w = fold_word(w)
        if w not in dictionary:
            counts[w] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def format_oov_report(oovs: dict[str, int], source: str = "") -> str:
    """A text report of :func:`find_oovs`' result; ``source`` (e.g. a path) names the input.

    Example::

        2 unknown words (3 occurrences) in corpus/: not in the dictionary
        zyxgrobble	2
        blorft	1
    """
    where = f" in {source}" if source else ""
    if not oovs:
        return f"no unknown words{where}: every word is in the dictionary"
    n = sum(oovs.values())
    head = (f"{len(oovs)} unknown word{'s' if len(oovs) != 1 else ''} ({n} occurrence"
            f"{'s' if n != 1 else ''}){where}: not in the dictionary")
    return "\n".join([head] + [f"{w}\t{c}" for w, c in oovs.items()])
