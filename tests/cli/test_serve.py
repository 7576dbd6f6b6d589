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
    assert r.code == 2 and "argument --port: 70000 is outside 0..65535" in r.err
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


class _Page:
    """What the page is sent (the transport's send), with no event loop: sent at once."""

    loop = None
    audio_seconds = 1.5

    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []

    def send(self, message: dict[str, object]) -> None:
        self.sent.append(message)


def test_the_page_is_told_the_strategys_own_reason_and_reopened_turns() -> None:
    """turn_end carries the reason the stop strategy reported (text, kind, probability), and a reopened turn
    names the turn it continues."""
    from rxvoice.cli.serve import ServeOptions
    from rxvoice.cli.serve_page import PageWatch
    from rxvoice.turns import FusedTurnStop, TurnEndReason
    from rxvoice.turns.reports import UserTurnStopped

    page = _Page()
    watch = PageWatch(page, ServeOptions(stop="speech-timeout"))
    strategy = FusedTurnStop()
    reason = TurnEndReason("unsure", "words unsure: no rule decides; 0.8 s of silence", silence=0.8)
    watch.turn_started(None)
    watch.turn_stopped(None, UserTurnStopped(strategy, "so I was", "t", reason=reason))
    watch.recovered(None)
    watch.turn_started(None)
    model = TurnEndReason("model", "Smart Turn: complete (p=0.91), words complete: a question", probability=0.9123)
    watch.turn_stopped(None, UserTurnStopped(strategy, "so I was thinking?", "t", reason=model))
    ends = [m for m in page.sent if m["type"] == "turn_end"]
    assert [(m["reason"], m["cause"], m["probability"], m["reopened"], m["recovered_from"]) for m in ends] == [
        ("words unsure: no rule decides; 0.8 s of silence", "unsure", None, False, None),
        ("Smart Turn: complete (p=0.91), words complete: a question", "model", 0.9123, True, 1),
    ]
    assert [m["strategy"] for m in ends] == ["FusedTurnStop", "FusedTurnStop"]
    assert [m["silence"] for m in ends] == [0.8, None]  # the silence the rule asked for (benchmarks/serve.py's lag)


def test_the_servers_recommended_stop_asks_smart_turn_only_when_needed() -> None:
    """A server session's recommended stop asks the audio model only when its verdict can move the answer."""
    from rxvoice.cli.serve_stack import _stop_with
    from rxvoice.cli.setups import Setup
    from rxvoice.turns import FusedTurnStop

    class Judge:
        def open_stream(self, sample_rate: int) -> object:
            raise AssertionError("not opened here")

    stop = _stop_with(Setup(stop="smart-turn"), Judge())
    assert isinstance(stop, FusedTurnStop)
    assert stop.ask_audio == "when-needed" and FusedTurnStop().ask_audio == "at-pause"
