"""The stop watchdog and the idle watch, in virtual time (a 5 s idle test takes microseconds)."""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.aggregators import Pair
from rxvoice.testing import Reply, ScriptedLLM, ToolCall
from rxvoice.turns import (
    ExternalCompletionStop,
    ExternalStrategies,
    SpeechTimeoutStop,
    TranscriptionStart,
    TurnsConfig,
    VADStart,
)

from .helpers import event_times, marbles, run, times, users

IDLE = "on_user_turn_idle"


# -- the stop watchdog ----------------------------------------------------------------------------


def test_watchdog_does_not_fire_when_a_strategy_ends_the_turn() -> None:
    """Timeout 0.2 s with a 0.1 s speech timeout: the strategy ends the turn, no stop-timeout event (pipecat §8.16)."""
    pair = Pair(turns=TurnsConfig(stop=[SpeechTimeoutStop(0.1)], stop_timeout=0.2))
    rec = run(pair, "vh(s)")
    assert users(pair) == ["hello there"]
    assert "on_user_turn_stop_timeout" not in rec.event_names()


def test_watchdog_closes_what_no_strategy_ends() -> None:
    """Only an external judge that never speaks: the watchdog closes the turn, UE before CTX (pipecat §8.17)."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=0.2))
    rec = run(pair, "v-h-s")
    assert rec.down_types() == [
        "VADUserStartedSpeakingFrame", "UserStartedSpeakingFrame", "InterruptionFrame",
        "VADUserStoppedSpeakingFrame", "UserStoppedSpeakingFrame", "LLMContextFrame",
    ]
    assert [n for n in rec.event_names()] == [
        "on_user_turn_started", "on_user_turn_stop_timeout", "on_user_turn_message_added", "on_user_turn_stopped",
    ]
    assert rec.events_named("on_user_turn_stopped")[0][1].strategy is None


def test_watchdog_force_stop_after_the_vad_stop() -> None:
    """A 40 ms watchdog stops the turn 40 ms after the VAD stop (seed §4.2 TestWatchdogForceStop)."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=0.04))
    rec = run(pair, "v-s")
    assert times(rec, F.UserStoppedSpeakingFrame) == [240]


def test_watchdog_counts_from_the_last_activity() -> None:
    """Each transcript re-arms the watchdog: the turn closes stop_timeout after the last one."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=1.0))
    rec = run(pair, "v-s-H-------W")
    assert times(rec, F.UserStoppedSpeakingFrame) == [1200 + 1000]
    assert users(pair) == ["Hello world."]


def test_watchdog_never_fires_while_vad_says_speaking() -> None:
    """A long utterance is never cut off; the watchdog closes the turn stop_timeout after the VAD stop."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=1.0))
    rec = run(pair, "v-h" + "-" * 60 + "s")
    assert times(rec, F.UserStoppedSpeakingFrame) == [6300 + 1000]


def test_no_finalize_while_the_user_is_speaking() -> None:
    """A completion verdict while VAD says speaking is held; after the VAD stop the watchdog finalizes (seed §4.2)."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=0.5))
    rec = run(pair, "v-h-c-s")
    assert times(rec, F.UserStoppedSpeakingFrame) == [600 + 500]
    assert rec.events_named("on_user_turn_stopped")[0][1].strategy is None


# -- idle -------------------------------------------------------------------------------------------


def test_idle_fires_once_after_the_bot_stops() -> None:
    """Idle 5 s: fires once, 5 s after the bot stopped speaking (pipecat §8.71)."""
    pair = Pair(turns=TurnsConfig(idle_timeout=5.0))
    rec = run(pair, up="B-b", until=60)
    assert event_times(rec, IDLE) == [200 + 5000]


def test_idle_never_fires_without_activity() -> None:
    """No frames at all: idle never fires."""
    rec = run(Pair(turns=TurnsConfig(idle_timeout=0.2)), "-", until=10)
    assert event_times(rec, IDLE) == []


def test_idle_fires_again_each_bot_utterance() -> None:
    """BE fires; BS, BE fire again: two events (pipecat §8.73)."""
    rec = run(Pair(turns=TurnsConfig(idle_timeout=0.2)), up="b-----B-b", until=5)
    assert event_times(rec, IDLE) == [200, 800 + 200]


def test_idle_is_paused_while_the_bot_speaks() -> None:
    """A long bot utterance never counts as the user's silence."""
    rec = run(Pair(turns=TurnsConfig(idle_timeout=0.5)), up="B" + "-" * 30 + "b", until=10)
    assert event_times(rec, IDLE) == [3100 + 500]


def test_idle_waits_for_the_reply_after_an_answered_turn() -> None:
    """After a user turn that was answered, the watch waits for the bot: it restarts when the bot stops speaking.

    The reply comes 3 s after the turn (longer than the idle timeout): no idle fires while it is pending.
    """
    pair = Pair(turns=TurnsConfig(idle_timeout=2.0))
    rec = run(pair, "-----v-h-s", up="b" + "-" * 38 + "B-b", until=80)
    [stopped] = event_times(rec, "on_user_turn_stopped")
    assert event_times(rec, IDLE) == [4100 + 2000]
    assert stopped < 3900


def test_idle_rearms_after_an_empty_noise_turn() -> None:
    """A noise-only turn (VAD, no words) re-arms the watch too: the idle still fires after it."""
    pair = Pair(turns=TurnsConfig(idle_timeout=2.0, stop_timeout=1.0))
    rec = run(pair, "-----v-s", up="b", until=20)
    [stopped] = event_times(rec, "on_user_turn_stopped")
    assert event_times(rec, IDLE) == [stopped + 2000]


def test_idle_pauses_during_a_tool_call_and_resumes_after_it() -> None:
    """A tool call started while waiting pauses the watch; the result restarts it."""
    pair = Pair(turns=TurnsConfig(idle_timeout=1.0))
    call = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "c1", {})])
    result = F.FunctionCallResultFrame("f", "c1", {}, "ok")
    rec = run(pair, up="b---c--------r", legend={"c": call, "r": result}, until=10)
    assert event_times(rec, IDLE) == [1300 + 1000]


def test_idle_before_the_bot_spoke_after_a_call() -> None:
    """A call before the bot ever spoke: no idle; once the bot speaks and stops, it fires (pipecat §8.74)."""
    call = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "c1", {})])
    result = F.FunctionCallResultFrame("f", "c1", {}, "ok")
    rec = run(Pair(turns=TurnsConfig(idle_timeout=0.2)), up="c-r-----B-b", legend={"c": call, "r": result}, until=5)
    assert event_times(rec, IDLE) == [1000 + 200]


def test_idle_timeout_update_applies_at_run_time() -> None:
    """UserIdleTimeoutUpdateFrame while waiting re-arms with the new duration; 0 turns the watch off."""
    legend = {"x": F.UserIdleTimeoutUpdateFrame(3.0), "o": F.UserIdleTimeoutUpdateFrame(0)}
    rec = run(Pair(), "--x", up="b", legend=legend, until=10)
    assert event_times(rec, IDLE) == [200 + 3000]
    rec = run(Pair(turns=TurnsConfig(idle_timeout=1.0)), "--o", up="b", legend=legend, until=10)
    assert event_times(rec, IDLE) == []


def test_idle_callback_can_speak() -> None:
    """on_idle is called with the aggregator, which can push a TTSSpeakFrame downstream."""
    def on_idle(aggregator: Any) -> None:
        aggregator.push(F.TTSSpeakFrame("Are you still there?"))

    pair = Pair(turns=TurnsConfig(idle_timeout=1.0, on_idle=on_idle))
    rec = run(pair, up="b", until=5)
    assert [(t, getattr(f, "text", None)) for t, f in rec.of_type(F.TTSSpeakFrame)] == [(1000, "Are you still there?")]


def test_idle_with_a_model_in_the_loop() -> None:
    """A whole exchange: the bot answers, stops; the idle fires 5 s after its last word, not after the user's."""
    pair = Pair(turns=TurnsConfig(idle_timeout=5.0))
    llm = ScriptedLLM(["Hi there."])
    m = marbles()
    rec = m.run(
        pipeline(pair.user(), llm, pair.assistant()), down="v-h-s", up="------------B-----b",
        watch=[pair.user()], until=20,
    )
    assert len(llm.runs) == 1
    assert event_times(rec, IDLE) == [1800 + 5000]


def test_idle_paused_by_a_real_tool_call() -> None:
    """The model calls a 3 s tool after the user's turn: the idle does not fire during it."""
    pair = Pair(turns=TurnsConfig(idle_timeout=1.0))
    llm = ScriptedLLM([Reply(tool_calls=[ToolCall("lookup", result="ok", delay=3.0)]), "Done."])
    rec = marbles().run(pipeline(pair.user(), llm, pair.assistant()), down="v-h-s", watch=[pair.user()], until=20)
    stopped = event_times(rec, "on_user_turn_stopped")[0]
    assert all(not stopped < t < stopped + 3000 for t in event_times(rec, IDLE))



# The user's voice in whatever form a setup sees it: VAD frames that open no turn here (the turn starts on
# the words, or is decided elsewhere), a service's proposals, a turn announced by another stage.
_VOICES = {
    "vad, turn on words": (TurnsConfig(idle_timeout=0.2, start=[TranscriptionStart()]), "v", "s"),
    "vad, turn decided elsewhere": (TurnsConfig(idle_timeout=0.2, strategies=ExternalStrategies()), "v", "s"),
    "proposals passed on": (TurnsConfig(idle_timeout=0.2), "P", "p"),
    "turn announced elsewhere": (TurnsConfig(idle_timeout=0.2), "U", "u"),
}


@pytest.mark.parametrize("setup", sorted(_VOICES))
@pytest.mark.parametrize("bot_first", [True, False], ids=["bot-stops-then-user-speaks", "user-speaks-then-bot-stops"])
def test_the_users_voice_holds_the_idle_watch(setup: str, bot_first: bool) -> None:
    """Idle 0.2 s: the bot stops and 0.1 s later the user speaks for 1 s, or the other way round: the watch
    never fires while the user is heard (Pipecat 1.14 never fires in either order)."""
    turns, on, off = _VOICES[setup]
    down, up = (f"-{on}---------{off}", "b") if bot_first else (f"{on}---------{off}", "-b")
    rec = run(Pair(turns=turns), down, up=up, until=10)
    speech_end = 1000 if bot_first else 900
    assert [t for t in event_times(rec, IDLE) if t <= speech_end] == []


def test_the_idle_watch_resumes_after_speech_that_made_no_turn() -> None:
    """A cough the VAD heard but no words followed (turns start on words): the watch restarts when it ends."""
    rec = run(Pair(turns=TurnsConfig(idle_timeout=0.5, start=[TranscriptionStart()])), "-v-s", up="b", until=10)
    assert event_times(rec, IDLE) == [300 + 500]


def test_an_idle_update_rearms_only_a_waiting_watch() -> None:
    """A timeout update during a user turn (announced by another stage), or between its end and the answer,
    arms nothing: the watch is not waiting then."""
    legend = {"x": F.UserIdleTimeoutUpdateFrame(0.3)}
    during = run(Pair(turns=TurnsConfig(idle_timeout=0.2)), "-U-x------u", up="b", legend=legend, until=10)
    assert event_times(during, IDLE) == []
    after = run(Pair(), "-U-u-x", up="b", legend=legend, until=10)
    assert event_times(after, IDLE) == []
    answered = run(Pair(), "-U-u-x", up="b--------B-b", legend=legend, until=10)
    assert event_times(answered, IDLE) == [1100 + 300]  # the bot answered and stopped: now the user is expected


def test_timers_run_on_the_scheduler_given() -> None:
    """Pair(scheduler=...) and UserTurnProcessor(scheduler=...): the stage's timers run on that scheduler."""
    from reactivex.testing import TestScheduler

    from rxvoice.aggregators import UserTurnProcessor
    from rxvoice.testing import FrameMarbles

    own = TestScheduler()
    pair = Pair(scheduler=own)
    rec = FrameMarbles(marbles().legend, scheduler=own).run(pair.user(), down="v-h-s", watch=[pair.user()])
    assert times(rec, F.LLMContextFrame) == [1000]
    processor = UserTurnProcessor(scheduler=own)
    rec = FrameMarbles(marbles().legend, scheduler=own).run(processor, down="v-h-s", watch=[processor])
    assert event_times(rec, "on_user_turn_stopped") == [1000]


def test_idle_never_fires_while_a_slow_model_has_not_answered() -> None:
    """First token 2 s after the turn, idle 1 s: nothing fires before the bot has said a word; 1 s after it stops."""
    pair = Pair(turns=TurnsConfig(idle_timeout=1.0))
    llm = ScriptedLLM(["Hi there."], first_token_delay=2.0)
    # The turn ends at 1.0 s; the reply starts at 3.0 s; the bot speaks 3.2-4.0 s.
    rec = marbles().run(pipeline(pair.user(), llm, pair.assistant()), down="v-h-s",
                        up="-" * 32 + "B-------b", watch=[pair.user()], until=20)
    [stopped] = event_times(rec, "on_user_turn_stopped")
    assert stopped == 1000
    assert event_times(rec, IDLE) == [4000 + 1000]


def test_an_idle_timeout_update_between_the_turn_and_the_reply_does_not_arm_the_watch() -> None:
    """The update lands while the answer is pending: it sets the duration, and the watch still waits for the bot."""
    pair = Pair(turns=TurnsConfig(idle_timeout=1.0))
    llm = ScriptedLLM(["Hi there."], first_token_delay=2.0)
    legend = {"x": F.UserIdleTimeoutUpdateFrame(0.5)}
    rec = marbles(legend).run(pipeline(pair.user(), llm, pair.assistant()), down="v-h-s-------x",
                              up="-" * 32 + "B-------b", watch=[pair.user()], until=20)
    assert event_times(rec, IDLE) == [4000 + 500]
