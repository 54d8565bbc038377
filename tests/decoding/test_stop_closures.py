"""Stop closures: expansion before decoding, merging after, the align path, and the
ARPAbet-style reference conversion (aligner.alignment.evaluation.references)."""

from pathlib import Path

import numpy as np
import pytest

from aligner import api
from aligner.alignment.model import times_to_intervals
from aligner.alignment.evaluation.references import arpabet_reference
from aligner.io.audio import SAMPLE_RATE, load_audio
from aligner.io.transcripts import read_transcript
from aligner.phones.sets import CLASSES39, get_phone_set
from aligner.alignment.decoding.stop_closures import (
    CLOSURE_OF_STOP,
    expand_stop_closures,
    merge_stop_closures,
    phone_set_has_closures,
    should_split_stops,
)

REPO = Path(__file__).resolve().parents[2]
DEMO_WAV = REPO / "examples" / "demo.wav"
DEMO_PHONES = REPO / "examples" / "demo.phones"
ARPABET = get_phone_set("arpabet")
TIMIT39 = get_phone_set("timit39")
TIMIT61 = get_phone_set("timit61")
SIL = CLASSES39.index("sil")


def classes_of(*names):
    return [CLASSES39.index(n) for n in names]


def test_arpabet_stops_with_stress_digits():
    x = expand_stop_closures(["sil", "D", "AE1", "T", "sil"], ARPABET)
    assert x.symbols == ["sil", "dcl", "D", "AE1", "tcl", "T", "sil"]
    assert x.classes.tolist() == classes_of("sil", "sil", "d", "ae", "sil", "t", "sil")
    assert x.owner.tolist() == [0, 1, 1, 2, 3, 3, 4]
    assert x.n_output == 5 and x.n_closures == 2


def test_every_stop_gets_its_timit_closure():
    stops = ["B", "D", "G", "P", "T", "K"]
    x = expand_stop_closures(stops, ARPABET)
    assert x.symbols[0::2] == ["bcl", "dcl", "gcl", "pcl", "tcl", "kcl"]
    assert x.symbols[1::2] == stops
    assert (x.classes[0::2] == SIL).all()


def test_affricates_get_tcl_and_dcl():
    x = expand_stop_closures(["CH", "IY1", "JH", "AH0"], ARPABET)
    assert x.symbols == ["tcl", "CH", "IY1", "dcl", "JH", "AH0"]
    assert x.classes.tolist() == classes_of("sil", "ch", "iy", "sil", "jh", "ah")
    assert x.owner.tolist() == [0, 0, 1, 2, 2, 3]


def test_timit39_input_is_split_too():
    assert should_split_stops(TIMIT39)
    x = expand_stop_closures(["sil", "k", "ae", "dx", "t", "sil"], TIMIT39)
    # the flap dx is not a stop with a closure
    assert x.symbols == ["sil", "kcl", "k", "ae", "dx", "tcl", "t", "sil"]
    assert x.owner.tolist() == [0, 1, 1, 2, 3, 4, 4, 5]


def test_no_stops_no_closures():
    x = expand_stop_closures(["sil", "S", "IY1", "sil"], ARPABET)
    assert x.symbols == ["sil", "S", "IY1", "sil"] and x.n_closures == 0
    assert x.owner.tolist() == [0, 1, 2, 3]


def test_automatic_choice_by_phone_set_and_override():
    assert phone_set_has_closures(TIMIT61)
    assert not phone_set_has_closures(ARPABET) and not phone_set_has_closures(TIMIT39)
    assert should_split_stops(ARPABET) and not should_split_stops(TIMIT61)
    assert should_split_stops(TIMIT61, True) and not should_split_stops(ARPABET, False)
    assert set(CLOSURE_OF_STOP) == {"b", "d", "g", "p", "t", "k", "ch", "jh"}


def test_merge_starts_each_phone_at_its_closure():
    x = expand_stop_closures(["sil", "D", "AE1", "T", "sil"], ARPABET)
    internal = np.array([0.0, 0.30, 0.36, 0.38, 0.50, 0.56, 0.60])
    assert merge_stop_closures(internal, x).tolist() == [0.0, 0.30, 0.38, 0.50, 0.60]
    with pytest.raises(ValueError):
        merge_stop_closures(internal[:-1], x)


def test_merged_intervals_have_input_symbols_and_cover_the_recording():
    rng = np.random.default_rng(1)
    symbols = "sil B AH1 T CH ER0 JH K AE1 G P sil".split()
    x = expand_stop_closures(symbols, ARPABET)
    duration_s = 3.0
    internal = np.concatenate([[0.0], np.sort(rng.uniform(0.01, 2.99, len(x.symbols) - 1))])
    intervals = times_to_intervals(merge_stop_closures(internal, x), symbols, duration_s)
    assert [s for _, _, s in intervals] == symbols
    starts = np.array([a for a, _, _ in intervals])
    assert starts[0] == 0.0 and intervals[-1][1] == duration_s
    assert np.all(np.diff(starts) > 0)
    assert all(a < b for a, b, _ in intervals)
    assert all(intervals[k][1] == intervals[k + 1][0] for k in range(len(intervals) - 1))


def test_align_demo_gives_input_symbols_with_and_without_split():
    symbols, _ = read_transcript(DEMO_PHONES)
    duration_s = len(load_audio(DEMO_WAV)) / SAMPLE_RATE
    split = api.align(DEMO_WAV, DEMO_PHONES)  # arpabet: split automatically
    whole = api.align(DEMO_WAV, DEMO_PHONES, split_stops=False)
    for intervals in (split, whole):
        assert [s for _, _, s in intervals] == symbols
        starts = np.array([a for a, _, _ in intervals])
        assert starts[0] == 0.0 and np.all(np.diff(starts) > 0)
        assert intervals[-1][1] == pytest.approx(duration_s)
    # the closure now belongs to the stop: some stop starts earlier, none later
    stop_idx = [k for k, s in enumerate(symbols) if ARPABET.class_of(s) in CLOSURE_OF_STOP]
    shift = np.array([split[k][0] - whole[k][0] for k in stop_idx])
    assert (shift < 0).any()


def test_timit61_transcript_is_decoded_as_given():
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(SAMPLE_RATE)).astype(np.float32)
    phones = "h# dcl d aa tcl t h#"
    auto = api.align(samples, phones, phone_set="timit61", sr=SAMPLE_RATE)
    unsplit = api.align(samples, phones, phone_set="timit61", split_stops=False, sr=SAMPLE_RATE)
    assert auto == unsplit
    assert [s for _, _, s in auto] == phones.split()


def test_too_short_for_closures_falls_back_in_automatic_mode():
    rng = np.random.default_rng(0)  # 4 frames of noise: the 4 phones fit, with 2 closures they do not
    samples = (0.1 * rng.standard_normal(int(0.06 * SAMPLE_RATE))).astype(np.float32)
    intervals = api.align(samples, "D AA1 T sil", phone_set="arpabet", sr=SAMPLE_RATE)
    assert [s for _, _, s in intervals] == ["D", "AA1", "T", "sil"]


# -- the ARPAbet-style reference conversion (aligner.alignment.evaluation.references) ---------------------

def test_arpabet_reference_conversion():
    labels = ["h#", "dcl", "d", "ix", "kcl", "tcl", "t", "q", "ae", "tcl", "ch", "dx", "ax", "pau", "h#"]
    starts = np.arange(len(labels), dtype=float)
    ref_starts, symbols = arpabet_reference(starts, labels)
    # dcl d -> d at the closure; unreleased kcl -> k; q's time goes to the next phone;
    # tcl ch -> ch; dx -> d; pau h# -> one sil
    assert symbols == ["sil", "d", "ih", "k", "t", "ae", "ch", "d", "ah", "sil"]
    assert ref_starts.tolist() == [0, 1, 3, 4, 5, 7, 9, 11, 12, 13]
    assert ARPABET.first_unknown(symbols) is None


def test_cli_split_stops_flag(tmp_path):
    from click.testing import CliRunner

    from aligner.cli import main
    from aligner.io.textgrids import read_interval_tier

    outs = {}
    for flag in ("--split-stops", "--no-split-stops"):
        out = tmp_path / f"{flag.strip('-')}.TextGrid"
        result = CliRunner().invoke(main, ["align", str(DEMO_WAV), str(DEMO_PHONES), "-o", str(out), flag])
        assert result.exit_code == 0, result.output
        outs[flag] = read_interval_tier(out, "phones")
    symbols, _ = read_transcript(DEMO_PHONES)
    for intervals in outs.values():
        assert [s for *_, s in intervals] == symbols
    assert outs["--split-stops"] != outs["--no-split-stops"]


def test_closures_get_closure_duration_statistics():
    from aligner.alignment.model import DurationStats

    n = len(CLASSES39)
    lengths_by_class = [[3, 4]] * n
    lengths_by_class[SIL] = [10, 30]
    by_symbol = {"dcl": (SIL, [5] * 12), "d": (CLASSES39.index("d"), [2] * 12)}
    stats = DurationStats.fit(lengths_by_class, lengths_by_symbol=by_symbol)
    x = expand_stop_closures(["sil", "D", "AH0", "sil"], ARPABET)
    mean, _, _ = stats.for_phones(x.classes, x.symbols)
    assert mean.tolist() == [20.0, 5.0, 2.0, 3.5, 20.0]  # sil: class; dcl and D: their own
    # a model without per-symbol statistics gives the closure class sil's
    old = DurationStats(stats.mean, stats.std, stats.max_frames)
    assert old.for_phones(x.classes, x.symbols)[0].tolist() == [20.0, 20.0, 3.5, 3.5, 20.0]
