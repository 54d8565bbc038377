"""The Python API's conventions: samples with their rate, named results, loaded models everywhere."""

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from aligner import api
from aligner.errors import AudioError
from aligner.frames import SAMPLE_RATE
from aligner.io.audio import load_audio
from aligner.io.textgrids import Interval, read_interval_tier

REPO = Path(__file__).resolve().parents[2]
DEMO_WAV = REPO / "examples" / "demo.wav"
DEMO_PHONES = REPO / "examples" / "demo.phones"


def test_align_returns_named_intervals():
    intervals = api.align(DEMO_WAV, DEMO_PHONES)
    assert all(isinstance(iv, Interval) for iv in intervals)
    assert intervals[0].start_s == 0.0 and intervals[-1].end_s == pytest.approx(len(load_audio(DEMO_WAV)) / SAMPLE_RATE)
    assert [iv.label for iv in intervals] == DEMO_PHONES.read_text().split()


def test_samples_need_their_rate_and_are_resampled():
    y16 = load_audio(DEMO_WAV)
    with pytest.raises(TypeError, match="sample rate"):
        api.align(y16, DEMO_PHONES)
    at16 = api.align(y16, DEMO_PHONES, sr=SAMPLE_RATE)
    assert at16 == api.align(DEMO_WAV, DEMO_PHONES)  # the same samples, the same alignment
    import librosa

    y44 = librosa.resample(y16, orig_sr=SAMPLE_RATE, target_sr=44100)
    stereo = np.stack([y44, y44])  # librosa's (channels, n)
    at44 = api.align(stereo, DEMO_PHONES, sr=44100)
    starts16 = np.array([iv.start_s for iv in at16])
    starts44 = np.array([iv.start_s for iv in at44])
    assert np.median(np.abs(starts44 - starts16)) <= 0.010  # a round trip through 44.1 kHz moves little
    pcm = np.round(y16 * 32767).astype(np.int16)  # integer samples are scaled to full scale
    assert [iv.label for iv in api.align(pcm, DEMO_PHONES, sr=SAMPLE_RATE)] == [iv.label for iv in at16]


@pytest.mark.parametrize("bad, message", [(np.zeros(16000, np.float32), "silent"),
                                          (np.zeros(0, np.float32), "no samples"),
                                          (np.full(16000, np.nan, np.float32), "NaN")])
def test_bad_samples_give_one_line_errors(bad, message):
    with pytest.raises(AudioError, match=message):
        api.align(bad, "sil aa sil", sr=SAMPLE_RATE)
    with pytest.raises(AudioError, match="sample rate"):
        api.align(np.ones(100), "sil aa sil", sr=0)


def test_align_corpus_takes_a_loaded_model(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for stem in ("a", "b"):
        sf.write(corpus / f"{stem}.wav", load_audio(DEMO_WAV), SAMPLE_RATE)
        (corpus / f"{stem}.phn").write_text("\n".join(DEMO_PHONES.read_text().split()) + "\n")
    model = api.load_model()
    for jobs in (1, 2):
        report = api.align_corpus(corpus, tmp_path / f"out{jobs}", model=model, jobs=jobs)
        assert not report.failed and len(report.written) == 2
        written = read_interval_tier(report.written[0], "phones")
        direct = api.align(DEMO_WAV, DEMO_PHONES, model=model)
        assert [iv.label for iv in written] == [iv.label for iv in direct]
        np.testing.assert_allclose([iv.start_s for iv in written], [iv.start_s for iv in direct], atol=1e-4)


def test_evaluate_returns_named_result(tmp_path):
    out = api.align_file(DEMO_WAV, DEMO_PHONES, tmp_path / "hyp" / "demo.TextGrid")
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "demo.TextGrid").write_bytes(out.read_bytes())
    result = api.evaluate(tmp_path / "ref", tmp_path / "hyp")
    assert isinstance(result, api.Evaluation) and result.problems == []
    assert result.scores.mean_ms == 0.0


def test_phones_without_edge_silences_get_them():
    """A phone transcript that neither begins nor ends with a silence (ARPAbet users often write
    none) is aligned with a silence added at either end, whose intervals are unlabelled: the
    first phone no longer takes the recording's leading silence. Written silences, and a TIMIT
    closure first (its class is silence), add nothing."""
    from aligner.alignment.pipeline import with_edge_silences_of
    from aligner.phones.sets import get_phone_set

    written = DEMO_PHONES.read_text().split()
    assert written[0] == written[-1] == "sil"
    bare = written[1:-1]
    with_sil = api.align(DEMO_WAV, " ".join(written), phone_set="arpabet")
    without = api.align(DEMO_WAV, " ".join(bare), phone_set="arpabet")
    assert [iv.label for iv in without] == [""] + bare + [""]
    assert [(iv.start_s, iv.end_s) for iv in without] == [(iv.start_s, iv.end_s) for iv in with_sil]
    assert without[1].start_s > 0.2  # the demo's speech starts about 0.26 s in
    arpabet, timit = get_phone_set("arpabet"), get_phone_set("timit61")
    assert with_edge_silences_of(["SH", "IY1"], arpabet) == (["sil", "SH", "IY1", "sil"], [True, False, False, True])
    assert with_edge_silences_of(["sil", "SH", "sp"], arpabet) == (["sil", "SH", "sp"], [False] * 3)
    assert with_edge_silences_of(["bcl", "b", "ay"], timit) == (["bcl", "b", "ay", "h#"], [False] * 3 + [True])
