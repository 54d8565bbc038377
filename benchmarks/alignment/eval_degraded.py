#!/usr/bin/env python
"""Forced-alignment accuracy on degraded copies of the held-out speakers' recordings.

Each utterance of the TIMIT-layout corpus is degraded in memory and aligned from its ``.phn``
phones by the speaker-disjoint fold model that never heard its speaker (``--folds-dir``, made by
``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR``); the phone start times are scored
against the ``.phn`` times as ``aligner evaluate`` does. Conditions (all at 16 kHz, seeded):

- ``clean``: the recording as it is;
- ``white20`` / ``white10`` / ``white5``: white noise at 20 / 10 / 5 dB SNR (over the whole file);
- ``pink10``: pink (1/f) noise at 10 dB SNR;
- ``telephone``: band-limited to 300-3400 Hz (8 kHz resampling and a band-pass), as a phone line;
- ``quiet``: the samples scaled by 0.02 (-34 dB), as a far or badly set microphone;
- ``reverb`` / ``reverb_far``: convolved with a room response: the direct sound and an
  exponentially decaying noise tail (RT60 0.4 s, a small room) 6 dB / 0 dB below it in energy
  (direct-to-reverberant ratio; near and farther from the microphone);
- ``clipped``: scaled so that 2 % of the samples clip at full scale;
- ``hum10``: mains hum (50 Hz and its harmonics to 1 kHz, amplitudes 1/k, random phases) at
  10 dB SNR;
- ``muffled``: a 2nd-order low-pass at 1500 Hz, as speech through cloth or a poor microphone;
- ``dropout``: 3 % of the 20 ms packets zeroed, as a lossy internet call;
- ``classroom``: the ``reverb`` room (DRR 3 dB) with pink noise at 15 dB SNR.

Which conditions are of a kind multi-condition training simulated (``SEEN_KINDS``: white and
pink noise, a telephone band, gain, clipping; all made by this script's own code and seeds, not
the training's) and which of a kind it never made (``UNSEEN_KINDS``: the rooms here are an
exponentially decaying noise tail, not the image-source rooms of
:mod:`aligner.features.augment`; hum, low-pass, packet loss and the noisy room appear nowhere in
training) is fixed here, before any result; the summary reports the two groups apart, each
as the mean of its conditions' mean errors and that mean's ratio to clean.

With ``--expert-folds DIR`` (fold models of the same speaker folds trained with ``--augment``),
each fold model gets its fold's multi-condition model as condition expert
(:mod:`aligner.alignment.conditions`): a recording goes to the expert when the clean fold model's
mean posterior entropy exceeds, or its energy range or high-band share falls below, gates set from
the *other* folds' held-out speakers' clean recordings (the values that ``--false-alarm`` of them
lie beyond; ``--no-band-gate`` leaves the band out), so no speaker's own recordings set the gates
that route them. With ``--band-folds DIR`` (phone-line fold models: ``eval_alignment_cv
--phone-line --augment recipes/conditions/phone-line.json``) each fold model also gets its fold's
phone-line model as band expert, which takes the recordings below the band gate but not below the
range gate, hearing them through its band. With ``--dereverb [SHARE]`` the multi-condition
expert dereverberates (WPE, :mod:`aligner.features.dereverb`) the recordings it takes whose
late-reverberation statistic passes the value that SHARE of the other folds' clean recordings
pass. With ``--denoise [SHARE]`` it suppresses stationary noise (a Wiener filter,
:mod:`aligner.features.denoise`) in those it takes and does not dereverberate whose noise-floor
statistic passes the value that SHARE of the other folds' clean recordings pass. The ``expert``
column is the share of recordings not decoded by the clean fold model.

``--seed N`` draws every random part of the conditions (noise, room tails, lost packets) afresh:
utterance i is degraded with seed ``N + i``. The default, 0, gives the test copies every
reported figure was measured on; another seed gives validation copies of the same conditions to
choose designs on without looking at the test copies (the speakers are the same held-out ones).

    python -m benchmarks.alignment.eval_degraded --folds-dir runs/folds [--conditions clean white10 ...]
        [--seed N]
    python -m benchmarks.alignment.eval_degraded --folds-dir runs/folds --expert-folds runs/folds-mc-a \
        [--band-folds runs/folds-tel] [--dereverb] [--denoise]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from aligner.alignment.conditions import DENOISE_FALSE_ALARM, DEREVERB_FALSE_ALARM

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "timit-sample"
SR = 16000
CONDITIONS = ("clean", "white20", "white10", "white5", "pink10", "telephone", "quiet", "reverb", "reverb_far", "clipped",
              "hum10", "muffled", "dropout", "classroom")
#: conditions of a kind the multi-condition recipe (recipes/conditions) simulates
SEEN_KINDS = ("white20", "white10", "white5", "pink10", "telephone", "quiet", "clipped")
#: conditions of a kind no training recipe simulates
UNSEEN_KINDS = ("reverb", "reverb_far", "hum10", "muffled", "dropout", "classroom")


def _noise_at_snr(x: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    p_signal = float(np.mean(x.astype(np.float64) ** 2))
    p_noise = float(np.mean(noise ** 2))
    return (x + noise * np.sqrt(p_signal / (p_noise * 10 ** (snr_db / 10)))).astype(np.float32)


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(spectrum.size, dtype=np.float64)
    f[0] = 1.0
    return np.fft.irfft(spectrum / np.sqrt(f), n)


def degrade(x: np.ndarray, condition: str, seed: int) -> np.ndarray:
    """A degraded copy of 16 kHz float samples ``x`` (n,) under ``condition`` (module docstring)."""
    from scipy import signal

    rng = np.random.default_rng(seed)
    x = np.asarray(x, np.float32)
    if condition == "clean":
        return x
    if condition.startswith("white"):
        return _noise_at_snr(x, rng.standard_normal(len(x)), float(condition[5:]))
    if condition == "pink10":
        return _noise_at_snr(x, _pink(len(x), rng), 10.0)
    if condition == "telephone":
        low = signal.resample_poly(x, 1, 2)
        sos = signal.butter(4, [300, 3400], btype="bandpass", fs=8000, output="sos")
        return signal.resample_poly(signal.sosfilt(sos, low), 2, 1)[:len(x)].astype(np.float32)
    if condition == "quiet":
        return (x * 0.02).astype(np.float32)
    if condition.startswith("reverb") or condition == "classroom":
        # direct-to-reverberant energy ratio
        drr_db = {"reverb": 6.0, "reverb_far": 0.0, "classroom": 3.0}[condition]
        n = int(0.4 * SR)
        tail = rng.standard_normal(n) * np.exp(-6.9 * np.arange(n) / n)  # -60 dB at 0.4 s (RT60)
        tail[0] = 0.0
        ir = tail * np.sqrt(10 ** (-drr_db / 10) / np.sum(tail ** 2))
        ir[0] = 1.0  # the direct sound
        y = signal.fftconvolve(x, ir)[:len(x)]
        y = (y * (np.max(np.abs(x)) / max(np.max(np.abs(y)), 1e-9))).astype(np.float32)
        return y if condition != "classroom" else _noise_at_snr(y, _pink(len(y), rng), 15.0)
    if condition == "hum10":
        t = np.arange(len(x)) / SR
        hum = sum(np.sin(2 * np.pi * 50 * k * t + rng.uniform(0, 2 * np.pi)) / k for k in range(1, 21))
        return _noise_at_snr(x, hum, 10.0)
    if condition == "muffled":
        sos = signal.butter(2, 1500, btype="lowpass", fs=SR, output="sos")
        return signal.sosfilt(sos, x).astype(np.float32)
    if condition == "dropout":
        y = x.copy()
        packet = int(0.02 * SR)
        lost = rng.random(len(x) // packet + 1) < 0.03
        for i in np.flatnonzero(lost):
            y[i * packet:(i + 1) * packet] = 0.0
        return y
    if condition == "clipped":
        level = np.quantile(np.abs(x), 0.98)
        return np.clip(x / max(level, 1e-9), -1.0, 1.0).astype(np.float32)
    raise ValueError(f"unknown condition {condition!r} (known: {', '.join(CONDITIONS)})")


def add_front_end_arguments(ap, who: str = "the experts", gates_from: str = "the other folds' clean recordings",
                            note: str = "") -> None:
    """``--dereverb [SHARE]`` and ``--denoise [SHARE]`` on ``ap``: dereverberation and noise
    suppression by ``who`` (the expert, the experts) of the recordings past a gate that SHARE of
    ``gates_from`` pass; ``note`` opens both helps (e.g. what else they need)."""
    ap.add_argument("--dereverb", type=float, nargs="?", const=DEREVERB_FALSE_ALARM, default=None, metavar="SHARE",
                    help=f"{note}dereverberation (WPE) by {who} of the recordings past a late-reverberation gate "
                         f"that SHARE of {gates_from} pass [{DEREVERB_FALSE_ALARM}]")
    ap.add_argument("--denoise", type=float, nargs="?", const=DENOISE_FALSE_ALARM, default=None, metavar="SHARE",
                    help=f"{note}stationary noise suppression (Wiener) by {who} in the recordings not "
                         f"dereverberated past a noise-floor gate that SHARE of {gates_from} pass "
                         f"[{DENOISE_FALSE_ALARM}]")


def attach_fold_experts(models: list, experts: list, utts: list, audio: dict, false_alarm: float | None,
                        log=print, band: bool = True, band_experts: list | None = None,
                        dereverb: float | None = None, denoise: float | None = None) -> None:
    """Give each ``(model, test speakers)`` of ``models`` the expert of ``experts`` with the same
    test speakers, gated at the entropy, energy range and (with ``band``) high-band share that
    ``false_alarm`` of the other folds' held-out clean recordings lie beyond (each scored by its
    own fold model); with ``band_experts`` (phone-line fold models, ``eval_alignment_cv
    --phone-line``), the one with the same test speakers takes the recordings below the band gate,
    hearing them through its band (fold models trained on a band-limited copy of the corpus carry
    none: they get :data:`aligner.features.band.PHONE_BAND_HZ`). With ``dereverb`` (a share), each
    expert dereverberates (:class:`aligner.features.dereverb.DereverbSettings`' defaults) the
    recordings whose :func:`~aligner.features.dereverb.late_reverberation_db` reaches the value
    that this share of the other folds' clean recordings lie beyond. With ``denoise`` (a share),
    each expert suppresses the stationary noise (:class:`aligner.features.denoise.DenoiseSettings`'
    defaults) of the recordings it does not dereverberate whose
    :func:`~aligner.features.denoise.noise_floor_db` reaches the value that this share of the
    other folds' clean recordings lie beyond."""
    from aligner.features.band import PHONE_BAND_HZ
    from aligner.features.denoise import DenoiseSettings, noise_floor_db
    from aligner.features.dereverb import DereverbSettings, late_reverberation_db

    from aligner.alignment.conditions import (DEFAULT_FALSE_ALARM, attach_condition_expert, gate_for_false_alarm,
                                              gate_statistics)

    false_alarm = DEFAULT_FALSE_ALARM if false_alarm is None else false_alarm
    expert_of = {tuple(sorted(s)): m for m, s in experts}
    band_of = {tuple(sorted(s)): m for m, s in (band_experts or [])}
    model_of = {s: m for m, speakers in models for s in speakers}
    entropy, level_range, band_share = {}, {}, {}
    for u in utts:
        entropy[u.name], level_range[u.name], band_share[u.name] = gate_statistics(
            model_of[u.speaker].classifier, audio[u.name])
    reverb = {u.name: late_reverberation_db(audio[u.name]) for u in utts} if dereverb is not None else {}
    floor = {u.name: noise_floor_db(audio[u.name]) for u in utts} if denoise is not None else {}
    for model, speakers in models:
        expert = expert_of.get(tuple(sorted(speakers)))
        if expert is None:
            sys.exit(f"error: no expert fold model tested on {', '.join(sorted(speakers))}")
        others = [u.name for u in utts if u.speaker not in speakers]
        gate = gate_for_false_alarm([entropy[n] for n in others], false_alarm)
        range_gate = gate_for_false_alarm([level_range[n] for n in others], false_alarm, below=True)
        band_gate = gate_for_false_alarm([band_share[n] for n in others], false_alarm, below=True) if band else None
        band_expert = None
        if band_experts is not None:
            band_expert = band_of.get(tuple(sorted(speakers)))
            if band_expert is None or not band:
                sys.exit(f"error: no band expert fold model tested on {', '.join(sorted(speakers))}, or no band gate")
            if band_expert.front_band_hz is None:
                band_expert.front_band_hz = PHONE_BAND_HZ
        settings = None
        if dereverb is not None:
            settings = DereverbSettings(gate_db=gate_for_false_alarm([reverb[n] for n in others], dereverb))
        noise_settings = None
        if denoise is not None:
            noise_settings = DenoiseSettings(gate_db=gate_for_false_alarm([floor[n] for n in others], denoise))
        attach_condition_expert(model, expert, gate, range_gate, {"false_alarm": false_alarm}, band_gate,
                                band_expert, settings, noise_settings)
        log(f"fold of {', '.join(sorted(speakers))}: gates {gate:.3f} nats, {range_gate:.1f} dB range"
            + (f", {band_gate:.1f} dB high band " if band else " ")
            + (f", {settings.gate_db:.3f} dB late reverberation ({dereverb:.0%}) " if settings is not None else "")
            + (f", {noise_settings.gate_db:.1f} dB noise floor ({denoise:.0%}) " if noise_settings is not None else "")
            + f"(the other folds' clean recordings beyond each: {false_alarm:.0%})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="TIMIT-layout corpus")
    ap.add_argument("--folds-dir", type=Path, required=True, help="fold models (benchmarks.alignment.eval_alignment_cv)")
    ap.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=CONDITIONS)
    ap.add_argument("--expert-folds", type=Path, help="fold models trained with --augment, as condition experts")
    ap.add_argument("--band-folds", type=Path,
                    help="fold models trained on band-limited speech, as band experts (with --expert-folds)")
    ap.add_argument("--false-alarm", type=float, default=None,
                    help="share of clean held-out recordings the gate sends to the expert [0.1]")
    ap.add_argument("--seed", type=int, default=0,
                    help="utterance i degraded with seed N + i; 0: the test copies, others: validation copies [0]")
    add_front_end_arguments(ap)
    ap.add_argument("--no-band-gate", action="store_true",
                    help="gate the experts on entropy and energy range only (as shipped before the band gate)")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")
    from benchmarks.alignment.folds import fold_models
    from aligner.alignment.evaluation.phones import score_alignments
    from aligner.errors import AlignerError
    from aligner.io.audio import RepairedAudioWarning, load_audio
    from aligner.io.corpus import find_utterances
    from aligner.io.transcripts import read_phn
    from aligner.phones.sets import get_phone_set

    models = fold_models(args.folds_dir)
    model_of = {s: m for m, speakers in models for s in speakers}
    phone_set = get_phone_set("timit61")
    utts = [u for u in find_utterances(args.data) if u.speaker in model_of]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepairedAudioWarning)
        audio = {u.name: load_audio(u.audio) for u in utts}
    print(f"{len(utts)} utterances of {len(model_of)} held-out speakers, fold models from {args.folds_dir}")
    if args.expert_folds is not None:
        attach_fold_experts(models, fold_models(args.expert_folds), utts, audio, args.false_alarm,
                            band=not args.no_band_gate,
                            band_experts=None if args.band_folds is None else fold_models(args.band_folds),
                            dereverb=args.dereverb, denoise=args.denoise)
    expert_col = f" {'expert':>7}" if args.expert_folds is not None else ""
    print(f"{'condition':<10} {'<=10 ms':>8} {'<=20 ms':>9} {'<=40 ms':>8} {'mean':>8} {'median':>8} {'failed':>7} {'s':>6}"
          + expert_col)
    means = {}
    for condition in args.conditions:
        pairs, failed, routed, t0 = [], 0, 0, time.perf_counter()
        for i, u in enumerate(utts):
            starts, _, labels = read_phn(u.transcript)
            x = degrade(audio[u.name], condition, seed=args.seed + i)
            model = model_of[u.speaker]
            if model.condition_expert is not None:
                routed += model.scored(None, x)[0] is not model
            try:
                intervals = model.align(x, labels, phone_set, name=u.name, split_stops=False)
            except AlignerError:
                failed += 1
                continue
            pairs.append((np.asarray(starts, np.float64) / SR, np.array([iv[0] for iv in intervals])))
        s = score_alignments(pairs)
        means[condition] = s.mean_ms
        print(f"{condition:<10} {s.within_ms[10]:7.1f}% {s.within_ms[20]:8.2f}% {s.within_ms[40]:7.1f}% "
              f"{s.mean_ms:6.1f}ms {s.median_ms:6.1f}ms {failed:7d} {time.perf_counter() - t0:6.1f}"
              + (f" {100 * routed / len(utts):6.0f}%" if expert_col else ""), flush=True)
    for label, group in (("seen kinds", SEEN_KINDS), ("unseen kinds", UNSEEN_KINDS)):
        done = [means[c] for c in group if c in means]
        if done:
            ratio = f", {np.mean(done) / means['clean']:.3f}x clean" if "clean" in means else ""
            print(f"{label}: mean error {np.mean(done):.2f} ms over {len(done)} conditions{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
