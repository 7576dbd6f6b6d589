"""The controller, mute, idle, late-tail and recommendation rules as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import frames as F
from rxvoice.turns import (
    AlwaysUserMute,
    ExternalCompletionStop,
    ExternalStrategies,
    FirstSpeechUserMute,
    FunctionCallUserMute,
    MinWordsStart,
    MuteUntilFirstBotComplete,
    SpeechTimeoutStop,
    TranscriptionStart,
    TurnController,
    TurnsConfig,
    UserTurnStrategies,
    VADStart,
)
from rxvoice.turns.idle import IdleState, idle_fired, idle_step
from rxvoice.turns.late_tail import may_start
from rxvoice.turns.machine import WATCHDOG, RecordingPort, TurnMachine, TurnState
from rxvoice.turns.recommend import recommended_controller
from rxvoice.turns.strategy import USER_IDLE, Arm, Disarm

VS = F.VADUserStartedSpeakingFrame(0.2)
VE = F.VADUserStoppedSpeakingFrame(0.2)
DONE = F.UserTurnInferenceCompletedFrame()


class Words:
    """Records what the machine asks of the words (the aggregator's part)."""

    def __init__(self, port: RecordingPort) -> None:
        self.port = port

    def transcript(self, frame: F.TranscriptionFrame, direction: Any, late: bool, now: float) -> None:
        self.port.calls.append(("words", "transcript"))

    def interim(self, frame: F.InterimTranscriptionFrame, direction: Any) -> None:
        return None

    def pending(self) -> bool:
        return False

    def reset(self) -> None:
        self.port.calls.append(("words", "reset"))

    def started(self, now: float) -> None:
        return None

    def commit(self, now: float) -> None:
        self.port.calls.append(("words", "commit"))

    def content(self) -> tuple[str, str, float | None]:
        return "", "", None

    def finished(self, now: float, turn: TurnState) -> tuple[bool, bool]:
        return True, True

    def ended(self, now: float) -> None:
        return None


class Bench:
    """A machine, its state and a recording port: feed frames and timers, read the decisions."""

    def __init__(self, start: list[Any] | None, stop: list[Any] | None, stop_timeout: float = 5.0,
                 mute: list[Any] | None = None) -> None:
        self.machine = TurnMachine(
            TurnsConfig(start=start, stop=stop, stop_timeout=stop_timeout, empty_turn=None, mute=mute or []))
        self.port = RecordingPort(self.machine)
        self.state = self.machine.open(self.port, Words(self.port))
        self.port.state = self.state

    @property
    def start(self) -> tuple[Any, ...]:
        return self.machine.controller.start

    def frame(self, frame: F.Frame, now: float) -> list[str]:
        self.port.now = now
        self.machine.on_frame(self.state, frame, F.DOWN, now)
        return self.decisions()

    def timer(self, owner: Any, key: str, now: float) -> list[str]:
        self.port.now = now
        self.machine.on_timer(self.state, owner, key, now)
        return self.decisions()

    def decisions(self) -> list[str]:
        """The turn decisions of the last step: events and word operations, in order."""
        self.last = self.port.take()
        names = {"on_user_turn_started": "TurnStarted", "on_user_turn_stopped": "TurnStopped",
                 "on_user_turn_inference_triggered": "InferenceTriggered",
                 "on_user_turn_stop_timeout": "StopTimedOut"}
        out = []
        for call in self.last:
            if call[0] == "event" and call[1] in names:
                out.append(names[call[1]])
            elif call[:2] == ("words", "reset"):
                out.append("AggregationReset")
        return out

    def events(self, name: str) -> list[Any]:
        return [c[2] for c in self.last if c[0] == "event" and c[1] == name]


# -- the machine: chains, watchdog, rules -----------------------------------------------------------


def test_controller_never_finalizes_while_the_user_speaks() -> None:
    """A completion verdict while VAD says speaking is ignored; after the VAD stop it ends the turn (Pipecat)."""
    b = Bench([VADStart()], [ExternalCompletionStop()])
    assert b.frame(VS, 0.0) == ["TurnStarted"]
    assert b.frame(DONE, 0.1) == [] and b.state.open
    b.frame(VE, 0.2)
    assert b.frame(DONE, 0.3) == ["TurnStopped"] and not b.state.open


def test_controller_start_is_ignored_inside_a_turn() -> None:
    """A second start trigger while a turn is open starts nothing."""
    b = Bench([VADStart(), TranscriptionStart()], [SpeechTimeoutStop()])
    b.frame(VS, 0.0)
    assert b.frame(F.TranscriptionFrame("hi"), 0.1) == []


def test_controller_halt_stops_only_the_chain_it_is_in() -> None:
    """VADStart halts the start chain; the stop chain still sees the frame."""
    b = Bench([VADStart(), VADStart()], [SpeechTimeoutStop()])
    b.frame(VS, 0.0)
    assert b.events("on_user_turn_started") == [b.start[0]]
    assert b.state.states[2].speaking


def test_controller_watchdog_closes_an_idle_turn_with_no_strategy() -> None:
    """The watchdog fires stop_timeout after the last activity; it closes an open turn with strategy None."""
    b = Bench([VADStart()], [ExternalCompletionStop()], 1.0)
    b.frame(VS, 0.0)
    assert ("arm", WATCHDOG, "watchdog", 1.0) in b.last
    b.frame(VE, 0.5)
    assert b.timer(WATCHDOG, "watchdog", 1.0) == []
    [rearm] = b.last
    assert rearm[:3] == ("arm", WATCHDOG, "watchdog") and rearm[3] == pytest.approx(0.5)
    assert b.timer(WATCHDOG, "watchdog", 1.5)[0] == "StopTimedOut"
    assert b.events("on_user_turn_stopped")[0].strategy is None and not b.state.open


def test_controller_watchdog_holds_while_the_user_speaks() -> None:
    """At the watchdog's deadline with VAD still speaking nothing closes; the next activity re-arms it."""
    b = Bench([VADStart()], [ExternalCompletionStop()], 1.0)
    b.frame(VS, 0.0)
    b.timer(WATCHDOG, "watchdog", 1.0)
    assert b.last == [] and b.state.open and not b.state.watchdog_armed
    b.frame(VE, 3.0)
    assert ("arm", WATCHDOG, "watchdog", 1.0) in b.last


def test_controller_inference_only_inside_a_turn() -> None:
    """An inference trigger outside a turn asks for nothing."""
    b = Bench([VADStart()], [SpeechTimeoutStop(user_speech_timeout=0.0)])
    b.frame(F.TranscriptionFrame("hi"), 0.0)
    assert b.timer(1, "speech", 0.0) == []
    assert ("words", "commit") not in b.last


def test_controller_never_drops_the_words_of_an_open_turn() -> None:
    """MinWords' reset is passed on outside a turn only: a one-word interim inside a turn keeps the words."""
    b = Bench([MinWordsStart(min_words=3)], [SpeechTimeoutStop()])
    b.frame(F.BotStartedSpeakingFrame(), 0.0)
    assert b.frame(F.TranscriptionFrame("uh"), 0.1) == ["AggregationReset"]
    assert "TurnStarted" in b.frame(F.TranscriptionFrame("please stop now"), 0.2)
    b.frame(F.BotStartedSpeakingFrame(), 0.3)
    assert "AggregationReset" not in b.frame(F.InterimTranscriptionFrame("and"), 0.4)


def test_controller_takeover_keeps_the_turn_and_tells_new_strategies() -> None:
    """A recommended controller takes over an open turn: still open, its strategies told a turn runs."""
    b = Bench(None, None)  # the defaults: a service may recommend others
    b.frame(VS, 0.0)
    b.frame(F.STTMetadataFrame("stt", user_turn_strategies=ExternalStrategies()), 0.1)
    assert [c[0] for c in b.last if c[0] == "use"] == ["use"]
    assert b.state.open and b.state.user_speaking and b.state.states[1].turn_open


def test_stopped_is_inference_then_finalize() -> None:
    """A stop strategy's verdict asks for the answer before it closes the turn."""
    b = Bench([VADStart()], [SpeechTimeoutStop(user_speech_timeout=0.0)])
    b.frame(VS, 0.0)
    b.frame(F.TranscriptionFrame("hi", finalized=True), 0.1)
    b.frame(F.VADUserStoppedSpeakingFrame(0.2), 0.2)
    assert b.timer(1, "speech", 0.2) == ["InferenceTriggered", "TurnStopped"]


def test_a_turn_is_announced_and_interrupts_the_bot_both_ways() -> None:
    """The machine's own turn: user started then the interruption, each downstream then upstream."""
    b = Bench([VADStart()], [SpeechTimeoutStop()])
    b.frame(VS, 0.0)
    sent = [(type(c[1]).__name__, c[2]) for c in b.last if c[0] == "emit"]
    assert sent == [("VADUserStartedSpeakingFrame", F.DOWN), ("UserStartedSpeakingFrame", F.DOWN),
                    ("UserStartedSpeakingFrame", F.UP), ("InterruptionFrame", F.DOWN), ("InterruptionFrame", F.UP)]


def test_the_machine_is_a_scan_accumulator() -> None:
    """turn_step drives the same machine through reactivex's own scan: a VAD start opens a turn."""
    import reactivex
    from reactivex import operators as ops

    from rxvoice.turns import TimerFired, turn_step

    machine = TurnMachine(TurnsConfig(start=[VADStart()], stop=[SpeechTimeoutStop(user_speech_timeout=0.5)]))
    items = [(VS, 0.0), (VE, 0.6), (F.TranscriptionFrame("hi there", finalized=True), 0.7),
             TimerFired(1, "speech", 1.1)]
    steps = reactivex.defer(lambda _: reactivex.from_iterable(items).pipe(
        ops.scan(turn_step(machine), machine.scan_start()))).pipe(ops.to_list()).run()
    opened = [step.open for step in steps]
    assert opened == [True, True, True, False]
    assert ("arm", 1, "speech", 0.5) in steps[1].calls
    assert any(c[:2] == ("event", "on_user_turn_stopped") for c in steps[3].calls)


# -- mute ----------------------------------------------------------------------------------------


def _mute_run(strategy: Any, frames: list[F.Frame]) -> list[bool]:
    """The user's mute state after each frame, as the turn machine itself decides it."""
    return _muted([strategy], frames)


def _muted(strategies: list[Any], frames: list[F.Frame]) -> list[bool]:
    bench = Bench(None, None, mute=strategies)
    out = []
    for i, f in enumerate(frames):
        bench.frame(f, 0.1 * i)
        out.append(bench.state.muted)
    return out


BS, BE, INT = F.BotStartedSpeakingFrame(), F.BotStoppedSpeakingFrame(), F.InterruptionFrame()


def test_always_mute_follows_the_bot() -> None:
    """Always: BS mutes, BE unmutes, other frames change nothing (pipecat §8.64)."""
    assert _mute_run(AlwaysUserMute(), [BS, INT, BE, INT]) == [True, True, False, False]


def test_first_speech_mute_only_during_the_first_utterance() -> None:
    """FirstSpeech: muted from the first BS to the first BE, never again (pipecat §8.65)."""
    assert _mute_run(FirstSpeechUserMute(), [INT, BS, INT, BE, BS, BE]) == [False, True, True, False, False, False]


def test_function_call_mute_tracks_call_ids() -> None:
    """FunctionCall: muted while any call runs; unknown or repeated ids are harmless (pipecat §8.67)."""
    def started(*ids: str) -> F.FunctionCallsStartedFrame:
        return F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", i, {}) for i in ids])

    def result(i: str, final: bool = True) -> F.FunctionCallResultFrame:
        return F.FunctionCallResultFrame("f", i, {}, "ok", properties=F.FunctionCallResultProperties(is_final=final))

    assert _mute_run(FunctionCallUserMute(), [
        started("1"), F.FunctionCallCancelFrame("f", "1"), started("3", "4"), result("3"), result("4", False),
        result("4"), result("4"), F.FunctionCallCancelFrame("f", "9"),
    ]) == [True, False, True, True, True, False, False, False]


def test_mute_until_first_bot_complete() -> None:
    """Muted from the start until the first BE; an error before the bot ever spoke releases it."""
    s = MuteUntilFirstBotComplete()
    assert Bench(None, None, mute=[s]).state.muted
    assert _mute_run(s, [BS, BE, BS]) == [True, False, False]
    assert _mute_run(s, [F.ErrorFrame(RuntimeError("tts down"))]) == [False]
    assert _mute_run(s, [BS, F.ErrorFrame(RuntimeError("x"))]) == [True, True]


def test_mute_is_the_or_of_the_strategies() -> None:
    """Any strategy asking for silence mutes the user."""
    strategies: list[Any] = [FirstSpeechUserMute(), FunctionCallUserMute()]
    call = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "1", {})])
    assert _muted(strategies, [BS, call, BE]) == [True, True, True]


# -- idle ----------------------------------------------------------------------------------------


def _idle(frames: list[F.Frame], timeout: float = 0.2) -> tuple[IdleState, list[str]]:
    state = IdleState(timeout=timeout)
    out: list[str] = []
    for f in frames:
        state, effects = idle_step(state, f)
        out += [_KIND[type(e)] for e in effects]
    return state, out


_KIND = {Arm: "arm", Disarm: "disarm"}


def test_idle_arms_when_the_bot_stops() -> None:
    """BE arms the idle timer; the firing raises the event once (pipecat §8.71)."""
    state, out = _idle([BS, BE])
    assert out == ["disarm", "arm"]
    assert idle_fired(state)[1] == (USER_IDLE,)


def test_idle_never_arms_without_activity() -> None:
    """No frames: nothing armed; a timer firing anyway raises nothing."""
    assert idle_fired(IdleState(timeout=0.2))[1] == ()


def test_idle_rearms_after_every_user_turn() -> None:
    """A user turn (its stop) re-arms the idle timer when the bot is quiet (empty turns included)."""
    _state, out = _idle([F.UserStartedSpeakingFrame(), F.UserStoppedSpeakingFrame()])
    assert out == ["disarm", "arm"]


def test_idle_pauses_during_calls_and_resumes_after_the_last() -> None:
    """Calls pause a waiting timer; it resumes when the last call finishes (pipecat §8.74)."""
    call = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "1", {}), F.FunctionCallFromLLM("f", "2", {})])
    state, out = _idle([BE, call, F.FunctionCallResultFrame("f", "1", {}, "ok")])
    assert out == ["arm", "disarm"]
    assert idle_fired(state)[1] == ()
    state, effects = idle_step(state, F.FunctionCallCancelFrame("f", "2"))
    assert effects == (Arm("idle", 0.2),)


def test_idle_calls_before_the_bot_spoke_never_fire() -> None:
    """FunctionCallsStarted before BS/BE: no fire; after the result a BS/BE arms it."""
    call = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "1", {})])
    _, out = _idle([call, F.FunctionCallResultFrame("f", "1", {}, "ok")])
    assert "arm" not in out
    _, out = _idle([call, F.FunctionCallResultFrame("f", "1", {}, "ok"), BS, BE])
    assert out[-1] == "arm"


@pytest.mark.parametrize(
    ("case", "frames"),
    [
        ("bot is speaking", [BS]),
        ("the bot has not spoken yet", []),
        ("a user turn is in progress", [BE, F.UserStartedSpeakingFrame()]),
        ("the bot's reply is still coming", [BE, F.UserStartedSpeakingFrame(), BS]),
        ("a tool call is in flight", [BE, F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "1", {})])]),
    ],
)
def test_idle_update_does_not_arm_outside_the_waiting_window(case: str, frames: list[F.Frame]) -> None:
    """A timeout update arms the timer only while waiting for the user (seed §4.2 subcases)."""
    state, _ = _idle(frames, timeout=0.0)
    state, effects = idle_step(state, F.UserIdleTimeoutUpdateFrame(1.0))
    assert effects == (), case


def test_idle_update_arms_while_waiting() -> None:
    """A timeout update while waiting arms the timer with the new duration; 0 disarms it (seed §4.2)."""
    state, _ = _idle([BS, BE], timeout=0.0)
    state, effects = idle_step(state, F.UserIdleTimeoutUpdateFrame(1.5))
    assert effects == (Arm("idle", 1.5),)
    state, effects = idle_step(state, F.UserIdleTimeoutUpdateFrame(0))
    assert effects == (Disarm("idle"),)


# -- late tail, recommendations ------------------------------------------------------------------


def test_late_tail_rule() -> None:
    """Held: answered turn, VAD in use, no speech since, within the window; otherwise a transcript may start."""
    assert not may_start(False, True, False, 10.0, 10.5, 1.0)
    assert may_start(False, True, False, 10.0, 11.5, 1.0)
    assert may_start(False, True, True, 10.0, 10.5, 1.0)
    assert may_start(False, False, False, 10.0, 10.5, 1.0)
    assert may_start(False, True, False, None, 10.5, 1.0)
    assert may_start(True, True, False, 10.0, 10.5, 1.0)


def test_recommendation_applies_only_when_nothing_is_pinned() -> None:
    """A service's strategies replace the defaults, not the application's own choice (pipecat §8.34)."""
    frame = F.STTMetadataFrame("stt", user_turn_strategies=ExternalStrategies())
    default = TurnsConfig()
    c = TurnController(*default.chains(), default.stop_timeout)  # type: ignore[arg-type]
    new = recommended_controller(default, c, frame)
    assert new is not None and new.recommendation == ExternalStrategies()
    assert recommended_controller(default, new, frame) is None
    pinned = TurnsConfig(start=[VADStart()])
    assert recommended_controller(pinned, c, frame) is None
    assert recommended_controller(default, c, F.STTMetadataFrame("stt", user_turn_strategies="external")) is None
    assert recommended_controller(default, c, F.STTMetadataFrame("stt", user_turn_strategies=UserTurnStrategies(
        start=[]))) is None


def test_a_timed_mute_runs_on_the_machines_own_named_timers() -> None:
    """A mute strategy's timers are owned by it (mute_owner(i)), fired back into the machine, which unmutes."""
    from dataclasses import dataclass
    from typing import ClassVar

    from rxvoice.turns import MuteStrategy
    from rxvoice.turns.machine import IDLE_OWNER
    from rxvoice.turns.port import mute_owner
    from rxvoice.turns.strategy import NOTHING, Effects

    @dataclass(frozen=True)
    class Opening(MuteStrategy[bool]):
        handles: ClassVar[frozenset[type[F.Frame]]] = frozenset({F.BotStartedSpeakingFrame})

        def initial(self) -> bool:
            return False

        def step(self, muted: bool, frame: F.Frame, now: float) -> tuple[bool, Effects]:
            return True, (Arm("opening", 2.0),)

        def on_timer(self, muted: bool, key: str, now: float) -> tuple[bool, Effects]:
            return False, NOTHING

        def muted(self, state: bool) -> bool:
            return state

    b = Bench(None, None, mute=[FunctionCallUserMute(), Opening()])
    b.frame(BS, 0.0)
    assert ("arm", mute_owner(1), "opening", 2.0) in b.last and b.state.muted
    b.timer(mute_owner(1), "opening", 2.0)
    assert not b.state.muted and ("emit", F.UserMuteStoppedFrame(), F.DOWN) in b.last
    b.frame(BE, 2.5)
    assert ("arm", IDLE_OWNER, "idle", 0.0) not in b.last  # no idle timeout configured: nothing armed
    assert WATCHDOG != IDLE_OWNER != mute_owner(0)
