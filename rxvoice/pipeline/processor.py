"""Processors: stages that handle one frame at a time, run to completion.

A :class:`Processor` is the reactive shell around a stage's logic. Each
subscription opens a fresh :class:`FrameHandler` (per-session state) and a
:class:`Port` it talks through: push frames either way, start timers on the
session's scheduler, report errors as values.

A handler is never re-entered, and no hop pays for a guard to make sure:
frames going downstream are handed from stage to stage as plain calls (a
downstream chain cannot loop), and everything that could come back while a
handler is busy (a frame a later stage sends upstream, a frame a stage feeds
back into itself, a timer, a worker's result, another thread) enters through
the session's gate (:class:`~rxvoice.pipeline.Session`) and waits its turn.
"""

from __future__ import annotations

import logging
import threading
import warnings
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from ..errors import InvalidFrameError, RxVoiceWarning
from ..events import EventRegistry, SessionEvents
from ..frames import DOWN, UP, Direction, ErrorFrame, Frame
from .session import Session, session_of
from .stage import Stage
from .wire import FrameSource, Sink, connect, fan_out, is_trusted

__all__ = ["EventfulProcessor", "FrameHandler", "Port", "Processor"]

log = logging.getLogger("rxvoice.processor")


class FrameHandler(Protocol):
    """What a processor opens per session: it is handed every frame, one at a time."""

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        """Handle one frame travelling ``direction``.

        A handler may also offer ``on_down(frame)`` and ``on_up(frame)``:
        then frames from another rxvoice stage are handed to those directly,
        and the handler contains its own failures (reports them through its
        port) instead of the shell doing it around each call.
        """

    def on_input_end(self, direction: Direction) -> float | None:
        """The input travelling ``direction`` completed (no more frames that way).

        Downstream, a handler with work already asked for (a reply being
        streamed) may return seconds to hold the completion: its output
        completes when it calls ``port.finish_input()``, or after that many
        seconds at most. ``None`` completes the output at once.
        """

    def close(self) -> None:
        """The session is being disposed: release what the handler holds."""


def _drop(_frame: Frame) -> None:
    return None


def _ignore(_frame: Frame, _direction: Direction) -> None:
    return None


class Port:
    """A handler's way out: frames to its neighbours, timers, errors, time."""

    __slots__ = ("_link", "_timers", "closed", "events", "session")

    def __init__(self, link: _Link, session: Session) -> None:
        self._link = link
        self.session = session
        self._timers: set[_PortTimer] = set()
        self.closed = False
        self.events: SessionEvents | None = None
        """The session's events, when the handler raises through them (errors are then stamped with its clock)."""

    @property
    def link(self) -> _Link:
        """The connection this port belongs to (its ``emit_down``/``emit_up`` forward a frame)."""
        return self._link

    @property
    def processor(self) -> Processor:
        """The processor this port belongs to."""
        return self._link.processor

    def push(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Send ``frame`` to the neighbour in ``direction`` (something that is not a frame is reported, not sent)."""
        item: object = frame  # a handler written in Python may send anything
        if not isinstance(item, Frame):
            self._link.bad_output(item)
        elif direction is DOWN:
            self._link.emit_down(frame)
        else:
            self._link.emit_up(frame)

    def push_down(self, frame: Frame) -> None:
        """Send ``frame`` downstream."""
        item: object = frame
        if isinstance(item, Frame):
            self._link.emit_down(item)
        else:
            self._link.bad_output(item)

    def push_up(self, frame: Frame) -> None:
        """Send ``frame`` upstream."""
        item: object = frame
        if isinstance(item, Frame):
            self._link.emit_up(item)
        else:
            self._link.bad_output(item)

    def requeue(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Feed ``frame`` back into this processor, after what the session is running now."""
        self.session.run(self._link.receive_pair, (frame, direction))

    def inject(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Hand ``frame`` to this processor from outside (any thread), through the session's gate."""
        self.session.run(self._link.receive_pair, (frame, direction))

    def inject_call(self, fn: Callable[[], Any]) -> None:
        """Run ``fn()`` as an input of this processor (any thread): never overlapping its handler."""
        if not self.closed:
            self.session.run(self._link.call, fn)

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        """Run ``fn()`` inside the session after ``seconds`` of scheduler time; dispose to cancel."""
        if self.closed:
            return Disposable()
        timer = _PortTimer(self, fn)
        self._timers.add(timer)
        timer.handle = self.session.later(seconds, timer.fire)
        return timer

    def finish_input(self) -> None:
        """The work that held this stage's end of input is done: its output completes now."""
        self._link.release_end()

    def time(self) -> float:
        """The session's clock in seconds."""
        return self.session.time()

    @property
    def clock(self) -> Callable[[], float]:
        """The fastest way to read :meth:`time` (the session's own reader: bind it once)."""
        return self.session.clock

    def report_error(self, error: BaseException, frame: object = None, *, upstream: bool = True) -> None:
        """Report a non-fatal error: logged, raised as the processor's ``on_error`` event, sent as an ErrorFrame."""
        events = self.events
        if events is not None and "on_error" in events.registry.names:
            log.warning("%s: %s", self._link.processor.name, error)
            events.emit("on_error", error)
        else:
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

    def fire(self) -> None:  # already inside the session's gate (Session.call_later)
        port = self._port
        self.handle = None  # fired: the handle (and the cycle through it) goes
        port._timers.discard(self)
        if not port.closed:
            port._link.call(self._fn)

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
        self._started = False
        self._subscriptions = CompositeDisposable()
        self._lock = threading.RLock()
        self._owns_session = False
        self._done: dict[Direction, bool] = {DOWN: False, UP: False}
        self._holding = False
        self._on_frame: Callable[[Frame, Direction], None] = _ignore
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
        self.processor._session_opened(self)
        self.handler = self.processor.open(self.port)
        self._on_frame = self.handler.on_frame
        down = self._sink(DOWN, self._down_in, session, gated)
        up = self._sink(UP, self._up_in, session, gated)
        self._subscriptions.add(connect(self._up_in, up, session))
        self._subscriptions.add(connect(self._down_in, down, session))

    def _sink(self, direction: Direction, source: Observable[Frame], session: Session, gated: bool) -> Sink:
        """How frames from ``source`` reach the handler: a plain call, checked at the door if foreign.

        Inside a pipeline (``gated``) the sink also names who reports a non-frame, so a fused pipeline's
        door can check for an unchecked receiver; a stage on a session of its own always checks.
        """
        checked = not gated or not is_trusted(source)
        receive = self._receiver(direction, checked=checked)

        def error(e: Exception) -> None:
            self._input_error(direction, e)

        def end() -> None:
            self._input_end(direction)

        if gated:  # inside a pipeline: its entry and loop-back edges already went through the gate
            if checked:
                return Sink(receive, error, end)
            # A handler whose ``on_down`` only passes on the types outside ``down_handled`` (a live table):
            # the door of a fused chain passes those on itself.
            handled = getattr(self.handler, "down_handled", None) if direction is DOWN else None
            return Sink(receive, error, end, self._bad_input, None if handled is None else (handled, self))
        run = session.run
        return Sink(lambda f: run(receive, f), lambda e: run(error, e), lambda: run(_call_it, end))

    def _receiver(self, direction: Direction, *, checked: bool) -> Callable[[Any], None]:
        fast: Callable[[Frame], None] | None = getattr(self.handler, "on_down" if direction is DOWN else "on_up", None)
        if fast is not None:
            if not checked:
                return fast

            def receive_checked_fast(frame: Any) -> None:
                if isinstance(frame, Frame):
                    fast(frame)
                else:
                    self._bad_input(frame)

            return receive_checked_fast
        if checked:
            def receive_checked(frame: Any) -> None:
                if not isinstance(frame, Frame):
                    self._bad_input(frame)
                    return
                try:
                    self._on_frame(frame, direction)
                except Exception as exc:
                    self._failed(frame, exc)

            return receive_checked

        def receive(frame: Frame) -> None:
            try:
                self._on_frame(frame, direction)
            except Exception as exc:
                self._failed(frame, exc)

        return receive

    def _stop(self) -> None:
        self._subscriptions.dispose()
        if self.port is not None:
            self.port.close()
        self._on_frame = _ignore
        if self.handler is not None:
            handler, self.handler = self.handler, None
            try:
                handler.close()
            except Exception:
                log.exception("%s failed to close; contained", self.processor.name)
            self.processor._session_closed(self)
        if self._owns_session and self.port is not None:
            self.port.session.dispose()

    # -- inputs fed back through the gate -------------------------------------

    def receive_pair(self, item: tuple[object, Direction]) -> None:
        """Hand one frame to the handler (called inside the session's gate)."""
        frame, direction = item
        if self.handler is None:
            return
        if not isinstance(frame, Frame):
            self._bad_input(frame)
            return
        try:
            self._on_frame(frame, direction)
        except Exception as exc:
            self._failed(frame, exc)

    def call(self, fn: Callable[[], Any]) -> None:
        """Run a timer's or a worker's callback as an input (called inside the session's gate)."""
        if self.handler is None:
            return
        try:
            fn()
        except Exception as exc:
            log.exception("%s: a callback failed; contained", self.processor.name)
            if self.port is not None:
                self.port.report_error(exc)

    def failed(self, frame: Frame, exc: Exception) -> None:
        """The handler failed on ``frame``: logged and reported; the frame is skipped."""
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

    def bad_output(self, item: object) -> None:
        """The handler tried to send something that is not a frame: reported, not sent."""
        error = InvalidFrameError(
            f"{self.processor.name} tried to send {type(item).__name__} {item!r:.80}, not a Frame; dropped"
        )
        log.error("%s", error)
        if self.port is not None:
            self.port.report_error(error, item)

    def _input_end(self, direction: Direction) -> None:
        if self._done[direction]:
            return
        self._done[direction] = True
        hold: object = None
        if self.handler is not None:
            try:
                hold = self.handler.on_input_end(direction)
            except Exception as exc:
                log.exception("%s failed at end of input; contained", self.processor.name)
                if self.port is not None:
                    self.port.report_error(exc)
        if direction is not DOWN:
            return
        if isinstance(hold, int | float) and not isinstance(hold, bool) and hold > 0 and self.port is not None:
            self._holding = True  # work already asked for finishes first (bounded)
            self.port.call_later(float(hold), self.release_end)
            return
        self._complete()

    def release_end(self) -> None:
        """A held end of input goes on: the outputs complete (once)."""
        if self._holding:
            self._holding = False
            self._complete()

    def _complete(self) -> None:
        for d in (DOWN, UP):
            for sink in list(self._sinks[d]):
                sink.on_completed()

    def _input_error(self, direction: Direction, error: Exception) -> None:
        for sink in list(self._sinks[direction]):
            sink.on_error(error)


def _call_it(fn: Callable[[], Any]) -> None:
    fn()


class Processor(Stage):
    """Base of rxvoice's stages: a reactive shell around per-session frame handlers.

    Subclasses implement :meth:`open`. A processor used in a
    :func:`~rxvoice.pipeline.pipeline` is connected once per running pipeline;
    used as a plain operator, once per subscription. Keep per-session state
    in the handler :meth:`open` returns, never on the processor: one
    processor may run several sessions.

    A processor whose sessions write shared state (``exclusive`` set to what
    they write) warns when a second session starts while one is running:
    subscribing the same stage twice, without ``share()`` or a
    :func:`~rxvoice.pipeline.pipeline`, runs it twice on the same input.
    """

    name: str = "Processor"
    scheduler: abc.SchedulerBase | None = None
    fuses: ClassVar[bool] = True
    exclusive: ClassVar[str | None] = None
    """What the sessions of this processor write that others share (``None``: nothing)."""

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

    # -- live sessions (bookkeeping for the double-subscription warning) --------------------

    def _session_opened(self, link: _Link) -> None:
        if self.exclusive is None:
            return
        with _LIVE_LOCK:
            live = self.__dict__.setdefault("_live_links", set())
            live.add(id(link))
            count = len(live)
        if count > 1:
            message = (
                f"{self.name} is running {count} sessions at once, and each writes {self.exclusive}: "
                "every write happens once per session. Subscribing one stage twice runs it twice; "
                "put it in a pipeline() (connected once however many observers) or share() its output."
            )
            log.warning("%s", message)
            warnings.warn(message, RxVoiceWarning, stacklevel=2)

    def _session_closed(self, link: _Link) -> None:
        if self.exclusive is None:
            return
        with _LIVE_LOCK:
            self.__dict__.get("_live_links", set()).discard(id(link))


_LIVE_LOCK = threading.Lock()


class EventfulProcessor(Processor):
    """A processor with events: a non-fatal error is logged and raised as its ``on_error`` event."""

    events: EventRegistry

    def report_error(self, error: BaseException, frame: object = None) -> None:
        log.warning("%s: %s", self.name, error)
        self.events.emit("on_error", error)
