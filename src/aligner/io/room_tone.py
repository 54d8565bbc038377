"""Digital silence read as the recording's own room tone.

An editor's inserted silence, a zero-padded clip or a muted stretch holds samples that stay flat
(zeros, or one value after the DC is removed). No microphone records that: the silences the
models learned from are room tone, a few tens of dB below the speech. Aligned as it is, a flat
stretch at a recording's edge reads as a silence far quieter than any seen in training, every
frame's features are standardised over a recording whose quietest frames are minus infinity in
all but name, and the speech beside it is heard as starting early and ending late.

A flat run: samples whose values span at most :data:`FLAT_SPREAD`, grown greedily from its first
sample, of :data:`MIN_FLAT_SAMPLES` samples or more. The runs that reach either end of the
recording, and those inside it of :data:`MIN_INNER_FLAT_SAMPLES` or more (a muted stretch), are
replaced by white noise at the level of the recording's own room tone, unless the recording also
holds shorter flat runs inside it: the digital pauses and stop closures of synthetic or gated
speech, which has no room tone to copy, and is left as it is. The level: the root mean square of
the :data:`ROOM_TONE_PERCENTILE`-th percentile of the mean squares of its windows of
:data:`WINDOW_SAMPLES` samples that no flat run touches, at most :data:`MIN_DB_BELOW_LOUD` below
their :data:`LOUD_PERCENTILE`-th (where the windows of sound hold little room tone, their quietest
are speech). The noise of sample ``i`` is
a fixed function of ``i`` (a hash of the index), so a recording read whole and one read slice by
slice (:class:`aligner.io.audio.FileSamples`) get the same samples. A recording with no such run
comes back unchanged (the very same array), as does one with fewer than :data:`MIN_HEARD_WINDOWS`
windows of sound to take the level from.

Lengths are in samples (16 kHz: the model rate, after any resampling), levels in full-scale units.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: samples whose values span at most this much count as flat (2 steps of 16-bit audio: dithered
#: zeros, which take the values -1, 0 and +1 step, are flat)
FLAT_SPREAD = 2.0 / 32768
#: a flat run shorter than this (10 ms at 16 kHz) is no run (a waveform near a zero crossing)
MIN_FLAT_SAMPLES = 160
#: a flat run inside a recording (not at an end) is replaced only from this long (0.25 s at
#: 16 kHz): longer than a stop closure or a lost packet
MIN_INNER_FLAT_SAMPLES = 4000
#: windows the levels are measured in (16 ms at 16 kHz)
WINDOW_SAMPLES = 256
#: the room tone's level: this percentile of the mean squares of the windows no flat run touches
ROOM_TONE_PERCENTILE = 10.0
#: the loud level: this percentile of the same windows' mean squares
LOUD_PERCENTILE = 95.0
#: the room tone lies at least this far below the loud level (dB)
MIN_DB_BELOW_LOUD = 30.0
#: windows of sound (about 0.3 s) needed to take the level from; fewer: nothing is replaced
MIN_HEARD_WINDOWS = 20


@njit(cache=True)
def _has_flat_block(x, spread, block):
    """Whether any of the blocks ``x[b * block:(b + 1) * block]`` of samples ``x`` (n,) is flat
    (its values span at most ``spread``): every flat run of ``2 * block - 1`` samples or more holds
    one, so none means no run that long. Most blocks of sound are left after a few samples."""
    for b in range(x.shape[0] // block):
        low = high = float(x[b * block])
        flat = True
        for j in range(b * block + 1, (b + 1) * block):
            v = float(x[j])
            low, high = min(low, v), max(high, v)
            if high - low > spread:
                flat = False
                break
        if flat:
            return True
    return False


@njit(cache=True)
def _scan(x, offset, spread, min_run, window, state, window_sum, window_sq, run_starts, run_ends):
    """One pass over samples ``x`` (n,) float32 that start at sample ``offset`` of a recording,
    continuing the scan of the samples before them. ``state`` (4,) float64: the current run's first
    sample (its index in the recording), lowest and highest values, and the runs found so far
    (carried from one call to the next). Adds each sample and its square into
    ``window_sum[(offset + i) // window]`` and ``window_sq[...]``; every flat run of ``min_run``
    samples or more that ends within ``x`` goes into ``run_starts``/``run_ends`` (end exclusive)."""
    start = int(state[0])
    low, high = state[1], state[2]
    count = int(state[3])
    for i in range(x.shape[0]):
        v = float(x[i])
        k = offset + i
        w = k // window
        window_sum[w] += v
        window_sq[w] += v * v
        if k > start and max(high, v) - min(low, v) <= spread:
            low, high = min(low, v), max(high, v)
            continue
        if k - start >= min_run:
            run_starts[count] = start
            run_ends[count] = k
            count += 1
        start = k
        low = high = v
    state[0] = start
    state[1] = low
    state[2] = high
    state[3] = count


@njit(cache=True)
def _noise(k, level):
    """Uniform noise of root mean square ``level`` at sample ``k``: a fixed function of ``k``
    (splitmix64 of the index)."""
    z = np.uint64(k) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    u = float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)  # [0, 1)
    return (2.0 * u - 1.0) * 1.7320508075688772 * level


@njit(cache=True)
def _fill(x, offset, starts, ends, level):
    """Write :func:`_noise` into the samples of ``x`` (n,) float32, which start at sample ``offset``
    of the recording, that lie in the runs ``starts[r] .. ends[r] - 1`` (recording indices)."""
    n = x.shape[0]
    for r in range(starts.shape[0]):
        a, b = max(starts[r], offset), min(ends[r], offset + n)
        for k in range(a, b):
            x[k - offset] = _noise(k, level)


class FlatScan:
    """A recording's samples scanned block after block (:func:`_scan`): its flat runs and the
    windows' levels, for :meth:`room_tone`."""

    def __init__(self, n_samples: int):
        self.n_windows = int(n_samples) // WINDOW_SAMPLES + 1
        self.window_sum = np.zeros(self.n_windows)
        self.window_sq = np.zeros(self.n_windows)
        self.state = np.zeros(4)
        self.starts: list = []
        self.ends: list = []
        self.seen = 0

    def add(self, block: np.ndarray) -> None:
        """Scan the next ``block`` (m,) of the recording's samples (more of them than announced
        grow the windows: a header may undercount)."""
        block = np.ascontiguousarray(block, np.float32)
        needed = (self.seen + len(block)) // WINDOW_SAMPLES + 1
        if needed > self.n_windows:
            grow = needed - self.n_windows
            self.window_sum = np.concatenate([self.window_sum, np.zeros(grow)])
            self.window_sq = np.concatenate([self.window_sq, np.zeros(grow)])
            self.n_windows = needed
        capacity = len(block) // MIN_FLAT_SAMPLES + 2
        starts, ends = np.empty(capacity, np.int64), np.empty(capacity, np.int64)
        self.state[3] = 0
        _scan(block, self.seen, FLAT_SPREAD, MIN_FLAT_SAMPLES, WINDOW_SAMPLES, self.state, self.window_sum,
              self.window_sq, starts, ends)
        found = int(self.state[3])
        self.starts += starts[:found].tolist()
        self.ends += ends[:found].tolist()
        self.seen += len(block)

    def runs(self) -> tuple:
        """``(starts, ends)`` (R,) int64 of every flat run (the last one closed at the end)."""
        starts, ends = list(self.starts), list(self.ends)
        if self.seen - int(self.state[0]) >= MIN_FLAT_SAMPLES:
            starts.append(int(self.state[0]))
            ends.append(self.seen)
        return np.array(starts, np.int64), np.array(ends, np.int64)

    def room_tone(self, offset: float = 0.0) -> "RoomTone | None":
        """The runs to replace and the level to replace them at, or None where there are none, where
        shorter runs lie inside the recording too (module docstring), or where there are fewer than :data:`MIN_HEARD_WINDOWS` whole windows that no run touches. ``offset``: the
        samples' constant offset (their DC, when it is removed after the scan)."""
        starts, ends = self.runs()
        replaced = (starts == 0) | (ends == self.seen) | (ends - starts >= MIN_INNER_FLAT_SAMPLES)
        if not replaced.any() or not replaced.all():  # none, or short digital pauses inside: no room tone
            return None
        whole = self.seen // WINDOW_SAMPLES
        touched = np.zeros(whole + 1, np.int64)  # +1 at each run's first window, -1 after its last
        np.add.at(touched, starts // WINDOW_SAMPLES, 1)
        np.add.at(touched, np.minimum((ends - 1) // WINDOW_SAMPLES + 1, whole), -1)
        heard = np.cumsum(touched)[:whole] == 0
        if np.count_nonzero(heard) < MIN_HEARD_WINDOWS:
            return None
        sq, sm = self.window_sq[:whole][heard], self.window_sum[:whole][heard]
        power = (sq - 2.0 * offset * sm) / WINDOW_SAMPLES + offset * offset if offset else sq / WINDOW_SAMPLES
        quiet, loud = np.percentile(power, (ROOM_TONE_PERCENTILE, LOUD_PERCENTILE))
        level = float(np.sqrt(max(min(quiet, loud * 10.0 ** (-MIN_DB_BELOW_LOUD / 10.0)), 0.0)))
        return RoomTone(starts[replaced], ends[replaced], level)


class RoomTone:
    """Flat runs of a recording (``starts``, ``ends``: (R,) int64 sample indices, end exclusive)
    and the root mean square ``level`` (full scale) of the noise that replaces them."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, level: float):
        self.starts, self.ends, self.level = starts, ends, float(level)

    def fill(self, x: np.ndarray, offset: int = 0) -> np.ndarray:
        """Samples ``x`` (n,) float32, which start at sample ``offset`` of the recording, with
        their part of the runs replaced, in place; returns ``x``."""
        _fill(x, int(offset), self.starts, self.ends, self.level)
        return x


def room_tone_of(samples: np.ndarray) -> RoomTone | None:
    """:meth:`FlatScan.room_tone` of samples (n,) held in memory."""
    samples = np.ascontiguousarray(samples, np.float32)
    if not _has_flat_block(samples, FLAT_SPREAD, MIN_FLAT_SAMPLES // 2):
        return None  # the usual case, decided in a few samples per block
    scan = FlatScan(len(samples))
    scan.add(samples)
    return scan.room_tone()


def with_room_tone(samples: np.ndarray, owned: bool = False) -> np.ndarray:
    """``samples`` (n,) float32 with their digital silence replaced by room tone (module
    docstring); the same array when nothing is replaced. ``owned``: the samples may be changed in
    place."""
    tone = room_tone_of(samples)
    if tone is None:
        return samples
    return tone.fill(samples if owned else np.array(samples, np.float32, copy=True))
