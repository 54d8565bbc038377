"""Reading recordings: any soundfile-readable file to float32 mono samples at 16 kHz.

Durations and lengths here are in seconds or in samples, as each name says.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import soundfile as sf

from aligner.errors import AudioError
from aligner.frames import SAMPLE_RATE
from aligner.io.room_tone import FlatScan, RoomTone, with_room_tone
from aligner.io.sphere_repair import looks_newline_damaged, missing_bytes, read_sphere_header_file, repair_lost_crs

__all__ = [
    "SAMPLE_RATE",
    "AUDIO_EXTENSIONS",
    "SILENCE_PEAK",
    "is_audio_path",
    "load_audio",
    "samples_at_model_rate",
    "audio_duration",
]

#: File extensions taken for audio (compared case-insensitively). TIMIT's ``.wav`` files are NIST
#: SPHERE inside; soundfile recognises the format from the header, not from the extension.
AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3", ".sph")

#: A recording whose peak absolute amplitude (full scale = 1.0) is below this is taken as silent.
#: 1e-4 is about 3 steps of 16-bit audio, so dither alone counts as silence.
SILENCE_PEAK = 1e-4


def is_audio_path(path: str | os.PathLike) -> bool:
    """True if ``path`` ends in one of :data:`AUDIO_EXTENSIONS` (any case)."""
    return Path(path).suffix.lower() in AUDIO_EXTENSIONS


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise AudioError(f"{path}: audio file not found")
    if path.is_dir():
        raise AudioError(f"{path}: is a directory, not an audio file")


def _unreadable(path: Path, exc: Exception) -> AudioError:
    """An AudioError for a file soundfile cannot decode, with libsndfile's reason on one line."""
    # LibsndfileError.error_string is libsndfile's reason without the "Error opening <path>" prefix.
    reason = " ".join((getattr(exc, "error_string", None) or str(exc)).split())
    try:
        with open(path, "rb") as f:
            is_sphere = f.read(8).startswith(b"NIST_1A")
    except OSError:
        is_sphere = False
    hint = (
        " (a NIST SPHERE file libsndfile cannot decode, probably shorten-compressed: "
        "convert it with sph2pipe first)"
        if is_sphere
        else ""
    )
    return AudioError(f"{path}: not a readable audio file: {reason}{hint}")


class RepairedAudioWarning(UserWarning):
    """A damaged recording was repaired on reading (the message says how)."""


def _read_damaged_sphere(path: Path):
    """``(samples (n, channels) float32, rate)`` of a NIST SPHERE file damaged by newline
    conversion, repaired (:mod:`aligner.io.sphere_repair`) with a :class:`RepairedAudioWarning`;
    None for any file that is not SPHERE or is intact (read it as usual). Raises
    :class:`AudioError` when the damage is found but cannot be undone."""
    header = read_sphere_header_file(path)  # the header only: intact files are read once, by soundfile
    if header is None:
        return None
    try:
        lost = missing_bytes(header, path.stat().st_size)
        if not looks_newline_damaged(header, lost):
            return None  # intact, or truncated (read what is there), or compressed
        raw = path.read_bytes()
    except OSError:
        return None
    x = repair_lost_crs(raw, header)
    if x is None:
        raise AudioError(
            f"{path}: NIST SPHERE payload is {lost} byte(s) short of its header's sample_count and the "
            "rest reads as noise (damaged, e.g. by a text-mode copy); re-copy the file in binary mode")
    warnings.warn(f"{path}: repaired {lost} byte(s) lost to a newline conversion (CR LF -> LF) in this "
                  "NIST SPHERE file; re-copy it in binary mode to be safe", RepairedAudioWarning, stacklevel=3)
    channels = max(header.channel_count, 1)
    return (x.reshape(-1, channels) / 32768.0).astype(np.float32), header.sample_rate


def load_audio(
    path: str | os.PathLike, sample_rate: int = SAMPLE_RATE, min_seconds: float = 0.05
) -> np.ndarray:
    """Read a recording as float32 mono samples at ``sample_rate`` Hz, full scale +-1.

    Reads whatever soundfile (libsndfile) reads - WAV, FLAC, OGG, NIST SPHERE (TIMIT) - whatever
    the extension. A SPHERE file that lost bytes to a newline conversion (a text-mode copy) is
    repaired, with a :class:`RepairedAudioWarning` (:mod:`aligner.io.sphere_repair`). Channels are averaged to mono; any other sample rate is resampled with
    ``librosa.resample(res_type="soxr_hq")``. The constant offset (the mean, DC) is removed;
    amplitudes are not otherwise normalised. Digital silence (a stretch of 10 ms or more whose
    samples stay flat at either end, or of 0.25 s or more inside: an editor's zeros) is read as the
    recording's own room tone (:mod:`aligner.io.room_tone`).

    Raises :class:`AudioError` naming the file if it is missing, a directory, not decodable
    audio, holds no samples or NaN/inf samples, lasts less than ``min_seconds`` seconds, or is
    silent (peak absolute amplitude below :data:`SILENCE_PEAK`).
    """
    path = Path(path)
    _check_exists(path)
    repaired = _read_damaged_sphere(path)
    if repaired is not None:
        data, file_rate = repaired
    else:
        try:
            data, file_rate = _read_float32(path)  # (samples, channels)
        except (sf.SoundFileError, RuntimeError) as exc:
            raise _unreadable(path, exc) from None
        except OSError as exc:
            raise AudioError(f"{path}: cannot read audio file ({exc.strerror or exc})") from None

    n_samples = data.shape[0]
    if n_samples == 0:
        raise AudioError(f"{path}: audio file holds no samples")
    n_bad = _count_non_finite(data)
    if n_bad:
        raise AudioError(f"{path}: audio holds {n_bad} NaN or infinite sample values")
    seconds = n_samples / file_rate
    if seconds < min_seconds:
        raise AudioError(
            f"{path}: audio lasts {seconds:.4f} s ({n_samples} samples at {file_rate} Hz), "
            f"shorter than the minimum {min_seconds} s"
        )

    return _mono_at_rate(data, file_rate, sample_rate, str(path), owned=True)


def _read_block(f: "sf.SoundFile", frames: int = -1) -> np.ndarray:
    """The next ``frames`` samples (-1: all the rest) of an open file as (n, channels) float32,
    full scale +-1, as ``f.read(dtype="float32")`` gives them. 16-bit PCM (most WAV, FLAC and
    SPHERE files) is read as integers and scaled here, ``x * 2**-15`` (exact in float32: the
    very values libsndfile gives), because libsndfile's own conversion costs more than the
    reading."""
    if f.subtype == "PCM_16":
        data = f.read(frames, dtype="int16", always_2d=True).astype(np.float32)
        data *= np.float32(2.0 ** -15)
        return data
    return f.read(frames, dtype="float32", always_2d=True)


def _read_float32(path: Path) -> tuple[np.ndarray, int]:
    """``(samples (n, channels) float32 full scale +-1, rate in Hz)`` of an audio file
    (:func:`_read_block`)."""
    with sf.SoundFile(os.fsencode(path)) as f:
        return _read_block(f), f.samplerate


#: a mean below this (full scale; about a thirtieth of a 16-bit step) is not removed
DC_NEGLIGIBLE = 2.0 ** -20


def _mono(data: np.ndarray) -> np.ndarray:
    """(samples, channels) float32 -> (samples,) float32: the one channel itself (a view), or
    the channels' mean."""
    return data[:, 0] if data.shape[1] == 1 else data.mean(axis=1, dtype=np.float32)


def _count_non_finite(data: np.ndarray, block: int = 1 << 20) -> int:
    """NaN and infinite values in ``data``, counted block by block (no full-size temporary)."""
    flat = data.reshape(-1)
    return sum(int(np.count_nonzero(~np.isfinite(flat[i:i + block]))) for i in range(0, flat.size, block))


def _mono_at_rate(data: np.ndarray, rate: int, sample_rate: int, name: str, owned: bool = False) -> np.ndarray:
    """(samples, channels) float32 -> mono float32 at ``sample_rate``. Refuses silence, judged
    around the signal's mean, so that a constant offset with nothing on it (no speech energy)
    is refused too. The mean (a constant DC offset) is subtracted, and digital silence is
    replaced by room tone (:func:`aligner.io.room_tone.with_room_tone`). ``owned``: ``data``
    belongs to the caller of this function alone and may be changed in place."""
    mono = _mono(data)
    offset = float(np.mean(mono, dtype=np.float64))
    peak = max(float(np.max(mono)) - offset, offset - float(np.min(mono)))  # no copy of a long recording
    if peak < SILENCE_PEAK:
        detail = " after mixing its channels to mono" if data.shape[1] > 1 else ""
        dc = f", around a constant offset of {offset:.2g}" if abs(offset) >= SILENCE_PEAK else ""
        raise AudioError(
            f"{name}: audio is silent{detail} (peak amplitude {peak:.2g} < {SILENCE_PEAK:g} of full scale{dc})"
        )
    # remove the constant offset (DC): it raises every frame's energy and blurs silences. One
    # below DC_NEGLIGIBLE is left (so samples already without offset come back unchanged).
    fresh = owned
    if abs(offset) >= DC_NEGLIGIBLE:
        if owned:
            mono -= np.float32(offset)  # in place: no second copy of a long recording
        else:
            mono, fresh = mono - np.float32(offset), True
    if rate != sample_rate:
        import librosa  # only to resample: importing it costs start-up time

        mono, fresh = librosa.resample(mono, orig_sr=rate, target_sr=sample_rate, res_type="soxr_hq"), True
    out = np.ascontiguousarray(mono, dtype=np.float32)
    return with_room_tone(out, owned=fresh and out.flags.writeable)


#: samples read at once by :class:`FileSamples` (about 4 s at 16 kHz)
_STREAM_BLOCK = 1 << 16


class SampleReader:
    """Base of recordings read on demand, slice by slice (n,) float32 samples: ``len()``,
    ``shape``, ``ndim``, ``dtype``, indexing by an int or a slice of step 1 (what
    :func:`aligner.features.mfcc.mfcc_features` reads) and ``close()``. A subclass sets ``n``
    and reads samples ``start .. stop`` in ``_read(start, stop)``."""

    ndim = 1
    dtype = np.dtype(np.float32)
    n: int = 0

    @property
    def shape(self) -> tuple:
        return (self.n,)

    def __len__(self) -> int:
        return self.n

    def _read(self, start: int, stop: int) -> np.ndarray:
        raise NotImplementedError

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(self.n)
            if step != 1:
                raise ValueError(f"{type(self).__name__} reads contiguous slices only")
            return self._read(start, max(start, stop))
        i = int(index)
        i = i + self.n if i < 0 else i
        if not 0 <= i < self.n:
            raise IndexError(f"sample {index} outside 0..{self.n - 1}")
        return self._read(i, i + 1)[0]

    def close(self) -> None:
        """Close what the samples are read from (its ``source``'s ``close()``, if any)."""
        close = getattr(getattr(self, "source", None), "close", None)
        if close is not None:
            close()


class BlockFilteredSamples(SampleReader):
    """Samples (n,) of ``source`` (an array-like read by slices) passed through a filter on
    demand, block by block, so memory stays bounded whatever the recording's length: block k
    holds samples ``k * B .. (k + 1) * B`` (B: ``block_s`` seconds), filtered as part of that
    block and ``margin_s`` seconds of context on either side; a recording no longer than one block
    and its margin is one block. The last two blocks read are kept, so reading a recording front
    to back, in slices that may overlap, filters each block once. A subclass filters float64
    samples (m,) into (m,) in ``_filter(x)``."""

    def __init__(self, source, block_s: float, margin_s: float):
        self.source, self.n = source, len(source)
        self.block = int(round(block_s * SAMPLE_RATE))
        self.margin = int(round(margin_s * SAMPLE_RATE))
        if self.n <= self.block + self.margin:
            self.block = max(self.n, 1)
        self._kept: dict = {}  # block number -> its samples: the last two blocks read

    def _filter(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @property
    def one_block(self) -> bool:
        """Whether the whole recording is filtered as one block."""
        return self.block >= self.n

    def _block(self, k: int) -> np.ndarray:
        if k not in self._kept:
            start, stop = k * self.block, min(self.n, (k + 1) * self.block)
            lo, hi = (start, stop) if self.one_block else (max(0, start - self.margin),
                                                          min(self.n, stop + self.margin))
            part = self._filter(np.asarray(self.source[lo:hi], np.float64))
            if len(self._kept) >= 2:  # a slice across a block's edge needs both blocks
                del self._kept[max(self._kept, key=lambda j: abs(j - k))]
            self._kept[k] = np.asarray(part[start - lo:stop - lo], np.float32)
        return self._kept[k]

    def _read(self, start: int, stop: int) -> np.ndarray:
        out = np.empty(stop - start, np.float32)
        k = start // self.block
        while k * self.block < stop:
            b0 = k * self.block
            lo, hi = max(start, b0), min(stop, b0 + self.block)
            out[lo - start:hi - start] = self._block(k)[lo - b0:hi - b0]
            k += 1
        return out

    def filtered(self):
        """The whole recording filtered: an array when ``source`` is one and the recording is one
        block, else this reader."""
        return self[0:self.n] if isinstance(self.source, np.ndarray) and self.one_block else self


class SplicedSamples(SampleReader):
    """The samples of ``source`` (an array-like read by slices, such as a :class:`FileSamples`)
    in ``ranges`` [(start, stop)] (samples, in order, not overlapping), joined end to end and read
    on demand: a recording with stretches left out, held in memory no more than its source is."""

    def __init__(self, source, ranges: list):
        self.source = source
        self.ranges = [(int(a), int(b)) for a, b in ranges]
        lengths = np.array([b - a for a, b in self.ranges], np.int64)
        if len(lengths) == 0 or np.any(lengths < 0) or self.ranges[-1][1] > len(source) or self.ranges[0][0] < 0:
            raise ValueError(f"ranges {ranges} do not lie in order within the source's {len(source)} samples")
        self.firsts = np.concatenate([[0], np.cumsum(lengths)])  # where each range starts in the joined samples
        self.n = int(self.firsts[-1])

    def _read(self, start: int, stop: int) -> np.ndarray:
        parts = []
        k = int(np.searchsorted(self.firsts, start, side="right")) - 1
        while start < stop and k < len(self.ranges):
            a, b = self.ranges[k]
            lo = a + start - int(self.firsts[k])
            hi = min(b, lo + stop - start)
            parts.append(np.asarray(self.source[lo:hi], np.float32))
            start += hi - lo
            k += 1
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)


def samples_between(samples, start: int, stop: int):
    """Samples ``start .. stop`` (clipped to the recording) of ``samples`` (n,): a slice of an array,
    or a :class:`SplicedSamples` that reads them on demand from a recording read so (a
    :class:`FileSamples`), so a long recording's part is not loaded whole."""
    stop = min(int(stop), len(samples))
    if isinstance(samples, np.ndarray):
        return samples[start:stop]
    return SplicedSamples(samples, [(start, max(start, stop))])


class FileSamples(SampleReader):
    """A long recording's samples read from its file on demand: float32 mono at 16 kHz, full
    scale +-1, the mean (DC) removed as :func:`load_audio` removes it, without holding the
    recording in memory. Supports ``len()``, ``shape``, ``ndim``, ``dtype`` and indexing by an
    int or a slice (step 1), which is how :func:`aligner.features.mfcc.mfcc_features` reads it.

    Digital silence is read as ``room_tone`` (None: the file has none to replace), as
    :func:`load_audio` reads it (:mod:`aligner.io.room_tone`).

    Build with :func:`file_samples`, which checks the file as :func:`load_audio` does (one pass
    over it, block by block).
    """

    def __init__(self, path: Path, n_samples: int, offset: float, room_tone: RoomTone | None = None):
        self.path, self.n, self.offset = Path(path), int(n_samples), float(offset)
        self.room_tone = room_tone
        self._file = None

    def _read(self, start: int, stop: int) -> np.ndarray:
        samples = self._read_file(start, stop)
        return samples if self.room_tone is None else self.room_tone.fill(samples, start)

    def _read_file(self, start: int, stop: int) -> np.ndarray:
        if self._file is None:
            self._file = sf.SoundFile(os.fsencode(self.path))
        self._file.seek(start)
        data = _read_block(self._file, stop - start)
        mono = _mono(data)
        if abs(self.offset) >= DC_NEGLIGIBLE:
            mono = mono - np.float32(self.offset)
        return np.ascontiguousarray(mono, dtype=np.float32)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def file_samples(path: str | os.PathLike, min_seconds: float = 0.05) -> FileSamples | None:
    """A :class:`FileSamples` for a recording at 16 kHz that soundfile reads, checked as
    :func:`load_audio` checks (no samples, NaN or infinite samples, too short, silent) in one pass
    over the file; None when it needs resampling or a SPHERE repair (load it whole then)."""
    path = Path(path)
    _check_exists(path)
    if _read_damaged_sphere_header_only(path):
        return None
    info = _header(path)
    if info.samplerate != SAMPLE_RATE or info.frames <= 0:
        return None
    total, lo, hi, n_bad, n = 0.0, np.inf, -np.inf, 0, 0
    scan = FlatScan(info.frames)
    try:
        with sf.SoundFile(os.fsencode(path)) as f:
            while True:
                data = _read_block(f, _STREAM_BLOCK)
                if not len(data):
                    break
                n_bad += int(np.count_nonzero(~np.isfinite(data)))
                mono = _mono(data)
                if not n_bad:
                    scan.add(mono)
                total += float(np.sum(mono, dtype=np.float64))
                lo, hi, n = min(lo, float(np.min(mono))), max(hi, float(np.max(mono))), n + len(mono)
    except (sf.SoundFileError, RuntimeError) as exc:
        raise _unreadable(path, exc) from None
    if n == 0:
        raise AudioError(f"{path}: audio file holds no samples")
    if n_bad:
        raise AudioError(f"{path}: audio holds {n_bad} NaN or infinite sample values")
    if n / SAMPLE_RATE < min_seconds:
        raise AudioError(f"{path}: audio lasts {n / SAMPLE_RATE:.4f} s ({n} samples at {SAMPLE_RATE} Hz), "
                         f"shorter than the minimum {min_seconds} s")
    offset = total / n
    peak = max(hi - offset, offset - lo)
    if peak < SILENCE_PEAK:
        dc = f", around a constant offset of {offset:.2g}" if abs(offset) >= SILENCE_PEAK else ""
        raise AudioError(f"{path}: audio is silent (peak amplitude {peak:.2g} < {SILENCE_PEAK:g} of full scale{dc})")
    return FileSamples(path, n, offset, scan.room_tone(offset if abs(offset) >= DC_NEGLIGIBLE else 0.0))


def _read_damaged_sphere_header_only(path: Path) -> bool:
    """True for a NIST SPHERE file whose payload lost bytes (it is repaired by loading it whole)."""
    header = read_sphere_header_file(path)
    if header is None:
        return False
    try:
        return looks_newline_damaged(header, missing_bytes(header, path.stat().st_size))
    except OSError:
        return False


def samples_at_model_rate(y: np.ndarray, sr: int, name: str = "<samples>",
                          sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Samples given in memory, librosa's ``(y, sr)`` convention, as float32 mono at ``sample_rate``.

    ``y``: shape (n,) mono, or (channels, n) as librosa returns multichannel audio (averaged
    to mono); any float or integer dtype (integers are scaled to full scale +-1). ``sr``: its
    sample rate in Hz; other rates are resampled as :func:`load_audio` does. Raises
    :class:`AudioError` naming ``name`` for empty, non-finite or silent samples.
    """
    y = np.asarray(y)
    if isinstance(sr, bool) or not isinstance(sr, (int, np.integer)) or sr <= 0:
        raise AudioError(f"{name}: sample rate must be a positive integer in Hz, got {sr!r}")
    if y.ndim not in (1, 2):
        raise AudioError(f"{name}: samples must have shape (n,) or (channels, n), got {y.shape}")
    if np.issubdtype(y.dtype, np.integer):
        y = y.astype(np.float32) / float(np.iinfo(y.dtype).max + 1)
    data = np.asarray(y, dtype=np.float32).reshape(1, -1).T if y.ndim == 1 else np.asarray(y, np.float32).T
    if data.shape[0] == 0:
        raise AudioError(f"{name}: no samples")
    if not np.all(np.isfinite(data)):
        raise AudioError(f"{name}: samples hold NaN or infinite values")
    return _mono_at_rate(data, int(sr), sample_rate, name)


def audio_duration(path: str | os.PathLike) -> float:
    """Duration of a recording in seconds, read from its header without decoding the samples
    (and kept for the path while the file's size, modification time and inode stay the same).

    Raises :class:`AudioError` naming the file if it is missing, a directory or not audio.
    """
    path = Path(path)
    try:
        st = os.stat(path)
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        key = None
    hit = _DURATIONS.get(str(path)) if key is not None else None
    if hit is not None and hit[0] == key:
        return hit[1]
    _check_exists(path)
    info = _header(path)
    seconds = info.frames / info.samplerate
    if key is not None:
        if len(_DURATIONS) >= _DURATIONS_KEPT:
            _DURATIONS.clear()
        _DURATIONS[str(path)] = (key, seconds)
    return seconds


#: path -> ((size, modification time, inode), seconds) of the recordings :func:`audio_duration`
#: read last (a batch asks for one recording's duration more than once)
_DURATIONS: dict = {}
_DURATIONS_KEPT = 256


class AudioHeader(NamedTuple):
    """What a recording's header says: ``frames`` (samples per channel) at ``samplerate`` Hz."""
    frames: int
    samplerate: int


def _header(path: Path) -> AudioHeader:
    """The header of ``path`` (the file opened, nothing decoded; ``sf.info`` would also build
    format descriptions, which cost half as much again); :class:`AudioError` naming it if
    unreadable."""
    try:
        with sf.SoundFile(os.fsencode(path)) as f:
            return AudioHeader(f.frames, f.samplerate)
    except (sf.SoundFileError, RuntimeError) as exc:
        raise _unreadable(path, exc) from None
    except OSError as exc:
        raise AudioError(f"{path}: cannot read audio file ({exc.strerror or exc})") from None
