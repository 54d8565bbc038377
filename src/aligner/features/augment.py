"""Simulated recording conditions for multi-condition training of the frame classifier.

:class:`AugmentationRecipe` describes, in plain JSON-able numbers, how degraded training copies
of an utterance are made; :class:`Augmenter` makes them. Each copy of 16 kHz float samples gets,
in this order and each with its own probability:

1. **a room**: convolution with a room impulse response simulated by pyroomacoustics'
   image-source method (a shoebox of random size, wall absorption from a random RT60 by Sabine's
   formula, source and microphone at a random distance), trimmed so that the direct sound arrives
   at lag 0 (the phone times keep their labels) and rescaled to the input's RMS. A pool of
   ``rooms`` responses is simulated once per recipe;
2. **noise** at a random SNR (dB, over the whole utterance): white, pink (1/f power), brown
   (1/f^2), speech-shaped (random-phase noise with the long-term spectrum of the training speech)
   or babble (3-7 other training speakers' utterances summed, never the utterance's own speaker);
3. **a telephone line**: 8 kHz, a 300-3400 Hz band-pass (edges jittered), 8-bit mu-law coding,
   back to 16 kHz;
4. **clipping** of a random share of the samples at full scale;
5. **a gain** in dB.

A copy that drew none of 1-4 gets noise, so that no copy is the clean recording again. Every
draw comes from a generator seeded by the recipe's seed, the utterance's name and the copy's
index: the same recipe and corpus give the same copies on any machine and in any order.

pyroomacoustics is needed only to train (the ``train`` extra); aligning never imports this
module.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field, fields
from typing import Optional, Sequence

import numpy as np

from aligner.errors import AlignerError

SAMPLE_RATE = 16000
NOISE_KINDS = ("white", "pink", "brown", "speech_shaped", "babble")
#: utterances kept (seeded choice) as babble talkers and for the long-term speech spectrum
BABBLE_POOL_SIZE = 64


class RecipeError(AlignerError):
    """An augmentation recipe that cannot be used (bad value, unknown key, missing library)."""


def _pair(name: str, value, low: float, high: float) -> tuple:
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise RecipeError(f"augmentation recipe: {name} must be two numbers [low, high], got {value!r}") from None
    if not (low <= a <= b <= high):
        raise RecipeError(f"augmentation recipe: {name} must satisfy {low} <= low <= high <= {high}, got {[a, b]}")
    return (a, b)


def _probability(name: str, value) -> float:
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise RecipeError(f"augmentation recipe: {name} must be a number, got {value!r}") from None
    if not 0.0 <= p <= 1.0:
        raise RecipeError(f"augmentation recipe: {name} must be a probability in [0, 1], got {p}")
    return p


@dataclass(frozen=True)
class AugmentationRecipe:
    """How the degraded training copies are made (module docstring). Ranges are ``(low, high)``,
    drawn uniformly; probabilities are per copy."""

    copies: int = 2  #: degraded copies per utterance
    seed: int = 0
    room_probability: float = 0.5
    rooms: int = 24  #: simulated rooms in the pool
    rt60_s: tuple = (0.2, 1.0)  #: reverberation time, seconds
    room_min_m: tuple = (3.0, 3.0, 2.4)  #: smallest length, width, height, metres
    room_max_m: tuple = (10.0, 8.0, 4.0)  #: largest
    mic_distance_m: tuple = (0.3, 3.0)  #: source to microphone, metres
    noise_probability: float = 0.6
    noise_kinds: tuple = NOISE_KINDS
    snr_db: tuple = (0.0, 30.0)
    babble_talkers: tuple = (3, 7)
    telephone_probability: float = 0.2
    clip_probability: float = 0.1
    clip_percent: tuple = (0.5, 5.0)  #: share of the samples clipped, percent
    gain_db: tuple = (-30.0, 10.0)

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        for k in ("copies", "seed", "rooms"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise RecipeError(f"augmentation recipe: {k} must be a whole number >= 0, got {v!r}")
            set_(k, int(v))
        if self.copies > 20:
            raise RecipeError(f"augmentation recipe: copies must be at most 20, got {self.copies}")
        for k in ("room_probability", "noise_probability", "telephone_probability", "clip_probability"):
            set_(k, _probability(k, getattr(self, k)))
        set_("rt60_s", _pair("rt60_s", self.rt60_s, 0.05, 3.0))
        set_("mic_distance_m", _pair("mic_distance_m", self.mic_distance_m, 0.05, 20.0))
        set_("snr_db", _pair("snr_db", self.snr_db, -20.0, 100.0))
        set_("clip_percent", _pair("clip_percent", self.clip_percent, 0.0, 50.0))
        set_("gain_db", _pair("gain_db", self.gain_db, -80.0, 40.0))
        talkers = _pair("babble_talkers", self.babble_talkers, 1, 50)
        set_("babble_talkers", (int(talkers[0]), int(talkers[1])))
        for k in ("room_min_m", "room_max_m"):
            try:
                dims = tuple(float(v) for v in getattr(self, k))
            except (TypeError, ValueError):
                dims = ()
            if len(dims) != 3 or min(dims) < 1.0 or max(dims) > 100.0:
                raise RecipeError(f"augmentation recipe: {k} must be three sizes in metres (1-100), "
                                  f"got {getattr(self, k)!r}")
            set_(k, dims)
        if any(a > b for a, b in zip(self.room_min_m, self.room_max_m)):
            raise RecipeError("augmentation recipe: room_min_m must not exceed room_max_m")
        kinds = tuple(str(k) for k in self.noise_kinds)
        unknown = sorted(set(kinds) - set(NOISE_KINDS))
        if unknown or not kinds:
            raise RecipeError(f"augmentation recipe: noise_kinds must be among {', '.join(NOISE_KINDS)}, "
                              f"got {list(self.noise_kinds)!r}")
        set_("noise_kinds", kinds)
        if self.room_probability > 0 and self.rooms < 1:
            raise RecipeError("augmentation recipe: room_probability > 0 needs rooms >= 1")

    @property
    def simulates_rooms(self) -> bool:
        """Whether copies made by this recipe may go through simulated rooms (pyroomacoustics)."""
        return self.room_probability > 0 and self.copies > 0

    def to_dict(self) -> dict:
        """Plain JSON values (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, values: dict, source: str = "augmentation recipe") -> "AugmentationRecipe":
        """A recipe from a dict; unknown keys and bad values raise :class:`RecipeError` naming ``source``."""
        if not isinstance(values, dict):
            raise RecipeError(f"{source}: expected a JSON object of recipe settings")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise RecipeError(f"{source}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        try:
            return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
        except RecipeError as e:
            raise RecipeError(f"{source}: {str(e).removeprefix('augmentation recipe: ')}") from None

    @classmethod
    def from_json_file(cls, path) -> "AugmentationRecipe":
        """Read a recipe written as a JSON object (keys as :meth:`to_dict`; missing keys take the defaults)."""
        try:
            values = json.loads(open(path, encoding="utf-8").read())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RecipeError(f"{path}: not a readable JSON augmentation recipe ({e})") from None
        return cls.from_dict(values, str(path))


def require_room_simulator():
    """The pyroomacoustics module, or a :class:`RecipeError` naming the `train` extra."""
    try:
        import pyroomacoustics
    except ImportError:
        raise RecipeError("simulated rooms need pyroomacoustics: pip install 'aligner[train]' "
                          "(or set room_probability to 0 in the recipe)") from None
    return pyroomacoustics


def simulate_rooms(recipe: AugmentationRecipe) -> list:
    """``recipe.rooms`` room impulse responses (float32 arrays at 16 kHz, direct sound at index 0,
    unit peak), simulated with pyroomacoustics' image-source method from ``recipe.seed``."""
    pra = require_room_simulator()
    rng = np.random.default_rng([recipe.seed, 1])
    lo, hi = np.array(recipe.room_min_m), np.array(recipe.room_max_m)
    out = []
    while len(out) < recipe.rooms:
        dims = rng.uniform(lo, hi)
        rt60 = float(rng.uniform(*recipe.rt60_s))
        try:
            absorption, max_order = pra.inverse_sabine(rt60, dims)
        except ValueError:  # this room cannot be that reverberant (or that dry): draw another
            continue
        margin = 0.3
        source = rng.uniform(margin, dims - margin)
        for _ in range(50):  # a microphone at the drawn distance, inside the room
            distance = float(rng.uniform(*recipe.mic_distance_m))
            direction = rng.standard_normal(3)
            direction[2] *= 0.2  # mostly horizontal
            mic = source + distance * direction / np.linalg.norm(direction)
            if np.all(mic > margin) and np.all(mic < dims - margin):
                break
        else:
            continue
        room = pra.ShoeBox(dims, fs=SAMPLE_RATE, materials=pra.Material(float(absorption)),
                           max_order=int(max_order))
        room.add_source(source)
        room.add_microphone(mic)
        room.compute_rir()
        ir = np.asarray(room.rir[0][0], np.float64)
        direct = int(np.argmax(np.abs(ir)))
        ir = ir[direct:]
        out.append((ir / np.max(np.abs(ir))).astype(np.float32))
    return out


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


def _mix_at_snr(x: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    p_signal = _rms(x) ** 2
    p_noise = _rms(noise) ** 2
    if p_signal <= 0 or p_noise <= 0:
        return x
    return x + noise * np.sqrt(p_signal / (p_noise * 10 ** (snr_db / 10)))


def _coloured_noise(n: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """Noise of power spectrum ``1 / f ** exponent`` (0 white, 1 pink, 2 brown)."""
    if exponent == 0:
        return rng.standard_normal(n)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(spectrum.size, dtype=np.float64)
    f[0] = 1.0
    return np.fft.irfft(spectrum / f ** (exponent / 2), n)


@dataclass
class SpeechPool:
    """Training speech other copies borrow: babble talkers and the long-term speech spectrum."""

    speakers: list = field(default_factory=list)  #: speaker of each utterance
    samples: list = field(default_factory=list)  #: (n,) float32 16 kHz samples of each
    spectrum: Optional[np.ndarray] = None  #: (257,) long-term amplitude spectrum (512-point)
    levels: list = field(default_factory=list)  #: RMS of each utterance's samples

    @classmethod
    def build(cls, speakers: Sequence[str], samples: Sequence[np.ndarray]) -> "SpeechPool":
        pool = cls(list(speakers), [np.asarray(s, np.float32) for s in samples])
        pool.levels = [_rms(s) for s in pool.samples]
        if pool.samples:
            from scipy import signal

            powers = [signal.welch(s, nperseg=512)[1] * len(s) for s in pool.samples if len(s) >= 512]
            if powers:
                pool.spectrum = np.sqrt(np.sum(powers, axis=0))
        return pool

    def babble(self, n: int, speaker: str, talkers: int, rng: np.random.Generator) -> Optional[np.ndarray]:
        """``n`` samples of ``talkers`` other speakers' utterances summed at equal level (None if
        the pool has no other speaker)."""
        others = [i for i, s in enumerate(self.speakers) if s != speaker and self.levels[i] > 0]
        if not others:
            return None
        out = np.zeros(n, np.float64)
        for i in rng.choice(others, size=talkers, replace=len(others) < talkers):
            s = self.samples[i]
            start = int(rng.integers(len(s)))
            part = np.resize(np.roll(s, -start), n)  # from a random point, repeated to cover n
            out += part / self.levels[i]
        return out

    def speech_shaped(self, n: int, rng: np.random.Generator) -> Optional[np.ndarray]:
        if self.spectrum is None:
            return None
        spectrum = np.fft.rfft(rng.standard_normal(n))
        envelope = np.interp(np.linspace(0, 1, spectrum.size), np.linspace(0, 1, self.spectrum.size), self.spectrum)
        return np.fft.irfft(spectrum * envelope, n)


def telephone_line(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """16 kHz samples through a simulated phone line: 8 kHz, band-pass, 8-bit mu-law, 16 kHz."""
    from scipy import signal

    low = signal.resample_poly(x, 1, 2)
    band = [float(rng.uniform(250, 400)), float(rng.uniform(3200, 3600))]
    low = signal.sosfilt(signal.butter(int(rng.integers(2, 7)), band, btype="bandpass", fs=8000, output="sos"), low)
    peak = max(float(np.max(np.abs(low))), 1e-9)
    y = np.clip(low / peak, -1.0, 1.0)
    mu = 255.0
    coded = np.round(np.sign(y) * np.log1p(mu * np.abs(y)) / np.log1p(mu) * 127.0) / 127.0
    y = np.sign(coded) * np.expm1(np.abs(coded) * np.log1p(mu)) / mu
    return signal.resample_poly(y * peak, 2, 1)[:len(x)]


class Augmenter:
    """Makes the degraded copies of a recipe (module docstring). ``pool``: the training speech
    for babble and the speech spectrum (without it those kinds fall back to pink noise)."""

    def __init__(self, recipe: AugmentationRecipe, pool: Optional[SpeechPool] = None):
        self.recipe = recipe
        self.pool = pool or SpeechPool()
        self._rooms = simulate_rooms(recipe) if recipe.simulates_rooms else []

    def copies(self, samples: np.ndarray, name: str, speaker: str = "") -> list:
        """``recipe.copies`` degraded float32 copies of 16 kHz ``samples`` (n,), each of length n."""
        x = np.asarray(samples, np.float64)
        return [self.copy(x, name, speaker, k) for k in range(self.recipe.copies)]

    def copy(self, x: np.ndarray, name: str, speaker: str, index: int) -> np.ndarray:
        from scipy import signal

        r = self.recipe
        rng = np.random.default_rng([r.seed, zlib.crc32(name.encode("utf-8")), index])
        n = len(x)
        level = _rms(x)
        y = x.copy()
        changed = False
        if self._rooms and rng.random() < r.room_probability:
            ir = self._rooms[int(rng.integers(len(self._rooms)))]
            y = signal.fftconvolve(y, ir)[:n]
            y *= level / max(_rms(y), 1e-12)
            changed = True
        want_noise = rng.random() < r.noise_probability
        want_phone = rng.random() < r.telephone_probability
        want_clip = rng.random() < r.clip_probability
        if want_noise or not (changed or want_phone or want_clip):
            y = _mix_at_snr(y, self._noise(n, speaker, rng), float(rng.uniform(*r.snr_db)))
        if want_phone:
            y = telephone_line(y, rng)
        if want_clip:
            level_at = np.quantile(np.abs(y), 1.0 - float(rng.uniform(*r.clip_percent)) / 100.0)
            y = np.clip(y / max(level_at, 1e-9), -1.0, 1.0) * level_at
        y = y * 10 ** (float(rng.uniform(*r.gain_db)) / 20)
        return np.clip(y, -1.0, 1.0).astype(np.float32)

    def _noise(self, n: int, speaker: str, rng: np.random.Generator) -> np.ndarray:
        kind = self.recipe.noise_kinds[int(rng.integers(len(self.recipe.noise_kinds)))]
        noise = None
        if kind == "babble":
            noise = self.pool.babble(n, speaker, int(rng.integers(self.recipe.babble_talkers[0],
                                                                  self.recipe.babble_talkers[1] + 1)), rng)
        elif kind == "speech_shaped":
            noise = self.pool.speech_shaped(n, rng)
        if noise is None:
            noise = _coloured_noise(n, {"white": 0.0, "brown": 2.0}.get(kind, 1.0), rng)
        return noise
