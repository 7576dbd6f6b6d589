"""Disposal anywhere: mid-turn, mid-tool-call, mid-verdict, mid-summary, from inside a callback.

One scenario holds all of it: a user turn judged by an end-of-turn model
(the verdict takes 0.2 s, in virtual time), a reply that calls a tool (the
result comes 0.5 s later and re-runs the model), a summary requested as that
second answer starts (answered 0.4 s later), an idle callback, and a second
turn. The pipeline is disposed at every 10 ms of it, on both sides of each
instant (before and after what happens then), and from inside every event
handler and every output frame. After disposal nothing may happen: no event,
no context write, no frame, no callback, nothing left scheduled, no exception.
"""

from __future__ import annotations

import concurrent.futures
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from reactivex.disposable import CompositeDisposable
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.audio.turn.stream import SmartTurnStream
from rxvoice.pipeline import SchedulerOffload
from rxvoice.summarization import AutoSummarizationConfig, SummaryConfig
from rxvoice.testing import FrameMarbles, Reply, ScriptedLLM, ToolCall
from rxvoice.turns import TurnAnalyzerStop, TurnsConfig
from tests.turns.helpers import FakeAnalyzer

from .conftest import Crashes

AUDIO = F.InputAudioRawFrame(b"\x01\x00" * 320)
END = 4.7
"""The scenario is over by then (the second answer is written at 4.1 s)."""


def timeline() -> list[tuple[float, F.Frame]]:
    """Two user turns: VAD, 20 ms audio chunks, finalized transcripts."""
    down: list[tuple[float, F.Frame]] = [(0.0, F.StartFrame()), (0.1, F.VADUserStartedSpeakingFrame(0.2, 0.1))]
    down += [(0.1 + 0.02 * i, AUDIO) for i in range(45)]
    down += [(0.8, F.TranscriptionFrame("book a flight", finalized=True)),  # as the speech ends (0.8)
             (1.0, F.VADUserStoppedSpeakingFrame(0.2, 1.0)),
             (3.5, F.VADUserStartedSpeakingFrame(0.2, 3.5)),
             (3.7, F.TranscriptionFrame("thanks", finalized=True)),
             (3.9, F.VADUserStoppedSpeakingFrame(0.2, 3.9))]
    return down


@dataclass
class Run:
    """One run of the scenario, disposed at some point."""

    sched: TestScheduler
    pair: Pair
    llm: ScriptedLLM
    disposed: bool = False
    disposed_at: float | None = None
    after: list[tuple[str, Any]] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)
    idle_calls: list[float] = field(default_factory=list)
    left_scheduled: list[Any] = field(default_factory=list)
    frames: int = 0


def scenario(*, at: float | None = None, in_event: int | None = None, in_frame: int | None = None) -> Run:
    """Run the scenario; dispose at virtual time ``at``, or inside the n-th event handler / output frame."""
    bench = FrameMarbles()
    sched = bench.scheduler
    pair = Pair(
        LLMContext([{"role": "system", "content": "sys"}]),
        turns=TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer(script=[(True, 0.9)] * 4))], idle_timeout=1.5,
                          on_idle=lambda _agg: run.idle_calls.append(sched.clock)),
        summarization=AutoSummarizationConfig(max_context_tokens=None, max_unsummarized_messages=3,
                                              summary_config=SummaryConfig(min_messages_after_summary=1)),
    )
    pair.user().offload = SchedulerOffload(sched, 0.2)
    llm = ScriptedLLM(
        [Reply("Let me check.", tool_calls=[ToolCall("lookup", {"q": 1}, result={"ok": True}, delay=0.5)]),
         "It is booked.", "Bye."],
        token_delay=0.05, summary="they booked", summary_delay=0.4,
    )
    run = Run(sched, pair, llm)
    subscriptions = CompositeDisposable()
    counts = {"event": 0, "frame": 0}

    def dispose() -> None:
        if not run.disposed:
            run.disposed = True
            run.disposed_at = sched.clock
            subscriptions.dispose()

    def on_event(source: Any, name: str) -> None:
        if run.disposed:
            run.after.append(("event", name))
            return
        run.events.append((sched.clock, name))
        counts["event"] += 1
        if counts["event"] == in_event:
            dispose()

    def on_frame(direction: str, frame: F.Frame) -> None:
        if run.disposed:
            run.after.append((direction, frame))
            return
        counts["frame"] += 1
        run.frames = counts["frame"]
        if counts["frame"] == in_frame:
            dispose()

    for source in (pair.user(), pair.assistant(), pair.assistant().summarizer()):
        for name in source.events.names:
            source.events.on(name, lambda s, _p=None, name=name: on_event(s, name))
    pair.context().subscribe(lambda s: run.disposed and run.after.append(("write", s)))
    down, up = pipeline(pair.user(), llm, pair.assistant()).duplex(bench.from_timeline(timeline()),
                                                                    bench.from_timeline([]))

    def go(*_: Any) -> None:
        subscriptions.add(up.subscribe(lambda f: on_frame("up", f), scheduler=sched))
        subscriptions.add(down.subscribe(lambda f: on_frame("down", f), scheduler=sched))

    sched.schedule_absolute(0.0, go)
    if at is not None:
        sched.schedule_absolute(at, lambda *_: dispose())
        sched.advance_to(at)
        run.left_scheduled = [item for item, _ in sched._queue.items if not item.is_cancelled()]
    sched.advance_to(END + 1000.0)
    return run


def test_the_scenario_covers_a_turn_a_verdict_a_tool_call_a_summary_and_an_idle_callback() -> None:
    """Undisturbed, the scenario passes through every state the sweep disposes in."""
    run = scenario()
    names = [(round(t, 3), n) for t, n in run.events]
    assert (0.1, "on_user_turn_started") in names
    assert (1.2, "on_user_turn_stopped") in names  # VAD stop at 1.0, verdict 0.2 s later
    assert (1.8, "on_request_summarization") in names  # the tool result (1.3 + 0.5) re-runs the model
    assert (2.2, "on_summary_applied") in names
    assert (4.1, "on_user_turn_stopped") in names
    assert run.idle_calls  # the bot stopped at 1.9: idle 1.5 s later, before the second turn
    assert [m["role"] for m in run.pair.context().messages][-2:] == ["user", "assistant"]
    assert run.llm.runs[1].direction.name == "UPSTREAM"  # the re-run after the tool result


@pytest.mark.parametrize("side", ["before", "after"])
def test_disposing_at_any_instant_leaves_nothing_behind(side: str, crashes: Crashes) -> None:
    """Disposed at each 10 ms (before or after that instant's work): nothing fires, writes or raises later."""
    offset = 0.0 if side == "before" else 0.0005
    for tick in range(1, int(END * 100) + 1):
        at = tick / 100 + offset
        run = scenario(at=at)
        assert run.after == [], (at, run.after[:3])
        assert run.left_scheduled == [], (at, run.left_scheduled)
        assert all(t <= at for t in run.idle_calls), at
        assert crashes.messages() == [] and crashes.errors == [], (at, crashes.messages())


def test_disposing_from_inside_any_event_handler_stops_everything_at_once(crashes: Crashes) -> None:
    """A handler that disposes the pipeline: not one more event, write or frame, even of the same step."""
    total = len(scenario().events)
    assert total >= 15
    for k in range(1, total + 1):
        run = scenario(in_event=k)
        assert run.disposed
        assert run.after == [], (k, run.events[-1], run.after[:3])
    assert crashes.errors == []


def test_disposing_from_inside_any_output_subscriber_stops_everything_at_once(crashes: Crashes) -> None:
    """A subscriber that disposes on the n-th frame it sees: nothing more comes out or happens."""
    total = scenario(in_frame=10**9).frames
    assert total >= 80
    for k in range(1, total + 1):
        run = scenario(in_frame=k)
        assert run.disposed
        assert run.after == [], (k, run.after[:3])
    assert crashes.errors == []


def test_a_session_closed_by_one_of_its_own_effects_carries_out_no_more_of_them() -> None:
    """Regression: a handler of ``on_user_turn_message_added`` disposing the pipeline used to let the rest of that
    step run on: ``on_user_turn_inference_triggered`` and ``on_user_turn_stopped`` were raised after disposal."""
    names = [name for _, name in scenario().events]
    k = names.index("on_user_turn_message_added") + 1
    run = scenario(in_event=k)
    assert run.events[-1][1] == "on_user_turn_message_added"
    assert run.after == []


def test_a_cancelled_scheduler_offload_job_leaves_nothing_scheduled() -> None:
    """Regression: a verdict asked for through ``SchedulerOffload`` and abandoned no longer stays on the scheduler."""
    sched = TestScheduler()
    offload = SchedulerOffload(sched, 0.5)
    ran: list[int] = []
    future = offload(lambda: ran.append(1))
    assert future.cancel()
    assert [item for item, _ in sched._queue.items if not item.is_cancelled()] == []
    sched.advance_by(1.0)
    assert ran == []


class _BlockingSmartTurn:
    """Smart Turn streams whose model call blocks until released (a slow inference on the worker)."""

    params = None

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.streams: list[SmartTurnStream] = []

    def judge(self, segment: Any) -> float:
        self.entered.set()
        assert self.release.wait(5.0)
        return 0.9

    def open_stream(self, sample_rate: int) -> SmartTurnStream:
        stream = SmartTurnStream(self.judge, sample_rate)
        self.streams.append(stream)
        return stream


def test_disposing_during_a_smart_turn_inference_on_the_worker_drops_its_verdict(crashes: Crashes) -> None:
    """Disposed while the real Smart Turn stream is judged on the worker thread: the verdict is dropped quietly."""
    analyzer = _BlockingSmartTurn()
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[TurnAnalyzerStop(analyzer)]))
    events: list[str] = []
    for source in (pair.user(), pair.assistant()):
        for name in source.events.names:
            source.events.on(name, lambda _s, _p=None, name=name: events.append(name))
    speech = (np.sin(np.arange(320) / 3.0) * 8000).astype("<i2").tobytes()
    bench = FrameMarbles()
    down = [(0.0, F.StartFrame()), (0.1, F.VADUserStartedSpeakingFrame(0.2, 0.1))]
    down += [(0.1 + 0.02 * i, F.InputAudioRawFrame(speech)) for i in range(40)]
    down += [(0.5, F.TranscriptionFrame("hello there", finalized=True)), (1.0, F.VADUserStoppedSpeakingFrame(0.2, 1.0))]
    llm = ScriptedLLM(["Hi."])
    session_futures: list[concurrent.futures.Future[Any]] = []

    def grab(*_: Any) -> None:
        session = pair.user()._last
        assert session is not None
        session_futures.extend(session._futures)
        assert analyzer.entered.wait(5.0)  # the inference is running on the worker when the pipeline goes

    bench.scheduler.schedule_absolute(1.05, grab)
    bench.run(pipeline(pair.user(), llm, pair.assistant()), down=down, until=1.1)  # disposed at 1.1 s
    seen = list(events)
    analyzer.release.set()
    concurrent.futures.wait(session_futures, timeout=5.0)
    bench.scheduler.advance_by(10.0)
    assert session_futures and all(f.done() for f in session_futures)
    assert events == seen  # no verdict, no turn stop, no model run after disposal
    assert "on_user_turn_stopped" not in events and llm.runs == []
    assert analyzer.streams[0].buffer.segment().shape[0] == 0  # the stream was closed (its audio released)
    assert crashes.errors == []
