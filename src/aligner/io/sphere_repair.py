"""Detecting and undoing newline-conversion damage in NIST SPHERE (TIMIT) files.

A SPHERE file copied as *text* (an FTP transfer in ASCII mode, a ``git`` or editor
end-of-line conversion) has every CR LF byte pair (``0D 0A``) turned into LF (``0A``) and
every other CR into LF. In 16-bit audio that loses one byte wherever a sample pair happened
to hold ``0D 0A``: from there on every sample is read from the wrong byte pair, which
sounds like full-scale white noise, until the next lost byte flips the parity back. The
header still records the true ``sample_count`` (and usually ``sample_min``/``sample_max``),
so the damage is detectable: the payload is ``2 * sample_count - n`` bytes long.

:func:`repair_lost_crs` puts the lost CR bytes back. For each lost byte it finds the first
stretch where reading the stream one byte later is much smoother (mean absolute difference of
consecutive samples) than reading it as is, and inserts ``0D`` before the ``0A`` near that
point that makes the audio smoothest; a final pass moves each insertion to the nearby ``0A``
that best keeps the samples within the header's ``sample_min``..``sample_max``. The result is
accepted only if it has exactly ``sample_count`` samples, no stretch still reads better
shifted, and (when the header has them) every sample lies within ``sample_min``..``sample_max``
(a lone CR turned into LF changes one byte by 3, which can move a sample by 3 or 768 units:
allowed for). How many recordings of the shared TIMIT sample it recovers is in docs/results.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

HEADER_MAGIC = b"NIST_1A"
_WINDOW = 48  #: samples per roughness window
#: a CR turned into LF in a sample's high byte moves it by 3 * 256: the slack allowed around the
#: header's ``sample_min``/``sample_max``
LONE_CR_SLACK = 768
#: more lost bytes than this is taken as a truncated file, not newline damage
MAX_LOST_BYTES = 64


@dataclass
class SphereHeader:
    """The fields of a NIST SPHERE header this module needs."""

    header_bytes: int
    sample_count: int
    sample_rate: int
    channel_count: int
    sample_n_bytes: int
    byte_format: str  #: "01" little-endian, "10" big-endian
    coding: str  #: "pcm" unless the header names another (e.g. shorten)
    sample_min: Optional[int]
    sample_max: Optional[int]


def read_sphere_header(data: bytes) -> Optional[SphereHeader]:
    """The header of a SPHERE file's bytes, or None if ``data`` is not SPHERE."""
    if not data.startswith(HEADER_MAGIC):
        return None
    try:
        size = int(data[8:16].strip())
        text = data[:size].decode("latin-1")
    except ValueError:
        return None

    def field(name: str, default=None):
        m = re.search(rf"^{name} -(?:i|s\d+) (\S+)", text, re.M)
        return m.group(1) if m else default

    def int_field(name: str, default=None):
        v = field(name)
        try:
            return int(v) if v is not None else default
        except ValueError:
            return default

    count = int_field("sample_count")
    if count is None:
        return None
    return SphereHeader(size, count, int_field("sample_rate", 16000), int_field("channel_count", 1), int_field("sample_n_bytes", 2),
                        field("sample_byte_format", "01"), field("sample_coding", "pcm"),
                        int_field("sample_min"), int_field("sample_max"))


def read_sphere_header_file(path) -> Optional[SphereHeader]:
    """The header of the SPHERE file at ``path`` (reading the header only), or None if the file
    is not SPHERE or cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            if not head.startswith(HEADER_MAGIC):
                return None
            try:
                size = int(head[8:16].strip())
            except ValueError:
                return None
            return read_sphere_header(head + f.read(max(size - len(head), 0)))
    except OSError:
        return None


def missing_bytes(header: SphereHeader, file_size: int) -> int:
    """How many bytes a file of ``file_size`` bytes lacks against its header's sample count
    (0 = intact)."""
    expected = header.sample_count * header.channel_count * header.sample_n_bytes
    return expected - (file_size - header.header_bytes)


def looks_newline_damaged(header: SphereHeader, n_lost: int) -> bool:
    """True if an uncompressed file short by ``n_lost`` bytes (a few, not a truncation) may have
    lost them to a newline conversion."""
    return 0 < n_lost <= MAX_LOST_BYTES and header.coding.lower() == "pcm"


def samples_outside_range(x: np.ndarray, header: SphereHeader, slack: int = LONE_CR_SLACK) -> np.ndarray:
    """(n,) bool: samples ``x`` (integer units) beyond the header's ``sample_min``/``sample_max``
    by more than ``slack``; all False when the header records no range."""
    x = np.asarray(x)
    if header.sample_min is None or header.sample_max is None:
        return np.zeros(x.shape, bool)
    return (x < header.sample_min - slack) | (x > header.sample_max + slack)


def _samples(buf: bytes, shift: int = 0, big_endian: bool = False) -> np.ndarray:
    b = buf[shift:]
    return np.frombuffer(b[: len(b) // 2 * 2], ">i2" if big_endian else "<i2").astype(np.int64)


def _roughness(x: np.ndarray) -> np.ndarray:
    """Mean |x[t+1] - x[t]| over the window of :data:`_WINDOW` differences starting at each t."""
    r = np.abs(np.diff(x)).astype(np.float64)
    c = np.concatenate([[0.0], np.cumsum(r)])
    start = np.arange(len(r))
    end = np.minimum(start + _WINDOW, len(r))
    return (c[end] - c[start]) / np.maximum(end - start, 1)


def _misread(buf: bytes, big_endian: bool) -> np.ndarray:
    """Boolean per sample: reading one byte later is much smoother here (wrong byte parity)."""
    ra = _roughness(_samples(buf, 0, big_endian))
    rb = _roughness(_samples(buf, 1, big_endian))
    n = min(len(ra), len(rb))
    return ra[:n] > 4.0 * rb[:n] + 200.0


def _insert(payload: bytes, positions: list) -> bytes:
    out, prev = [], 0
    for p in sorted(positions):
        out += [payload[prev:p], b"\r"]
        prev = p
    out.append(payload[prev:])
    return b"".join(out)


#: the smoothest candidate must be smoother than every other by this many times the mean
#: per-sample roughness (a misread sample is typically a hundred times rougher)
CLEAR_MARGIN = 10.0


def repair_one_lost_cr(payload: bytes, header: SphereHeader, big_endian: bool) -> Optional[np.ndarray]:
    """The samples of a payload that lost exactly one CR, or None if no position is clearly right.

    Every LF is a candidate: a CR put back before it reads the bytes before it as they are and
    every sample after it one byte later. For each candidate the total roughness (sum of
    ``|x[t+1] - x[t]|``) and the minimum and maximum of the samples come in O(1) from running
    sums, so all candidates cost O(n). Candidates whose minimum and maximum equal the header's
    ``sample_min``/``sample_max`` (all, when the header records no range) compete; the
    smoothest wins when every other is rougher by :data:`CLEAR_MARGIN` times the mean
    per-sample roughness.
    """
    lf = np.flatnonzero(np.frombuffer(payload, np.uint8) == 0x0A)
    a = _samples(payload, 0, big_endian)  # as read: right before the lost CR
    b = _samples(payload, 1, big_endian)  # one byte later (b[j] = bytes 2j+1, 2j+2): right after it
    if len(lf) == 0 or len(a) < 2 or len(b) < 1:
        return None
    da = np.concatenate([[0], np.cumsum(np.abs(np.diff(a)))])  # da[k]: roughness of a[0..k]
    db_suffix = np.concatenate([np.cumsum(np.abs(np.diff(b))[::-1])[::-1], [0]])  # of b[j..]
    pre_min, pre_max = np.minimum.accumulate(a), np.maximum.accumulate(a)
    suf_min, suf_max = np.minimum.accumulate(b[::-1])[::-1], np.maximum.accumulate(b[::-1])[::-1]
    order = ">i2" if big_endian else "<i2"
    candidates, scores, mins, maxs = [], [], [], []
    for p in lf.tolist():
        # repaired stream payload[:p] + CR + payload[p:]: samples a[:k] as read, then the one
        # holding the CR, then b[k:] (in both parities of p)
        k = p // 2
        pair = bytes([payload[p - 1], 0x0D]) if p % 2 else bytes([0x0D, payload[p]])
        mid = int(np.frombuffer(pair, order)[0])
        if k >= len(b) or (k >= 1 and k > len(a)):
            continue
        rough = db_suffix[k] + abs(int(b[k]) - mid)
        lo, hi = min(mid, int(suf_min[k])), max(mid, int(suf_max[k]))
        if k >= 1:
            rough += da[k - 1] + abs(mid - int(a[k - 1]))
            lo, hi = min(lo, int(pre_min[k - 1])), max(hi, int(pre_max[k - 1]))
        candidates.append(p)
        scores.append(float(rough))
        mins.append(lo)
        maxs.append(hi)
    if not candidates:
        return None
    scores, mins, maxs = np.array(scores), np.array(mins), np.array(maxs)
    ok = np.ones(len(scores), bool)
    if header.sample_min is not None and header.sample_max is not None:
        ok = (mins == header.sample_min) & (maxs == header.sample_max)
    idx = np.flatnonzero(ok)
    if len(idx) == 0:
        return None
    best = int(idx[np.argmin(scores[idx])])
    margin = CLEAR_MARGIN * scores[best] / len(a)
    if np.any(np.delete(scores, best) < scores[best] + margin):
        return None  # not clearly the smoothest
    x = _samples(_insert(payload, [candidates[best]]), 0, big_endian)
    if len(x) != header.sample_count * header.channel_count:
        return None
    return x


def repair_lost_crs(data: bytes, header: SphereHeader) -> Optional[np.ndarray]:
    """Samples (int16 values as int64, interleaved channels) of a SPHERE file whose payload lost
    CR bytes, with the CRs put back; None if the damage is not that or cannot be undone. One lost
    byte: every LF is tried (:func:`repair_one_lost_cr`); several: each misread stretch is found
    by its roughness and the CR put back at the LF that smooths it best."""
    n_lost = missing_bytes(header, len(data))
    if not looks_newline_damaged(header, n_lost) or header.sample_n_bytes != 2:
        return None
    big = header.byte_format == "10"
    payload = data[header.header_bytes:]
    lf = np.flatnonzero(np.frombuffer(payload, np.uint8) == 0x0A)
    if len(lf) < n_lost:
        return None
    if n_lost == 1:
        x = repair_one_lost_cr(payload, header, big)
        if x is not None:
            return x
    positions: list = []  # byte offsets in ``payload`` before which a CR is inserted
    for _ in range(n_lost):
        buf = _insert(payload, positions)
        bad = _misread(buf, big)
        span = 4 * _WINDOW
        if len(bad) < span:
            return None
        run = np.convolve(bad.astype(np.float64), np.ones(span) / span, "valid")
        hits = list(np.flatnonzero(run > 0.8)[:1])
        if not hits:
            # a misread stretch too short for the roughness test still leaves the header's range
            hits = list(np.flatnonzero(samples_outside_range(_samples(buf, 0, big), header))[:1])
        if not hits:
            return None
        j = int(min(hits))  # first sample of the misread stretch, in the repaired stream
        shift = sum(1 for p in positions if p < 2 * j)  # bytes inserted before it so far
        near = lf[(lf >= 2 * j - shift - 8 * _WINDOW) & (lf <= 2 * j - shift + 8 * _WINDOW)]
        near = [int(p) for p in near if int(p) not in positions]
        if not near:
            return None

        def local(p):
            x = _samples(_insert(payload, positions + [p]), 0, big)
            k = max(0, (p + shift) // 2 - 4)
            return float(np.abs(np.diff(x[k:k + 8 * _WINDOW])).mean())

        positions.append(min(near, key=local))

    def badness(pos):
        buf = _insert(payload, pos)
        x = _samples(buf, 0, big)
        return (int(np.count_nonzero(samples_outside_range(x, header))),
                int(np.count_nonzero(_misread(buf, big))))

    # polish: move each insertion to the nearby LF that best keeps samples in range
    best = badness(positions)
    for i in range(len(positions)):
        if best == (0, 0):
            break
        p0 = positions[i]
        for p in lf[(lf >= p0 - 4 * _WINDOW) & (lf <= p0 + 4 * _WINDOW)]:
            p = int(p)
            if p in positions:
                continue
            trial = positions[:i] + [p] + positions[i + 1:]
            score = badness(trial)
            if score < best:
                best, positions = score, trial
    x = _samples(_insert(payload, positions), 0, big)
    if len(x) != header.sample_count * header.channel_count or best != (0, 0):
        return None
    return x
