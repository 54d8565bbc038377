"""Vowel metrics of SPEC section 5: onset/offset errors and duration agreement.

Every function takes times in **seconds** (onset, offset of each vowel, on the original
``.phn`` time line or any common one) and reports errors in **milliseconds**:

* ``onset_mae_ms``, ``offset_mae_ms``: mean |predicted - true| onset and offset;
* ``onset_within_10ms_pct``, ``offset_within_20ms_pct``: % of onsets within 10 ms and of
  offsets within 20 ms (inclusive);
* ``duration_mae_ms``: mean |predicted - true| duration;
* ``duration_r``: Pearson r between predicted and true durations (nan when the predicted
  durations are all equal).

:func:`middle_third` is the baseline the vowel recipe reports: the vowel put in the middle
third of its cut.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

#: tolerances of the two "% within" metrics, ms
ONSET_TOLERANCE_MS = 10
OFFSET_TOLERANCE_MS = 20


@dataclass
class VowelScores:
    """Pooled vowel metrics over ``n`` tokens (errors in ms, percentages in 0-100)."""

    n: int
    onset_mae_ms: float
    offset_mae_ms: float
    onset_within_10ms_pct: float
    offset_within_20ms_pct: float
    duration_mae_ms: float
    duration_r: float

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        """One line: ``n, onset MAE, offset MAE, % within, duration MAE, r``."""
        return (f"{self.n} vowels: onset {self.onset_mae_ms:.1f} ms, offset {self.offset_mae_ms:.1f} ms, "
                f"onsets within {ONSET_TOLERANCE_MS} ms {self.onset_within_10ms_pct:.0f} %, "
                f"offsets within {OFFSET_TOLERANCE_MS} ms {self.offset_within_20ms_pct:.0f} %, "
                f"duration MAE {self.duration_mae_ms:.1f} ms, r {self.duration_r:.3f}")


def score_vowels(pred_s: Sequence, true_s: Sequence) -> VowelScores:
    """Metrics of predicted against true ``(onset_s, offset_s)`` rows (seconds), pooled.

    Raises ``ValueError`` when the two differ in length or are empty.
    """
    p = np.asarray(pred_s, dtype=np.float64).reshape(-1, 2)
    t = np.asarray(true_s, dtype=np.float64).reshape(-1, 2)
    if p.shape != t.shape:
        raise ValueError(f"{len(p)} predicted vowels but {len(t)} true ones")
    if len(p) == 0:
        raise ValueError("no vowels to score")
    d_on, d_off = np.abs(p[:, 0] - t[:, 0]) * 1000, np.abs(p[:, 1] - t[:, 1]) * 1000
    dur_p, dur_t = (p[:, 1] - p[:, 0]) * 1000, (t[:, 1] - t[:, 0]) * 1000
    return VowelScores(
        n=int(len(p)),
        onset_mae_ms=float(d_on.mean()),
        offset_mae_ms=float(d_off.mean()),
        onset_within_10ms_pct=float(100 * np.mean(d_on <= ONSET_TOLERANCE_MS)),
        offset_within_20ms_pct=float(100 * np.mean(d_off <= OFFSET_TOLERANCE_MS)),
        duration_mae_ms=float(np.mean(np.abs(dur_p - dur_t))),
        duration_r=float(np.corrcoef(dur_p, dur_t)[0, 1]) if dur_p.std() > 0 else float("nan"),
    )


def vowel_metrics(pred_s: Sequence, true_s: Sequence) -> dict:
    """:func:`score_vowels` as a JSON-able dict (the keys of :class:`VowelScores`)."""
    return score_vowels(pred_s, true_s).to_dict()


def middle_third(cut_s: float) -> tuple[float, float]:
    """The baseline prediction for a cut of ``cut_s`` seconds: ``(cut_s / 3, 2 cut_s / 3)`` seconds."""
    return cut_s / 3, 2 * cut_s / 3


TABLE_HEADER = ("", "n", "onset ms", "offset ms", f"on<{ONSET_TOLERANCE_MS}%", f"off<{OFFSET_TOLERANCE_MS}%",
                "dur ms", "r")
_TABLE_FORMAT = "{:<28} {:>6} {:>9} {:>10} {:>8} {:>9} {:>7} {:>6}"


def format_table(rows: Sequence, title: str = "") -> str:
    """A fixed-width table of ``(label, scores)`` rows (``scores``: :class:`VowelScores` or its dict)."""
    lines = [_TABLE_FORMAT.format(title, *TABLE_HEADER[1:])]
    for label, m in rows:
        m = m.to_dict() if isinstance(m, VowelScores) else m
        lines.append(_TABLE_FORMAT.format(
            label, m["n"], f"{m['onset_mae_ms']:.1f}", f"{m['offset_mae_ms']:.1f}",
            f"{m['onset_within_10ms_pct']:.0f}", f"{m['offset_within_20ms_pct']:.0f}",
            f"{m['duration_mae_ms']:.1f}", f"{m['duration_r']:.3f}"))
    return "\n".join(lines)
