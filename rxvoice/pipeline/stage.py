"""Duplex stages and the pipeline that closes their loops.

Most stages only look downstream and are plain Rx operators. A few must talk
back: the output side tells the user side the bot started speaking, a tool
result re-runs the model, a summary request goes to the model. A
:class:`Stage` therefore maps a pair of streams to a pair of streams:
``(down_in, up_in) -> (down_out, up_out)``. :func:`pipeline` chains stages,
feeding each one's upstream output into its left neighbour through subjects,
and lifts plain operators into stages that pass upstream frames through.
"""

from __future__ import annotations

import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from ..frames import DOWN, UP, Direction, Frame
from .inlet import Inlet
from .session import Session
from .wire import Feed, FrameSource, Sink, connect, is_trusted

__all__ = ["Direction", "Operator", "Pipeline", "Stage", "as_stage", "lift", "pipeline"]

Operator = Callable[[Observable[Frame]], Observable[Frame]]
"""A plain reactivex operator on frames; :func:`pipeline` lifts it into a stage."""


class Stage(ABC):
    """A duplex stage: ``(down_in, up_in) -> (down_out, up_out)``.

    Calling a stage on one observable uses it as a plain operator: it sees
    no upstream input and its upstream output is dropped.
    """

    fuses: ClassVar[bool] = False
    """Whether the stage takes its frames by plain calls from its neighbours (rxvoice's own stages): a
    pipeline whose stages all do is wired into one call chain (see :class:`Pipeline`)."""

    @abstractmethod
    def duplex(
        self, down: Observable[Frame], up: Observable[Frame]
    ) -> tuple[Observable[Frame], Observable[Frame]]:
        """Connect the stage: frames flowing down and up in, frames flowing down and up out."""

    def __call__(self, source: Observable[Frame]) -> Observable[Frame]:
        def subscribe(
            observer: abc.ObserverBase[Frame], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            down, _up = self.duplex(source, reactivex.never())
            return down.subscribe(observer, scheduler=scheduler)

        return Observable(subscribe)


class _Lifted(Stage):
    """A plain operator as a stage: downstream through the operator, upstream untouched."""

    def __init__(self, operator: Operator) -> None:
        self.operator = operator

    def __repr__(self) -> str:
        return f"lift({self.operator!r})"

    def duplex(
        self, down: Observable[Frame], up: Observable[Frame]
    ) -> tuple[Observable[Frame], Observable[Frame]]:
        return self.operator(down), up

    def __call__(self, source: Observable[Frame]) -> Observable[Frame]:
        return self.operator(source)


def lift(operator: Operator) -> Stage:
    """Make a plain ``Observable -> Observable`` operator a stage that passes upstream through."""
    return _Lifted(operator)


def as_stage(item: Stage | Operator) -> Stage:
    """A stage as is; a callable operator lifted."""
    if isinstance(item, Stage):
        return item
    if callable(item):
        return lift(item)
    raise TypeError(f"pipeline() takes stages or operators, got {item!r}")


def _entry(session: Session, feed: Feed, *, fused: bool) -> Sink:
    """Where a pipeline's input enters: through the session's gate, into the first stage.

    In a fused chain (every stage an rxvoice stage) a frame enters by the
    session's :meth:`~rxvoice.pipeline.Session.door` for the first stage's own
    receiver: one call takes the gate, checks that it is a frame and hands it
    over. Otherwise each frame goes through the gate into the entry feed.
    """
    run = session.run
    door = feed.door() if fused else None
    if door is not None:
        receive, reject, passes = door
        on_next: Callable[[Frame], None] = session.door(receive, reject, Frame, passes)
    else:
        # Bound once the stages are wired (the feed's target no longer changes): a C-level
        # partial saves a Python call on the path every input frame takes.
        on_next = functools.partial(run, feed.emit)
    return Sink(on_next, functools.partial(run, feed.error), functools.partial(run, feed.complete, None))


def _connect_input(source: Observable[Frame], entry: Sink, session: Session) -> abc.DisposableBase:
    """Connect a pipeline's input: an :class:`~rxvoice.pipeline.Inlet` by a plain call, anything else by
    subscribing (reactivex's observer wrapper keeps a foreign source's end-of-stream rules)."""
    if isinstance(source, Inlet):
        return source.connect_raw(entry, session)
    return source.subscribe(entry.on_next, entry.on_error, entry.on_completed, scheduler=session)


def _through_gate(run: Callable[[Callable[[Any], Any], Any], None], feed: Feed) -> Sink:
    """A sink that hands each frame (and the end) to ``feed`` through the session's gate."""
    return Sink(functools.partial(run, feed.push), lambda e: run(feed.error, e), lambda: run(feed.complete, None))


class _ConnectionOutput(FrameSource):
    def __init__(self, conn: _Connection, direction: Direction) -> None:
        super().__init__()
        self._conn = conn
        self._direction = direction
        self.owner = "pipeline"

    def connect_raw(self, sink: Sink, scheduler: abc.SchedulerBase | None) -> abc.DisposableBase:
        return self._conn.attach(self._direction, sink, scheduler)


class _Connection:
    """One running pipeline: the stages wired once, shared by every observer of its outputs."""

    def __init__(self, pipe: Pipeline, down_in: Observable[Frame], up_in: Observable[Frame]) -> None:
        self._pipe = pipe
        self._down_in = down_in
        self._up_in = up_in
        self._outputs = {DOWN: Feed("pipeline"), UP: Feed("pipeline")}
        self._attached = 0
        self._started = False
        self._disposable = CompositeDisposable()
        self._lock = threading.RLock()
        self._down: FrameSource | None = None
        self.session: Session | None = None

    def output(self, direction: Direction) -> Observable[Frame]:
        return _ConnectionOutput(self, direction)

    def attach(self, direction: Direction, sink: Sink, scheduler: abc.SchedulerBase | None) -> abc.DisposableBase:
        with self._lock:
            if not self._started:
                self._started = True
                self._start(scheduler)
            if direction is DOWN and self._down is not None:
                # The last stage is an rxvoice stage: its observers are its own sinks (one call less a frame).
                inner = self._down.connect_raw(sink, scheduler)
            else:
                inner = self._outputs[direction].connect_raw(sink, scheduler)
            self._attached += 1

        def detach() -> None:
            with self._lock:
                inner.dispose()
                self._attached -= 1
                if self._attached == 0:
                    self._stop()

        return Disposable(detach)

    def _start(self, scheduler: abc.SchedulerBase | None) -> None:
        given = self._pipe.scheduler or scheduler
        # Inside another pipeline (connected with its session): the inputs are already serialized.
        nested = isinstance(scheduler, Session) and given is scheduler
        session = given if isinstance(given, Session) else Session(given)
        self.session = session
        stages = self._pipe.stages
        # Every stage an rxvoice stage: one call chain, entered through the session's door (which checks).
        fused = not nested and self._pipe.fused
        # A pipeline's own inputs are checked at the door (is it a frame?) unless they come from a stage.
        down_entry = Feed("pipeline input", trusted=fused or (nested and is_trusted(self._down_in)))
        up_entry = Feed("pipeline input", trusted=fused or (nested and is_trusted(self._up_in)))
        # backs[i] carries frames travelling up into stage i from stage i + 1.
        backs: list[Feed] = [Feed("pipeline") for _ in stages[:-1]] + [up_entry]
        down: Observable[Frame] = down_entry
        ups: list[Observable[Frame]] = []
        for i, stage in enumerate(stages):
            down, up_out = stage.duplex(down, backs[i])
            ups.append(up_out)
        d = self._disposable
        run = session.run
        # Wire the loops before anything flows: upstream output of stage i feeds backs[i - 1]. These are
        # the only edges that can lead back into a stage that is busy, so they go through the gate: a
        # frame sent upstream is handled once the chain that sent it has returned.
        for i in range(1, len(stages)):
            d.add(connect(ups[i], _through_gate(run, backs[i - 1]), session))
        d.add(connect(ups[0], self._outputs[UP].sink(), session))
        if isinstance(down, FrameSource):
            # Every stage is already started by its upstream edge; observers attach to the last one directly.
            self._down = down
        else:
            d.add(connect(down, self._outputs[DOWN].sink(), session))
        # Only now let the inputs in, each through the session's gate.
        if nested:
            d.add(connect(self._up_in, up_entry.sink(), session))
            d.add(connect(self._down_in, down_entry.sink(), session))
            return

        d.add(_connect_input(self._up_in, _entry(session, up_entry, fused=fused), session))
        d.add(_connect_input(self._down_in, _entry(session, down_entry, fused=fused), session))

    def _stop(self) -> None:
        self._disposable.dispose()
        if self.session is not None:
            self.session.dispose()


class Pipeline(Stage):
    """Stages chained left to right, their upstream outputs fed back right to left.

    A pipeline is itself a stage, so pipelines nest. Each stage is connected
    once per subscription of the pipeline, however many observers its outputs
    have; all inputs of one running pipeline are serialized by one
    :class:`Session`.
    """

    def __init__(self, stages: Sequence[Stage | Operator], *, scheduler: abc.SchedulerBase | None = None) -> None:
        if not stages:
            raise ValueError("pipeline() needs at least one stage")
        self.stages: tuple[Stage, ...] = tuple(as_stage(s) for s in stages)
        self.scheduler = scheduler

    def __repr__(self) -> str:
        return f"pipeline({', '.join(map(repr, self.stages))})"

    @property
    def fused(self) -> bool:
        """Whether every stage is an rxvoice stage, so the pipeline runs as one call chain.

        Then a frame enters through one gate (the session's door, which also
        checks that it is a frame) and goes from stage to stage by plain
        calls; frames sent upstream, timers and results wait at the gate
        until the chain that sent them has returned. A plain reactivex
        operator anywhere in the chain (or a nested pipeline) wires it as
        before: the operator subscribes to its neighbour's output, and the
        inputs go through the gate into an entry feed.
        """
        return all(s.fuses for s in self.stages)

    def duplex(
        self, down: Observable[Frame], up: Observable[Frame]
    ) -> tuple[Observable[Frame], Observable[Frame]]:
        conn = _Connection(self, down, up)
        return conn.output(DOWN), conn.output(UP)

    def connect(
        self, down: Observable[Frame], up: Observable[Frame] | None = None
    ) -> tuple[Observable[Frame], Observable[Frame]]:
        """Like :meth:`duplex`, with no upstream input by default."""
        return self.duplex(down, up if up is not None else reactivex.never())


def pipeline(*stages: Stage | Operator, scheduler: abc.SchedulerBase | None = None) -> Pipeline:
    """Chain stages (or plain operators) into one duplex stage.

    Args:
        *stages: Stages or ``Observable -> Observable`` operators, in order
            from input to output.
        scheduler: The scheduler the pipeline runs on; default: the one given
            at subscribe time, else the running asyncio loop's, else timer
            threads.

    Examples:
        >>> from rxvoice import pipeline
        >>> from rxvoice.aggregators import Pair
        >>> pair = Pair()
        >>> p = pipeline(pair.user(), pair.assistant())
    """
    return Pipeline(stages, scheduler=scheduler)
