"""Grapheme-to-phoneme conversion (G2P) for words missing from the pronouncing dictionary.

A discriminative letter-to-phone tagger trained on the CMU Pronouncing Dictionary with the
project's own learning core (:mod:`aligner.learn`): a linear-chain structured task whose
weights any trainer of :data:`aligner.learn.TRAINERS` learns. This module holds what
prediction needs (it imports neither the learning core nor scikit-learn);
:mod:`aligner.words.g2p_train` holds the alignment EM, the task as a
:class:`~aligner.learn.task.StructuredTask` (``G2PTask``) and the training.

Alignment (training data)
    Every letter gets one **label**, a chunk of 0, 1 or 2 phones ("" for a silent letter,
    ``"K"``, ``"K S"`` for the x of *box*). The chunks come from many-to-many alignments
    learnt by EM over the training dictionary (Jiampojamarn, Kondrak & Sherif 2007, here
    restricted to 1 letter -> 0..2 phones, as in Phonetisaurus' 1-to-{0,1,2} setting):
    :func:`~aligner.words.g2p_train.align_dictionary` runs forward-backward EM on the joint
    probability ``p(letter, chunk)`` of stressless phones, then takes each word's Viterbi
    alignment. Words with more than two phones per letter (``mr`` -> M IH S T ER) cannot be
    aligned and are left out. The labels keep the dictionary's stress digits, so the model
    predicts ARPAbet **with stress** (``"AH0"``, ``"Y UW1"``); :meth:`G2PModel.predict` can
    strip them.

Task (:class:`G2PDecoder`; ``G2PTask`` adds the ``StructuredTask`` base)
    ``x`` is a :class:`G2PWord` (the letters and their precomputed context codes), ``y`` an
    int array with one label id per letter.

    ``phi(x, y)`` counts, for every letter i, the features ``(template, letter n-gram
    around i, y_i)`` for the context templates of :func:`context_templates` (by default
    every window of letters inside ``i-3 .. i+3`` that covers i, the single letters at
    offsets +-1..3 and the bigrams just before and after i; ``^``/``$`` pad the word:
    24 templates), a label bias ``(y_i)``, the label bigram ``(y_{i-1}, y_i)`` (with
    word-boundary labels at both ends) and, with ``trans_context=1`` (default), the label
    bigram conjoined with the letter i. Every feature is hashed (splitmix64) into
    ``2**bits`` dims (default ``bits=18``); phi is returned dense (the trainers use dense
    weights).

    ``decode`` is exact Viterbi over the labels allowed for each letter (those seen with
    that letter in the training alignments at least ``min_label_count`` times);
    ``decode_augmented`` adds ``eps / n`` to every position whose label differs from the
    reference (the cost decomposes per letter), ``cost`` is the per-letter label mismatch
    rate (Hamming / n). ``decode_one_primary`` is the exact argmax among outputs with
    exactly one primary-stressed vowel (state: label x stress seen), which 99 % of CMUdict
    words have; the model predicts with it by default (on the validation words it lowered
    WER from 35.6 % to 34.0 % without stress and from 47.0 % to 40.4 % with stress). The
    numba loops run without the GIL.

Model (:class:`G2PModel`)
    The decoder's tables plus the learnt weights; ``predict(word) -> tuple of ARPAbet
    phones``; saved as a model bundle (:mod:`aligner.io.bundles`: ``.npz`` read with
    ``allow_pickle=False``, JSON, SHA-256 manifest) of kind ``"g2p"``, weights as float32
    (1.1 MB for 2^18 features), and every value is checked on load
    (:class:`~aligner.errors.ModelError` otherwise).

The benchmark ``python -m benchmarks.words.bench_g2p`` trains or loads a model and measures it on
2000 held-out CMUdict words beside the PyPI G2P systems.
"""

from __future__ import annotations

import functools

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np
from numba import njit

from aligner.errors import ModelError

__all__ = [
    "ALPHABET",
    "G2PModel",
    "G2PDecoder",
    "G2PWord",
    "LabelSet",
    "context_templates",
    "edit_distance",
    "score_predictions",
    "strip_stress",
]

#: the letters a word may hold (after lower-casing); other characters are dropped by predict
ALPHABET = "abcdefghijklmnopqrstuvwxyz'"
_LETTER_ID = {c: i for i, c in enumerate(ALPHABET)}
_BEGIN = len(ALPHABET)  # padding code before the word
_END = len(ALPHABET) + 1  # padding code after the word
_BASE = 32  # letter codes (0..28) are digits in base 32

#: the 39 CMU phones (no stress); the vowels take a stress digit 0/1/2
CMU_PHONES = ("AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G",
              "HH", "IH", "IY", "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH",
              "T", "TH", "UH", "UW", "V", "W", "Y", "Z", "ZH")
CMU_VOWELS = frozenset(p for p in CMU_PHONES if p[0] in "AEIOU")
_PHONE_ID = {p: i for i, p in enumerate(CMU_PHONES)}
_N_PHONES = len(CMU_PHONES)
_N_CHUNKS = 1 + _N_PHONES + _N_PHONES * _N_PHONES  # "", single phones, phone pairs
_STRESSED = re.compile(r"^([A-Z]+)([012])?$")
_WORD = re.compile(r"^[a-z']+$")

G2P_KIND = "g2p"
G2P_FORMAT = 1
MAX_LABELS = 2048  # the transition table is (labels + 1)^2 int64

# hashing constants (splitmix64)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_LABEL_SALT = 0x5DEECE66D
_TEMPLATE_SHIFT = 36  # a window's letters take the low 35 bits (7 letters x 5 bits)
_BIAS_CODE = 1 << 56
_TRANS_CODE = 2 << 56
_TRANS_LETTER_CODE = 3 << 56  # | prev label << 16 | letter context (< 2^16)


# --------------------------------------------------------------------------------------
# phones and labels
# --------------------------------------------------------------------------------------


def check_phone(p: str) -> str:
    """``p`` if it is a CMU phone (vowels with an optional stress digit); ``ValueError`` otherwise."""
    m = _STRESSED.match(p)
    if not m or m.group(1) not in _PHONE_ID or (m.group(2) and m.group(1) not in CMU_VOWELS):
        raise ValueError(f"{p!r} is not an ARPAbet phone of the CMU set")
    return p


def strip_stress(phones: Iterable[str]) -> tuple[str, ...]:
    """The phones without stress digits: ``("R", "EH1", "D")`` -> ``("R", "EH", "D")``."""
    return tuple(p.rstrip("012") for p in phones)


def context_templates(context: int = 3) -> tuple[tuple[int, int], ...]:
    """The letter windows ``(first, last)`` (offsets from the letter, inclusive) the features use.

    Every window inside ``-context .. +context`` that covers the letter, the single letters
    at offsets ``+-1 .. +-context`` and the bigrams just before (-2, -1) and after (1, 2).
    ``context=3`` gives 24 windows (windows hold at most 7 letters).
    """
    if not 0 <= context <= 3:
        raise ValueError(f"context must be 0..3, got {context}")
    out = [(s, e) for s in range(-context, 1) for e in range(0, context + 1)]
    out += [(k, k) for d in range(1, context + 1) for k in (-d, d)]
    if context >= 2:
        out += [(-2, -1), (1, 2)]
    return tuple(out)


@dataclass
class LabelSet:
    """The labels (phone chunks) and which of them each letter may take.

    ``labels[k]`` is a tuple of 0..2 phones (label 0 is always the empty chunk);
    ``allow_ptr``/``allow_lab`` is CSR: the labels letter ``a`` (index in :data:`ALPHABET`)
    may take are ``allow_lab[allow_ptr[a]:allow_ptr[a+1]]``. A letter never seen in training
    may take the empty label only.
    """

    labels: list
    allow_ptr: np.ndarray
    allow_lab: np.ndarray

    def __post_init__(self):
        self.labels = [tuple(lab) for lab in self.labels]
        self.allow_ptr = np.asarray(self.allow_ptr, dtype=np.int64)
        self.allow_lab = np.asarray(self.allow_lab, dtype=np.int64)
        self.check()
        self.index = {lab: k for k, lab in enumerate(self.labels)}

    def check(self) -> None:
        """``ValueError`` if the set is inconsistent (used on load)."""
        n = len(self.labels)
        if not 1 <= n <= MAX_LABELS:
            raise ValueError(f"{n} labels (need 1..{MAX_LABELS})")
        if self.labels[0] != ():
            raise ValueError("label 0 must be the empty chunk")
        if len(set(self.labels)) != n:
            raise ValueError("duplicate labels")
        for lab in self.labels:
            if len(lab) > 2:
                raise ValueError(f"label {' '.join(lab)!r} has more than two phones")
            for p in lab:
                check_phone(p)
        ptr, lab = self.allow_ptr, self.allow_lab
        if ptr.shape != (len(ALPHABET) + 1,) or ptr[0] != 0 or np.any(np.diff(ptr) < 1) or ptr[-1] != lab.size:
            raise ValueError("allowed-label pointers are inconsistent (every letter needs >= 1 label)")
        if lab.ndim != 1 or (lab.size and (lab.min() < 0 or lab.max() >= n)):
            raise ValueError("allowed labels out of range")
        for a in range(len(ALPHABET)):
            row = lab[ptr[a]:ptr[a + 1]]
            if np.unique(row).size != row.size:
                raise ValueError(f"letter {ALPHABET[a]!r} lists a label twice")

    @classmethod
    def from_alignments(cls, aligned: Iterable[tuple[str, Sequence[tuple]]], min_count: int = 1) -> "LabelSet":
        """Labels from aligned words ``(word, [chunk per letter])``; a letter may take the chunks
        seen with it at least ``min_count`` times (the empty chunk always)."""
        pairs = Counter()
        for word, chunks in aligned:
            for c, chunk in zip(word, chunks):
                pairs[c, tuple(chunk)] += 1
        labels = [()] + sorted({chunk for (_, chunk), k in pairs.items() if k >= min_count and chunk != ()})
        index = {lab: k for k, lab in enumerate(labels)}
        ptr, allow = [0], []
        for c in ALPHABET:
            row = [0] + sorted(index[chunk] for (a, chunk), k in pairs.items()
                               if a == c and k >= min_count and chunk != ())
            allow += row
            ptr.append(len(allow))
        return cls(labels, np.array(ptr), np.array(allow))

    def encode(self, chunks: Sequence[tuple]) -> np.ndarray:
        """Label ids of a chunk sequence (``KeyError`` for an unknown chunk)."""
        return np.array([self.index[tuple(c)] for c in chunks], dtype=np.int64)

    def phones(self, y: Sequence[int]) -> tuple[str, ...]:
        """The phone sequence of a label sequence."""
        return tuple(p for k in y for p in self.labels[int(k)])


# --------------------------------------------------------------------------------------
# hashing and the numba kernels
# --------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _mix(z):
    """splitmix64's finaliser on a uint64."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True)
def _word_codes(letters, first, last):
    """``codes[i, t]``: template t's letter window around letter i, as one uint64."""
    n = letters.shape[0]
    n_t = first.shape[0]
    out = np.empty((n, n_t), dtype=np.uint64)
    for i in range(n):
        for t in range(n_t):
            c = np.uint64(0)
            for k in range(first[t], last[t] + 1):
                j = i + k
                if j < 0:
                    s = _BEGIN
                elif j >= n:
                    s = _END
                else:
                    s = letters[j]
                c = c * np.uint64(_BASE) + np.uint64(s)
            out[i, t] = c | (np.uint64(t + 1) << np.uint64(_TEMPLATE_SHIFT))
    return out


@njit(cache=True, nogil=True)
def _label_tables(n_labels, mask):
    """Per-label hash salts, bias feature indices and the (prev, next) transition indices;
    label ``n_labels`` is the word boundary."""
    salt = np.empty(n_labels, dtype=np.uint64)
    bias = np.empty(n_labels, dtype=np.int64)
    trans = np.empty((n_labels + 1, n_labels + 1), dtype=np.int64)
    for k in range(n_labels):
        salt[k] = _mix(np.uint64(k) + np.uint64(_LABEL_SALT))
        bias[k] = np.int64(_mix(np.uint64(_BIAS_CODE) ^ salt[k]) & mask)
    for p in range(n_labels + 1):
        code = np.uint64(_TRANS_CODE) | np.uint64(p)
        for k in range(n_labels + 1):
            s = _mix(np.uint64(k) + np.uint64(_LABEL_SALT))
            trans[p, k] = np.int64(_mix(code ^ s) & mask)
    return salt, bias, trans


@njit(cache=True, nogil=True)
def _trans_contexts(letters, trans_context):
    """Per letter, the letter context its label bigram is conjoined with (0: none; 1: the
    letter; 2: the letter and the one before it), as the high bits of a uint64 code."""
    n = letters.shape[0]
    out = np.zeros(n, dtype=np.uint64)
    for i in range(n):
        c = letters[i]
        if trans_context >= 2:
            c += _BASE * (letters[i - 1] if i > 0 else _BEGIN)
        out[i] = np.uint64(_TRANS_LETTER_CODE) | np.uint64(c)
    return out


@njit(cache=True, nogil=True)
def _tl_index(tl, prev, s, mask):
    return np.int64(_mix((tl | (np.uint64(prev) << np.uint64(16))) ^ s) & mask)


@njit(cache=True, nogil=True)
def _phi_into(out, codes, tl, trans_context, y, salt, bias, trans, mask):
    n = codes.shape[0]
    n_t = codes.shape[1]
    boundary = trans.shape[0] - 1
    prev = boundary
    for i in range(n):
        lab = y[i]
        s = salt[lab]
        for t in range(n_t):
            out[np.int64(_mix(codes[i, t] ^ s) & mask)] += 1.0
        out[bias[lab]] += 1.0
        out[trans[prev, lab]] += 1.0
        if trans_context > 0:
            out[_tl_index(tl[i], prev, s, mask)] += 1.0
        prev = lab
    out[trans[prev, boundary]] += 1.0


@njit(cache=True, nogil=True)
def _emission(codes, i, s, bias_index, w, mask):
    """``w`` summed over letter ``i``'s context features for the label of salt ``s`` and that
    label's bias feature (index ``bias_index``): the label's score at that letter."""
    e = w[bias_index]
    for t in range(codes.shape[1]):
        e += w[np.int64(_mix(codes[i, t] ^ s) & mask)]
    return e


@njit(cache=True, nogil=True)
def _lattice_width(letters, allow_ptr):
    """The most labels any letter of the word allows (the lattice's width)."""
    width = 1
    for i in range(letters.shape[0]):
        a = letters[i]
        if allow_ptr[a + 1] - allow_ptr[a] > width:
            width = allow_ptr[a + 1] - allow_ptr[a]
    return width


@njit(cache=True, nogil=True)
def _viterbi(codes, letters, tl, trans_context, w, allow_ptr, allow_lab, salt, bias, trans, mask, y_ref,
             eps_pos, primary, one_primary):
    """argmax over label sequences (label i allowed for letter i) of ``w . phi`` plus
    ``eps_pos`` per position whose label differs from ``y_ref`` (if ``eps_pos != 0``).

    With ``one_primary``, only sequences with exactly one primary-stressed phone count
    (``primary[label]``: the label's number of them): the state is (label, primary stress
    seen yet), so this is exact too; the objective is -inf if no such sequence exists.
    Returns (labels, best objective). Ties go to the lower allowed-label index."""
    n = codes.shape[0]
    boundary = trans.shape[0] - 1
    n_s = 2 if one_primary else 1
    width = _lattice_width(letters, allow_ptr)
    score = np.full((n, width, n_s), -np.inf)
    back = np.zeros((n, width, n_s), dtype=np.int64)
    pp0 = 0
    pn = 0
    for i in range(n):
        a = letters[i]
        p0 = allow_ptr[a]
        n_l = allow_ptr[a + 1] - p0
        if i > 0:
            pa = letters[i - 1]
            pp0 = allow_ptr[pa]
            pn = allow_ptr[pa + 1] - pp0
        for k in range(n_l):
            lab = allow_lab[p0 + k]
            step = primary[lab] if one_primary else 0
            if step >= n_s:
                continue
            s = salt[lab]
            e = _emission(codes, i, s, bias[lab], w, mask)
            if eps_pos != 0.0 and lab != y_ref[i]:
                e += eps_pos
            if i == 0:
                v = e + w[trans[boundary, lab]]
                if trans_context > 0:
                    v += w[_tl_index(tl[0], boundary, s, mask)]
                score[0, k, step] = v
                continue
            for sp in range(n_s - step):
                best = -np.inf
                arg = 0
                for j in range(pn):
                    if score[i - 1, j, sp] == -np.inf:
                        continue
                    pl = allow_lab[pp0 + j]
                    v = score[i - 1, j, sp] + w[trans[pl, lab]]
                    if trans_context > 0:
                        v += w[_tl_index(tl[i], pl, s, mask)]
                    if v > best:
                        best = v
                        arg = j
                if best > -np.inf:
                    score[i, k, sp + step] = e + best
                    back[i, k, sp + step] = arg
    a = letters[n - 1]
    p0 = allow_ptr[a]
    best = -np.inf
    arg = 0
    for k in range(allow_ptr[a + 1] - p0):
        if score[n - 1, k, n_s - 1] == -np.inf:
            continue
        v = score[n - 1, k, n_s - 1] + w[trans[allow_lab[p0 + k], boundary]]
        if v > best:
            best = v
            arg = k
    y = np.empty(n, dtype=np.int64)
    k = arg
    st = n_s - 1
    for i in range(n - 1, -1, -1):
        lab = allow_lab[allow_ptr[letters[i]] + k]
        y[i] = lab
        k_prev = back[i, k, st]
        if one_primary:
            st -= primary[lab]
        k = k_prev
    return y, best


@njit(cache=True, nogil=True)
def _push_top(top_v, top_j, top_r, v, j, r):
    """Insert ``v`` (with its state ``j`` and rank ``r``) into the descending list ``top_v`` of
    fixed length, dropping its last entry; False, changing nothing, when ``v`` is not above that
    last entry (ties keep the earlier entry first)."""
    K = top_v.shape[0]
    if v <= top_v[K - 1]:
        return False
    m = K - 1
    while m > 0 and top_v[m - 1] < v:
        top_v[m] = top_v[m - 1]
        top_j[m] = top_j[m - 1]
        top_r[m] = top_r[m - 1]
        m -= 1
    top_v[m] = v
    top_j[m] = j
    top_r[m] = r
    return True


@njit(cache=True, nogil=True)
def _viterbi_kbest(codes, letters, tl, trans_context, w, allow_ptr, allow_lab, salt, bias, trans, mask,
                   primary, one_primary, n_best):
    """The ``n_best`` highest-scoring label sequences of :func:`_viterbi`'s lattice (no
    augmentation), best first: list Viterbi, each state keeping its ``n_best`` best partial paths.
    Returns (labels ``(n_best, n)``, objectives ``(n_best,)``); rows past the number of
    sequences that exist have objective -inf. Ties keep the order :func:`_viterbi` breaks them in
    (the lower allowed-label index), so row 0 is its answer."""
    n = codes.shape[0]
    K = n_best
    boundary = trans.shape[0] - 1
    n_s = 2 if one_primary else 1
    width = _lattice_width(letters, allow_ptr)
    score = np.full((n, width, n_s, K), -np.inf)
    back_j = np.zeros((n, width, n_s, K), dtype=np.int64)
    back_r = np.zeros((n, width, n_s, K), dtype=np.int64)
    top_v = np.empty(K)
    top_j = np.empty(K, dtype=np.int64)
    top_r = np.empty(K, dtype=np.int64)
    pp0 = 0
    pn = 0
    for i in range(n):
        a = letters[i]
        p0 = allow_ptr[a]
        n_l = allow_ptr[a + 1] - p0
        if i > 0:
            pa = letters[i - 1]
            pp0 = allow_ptr[pa]
            pn = allow_ptr[pa + 1] - pp0
        for k in range(n_l):
            lab = allow_lab[p0 + k]
            step = primary[lab] if one_primary else 0
            if step >= n_s:
                continue
            s = salt[lab]
            e = _emission(codes, i, s, bias[lab], w, mask)
            if i == 0:
                v = e + w[trans[boundary, lab]]
                if trans_context > 0:
                    v += w[_tl_index(tl[0], boundary, s, mask)]
                score[0, k, step, 0] = v
                continue
            for sp in range(n_s - step):
                top_v[:] = -np.inf
                for j in range(pn):
                    if score[i - 1, j, sp, 0] == -np.inf:
                        continue
                    pl = allow_lab[pp0 + j]
                    edge = w[trans[pl, lab]]
                    if trans_context > 0:
                        edge += w[_tl_index(tl[i], pl, s, mask)]
                    for r in range(K):
                        v = score[i - 1, j, sp, r]
                        if v == -np.inf or not _push_top(top_v, top_j, top_r, v + edge, j, r):
                            break  # the lists are sorted: nothing further down gets in
                for m in range(K):
                    if top_v[m] == -np.inf:
                        break
                    score[i, k, sp + step, m] = e + top_v[m]
                    back_j[i, k, sp + step, m] = top_j[m]
                    back_r[i, k, sp + step, m] = top_r[m]
    a = letters[n - 1]
    p0 = allow_ptr[a]
    top_v[:] = -np.inf
    for k in range(allow_ptr[a + 1] - p0):
        end = w[trans[allow_lab[p0 + k], boundary]]
        for r in range(K):
            v = score[n - 1, k, n_s - 1, r]
            if v == -np.inf or not _push_top(top_v, top_j, top_r, v + end, k, r):
                break
    ys = np.zeros((K, n), dtype=np.int64)
    values = top_v.copy()
    for m in range(K):
        if values[m] == -np.inf:
            continue
        k = top_j[m]
        r = top_r[m]
        st = n_s - 1
        for i in range(n - 1, -1, -1):
            lab = allow_lab[allow_ptr[letters[i]] + k]
            ys[m, i] = lab
            k_prev = back_j[i, k, st, r]
            r = back_r[i, k, st, r]
            if one_primary:
                st -= primary[lab]
            k = k_prev
    return ys, values


# --------------------------------------------------------------------------------------
# the decoder (the structured task's inference; aligner.words.g2p_train.G2PTask adds the trainer interface)
# --------------------------------------------------------------------------------------


@dataclass
class G2PWord:
    """One input: the word, its letter ids and context codes ``(n_letters, n_templates)``."""

    word: str
    letters: np.ndarray
    codes: np.ndarray = field(repr=False)
    trans_codes: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.word)


class G2PDecoder:
    """Letters -> one phone-chunk label each: the feature map, exact Viterbi decoding and the cost
    of the linear-chain task (module docstring). :class:`aligner.words.g2p_train.G2PTask` is
    this plus :class:`~aligner.learn.task.StructuredTask` (kept apart so that predicting does
    not import the learning core and scikit-learn).

    ``labels``: a :class:`LabelSet`; ``bits``: log2 of the hashed feature dimension;
    ``context``: the letter window of :func:`context_templates`; ``trans_context``: the label
    bigram is also conjoined with the current letter (1) or the letter bigram ending there (2);
    0 for the plain bigram only.
    """

    def __init__(self, labels: LabelSet, bits: int = 18, context: int = 3, trans_context: int = 1):
        if not 8 <= bits <= 26:
            raise ValueError(f"bits must be 8..26, got {bits}")
        if trans_context not in (0, 1, 2):
            raise ValueError(f"trans_context must be 0, 1 or 2, got {trans_context}")
        self.trans_context = int(trans_context)
        self.labels = labels
        self.bits = int(bits)
        self.context = int(context)
        self.templates = context_templates(context)
        self._first = np.array([t[0] for t in self.templates], dtype=np.int64)
        self._last = np.array([t[1] for t in self.templates], dtype=np.int64)
        self.n_features = 1 << self.bits
        self._mask = np.uint64(self.n_features - 1)
        self._salt, self._bias, self._trans = _label_tables(len(labels.labels), self._mask)
        self._empty = np.zeros(0, dtype=np.int64)
        self._primary = np.array([sum(p.endswith("1") for p in lab) for lab in labels.labels], dtype=np.int64)

    # -- inputs -----------------------------------------------------------------------------
    def make_input(self, word: str) -> G2PWord:
        """The input of a word of :data:`ALPHABET` letters (``ValueError`` otherwise)."""
        if not word or any(c not in _LETTER_ID for c in word):
            raise ValueError(f"{word!r}: a G2P input needs letters a-z or apostrophes only")
        letters = np.array([_LETTER_ID[c] for c in word], dtype=np.int64)
        return G2PWord(word, letters, _word_codes(letters, self._first, self._last),
                       _trans_contexts(letters, self.trans_context))

    def encode(self, word: str, chunks: Sequence[tuple]) -> np.ndarray:
        """The label ids of an aligned word."""
        if len(chunks) != len(word):
            raise ValueError(f"{word!r}: {len(chunks)} chunks for {len(word)} letters")
        return self.labels.encode(chunks)

    def reachable(self, x: G2PWord, y: np.ndarray) -> bool:
        """Whether every label of ``y`` is allowed for its letter (else decode cannot return it)."""
        ptr, lab = self.labels.allow_ptr, self.labels.allow_lab
        return all(k in lab[ptr[a]:ptr[a + 1]] for a, k in zip(x.letters, y))

    # -- the four methods -----------------------------------------------------------------
    def phi(self, x: G2PWord, y) -> np.ndarray:
        out = np.zeros(self.n_features)
        _phi_into(out, x.codes, x.trans_codes, self.trans_context, np.asarray(y, dtype=np.int64),
                  self._salt, self._bias, self._trans, self._mask)
        return out

    def decode(self, x: G2PWord, w: np.ndarray) -> np.ndarray:
        return self._decode(x, w, self._empty, 0.0)[0]

    def decode_augmented(self, x: G2PWord, y, w: np.ndarray, eps: float) -> np.ndarray:
        return self._decode(x, w, np.asarray(y, dtype=np.int64), eps / len(x.letters))[0]

    def decode_one_primary(self, x: G2PWord, w: np.ndarray) -> np.ndarray:
        """The best output with exactly one primary-stressed vowel (99 % of CMUdict words have
        one); the plain decode if no allowed output has one."""
        y, value = self._decode(x, w, self._empty, 0.0, one_primary=True)
        return y if value > -np.inf else self.decode(x, w)

    def decode_n_best(self, x: G2PWord, w: np.ndarray, n: int, one_primary: bool = False) -> tuple:
        """The ``n`` best labellings and their objectives ``w . phi``, best first (fewer where
        fewer exist; with ``one_primary``, only those with exactly one primary stress)."""
        ys, values = _viterbi_kbest(x.codes, x.letters, x.trans_codes, self.trans_context,
                                    np.asarray(w, dtype=np.float64), self.labels.allow_ptr, self.labels.allow_lab,
                                    self._salt, self._bias, self._trans, self._mask, self._primary,
                                    bool(one_primary), max(1, int(n)))
        keep = values > -np.inf
        return ys[keep], values[keep]

    def _decode(self, x, w, y_ref, eps_pos, one_primary=False):
        return _viterbi(x.codes, x.letters, x.trans_codes, self.trans_context,
                        np.asarray(w, dtype=np.float64), self.labels.allow_ptr,
                        self.labels.allow_lab, self._salt, self._bias, self._trans, self._mask,
                        y_ref, float(eps_pos), self._primary, bool(one_primary))

    def cost(self, y, y_pred) -> float:
        y = np.asarray(y)
        y_pred = np.asarray(y_pred)
        if y.shape != y_pred.shape:
            return 1.0
        return float(np.mean(y != y_pred)) if y.size else 0.0


# --------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------


class G2PModel:
    """A trained G2P: the task's tables and the weights. ``predict(word)`` -> ARPAbet phones."""

    def __init__(self, labels: LabelSet, weights: np.ndarray, bits: int = 18, context: int = 3,
                 trans_context: int = 1, one_primary: bool = True, training: Optional[dict] = None):
        self.decoder = G2PDecoder(labels, bits=bits, context=context, trans_context=trans_context)
        #: predict the best pronunciation with exactly one primary stress (G2PDecoder.decode_one_primary)
        self.one_primary = bool(one_primary)
        # float32 precision, as saved: a loaded model predicts exactly as the one saved
        w = np.asarray(weights, dtype=np.float64).astype(np.float32).astype(np.float64)
        if w.shape != (self.decoder.n_features,):
            raise ValueError(f"weights have shape {w.shape}, need ({self.decoder.n_features},)")
        if not np.all(np.isfinite(w)):
            raise ValueError("weights are not all finite")
        self.weights = w
        self.training = dict(training or {})

    @property
    def labels(self) -> LabelSet:
        return self.decoder.labels

    @staticmethod
    def clean(word: str) -> str:
        """The letters of ``word`` the model reads: lower-cased (curly apostrophes made plain),
        accents removed (``café`` -> ``cafe``), other characters outside :data:`ALPHABET` dropped."""
        from aligner.words.dictionary import fold_word

        word = fold_word(word)
        if not word.isascii():
            word = unicodedata.normalize("NFKD", word)
        return "".join(c for c in word if c in _LETTER_ID)

    def predict_labels(self, word: str) -> np.ndarray:
        """The label ids of a cleaned, non-empty word (with :attr:`one_primary`, the best
        labelling with exactly one primary stress)."""
        x = self.decoder.make_input(word)
        if self.one_primary:
            return self.decoder.decode_one_primary(x, self.weights)
        return self.decoder.decode(x, self.weights)

    def predict(self, word: str, stress: bool = True) -> tuple[str, ...]:
        """The pronunciation of ``word`` as ARPAbet phones (with stress digits unless
        ``stress=False``); ``()`` if the word has no letters."""
        letters = self.clean(word)
        if not letters:
            return ()
        phones = self.labels.phones(self.predict_labels(letters))
        return phones if stress else strip_stress(phones)

    def predict_n_best(self, word: str, n: int = 3, stress: bool = True) -> list[tuple[tuple[str, ...], float]]:
        """Up to ``n`` distinct pronunciations of ``word`` with their score margins below the best
        (``0.0`` for the first, which is :meth:`predict`'s; the weights' units, >= 0), best first:
        the n-best labellings (with :attr:`one_primary`, among those with one primary stress),
        labellings that spell the same phones, or phones that differ only in stress, counted once.
        ``[]`` if the word has no letters."""
        letters = self.clean(word)
        if not letters:
            return []
        x = self.decoder.make_input(letters)
        # several labellings can spell the same phones (a letter's chunk or its neighbour's): ask for more
        ys, values = self.decoder.decode_n_best(x, self.weights, 4 * n, self.one_primary)
        if not len(ys):
            ys, values = self.decoder.decode_n_best(x, self.weights, 4 * n)
        out, seen = [], set()
        for y, value in zip(ys, values):
            phones = self.labels.phones(y)
            plain = strip_stress(phones)
            if plain in seen:
                continue
            seen.add(plain)
            out.append((phones if stress else plain, float(values[0] - value)))
            if len(out) == n:
                break
        return out

    def predict_many(self, words: Iterable[str], stress: bool = True) -> list[tuple[str, ...]]:
        return [self.predict(w, stress) for w in words]

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory) -> Path:
        """Write a ``g2p`` model bundle (weights as float32) to ``directory``."""
        from aligner.io.bundles import save_bundle

        params = {"g2p": {
            "format": G2P_FORMAT,
            "alphabet": ALPHABET,
            "bits": self.decoder.bits,
            "context": self.decoder.context,
            "trans_context": self.decoder.trans_context,
            "one_primary": self.one_primary,
            "labels": [" ".join(lab) for lab in self.labels.labels],
        }}
        arrays = {"g2p": {"weights": self.weights.astype(np.float32),
                          "allow_ptr": self.labels.allow_ptr.astype(np.int32),
                          "allow_lab": self.labels.allow_lab.astype(np.int32)}}
        return save_bundle(directory, G2P_KIND, arrays, params, self.training)

    @classmethod
    def load(cls, directory) -> "G2PModel":
        """Read and verify a bundle; a one-line :class:`ModelError` naming the directory if unusable."""
        from aligner.io.bundles import load_bundle

        arrays, params, manifest = load_bundle(directory, G2P_KIND)
        try:
            p = params["g2p"]
            a = arrays["g2p"]
            if int(p["format"]) > G2P_FORMAT:
                raise ValueError(f"g2p model format {p['format']} is newer than this aligner reads")
            if p["alphabet"] != ALPHABET:
                raise ValueError("the model's alphabet differs from this aligner's")
            bits, context, trans_context = p["bits"], p["context"], p["trans_context"]
            if not all(type(v) is int for v in (bits, context, trans_context)):
                raise ValueError("bits, context and trans_context must be integers")
            if type(p["one_primary"]) is not bool:
                raise ValueError("one_primary must be true or false")
            if not isinstance(p["labels"], list) or not all(isinstance(s, str) for s in p["labels"]):
                raise ValueError("labels must be a list of strings")
            labels = [tuple(s.split()) for s in p["labels"]]
            arr = {}
            for key, kind in (("weights", "f"), ("allow_ptr", "i"), ("allow_lab", "i")):
                v = a[key]
                if v.dtype.kind != kind or v.ndim != 1:
                    raise ValueError(f"array {key} has dtype {v.dtype} and {v.ndim} dims")
                arr[key] = v
            label_set = LabelSet(labels, arr["allow_ptr"], arr["allow_lab"])
            return cls(label_set, arr["weights"], bits=bits, context=context, trans_context=trans_context,
                       one_primary=p["one_primary"], training=manifest.get("training", {}))
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelError(f"{directory}: not a usable G2P model ({exc})") from None


# --------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance between two sequences (unit costs)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def score_predictions(predictions: dict, references: dict, stress: bool = False) -> dict:
    """Word and phone error rates of ``{word: phones}`` against ``{word: [phones, ...]}``.

    A word is wrong if its prediction equals none of its references; its phone errors are
    the edit distance to the closest reference, and PER divides their sum by the summed
    lengths of those closest references. ``stress=False`` strips stress digits first.
    """
    norm = (lambda p: tuple(p)) if stress else strip_stress
    wrong = edits = length = 0
    for word, refs in references.items():
        hyp = norm(predictions[word])
        refs = [norm(r) for r in refs]
        wrong += hyp not in refs
        e, n = min((edit_distance(hyp, r), len(r)) for r in refs)
        edits += e
        length += n
    n = len(references)
    return {"n": n, "wer": wrong / n if n else float("nan"), "per": edits / length if length else float("nan")}


@functools.lru_cache(maxsize=1)
def default_g2p() -> G2PModel:
    """The shipped G2P model (``models/g2p-cmudict``: trained on the CMU Pronouncing Dictionary
    minus 2000 held-out words), loaded once per process."""
    from aligner.io.bundles import default_model_dir

    return G2PModel.load(default_model_dir(G2P_KIND))
