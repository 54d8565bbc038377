"""A forced aligner's phone durations, in frames (10 ms): per class of its inventory, per transcript
symbol, and before a pause (:class:`DurationStats`, the duration table of
:class:`~aligner.alignment.model.AlignmentModel`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from aligner.phones.sets import CLASSES39

#: longest phone the decoder considers by default (frames; 10 ms each), except silence
MAX_PHONE_FRAMES = 60
#: longest silence the decoder considers (frames)
MAX_SILENCE_FRAMES = 200
SILENCE_CLASS = CLASSES39.index("sil")


#: a transcript symbol gets duration statistics of its own (rather than its class's) when the
#: training data hold at least this many of it
MIN_SYMBOL_COUNT = 10


def duration_key(symbol: str) -> str:
    """The key of a transcript symbol in the per-symbol duration table: lower case, stress
    digits dropped (ARPAbet ``AH0`` -> ``ah``, TIMIT ``h#`` stays ``h#``)."""
    return symbol.strip().lower().rstrip("012")


@dataclass
class DurationStats:
    """Phone durations, in frames: mean, std, and the longest length the decoder tries.

    Per class of the model's inventory (``mean``, ``std``, ``max_frames``, shape (C,)), and per
    transcript symbol seen at least :data:`MIN_SYMBOL_COUNT` times in training
    (``symbols`` (S,) keys of :func:`duration_key`, ``symbol_mean``/``symbol_std``/
    ``symbol_max_frames`` (S,)). The class of silence holds TIMIT's utterance-edge silence
    ``h#``, pauses, stop closures and glottal stops alike; their own statistics keep a 30 ms
    closure from being given the spread of a 1 s pause.

    Optionally (the universal model's views, :mod:`aligner.alignment.universal`), per class the
    statistics of a phone *before a pause* (``final_mean``, ``final_std``, ``final_max_frames``
    (C,); empty: none): a phone followed by a phone of class ``silence_class``, or ending the
    sequence, takes them (phones are longer there: final lengthening), and so does a silence at
    either end of the sequence (an utterance's edge, not a pause within it).
    """

    mean: np.ndarray
    std: np.ndarray
    max_frames: np.ndarray
    symbols: np.ndarray = field(default_factory=lambda: np.zeros(0, "<U8"))
    symbol_mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    symbol_std: np.ndarray = field(default_factory=lambda: np.zeros(0))
    symbol_max_frames: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    final_mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    final_std: np.ndarray = field(default_factory=lambda: np.zeros(0))
    final_max_frames: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    silence_class: int = -1

    @classmethod
    def fit(cls, lengths_by_class: list, n_classes: int = len(CLASSES39),
            max_phone_frames: int = MAX_PHONE_FRAMES, max_silence_frames: int = MAX_SILENCE_FRAMES,
            lengths_by_symbol: dict | None = None, min_symbol_count: int = MIN_SYMBOL_COUNT,
            silence_class: int = SILENCE_CLASS):
        """Statistics from observed lengths: ``lengths_by_class[c]`` is a list of lengths (frames);
        ``lengths_by_symbol`` maps a transcript symbol to ``(class, lengths)``; ``silence_class``
        is the index of silence in the ``n_classes`` classes.

        A class never seen gets the mean and std of all phones. ``max_frames`` is twice the
        longest observed length, at least 15 frames, capped at ``max_phone_frames``
        (``max_silence_frames`` for silence; an unseen class gets the cap). The decoder's time
        grows with these lengths: on the TIMIT sample, silences of up to 99 frames give 198.
        Symbols are kept when seen at least ``min_symbol_count`` times, with the same rules
        (capped by their class's cap).
        """
        every = np.concatenate([np.asarray(v, float) for v in lengths_by_class if len(v)])
        mean = np.full(n_classes, every.mean())
        std = np.full(n_classes, every.std())
        caps = np.full(n_classes, max_phone_frames, dtype=np.int64)
        caps[silence_class] = max_silence_frames
        max_frames = caps.copy()
        for c in range(n_classes):
            v = np.asarray(lengths_by_class[c], float)
            if len(v):
                mean[c] = v.mean()
                if len(v) > 1:
                    std[c] = v.std()
                max_frames[c] = int(np.clip(2 * v.max(), 15, caps[c]))
        keys, s_mean, s_std, s_max = [], [], [], []
        for sym, (c, lengths) in sorted((lengths_by_symbol or {}).items()):
            v = np.asarray(lengths, float)
            if len(v) >= max(min_symbol_count, 2):
                keys.append(duration_key(sym))
                s_mean.append(v.mean())
                s_std.append(max(v.std(), 1.0))
                s_max.append(int(np.clip(2 * v.max(), 15, caps[c])))
        return cls(mean, np.maximum(std, 1.0), max_frames, np.array(keys, "<U8"),
                   np.array(s_mean, float), np.array(s_std, float), np.array(s_max, np.int64))

    def for_phones(self, classes: np.ndarray, symbols=None, ends_utterance: bool = True) -> tuple:
        """``(mean, std, max_frames)``, each (K,), of phones of ``classes`` (K,) written as
        ``symbols`` (K transcript symbols, optional): a symbol's own statistics when it has
        them, its class's otherwise. ``ends_utterance``: the last phone ends the utterance (it
        takes the statistics before a pause, where the table has them); False for a sequence that
        more speech may follow (a word of a sentence)."""
        classes = np.asarray(classes, np.int64)
        mean, std, mx = self.mean[classes], self.std[classes], self.max_frames[classes]  # copies
        if len(self.final_mean) and len(classes):
            silent = classes == self.silence_class
            final = np.append(silent[1:], bool(ends_utterance)) & ~silent  # before a pause, or last
            final |= silent & (np.arange(len(classes)) % max(len(classes) - 1, 1) == 0)  # the edges' silences
            if symbols is not None and len(classes) == 1 and silent[0]:
                final[0] = str(symbols[0]).strip().lower() not in ("pau", "sp")  # a pause between words
            c = classes[final]
            mean[final], std[final], mx[final] = self.final_mean[c], self.final_std[c], self.final_max_frames[c]
        if symbols is not None and len(self.symbols):
            index, rows_of = self._symbol_index()
            rows = np.fromiter((rows_of[sym] if sym in rows_of else rows_of.setdefault(
                sym, index.get(duration_key(sym), -1)) for sym in symbols), np.int64)
            ks = np.flatnonzero(rows >= 0)
            if len(ks):
                r = rows[ks]
                mean[ks], std[ks], mx[ks] = self.symbol_mean[r], self.symbol_std[r], self.symbol_max_frames[r]
        return mean, std, mx

    def _symbol_index(self) -> tuple:
        """``(symbol key -> its row in the per-symbol arrays, transcript symbol -> its row or -1)``,
        built once per table (the second filled as symbols are met)."""
        cached = self.__dict__.get("_index")
        if cached is None or cached[0] is not self.symbols:
            cached = (self.symbols, {k: i for i, k in enumerate(self.symbols.tolist())}, {})
            self.__dict__["_index"] = cached
        return cached[1], cached[2]

    def to_arrays(self) -> dict:
        out = {"mean": self.mean, "std": self.std, "max_frames": self.max_frames,
               "symbols": np.asarray(self.symbols, "<U8"), "symbol_mean": self.symbol_mean,
               "symbol_std": self.symbol_std, "symbol_max_frames": self.symbol_max_frames}
        if len(self.final_mean):  # (bundles without them keep their layout)
            out.update(final_mean=self.final_mean, final_std=self.final_std, final_max_frames=self.final_max_frames,
                       silence_class=np.int64(self.silence_class))
        return out

    @classmethod
    def from_arrays(cls, d: dict):
        out = cls(np.asarray(d["mean"], float), np.asarray(d["std"], float),
                  np.asarray(d["max_frames"], np.int64), np.asarray(d["symbols"]).astype("<U8"),
                  np.asarray(d["symbol_mean"], float), np.asarray(d["symbol_std"], float),
                  np.asarray(d["symbol_max_frames"], np.int64))
        if "final_mean" in d:
            out.final_mean = np.asarray(d["final_mean"], float)
            out.final_std = np.asarray(d["final_std"], float)
            out.final_max_frames = np.asarray(d["final_max_frames"], np.int64)
            out.silence_class = int(np.asarray(d["silence_class"]))
            C = len(out.mean)
            if not (out.final_mean.shape == out.final_std.shape == out.final_max_frames.shape == (C,)
                    and 0 <= out.silence_class < C and np.all(np.isfinite(out.final_mean))
                    and np.all(out.final_std > 0) and np.all(out.final_max_frames >= 1)):
                raise ValueError("before-pause duration statistics have the wrong shapes or invalid values")
        n = len(out.symbols)
        if not (out.symbols.ndim == 1 and out.symbol_mean.shape == out.symbol_std.shape
                == out.symbol_max_frames.shape == (n,)):
            raise ValueError("per-symbol duration statistics have mismatched shapes")
        if n and (not np.all(np.isfinite(out.symbol_mean)) or not np.all(out.symbol_std > 0)
                  or not np.all(out.symbol_max_frames >= 1)):
            raise ValueError("per-symbol duration statistics hold invalid values")
        return out
