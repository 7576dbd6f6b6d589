"""Fixtures of the audio tests: the turn recordings and the booking call of ``tests/data`` as samples.

The model is in ``tests/conftest.py``; ``tests/data/README.md`` says how the
recordings were made.
"""

from __future__ import annotations

import csv
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.support import conversation_dir, turns_dir

TURNS = turns_dir()
CONVERSATION = conversation_dir()


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """int16 mono samples and the rate of a 16-bit WAV file."""
    with wave.open(str(path)) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").copy(), w.getframerate()


@pytest.fixture(scope="session")
def turns_dir() -> Path:
    """tests/data/turns."""
    return TURNS


@pytest.fixture(scope="session")
def conversation_dir() -> Path:
    """tests/data/conversation."""
    return CONVERSATION


@pytest.fixture(scope="session")
def turn_labels() -> list[dict[str, str]]:
    """Rows of tests/data/turns/labels.csv."""
    labels = TURNS / "labels.csv"
    if not labels.is_file():
        pytest.fail(f"speech fixtures missing: {labels} (a partial checkout?)", pytrace=False)
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
