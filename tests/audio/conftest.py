"""Shared fixtures of the audio tests: the speech fixtures (the model is in tests/conftest.py).

The model and the recordings live in the shared folder beside the repository
(``../shared``), never in the repository; a missing file fails the run loudly.
"""

from __future__ import annotations

import csv
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.support import shared_dir

SHARED = shared_dir()
TURNS = SHARED / "audio" / "turns"
CONVERSATION = SHARED / "audio" / "conversation"


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """int16 mono samples and the rate of a 16-bit WAV file."""
    with wave.open(str(path)) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").copy(), w.getframerate()


@pytest.fixture(scope="session")
def turns_dir() -> Path:
    """../shared/audio/turns (or under $RXVOICE_SHARED)."""
    return TURNS


@pytest.fixture(scope="session")
def conversation_dir() -> Path:
    """../shared/audio/conversation (or under $RXVOICE_SHARED)."""
    return CONVERSATION


@pytest.fixture(scope="session")
def turn_labels() -> list[dict[str, str]]:
    """Rows of ../shared/audio/turns/labels.csv."""
    labels = TURNS / "labels.csv"
    if not labels.is_file():
        pytest.fail(f"speech fixtures missing: {labels}")
    with open(labels, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) >= 30
    return rows


@pytest.fixture(scope="session")
def turn_audio(turn_labels: list[dict[str, str]]) -> dict[str, np.ndarray]:
    """int16 samples of every fixture, by file name."""
    audio = {}
    for row in turn_labels:
        samples, rate = read_wav(TURNS / row["file"])
        assert rate == 16000
        audio[row["file"]] = samples
    return audio


@pytest.fixture(scope="session")
def booking() -> np.ndarray:
    """The int16 samples of conversation/booking.wav (16 kHz)."""
    samples, rate = read_wav(CONVERSATION / "booking.wav")
    assert rate == 16000
    return samples
