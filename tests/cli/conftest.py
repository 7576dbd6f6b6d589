"""Fixtures of the command-line tests: running ``main`` in-process, the model, the shared recordings.

The Smart Turn model is ``$RXVOICE_SMART_TURN_MODEL`` or ``../shared/models/``
(never copied into the repository); the recordings are the shared booking
call and a few of the turn fixtures.
"""

from __future__ import annotations

import io
import shutil
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rxvoice.audio.turn import ENV_VAR
from rxvoice.cli import main

TURN_FILES = (
    "complete__en-us__please_send_the_invoice_to_my_email_addr.wav",
    "complete__en-gb_f3__thanks_that_is_all_i_needed.wav",
    "incomplete__en-us__so_what_i_was_thinking_is_that.wav",
)


@dataclass
class Result:
    """What a command printed, and its exit status."""

    code: int
    out: str
    err: str


def run_cli(*argv: str) -> Result:
    """``rxvoice ARGV`` in-process, stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def with_model(smart_turn_model: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The model found through the environment variable, as a user would set it."""
    monkeypatch.setenv(ENV_VAR, str(smart_turn_model))
    return smart_turn_model


@pytest.fixture
def without_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No model anywhere: the variable unset and an empty user cache."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture(scope="session")
def booking_wav(shared: Path) -> Path:
    """The shared booking call (its transcript, booking.transcript.json, lies beside it)."""
    return shared / "audio" / "conversation" / "booking.wav"


@pytest.fixture(scope="session")
def turns_folder(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with three of the shared turn fixtures."""
    folder = tmp_path_factory.mktemp("turns")
    for name in TURN_FILES:
        shutil.copy(shared / "audio" / "turns" / name, folder / name)
    return folder


def write_wav(path: Path, samples: np.ndarray, rate: int, channels: int = 1) -> Path:
    """A 16-bit PCM WAV of int16 samples (``(frames, channels)`` for several channels)."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.ascontiguousarray(samples, dtype="<i2").tobytes())
    return path


def read_pcm(path: Path) -> np.ndarray:
    """int16 samples of a 16-bit mono WAV."""
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").copy()
