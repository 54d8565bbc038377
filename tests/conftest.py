"""Shared test fixtures: where the hand-labelled data lives, and skips when it is absent.

The data (``../shared/data`` beside the checkout: the TIMIT sample, the AutoVowelDuration
tutorial and the VoxAngeles languages) is never committed. Tests that need it use the fixtures or
markers below and are skipped, with the path in the reason, when it is not there (a user's fresh
clone).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]

# The tests live in one package per room (``tests.<room>``); a test module imports a helper of
# another room's module, or of this file, by its package path (``from tests.conftest import ...``).
SHARED_DATA = REPO.parent / "shared" / "data"
TIMIT = SHARED_DATA / "timit-sample"
VOWEL_TUTORIAL = SHARED_DATA / "vowel-tutorial"
VOXANGELES = SHARED_DATA / "voxangeles-train"

needs_timit = pytest.mark.skipif(not TIMIT.is_dir(), reason=f"TIMIT sample not found at {TIMIT}")
needs_voxangeles = pytest.mark.skipif(not VOXANGELES.is_dir(), reason=f"VoxAngeles data not found at {VOXANGELES}")
needs_vowel_tutorial = pytest.mark.skipif(
    not VOWEL_TUTORIAL.is_dir(), reason=f"vowel tutorial data not found at {VOWEL_TUTORIAL}")


@pytest.fixture
def timit_dir() -> Path:
    """The TIMIT sample (``<dialect>-<speaker>/<utt>.{wav,phn,wrd,txt}``); skips when absent."""
    if not TIMIT.is_dir():
        pytest.skip(f"TIMIT sample not found at {TIMIT}")
    return TIMIT


@pytest.fixture
def vowel_tutorial_dir() -> Path:
    """The AutoVowelDuration tutorial data (``feat/``, ``lab/``, ``wav/``); skips when absent."""
    if not VOWEL_TUTORIAL.is_dir():
        pytest.skip(f"vowel tutorial data not found at {VOWEL_TUTORIAL}")
    return VOWEL_TUTORIAL


def run(*args) -> tuple[int, str]:
    """Run the ``aligner`` command line in-process: ``(exit code, output)`` (stderr mixed in)."""
    from aligner.cli import main

    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def one_line_error(output: str) -> str:
    """The one ``error:`` line of a command's output (fails unless there is exactly one)."""
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    return errors[0]


def noisy_problem(seed=0, n=40):
    """A multiclass problem for the learning core's tests: three overlapping classes in 2-D, each
    example with a bias feature appended (so fits depend on the example order). Returns
    ``(X, Y)``: n arrays of 3 features and n class indices."""
    rng = np.random.default_rng(seed)
    centres = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    y = rng.integers(0, 3, size=n)
    X = centres[y] + rng.normal(scale=0.8, size=(n, 2))
    return [np.append(x, 1.0) for x in X], [int(v) for v in y]


def assert_reads_like(lazy, whole: np.ndarray, cuts, atol: float, mfcc_atol: float) -> None:
    """A sample reader read on demand (:class:`aligner.io.audio.SampleReader`) gives the samples
    of ``whole`` (n,): its length and shape, the slices ``cuts`` ``[(a, b), ...]`` and its last
    sample within ``atol``, its MFCCs within ``mfcc_atol``; then it closes."""
    from aligner.features.mfcc import mfcc_features

    assert len(lazy) == len(whole) and lazy.shape == whole.shape
    for a, b in cuts:
        np.testing.assert_allclose(lazy[a:b], whole[a:b], atol=atol)
    assert lazy[-1] == pytest.approx(whole[-1], abs=atol)
    np.testing.assert_allclose(mfcc_features(lazy), mfcc_features(whole), atol=mfcc_atol)
    lazy.close()


@pytest.fixture(scope="session", params=["kernel", "network"])
def vowel_classifier(request):
    """A frame classifier of each feature map for the vowel acoustics' speed-path tests: the
    shipped vowel model's when it is of that kind, else a small one of it trained on random
    MFCC-shaped frames and labels (its posteriors mean nothing; the paths must still agree)."""
    from aligner import api
    from aligner.features.frame_classifier import FrameClassifier

    shipped = api.load_vowel_model().classifier
    if (shipped.hidden > 0) == (request.param == "network"):
        return shipped
    rng = np.random.default_rng(3)
    frames = [rng.standard_normal((200, 42)).astype(np.float32) for _ in range(6)]
    labels = [rng.integers(0, 39, 200) for _ in range(6)]
    small = ({"hidden": 32, "epochs": 2, "pca_dims": 0} if request.param == "network"
             else {"n_components": 100, "pca_dims": 32, "max_iter": 20, "kmeans_iter": 1})
    return FrameClassifier(**small).fit(frames, labels)


def cut_classifier(classifier, size: int = 300):
    """A copy of a trained frame classifier cut to its first ``size`` landmarks (the kernel) or
    hidden units (the network), so that tests of adaptation refit its output layer in a fraction
    of a second; its scores are no longer calibrated, but it is a valid classifier of the same kind."""
    from aligner.features.frame_classifier import FrameClassifier

    arrays = dict(classifier.to_arrays())
    if classifier.hidden:
        arrays["hidden"] = np.asarray(min(size, classifier.hidden))
        arrays["hidden_weights"] = arrays["hidden_weights"][:, :size]
        arrays["hidden_bias"] = arrays["hidden_bias"][:size]
        arrays["weights"] = arrays["weights"][:size]
    else:
        for key in ("landmarks", "landmark_sqnorm", "weights"):
            arrays[key] = arrays[key][:size]
    return FrameClassifier.from_arrays(arrays)


def speaker_recordings(data: Path, n: int, kind: str = "phones") -> list:
    """The first ``n`` recordings of the first speaker folder of ``data`` (the TIMIT sample) as
    adaptation :class:`~aligner.alignment.adaptation.rounds.Recording`: their ``.phn`` labels
    (``kind="phones"``, TIMIT-61) or their ``.txt`` words (``kind="words"``)."""
    import warnings

    from aligner.alignment.adaptation.rounds import Recording
    from aligner.io.audio import load_audio
    from aligner.io.transcripts import read_phn, read_word_segments

    folder = sorted(p for p in data.iterdir() if p.is_dir())[0]
    recordings = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sample's SPHERE files are repaired on reading
        for wav in sorted(folder.glob("*.wav"))[:n]:
            if kind == "words":
                text = read_word_segments(wav.with_suffix(".txt"))[0].text
                recordings.append(Recording(load_audio(wav), text, folder.name, wav.stem, "words"))
            else:
                labels = list(read_phn(wav.with_suffix(".phn"))[2])
                recordings.append(Recording(load_audio(wav), labels, folder.name, wav.stem, "phones", "timit61"))
    return recordings
