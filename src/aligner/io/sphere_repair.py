"""Detecting and undoing newline-conversion damage in NIST SPHERE (TIMIT) files.

A SPHERE file copied as *text* (an FTP transfer in ASCII mode, a ``git`` or editor
end-of-line conversion) has every CR LF byte pair (``0D 0A``) turned into LF (``0A``) and
every other CR into LF. In 16-bit audio that loses one byte wherever a sample pair happened
to hold ``0D 0A``: from there on every sample is read from the wrong byte pair, which
sounds like full-scale white noise, until the next lost byte flips the parity back. The
header still records the true ``sample_count`` (and usually ``sample_min``/``sample_max``),
so the damage is detectable: the payload is ``2 * sample_count - n`` bytes long.

:func:`repair_lost_crs` puts the lost CR bytes back. One lost byte: every ``0A`` is tried at
once (:func:`one_cr_candidates`: the roughness, i.e. the sum of ``|x[t+1] - x[t]|`` over
consecutive samples, and the minimum and maximum of the samples with a ``0D`` put back before
it), and the one whose samples have exactly the header's ``sample_min``/``sample_max`` and are
smoother than every other candidate by a clear margin wins. Otherwise, and for several lost
bytes, each lost byte is found as the first stretch where reading the stream one byte later is
much smoother (mean absolute difference of consecutive samples) than reading it as is, and
``0D`` is inserted before the ``0A`` near that point that makes the audio smoothest; a final pass
moves each insertion to the nearby ``0A`` that best keeps the samples within the header's
``sample_min``..``sample_max``. That result is accepted only if it has exactly ``sample_count``
samples, no stretch still reads better shifted, and (when the header has them) every sample lies
within ``sample_min``..``sample_max`` (a lone CR turned into LF changes one byte by 3, which can
move a sample by 3 or 768 units: allowed for). One lost byte that neither decides (e.g. close to
the end of the recording, where the misread stretch is too short to find, with another ``0A``
nearby) is put back where the samples are the smoothest of those that reproduce the header's
``sample_min`` and ``sample_max`` exactly, if that candidate is smoother than every other such one
by :data:`RANGE_MARGIN` times the mean per-sample roughness; otherwise the file is refused. How
many recordings of the shared TIMIT sample it recovers is in docs/results.md.
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
#: when nothing else decides one lost byte, the smoothest candidate that reproduces the header's
#: ``sample_min`` and ``sample_max`` exactly must be smoother than every other candidate that does
#: by this many times the mean per-sample roughness. Below it the two are a near tie that
#: smoothness cannot settle (e.g. ``0A 00 0D 0A`` and ``0D 0A 00 0A`` both lose their CR to
#: ``0A 00 0A``: samples ``10, 2573`` or ``2573, 2560``)
RANGE_MARGIN = 3.0


@dataclass
class OneCrCandidates:
    """Every LF byte of a payload that lost one CR, as a place to put it back
    (:func:`one_cr_candidates`)."""

    positions: np.ndarray  #: (m,) byte offsets in the payload of the LFs a CR may go before, ascending
    roughness: np.ndarray  #: (m,) float64: sum of ``|x[t+1] - x[t]|`` (sample units) with the CR there
    minima: np.ndarray  #: (m,) int64: the smallest sample (sample units) with the CR there
    maxima: np.ndarray  #: (m,) int64: the largest sample
    n_samples: int  #: samples of the payload read as is: ``roughness / n_samples`` is per sample


def one_cr_candidates(payload: bytes, big_endian: bool) -> Optional[OneCrCandidates]:
    """Every LF of ``payload`` where one lost CR may go back, with the roughness, minimum and
    maximum of the samples each gives; None if there is no such LF. A CR put back before byte p
    makes sample ``p // 2`` hold it; samples before it are read as is, samples after it one byte
    later. All LFs at once (:func:`_one_cr_candidates`): O(n) in the payload's bytes."""
    u8 = np.frombuffer(payload, np.uint8)
    lf = np.flatnonzero(u8 == 0x0A)
    n_a, n_b = len(u8) // 2, (len(u8) - 1) // 2  # samples as read; one byte later
    if len(lf) == 0 or n_a < 2 or n_b < 1:
        return None
    keep, rough, mins, maxs = _one_cr_candidates(u8, lf.astype(np.int64), big_endian)
    if not keep.any():
        return None
    return OneCrCandidates(lf[keep], rough[keep].astype(np.float64), mins[keep], maxs[keep], n_a)


def _in_header_range(c: OneCrCandidates, header: SphereHeader) -> np.ndarray:
    """(m,) bool: candidates whose samples have exactly the header's ``sample_min`` and
    ``sample_max``; all True when the header records no range."""
    if header.sample_min is None or header.sample_max is None:
        return np.ones(len(c.positions), bool)
    return (c.minima == header.sample_min) & (c.maxima == header.sample_max)


def _clearly_smoothest(c: OneCrCandidates, header: SphereHeader) -> Optional[int]:
    """The byte offset of the LF to put the lost CR before, or None: among the candidates whose
    minimum and maximum equal the header's ``sample_min``/``sample_max`` (all, when the header
    records no range) the smoothest, if every other candidate is rougher by
    :data:`CLEAR_MARGIN` times the mean per-sample roughness."""
    scores = c.roughness
    idx = np.flatnonzero(_in_header_range(c, header))
    if len(idx) == 0:
        return None
    best = int(idx[np.argmin(scores[idx])])
    margin = CLEAR_MARGIN * scores[best] / c.n_samples
    if np.any(np.delete(scores, best) < scores[best] + margin):
        return None  # not clearly the smoothest
    return int(c.positions[best])


def _smoothest_in_range(c: OneCrCandidates, header: SphereHeader) -> Optional[int]:
    """The byte offset of the LF to put the lost CR before, or None: the smoothest candidate whose
    samples have exactly the header's ``sample_min`` and ``sample_max``, if every other such
    candidate is rougher by :data:`RANGE_MARGIN` times the mean per-sample roughness. None when
    the header lacks either field or no candidate reproduces both. Candidates that miss the
    header's range cannot be the true one and do not compete (unlike :func:`_clearly_smoothest`)."""
    if header.sample_min is None or header.sample_max is None:
        return None
    idx = np.flatnonzero(_in_header_range(c, header))
    if len(idx) == 0:
        return None
    scores = c.roughness[idx]
    best = int(np.argmin(scores))
    margin = RANGE_MARGIN * scores[best] / c.n_samples
    if np.any(np.delete(scores, best) <= scores[best] + margin):
        return None  # a near tie (or an exact one): not decided
    return int(c.positions[idx[best]])


def _put_back_one(payload: bytes, c: Optional[OneCrCandidates], choose, header: SphereHeader,
                  big_endian: bool) -> Optional[np.ndarray]:
    """The samples of ``payload`` with one CR put back before the LF that ``choose(c, header)``
    picks (a byte offset, or None); None when there are no candidates, none is picked, or the
    samples are not exactly the header's ``sample_count`` (times its channels)."""
    p = choose(c, header) if c is not None else None
    if p is None:
        return None
    x = _samples(_insert(payload, [p]), 0, big_endian)
    if len(x) != header.sample_count * header.channel_count:
        return None
    return x


def repair_one_lost_cr(payload: bytes, header: SphereHeader, big_endian: bool) -> Optional[np.ndarray]:
    """The samples of a payload that lost exactly one CR, or None if no position is clearly right.

    Every LF is a candidate: a CR put back before it reads the bytes before it as they are and
    every sample after it one byte later. For each candidate the total roughness (sum of
    ``|x[t+1] - x[t]|``) and the minimum and maximum of the samples come in O(1) from running
    sums, so all candidates cost O(n) (:func:`one_cr_candidates`). Candidates whose minimum and
    maximum equal the header's ``sample_min``/``sample_max`` (all, when the header records no
    range) compete; the smoothest wins when every other is rougher by :data:`CLEAR_MARGIN` times
    the mean per-sample roughness (:func:`_clearly_smoothest`).
    """
    return _put_back_one(payload, one_cr_candidates(payload, big_endian), _clearly_smoothest, header, big_endian)


def repair_lost_crs(data: bytes, header: SphereHeader) -> Optional[np.ndarray]:
    """Samples (int16 values as int64, interleaved channels) of a SPHERE file whose payload lost
    CR bytes, with the CRs put back; None if the damage is not that or cannot be undone.

    One lost byte: every LF is tried, and the CR put back where the samples are clearly the
    smoothest (:func:`_clearly_smoothest`); failing that, by the search for misread stretches
    below; failing both, where the samples are the smoothest of those that reproduce the header's
    ``sample_min`` and ``sample_max`` exactly, by :data:`RANGE_MARGIN` (:func:`_smoothest_in_range`:
    a lost byte close to the end of the recording leaves too short a misread stretch for the
    search, and a nearby LF can come within :data:`CLEAR_MARGIN`). Several lost bytes: each
    misread stretch is found by its roughness and the CR put back at the LF that smooths it best.
    """
    n_lost = missing_bytes(header, len(data))
    if not looks_newline_damaged(header, n_lost) or header.sample_n_bytes != 2:
        return None
    big = header.byte_format == "10"
    payload = data[header.header_bytes:]
    lf = np.flatnonzero(np.frombuffer(payload, np.uint8) == 0x0A)
    if len(lf) < n_lost:
        return None
    if n_lost != 1:
        return _repair_misread_stretches(payload, lf, n_lost, header, big)
    c = one_cr_candidates(payload, big)
    x = _put_back_one(payload, c, _clearly_smoothest, header, big)
    if x is None:
        x = _repair_misread_stretches(payload, lf, n_lost, header, big)
    if x is None:
        x = _put_back_one(payload, c, _smoothest_in_range, header, big)
    return x


def _repair_misread_stretches(payload: bytes, lf: np.ndarray, n_lost: int, header: SphereHeader,
                              big: bool) -> Optional[np.ndarray]:
    """The samples of ``payload`` with ``n_lost`` CRs put back, or None: for each lost byte the
    first stretch of samples that reads much smoother one byte later (:func:`_misread`, or beyond
    the header's range) is found and the CR put back at the LF near it (byte offsets ``lf``) that
    smooths it best; a final pass moves each to the nearby LF that best keeps the samples in
    range. Accepted only if nothing still reads misread or out of range."""
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
