"""examples/recording.py: a recording through the VAD operator, Smart Turn, the pair and a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxvoice.audio.turn import SmartTurnAnalyzer
from rxvoice.audio.vad import SMART_TURN_STOP_SECS, VADParams
from rxvoice.turns import TurnAnalyzerStop
from tests.support import calls_dir, load_example


def test_the_demo_call_ends_three_whole_turns(with_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With Smart Turn: three user turns, the mid-sentence pause kept inside the first, each answered."""
    context = load_example("recording").main([])
    users = [m["content"] for m in context.messages if m["role"] == "user"]
    assert users == [
        "So what I was thinking is that you send me the invoice by email.",
        "Could you book me a table for two tonight?",
        "Thanks, that is all I needed.",
    ]
    assert [m["content"] for m in context.messages if m["role"] == "assistant"] == [f"Got it: {u}" for u in users]
    out = capsys.readouterr().out
    assert "turns end by Smart Turn" in out
    assert out.count("user turn over (FusedTurnStop, 0.30 s after speech)") == 2  # "that is all I needed": later
    assert out.count("user turn over (FusedTurnStop, ") == 3


def test_without_the_model_the_pause_cuts_the_caller_off(without_model: Path, booking_wav: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """No model, the booking call given on the command line: a speech timeout answers the fragments alone."""
    context = load_example("recording").main([str(booking_wav), str(booking_wav.with_name("booking.transcript.json"))])
    users = [m["content"] for m in context.messages if m["role"] == "user"]
    assert users[0] == "Hi, I would like to book a flight to" and len(users) == 5
    assert "Smart Turn model not found" in capsys.readouterr().out


def test_the_last_turn_of_a_recording_is_closed_by_the_rule_that_ends_it(
        with_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A call whose last words Smart Turn judges unfinished, with its verdicts alone deciding: the recording runs on
    until the stop watchdog closes that turn (it is written and answered, nothing lost), and the output names the
    stop timeout, not the end of the recording."""
    call = calls_dir() / "call03_tech_support"
    example = load_example("recording")
    example.stop_strategy = lambda: (  # the model's verdicts alone: the last turn has no rule but the watchdog
        TurnAnalyzerStop(SmartTurnAnalyzer()), VADParams(stop_secs=SMART_TURN_STOP_SECS), "Smart Turn's verdicts")
    context = example.main([str(call.with_suffix(".wav")), str(call) + ".transcript.json"])
    users = [m["content"] for m in context.messages if m["role"] == "user"]
    assert users and users[-1].endswith("Alright, that sounds fine.")
    assert [m["content"] for m in context.messages if m["role"] == "assistant"] == [f"Got it: {u}" for u in users]
    out = capsys.readouterr().out
    assert "user turn over (the 5 s stop timeout, 5.30 s after speech)" in out
    assert "the end of the recording" not in out
