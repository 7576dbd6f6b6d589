"""Duplex stages, pipelines, lifting, sessions: the reactive shell."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.pipeline import DOWN, UP, Direction, Inlet, Port, Processor, Session, lift
from rxvoice.testing import COMPLETED, FrameMarbles


class Echo(Processor):
    """Forwards every frame and counts how often it was connected."""

    name = "Echo"

    def __init__(self) -> None:
        self.opened = 0

    def open(self, port: Port) -> _EchoHandler:
        self.opened += 1
        return _EchoHandler(port)


class _EchoHandler:
    def __init__(self, port: Port) -> None:
        self.port = port

    def on_frame(self, frame: F.Frame, direction: Direction) -> None:
        self.port.push(frame, direction)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None


class Bouncer(Processor):
    """Sends every LLMRunFrame it sees downstream back upstream, as a model re-run request would."""

    name = "Bouncer"

    def open(self, port: Port) -> _BounceHandler:
        return _BounceHandler(port)


class _BounceHandler(_EchoHandler):
    def on_frame(self, frame: F.Frame, direction: Direction) -> None:
        if direction is DOWN and isinstance(frame, F.LLMRunFrame):
            self.port.push(F.TextFrame("bounced"), UP)
            return
        self.port.push(frame, direction)


LEGEND = {"a": F.TextFrame("a"), "b": F.TextFrame("b"), "r": F.LLMRunFrame()}


def test_plain_operators_are_lifted() -> None:
    """A reactivex operator in a pipeline transforms downstream frames and lets upstream ones through."""
    upper = ops.map(lambda f: F.TextFrame(f.text.upper()) if isinstance(f, F.TextFrame) else f)
    m = FrameMarbles(LEGEND)
    rec = m.run(pipeline(upper, Echo()), down="a-b-|", up="--a")
    assert rec.down == [(0, F.TextFrame("A")), (200, F.TextFrame("B")), (400, COMPLETED)]
    assert rec.up == [(200, F.TextFrame("a")), (400, COMPLETED)]


def test_upstream_loops_are_closed() -> None:
    """A frame a later stage sends upstream reaches the earlier stages and leaves at the top."""
    m = FrameMarbles(LEGEND)
    first, second = Echo(), Bouncer()
    rec = m.run(pipeline(first, second), down="a-r-b")
    assert rec.down_frames() == [F.TextFrame("a"), F.TextFrame("b")]
    assert rec.up == [(200, F.TextFrame("bounced"))]


def test_each_stage_is_connected_once_however_many_observers() -> None:
    """Subscribing to both outputs, or twice to one, connects each stage once."""
    echo = Echo()
    src: Subject[F.Frame] = Subject()
    down, up = pipeline(echo, Echo()).connect(src)
    got1: list[F.Frame] = []
    got2: list[F.Frame] = []
    s1 = down.subscribe(got1.append)
    s2 = down.subscribe(got2.append)
    s3 = up.subscribe(lambda f: None)
    src.on_next(F.TextFrame("x"))
    assert echo.opened == 1
    assert got1 == got2 == [F.TextFrame("x")]
    for s in (s1, s2, s3):
        s.dispose()


def test_processor_as_a_plain_operator() -> None:
    """A processor used with .pipe() is connected once per subscription."""
    echo = Echo()
    source = reactivex.of(F.TextFrame("a"), F.TextFrame("b"))
    out1 = source.pipe(echo).pipe(ops.to_list()).run()
    out2 = source.pipe(echo).pipe(ops.to_list()).run()
    assert out1 == out2 == [F.TextFrame("a"), F.TextFrame("b")]
    assert echo.opened == 2


def test_nested_pipelines() -> None:
    """A pipeline is a stage: pipelines nest."""
    inner = pipeline(Echo(), Bouncer())
    rec = FrameMarbles(LEGEND).run(pipeline(Echo(), inner, Echo()), down="a-r")
    assert rec.down_frames() == [F.TextFrame("a")]
    assert rec.up_frames() == [F.TextFrame("bounced")]


def test_completion_reaches_both_outputs() -> None:
    """When the input completes, the pipeline completes downstream and upstream."""
    m = FrameMarbles(LEGEND)
    rec = m.run(pipeline(Echo(), Echo()), down="a|")
    assert rec.down[-1] == (100, COMPLETED)
    assert rec.up[-1] == (100, COMPLETED)


def test_non_frames_are_skipped_and_reported() -> None:
    """Something that is not a frame is skipped with an ErrorFrame upstream; the stream goes on."""
    src: Subject[object] = Subject()
    down, up = pipeline(Echo()).connect(src)  # type: ignore[arg-type]
    out: list[F.Frame] = []
    errors: list[F.Frame] = []
    down.subscribe(out.append)
    up.subscribe(errors.append)
    src.on_next("not a frame")
    src.on_next(F.TextFrame("still here"))
    assert out == [F.TextFrame("still here")]
    assert len(errors) == 1 and isinstance(errors[0], F.ErrorFrame)
    assert "not a Frame" in str(errors[0].error)


def test_a_raising_subscriber_does_not_break_the_stream() -> None:
    """A subscriber that raises is contained; the frames after it still flow."""
    src: Subject[F.Frame] = Subject()
    down, _ = pipeline(Echo()).connect(src)
    seen: list[F.Frame] = []

    def sink(f: F.Frame) -> None:
        seen.append(f)
        if f == F.TextFrame("boom"):
            raise RuntimeError("subscriber bug")

    down.subscribe(sink)
    src.on_next(F.TextFrame("boom"))
    src.on_next(F.TextFrame("after"))
    assert seen == [F.TextFrame("boom"), F.TextFrame("after")]


class _Counter(Processor):
    """Detects overlapping calls into its handler."""

    name = "Counter"

    def __init__(self) -> None:
        self.inside = 0
        self.max_inside = 0
        self.count = 0

    def open(self, port: Port) -> _CounterHandler:
        return _CounterHandler(self, port)


class _CounterHandler(_EchoHandler):
    def __init__(self, owner: _Counter, port: Port) -> None:
        super().__init__(port)
        self.owner = owner

    def on_frame(self, frame: F.Frame, direction: Direction) -> None:
        o = self.owner
        o.inside += 1
        o.max_inside = max(o.max_inside, o.inside)
        o.count += 1
        time.sleep(0)  # yield the GIL: invites another thread in (it must be kept out)
        o.inside -= 1


@pytest.mark.parametrize("source", [Subject, Inlet], ids=["subject", "inlet"])
def test_inputs_from_many_threads_are_serialized(source: Callable[[], Any]) -> None:
    """Eight producer threads (through a Subject or the fused chain's Inlet): every frame arrives, and the
    handler never runs twice at once."""
    counter = _Counter()
    src = source()
    down, _ = pipeline(counter).connect(src)
    down.subscribe(lambda f: None, scheduler=TestScheduler())

    def produce() -> None:
        for i in range(500):
            src.on_next(F.TextFrame(str(i)))

    threads = [threading.Thread(target=produce) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.count == 4000
    assert counter.max_inside == 1


def test_session_timers_enter_through_the_gate() -> None:
    """A timer firing while the session is busy waits its turn instead of interleaving."""
    sched = TestScheduler()
    session = Session(sched)
    order: list[str] = []

    def long_call(_: None) -> None:
        order.append("call start")
        sched.advance_by(1.0)  # the timer comes due while we are inside
        order.append("call end")

    session.call_later(0.5, lambda: order.append("timer"))
    session.run(long_call, None)
    assert order == ["call start", "call end", "timer"]


def test_cancelled_timer_never_fires() -> None:
    """Disposing a scheduled timer cancels it, even one already queued behind a busy session."""
    sched = TestScheduler()
    session = Session(sched)
    fired: list[int] = []
    handle = session.call_later(1.0, lambda: fired.append(1))
    handle.dispose()
    sched.advance_by(2.0)
    assert fired == []


def test_lift_keeps_the_operator_usable_directly() -> None:
    """A lifted operator still works as the operator it wraps."""
    stage = lift(ops.filter(lambda f: isinstance(f, F.TextFrame) and f.text == "a"))
    out = reactivex.of(F.TextFrame("a"), F.TextFrame("b")).pipe(stage).pipe(ops.to_list()).run()
    assert out == [F.TextFrame("a")]
