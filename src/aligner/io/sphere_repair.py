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
from numba import njit

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


@njit(cache=True, nogil=True, inline="always")
def _sample(u8, i, shift, big_endian):
    """Sample i (int16 value) of the bytes ``u8`` read from byte ``shift`` on."""
    j = 2 * i + shift
    v = (np.int64(u8[j]) << 8) | np.int64(u8[j + 1]) if big_endian else (np.int64(u8[j + 1]) << 8) | np.int64(u8[j])
    return v - 65536 if v >= 32768 else v


@njit(cache=True, nogil=True)
def _misread_flags(u8, big_endian, window):
    """:func:`_misread` of the bytes ``u8`` (uint8): for each t, whether the mean ``|x[u+1] -
    x[u]|`` over the ``window`` differences from t (fewer at the end) of the samples read as is
    exceeds 4 times that of the samples read one byte later, plus 200 (sample units). Window
    sums are exact integers, divided once in float64."""
    na = len(u8) // 2  # samples read as is
    nb = (len(u8) - 1) // 2 if len(u8) >= 1 else 0  # samples read one byte later
    ra_n, rb_n = max(na - 1, 0), max(nb - 1, 0)  # differences
    n = min(ra_n, rb_n)
    out = np.zeros(n, np.bool_)
    da = np.empty(ra_n, np.int32)  # |x[u+1] - x[u]| of either reading
    db = np.empty(rb_n, np.int32)
    for u in range(ra_n):
        da[u] = abs(_sample(u8, u + 1, 0, big_endian) - _sample(u8, u, 0, big_endian))
    for u in range(rb_n):
        db[u] = abs(_sample(u8, u + 1, 1, big_endian) - _sample(u8, u, 1, big_endian))
    sa = 0
    for u in range(min(window, ra_n)):
        sa += da[u]
    sb = 0
    for u in range(min(window, rb_n)):
        sb += db[u]
    for t in range(n):
        ra = float(sa) / float(min(t + window, ra_n) - t)
        rb = float(sb) / float(min(t + window, rb_n) - t)
        out[t] = ra > 4.0 * rb + 200.0
        sa -= da[t]
        if t + window < ra_n:
            sa += da[t + window]
        sb -= db[t]
        if t + window < rb_n:
            sb += db[t + window]
    return out


def _misread(buf: bytes, big_endian: bool) -> np.ndarray:
    """Boolean per sample: reading one byte later is much smoother here (wrong byte parity):
    the mean absolute difference of consecutive samples over :data:`_WINDOW` differences is
    more than 4 times (plus 200) that of the samples read one byte later."""
    return _misread_flags(np.frombuffer(buf, np.uint8), big_endian, _WINDOW)


@njit(cache=True, nogil=True)
def _one_cr_candidates(u8, lf, big_endian):
    """For every LF byte offset ``lf`` (ascending) of the payload ``u8``: the samples obtained
    by putting a CR back before it (those before it as read, those after it one byte later),
    summarised as ``(keep, roughness, minimum, maximum)`` (:func:`repair_one_lost_cr`);
    ``keep`` is False where the candidate has no sample after the CR. One backward pass over
    the later reading and one forward pass over the reading as is, no per-sample arrays."""
    na = len(u8) // 2
    nb = (len(u8) - 1) // 2 if len(u8) >= 1 else 0
    m = len(lf)
    keep = np.zeros(m, np.bool_)
    rough = np.zeros(m, np.int64)
    lo = np.zeros(m, np.int64)
    hi = np.zeros(m, np.int64)
    mids = np.zeros(m, np.int64)
    for i in range(m):
        p = lf[i]
        k = p // 2
        keep[i] = k < nb and (k < 1 or k <= na)
        if p % 2:
            first, second = np.int64(u8[p - 1]), np.int64(0x0D)
        else:
            first, second = np.int64(0x0D), np.int64(0x0A)
        v = (first << 8) | second if big_endian else (second << 8) | first
        mids[i] = v - 65536 if v >= 32768 else v
    # the samples after the CR: b[k:] (suffix roughness, minimum, maximum), walking backwards
    i = m - 1
    while i >= 0 and not keep[i]:
        i -= 1
    if nb > 0:
        s = 0
        bmin = bmax = _sample(u8, nb - 1, 1, big_endian)
        for j in range(nb - 1, -1, -1):
            bj = _sample(u8, j, 1, big_endian)
            if j < nb - 1:
                s += abs(_sample(u8, j + 1, 1, big_endian) - bj)
            bmin = min(bmin, bj)
            bmax = max(bmax, bj)
            while i >= 0 and lf[i] // 2 == j:
                if keep[i]:
                    mid = mids[i]
                    rough[i] = s + abs(bj - mid)
                    lo[i] = min(mid, bmin)
                    hi[i] = max(mid, bmax)
                i -= 1
            while i >= 0 and (not keep[i] or lf[i] // 2 > j):
                i -= 1
    # the samples before it: a[:k] (prefix roughness, minimum, maximum), walking forwards
    i = 0
    s = 0
    amin = amax = _sample(u8, 0, 0, big_endian) if na > 0 else 0
    for k in range(1, na + 1):
        ak = _sample(u8, k - 1, 0, big_endian)  # a[k - 1]
        if k >= 2:
            s += abs(ak - _sample(u8, k - 2, 0, big_endian))
        amin = min(amin, ak)
        amax = max(amax, ak)
        while i < m and lf[i] // 2 < k:
            i += 1
        while i < m and lf[i] // 2 == k:
            if keep[i]:
                mid = mids[i]
                rough[i] += s + abs(mid - ak)
                lo[i] = min(lo[i], amin)
                hi[i] = max(hi[i], amax)
            i += 1
    return keep, rough, lo, hi


def warm_up() -> None:
    """Compile (or load from numba's cache) this module's numba functions on a few samples, so
    that processes forked afterwards (corpus workers) do not each load them at their first
    damaged file."""
    u8 = np.frombuffer(bytes(8), np.uint8)  # read-only, as the payloads are
    _misread_flags(u8, False, _WINDOW)
    _one_cr_candidates(u8, np.array([2], np.int64), False)


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
    u8 = np.frombuffer(payload, np.uint8)
    lf = np.flatnonzero(u8 == 0x0A)
    n_a, n_b = len(u8) // 2, (len(u8) - 1) // 2  # samples as read; one byte later
    if len(lf) == 0 or n_a < 2 or n_b < 1:
        return None
    # every LF at once (:func:`_one_cr_candidates`): a CR put back before byte p makes sample
    # k = p // 2 hold it; samples before k are read as is, samples after it one byte later
    keep, rough, mins, maxs = _one_cr_candidates(u8, lf.astype(np.int64), big_endian)
    if not keep.any():
        return None
    candidates, scores, mins, maxs = lf[keep].tolist(), rough[keep].astype(np.float64), mins[keep], maxs[keep]
    ok = np.ones(len(scores), bool)
    if header.sample_min is not None and header.sample_max is not None:
        ok = (mins == header.sample_min) & (maxs == header.sample_max)
    idx = np.flatnonzero(ok)
    if len(idx) == 0:
        return None
    best = int(idx[np.argmin(scores[idx])])
    margin = CLEAR_MARGIN * scores[best] / n_a
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
        # windows of ``span`` samples more than 80 % misread (counts from one running sum)
        count = np.zeros(len(bad) + 1, np.int64)
        np.cumsum(bad, out=count[1:])
        hits = list(np.flatnonzero((count[span:] - count[:-span]) * 5 > 4 * span)[:1])
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
