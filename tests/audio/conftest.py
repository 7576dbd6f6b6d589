"""Shared fixtures of the audio tests: the Smart Turn model and the speech fixtures.

The model and the recordings live in the shared folder beside the repository
(``../shared``), never in the repository; a missing file fails the run loudly.
"""

from __future__ import annotations

import csv
import os
import wave
from pathlib import Path

import numpy as np
import pytest

SHARED = Path(
    os.environ.get("RXVOICE_SHARED", "").strip()
    or Path(__file__).resolve().parents[2].parent / "shared"
)
TURNS = SHARED / "audio" / "turns"
CONVERSATION = SHARED / "audio" / "conversation"


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """int16 mono samples and the rate of a 16-bit WAV file."""
    with wave.open(str(path)) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").copy(), w.getframerate()


@pytest.fixture(scope="session")
def smart_turn_model() -> Path:
    """The Smart Turn v3.2 model: $RXVOICE_SMART_TURN_MODEL or ../shared/models/."""
    env = os.environ.get("RXVOICE_SMART_TURN_MODEL", "").strip()
    path = Path(env) if env else SHARED / "models" / "smart-turn-v3.2-cpu.onnx"
    if not path.is_file():
        pytest.fail(
            f"Smart Turn model not found at {path}: set RXVOICE_SMART_TURN_MODEL or put "
            "smart-turn-v3.2-cpu.onnx in ../shared/models/ (see docs/audio.md)"
        )
    return path


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
