"""One recording through the aligner: read, check, decode, refine, review, write.

What :mod:`aligner.api`'s single-file functions run: the shipped (or given) model and
pronouncing dictionary, cached per process (:func:`load_model`, :func:`load_dictionary`); the
audio read from a path or taken from memory at any rate (:func:`_samples`; a long file read on
demand, :func:`_samples_any_length`); the transcript checked against the recording's length
from the file's header before any sample is read (a small WAV, :func:`_small_wav`, is read at
once and checked by the decoder); a phone transcript aligned by
:meth:`~aligner.alignment.model.AlignmentModel.align_with_review`, a words transcript through
the dictionary, the G2P and the pronunciation-graph decoder (:func:`align_words`); the result
as an :class:`Alignment` (tiers, boundary confidences, the transcript check) and written by
:func:`align_file`. Corpora: :mod:`aligner.alignment.corpus`.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from aligner.alignment.model import AlignmentModel
from aligner.alignment.universal import SILENCE_CLASS, UniversalModel
from aligner.errors import AlignerError, AlignmentError, TranscriptError
from aligner.frames import FRAME_SHIFT, SAMPLE_RATE
from aligner.io.audio import load_audio, samples_at_model_rate
from aligner.io.bundles import ALIGNMENT_KIND, UNIVERSAL_KIND, bundle_kind, default_model_dir
from aligner.io.textgrids import Interval
from aligner.io.transcripts import read_transcript
from aligner.phones.sets import OPEN_PHONE_SET_NAMES
from aligner.words.dialects import DEFAULT_DIALECT


PHONE_TIER = "phones"


#: a ``--tier`` may end this far past the end of the audio (seconds) before the file is rejected
TIER_OVERRUN_TOLERANCE = 0.05


@lru_cache(maxsize=4)
def _load_model_cached(path: str):
    if bundle_kind(path) == UNIVERSAL_KIND:
        return UniversalModel.load(path)
    return AlignmentModel.load(path)


def load_model(model: str | os.PathLike | AlignmentModel | UniversalModel | None = None,
               universal: bool = False):
    """An :class:`AlignmentModel` or a :class:`~aligner.alignment.universal.UniversalModel`:
    ``model`` itself, the bundle at that path (either kind), or the shipped default: the
    English model, or with ``universal`` the universal one (:func:`wants_universal`)."""
    if isinstance(model, (AlignmentModel, UniversalModel)):
        return model
    path = Path(model) if model is not None else default_model_dir(UNIVERSAL_KIND if universal else ALIGNMENT_KIND)
    return _load_model_cached(str(path.resolve()))


def wants_universal(phone_set, language: str | None = None) -> bool:
    """Whether the shipped universal model is the default: phones in IPA or X-SAMPA
    (``phone_set`` ``ipa``/``xsampa``) or words of a ``language`` read by its G2P. English words
    and TIMIT, ARPAbet or 39-class phones keep the English model."""
    return (isinstance(phone_set, str) and phone_set.strip().lower() in OPEN_PHONE_SET_NAMES) or language is not None


def phone_code(phone_set) -> str:
    """The IPA code (``ipa`` or ``xsampa``) a transcript for the universal model is read in:
    ``phone_set`` when it is one, else ``ipa``."""
    key = phone_set.strip().lower() if isinstance(phone_set, str) else getattr(phone_set, "code", "ipa")
    return key if key in OPEN_PHONE_SET_NAMES else "ipa"


#: a recording longer than this (seconds) is read from its file block by block, not loaded whole
STREAM_SECONDS = 600.0


#: bytes a second of audio takes at least in a WAV file (8 kbit/s: G.729's rate; 16-bit PCM at 8 kHz
#: takes 16,000, 4-bit ADPCM 4,000)
WAV_LEAST_BYTES_PER_SECOND = 1000


def _small_wav(audio) -> bool:
    """``audio`` is a path to a ``.wav`` file too small to hold :data:`STREAM_SECONDS` of audio
    (:data:`WAV_LEAST_BYTES_PER_SECOND`): it is read whole, its header not consulted first (that
    reading costs about as much as the samples of a file of a few seconds). False when the file
    cannot be looked at (the reading says why)."""
    path = os.fspath(audio) if isinstance(audio, (str, os.PathLike)) else None
    if not isinstance(path, str) or not path.lower().endswith(".wav"):
        return False
    try:
        return os.stat(audio).st_size <= STREAM_SECONDS * WAV_LEAST_BYTES_PER_SECOND
    except (OSError, ValueError):
        return False


def _samples_any_length(audio, sr: int | None, name: str | None) -> tuple:
    """:func:`_samples`, except that a long 16 kHz recording given by path comes back as a
    :class:`~aligner.io.audio.FileSamples` (read on demand, not held in memory)."""
    if isinstance(audio, (str, os.PathLike)) and not _small_wav(audio):
        from aligner.io.audio import audio_duration, file_samples

        if audio_duration(audio) > STREAM_SECONDS:
            source = file_samples(audio)
            if source is not None:
                return source, name or str(audio)
    return _samples(audio, sr, name)


def _samples(audio, sr: int | None, name: str | None) -> tuple[np.ndarray, str]:
    """``(16 kHz mono float32 samples, name for messages)`` of a path, or of samples in memory
    with their rate ``sr`` (required then)."""
    if isinstance(audio, (str, os.PathLike)):
        return load_audio(audio), name or str(audio)
    if sr is None:
        raise TypeError("samples in memory need their sample rate: pass sr=, e.g. align(y, text, sr=16000)")
    name = name or "<samples>"
    return samples_at_model_rate(audio, sr, name), name


def _check_fits_header(m: AlignmentModel, audio, symbols, pset, split_stops, name: str) -> None:
    """For an audio path: refuse, from its header alone (no samples read), a phone transcript
    that cannot fit the recording (too many phones, or too few to cover it). A small WAV
    (:func:`_small_wav`) is read first and checked by the decoder, with the same message."""
    if not isinstance(audio, (str, os.PathLike)) or _small_wav(audio):
        return
    from aligner.frames import n_frames
    from aligner.io.audio import audio_duration

    m.check_transcript_fits(n_frames(int(audio_duration(audio) * SAMPLE_RATE)), symbols, pset, split_stops, name)


def _check_words_fit(m: AlignmentModel, prons, seconds: float, label: str) -> None:
    """Refuse words whose pronunciations cannot fit ``seconds`` of audio: too many phones even
    in their shortest pronunciations, or too few to cover it with pauses at their longest."""
    from aligner.alignment.decoding.task import check_fits
    from aligner.alignment.decoding.words import EDGE_SYMBOL, PAUSE_SYMBOL
    from aligner.frames import n_frames
    T = n_frames(int(seconds * SAMPLE_RATE))
    if T < 1 or not prons:
        return
    fewest = sum(min(len(p) for p in alternatives) for alternatives in prons)
    # the most the words can cover: a pause between (and around) the words and every phone at
    # its longest (stops and affricates decode as two phones)
    sil = np.array([m.inventory.silence_index])
    pause = int(m.durations.for_phones(sil, [PAUSE_SYMBOL])[2][0])
    edge = int(m.durations.for_phones(sil, [EDGE_SYMBOL])[2][0])
    longest = int(m.durations.max_frames.max())
    most = 2 * edge + pause * (len(prons) - 1)
    most += longest * sum(2 * max(len(p) for p in alternatives) for alternatives in prons)
    check_fits(T, fewest, np.full(fewest, T), m.min_frames, label)  # the phones needed at least
    if most < T:
        raise AlignmentError(
            f"{label}: {len(prons)} words cover at most {most} frames even with pauses, got {T} frames: the "
            f"audio ({T / 100:.2f} s) is far too long for the transcript; check that it belongs to this "
            f"recording, or cut the recording")


@dataclass(frozen=True)
class ScoredRecording:
    """A recording as the aligner scored it whole, handed to a caller that reuses the work
    (``on_scored`` of :func:`align_transcript`; the vowel fusion, :mod:`aligner.vowels.fused`).

    ``samples``: (n,) float32 16 kHz samples as read; ``frames``: the (T, 42) float32 MFCC
    frames the decoder read (10 ms, its :meth:`~aligner.alignment.model.AlignmentModel.frames_of`
    the samples: through its band for a phone-line expert; a words transcript's span may end a
    sample or two short of the samples, when the file's header says so, but never short of a
    frame: the frames are those of ``samples``); ``decoder``: the model that decoded the
    recording (the model itself, or one of its experts when a gate of
    :meth:`~aligner.alignment.model.AlignmentModel.scored` sent the recording there);
    ``scores``: (T, n_classes) float32 ``decoder.classifier.scores(frames)``; ``own``: the model's
    own ``(frames, scores)`` of a recording it sent to its expert, its scores None where it never
    scored it, or None (:meth:`~aligner.alignment.model.AlignmentModel.scored_keeping_own`).
    """

    samples: np.ndarray
    frames: np.ndarray
    decoder: AlignmentModel
    scores: np.ndarray
    own: Optional[tuple] = None


def _flagged(m: AlignmentModel, match: Optional[float]) -> bool:
    return match is not None and m.utterance_check is not None and m.utterance_check.flags_probability(match)


def align_phones_reviewed(audio, phones, model=None, phone_set: str = "auto", name: str | None = None,
                          split_stops: bool | None = None, sr: int | None = None,
                          on_scored: Optional[Callable[[ScoredRecording], None]] = None) -> Alignment:
    """:func:`align` as an :class:`Alignment` (one ``phones`` tier) with its review: every
    phone start's confidence and the transcript check, when the model has them. ``on_scored``:
    as for :func:`align_transcript`."""
    m = load_model(model, wants_universal(phone_set))
    intervals, conf, match = _align_phones(m, audio, phones, phone_set, name, split_stops, sr, review=True,
                                           on_scored=on_scored)
    confidences = {} if conf is None else {PHONE_TIER: [float(c) for c in conf]}
    return Alignment([(PHONE_TIER, intervals)], intervals[-1].end_s, confidences=confidences,
                     transcript_match=match, transcript_flagged=_flagged(m, match))


def align(audio, phones, model=None, phone_set: str = "auto", name: str | None = None,
          split_stops: bool | None = None, sr: int | None = None) -> list[Interval]:
    """Align a recording to its phones; returns ``[Interval(start_s, end_s, symbol), ...]`` in seconds.

    ``audio``: a path, or samples in memory with their sample rate ``sr`` in Hz (librosa's
    ``(y, sr)``: shape (n,) or (channels, n); resampled to 16 kHz, channels averaged).
    ``model``: an :class:`AlignmentModel`, a model directory, or None for the shipped model.
    ``phones``: a transcript path (TIMIT ``.phn``
    or whitespace-separated symbols), an inline string of symbols, or a list of symbols.
    ``phone_set``: ``auto``, ``timit61``, ``timit39`` or ``arpabet``; or ``ipa`` or ``xsampa``
    (any phone, by default through the shipped universal model; :func:`align_ipa_phones`). ``split_stops``: decode
    each stop/affricate as TIMIT closure + release and merge them back into the one input
    symbol (:mod:`aligner.alignment.decoding.stop_closures`); None = automatic (for ``arpabet`` and ``timit39``,
    whose stops include their closure; not for ``timit61``, which writes closures).
    """
    return _align_phones(load_model(model, wants_universal(phone_set)), audio, phones, phone_set, name, split_stops,
                         sr, review=False)[0]


def model_reading(m: AlignmentModel, phone_set):
    """The phone set a transcript for model ``m`` is read in: ``phone_set`` (a name, ``auto``
    or a :class:`~aligner.phones.sets.PhoneSet`) for a 39-class model; the model's own phones for a
    model trained on its own phone set, which takes ``auto`` (or ``model``) only."""
    own = m.phone_set
    if own is None:
        if phone_set == "model":
            raise TranscriptError("this model reads the standard phone sets (timit61, timit39, arpabet); "
                                  "--phone-set model is for models trained on their own phones")
        return phone_set
    if phone_set not in ("auto", "model") and phone_set is not own:
        raise TranscriptError(f"this model was trained on its own phones ({own.description}) and reads "
                              f"those only; leave the phone set at auto, not {getattr(phone_set, 'name', phone_set)!r}")
    return own


def _align_phones(m: AlignmentModel, audio, phones, phone_set, name, split_stops, sr, review: bool,
                  on_scored: Optional[Callable[[ScoredRecording], None]] = None) -> tuple:
    """:func:`align`'s work: ``(intervals, confidences or None, transcript match or None)``.
    The transcript must fit the audio (checked from a file's header before its samples are
    read); an alignment error names the recording. ``on_scored``: as for
    :func:`align_transcript` (a recording read whole, not one streamed from its file)."""
    if isinstance(m, UniversalModel) or wants_universal(phone_set):
        return align_ipa_phones(m, audio, phones, phone_code(phone_set), name, split_stops, sr, review, on_scored)
    if isinstance(phones, (list, tuple)):
        phones = " ".join(phones)
    symbols, pset = read_transcript(phones, model_reading(m, phone_set))
    return _decode_recording(m, audio, symbols, pset, name, split_stops, sr, review, on_scored, edge_silences=True)


#: the silence symbols an added edge silence takes, in this order of preference
EDGE_SILENCE_SYMBOLS = ("h#", "sil", "pau", "sp", "<sil>", "")


def with_edge_silences_of(symbols: list, pset) -> tuple:
    """``(symbols, added)``: a phone transcript in ``pset`` (a standard phone set or a model's own)
    with a silence before its first phone and after its last unless it begins or ends with a
    phone of the silence class (a pause, or a TIMIT closure, which covers the silence as its
    class); ``added`` (K,) bool marks them. Recordings begin and end in silence: without one,
    the first and last phones would take it (the DP gives each phone a frame at least, so an
    added silence where there is none costs that frame). The silence is the set's own symbol
    (:data:`EDGE_SILENCE_SYMBOLS`; ``h#`` for TIMIT-61, ``sil`` for ARPAbet); a set without one
    adds nothing."""
    silence = pset.inventory.silence
    options = {s.lower(): s for s in pset.symbols if pset.class_of(s) == silence}
    symbol = next((options[k] for k in EDGE_SILENCE_SYMBOLS if k in options), None)
    if symbol is None or not symbols:
        return list(symbols), [False] * len(symbols)
    head = [] if pset.class_of(symbols[0]) == silence else [symbol]
    tail = [] if pset.class_of(symbols[-1]) == silence else [symbol]
    added = [True] * len(head) + [False] * len(symbols) + [True] * len(tail)
    return head + list(symbols) + tail, added


def with_edge_silences_if_they_fit(m: AlignmentModel, symbols: list, pset, n_frames_: int,
                                   split_stops: bool | None = None, name: str = "<utterance>") -> tuple:
    """``(symbols, added)`` of :func:`with_edge_silences_of` where ``m`` can decode them over a
    recording of ``n_frames_`` frames (:meth:`~aligner.alignment.model.AlignmentModel.check_transcript_fits`),
    else the phones as written (nothing added): a recording too short for the added silences."""
    padded, added = with_edge_silences_of(symbols, pset)
    if any(added):
        try:
            m.check_transcript_fits(n_frames_, padded, pset, split_stops, name)
            return padded, added
        except AlignmentError:
            pass
    return list(symbols), [False] * len(symbols)


def _decode_recording(m: AlignmentModel, audio, symbols, pset, name, split_stops, sr, review: bool,
                      on_scored: Optional[Callable[[ScoredRecording], None]] = None,
                      edge_silences: bool = False) -> tuple:
    """``m.align_with_review`` of a recording (a path or samples) and its phones ``symbols`` in
    ``pset``: the transcript checked against a file's header before its samples are read, an
    alignment error naming the recording, ``on_scored`` handed the scoring of a recording read
    whole. ``edge_silences``: the silences the transcript lacks at its edges are added where the
    recording has room for them (:func:`with_edge_silences_if_they_fit`), their intervals unlabelled."""
    from aligner.frames import n_frames

    if name is None and isinstance(audio, (str, os.PathLike)):
        name = str(audio)
    try:
        _check_fits_header(m, audio, symbols, pset, split_stops, name)
        samples, name = _samples_any_length(audio, sr, name)
        added = None
        if edge_silences:
            symbols, added = with_edge_silences_if_they_fit(m, symbols, pset, n_frames(len(samples)), split_stops,
                                                            name)
        hand_on = None
        if on_scored is not None and isinstance(samples, np.ndarray):  # read whole: its scoring is kept
            def hand_on(frames, decoder, scores, own):
                on_scored(ScoredRecording(samples, frames, decoder, scores, own))
        intervals, conf, match = m.align_with_review(samples, symbols, pset, name=name, split_stops=split_stops,
                                                     review=review, on_scored=hand_on)
        if added is not None and any(added):
            intervals = [iv._replace(label="") if a else iv for iv, a in zip(intervals, added)]
        return intervals, conf, match
    except AlignmentError as exc:
        msg = str(exc)
        raise AlignmentError(msg if name in msg else f"{name}: {msg}") from None


def read_ipa_transcript(phones, code: str = "ipa") -> tuple:
    """``(symbols, labels, source)`` of a phone transcript in IPA or X-SAMPA (``code``): a list of
    symbols, an inline string, a ``.lab``/``.txt`` of whitespace-separated phones, or a TextGrid
    whose phones tier (``phones`` or ``phone``, else its only interval tier) holds one phone per
    interval (an empty interval is a silence, ``sil``). ``labels``: what the output tier writes
    for each (the user's own symbols; an empty interval stays empty). Each symbol is checked:
    one that the code cannot read is a one-line error naming it and the file."""
    from aligner.phones.ipa import OpenPhoneSet

    pset = OpenPhoneSet(code)
    if isinstance(phones, (list, tuple)):
        phones = " ".join(phones)
    if isinstance(phones, (str, os.PathLike)) and os.path.exists(phones) and Path(phones).suffix.lower() == ".textgrid":
        from aligner.io.transcripts import read_reference_phones

        _, _, labels = read_reference_phones(phones)
        labels = [lab.strip() for lab in labels]
        symbols = [lab or SILENCE_CLASS for lab in labels]
        source = str(phones)
        pset.validate(symbols, source)
        return symbols, labels, source
    symbols, _ = read_transcript(phones, pset)
    source = str(phones) if isinstance(phones, os.PathLike) or os.path.exists(str(phones)) else "transcript"
    return list(symbols), list(symbols), source


def with_edge_silences(symbols: list, labels: list) -> tuple:
    """``(symbols, labels, added)``: a silence before the first phone and after the last unless
    the transcript begins or ends with one (recordings begin and end in silence; the DP gives each
    phone a frame at least, so an added silence where there is none costs that frame); ``added``
    (K,) bool marks them, whose output label is empty."""
    from aligner.phones.ipa import is_silence_symbol

    head = [] if is_silence_symbol(symbols[0]) else [SILENCE_CLASS]
    tail = [] if is_silence_symbol(symbols[-1]) else [SILENCE_CLASS]
    added = [True] * len(head) + [False] * len(symbols) + [True] * len(tail)
    return head + list(symbols) + tail, [""] * len(head) + list(labels) + [""] * len(tail), added


def closest_model_phones(m: AlignmentModel, symbols: list, code: str = "ipa") -> tuple:
    """``(model symbols, phone set)``: each IPA (or X-SAMPA) phone of ``symbols`` as the closest
    phone of an English or own-phone model ``m`` by features
    (:func:`~aligner.phones.languages.phone_mapping`), silences as its silence."""
    from aligner.phones.ipa import read_phone
    from aligner.phones.languages import phone_mapping
    from aligner.phones.sets import get_phone_set

    segments = [read_phone(s, code) for s in symbols]
    if m.phone_set is None:
        mapping = phone_mapping(sorted({seg.ipa for seg in segments if not seg.silence}), m)
        return [SILENCE_CLASS if seg.silence else mapping[seg.ipa].upper() for seg in segments], \
            get_phone_set("arpabet")
    own = m.phone_set
    silence = next(s for s in own.symbols if own.class_of(s) == m.inventory.silence)
    # a phone of the model's own (an adapted universal model's phones are the language's), as written
    # or in another spelling of the same IPA; else the closest by features
    same: dict = {}
    for s in own.symbols:
        try:
            same.setdefault(read_phone(s, code).ipa, s)
        except AlignerError:
            continue
    todo = sorted({seg.ipa for sym, seg in zip(symbols, segments)
                   if not seg.silence and own.normalize(sym) is None and seg.ipa not in same})
    mapping = phone_mapping(todo, m) if todo else {}
    return [silence if seg.silence else own.normalize(sym) or same.get(seg.ipa) or mapping[seg.ipa]
            for sym, seg in zip(symbols, segments)], own


def align_ipa_phones(m, audio, phones, code: str = "ipa", name: str | None = None, split_stops: bool | None = None,
                     sr: int | None = None, review: bool = True, on_scored=None) -> tuple:
    """``(intervals, confidences or None, transcript match or None)`` of a recording and its
    phones in IPA or X-SAMPA (``code``; :func:`read_ipa_transcript`), a silence added at either
    end where the transcript has none (:func:`with_edge_silences`). A universal model ``m``
    aligns the view of exactly these phones; an English or own-phone model their closest
    phones (:func:`closest_model_phones`). The intervals carry the transcript's own symbols
    (an added or empty silence an empty label)."""
    symbols, labels, source = read_ipa_transcript(phones, code)
    symbols, labels, _ = with_edge_silences(symbols, labels)
    if isinstance(m, UniversalModel):
        decoder = m.view(symbols, code, source)
        decoded, pset = symbols, decoder.phone_set
    else:
        decoder = m
        decoded, pset = closest_model_phones(m, symbols, code)
    intervals, conf, match = _decode_recording(decoder, audio, decoded, pset, name, split_stops, sr, review,
                                               on_scored)
    return [iv._replace(label=lab) for iv, lab in zip(intervals, labels)], conf, match


@lru_cache(maxsize=4)
def _dictionary_cached(user: str | None):
    from aligner.words.dictionary import load_dictionary

    return load_dictionary(user)


@lru_cache(maxsize=4)
def _own_dictionary_cached(path: str, phone_set):
    from aligner.words.dictionary import read_user_dictionary

    return read_user_dictionary(path, phone_set)


def words_dictionary(m, dictionary, language: str | None = None, code: str = "ipa"):
    """The dictionary words for model ``m`` are looked up in: None for ``language`` (its G2P reads
    them; an unknown language raises here), the model's own-phone ``dictionary`` for a model
    trained on its own phones (None without one), for the universal model a ``dictionary`` of
    IPA (or X-SAMPA: ``code``) pronunciations in MFA's format, else CMU with ``dictionary`` on
    top (:func:`load_dictionary`). Loaded once per process and kept (a corpus's files share it)."""
    if language is not None:
        from aligner.phones.languages import check_language

        check_language(language)
        return None
    if isinstance(m, UniversalModel):
        from aligner.phones.ipa import OpenPhoneSet

        if isinstance(dictionary, (str, os.PathLike)):
            return _own_dictionary_cached(str(Path(dictionary).resolve()), OpenPhoneSet(code))
        return dictionary
    if m.phone_set is not None:
        if isinstance(dictionary, (str, os.PathLike)):
            return _own_dictionary_cached(str(Path(dictionary).resolve()), m.phone_set)
        return dictionary
    return load_dictionary(dictionary)


def load_dictionary(dictionary=None):
    """The pronouncing dictionary: ``dictionary`` itself (a
    :class:`~aligner.words.dictionary.PronouncingDictionary`), or the CMU Pronouncing Dictionary
    with the user dictionary at that path (MFA format) on top, or CMU alone for None."""
    from aligner.words.dictionary import PronouncingDictionary

    if isinstance(dictionary, PronouncingDictionary):
        return dictionary
    return _dictionary_cached(None if dictionary is None else str(Path(dictionary).resolve()))


@dataclass
class Alignment:
    """One recording's alignment: tiers in output order, and the words no dictionary knew.

    ``tiers``: ``[(tier name, [Interval, ...]), ...]``: ``words`` and ``phones`` (``SPEAKER -
    words``, ``SPEAKER - phones`` for a TextGrid transcript with several speaker tiers), or
    ``phones`` alone for a phone transcript. ``duration_s``: the recording's length.
    ``oovs``: unknown word -> the pronunciation used (ARPAbet, space-separated: the one of the
    G2P's n-best the decoder chose, the commonest where the word occurs more than once; the G2P's
    best where the word was not aligned). With a model that has a
    confidence model: ``confidences``, ``transcript_match``, ``transcript_flagged``.
    """

    tiers: list
    duration_s: float
    oovs: dict = field(default_factory=dict)
    #: tier name -> each interval's start confidence (P within 20 ms of an annotator's), for a
    #: model with a confidence model (:mod:`aligner.alignment.review.confidence`); empty otherwise
    confidences: dict = field(default_factory=dict)
    #: probability that the transcript belongs to the audio (the lowest over a TextGrid's
    #: intervals or a long recording's chunks); None without a transcript check in the model
    transcript_match: Optional[float] = None
    #: the model's check says the transcript probably does not match the audio
    transcript_flagged: bool = False
    #: with a language (``--language``): each of the language's phones -> the model phone it was aligned as
    phone_map: dict = field(default_factory=dict)

    def review(self) -> tuple[int, int, float]:
        """``(boundaries, boundaries with confidence below 0.5, lowest confidence)`` over the
        tiers (the recording's first start, always 1.0, left out; ``(0, 0, 1.0)`` without
        confidences)."""
        values = [c for conf in self.confidences.values() for c in conf[1:]]
        if not values:
            return 0, 0, 1.0
        return len(values), sum(c < 0.5 for c in values), float(min(values))


def _pronunciations(tokens, dictionary, oov: str, name: str, oovs: dict) -> tuple[list, list]:
    """Labels and pronunciation alternatives of the tokens to align (annotations the dictionary
    lacks are skipped); unknown words go through the G2P (its best pronunciation and the next
    ones of its n-best list: :func:`~aligner.words.oov.g2p_pronunciations`) or, with
    ``oov="error"``, fail."""
    from aligner.errors import TranscriptError
    from aligner.words.oov import g2p_pronunciations

    labels, prons, unknown = [], [], []
    for token in tokens:
        alternatives = dictionary.pronunciations(token.word)
        if not alternatives:
            if token.annotation:
                continue
            if oov == "error":
                unknown.append(token.word)
                continue
            alternatives = g2p_pronunciations(token.word)
            oovs[token.word] = " ".join(alternatives[0])
        labels.append(token.word)
        prons.append(alternatives)
    if unknown:
        listed = ", ".join(sorted(set(unknown)))
        raise TranscriptError(f"{name}: {len(set(unknown))} word(s) not in the dictionary: {listed} "
                              f"(add them with --dictionary FILE, or use --oov g2p)")
    if not labels:
        raise TranscriptError(f"{name}: transcript has no words to align")
    return labels, prons


def _g2p_pronunciation(word: str) -> tuple:
    """The shipped G2P's pronunciation (ARPAbet with stress) of an unknown word."""
    from aligner.words.g2p import default_g2p

    return tuple(default_g2p().predict(word))


def check_dialect(dialect: str) -> None:
    """Refuse (one-line :class:`AlignerError`) a dialect not in :data:`~aligner.words.dialects.DIALECTS`."""
    from aligner.words.dialects import DIALECTS

    if dialect not in DIALECTS:
        raise AlignerError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")


def check_phone_map(language: str | None, phone_map) -> None:
    """Refuse (one-line :class:`AlignerError`) a ``phone_map`` given without a ``language``: it maps
    that language's phones onto the model's, and would otherwise be ignored."""
    if phone_map is not None and language is None:
        raise AlignerError("a phone map (--phone-map) maps the phones of a --language onto the model's; "
                           "give the language too, or leave the map out")


def align_words(audio, transcript, model=None, dictionary=None, oov: str = "g2p", sr: int | None = None,
                name: str | None = None, tier: str | None = None, language: str | None = None,
                phone_map=None, on_scored: Optional[Callable[[ScoredRecording], None]] = None,
                phone_set: str = "auto", dialect: str = DEFAULT_DIALECT, glottal_onsets: bool = True) -> Alignment:
    """Align a recording to its orthographic transcript; returns an :class:`Alignment` with
    ``words`` and ``phones`` tiers (MFA's names and order).

    ``audio``: a path, or samples with their rate ``sr`` (as :func:`align`). ``transcript``: a
    ``.lab``/``.txt`` file, an inline string, or a TextGrid whose interval tiers hold utterance
    transcripts (each non-empty interval is aligned within its own span; one pair of tiers per
    speaker tier). ``dictionary``: None (CMU), a user dictionary path (MFA format, on top of
    CMU) or a loaded dictionary. ``oov``: ``"g2p"`` (unknown words get the G2P's
    pronunciation, listed in ``oovs``) or ``"error"``. ``tier``: of a TextGrid transcript, that
    interval tier alone. Text normalisation: :mod:`aligner.words.normalize`. ``dialect``
    (English words, :data:`~aligner.words.dialects.DIALECTS`): ``rhotic`` aligns the dictionary's
    pronunciations as they are (CMUdict's r-coloured American English), ``non-rhotic`` their
    r-less forms (``offer`` AO1 F AH0, ``north`` N AO1 TH; a word-final r kept before a vowel),
    ``auto`` both, the decoder choosing per word (:mod:`aligner.words.dialects`).
    ``glottal_onsets``: a word that begins with a vowel may begin with a glottal stop, part of
    the word and of its first phone's interval, as TIMIT labels it (the ``glottal_onset`` rule of
    :mod:`aligner.alignment.decoding.words`); False for measuring vowels, whose onset is the
    voicing after it.

    ``language`` (e.g. ``es``): the words are in that language: each is read by its G2P, its
    IPA phones reach the model through their closest model phones by features (``phone_map``:
    a file or dict of ``LANGUAGE_PHONE MODEL_PHONE`` to override), and the phones tier is
    written in the language's IPA (:mod:`aligner.phones.languages`); the mapping is in the
    result's ``phone_map``.

    ``on_scored``: as for :func:`align_transcript` (called when the words were aligned over the
    whole recording in one piece: not for a TextGrid's intervals, nor a recording streamed from
    its file).

    With a ``language`` or ``phone_set`` ``ipa``/``xsampa`` the shipped universal model is the
    default; it reads the G2P's IPA phones as they are (no mapping), or the IPA (X-SAMPA)
    pronunciations of ``dictionary``, and aligns the view of the words' phones.
    """
    from aligner.alignment.decoding.silent_edges import inner_silences_cut
    from aligner.alignment.decoding.words import DEFAULT_RULES, align_words_scored
    from aligner.errors import TranscriptError
    from aligner.frames import n_frames
    from aligner.io.exports import tier_name
    from aligner.io.transcripts import read_word_segments
    from aligner.words.normalize import normalize_transcript

    if oov not in ("g2p", "error"):
        raise ValueError(f"oov must be 'g2p' or 'error', got {oov!r}")
    check_dialect(dialect)
    check_phone_map(language, phone_map)
    code = phone_code(phone_set)
    m = load_model(model, wants_universal(phone_set, language))
    universal = isinstance(m, UniversalModel)
    if universal and language is None:
        if dictionary is None:
            raise TranscriptError(f"{name or audio}: the universal model reads words through --language CODE (a G2P) "
                                  "or a --dictionary of IPA pronunciations")
        oov = "error"  # the shipped G2P writes English ARPAbet, not IPA
    elif not universal and m.phone_set is not None and language is None:
        if dictionary is None:
            raise TranscriptError(f"{name or audio}: this model was trained on its own phones ({m.phone_set.description}): "
                                  "word transcripts need a --dictionary in those phones, or --language CODE for a G2P")
        oov = "error"  # the shipped G2P writes English ARPAbet, not the model's phones
    words_dict = words_dictionary(m, dictionary, language, code)
    rules = DEFAULT_RULES if glottal_onsets else tuple(r for r in DEFAULT_RULES if r != "glottal_onset")
    if language is not None and isinstance(phone_map, (str, os.PathLike)):
        from aligner.phones.languages import read_phone_map

        phone_map = read_phone_map(phone_map)
    mapping: dict = {}
    ipa_of: dict = {}
    if isinstance(audio, (str, os.PathLike)):  # checks from the header first: no samples read yet
        from aligner.io.audio import audio_duration

        name = name or str(audio)
        samples, duration = None, audio_duration(audio)
    else:
        samples, name = _samples(audio, sr, name)
        duration = len(samples) / SAMPLE_RATE
    where = str(transcript) if isinstance(transcript, (str, os.PathLike)) and os.path.exists(transcript) else name
    segments = read_word_segments(transcript, tier)
    speakers = list(dict.fromkeys(s.speaker for s in segments))
    by_speaker = {s: ([], []) for s in speakers}
    conf_by_speaker = {s: ([], []) for s in speakers}
    matches: list = []
    oovs: dict = {}
    chosen: dict = {}  # unknown word -> Counter of the pronunciations the decoder chose
    work = []
    scored = None  # the whole recording's scoring, for on_scored
    for seg in segments:
        start = 0.0 if seg.start_s is None else seg.start_s
        end = duration if seg.end_s is None else seg.end_s
        if end > duration + TIER_OVERRUN_TOLERANCE:
            raise TranscriptError(f"{where}: the interval {start:.3f}-{end:.3f} s runs past the end of "
                                  f"{name} ({duration:.3f} s)")
        end = min(end, duration)
        label = name if seg.start_s is None else f"{name} [{start:.3f}-{end:.3f} s]"
        if language is None:
            tokens = normalize_transcript(seg.text, words_dict)
            labels, prons = _pronunciations(tokens, words_dict, oov, where, oovs)
        elif universal:
            labels, prons = _language_ipa(seg.text, language, ipa_of, where)
        else:
            labels, prons = _language_pronunciations(m, seg.text, language, phone_map, mapping, ipa_of, where)
        dm = m.view([p for alternatives in prons for pron in alternatives for p in pron], code, where) \
            if universal else m
        _check_words_fit(dm, prons, end - start, label)
        work.append((seg, start, end, label, labels, prons, dm))
    if samples is None:
        samples, name = _samples_any_length(audio, sr, name)
    for seg, start, end, label, labels, prons, dm in work:
        a, b = int(round(start * SAMPLE_RATE)), int(round(end * SAMPLE_RATE))
        cut = samples if (a, b) == (0, len(samples)) else samples[a:b]  # a whole long file stays on disk
        decoder, scores, frames, own = dm.scored_keeping_own(None, cut)
        if (on_scored is not None and len(work) == 1 and a == 0 and isinstance(samples, np.ndarray)
                and n_frames(len(cut)) == n_frames(len(samples))):  # the recording's frames, all of them
            scored = ScoredRecording(samples, frames, decoder, scores, own)
        settings = dict(name=label, review=True, dialect=dialect if language is None else "rhotic",
                        weak_forms=language is None, rules=rules)
        result = None
        found = dm.silent_edges_cut(decoder, scores, cut)
        if found is not None:  # long silent edges: the words aligned in the cut to their speech
            first, piece, piece_decoder, piece_scores, piece_frames = found
        else:
            first, piece, piece_decoder, piece_scores, piece_frames = 0, cut, decoder, scores, frames
        inner = inner_silences_cut(dm, piece_decoder, piece_scores, piece, piece_frames)
        if inner is not None:  # long pauses between words: aligned with their middles cut out
            spliced, inner_decoder, inner_scores, inner_frames = inner
            try:
                result = align_words_scored(inner_decoder, inner_frames, inner_scores, labels, prons,
                                            spliced.duration_s, **settings)
                result = result.mapped(spliced.original_times).shifted(first * FRAME_SHIFT / SAMPLE_RATE)
            except AlignmentError:
                result = None  # the words do not fit: without the pauses' cut, as before
        if result is None and found is not None:
            try:
                result = align_words_scored(piece_decoder, piece_frames, piece_scores, labels, prons,
                                            len(piece) / SAMPLE_RATE, **settings)
                result = result.shifted(first * FRAME_SHIFT / SAMPLE_RATE)
            except AlignmentError:
                result = None  # the words do not fit the cut: the whole segment, as before
        try:
            if result is None:
                result = align_words_scored(decoder, frames, scores, labels, prons, len(cut) / SAMPLE_RATE,
                                            **settings)
        except AlignmentError as exc:
            msg = str(exc)
            raise AlignmentError(msg if label in msg else f"{label}: {msg}") from None
        if language is None:
            for word, pron in zip(result.words, result.pronunciations):
                if word.label in oovs:
                    chosen.setdefault(word.label, Counter())[" ".join(pron)] += 1
        result = result.shifted(start)
        if language is not None and not universal:
            result.phones = _relabel_phones(result.words, result.phones, ipa_of)
        by_speaker[seg.speaker][0].extend(result.words)
        by_speaker[seg.speaker][1].extend(result.phones)
        if result.word_confidences is not None:
            conf_by_speaker[seg.speaker][0].extend(result.word_confidences)
            conf_by_speaker[seg.speaker][1].extend(result.phone_confidences)
        if result.transcript_match is not None:
            matches.append(result.transcript_match)
    tiers, confidences = [], {}
    for speaker, (words, phones) in by_speaker.items():
        tiers += [(tier_name("words", speaker), words), (tier_name("phones", speaker), phones)]
        word_conf, phone_conf = conf_by_speaker[speaker]
        if getattr(m, "confidence", None) is not None and len(word_conf) == len(words) and \
                len(phone_conf) == len(phones):
            confidences[tier_name("words", speaker)] = word_conf
            confidences[tier_name("phones", speaker)] = phone_conf
    for word, counts in chosen.items():  # the pronunciation used, not the G2P's first guess
        oovs[word] = counts.most_common(1)[0][0]
    match = min(matches) if matches else None
    if scored is not None:
        on_scored(scored)
    return Alignment(tiers, duration, oovs, confidences, match, not universal and _flagged(m, match),
                     phone_map=mapping)


def map_language_phones(m: AlignmentModel, phones, overrides, mapping: dict) -> dict:
    """``mapping`` (``{language IPA phone: model phone}``, grown in place and returned) with each
    of ``phones`` not yet in it added, as :func:`~aligner.phones.languages.phone_mapping` maps
    it onto ``m``'s phones (``overrides``: the user's phone map)."""
    from aligner.phones.languages import phone_mapping

    unmapped = [p for p in phones if p not in mapping]
    if unmapped:
        mapping.update(phone_mapping(unmapped, m, overrides))
    return mapping


def _language_pronunciations(m: AlignmentModel, text: str, language: str, overrides, mapping: dict,
                             ipa_of: dict, where: str) -> tuple[list, list]:
    """Labels and (one) pronunciation of each word of ``text`` in ``language``: the G2P's IPA
    phones (kept in ``ipa_of``), each as its model phone (``mapping``, grown as phones are met)."""
    from aligner.phones.languages import language_pronunciations, language_words

    words = language_words(text)
    if not words:
        raise TranscriptError(f"{where}: transcript has no words to align")
    ipa_of.update(language_pronunciations([w for w in words if w not in ipa_of], language))
    map_language_phones(m, [p for w in words for p in ipa_of[w]], overrides, mapping)
    spell = str.upper if m.phone_set is None else str  # ARPAbet upper case; a model's own phones as written
    return words, [[tuple(spell(mapping[p]) for p in ipa_of[w])] for w in words]


def _language_ipa(text: str, language: str, ipa_of: dict, where: str) -> tuple[list, list]:
    """Labels and (one) pronunciation of each word of ``text`` in ``language``: the G2P's IPA
    phones as they are (kept in ``ipa_of``), for the universal model."""
    from aligner.phones.languages import language_pronunciations, language_words

    words = language_words(text)
    if not words:
        raise TranscriptError(f"{where}: transcript has no words to align")
    ipa_of.update(language_pronunciations([w for w in words if w not in ipa_of], language))
    return words, [[tuple(ipa_of[w])] for w in words]


def _relabel_phones(words: list, phones: list, ipa_of: dict) -> list:
    """The phones tier with each word's phones written as the language's IPA (``ipa_of``), where
    the word was aligned with as many phones (always, unless a pause split it)."""
    out = list(phones)
    k = 0
    for w in words:
        inside = []
        while k < len(out) and out[k].start_s < w.end_s - 1e-9:
            if out[k].start_s >= w.start_s - 1e-9 and out[k].label.strip():
                inside.append(k)
            k += 1
        ipa = ipa_of.get(w.label)
        if ipa is not None and len(inside) == len(ipa):
            for i, label in zip(inside, ipa):
                out[i] = out[i]._replace(label=label)
    return out


def align_transcript(audio, transcript, model=None, kind: str = "auto", phone_set: str = "auto",
                     split_stops: bool | None = None, dictionary=None, oov: str = "g2p",
                     sr: int | None = None, name: str | None = None, language: str | None = None,
                     phone_map=None, on_scored: Optional[Callable[[ScoredRecording], None]] = None,
                     dialect: str = DEFAULT_DIALECT, glottal_onsets: bool = True) -> Alignment:
    """Align ``audio`` to a phone or words transcript (``kind``: ``auto``, ``phones``, ``words``;
    see :func:`aligner.io.transcripts.transcript_kind`): :func:`align` or :func:`align_words`,
    as an :class:`Alignment`.

    ``on_scored``: called once, after a successful alignment, with the
    :class:`ScoredRecording` (samples, MFCC frames, decoder, classifier scores) when the
    recording was read and scored whole (not called otherwise), for a caller that works on the
    same recording next and can reuse them (``aligner vowels``' fusion). The alignment is the
    same with or without it. ``dialect``, ``glottal_onsets``: of a words transcript (:func:`align_words`)."""
    from aligner.io.transcripts import transcript_kind

    check_dialect(dialect)
    check_phone_map(language, phone_map)
    if language is not None:  # an unknown language, or its missing pack: before any model is loaded
        from aligner.phones.languages import check_language

        check_language(language)
    model = load_model(model, wants_universal(phone_set, language))
    universal = isinstance(model, UniversalModel)
    if language is not None:
        kind = "words"  # a language's words, through its G2P
    elif kind == "auto" and (universal or wants_universal(phone_set)):
        # phones in IPA (a TextGrid's phones tier too); words need an IPA dictionary
        kind = "words" if dictionary is not None else "phones"
    elif kind == "auto" and model.phone_set is not None and dictionary is None:
        kind = "phones"  # a model of its own phones reads phone transcripts in its symbols (words need a dictionary)
    if transcript_kind(transcript, kind) == "words":
        return align_words(audio, transcript, model, dictionary, oov, sr=sr, name=name, language=language,
                           phone_map=phone_map, on_scored=on_scored, phone_set=phone_set, dialect=dialect,
                           glottal_onsets=glottal_onsets)
    return align_phones_reviewed(audio, transcript, model, phone_set, name=name, split_stops=split_stops, sr=sr,
                                 on_scored=on_scored)


def output_path(audio, fmt: str = "textgrid") -> Path:
    """The default output beside ``audio``: its stem with the format's suffix (``.TextGrid``,
    ``.json``, ``.csv``)."""
    from aligner.io.exports import SUFFIXES

    return Path(audio).with_suffix(SUFFIXES[fmt])


def check_output_not_input(out, *inputs) -> None:
    """Refuse (one-line :class:`AlignerError`) an output path that is, or resolves to, an input.
    A new output (nothing there yet) is no existing input, so the inputs are not resolved then."""
    target = Path(out).resolve()
    if not target.exists():
        return
    for item in inputs:
        if isinstance(item, (str, os.PathLike)) and os.path.exists(item) and Path(item).resolve() == target:
            raise AlignerError(f"{out}: the output would overwrite the input {item}; choose another -o")


def align_file(audio, transcript, out=None, model=None, phone_set: str = "auto",
               split_stops: bool | None = None, kind: str = "auto", fmt: str = "textgrid",
               dictionary=None, oov: str = "g2p", oovs: dict | None = None,
               confidence_tiers: bool = False, dialect: str = DEFAULT_DIALECT) -> Path:
    """Align one file and write its alignment (``fmt``: ``textgrid``, ``json`` or ``csv``);
    ``out`` defaults to :func:`output_path`. A phone transcript gives a ``phones`` tier, a words
    transcript ``words`` and ``phones`` tiers (:func:`align_transcript`). Refuses an ``out``
    that is the audio, the transcript or the dictionary. ``oovs``, if given, receives the unknown
    words and the pronunciations the G2P gave them. CSV and JSON carry each interval's start
    confidence when the model has a confidence model; a TextGrid does with ``confidence_tiers``
    (point tiers). See :func:`align_file_reviewed` for the review itself. ``dialect``: as for
    :func:`align_words`.
    """
    out, result = _align_and_write(audio, transcript, out, model, phone_set, split_stops, kind, fmt,
                                   dictionary, oov, confidence_tiers, dialect=dialect)
    if oovs is not None:
        oovs.update(result.oovs)
    return out


def align_file_reviewed(audio, transcript, out=None, model=None, phone_set: str = "auto",
                        split_stops: bool | None = None, kind: str = "auto", fmt: str = "textgrid",
                        dictionary=None, oov: str = "g2p", confidence_tiers: bool = False,
                        language: str | None = None, phone_map=None,
                        dialect: str = DEFAULT_DIALECT) -> tuple[Path, Alignment]:
    """:func:`align_file`, returning ``(path written, the Alignment written there)`` (its
    confidences, transcript check and unknown words); ``language``, ``phone_map``, ``dialect``: as
    for :func:`align_words`."""
    return _align_and_write(audio, transcript, out, model, phone_set, split_stops, kind, fmt, dictionary, oov,
                            confidence_tiers, language, phone_map, dialect)


def _align_and_write(audio, transcript, out, model, phone_set, split_stops, kind, fmt, dictionary,
                     oov, confidence_tiers: bool = False, language=None, phone_map=None,
                     dialect: str = DEFAULT_DIALECT) -> tuple[Path, Alignment]:
    """:func:`align_file`'s work: the path written and the :class:`Alignment` written there."""
    from aligner.io.exports import write_alignment

    out = Path(out) if out is not None else output_path(audio, fmt)
    check_output_not_input(out, audio, transcript, dictionary)
    result = align_transcript(audio, transcript, model, kind, phone_set, split_stops, dictionary, oov,
                              language=language, phone_map=phone_map, dialect=dialect)
    return write_alignment(out, result.tiers, result.duration_s, fmt, speaker=Path(audio).stem,
                           confidences=result.confidences or None, confidence_tiers=confidence_tiers), result


def warm_up(model: AlignmentModel) -> None:
    """Compile (or load from numba's cache) the decoder once, on a tiny synthetic utterance,
    with its review (the boundary confidences' numba functions) when the model has a
    confidence model, as every corpus file is aligned: forked workers then inherit all of it
    and no file pays a cache load (the check of long silent edges' frame energies too, which
    this utterance is too short to reach)."""
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(SAMPLE_RATE // 2)).astype(np.float32)
    from aligner.alignment.decoding.silent_edges import energy_speech_span
    from aligner.phones.sets import get_phone_set

    energy_speech_span(samples)

    if isinstance(model, UniversalModel):  # a view of one phone between silences
        view = model.view([SILENCE_CLASS, "a"])
        view.align_with_review(samples, [SILENCE_CLASS, "a", SILENCE_CLASS], view.phone_set, name="<warm-up>",
                               review=False)
        return
    if model.phone_set is None:
        symbols, pset = ["h#", "aa", "h#"], get_phone_set("timit61")
    else:  # the model's silence around one of its other phones
        silence, other = _own_warm_up_symbols(model)
        symbols, pset = [silence, other, silence], model.phone_set
    model.align_with_review(samples, symbols, pset, name="<warm-up>", review=model.confidence is not None)


def _own_warm_up_symbols(model: AlignmentModel) -> tuple[str, str]:
    """``(a silence symbol, a symbol of another class)`` of a model trained on its own phones."""
    pset, silence = model.phone_set, model.inventory.silence
    return (next(s for s in pset.symbols if pset.class_of(s) == silence),
            next(s for s in pset.symbols if pset.class_of(s) != silence))


def warm_up_words(model: AlignmentModel) -> None:
    """Compile (or load from numba's cache) the pronunciation-graph decoder once."""
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(SAMPLE_RATE // 2)).astype(np.float32)
    dictionary = None
    if isinstance(model, UniversalModel) or model.phone_set is not None:  # one word of one of its phones
        from aligner.words.dictionary import PronouncingDictionary

        phone = "a" if isinstance(model, UniversalModel) else _own_warm_up_symbols(model)[1]
        dictionary = PronouncingDictionary({"a": [phone]})
    align_words(samples, "a", model, dictionary=dictionary, sr=SAMPLE_RATE, name="<warm-up>")
