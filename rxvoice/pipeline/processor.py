"""Processors: stages that handle one frame at a time, run to completion.

A :class:`Processor` is the reactive shell around a stage's logic. Each
subscription opens a fresh :class:`FrameHandler` (per-session state) and a
:class:`Port` it talks through: push frames either way, start timers on the
session's scheduler, report errors as values. The shell guarantees the
handler is never re-entered: a frame that arrives while the handler is busy
(a loop through a neighbour, another thread) waits until the current one is
done, so a handler always sees its inputs one by one, in order.
"""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from ..errors import InvalidFrameError
from ..events import EventRegistry
from ..frames import DOWN, UP, Direction, ErrorFrame, Frame
from .session import Session, session_of
from .stage import Stage
from .wire import FrameSource, Sink, connect, fan_out

__all__ = ["EventfulProcessor", "FrameHandler", "Port", "Processor"]

log = logging.getLogger("rxvoice.processor")


class FrameHandler(Protocol):
    """What a processor opens per session: it is handed every frame, one at a time."""

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        """Handle one frame travelling ``direction``."""

    def on_input_end(self, direction: Direction) -> None:
        """The input travelling ``direction`` completed (no more frames that way)."""

    def close(self) -> None:
        """The session is being disposed: release what the handler holds."""


def _drop(_frame: Frame) -> None:
    return None


def _ignore(_frame: Frame, _direction: Direction) -> None:
    return None


class Port:
    """A handler's way out: frames to its neighbours, timers, errors, time."""

    __slots__ = ("_link", "_timers", "closed", "session")

    def __init__(self, link: _Link, session: Session) -> None:
        self._link = link
        self.session = session
        self._timers: set[_PortTimer] = set()
        self.closed = False

    @property
    def link(self) -> _Link:
        """The connection this port belongs to (its ``emit_down``/``emit_up`` forward a frame)."""
        return self._link

    @property
    def processor(self) -> Processor:
        """The processor this port belongs to."""
        return self._link.processor

    def push(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Send ``frame`` to the neighbour in ``direction``."""
        if direction is DOWN:
            self._link.emit_down(frame)
        else:
            self._link.emit_up(frame)

    def push_down(self, frame: Frame) -> None:
        """Send ``frame`` downstream."""
        self._link.emit_down(frame)

    def push_up(self, frame: Frame) -> None:
        """Send ``frame`` upstream."""
        self._link.emit_up(frame)

    def broadcast(self, make: Callable[[], Frame]) -> None:
        """Send one fresh frame downstream, then another upstream."""
        self._link.emit_down(make())
        self._link.emit_up(make())

    def requeue(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Feed ``frame`` back into this processor, after what it is handling now."""
        self._link.receive(frame, direction)

    def inject(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Hand ``frame`` to this processor from outside (any thread), through the session's gate."""
        self.session.run(self._link.receive_pair, (frame, direction))

    def inject_call(self, fn: Callable[[], Any]) -> None:
        """Run ``fn()`` as an input of this processor: never overlapping its handler."""
        if not self.closed:
            self._link.run_guarded(fn)

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        """Run ``fn()`` inside the session after ``seconds`` of scheduler time; dispose to cancel."""
        if self.closed:
            return Disposable()
        timer = _PortTimer(self, fn)
        self._timers.add(timer)
        timer.handle = self.session.call_later(seconds, timer.fire)
        return timer

    def time(self) -> float:
        """The session's clock in seconds."""
        return self.session.time()

    def report_error(self, error: BaseException, frame: object = None, *, upstream: bool = True) -> None:
        """Report a non-fatal error: logged, raised as the processor's ``on_error`` event, sent as an ErrorFrame."""
        self._link.processor.report_error(error, frame)
        if upstream:
            self._link.emit_up(ErrorFrame(error, processor=self._link.processor.name))

    def close(self) -> None:
        self.closed = True
        timers = list(self._timers)
        self._timers.clear()
        for timer in timers:
            timer.dispose()


class _PortTimer(abc.DisposableBase):
    """A port's pending timer: forgotten by the port once it fired or was cancelled (no growth over a long run)."""

    __slots__ = ("_fn", "_port", "handle")

    def __init__(self, port: Port, fn: Callable[[], Any]) -> None:
        self._port = port
        self._fn = fn
        self.handle: abc.DisposableBase | None = None

    def fire(self) -> None:
        port = self._port
        port._timers.discard(self)
        if not port.closed:
            port._link.run_guarded(self._fn)

    def dispose(self) -> None:
        self._port._timers.discard(self)
        if self.handle is not None:
            self.handle.dispose()


class _LinkOutput(FrameSource):
    """One output of a running processor."""

    def __init__(self, link: _Link, direction: Direction) -> None:
        super().__init__()
        self._link = link
        self._direction = direction
        self.owner = link.processor.name

    def connect_raw(self, sink: Sink, scheduler: abc.SchedulerBase | None) -> abc.DisposableBase:
        return self._link.attach(self._direction, sink, scheduler)

    def report(self, error: Exception, frame: Frame) -> None:
        self._link.processor.report_error(error, frame)


class _Link:
    """One processor connected to its inputs: the handler, its port and its sinks."""

    def __init__(self, processor: Processor, down_in: Observable[Frame], up_in: Observable[Frame]) -> None:
        self.processor = processor
        self._down_in = down_in
        self._up_in = up_in
        self._sinks: dict[Direction, list[Sink]] = {DOWN: [], UP: []}
        self.emit_down: Callable[[Frame], None] = _drop
        self.emit_up: Callable[[Frame], None] = _drop
        self._busy = False
        self._pending: deque[tuple[Callable[[Any], None], Any]] = deque()
        self._started = False
        self._subscriptions = CompositeDisposable()
        self._lock = threading.RLock()
        self._owns_session = False
        self._done: dict[Direction, bool] = {DOWN: False, UP: False}
        self.handler: FrameHandler | None = None
        self.port: Port | None = None

    # -- outputs -------------------------------------------------------------

    def output(self, direction: Direction) -> Observable[Frame]:
        return _LinkOutput(self, direction)

    def attach(self, direction: Direction, sink: Sink, scheduler: abc.SchedulerBase | None) -> abc.DisposableBase:
        with self._lock:
            self._sinks[direction].append(sink)
            self._rebind(direction)
            if not self._started:
                self._started = True
                self._start(scheduler)

        def detach() -> None:
            with self._lock:
                if sink in self._sinks[direction]:
                    self._sinks[direction].remove(sink)
                    self._rebind(direction)
                if not self._sinks[DOWN] and not self._sinks[UP]:
                    self._stop()

        return Disposable(detach)

    def _rebind(self, direction: Direction) -> None:
        emit = fan_out(self._sinks[direction])
        if direction is DOWN:
            self.emit_down = emit
        else:
            self.emit_up = emit

    # -- lifecycle -----------------------------------------------------------

    def _start(self, scheduler: abc.SchedulerBase | None) -> None:
        session, gated = session_of(self.processor.scheduler or scheduler)
        self._owns_session = not gated
        self.port = Port(self, session)
        self.handler = self.processor.open(self.port)
        self._on_frame: Callable[[Frame, Direction], None] = self.handler.on_frame
        if gated:
            down = Sink(self.receive_down, self._input_error_down, lambda: self._input_end(DOWN))
            up = Sink(self.receive_up, self._input_error_up, lambda: self._input_end(UP))
        else:
            run = session.run
            down = Sink(lambda f: run(self.receive_pair, (f, DOWN)), lambda e: run(self._input_error_down, e),
                        lambda: run(self._input_end, DOWN))
            up = Sink(lambda f: run(self.receive_pair, (f, UP)), lambda e: run(self._input_error_up, e),
                      lambda: run(self._input_end, UP))
        self._subscriptions.add(connect(self._up_in, up, session))
        self._subscriptions.add(connect(self._down_in, down, session))

    def _stop(self) -> None:
        self._subscriptions.dispose()
        if self.port is not None:
            self.port.close()
        if self.handler is not None:
            handler, self.handler = self.handler, None
            try:
                handler.close()
            except Exception:
                log.exception("%s failed to close; contained", self.processor.name)
        if self._owns_session and self.port is not None:
            self.port.session.dispose()
        self._pending.clear()
        self._on_frame = _ignore

    # -- inputs --------------------------------------------------------------

    def receive_pair(self, item: tuple[Frame, Direction]) -> None:
        self.receive(item[0], item[1])

    def receive(self, frame: object, direction: Direction) -> None:
        """Hand one frame to the handler, or queue it if the handler is busy."""
        if self._busy:
            self._pending.append((self._handle_pair, (frame, direction)))
            return
        self._busy = True
        try:
            self._handle(frame, direction)
            if self._pending:
                self._drain()
        finally:
            self._busy = False

    def receive_down(self, frame: object) -> None:
        """``receive(frame, DOWN)`` without the extra call: the path every frame takes."""
        if self._busy:
            self._pending.append((self._handle_pair, (frame, DOWN)))
            return
        self._busy = True
        try:
            if isinstance(frame, Frame):
                try:
                    self._on_frame(frame, DOWN)
                except Exception as exc:
                    self._failed(frame, exc)
            else:
                self._bad_input(frame)
            if self._pending:
                self._drain()
        finally:
            self._busy = False

    def receive_up(self, frame: object) -> None:
        self.receive(frame, UP)

    def _drain(self) -> None:
        pending = self._pending
        while pending:
            fn, arg = pending.popleft()
            fn(arg)

    def _handle_pair(self, item: tuple[object, Direction]) -> None:
        self._handle(item[0], item[1])

    def _handle(self, frame: object, direction: Direction) -> None:
        if self.handler is None:
            return
        if not isinstance(frame, Frame):
            self._bad_input(frame)
            return
        try:
            self._on_frame(frame, direction)
        except Exception as exc:
            self._failed(frame, exc)

    def _failed(self, frame: Frame, exc: Exception) -> None:
        log.exception("%s failed on %s; the frame is skipped", self.processor.name, frame.name)
        if self.port is not None:
            self.port.report_error(exc, frame)

    def _bad_input(self, item: object) -> None:
        error = InvalidFrameError(
            f"{self.processor.name} received {type(item).__name__} {item!r:.80}, not a Frame; skipped"
        )
        log.error("%s", error)
        if self.port is not None:
            self.port.report_error(error, item)

    def run_guarded(self, fn: Callable[[], Any]) -> None:
        """Run a timer's callback as if it were a frame: never overlapping the handler."""
        if self._busy:
            self._pending.append((self._call, fn))
            return
        self._busy = True
        try:
            self._call(fn)
            self._drain()
        finally:
            self._busy = False

    def _call(self, fn: Callable[[], Any]) -> None:
        if self.handler is None:
            return
        try:
            fn()
        except Exception as exc:
            log.exception("%s: a timer callback failed; contained", self.processor.name)
            if self.port is not None:
                self.port.report_error(exc)

    def _input_end(self, direction: Direction) -> None:
        if self._done[direction]:
            return
        self._done[direction] = True
        if self.handler is not None:
            try:
                self.handler.on_input_end(direction)
            except Exception as exc:
                log.exception("%s failed at end of input; contained", self.processor.name)
                if self.port is not None:
                    self.port.report_error(exc)
        if direction is DOWN:
            for d in (DOWN, UP):
                for sink in list(self._sinks[d]):
                    sink.on_completed()

    def _input_error_down(self, error: Exception) -> None:
        self._input_error(DOWN, error)

    def _input_error_up(self, error: Exception) -> None:
        self._input_error(UP, error)

    def _input_error(self, direction: Direction, error: Exception) -> None:
        for sink in list(self._sinks[direction]):
            sink.on_error(error)


class Processor(Stage):
    """Base of rxvoice's stages: a reactive shell around per-session frame handlers.

    Subclasses implement :meth:`open`. A processor used in a
    :func:`~rxvoice.pipeline.pipeline` is connected once per running pipeline;
    used as a plain operator, once per subscription.
    """

    name: str = "Processor"
    scheduler: abc.SchedulerBase | None = None

    def duplex(
        self, down: Observable[Frame], up: Observable[Frame]
    ) -> tuple[Observable[Frame], Observable[Frame]]:
        link = _Link(self, down, up)
        return link.output(DOWN), link.output(UP)

    @abstractmethod
    def open(self, port: Port) -> FrameHandler:
        """Start one session: return the handler that will see its frames."""

    def report_error(self, error: BaseException, frame: object = None) -> None:
        """Hook for non-fatal errors (processors with events raise it as their ``on_error``)."""
        log.warning("%s: %s", self.name, error)


class EventfulProcessor(Processor):
    """A processor with events: a non-fatal error is logged and raised as its ``on_error`` event."""

    events: EventRegistry

    def report_error(self, error: BaseException, frame: object = None) -> None:
        log.warning("%s: %s", self.name, error)
        self.events.emit("on_error", error)
