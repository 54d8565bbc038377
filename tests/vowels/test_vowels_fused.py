"""Vowels from an alignment fused with the vowel model (:mod:`aligner.vowels.fused`, issue 27).

The tests that align or read recordings need the TIMIT sample (``../shared/data``) and are
skipped, with the path in the reason, without it; the others use the shipped vowel model and
synthetic frames.
"""

from __future__ import annotations

import csv
import io
import shutil
import warnings

import numpy as np
import pytest

from aligner.errors import AlignerError
from aligner.vowels.fused import (ALIGN_MODE, DEFAULT_FUSION, FUSED_MODE, FusionSettings, consonant_runs,
                                  cvc_context, decode_fused, fuse_vowels, fusion_cut, fusion_features, is_flank,
                                  neighbour_bounds)
from tests.conftest import needs_timit

PHONES = [(0.00, 0.10, "sil"), (0.10, 0.16, "B"), (0.16, 0.30, "AE1"), (0.30, 0.36, "D"), (0.36, 0.40, "Z"),
          (0.40, 0.52, "IY0"), (0.52, 0.60, "L"), (0.60, 0.70, "AH0"), (0.75, 0.80, "T")]


def test_settings_are_checked():
    with pytest.raises(ValueError):
        FusionSettings(pulls=())
    with pytest.raises(ValueError):
        FusionSettings(pulls=(-0.1,))
    with pytest.raises(ValueError):
        FusionSettings(mix=1.5)
    with pytest.raises(ValueError):
        FusionSettings(cap=0.0)
    with pytest.raises(ValueError):
        FusionSettings(relocate=1.5)
    with pytest.raises(ValueError):
        FusionSettings(relocate=0.5, relocate_cap=0.0)
    assert FusionSettings(pulls=[0.1, 0.2]).pulls == (0.1, 0.2)
    assert set(DEFAULT_FUSION) == {"words", "phones"}


def test_flanks_and_contexts():
    assert is_flank("B") and is_flank("tcl") and is_flank("dx") and is_flank("NG") and is_flank("q")
    assert not is_flank("HH") and not is_flank("L") and not is_flank("AE1") and not is_flank("sil") and not is_flank("")
    assert cvc_context(PHONES, 2)  # B AE1 D
    assert not cvc_context(PHONES, 5)  # Z IY0 L: a glide after
    assert not cvc_context(PHONES, 7)  # L AH0 (gap) T: a glide before, a pause after
    assert consonant_runs(PHONES, 2) == (0.10, 0.40)  # B before, D Z after
    assert consonant_runs(PHONES, 5) == (0.30, 0.52)  # the run D Z before, nothing after
    assert consonant_runs(PHONES, 7) == (0.60, 0.70)  # no touching obstruent: the vowel alone


def test_cut_starts_on_a_frame_and_maps_the_aligned_frames():
    s = FusionSettings(extend=8)
    a, b, (a_b, a_e) = fusion_cut((0.5012, 0.6033, 0.42, 0.70), 16000, s)
    assert a % 80 == 0 and b <= 16000
    # the aligned frames of the cut are the recording's frames (ceil/floor at 200 per s) shifted by the cut
    assert a_b + a // 80 == int(np.ceil(0.5012 * 200)) and a_e + a // 80 == int(np.floor(0.6033 * 200))
    assert a <= 0.42 * 16000 - 8 * 80 + 80 and b >= 0.70 * 16000 + 8 * 80 - 80
    a, b, (a_b, _) = fusion_cut((0.01, 0.05, 0.0, 0.08), 3200, s)  # clipped to the recording
    assert a == 0 and b <= 3200 and a_b == 2


def test_neighbour_bounds():
    vowels = [(0.2, 0.3), (0.5, 0.6), (0.55, 0.7), (1.0, 1.2)]  # the two in the middle overlap
    got = neighbour_bounds(vowels, 2.0)
    np.testing.assert_allclose(got, [[0.0, 0.5], [0.3, 1.0], [0.3, 1.0], [0.7, 2.0]])
    assert neighbour_bounds([(0.2, 0.3, 0.1, 0.4)], 1.0).tolist() == [[0.0, 1.0]]


def _shipped_vowel_model():
    from aligner.vowels.pipeline import load_vowel_model

    return load_vowel_model(None)


def test_pull_and_cap_on_the_decoder():
    model = _shipped_vowel_model()
    rng = np.random.default_rng(1)
    features = rng.standard_normal((80, 22))
    features[:, 7] = 0.9  # voiced
    features[:, 11] = 0.9  # vowel-like
    free = decode_fused(model, features, (30, 45), FusionSettings(pulls=(0.0,)))
    (t_b, t_e), _ = model.decode_frames(features, first=0, last=79)
    assert free[0] == (t_b, t_e)  # no pull, whole cut: the transcript-free decoder on the same frames
    held = decode_fused(model, features, (30, 45), FusionSettings(pulls=(1e3,)))
    assert abs(held[0][0] - 30) <= model.tau_on and abs(held[0][1] - 45) <= model.tau_off
    two = decode_fused(model, features, (30, 45), FusionSettings(pulls=(0.0, 1e3)))
    assert two[0] == pytest.approx(tuple((np.array(free[0]) + np.array(held[0])) / 2))
    window = decode_fused(model, features, (30, 45), FusionSettings(pulls=(0.0,), margin=2))
    assert abs(window[0][0] - 30) <= 2 and abs(window[0][1] - 45) <= 2
    # the pulls decoded on one set of window scores: each as its own decode would give it
    from aligner.vowels.task import make_vowel_input

    x = make_vowel_input(features, model.min_dur, model.max_dur, columns=model.columns, widths=model.widths,
                         outside_width=model.outside_width)
    y, pulls = np.array([30, 45]), [0.0, -0.5, -50.0, 0.0]
    together = model.task.decode_cut_pulls(features, model.weights, y, pulls, cap=6.0, columns=model.columns,
                                           widths=model.widths, outside_width=model.outside_width,
                                           min_dur=model.min_dur, max_dur=model.max_dur, onset_range=(0, 79),
                                           offset_range=(0, 79))
    for eps, (y_hat, value) in zip(pulls, together):
        alone = model.task.decode_with_value(x, model.weights, y=y if eps else None, eps=eps, cap=6.0)
        assert tuple(y_hat) == tuple(alone[0]) and value == pytest.approx(alone[1], rel=1e-9, abs=1e-9)
    assert tuple(together[2][0]) != tuple(together[0][0])


def test_decode_cut_pulls_is_one_decode_per_pull_on_the_cut():
    """The fusion's one-pass decoder (:meth:`VowelTask.decode_cut_pulls`) gives what building the
    decoder input and :meth:`VowelTask.decode_with_value` per pull give: the same outputs, the
    objectives to rounding; and the same errors."""
    from aligner.errors import AlignmentError, FeatureError
    from aligner.vowels.task import make_vowel_input

    model = _shipped_vowel_model()
    rng = np.random.default_rng(7)
    n_same = 0
    for trial in range(40):
        T = int(rng.integers(12, 90))
        features = rng.standard_normal((T, 22)) * rng.uniform(0.2, 3.0, 22)
        on = (int(rng.integers(0, T // 2)), int(rng.integers(T // 2, T)))
        off = (int(rng.integers(0, T // 2)), int(rng.integers(T // 2, T)))
        a_b = int(rng.integers(0, T - 1))
        y = None if trial % 5 == 0 else (a_b, int(rng.integers(a_b + 1, T)))
        pulls, cap = [0.0, -float(rng.uniform(0, 80))], (None if trial % 3 == 0 else float(rng.uniform(1, 12)))
        layout = dict(columns=model.columns, widths=model.widths, outside_width=model.outside_width)
        try:
            x = make_vowel_input(features, model.min_dur, model.max_dur, on, off, **layout)
        except AlignmentError:
            with pytest.raises(AlignmentError):
                model.task.decode_cut_pulls(features, model.weights, y, pulls, cap, min_dur=model.min_dur,
                                            max_dur=model.max_dur, onset_range=on, offset_range=off, **layout)
            continue
        want = [model.task.decode_with_value(x, model.weights, y=None if y is None or not eps else np.array(y),
                                             eps=eps, cap=cap) for eps in pulls]
        got = model.task.decode_cut_pulls(features, model.weights, y, pulls, cap, min_dur=model.min_dur,
                                          max_dur=model.max_dur, onset_range=on, offset_range=off, **layout)
        for (y_want, v_want), (y_got, v_got) in zip(want, got):
            assert tuple(y_got) == tuple(y_want)
            assert v_got == pytest.approx(v_want, rel=1e-9, abs=1e-9)
            n_same += 1
    assert n_same >= 40
    bad = rng.standard_normal((30, 22))
    bad[4, model.columns[0]] = np.nan
    with pytest.raises(FeatureError, match="non-finite"):
        model.task.decode_cut_pulls(bad, model.weights, None, [0.0], None, columns=model.columns,
                                    widths=model.widths, outside_width=model.outside_width, min_dur=model.min_dur,
                                    max_dur=model.max_dur, onset_range=(0, 29), offset_range=(0, 29))


def test_pull_pair_and_cap_match_brute_force():
    """The decoder with a pull of its own per boundary and a cap is the exact argmax of
    ``w . phi(y) + eps_on * min([|t_b - a_b| - tau]_+, cap) + eps_off * min([|t_e - a_e| - tau]_+, cap)``."""
    from aligner.vowels.task import make_vowel_input

    model = _shipped_vowel_model()
    rng = np.random.default_rng(2)
    features = rng.standard_normal((40, 22))
    x = make_vowel_input(features, model.min_dur, model.max_dur, (1, 38), (1, 38), columns=model.columns,
                         widths=model.widths, outside_width=model.outside_width)
    norm = float(np.linalg.norm(model.weights))
    ref = (12, 25)
    for eps, cap in (((-0.3 * norm, -0.1 * norm), 3.0), ((-0.05 * norm, -0.5 * norm), None), ((0.0, -0.2 * norm), 2.0)):
        y, value = model.task.decode_with_value(x, model.weights, y=np.array(ref), eps=eps, cap=cap)
        best, best_value = None, -np.inf
        for b in range(1, 39):
            for e in range(b + model.min_dur, min(b + model.max_dur, 38) + 1):
                c_on = max(abs(b - ref[0]) - model.tau_on, 0.0)
                c_off = max(abs(e - ref[1]) - model.tau_off, 0.0)
                if cap is not None:
                    c_on, c_off = min(c_on, cap), min(c_off, cap)
                v = model.task.score(x, (b, e), model.weights) + eps[0] * c_on + eps[1] * c_off
                if v > best_value + 1e-9:
                    best, best_value = (b, e), v
        assert tuple(int(v) for v in y) == best and value == pytest.approx(best_value, rel=1e-9, abs=1e-6)


def test_silence_keeps_the_aligned_interval():
    model = _shipped_vowel_model()
    samples = np.zeros(16000, dtype=np.float32)
    out = fuse_vowels(model, samples, [(0.40, 0.50, 0.30, 0.60)], DEFAULT_FUSION["words"])
    assert len(out) == 1 and out[0].mode == ALIGN_MODE
    assert (out[0].onset_s, out[0].offset_s) == (0.40, 0.50) and out[0].note


def _layout(tmp_path, timit_dir, stems, suffix):
    files = []
    for stem in stems:
        w = timit_dir / stem
        d = tmp_path / w.parent.name
        d.mkdir(exist_ok=True)
        shutil.copy(w, d / w.name)
        shutil.copy(w.with_suffix(suffix), d / w.with_suffix(suffix).name)
        files.append(d / w.name)
    return files


STEMS = ["dr1-fvmh0/sx206.wav", "dr3-madc0/sa2.wav", "dr5-ftlg0/si483.wav", "dr8-mbcg0/sx327.wav"]


@needs_timit
def test_fused_rows_keep_every_aligned_vowel_and_its_columns(tmp_path, timit_dir):
    from aligner import api

    _layout(tmp_path, timit_dir, STEMS, ".txt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = api.measure_vowels([tmp_path], mode="align", fuse=False)
        fused = api.measure_vowels([tmp_path], mode="align")
    assert not plain.failed and not fused.failed
    assert len(fused.records) == len(plain.records) > 30
    assert {r.mode for r in plain.records} == {"align"}
    assert sum(r.mode == FUSED_MODE for r in fused.records) >= 0.9 * len(fused.records)
    moved = 0
    for p, f in zip(plain.records, fused.records):
        assert (f.file, f.word, f.word_start_s, f.word_end_s, f.vowel, f.stress, f.confidence) == \
               (p.file, p.word, p.word_start_s, p.word_end_s, p.vowel, p.stress, p.confidence)
        assert f.offset_s > f.onset_s and f.duration_s == pytest.approx(f.offset_s - f.onset_s)
        if f.mode == ALIGN_MODE:
            assert (f.onset_s, f.offset_s) == (p.onset_s, p.offset_s)
        moved += (f.onset_s, f.offset_s) != (p.onset_s, p.offset_s)
    assert moved > len(fused.records) // 2
    rows = list(csv.DictReader(io.StringIO(api.vowels_csv(fused.records))))
    assert {r["mode"] for r in rows} <= {"fused", "align"}
    assert all(r["score"] for r in rows if r["mode"] == "fused")
    assert all(not r["score"] for r in rows if r["mode"] == "align")
    words = api.measure_vowels([tmp_path], mode="align", words=["water", "oily", "rag"])
    assert words.records and {r.word.lower() for r in words.records} <= {"water", "oily", "rag"}


@needs_timit
def test_fusion_is_closer_to_the_hand_labels_than_the_alignment(tmp_path, timit_dir):
    """The CVC vowels of four utterances (shipped models, which heard these speakers: this checks
    the mechanism, the held-out figures are in docs/results.md)."""
    from aligner import api
    from aligner.io.transcripts import read_phn
    from aligner.vowels.cvc import cvc_tokens

    _layout(tmp_path, timit_dir, STEMS, ".txt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = api.measure_vowels([tmp_path], mode="align", fuse=False).records
        fused = api.measure_vowels([tmp_path], mode="align").records
    errors = {"plain": [], "fused": []}
    for stem in STEMS:
        starts, ends, labels = read_phn((timit_dir / stem).with_suffix(".phn"))
        name = stem
        for tok in cvc_tokens(starts, ends, labels):
            ref = np.array([tok.vowel_start, tok.vowel_end]) / 16000
            for key, recs in (("plain", plain), ("fused", fused)):
                mine = [r for r in recs if r.file == name]
                best = max(mine, key=lambda r: min(r.offset_s, ref[1]) - max(r.onset_s, ref[0]))
                errors[key].append(np.abs(np.array([best.onset_s, best.offset_s]) - ref))
    plain_mae, fused_mae = np.mean(errors["plain"], axis=0), np.mean(errors["fused"], axis=0)
    assert len(errors["fused"]) >= 20
    assert fused_mae[0] < plain_mae[0] and fused_mae[1] < plain_mae[1], (plain_mae, fused_mae)


@needs_timit
def test_model_mode_is_unchanged_by_fusion(tmp_path, timit_dir):
    """A file without a transcript is measured by the vowel model alone, whatever ``fuse`` says."""
    import soundfile as sf

    from aligner import api
    from aligner.io.audio import load_audio
    from aligner.io.transcripts import read_phn
    from aligner.vowels.cvc import cvc_tokens

    w = timit_dir / STEMS[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = load_audio(w)
    starts, ends, labels = read_phn(w.with_suffix(".phn"))
    for k, tok in enumerate(cvc_tokens(starts, ends, labels)[:4]):
        sf.write(tmp_path / f"cut{k}.wav", samples[tok.cut_start:tok.cut_end], 16000, subtype="PCM_16")
    a = api.vowels_csv(api.measure_vowels([tmp_path], fuse=True).records)
    b = api.vowels_csv(api.measure_vowels([tmp_path], fuse=False).records)
    assert a == b and a.startswith("file,onset_s,offset_s,duration_s,score,flag\n") and a.count("\n") == 5


@needs_timit
def test_an_alignment_the_user_brings(tmp_path, timit_dir):
    """A TextGrid whose tier holds phone symbols is measured as it is (nothing aligned), its words
    tier giving the words; a tier of words is aligned instead."""
    from aligner import api
    from aligner.io.textgrids import write_textgrid
    from aligner.io.transcripts import read_phn
    from aligner.vowels.from_alignment import vowel_and_stress
    from aligner.vowels.pipeline import _user_alignment

    w = timit_dir / STEMS[0]
    shutil.copy(w, tmp_path / w.name)
    starts, ends, labels = read_phn(w.with_suffix(".phn"))
    words = [line.split() for line in w.with_suffix(".wrd").read_text().splitlines() if line.strip()]
    grid = tmp_path / w.with_suffix(".TextGrid").name
    phones = [(s / 16000, e / 16000, lab) for s, e, lab in zip(starts, ends, labels)]
    write_textgrid(grid, [("words", [(int(a) / 16000, int(b) / 16000, t) for a, b, t in words]),
                          ("phones", phones)], xmax=ends[-1] / 16000)
    assert _user_alignment(grid, "words") is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = api.measure_vowels([tmp_path / w.name], mode="align", tier="phones")
    assert not report.failed
    n_vowels = sum(vowel_and_stress(lab) is not None for lab in labels)
    assert len(report.records) == n_vowels
    assert {r.vowel for r in report.records} <= {lab for lab in labels}
    assert sum(r.mode == FUSED_MODE for r in report.records) >= n_vowels - 3
    assert all(r.word for r in report.records[1:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        as_aligned = api.measure_vowels([tmp_path / w.name], mode="align", tier="phones", fuse=False)
    got = [(r.onset_s, r.offset_s) for r in as_aligned.records]
    assert np.allclose(got, [(s, e) for s, e, lab in phones if vowel_and_stress(lab) is not None], atol=1e-4)


@needs_timit
def test_a_recording_shorter_than_the_brought_alignment_is_refused(tmp_path, timit_dir):
    from aligner import api
    from aligner.io.textgrids import write_textgrid

    w = timit_dir / STEMS[0]
    shutil.copy(w, tmp_path / w.name)
    write_textgrid(tmp_path / w.with_suffix(".TextGrid").name,
                   [("phones", [(0.0, 1.0, "b"), (1.0, 40.0, "ae"), (40.0, 41.0, "d")])], xmax=41.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = api.measure_vowels([tmp_path / w.name], mode="align", tier="phones")
    assert not report.records and report.failed and "runs to" in report.failed[0][1]


def test_fuse_argument_is_checked(tmp_path):
    from aligner import api

    with pytest.raises(TypeError):
        api.measure_vowels([tmp_path], fuse="yes")
    with pytest.raises(AlignerError):  # an empty directory: the argument passed, the input did not
        api.measure_vowels([tmp_path], fuse=FusionSettings())


@needs_timit
def test_a_vowel_aligned_in_silence_is_relocated(timit_dir):
    """A vowel whose aligned interval is moved into the leading silence (as a word alignment
    sometimes puts a first word) comes back to its own frames with ``relocate``; without it, or
    for vowels aligned where they are, nothing changes; with ``overlap`` no fused interval
    leaves its aligned one."""
    from dataclasses import replace

    from aligner.io.audio import load_audio
    from aligner.io.transcripts import read_phn
    from aligner.vowels.cvc import cvc_tokens

    model = _shipped_vowel_model()
    audio = timit_dir / "dr3-falk0/si658.wav"  # 0.56 s of silence before "the"
    samples = load_audio(audio)
    starts, ends, labels = read_phn(audio.with_suffix(".phn"))
    toks = cvc_tokens(starts, ends, labels)
    spans = [(t.vowel_start / 16000, t.vowel_end / 16000, t.vowel_start / 16000, t.vowel_end / 16000) for t in toks]
    first = spans[0]
    assert first[0] > 0.3 and starts[0] == 0 and labels[0] == "h#" and ends[0] / 16000 > 0.5
    moved = [(0.1, 0.1 + first[1] - first[0], 0.1, 0.1 + first[1] - first[0])] + spans[1:]
    base = FusionSettings(extend=8, pulls=(0.05, 0.1), recording_posteriors=True)  # an uncapped pull
    plain = fuse_vowels(model, samples, moved, base)
    again = fuse_vowels(model, samples, moved, replace(base, relocate=0.5))
    capped = fuse_vowels(model, samples, moved, replace(base, relocate=0.5, relocate_cap=10.0))
    assert capped[0].mode == FUSED_MODE and capped[0].onset_s < first[1] and capped[0].offset_s > first[0]
    assert plain[0].offset_s < first[0]  # the pull keeps it in the silence (or it stays aligned)
    assert again[0].mode == FUSED_MODE and again[0].onset_s < first[1] and again[0].offset_s > first[0]
    assert abs(again[0].onset_s - first[0]) < 0.03 and abs(again[0].offset_s - first[1]) < 0.03
    cuts, _ = fusion_features(model, samples, moved, replace(base, relocate=0.5))
    assert cuts[0][3] is True and not any(len(c) > 3 for c in cuts[1:])
    for p, a in zip(plain[1:], again[1:]):
        assert (p.onset_s, p.offset_s, p.mode) == (a.onset_s, a.offset_s, a.mode)
    kept = fuse_vowels(model, samples, moved, replace(base, overlap=True))
    for v, k in zip(moved, kept):
        assert k.mode == ALIGN_MODE or (k.onset_s < v[1] and k.offset_s > v[0])


def test_silence_keeps_the_aligned_interval_with_the_fusion_model():
    from aligner.io.bundles import FUSION_MODEL_NAME, VOWEL_KIND, default_model_dir
    from aligner.vowels.model import VowelModel

    model = VowelModel.load(default_model_dir(VOWEL_KIND, FUSION_MODEL_NAME))
    assert model.front_end == "frames"
    out = fuse_vowels(model, np.zeros(16000, dtype=np.float32), [(0.40, 0.50, 0.30, 0.60)], DEFAULT_FUSION["words"])
    assert len(out) == 1 and out[0].mode == ALIGN_MODE and (out[0].onset_s, out[0].offset_s) == (0.40, 0.50)


@needs_timit
def test_the_fusion_model_is_the_shipped_frames_one_unless_another_is_given(tmp_path, timit_dir):
    """By default the aligned vowels are re-measured by models/timit-vowels-fusion; --fusion-model
    names another; --model alone fuses with that model, as before 0.25.0."""
    from aligner import api
    from aligner.io.bundles import FUSION_MODEL_NAME, VOWEL_KIND, default_model_dir

    _layout(tmp_path, timit_dir, STEMS[:2], ".txt")
    shipped, frames = default_model_dir(VOWEL_KIND), default_model_dir(VOWEL_KIND, FUSION_MODEL_NAME)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = {name: [(r.onset_s, r.offset_s, r.mode) for r in api.measure_vowels([tmp_path], mode="align",
                                                                                 **kwargs).records]
                for name, kwargs in (("default", {}), ("frames", {"fusion_model": frames}),
                                     ("cuts", {"fusion_model": shipped}), ("model", {"model": shipped}))}
    assert rows["default"] == rows["frames"] and rows["model"] == rows["cuts"]
    assert rows["default"] != rows["cuts"] and len(rows["default"]) == len(rows["cuts"]) > 10


@needs_timit
def test_a_long_recording_is_fused_a_stretch_at_a_time(tmp_path, timit_dir, monkeypatch):
    """The frames model measures a recording's vowels a stretch of cuts at a time
    (FUSION_SPAN_SAMPLES), from the samples in memory or read from the file: the same rows as one
    stretch over the whole recording, with relocation too."""
    from dataclasses import replace

    import soundfile as sf

    from aligner.io.audio import file_samples, load_audio
    from aligner.io.bundles import FUSION_MODEL_NAME, VOWEL_KIND, default_model_dir
    from aligner.io.transcripts import read_phn
    from aligner.vowels import fused
    from aligner.vowels.cvc import cvc_tokens
    from aligner.vowels.model import VowelModel

    model = VowelModel.load(default_model_dir(VOWEL_KIND, FUSION_MODEL_NAME))
    parts, spans, offset, moved = [], [], 0, None
    for k, stem in enumerate(STEMS):
        audio = timit_dir / stem
        x = load_audio(audio)
        starts, ends, labels = read_phn(audio.with_suffix(".phn"))
        tokens = [((t.vowel_start + offset) / 16000, (t.vowel_end + offset) / 16000) for t in
                  cvc_tokens(starts, ends, labels)]
        if k == 2:  # its first vowel aligned into the recording's leading silence: relocated
            moved, (a, b) = len(spans), tokens[0]
            tokens[0] = ((offset + starts[0]) / 16000 + 0.02, (offset + starts[0]) / 16000 + 0.02 + b - a)
            assert labels[0] == "h#" and ends[0] / 16000 > 0.04 + b - a
        spans += [(a, b, a, b) for a, b in tokens]
        parts.append(x)
        offset += len(x)
    samples = np.concatenate(parts)
    sf.write(tmp_path / "joined.wav", samples, 16000, subtype="FLOAT")
    samples = load_audio(tmp_path / "joined.wav")
    assert len(spans) > 8
    cuts, _ = fusion_features(model, samples, spans, replace(DEFAULT_FUSION["words"], relocate=0.5))
    assert [i for i, c in enumerate(cuts) if len(c) > 3] == [moved]
    for settings in (DEFAULT_FUSION["words"], replace(DEFAULT_FUSION["words"], relocate=0.5)):
        whole = fuse_vowels(model, samples, spans, settings)
        monkeypatch.setattr(fused, "FUSION_SPAN_SAMPLES", 16000)
        reader = file_samples(tmp_path / "joined.wav")
        stretches = fuse_vowels(model, samples, spans, settings)
        streamed = fuse_vowels(model, reader, spans, settings)
        reader.close()
        monkeypatch.undo()
        assert stretches == whole and streamed == whole
        assert sum(v.mode == FUSED_MODE for v in whole) > len(spans) // 2
