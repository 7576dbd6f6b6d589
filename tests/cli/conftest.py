"""Fixtures of the command-line tests: running ``main`` in-process, the model present or hidden, turn recordings.

The Smart Turn model is where ``rxvoice model install`` put it (never in the
repository); the recordings are the booking call and a few of the turn
recordings of ``tests/data``.
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
from tests.support import turns_dir

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
    """No model anywhere: the variables unset and an empty user cache (no Smart Turn, no Whisper)."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("RXVOICE_WHISPER_MODEL", raising=False)
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture(scope="session")
def turns_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with three of the turn recordings of tests/data (no labels.csv)."""
    folder = tmp_path_factory.mktemp("turns")
    for name in TURN_FILES:
        shutil.copy(turns_dir() / name, folder / name)
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
