"""Alignment from words: pronunciations -> a pronunciation graph -> words and phones tiers.

The decoder (:mod:`aligner.alignment.decoding.graph_task`) chooses one pronunciation per word (the
dictionary's variants, or a G2P guess, and with ``dialect="auto"`` their r-less forms too:
:func:`with_dialect`; they are whole pronunciations, not expansions, so the phones tier names
the one chosen) and whether a pause lies between two words and at either end of the utterance; the 7 weights are the alignment model's own. At inference the graph DP
runs within a band around a first pass (:mod:`aligner.alignment.decoding.graph_band`): the exact DP's
path whenever that path lies inside the band. Stops and affricates
are decoded as TIMIT closure + release (as for ARPAbet phone transcripts,
:mod:`aligner.alignment.decoding.stop_closures`) and merged back into the dictionary's symbol; the boundary
refiner moves every decoded boundary off the 10 ms grid as for phone transcripts.

Pauses between words use the duration statistics of TIMIT's ``pau``. The silence at either edge
lasts however long the recording was cut to leave, so it is of any length from 1 frame to
``h#``'s longest, or none (:attr:`~aligner.alignment.decoding.graph.Segment.flat_log_density`:
one log duration density for every length, :data:`EDGE_LOG_DENSITY` before the first word
and after the last), and it takes the whole silence where a word
begins (ends) with a stop closure another pronunciation of the word leaves out
(:func:`~aligner.alignment.decoding.graph.build_word_graph`). The last word's last phone is
lengthened, as phones before a pause are (:func:`final_lengthening`), and so is a word's last
phone on the path into a pause between words (:data:`PRE_PAUSE_LENGTHENING`). Where a word ends
in the consonant (or a stop closure) the next begins with, the two may be one phone
(:data:`MERGED_JUNCTION_BONUS`): it belongs to the first word, and the second starts after it.
Paths of different lengths are compared through a constant divisor (the fewest phones on any
path) plus :data:`PHONE_BONUS` per phone, which offsets the negative per-phone score a phone adds
(``docs/results.md`` has the measurement behind the value).

Times are in seconds; frames are the 10 ms frames of :mod:`aligner.frames`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from aligner.alignment.decoding.graph import Segment, _absorbed, build_word_graph
from aligner.alignment.decoding.graph_band import WORD_BAND_FRAMES, decode_banded
from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input
from aligner.alignment.decoding.stop_closures import ExpandedTranscript, expand_stop_closures
from aligner.alignment.decoding.task import FINAL_LENGTHENING, FINAL_LENGTHENING_BY_BROAD_CLASS, final_lengthening_of
from aligner.frames import FRAME_SHIFT, SAMPLE_RATE, phone_start_times
from aligner.io.textgrids import Interval
from aligner.phones.sets import CLASSES39, TIMIT39_INVENTORY, TIMIT61_CLOSURES, VOWEL_CLASSES, get_phone_set
from aligner.words.dialects import DEFAULT_DIALECT, DIALECTS, DialectForm, begins_with_vowel, dialect_pronunciations
from aligner.words.oov import G2PVariant
from aligner.words.weak_forms import WeakForm, with_weak_forms

#: per-phone bonus of the graph decoder (units of the per-phone score ``w . features``)
PHONE_BONUS = 2.0
#: duration-statistics symbols of a pause between words and of the silence at either end
PAUSE_SYMBOL, EDGE_SYMBOL = "pau", "h#"
#: log duration density of the silence before the first word and after the last, for any
#: length (frames): minus :data:`PHONE_BONUS`, so that (with the duration feature's weight 1) an
#: edge silence adds nothing to a path's score but its classifier agreement. The trailing one
#: had the peak of ``h#``'s Gaussian (about -3.3) until the last phone was lengthened
#: (:data:`FINAL_LENGTHENING`): with -2 a word's fading end had been taken for silence.
#: ``python -m benchmarks.words.eval_tight_edges`` measures both edges (-1, -1.5 and -2 were
#: tried after the lengthening)
EDGE_LOG_DENSITY = -2.0
#: for a model without statistics of phones before a pause (the English model), a word's last
#: phone before a pause between words is lengthened as the utterance's last is
#: (:data:`FINAL_LENGTHENING`): in the word graph its last phone is two nodes, the lengthened one
#: leading into the pause. On the speaker folds, first 60 utterances word MAE 14.6 -> 14.5 ms
#: (factor 1.6 / 2: 14.7 / 14.9), all 120 16.8 -> 16.2 ms. The universal model's views, with their
#: own before-pause statistics there, aligned the sample's words through ``--language en-us``
#: 0.2 ms worse (17.7 -> 17.9 ms), so they keep one node
PRE_PAUSE_LENGTHENING = True
FRAME_SECONDS = FRAME_SHIFT / SAMPLE_RATE
#: added to a path's score (units of :data:`PHONE_BONUS`) for each word it aligns with a
#: dialect rule's pronunciation (:class:`~aligner.words.dialects.DialectForm`) where the
#: dictionary's own are offered too (``dialect="auto"``): the dictionary's form is the likelier
DIALECT_FORM_BONUS = -1.0
#: the same for each word aligned with a function word's weak form (:mod:`aligner.words.weak_forms`),
#: offered beside the dictionary's pronunciations of English words
WEAK_FORM_BONUS = -1.0
#: the same for each unknown word aligned with a pronunciation of the G2P's n-best list other than
#: its best (:class:`~aligner.words.oov.G2PVariant`)
G2P_VARIANT_BONUS = -1.0
#: the same for each word aligned with a connected-speech variant of :data:`VARIANT_RULES` (any
#: expansion of a pronunciation but its first, the stops with closure and release): the full form
#: is the likelier. On the speaker folds' validation utterances (the first 60) the rules of
#: :data:`DEFAULT_RULES` gave word MAE 14.53 -> 14.10 ms with the word-initial rule alone at -1 (was
#: 0), 13.97 ms with the unreleased rule too (0 / -0.5 / -1.5 / -2: 14.14 / 14.09 / 14.06 / 14.01)
RULE_VARIANT_BONUS = -1.0
#: the same for each word whose first phone is said once with the word before's identical last
#: phone, a consonant that can be held (:data:`MERGED_JUNCTION_CLASSES`; "this staff", "some more":
#: :attr:`~aligner.alignment.decoding.graph.Segment.merges_first`): a connected-speech variant
#: (:data:`RULE_VARIANT_BONUS`) that says one phone fewer, so it also gets back the one phone's
#: :data:`PHONE_BONUS`. The merged phone belongs to the word before, as TIMIT's annotators label
#: it. On the validation utterances (word MAE with the classes below): bonus 0 / 0.5 / 1 / 1.5 /
#: 2: 14.07 / 13.62 / 13.67 / 13.68 / 14.03 ms with every class merged, -1 merged none. None: no
#: merged junctions
MERGED_JUNCTION_BONUS: float | None = RULE_VARIANT_BONUS + PHONE_BONUS
#: broad classes of the phones a junction may merge: held consonants, and the silence of two stops'
#: closures said as one (the first without its release, the unreleased rule; "that day"). Not
#: vowels (two vowels across a word boundary are mostly two syllables, "holiday aprons"), nor a
#: stop's release. Chosen on the speaker folds' validation utterances (the first 60), word MAE /
#: F1@20: none 13.97 ms / 78.2 %; fricatives and nasals 13.58 / 79.0; with glides 13.60 / 79.4;
#: with closures too 13.22 / 80.2; with vowels too (no closures) 13.86 / 79.4
MERGED_JUNCTION_CLASSES = ("fricative", "nasal", "glide", "silence")


@dataclass
class WordAlignment:
    """Words and phones of one utterance (times in seconds, pauses not listed).

    ``words``: one :class:`Interval` per word, labelled with its written form; ``phones``: the
    phones of every word as the dictionary writes them (ARPAbet with stress);
    ``pronunciations``: the pronunciation chosen for each word.
    """

    words: list = field(default_factory=list)
    phones: list = field(default_factory=list)
    pronunciations: list = field(default_factory=list)
    #: with a review (:meth:`AlignmentModel.review`): each word's and phone's start confidence
    word_confidences: list | None = None
    phone_confidences: list | None = None
    #: with a review: the probability that the transcript belongs to the audio (the lowest over
    #: the chunks of a long recording)
    transcript_match: float | None = None

    def shifted(self, offset_s: float) -> "WordAlignment":
        """The same alignment ``offset_s`` seconds later (a segment placed in its recording)."""
        def move(ivs):
            return [Interval(s + offset_s, e + offset_s, lab) for s, e, lab in ivs]
        return WordAlignment(move(self.words), move(self.phones), list(self.pronunciations),
                             self.word_confidences, self.phone_confidences, self.transcript_match)

    def mapped(self, times_of) -> "WordAlignment":
        """The same alignment with its times (seconds) moved by ``times_of`` (a monotone map of an
        array of times to an array: a recording whose long pauses were cut, placed back in it)."""
        def move(ivs):
            starts = np.asarray(times_of([iv[0] for iv in ivs]), np.float64).tolist()
            ends = np.asarray(times_of([iv[1] for iv in ivs]), np.float64).tolist()
            return [Interval(s, e, iv[2]) for iv, s, e in zip(ivs, starts, ends)]
        return WordAlignment(move(self.words), move(self.phones), list(self.pronunciations),
                             self.word_confidences, self.phone_confidences, self.transcript_match)


#: connected-speech variants the decoder may choose besides each dictionary pronunciation
#: (TIMIT's narrow transcriptions show all three): ``flap``: T or D between a vowel and an
#: unstressed vowel as a flap (``dx``); ``unreleased``: a word-final stop or affricate as its
#: closure alone; ``reduced``: an unstressed AH or IH as TIMIT's reduced vowel (``ax``/``ix``);
#: ``no_initial_closure``: a word-initial stop without its closure (after a pause the closure is
#: silence, and annotators start the word at the release); ``glottal_onset``: a word that begins with a
#: vowel begins with a glottal stop (TIMIT's ``q``, scored as silence, with its own durations), part
#: of the word as TIMIT's annotators label it.
VARIANT_RULES = ("flap", "unreleased", "reduced", "no_initial_closure", "glottal_onset")
#: a word's first phone of these broad classes (of a word of two phones or more) has its mean
#: duration and deviation multiplied by this, for a model without statistics of phones before a
#: pause (the English model): word-initial consonants are longer (initial strengthening). In the
#: TIMIT sample's hand labels (phones not before a pause, against their symbol's mean) a
#: word-initial stop release lasts 1.16 times as long, a glide 1.10, an affricate 1.12 (the
#: factors here); fricatives 1.03, nasals 0.95, vowels 1.01 (left at 1). What they change on the
#: speaker folds, measured across halves of the speakers: CHANGELOG 0.20.0
WORD_INITIAL_LENGTHENING = {"stop": 1.16, "glide": 1.10, "affricate": 1.12}
#: the rules used by default (chosen on validation speakers: docs/results.md; the word-final
#: stop without its release since 0.14.0, with :data:`RULE_VARIANT_BONUS`; the glottal onset since
#: 0.19.0, with :data:`GLOTTAL_ONSET_BONUS`)
DEFAULT_RULES = ("no_initial_closure", "unreleased", "glottal_onset")
#: added (beside :data:`RULE_VARIANT_BONUS`) for each word aligned with the ``glottal_onset`` rule's
#: form. Where a word begins with a vowel the decoder had put a pause before it (TIMIT's speakers
#: often start such a word with a glottal stop or creak, which the classifier scores as silence and
#: the annotators give to the word). On the speaker folds' validation utterances (the first 60),
#: word MAE without the rule 13.25 ms; with it, this bonus -2 / -1 / -0.5 / 0 / 0.5 / 1: 13.22 /
#: 13.22 / 13.15 / 13.19 / 13.26 / 13.28 ms
GLOTTAL_ONSET_BONUS = -0.5
#: the internal phone a ``glottal_onset`` variant begins with (TIMIT's glottal stop)
GLOTTAL_STOP = "q"
_VOWEL_CLASS_INDICES = frozenset(CLASSES39.index(c) for c in VOWEL_CLASSES)


def words_phone_set(model):
    """The phone set pronunciations for ``model`` are written in: ARPAbet for the 39-class
    models, a model's own phones otherwise."""
    return model.phone_set if model.phone_set is not None else get_phone_set("arpabet")


def _expansions(phones: Sequence[str], arpabet, rules: Sequence[str]) -> list:
    """The internal phone sequences of one pronunciation: stops split into closure + release,
    then each rule of ``rules`` applied on its own (one more sequence per rule that changes it).
    A model's own phone set (``arpabet`` not of the 39 classes) has no TIMIT closures and no
    English rules: the pronunciation as written."""
    if arpabet.inventory is not TIMIT39_INVENTORY:
        n = len(phones)
        return [ExpandedTranscript(list(phones), arpabet.class_indices(phones), np.arange(n, dtype=np.int64), n)]
    base = expand_stop_closures(list(phones), arpabet)
    out = [base]
    syms, cls, own = list(base.symbols), list(base.classes), list(base.owner)

    def add(s, c, o):
        if s != list(base.symbols) or c != list(base.classes):
            out.append(ExpandedTranscript(s, np.array(c, np.int64), np.array(o, np.int64), base.n_output))

    up = [p.upper() for p in phones]
    if "flap" in rules:
        s, c, o = list(syms), list(cls), list(own)
        changed, k = False, 0
        while k < len(s):
            i = o[k]
            if (s[k] in ("tcl", "dcl") and k + 2 < len(s) and o[k + 1] == i and up[i] in ("T", "D")
                    and k > 0 and c[k - 1] in _VOWEL_CLASS_INDICES and c[k + 2] in _VOWEL_CLASS_INDICES
                    and s[k + 2].endswith("0")):
                s[k:k + 2], c[k:k + 2], o[k:k + 2] = ["dx"], [CLASSES39.index("dx")], [i]
                changed = True
            k += 1
        if changed:
            add(s, c, o)
    if "unreleased" in rules and len(syms) >= 2 and syms[-2] in TIMIT61_CLOSURES and own[-2] == own[-1]:
        add(syms[:-1], cls[:-1], own[:-1])
    if "no_initial_closure" in rules and len(syms) >= 2 and syms[0] in TIMIT61_CLOSURES and own[0] == own[1]:
        add(syms[1:], cls[1:], own[1:])
    if "glottal_onset" in rules and cls and cls[0] in _VOWEL_CLASS_INDICES:
        add([GLOTTAL_STOP] + syms, [CLASSES39.index("sil")] + cls, [own[0]] + own)
    if "reduced" in rules:
        s, c = list(syms), list(cls)
        for k, sym in enumerate(s):
            if sym.upper() in ("AH0", "IH0"):
                s[k], c[k] = ("ax", CLASSES39.index("ah")) if sym.upper() == "AH0" else ("ix", CLASSES39.index("ih"))
        add(s, c, list(own))
    return out


def word_initial_factors(model, expanded) -> np.ndarray:
    """(len(expanded.symbols),) the factor each internal phone of one expansion of a word has its
    duration statistics multiplied by (:data:`WORD_INITIAL_LENGTHENING`): a phone of the word's
    first output phone, of a word of two or more, for a model without statistics of phones before
    a pause; 1 elsewhere."""
    f = np.ones(len(expanded.symbols))
    if WORD_INITIAL_LENGTHENING and expanded.n_output > 1 and not len(model.durations.final_mean):
        for k, (c, o) in enumerate(zip(expanded.classes, expanded.owner)):
            if o == 0:
                f[k] = WORD_INITIAL_LENGTHENING.get(model.inventory.broad[int(c)], 1.0)
    return f


def _alternative(model, expanded) -> Segment:
    """One expansion of a pronunciation as a graph segment, with the statistics of phones
    within an utterance (the last word's are lengthened by :func:`_lengthened`)."""
    mean, std, mx = model.durations.for_phones(expanded.classes, expanded.symbols, ends_utterance=False)
    f = word_initial_factors(model, expanded)
    if np.any(f != 1.0):
        mean, std, mx = mean * f, std * f, np.ceil(mx * f).astype(np.int64)
    return Segment.make(expanded.classes, mean, std, mx, labels=expanded.symbols)


#: pronunciations whose graph segments are kept per model (a corpus repeats its words)
SEGMENT_CACHE_SIZE = 50_000


def _pronunciation_segments(model, phones: tuple, rules: tuple, arpabet) -> list:
    """``[(expansion, Segment), ...]`` of one pronunciation (:func:`_expansions` with the
    model's duration statistics), cached on the model's duration table."""
    cache = _segment_cache(model)
    key = (phones, rules)
    out = cache.get(key)
    if out is None:
        out = cache[key] = [(exp, _alternative(model, exp)) for exp in _expansions(phones, arpabet, rules)]
    return out


def _segment_cache(model) -> dict:
    """The graph segments built from ``model``'s duration table (emptied when the table's
    arrays are replaced or it holds :data:`SEGMENT_CACHE_SIZE` entries)."""
    table = model.durations
    cached = table.__dict__.get("_word_segments")
    if cached is None or cached[0] is not table.mean or len(cached[1]) > SEGMENT_CACHE_SIZE:
        cached = (table.mean, {})
        table.__dict__["_word_segments"] = cached
    return cached[1]


def _pause(model, symbol: str, flat_log_density: float | None = None) -> Segment:
    """The one-phone segment of a pause with the duration statistics of ``symbol`` (frames;
    ``flat_log_density``: of any length from 1 frame to the longest, each with this log density)."""
    cache = _segment_cache(model)
    key = ("pause", symbol, flat_log_density)
    seg = cache.get(key)
    if seg is None:
        sil = model.inventory.silence_index
        mean, std, mx = model.durations.for_phones(np.array([sil]), [symbol])
        seg = cache[key] = Segment.make([sil], mean, std, mx, labels=[symbol], flat_log_density=flat_log_density)
    return seg


def final_lengthening(model, phone_class: int) -> float:
    """The factor a phone of ``phone_class`` (an index into ``model``'s inventory) is lengthened
    by before a pause (:func:`~aligner.alignment.decoding.task.final_lengthening_of`)."""
    return final_lengthening_of(model.inventory, phone_class)


def _lengthened(model, seg: Segment) -> Segment:
    """``seg`` as the utterance's last word: its last phone with the statistics of a phone
    before a pause where ``model``'s durations hold them (the universal model's views), else
    lengthened by :func:`final_lengthening` (mean, deviation and longest length, frames)."""
    if not len(seg):
        return seg
    cache = _segment_cache(model)
    key = ("last word", seg)
    out = cache.get(key)
    if out is None:
        if len(model.durations.final_mean):
            mean, std, mx = model.durations.for_phones(np.asarray(seg.classes, np.int64), seg.labels)
            last = (float(mean[-1]), float(std[-1]), int(mx[-1]))
        else:
            f = final_lengthening(model, seg.classes[-1])
            last = (seg.mean[-1] * f, seg.std[-1] * f, int(math.ceil(seg.max_frames[-1] * f)))
        out = cache[key] = dataclasses.replace(seg, mean=seg.mean[:-1] + last[:1], std=seg.std[:-1] + last[1:2],
                                               max_frames=seg.max_frames[:-1] + last[2:])
    return out


#: words kept from each chunk when a long recording is aligned in chunks
CHUNK_WORDS = 20
#: words decoded beyond each end of a chunk (and searched for a join)
CHUNK_OVERLAP_WORDS = 6


def align_words_scored(model, frames: np.ndarray, scores: np.ndarray, labels: Sequence[str],
                       pronunciations: Sequence[Sequence[Sequence[str]]], duration_s: float,
                       name: str = "<utterance>", phone_bonus: float = PHONE_BONUS,
                       rules: Sequence[str] = DEFAULT_RULES, pause_bonus: float = 0.0,
                       review: bool = False, dialect: str = DEFAULT_DIALECT, weak_forms: bool = True) -> WordAlignment:
    """Align W words to an utterance's MFCC frames (T, 42) and classifier scores (T, 39).

    ``labels``: W word labels for the words tier; ``pronunciations``: for each word, its
    alternatives, each a sequence of ARPAbet phones (stress digits allowed). Raises
    :class:`~aligner.errors.AlignmentError` naming ``name`` when no path fits the frames.
    ``review``: also the confidences and transcript-match probability of the model's
    confidence model (:meth:`~aligner.alignment.model.AlignmentModel.review`), if it has one.
    ``dialect`` (:data:`~aligner.words.dialects.DIALECTS`): ``rhotic`` aligns the pronunciations
    as given; ``non-rhotic`` their r-less forms, ``auto`` both, the decoder choosing per word
    (:func:`with_dialect`). ``weak_forms``: English words (not a language's phones through the
    English model) also get their function words' weak forms (:mod:`aligner.words.weak_forms`).

    A recording whose exact DP would be large
    (:func:`~aligner.alignment.decoding.long_recordings.needs_long_path`, judged on the first
    pronunciations) is aligned in chunks of :data:`CHUNK_WORDS` words placed by the linear
    first pass of :mod:`aligner.alignment.decoding.long_recordings`, each chunk decoded exactly over
    its frames with :data:`CHUNK_OVERLAP_WORDS` more words on either side, and neighbouring
    chunks joined at a word both start at the same time: time and memory linear in T.
    """
    from aligner.alignment.decoding.long_recordings import first_pass_starts, needs_long_path
    from aligner.alignment.decoding.task import check_fits, dp_cells

    arpabet = words_phone_set(model)
    pronunciations = with_dialect(model, pronunciations, dialect, labels if weak_forms else None)
    # the first pronunciations as the dictionary writes them (the first expansion of each)
    canonical = [_pronunciation_segments(model, tuple(alternatives[0]), tuple(rules), arpabet)[0][1]
                 for alternatives in pronunciations]
    max_frames = np.concatenate([seg.max_frames for seg in canonical]) if canonical else np.zeros(0, np.int64)
    T = len(frames)
    if len(labels) < 2 or not needs_long_path(dp_cells(T, max_frames, model.min_frames)):
        return _align_words_span(model, frames, scores, labels, pronunciations, duration_s, name,
                                 phone_bonus, rules, pause_bonus, review)
    classes = np.concatenate([seg.classes for seg in canonical])
    mean = np.concatenate([seg.mean for seg in canonical])
    check_fits(T, len(classes), max_frames, model.min_frames, name)
    if getattr(model, "pauses_unpaced", False):
        rough, first_phone = _first_pass_with_pauses(model, scores, canonical, name)
    else:
        rough = first_pass_starts(scores, classes, mean, name=name)
        first_phone = np.cumsum([0] + [len(seg) for seg in canonical[:-1]])
    edges = np.append(rough[first_phone], T)

    def decode_chunk(w_lo, w_hi):
        f_lo, f_hi = int(edges[w_lo]), int(edges[w_hi])
        span_s = duration_s - f_lo * FRAME_SECONDS if w_hi == len(labels) else (f_hi - f_lo) * FRAME_SECONDS
        part = _align_words_span(model, frames[f_lo:f_hi], scores[f_lo:f_hi], labels[w_lo:w_hi],
                                 pronunciations[w_lo:w_hi], span_s, name, phone_bonus, rules, pause_bonus, review)
        if part.transcript_match is not None:
            matches.append(part.transcript_match)
        return _per_word(part.shifted(f_lo * FRAME_SECONDS))

    matches: list = []
    out = _join_chunks(decode_chunk, len(labels), CHUNK_WORDS, CHUNK_OVERLAP_WORDS)
    out.transcript_match = model.recording_match(matches) if matches else None
    return out


def with_dialect(model, pronunciations: Sequence[Sequence[Sequence[str]]], dialect: str = DEFAULT_DIALECT,
                 labels: Sequence[str] | None = None) -> list:
    """Each word's pronunciation alternatives (ARPAbet) for ``dialect``
    (:func:`aligner.words.dialects.dialect_pronunciations`; the linking r of ``non-rhotic``
    where the next word may begin with a vowel), with the weak forms of the function words among
    the word ``labels`` when given (:func:`aligner.words.weak_forms.with_weak_forms`). A model's
    own phone set (not the 39 classes) has no English rules: its pronunciations as given (an
    unknown ``dialect`` still raises ``ValueError``)."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")
    if words_phone_set(model).inventory is not TIMIT39_INVENTORY:
        return [list(alternatives) for alternatives in pronunciations]
    if labels is not None:
        pronunciations = with_weak_forms(labels, pronunciations)
    if dialect == "rhotic":
        return [list(alternatives) for alternatives in pronunciations]
    W = len(pronunciations)
    return [dialect_pronunciations(alternatives, dialect, i + 1 < W and begins_with_vowel(pronunciations[i + 1]))
            for i, alternatives in enumerate(pronunciations)]


def _per_word(result: WordAlignment) -> list:
    """``[(word interval, [phone intervals], pronunciation, [phone confidences] or None), ...]``."""
    out, k = [], 0
    for word, pron in zip(result.words, result.pronunciations):
        conf = None if result.phone_confidences is None else result.phone_confidences[k:k + len(pron)]
        out.append((word, result.phones[k:k + len(pron)], pron, conf))
        k += len(pron)
    return out


def _join_chunks(decode_chunk, n_words: int, size: int, overlap: int) -> WordAlignment:
    """Decode overlapping chunks of words (``decode_chunk(w_lo, w_hi)`` -> :func:`_per_word`
    entries) and join neighbours at a word of the overlap that both start at the same time,
    nearest the nominal cut; else at the word nearest the cut that the later chunk starts no
    earlier than the earlier chunk ends the word before; else at the cut, the earlier word's
    end moved to the later word's start. Chunks that disagree by more than a word (a first
    pass misled by noise) can still leave a phone starting before its predecessor ends: every
    such phone starts where its predecessor ends instead, lasting at least a frame
    (:func:`_in_order`)."""
    from aligner.alignment.decoding.long_recordings import join_chunks

    entries = join_chunks(n_words, size, overlap, decode_chunk,
                          lambda a, b: abs(a[0].start_s - b[0].start_s) < 1e-9,
                          lambda before, b: before[0].end_s <= b[0].start_s + 1e-9)
    out = WordAlignment()
    reviewed = all(e[3] is not None for e in entries)
    if reviewed:
        out.word_confidences, out.phone_confidences = [], []
    for i, (word, phones, pron, conf) in enumerate(entries):
        if i + 1 < n_words and entries[i + 1][0].start_s < word.end_s:  # a join without agreement
            cut = entries[i + 1][0].start_s
            if phones[-1].start_s < cut:
                word = Interval(word.start_s, cut, word.label)
                phones = phones[:-1] + [Interval(phones[-1].start_s, cut, phones[-1].label)]
            else:  # the later word gives way instead
                nxt_word, nxt_phones, nxt_pron, nxt_conf = entries[i + 1]
                first = Interval(word.end_s, nxt_phones[0].end_s, nxt_phones[0].label)
                entries[i + 1] = (Interval(word.end_s, nxt_word.end_s, nxt_word.label),
                                  [first] + nxt_phones[1:], nxt_pron, nxt_conf)
        out.words.append(word)
        out.phones += phones
        out.pronunciations.append(pron)
        if reviewed:
            out.word_confidences.append(conf[0])
            out.phone_confidences += list(conf)
    return _in_order(out)


def _in_order(result: WordAlignment) -> WordAlignment:
    """``result`` with every phone starting no earlier than its predecessor ends (moved to that
    end, and lasting at least one frame) and each word spanning its phones: a join of chunks
    that disagreed is mended locally rather than written as reversed intervals."""
    end, k, phones = -np.inf, 0, []
    for i, pron in enumerate(result.pronunciations):
        word, first = result.words[i], len(phones)
        moved = word.start_s < end - 1e-9
        for p in result.phones[k:k + len(pron)]:
            if p.start_s < end - 1e-9 or p.end_s <= max(p.start_s, end) + 1e-9:
                start = max(p.start_s, end)
                p = Interval(start, max(p.end_s, start + FRAME_SECONDS), p.label)
                moved = True
            phones.append(p)
            end = p.end_s
        k += len(pron)
        if moved:
            result.words[i] = Interval(phones[first].start_s, end, word.label)
    result.phones = phones
    return result


def word_key(alternatives: Sequence[Sequence[str]]) -> str:
    """The name of a word type (:mod:`aligner.alignment.adaptation.pronunciations`): its sorted
    non-dialect alternatives (ARPAbet), ``"|"``-joined."""
    plain = sorted({" ".join(p) for p in alternatives if not isinstance(p, DialectForm)})
    return "|".join(plain or sorted({" ".join(p) for p in alternatives}))


LEVELS = ("expansion", "phones")
#: largest absolute pronunciation bonus (path-score units; a dialect form's fixed one is -1)
MAX_PRONUNCIATION_BONUS = 2.0


def check_pronunciation_bonus(bonus) -> dict:
    """``bonus`` as read from a bundle (:attr:`AlignmentModel.pronunciation_bonus`): a dict of
    :func:`alternative_key` names to finite floats of at most :data:`MAX_PRONUNCIATION_BONUS` in
    absolute value (ValueError otherwise)."""
    if not isinstance(bonus, dict) or not all(
            isinstance(k, str) and "\t" in k and isinstance(v, (int, float)) and math.isfinite(v)
            and abs(v) <= MAX_PRONUNCIATION_BONUS + 1e-9 for k, v in bonus.items()):
        raise ValueError("pronunciation_bonus must map word alternatives to finite bonuses")
    return {k: float(v) for k, v in bonus.items()}


def alternative_key(word: str, symbols: Sequence[str], level: str = "expansion") -> str:
    """The name of one alternative of word type ``word``: ``word`` and the expansion's internal
    phone symbols (``level="expansion"``), or ``=`` and the variant's ARPAbet phones
    (``"phones"``), tab-separated."""
    return f"{word}\t{'=' if level == 'phones' else ''}{' '.join(symbols)}"


def word_graph(model, pronunciations: Sequence[Sequence[Sequence[str]]], rules: Sequence[str] = DEFAULT_RULES) -> tuple:
    """``(graph, expansions)``: the pronunciation graph the decoder searches for W words (each
    word's alternatives, ARPAbet phones, expanded by :func:`_expansions` with ``rules``; an
    optional pause between words, and at either end one of any length) with ``model``'s duration
    statistics, and per word its ``[(phones, expansion), ...]`` in the graph's alternative order.
    An alternative's segment carries :data:`DIALECT_FORM_BONUS` (a dialect form),
    :data:`WEAK_FORM_BONUS` (a weak form) or :data:`G2P_VARIANT_BONUS` (a G2P variant), plus
    :data:`RULE_VARIANT_BONUS` where a rule made it (an expansion but the first), plus the
    model's :attr:`~aligner.alignment.model.AlignmentModel.pronunciation_bonus` of it, if any."""
    arpabet = words_phone_set(model)
    bonus = getattr(model, "pronunciation_bonus", None) or {}
    words, expansions = [], []
    for alternatives in pronunciations:
        segs, exps = [], []
        word = word_key(alternatives) if bonus else None
        for phones in alternatives:
            for k, (exp, seg) in enumerate(_pronunciation_segments(model, tuple(phones), tuple(rules), arpabet)):
                extra = (bonus.get(alternative_key(word, exp.symbols), 0.0)
                         + bonus.get(alternative_key(word, phones, "phones"), 0.0)) if bonus else 0.0
                rule = ((WEAK_FORM_BONUS if isinstance(phones, WeakForm) else DIALECT_FORM_BONUS)
                        if isinstance(phones, DialectForm) else G2P_VARIANT_BONUS if isinstance(phones, G2PVariant)
                        else 0.0) + (RULE_VARIANT_BONUS if k else 0.0)
                if k and exp.symbols[0] == GLOTTAL_STOP:  # the glottal onset's own weight too
                    rule += GLOTTAL_ONSET_BONUS
                if rule or extra:
                    seg = dataclasses.replace(seg, bonus=extra + rule)
                segs.append(seg)
                exps.append((tuple(phones), exp))
        words.append(segs)
        expansions.append(exps)
    if words:
        words[-1] = [_lengthened(model, seg) for seg in words[-1]]
    edge = _pause(model, EDGE_SYMBOL, EDGE_LOG_DENSITY)
    if MERGED_JUNCTION_BONUS is not None and words:
        mergeable = {c for c, b in enumerate(model.inventory.broad) if b in MERGED_JUNCTION_CLASSES}
        _add_merged_junctions(words, expansions, MERGED_JUNCTION_BONUS, mergeable, _absorbed(words[0], edge, 0))
    graph = build_word_graph(words, _pause(model, PAUSE_SYMBOL), leading_pause=edge, trailing_pause=edge,
                             before_pause=(lambda seg: _lengthened(model, seg))
                             if PRE_PAUSE_LENGTHENING and not len(model.durations.final_mean) else None)
    return graph, expansions


def _add_merged_junctions(words: list, expansions: list, bonus: float, mergeable: set, first_word: list) -> None:
    """Append to each word but the first, in place, its alternatives whose first phone (a class
    of ``mergeable``) the word before may end in, as
    :attr:`~aligner.alignment.decoding.graph.Segment.merges_first` variants carrying ``bonus``
    more, with their expansions: the internal phones from the second on (the first output phone
    dropped when it had no other). ``first_word``: the first word's alternatives the graph keeps
    beside the leading silence (:func:`~aligner.alignment.decoding.graph.build_word_graph`)."""
    for i in range(1, len(words)):
        last = {seg.classes[-1] for seg in (first_word if i == 1 else words[i - 1])} & mergeable
        extra_segs, extra_exps = [], []
        for seg, (phones, exp) in zip(words[i], expansions[i]):
            if len(seg) < 2 or seg.merges_first or seg.classes[0] not in last:
                continue
            owner = np.asarray(exp.owner)
            whole = owner[1] != owner[0]  # the first output phone is the merged internal phone alone
            tail = ExpandedTranscript(list(exp.symbols[1:]), np.asarray(exp.classes)[1:],
                                      owner[1:] - 1 if whole else owner[1:], exp.n_output - 1 if whole else exp.n_output)
            extra_segs.append(dataclasses.replace(seg, merges_first=True, bonus=seg.bonus + bonus))
            extra_exps.append((tuple(phones[1:]) if whole else tuple(phones), tail))
        words[i] = list(words[i]) + extra_segs
        expansions[i] = list(expansions[i]) + extra_exps


def decode_word_graph(model, frames, scores, pronunciations, duration_s, name="<utterance>",
                      phone_bonus=PHONE_BONUS, rules=DEFAULT_RULES, pause_bonus=0.0, band=WORD_BAND_FRAMES,
                      refine: bool = True, built=None) -> tuple:
    """One graph DP over all T frames (within ``band`` frames of a first pass,
    :mod:`aligner.alignment.decoding.graph_band`; ``band=0``: the exact DP over all states) of words
    with these ``pronunciations``: ``(graph, expansions, graph input, path, start times (K,) in
    seconds of the path's phones)``, the times refined by the model's refiner when it has one
    (grid times without it, or with ``refine=False``: then None). ``built``: ``word_graph(model,
    pronunciations, rules)`` when the caller has it already."""
    graph, expansions = built if built is not None else word_graph(model, pronunciations, rules)
    scores = model.transcript_scores(scores, graph.classes)  # a corpus-wide universal view: the graph's phones
    x = model.with_evidence(make_graph_input(scores, frames, graph, model.min_frames, name=name), frames)
    task = GraphAlignmentTask(phone_bonus=phone_bonus, pause_bonus=pause_bonus)
    path = decode_banded(task, x, model.weights, band) if band else task.decode(x, model.weights)
    nodes = path.nodes
    if not refine:
        starts_s = None
    elif model.refiner is None:
        starts_s = phone_start_times(path.starts)
    else:
        starts_s = model.refiner.start_times(scores, frames, graph.classes[nodes], path.starts,
                                             x.dur_mean[nodes], x.dur_std[nodes], duration_s)
        starts_s = _short_edges_on_grid(graph, path, starts_s, x.n_frames)
    return graph, expansions, x, path, starts_s


#: an edge silence decoded shorter than this (frames) keeps its boundary with the word on the
#: 10 ms grid: the refiner learned that boundary from TIMIT's edge silences, 2 of 240 of which
#: last under 4 frames, and moves it 10 ms into the word after a 1-frame silence
SHORT_EDGE_FRAMES = 3


def _short_edges_on_grid(graph, path, starts_s: np.ndarray, T: int) -> np.ndarray:
    """``starts_s`` (K,) seconds with the boundary after a leading silence and before a trailing
    one of fewer than :data:`SHORT_EDGE_FRAMES` frames (T frames in all) at its grid time."""
    nodes, starts = path.nodes, path.starts
    K = len(nodes)
    if K < 2:
        return starts_s
    grid = phone_start_times(starts)
    out = np.array(starts_s, np.float64)
    if graph.is_pause[nodes[0]] and graph.any_length[nodes[0]] and starts[1] < SHORT_EDGE_FRAMES:
        out[1] = min(grid[1], out[2] - 0.001) if K > 2 else grid[1]
    if graph.is_pause[nodes[-1]] and graph.any_length[nodes[-1]] and T - starts[-1] < SHORT_EDGE_FRAMES:
        out[-1] = max(grid[-1], out[-2] + 0.001)
    return out


def _first_pass_with_pauses(model, scores: np.ndarray, canonical: list, name: str) -> tuple:
    """``(starts, first)``: the linear first pass of a long recording's words for a model whose
    pauses may last any length (a universal view, :attr:`~aligner.alignment.model.AlignmentModel.pauses_unpaced`):
    its first pronunciations ``canonical`` (graph segments) with a pause between every two words
    (at least a frame, as long as the pause's longest), each phone within its longest length, so that
    no phone holds a word list's pauses and the words beside them. ``starts``: (K,) frames of the
    sequence's phones; ``first``: (W,) the index in it of each word's first phone."""
    from aligner.alignment.decoding.long_recordings import first_pass_starts

    pause = _pause(model, PAUSE_SYMBOL)
    classes, mean, longest, first = [], [], [], []
    for i, seg in enumerate(canonical):
        if i:
            classes.append(pause.classes[0])
            mean.append(pause.mean[0])
            longest.append(pause.max_frames[0])
        first.append(len(classes))
        classes += list(seg.classes)
        mean += list(seg.mean)
        longest += list(seg.max_frames)
    starts = first_pass_starts(scores, np.array(classes, np.int64), np.array(mean, float), name=name,
                               max_frames=np.array(longest, np.int64))
    return starts, np.array(first, np.int64)


def _align_words_span(model, frames, scores, labels, pronunciations, duration_s, name, phone_bonus,
                      rules, pause_bonus, review=False, band=WORD_BAND_FRAMES) -> WordAlignment:
    """:func:`align_words_scored` by one graph DP over all T frames, within ``band`` frames of a
    first pass (:mod:`aligner.alignment.decoding.graph_band`; ``band=0``: the exact DP over all states)."""
    graph, expansions, x, path, starts_s = decode_word_graph(model, frames, scores, pronunciations, duration_s,
                                                              name, phone_bonus, rules, pause_bonus, band)
    nodes = path.nodes
    ends_s = np.append(starts_s[1:], duration_s)
    conf, match = (None, None)
    if review:
        conf, match = model.review(frames, scores, graph.classes[nodes], [graph.labels[n] for n in nodes],
                                   path.starts, starts_s)
    out = WordAlignment(transcript_match=match)
    if conf is not None:
        out.word_confidences, out.phone_confidences = [], []
    for k, w, phones, expanded in path_words(graph, expansions, nodes):
        m = len(expanded.symbols)
        first = np.ones(m, dtype=bool)
        first[1:] = expanded.owner[1:] != expanded.owner[:-1]
        own_starts = starts_s[k:k + m][first]
        own_ends = np.append(own_starts[1:], ends_s[k + m - 1])
        out.phones += [Interval(float(s), float(e), p) for s, e, p in zip(own_starts, own_ends, phones)]
        out.words.append(Interval(float(starts_s[k]), float(ends_s[k + m - 1]), labels[w]))
        out.pronunciations.append(phones)
        if conf is not None:  # a phone's interval starts at its first internal phone's start
            out.phone_confidences += [float(c) for c in conf[k:k + m][first]]
            out.word_confidences.append(float(conf[k]))
    return out


def path_words(graph, expansions, nodes):
    """``(k, w, phones, expansion)`` of each word on a decoded path ``nodes`` (the graph's node
    indices, pauses skipped): the path position ``k`` of its first node, its index ``w``, the
    pronunciation chosen (as the dictionary writes it) and its expansion (``expansions[w]``, as
    :func:`word_graph` lists them)."""
    k = 0
    while k < len(nodes):
        if graph.is_pause[nodes[k]]:
            k += 1
            continue
        w = int(graph.word[nodes[k]])
        phones, expanded = _chosen(expansions[w], graph.labels, nodes, k, graph)
        yield k, w, phones, expanded
        k += len(expanded.symbols)


def _chosen(alternatives, node_labels, nodes, k, graph):
    """The (phones, expansion) of the alternative whose nodes start at path position ``k``
    (identical alternatives are kept once in the graph, so match by the labels on the path, the
    word's whole run of nodes: one alternative may be another's beginning, ``W AH1`` and ``W AH1 R``)."""
    word = graph.word[nodes[k]]
    end = k
    while end < len(nodes) and graph.word[nodes[end]] == word:
        end += 1
    for phones, expanded in alternatives:
        if [node_labels[n] for n in nodes[k:end]] == list(expanded.symbols):
            return phones, expanded
    raise AssertionError("decoded path does not follow any pronunciation of the word")
