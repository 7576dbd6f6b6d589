"""`rxvoice demo`: the packaged call through the whole stack, printed turn by turn, in virtual time."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest

from rxvoice.cli.analysis import Setup, analyze
from rxvoice.cli.wav import read_wav

from .conftest import run_cli

TURNS = [
    "So what I was thinking is that you send me the invoice by email.",
    "Could you book me a table for two tonight?",
    "Thanks, that is all I needed.",
]


TIMED = re.compile(r"^\s+\d+\.\d\d s  (user|bot)\s+\"(.*)\"$")


def said(out: str, who: str) -> list[str]:
    """The quoted words of each timed ``who`` line (user turns, bot answers)."""
    return [m[2] for m in map(TIMED.match, out.splitlines()) if m and m[1] == who]


def user_lines(out: str) -> list[str]:
    """The words of each printed user turn."""
    return said(out, "user")


def test_demo_with_smart_turn_answers_three_whole_turns_fast(with_model: Path) -> None:
    """Smart Turn found: the mid-sentence pause is judged incomplete, three turns, the context printed, quickly."""
    started = time.perf_counter()
    r = run_cli("demo")
    elapsed = time.perf_counter() - started
    assert r.code == 0, r.err
    assert r.err == ""
    assert user_lines(r.out) == TURNS
    assert "Smart Turn with the words and the silence (smart-turn-v3.2-cpu.onnx; verdicts take 50 ms)" in r.out
    assert ("  stop strategy: Smart Turn with the words and the silence (FusedTurnStop), because its model was "
            f"found via $RXVOICE_SMART_TURN_MODEL ({with_model})") in r.out
    assert "pause after \"…thinking is that\": Smart Turn says incomplete, p=0.02" in r.out
    ended = [line for line in r.out.splitlines() if " ended " in line and "after speech stopped: Smart Turn p=" in line]
    assert len(ended) == 3
    assert sum("answered when the words were in" in line for line in ended) == 2
    assert said(r.out, "bot") == [
        "Sure, I'll email you the invoice right away.", "Done: a table for two, tonight at eight.",
        "You're welcome. Goodbye!",
    ]
    assert "Final context (7 messages):" in r.out
    assert "  user       So what I was thinking is that you send me the invoice by email." in r.out
    assert "3 user turns, each answered 0.30–1.30 s after the speech stopped; no mid-sentence cut-off." in r.out
    assert "(virtual time)" in r.out
    assert elapsed < 10.0


def test_demo_without_the_model_says_so_and_what_it_costs(without_model: Path) -> None:
    """No model: it says where it looked, falls back to a speech timeout and shows the cut-off it causes."""
    r = run_cli("demo")
    assert r.code == 0, r.err
    assert ("  stop strategy: a speech timeout (SpeechTimeoutStop), falling back because: Smart Turn model not "
            "found (RXVOICE_SMART_TURN_MODEL unset; nothing at ") in r.out
    assert str(without_model) in r.out and "`rxvoice model install` gets it" in r.out
    assert "turn end: a speech timeout (0.8 s of silence)" in r.out
    assert user_lines(r.out) == ["So what I was thinking is that", "you send me the invoice by email.", *TURNS[1:]]
    assert "<< cut off mid-sentence" in r.out
    assert '1 mid-sentence cut-off' in r.out
    assert '"So what I was thinking is that" was answered alone' in r.out
    assert "Get it with `rxvoice model install`." in r.out


def test_demo_finds_the_model_in_the_user_cache(without_model: Path, smart_turn_model: Path) -> None:
    """After `rxvoice model install`, the demo says it found the model in the user cache and uses Smart Turn."""
    assert run_cli("model", "install", "--from", str(smart_turn_model)).code == 0
    r = run_cli("demo")
    assert r.code == 0, r.err
    cached = without_model / "rxvoice" / "smart-turn-v3.2-cpu.onnx"
    assert ("stop strategy: Smart Turn with the words and the silence (FusedTurnStop), because its model was "
            f"found via the user cache ({cached})") in r.out
    assert user_lines(r.out) == TURNS


def test_demo_no_smart_turn_flag_forces_the_fallback(with_model: Path) -> None:
    """--no-smart-turn uses the speech timeout even though the model is there."""
    r = run_cli("demo", "--no-smart-turn")
    assert r.code == 0, r.err
    assert ("stop strategy: a speech timeout (SpeechTimeoutStop), falling back because --no-smart-turn "
            "was given") in r.out
    assert len(user_lines(r.out)) == 4


def test_realtime_runs_on_the_wall_clock_like_virtual_time(booking_wav: Path) -> None:
    """--realtime's engine: "Hi," paced on asyncio ends its turn as in virtual time (within 0.15 s)."""
    whole = read_wav(booking_wav)
    hi = dataclasses.replace(whole, samples=whole.samples[: 16000])  # "Hi,", the first second
    virtual = analyze(hi, Setup(stop="speech-timeout", tail=1.1))
    started = time.perf_counter()
    real = analyze(hi, Setup(stop="speech-timeout", tail=1.1, realtime=True))
    assert time.perf_counter() - started >= hi.duration + 1.1
    assert [t.cause for t in real.turns] == [t.cause for t in virtual.turns] == ["silence"]
    assert real.turns[0].ended == pytest.approx(virtual.turns[0].ended, abs=0.15)
