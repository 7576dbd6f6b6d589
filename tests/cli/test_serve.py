"""`rxvoice serve` on the command line: defaults, refusals, the warning off loopback, the scripted model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rxvoice import LLMContext
from rxvoice.cli.serve import reply_to
from tests.cli.conftest import run_cli


def test_a_bad_port_and_a_missing_model_are_one_line_errors(without_model: Path) -> None:
    r = run_cli("serve", "--port", "70000", "--stop", "speech-timeout")
    assert r.code == 1 and "--port 70000" in r.err
    r = run_cli("serve", "--stop", "smart-turn")
    assert r.code == 1 and "Smart Turn model not found" in r.err and "rxvoice model install" in r.err


def test_a_missing_espeak_names_the_debian_package(with_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    r = run_cli("serve", "--tts", "espeak")
    assert r.code == 1 and "Debian package espeak-ng" in r.err


def test_listening_beyond_this_machine_warns(with_model: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "rxvoice.cli", "serve", "--host", "0.0.0.0", "--port", "0",
                             "--tts", "paced", "--stt", "none"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()  # blocks until the server prints its address (or exits)
        assert "open http://0.0.0.0:" in line
        assert "warning: listening on 0.0.0.0" in proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_scripted_model_says_what_it_heard() -> None:
    context = LLMContext(messages=[{"role": "user", "content": "book a flight to Boston"}])
    assert reply_to(context.snapshot).text == "I heard: book a flight to Boston. I can book that flight for you."
    assert reply_to(LLMContext(messages=[{"role": "user", "content": "(speech 2)"}]).snapshot).text.startswith(
        "I heard you speak")
