"""Reading a short 16 kHz 16-bit mono PCM WAV file (a CVC cut) without libsndfile's per-file set-up.

:func:`read_pcm16_mono` returns exactly what :func:`aligner.io.audio.load_audio` returns for
such a file (float32 samples ``int16 / 32768``, the mean removed by the same
:func:`aligner.io.audio._mono_at_rate`), or ``None`` for anything else - another format,
rate, width or channel count, an extensible header, a truncated or odd data chunk, a file
too short or empty - which the caller then reads with ``load_audio`` (and its errors).
The whole file is read in one call and its RIFF header parsed here, without opening it
through libsndfile.
"""

from __future__ import annotations

import struct

import numpy as np

from aligner.frames import SAMPLE_RATE

#: files larger than this (bytes, about 32 s) are left to ``load_audio``
MAX_BYTES = 1 << 20

#: libsndfile's scale of 16-bit samples to float (``1 / 0x8000``; exact in float32)
_SCALE = np.float32(1.0 / 0x8000)


def _pcm16_data(raw: bytes):
    """``(offset, n_bytes)`` of the sample data of a canonical 16 kHz mono PCM-16 RIFF WAVE file
    (chunks other than ``fmt `` and ``data`` skipped), or None."""
    if len(raw) < 12 or raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        return None
    pos, fmt_ok = 12, False
    while pos + 8 <= len(raw):
        tag = raw[pos:pos + 4]
        size = struct.unpack_from("<I", raw, pos + 4)[0]
        body = pos + 8
        if tag == b"fmt ":
            if size not in (16, 18) or body + 16 > len(raw):
                return None
            fmt, channels, rate, _, align, bits = struct.unpack_from("<HHIIHH", raw, body)
            if (fmt, channels, rate, align, bits) != (1, 1, SAMPLE_RATE, 2, 16):
                return None
            fmt_ok = True
        elif tag == b"data":
            if not fmt_ok or size == 0 or size % 2 or body + size > len(raw):
                return None
            return body, size
        elif tag not in (b"LIST", b"fact", b"PEAK", b"cue "):
            return None
        pos = body + size + (size & 1)
    return None


def read_pcm16_mono(path, min_seconds: float = 0.05):
    """float32 samples of a 16 kHz mono 16-bit PCM WAV file as ``load_audio(path)`` gives them,
    or None when the file is not that simple (read it with ``load_audio``). Raises what
    ``load_audio`` raises for a silent file (:class:`~aligner.errors.AudioError`)."""
    from aligner.io.audio import _mono_at_rate

    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_BYTES:
        return None
    where = _pcm16_data(raw)
    if where is None:
        return None
    offset, size = where
    n = size // 2
    if n / SAMPLE_RATE < min_seconds:
        return None
    data = np.frombuffer(raw, dtype="<i2", count=n, offset=offset).astype(np.float32)
    data *= _SCALE
    return _mono_at_rate(data.reshape(n, 1), SAMPLE_RATE, SAMPLE_RATE, str(path), owned=True)
