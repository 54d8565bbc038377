"""Training the G2P of :mod:`aligner.words.g2p` on a pronouncing dictionary.

* :func:`align_dictionary`: letter -> phone-chunk alignments by EM (1 letter -> 0..2 phones;
  Jiampojamarn, Kondrak & Sherif 2007; see :mod:`aligner.words.g2p`).
* :class:`G2PTask`: the decoder as a :class:`~aligner.learn.task.StructuredTask`, the
  interface every trainer of :mod:`aligner.learn` learns through.
* :func:`training_entries`, :func:`prepare`, :func:`train_g2p`: CMUdict entries -> aligned,
  encoded examples -> a fitted trainer -> a :class:`~aligner.words.g2p.G2PModel`.

The shipped recipe (``python -m benchmarks.words.bench_g2p --train``): CMUdict minus 2000 held-out
test words, 2000 more held out as the validation set, averaged perceptron, up to 8 epochs with
early stopping (patience 2), 2^18 hashed features: 120,777 training words, about 12 minutes
on one free core (24 minutes with the machine's two cores shared by four processes).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numba import njit

from aligner.learn.task import StructuredTask
from aligner.words.g2p import (
    _LETTER_ID,
    _N_CHUNKS,
    _N_PHONES,
    _PHONE_ID,
    _WORD,
    ALPHABET,
    G2PDecoder,
    G2PModel,
    LabelSet,
    strip_stress,
)

__all__ = ["G2PTask", "PreparedG2P", "align_dictionary", "prepare", "train_g2p", "training_entries"]


class G2PTask(G2PDecoder, StructuredTask):
    """The G2P labelling task for the trainers: ``x`` a :class:`~aligner.words.g2p.G2PWord`,
    ``y`` an int array of label ids (one per letter); ``phi``, ``decode``, ``decode_augmented``
    (Hamming cost, ``eps / n`` per position) and ``cost`` (per-letter label mismatch rate)
    are :class:`~aligner.words.g2p.G2PDecoder`'s."""


# --------------------------------------------------------------------------------------
# EM alignment of letters to phone chunks
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _chunk(ph, j, d, n_ph):
    """Chunk id of the ``d`` phones ending before phone index ``j``."""
    if d == 0:
        return 0
    if d == 1:
        return 1 + ph[j - 1]
    return 1 + n_ph + ph[j - 2] * n_ph + ph[j - 1]


@njit(cache=True, nogil=True)
def _em_counts(let, let_ptr, ph, ph_ptr, prob, n_ph):
    """Expected (letter, chunk) counts under ``prob`` and the total log-likelihood."""
    counts = np.zeros_like(prob)
    loglik = 0.0
    for wd in range(let_ptr.shape[0] - 1):
        L = let[let_ptr[wd]:let_ptr[wd + 1]]
        P = ph[ph_ptr[wd]:ph_ptr[wd + 1]]
        n = L.shape[0]
        m = P.shape[0]
        if m > 2 * n:
            continue
        alpha = np.zeros((n + 1, m + 1))
        beta = np.zeros((n + 1, m + 1))
        alpha[0, 0] = 1.0
        for i in range(1, n + 1):
            for j in range(0, m + 1):
                acc = 0.0
                for d in range(0, 3):
                    if j - d >= 0:
                        acc += alpha[i - 1, j - d] * prob[L[i - 1], _chunk(P, j, d, n_ph)]
                alpha[i, j] = acc
        beta[n, m] = 1.0
        for i in range(n - 1, -1, -1):
            for j in range(m, -1, -1):
                acc = 0.0
                for d in range(0, 3):
                    if j + d <= m:
                        acc += beta[i + 1, j + d] * prob[L[i], _chunk(P, j + d, d, n_ph)]
                beta[i, j] = acc
        z = alpha[n, m]
        if not z > 0.0:
            continue
        loglik += np.log(z)
        for i in range(1, n + 1):
            for j in range(0, m + 1):
                if beta[i, j] == 0.0:
                    continue
                for d in range(0, 3):
                    if j - d >= 0 and alpha[i - 1, j - d] > 0.0:
                        c = _chunk(P, j, d, n_ph)
                        counts[L[i - 1], c] += alpha[i - 1, j - d] * prob[L[i - 1], c] * beta[i, j] / z
    return counts, loglik


@njit(cache=True, nogil=True)
def _em_viterbi(let, let_ptr, ph, ph_ptr, logprob, n_ph, out_d):
    """Best alignment of every word: ``out_d[let_ptr[w] + i]`` = phones taken by letter i
    (-1 for every letter of a word that cannot be aligned)."""
    for wd in range(let_ptr.shape[0] - 1):
        L = let[let_ptr[wd]:let_ptr[wd + 1]]
        P = ph[ph_ptr[wd]:ph_ptr[wd + 1]]
        n = L.shape[0]
        m = P.shape[0]
        o = let_ptr[wd]
        if m > 2 * n:
            for i in range(n):
                out_d[o + i] = -1
            continue
        V = np.full((n + 1, m + 1), -np.inf)
        B = np.zeros((n + 1, m + 1), dtype=np.int64)
        V[0, 0] = 0.0
        for i in range(1, n + 1):
            for j in range(0, m + 1):
                best = -np.inf
                arg = 0
                for d in range(0, 3):
                    if j - d >= 0:
                        v = V[i - 1, j - d] + logprob[L[i - 1], _chunk(P, j, d, n_ph)]
                        if v > best:
                            best = v
                            arg = d
                V[i, j] = best
                B[i, j] = arg
        if V[n, m] == -np.inf:
            for i in range(n):
                out_d[o + i] = -1
            continue
        j = m
        for i in range(n, 0, -1):
            d = B[i, j]
            out_d[o + i - 1] = d
            j -= d


def align_dictionary(entries: Sequence[tuple[str, Sequence[str]]], iterations: int = 8,
                     log=None) -> list[Optional[list[tuple]]]:
    """Letter-to-phone-chunk alignments of ``(word, phones)`` entries by EM (module docstring).

    Returns, per entry, a list with one chunk (tuple of 0..2 phones, stress digits as given)
    per letter, or None if the word cannot be aligned (more than 2 phones per letter).
    ``log(msg)`` receives the log-likelihood per iteration.
    """
    let_ptr, ph_ptr, let, ph = [0], [0], [], []
    for word, phones in entries:
        let += [_LETTER_ID[c] for c in word]
        ph += [_PHONE_ID[p] for p in strip_stress(phones)]
        let_ptr.append(len(let))
        ph_ptr.append(len(ph))
    let_a, ph_a = np.array(let, dtype=np.int64), np.array(ph, dtype=np.int64)
    let_p, ph_p = np.array(let_ptr, dtype=np.int64), np.array(ph_ptr, dtype=np.int64)
    prob = np.full((len(ALPHABET), _N_CHUNKS), 1.0 / (len(ALPHABET) * _N_CHUNKS))
    for it in range(iterations):
        counts, loglik = _em_counts(let_a, let_p, ph_a, ph_p, prob, _N_PHONES)
        prob = counts / counts.sum()
        if log is not None:
            log(f"EM iteration {it + 1}: log-likelihood {loglik:.1f}")
    with np.errstate(divide="ignore"):
        logprob = np.log(prob)
    out_d = np.zeros(let_a.size, dtype=np.int64)
    _em_viterbi(let_a, let_p, ph_a, ph_p, logprob, _N_PHONES, out_d)
    result = []
    for k, (word, phones) in enumerate(entries):
        ds = out_d[let_ptr[k]:let_ptr[k + 1]]
        if len(ds) and ds[0] < 0:
            result.append(None)
            continue
        chunks, j = [], 0
        for d in ds:
            chunks.append(tuple(phones[j:j + d]))
            j += d
        result.append(chunks)
    return result


# --------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------


def training_entries(dictionary=None, exclude: Iterable[str] = (), all_variants: bool = False
                     ) -> list[tuple[str, tuple[str, ...]]]:
    """``(word, phones)`` of the dictionary's words of letters and apostrophes only, minus
    ``exclude``; the first (preferred) pronunciation of each, or every one with
    ``all_variants``. ``dictionary`` defaults to :func:`aligner.words.load_cmudict`."""
    if dictionary is None:
        from aligner.words.dictionary import load_cmudict

        dictionary = load_cmudict()
    exclude = set(exclude)
    out = []
    for word in dictionary:
        if word in exclude or not _WORD.match(word):
            continue
        prons = dictionary.pronunciations(word)
        for pron in prons if all_variants else prons[:1]:
            if all(p.rstrip("012") in _PHONE_ID for p in pron):
                out.append((word, tuple(pron)))
    return out


@dataclass
class PreparedG2P:
    """Aligned training data turned into task inputs and outputs."""

    task: G2PTask
    X: list
    Y: list
    words: list
    n_unaligned: int
    n_unreachable: int
    align_seconds: float


def prepare(entries: Sequence[tuple[str, Sequence[str]]], bits: int = 18, context: int = 3,
            trans_context: int = 1, min_label_count: int = 2, em_iterations: int = 8, labels: Optional[LabelSet] = None,
            log=print) -> PreparedG2P:
    """Align ``entries``, build the label set (unless given) and the task, encode every word."""
    t = time.perf_counter()
    aligned = align_dictionary(entries, iterations=em_iterations, log=log)
    pairs = [(w, chunks) for (w, _), chunks in zip(entries, aligned) if chunks is not None]
    align_seconds = time.perf_counter() - t
    if labels is None:
        labels = LabelSet.from_alignments(pairs, min_count=min_label_count)
    task = G2PTask(labels, bits=bits, context=context, trans_context=trans_context)
    X, Y, words, unreachable = [], [], [], 0
    for w, chunks in pairs:
        try:
            y = task.encode(w, chunks)
        except KeyError:  # a chunk rarer than min_label_count: keep it out
            unreachable += 1
            continue
        x = task.make_input(w)
        if not task.reachable(x, y):
            unreachable += 1
            continue
        X.append(x)
        Y.append(y)
        words.append(w)
    return PreparedG2P(task, X, Y, words, len(entries) - len(pairs), unreachable, align_seconds)


def train_g2p(entries: Sequence[tuple[str, Sequence[str]]], trainer="perceptron", trainer_params=None,
              n_val: int = 2000, bits: int = 18, context: int = 3, trans_context: int = 1,
              min_label_count: int = 2,
              em_iterations: int = 8, max_train: Optional[int] = None, seed: int = 0,
              log=print) -> tuple[G2PModel, object]:
    """Train a :class:`G2PModel` on dictionary entries ``(word, phones)``.

    ``n_val`` random words (seed ``seed``) are held out of the training words as the
    trainer's validation set (early stopping: the epoch with the lowest validation cost is
    kept); ``max_train`` caps the training words (a random subset). ``trainer`` is a name of
    :data:`aligner.learn.TRAINERS` (with ``trainer_params``) or an unfitted trainer.
    Returns ``(model, fitted trainer)``.
    """
    from aligner.learn import make_trainer

    prepared = prepare(entries, bits=bits, context=context, trans_context=trans_context,
                       min_label_count=min_label_count,
                       em_iterations=em_iterations, log=log)
    order = list(range(len(prepared.X)))
    random.Random(seed).shuffle(order)
    val, train = order[:n_val], order[n_val:]
    if max_train is not None:
        train = train[:max_train]
    X = [prepared.X[i] for i in train]
    Y = [prepared.Y[i] for i in train]
    Xv = [prepared.X[i] for i in val]
    Yv = [prepared.Y[i] for i in val]
    if isinstance(trainer, str):
        params = {"epochs": 10, "average": True, "eval_train": False}
        params.update(trainer_params or {})
        trainer = make_trainer(trainer, **params)
    log(f"training {type(trainer).__name__} on {len(X)} words ({len(Xv)} validation), "
        f"{len(prepared.task.labels.labels)} labels, 2^{bits} features")

    def progress(rec):
        log(f"  epoch {rec.epoch}: val cost {rec.val_cost:.4f}, {rec.seconds:.0f} s")

    trainer.fit(prepared.task, X, Y, Xv, Yv, callback=progress)
    training = {
        "data": "CMU Pronouncing Dictionary (first pronunciation of words of letters/apostrophes)",
        "n_entries": len(entries), "n_unaligned": prepared.n_unaligned,
        "n_unreachable": prepared.n_unreachable, "n_train": len(X), "n_val": len(Xv),
        "trainer": type(trainer).__name__, "trainer_params": _jsonable(trainer.get_params()),
        "best_epoch": int(trainer.best_epoch_), "fit_seconds": round(trainer.fit_seconds_, 1),
        "align_seconds": round(prepared.align_seconds, 1), "em_iterations": em_iterations,
        "min_label_count": min_label_count,
        "val_costs": [round(r.val_cost, 5) for r in trainer.history_],
    }
    model = G2PModel(prepared.task.labels, trainer.w_, bits=bits, context=context,
                     trans_context=trans_context, training=training)
    return model, trainer


def _jsonable(params: dict) -> dict:
    out = {}
    for k, v in params.items():
        try:
            json.dumps(v)
            out[k] = v
        except TypeError:
            out[k] = repr(v)
    return out


