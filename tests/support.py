"""What tests in several folders need: the fixtures in ``tests/data``, the model, system programs, scripts.

Everything a test reads lives in the checkout (``tests/data/``, see its
README) or in the user's cache, where ``rxvoice model install`` puts the
Smart Turn model; nothing is looked for beside the checkout and nothing is
downloaded. A missing model or system program fails the test with one line
that names the command or the Debian package that fixes it. Examples and
benchmarks are scripts, not packages, so their tests import them by path.

The fixture API for new tests::

    from tests.support import data_dir, booking_paths, smart_turn_model_path, require_program

    wav, transcript = booking_paths()          # tests/data/conversation/booking.{wav,transcript.json}
    labels = data_dir() / "turns" / "labels.csv"
    model = smart_turn_model_path()            # found as the CLI finds it
    whisper = whisper_model_path()             # the Whisper tiny.en folder, likewise
    espeak = require_program("espeak-ng")      # its path, or one line naming the package

and the pytest fixtures of ``tests/conftest.py`` (``data``, ``booking_wav``,
``turns_dir``, ``smart_turn_model``, ...).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rxvoice.audio.turn import ENV_VAR, cached_model_path, find_model
from rxvoice.errors import ModelNotFoundError
from rxvoice.services.whisper_model import find_whisper_model

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"

PROGRAM_PACKAGES = {
    "espeak-ng": "espeak-ng",
    "chromium": "chromium",
    "chromedriver": "chromium-driver",
}
"""The Debian package of each system program a test needs (README.md lists them beside command 2)."""

_model: Path | None = None


def data_dir() -> Path:
    """``tests/data``: the recordings, transcripts and labels the suite reads (see its README)."""
    return DATA


def turns_dir() -> Path:
    """``tests/data/turns``: 32 single utterances with ``labels.csv`` and Silero's reference probabilities."""
    return DATA / "turns"


def conversation_dir() -> Path:
    """``tests/data/conversation``: the booking call and its transcript."""
    return DATA / "conversation"


def calls_dir() -> Path:
    """``tests/data/calls``: a longer caller-side call (tech support) and its transcript."""
    return DATA / "calls"


def booking_paths() -> tuple[Path, Path]:
    """The booking call (18.3 s, 16 kHz) and its transcript."""
    folder = conversation_dir()
    return folder / "booking.wav", folder / "booking.transcript.json"


def missing_model_message() -> str:
    """The one line a test fails with when the Smart Turn model is not installed."""
    env = os.environ.get(ENV_VAR, "").strip()
    where = f"{ENV_VAR}={env} is no file" if env else f"nothing at {cached_model_path()}"
    return f"Smart Turn model not installed ({where}): run `.venv/bin/rxvoice model install` (README command 1)"


def smart_turn_model_path() -> Path:
    """The Smart Turn v3.2 model, found as the CLI finds it (``rxvoice.audio.turn.find_model``).

    That is ``$RXVOICE_SMART_TURN_MODEL`` when set, else the user cache that
    ``rxvoice model install`` fills. A missing model fails the calling test
    with one line naming that command; the first path found is kept for the
    session (tests that hide the model with ``XDG_CACHE_HOME`` do not change it).
    """
    global _model
    if _model is None:
        with contextlib.suppress(ModelNotFoundError):  # failed below, outside the handler: the report is one line
            _model = find_model()
        if _model is None:
            pytest.fail(missing_model_message(), pytrace=False)
    return _model


def whisper_model_path() -> Path:
    """The Whisper tiny.en model folder, found as WhisperSTT finds it (``RXVOICE_WHISPER_MODEL``, else the cache).

    ``rxvoice model install`` (README command 1) puts it there; a missing one fails the calling test with
    one line naming that command.
    """
    try:
        return find_whisper_model()
    except ModelNotFoundError as exc:
        message = str(exc)
    pytest.fail(f"{message} (`.venv/bin/rxvoice model install`, README command 1)", pytrace=False)


def require_program(name: str) -> str:
    """The path of system program ``name``; a missing one fails the test with one line naming its Debian package."""
    found = shutil.which(name) or (shutil.which("chromium-browser") if name == "chromium" else None)
    if found is None:
        package = PROGRAM_PACKAGES.get(name, name)
        pytest.fail(f"{name} is not installed: sudo apt-get install {package} (see README.md)", pytrace=False)
    return found


def load_script(path: Path, key: str) -> ModuleType:
    """Import the script at ``path`` as module ``key`` (registered, so its dataclasses and pickling work)."""
    spec = importlib.util.spec_from_file_location(key, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


def load_example(stem: str) -> ModuleType:
    """Import ``examples/<stem>.py`` afresh."""
    return load_script(REPO / "examples" / f"{stem}.py", f"rxvoice_example_{stem}")
