"""Shared test fixtures: where the hand-labelled data lives, and skips when it is absent.

The data (``../shared/data`` beside the checkout: the TIMIT sample and the AutoVowelDuration
tutorial) is never committed. Tests that need it use the fixtures or markers below and are
skipped, with the path in the reason, when it is not there (a user's fresh clone).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
TIMIT = SHARED_DATA / "timit-sample"
VOWEL_TUTORIAL = SHARED_DATA / "vowel-tutorial"

needs_timit = pytest.mark.skipif(not TIMIT.is_dir(), reason=f"TIMIT sample not found at {TIMIT}")
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
