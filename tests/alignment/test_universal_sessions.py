"""A word list recorded in one take, aligned from its words through an IPA pronouncing dictionary
by the shipped universal model: the long path's first pass leaves a pause between every two words
and keeps each phone within its longest length (aligner.alignment.decoding.words), so no word
slides into another's place."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("panphon")

from tests.conftest import needs_voxangeles  # noqa: E402


@needs_voxangeles
def test_a_word_list_of_two_minutes_aligned_from_its_words_stays_in_place(monkeypatch):
    from aligner.alignment.decoding import words as W
    from aligner.alignment.pipeline import load_model
    from aligner.io.audio import load_audio
    from benchmarks.languages.corpus import language_files, reference
    from benchmarks.languages.eval_long_sessions import align_words_session, session, word_runs

    model = load_model(None, universal=True)
    recordings = [(load_audio(wav), *reference(grid)) for wav, grid in language_files("ozm")]
    samples, symbols, starts = session(recordings, 120.0)
    words, spans = word_runs(symbols, starts, len(samples) / 16000)
    passes = []
    original = W._first_pass_with_pauses
    monkeypatch.setattr(W, "_first_pass_with_pauses", lambda *a: passes.append(1) or original(*a))
    aligned = align_words_session(model, samples, words, "ozm")
    assert passes, "the session was not aligned by the long path"
    errors = np.abs(aligned - spans) * 1000
    # before the pauses and the length limit, words slid by seconds (mean 4.7 s, the worst 15 s)
    assert errors.mean() < 40 and errors.max() < 500
