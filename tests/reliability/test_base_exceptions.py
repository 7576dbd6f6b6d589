"""A callback that raises a BaseException: CancelledError is contained, interpreter exits go through unwedged.

An application's event handler, context subscriber or ``on_idle`` callback
that raises ``asyncio.CancelledError`` is logged and the session goes on
(every later turn is still written); ``KeyboardInterrupt`` reaches whoever
runs the session, and the session's gate is released first, so the frames
after it are still handled.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.testing import FrameMarbles, ScriptedLLM
from rxvoice.turns import TurnsConfig

TWO_TURNS = [
    (0.0, F.TranscriptionFrame("first turn", "u")),
    (3.0, F.TranscriptionFrame("second turn", "u")),
    (9.0, F.EndFrame()),
]


def said(pair: Pair) -> list[str]:
    return [m["content"] for m in pair.context().messages if m["role"] == "user"]


def raise_cancelled(*_args: Any) -> None:
    raise asyncio.CancelledError()


def test_an_event_handler_raising_cancelled_error_is_contained() -> None:
    pair = Pair(LLMContext())
    pair.user().events.on("on_user_turn_started", raise_cancelled)
    rec = FrameMarbles().run(pipeline(pair.user(), ScriptedLLM(["One.", "Two."]), pair.assistant()),
                             down=TWO_TURNS)
    assert said(pair) == ["first turn", "second turn"]
    assert [m["content"] for m in pair.context().messages if m["role"] == "assistant"] == ["One.", "Two."]
    assert rec.errors == []


def test_a_context_subscriber_raising_cancelled_error_is_contained() -> None:
    pair = Pair(LLMContext())
    seen: list[int] = []
    snapshots: list[Any] = []

    def faulty(snapshot: Any) -> None:
        snapshots.append(snapshot)
        if len(snapshots) > 1:  # the current snapshot, given at subscription, goes to the subscriber's own call
            raise asyncio.CancelledError()

    pair.context().subscribe(faulty)
    pair.context().subscribe(lambda s: seen.append(len(s.messages)))
    FrameMarbles().run(pipeline(pair.user(), ScriptedLLM(["One.", "Two."]), pair.assistant()), down=TWO_TURNS)
    assert said(pair) == ["first turn", "second turn"]
    assert seen[-1] == 4  # the subscriber after the faulty one got every snapshot


def test_an_on_idle_callback_raising_cancelled_error_is_contained() -> None:
    calls: list[float] = []

    def on_idle(_aggregator: Any) -> None:
        calls.append(1.0)
        raise asyncio.CancelledError()

    pair = Pair(LLMContext(), turns=TurnsConfig(idle_timeout=1.0, on_idle=on_idle))
    down = [(0.0, F.TranscriptionFrame("first turn", "u")), (6.0, F.TranscriptionFrame("second turn", "u")),
            (12.0, F.EndFrame())]
    up = [(1.0, F.BotStartedSpeakingFrame()), (1.5, F.BotStoppedSpeakingFrame())]
    FrameMarbles().run(pipeline(pair.user(), ScriptedLLM(["One.", "Two."]), pair.assistant()), down=down, up=up)
    assert calls, "idle never fired"
    assert said(pair) == ["first turn", "second turn"]


def test_keyboard_interrupt_goes_through_and_the_session_is_not_wedged() -> None:
    """The handler's KeyboardInterrupt reaches the runner; the next turn is still handled (the gate was released)."""
    pair = Pair(LLMContext(), turns=TurnsConfig(recovery_window=0))
    raised: list[bool] = []

    def interrupt_once(*_args: Any) -> None:
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt

    pair.user().events.on("on_user_turn_message_added", interrupt_once)
    with pytest.raises(KeyboardInterrupt):
        FrameMarbles().run(pipeline(pair.user(), ScriptedLLM(["One.", "Two."]), pair.assistant()), down=TWO_TURNS)
    assert raised == [True]
    assert said(pair) == ["first turn"]
