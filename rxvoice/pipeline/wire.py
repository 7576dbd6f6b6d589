"""Wiring between rxvoice's own stages without per-hop Rx wrappers.

Every stage output is a real ``Observable`` (anyone can subscribe to it),
but when one rxvoice stage feeds another, the frame is handed over with a
plain function call instead of going through ``AutoDetachObserver`` and
``Observer`` layers on each hop. That is most of what a frame costs in a
long pipeline, so it is worth the few lines here.

A source is *trusted* when it can only carry frames (another rxvoice stage's
output): a stage connected to it skips the "is this a frame?" check. A
foreign observable, or a pipeline's own input, is checked at the door.
"""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod
from collections.abc import Callable, Container
from typing import Any, NamedTuple

from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.observer.autodetachobserver import AutoDetachObserver

from ..frames import Frame

__all__ = ["Feed", "FrameSource", "Sink", "connect", "fan_out", "is_trusted"]

log = logging.getLogger("rxvoice.pipeline")


Passes = tuple[Container[type], Any]
"""``(handled, link)``: a receiver's frames of a type not in ``handled`` are exactly ``link.emit_down``'s."""


class Sink(NamedTuple):
    """Where frames go: three plain callables (and, for a receiver that does not check, who reports a non-frame)."""

    on_next: Callable[[Frame], None]
    on_error: Callable[[Exception], None]
    on_completed: Callable[[], None]
    on_invalid: Callable[[object], None] | None = None
    """How the receiver reports an item that is not a frame, when ``on_next`` trusts what it is given (the
    door of a fused chain checks, and hands what fails here)."""
    passes: Passes | None = None
    """``(handled, link)`` when ``on_next`` of a frame whose type is not in ``handled`` is exactly
    ``link.emit_down(frame)`` (a stage that only passes those on): the door of a fused chain then hands
    them to ``link.emit_down`` itself, one call less (the model's tokens crossing the user's stage)."""


def _guarded(
    on_next: Callable[[Frame], None], owner: str, report: Callable[[Exception, Frame], None] | None,
    observer: Any = None,
) -> Callable[[Frame], None]:
    def contain(exc: Exception, frame: Frame) -> None:  # a subscriber's failure is not the stage's
        log.exception("a subscriber of %s raised on %s; contained", owner, type(frame).__name__)
        if report is not None:
            try:
                report(exc, frame)
            except Exception:
                log.exception("reporting a subscriber's failure failed")

    subscriber = getattr(observer, "_on_next", None) if type(observer) is AutoDetachObserver else None
    if subscriber is not None:
        # What ``Observable.subscribe`` wraps a subscriber in: its own rule (nothing once it stopped: ended,
        # failed or disposed) checked here, and the subscriber called directly, one call less a frame.
        # (Another reactivex release without that private attribute takes the plain path below.)

        def deliver(frame: Frame) -> None:
            if observer.is_stopped:
                return
            try:
                subscriber(frame)
            except Exception as exc:
                contain(exc, frame)

        return deliver

    def emit(frame: Frame) -> None:
        try:
            on_next(frame)
        except Exception as exc:
            contain(exc, frame)

    return emit


class FrameSource(Observable[Frame]):
    """An observable of frames that rxvoice stages can also connect to directly."""

    owner: str = "a stage"
    trusted: bool = True
    """Whether everything it emits is known to be a frame (an rxvoice stage's output)."""

    @abstractmethod
    def connect_raw(self, sink: Sink, scheduler: abc.SchedulerBase | None) -> abc.DisposableBase:
        """Deliver frames to ``sink`` by plain calls."""

    def report(self, error: Exception, frame: Frame) -> None:
        """Called when a subscriber raised on ``frame`` (after it was logged)."""

    def _subscribe_core(
        self, observer: abc.ObserverBase[Frame], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        emit = _guarded(observer.on_next, self.owner, self.report, observer)
        sink = Sink(emit, observer.on_error, observer.on_completed)
        return self.connect_raw(sink, scheduler)


def is_trusted(source: Observable[Frame]) -> bool:
    """Whether ``source`` only ever carries frames (its items need no check)."""
    return isinstance(source, FrameSource) and source.trusted


def connect(source: Observable[Frame], sink: Sink, scheduler: abc.SchedulerBase | None) -> abc.DisposableBase:
    """Connect ``sink`` to ``source``: directly when it is an rxvoice stage output, else by subscribing."""
    if isinstance(source, FrameSource):
        return source.connect_raw(sink, scheduler)
    return source.subscribe(sink.on_next, sink.on_error, sink.on_completed, scheduler=scheduler)


def _drop(_: Frame) -> None:
    return None


def fan_out(sinks: list[Sink]) -> Callable[[Frame], None]:
    """One callable delivering a frame to every sink (the sole sink's own when there is one)."""
    if not sinks:
        return _drop
    if len(sinks) == 1:
        return sinks[0].on_next
    nexts = [s.on_next for s in sinks]

    def emit(frame: Frame) -> None:
        for n in nexts:
            n(frame)

    return emit


class Feed(FrameSource):
    """A hot source fed by calls (``emit``, ``error``, ``complete``), for wiring inside pipelines.

    Args:
        owner: Who feeds it (for log lines).
        trusted: Whether what it is fed is known to be frames.
    """

    def __init__(self, owner: str = "a pipeline", *, trusted: bool = True) -> None:
        super().__init__()
        self.owner = owner
        self.trusted = trusted
        self._sinks: list[Sink] = []
        self._lock = threading.Lock()
        self._terminal: tuple[str, Exception | None] | None = None
        self.emit: Callable[[Frame], None] = _drop

    def connect_raw(self, sink: Sink, scheduler: abc.SchedulerBase | None) -> abc.DisposableBase:
        with self._lock:
            if self._terminal is not None:
                kind, err = self._terminal
                if kind == "error" and err is not None:
                    sink.on_error(err)
                else:
                    sink.on_completed()
                return Disposable()
            self._sinks.append(sink)
            self._bind()

        def detach() -> None:
            with self._lock:
                if sink in self._sinks:
                    self._sinks.remove(sink)
                    self._bind()

        return Disposable(detach)

    def _bind(self) -> None:
        """Point :attr:`emit` at the sinks connected now (called with the lock held)."""
        self.emit = fan_out(self._sinks)

    def door(self) -> tuple[Callable[[Frame], None], Callable[[object], None], Passes | None] | None:
        """Its sole receiver, when that receiver trusts what it is given: ``(receive, reject, passes)``, else ``None``.

        The way into a fused chain calls ``receive`` directly and hands what
        is not a frame to ``reject`` (the receiving stage reports it);
        ``passes`` is the receiver's :attr:`Sink.passes`.
        """
        with self._lock:
            if len(self._sinks) != 1 or self._terminal is not None:
                return None
            sink = self._sinks[0]
        if sink.on_invalid is None:
            return None
        return sink.on_next, sink.on_invalid, sink.passes

    def error(self, error: Exception) -> None:
        self._terminal = ("error", error)
        for s in list(self._sinks):
            s.on_error(error)

    def complete(self, _: Any = None) -> None:
        self._terminal = ("completed", None)
        for s in list(self._sinks):
            s.on_completed()

    def push(self, frame: Frame) -> None:
        """Emit ``frame`` to whoever is connected now."""
        self.emit(frame)

    def sink(self) -> Sink:
        """This feed as a sink (frames given to the sink are emitted)."""
        return Sink(self.push, self.error, lambda: self.complete())
