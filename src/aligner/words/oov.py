"""Unknown (out-of-vocabulary) words: which words of the transcripts a dictionary lacks.

:func:`find_oovs` counts them; :func:`format_oov_report` writes the counts as text, one word a
line (``word<TAB>count``, most frequent first), under a one-line summary, ready for a user to add
pronunciations to a dictionary in MFA format.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from aligner.words.dictionary import PronouncingDictionary, fold_word
from aligner.words.normalize import Token

__all__ = ["find_oovs", "format_oov_report"]


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
