"""Named events with sync and async handlers, also readable as an observable.

Aggregators announce what happened (a turn started, a summary was applied)
through an :class:`EventRegistry`. A handler is ``handler(source, payload)``
(or ``handler(source)`` for an event without payload; one-argument handlers
always work). Plain functions run inline, in registration order, at the
moment the event is raised, which is what makes events assertable in
virtual-time tests. Coroutine functions run on the asyncio loop, one at a
time per registry, in the order the events were raised, so a slow handler
never holds up frames. A handler that raises is logged and contained.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar, overload

import reactivex
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.subject import Subject

from ._subjects import ContainedSubject
from .errors import ConfigurationError

__all__ = ["NO_PAYLOAD", "Event", "EventRegistry", "Handler", "Lazy"]

log = logging.getLogger("rxvoice.events")

Handler = Callable[..., Any]
_H = TypeVar("_H", bound=Handler)


class _NoPayload:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_PAYLOAD"


NO_PAYLOAD: Final = _NoPayload()
"""Marks an event raised without a payload."""


class Lazy:
    """A payload built only if someone listens (reports cost time to build)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn


@dataclass(frozen=True, slots=True)
class Event:
    """One raised event: its name, who raised it, its payload and when (scheduler seconds)."""

    name: str
    source: Any
    payload: Any = NO_PAYLOAD
    time: float = 0.0


def _wants_payload(handler: Handler) -> bool:
    """Whether ``handler`` takes a second positional argument (decided once, at registration)."""
    try:
        sig = inspect.signature(handler)
    except (TypeError, ValueError):
        return True
    positional = 0
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2


@dataclass(slots=True)
class _Entry:
    handler: Handler
    wants_payload: bool


class EventRegistry:
    """The events one object raises.

    Only declared names can be handled or raised, so a misspelt name fails at
    registration instead of silently never firing.
    """

    def __init__(self, source: Any, names: Iterable[str] = ()) -> None:
        self._source = source
        self._handlers: dict[str, list[_Entry]] = {}
        self._subject: Subject[Event] = ContainedSubject("an event registry")
        self._clock: Callable[[], float] = lambda: 0.0
        self._async_tail: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = {}
        self._lock = threading.Lock()
        for name in names:
            self.register(name)

    @property
    def names(self) -> frozenset[str]:
        """The declared event names."""
        return frozenset(self._handlers)

    def register(self, name: str) -> None:
        """Declare an event name (declaring one twice is harmless)."""
        self._handlers.setdefault(name, [])

    def set_clock(self, clock: Callable[[], float]) -> None:
        """Where event times come from (the session's scheduler)."""
        self._clock = clock

    def _check(self, name: str) -> list[_Entry]:
        try:
            return self._handlers[name]
        except KeyError:
            known = ", ".join(sorted(self._handlers)) or "none"
            raise ConfigurationError(f"unknown event {name!r}; this object raises: {known}") from None

    @overload
    def on(self, name: str) -> Callable[[_H], _H]: ...

    @overload
    def on(self, name: str, handler: _H) -> _H: ...

    def on(self, name: str, handler: _H | None = None) -> _H | Callable[[_H], _H]:
        """Add ``handler`` for ``name``; usable as a decorator: ``@events.on("on_x")``."""
        entries = self._check(name)

        def add(h: _H) -> _H:
            if not callable(h):
                raise ConfigurationError(f"an event handler must be callable, got {h!r}")
            with self._lock:
                entries.append(_Entry(h, _wants_payload(h)))
            return h

        return add(handler) if handler is not None else add

    def off(self, name: str, handler: Handler) -> bool:
        """Remove ``handler`` from ``name``; ``False`` if it was not there."""
        entries = self._check(name)
        with self._lock:
            for i, entry in enumerate(entries):
                if entry.handler is handler:
                    del entries[i]
                    return True
        return False

    def listened(self, name: str) -> bool:
        """Whether raising ``name`` would reach anyone (a handler, or an observer of the events)."""
        return bool(self._handlers.get(name)) or bool(self._subject.observers)

    def has_handlers(self, name: str) -> bool:
        """Whether anything listens to ``name`` (handlers or observers)."""
        return bool(self._handlers.get(name)) or bool(self._subject.observers)

    def observe(self, *names: str) -> reactivex.Observable[Event]:
        """The events raised from now on (all of them, or only ``names``)."""
        for n in names:
            self._check(n)
        if not names:
            return self._subject
        wanted = frozenset(names)

        def keep(e: Event) -> bool:
            return e.name in wanted

        return self._subject.pipe(ops.filter(keep))

    def emit(self, name: str, payload: Any = NO_PAYLOAD) -> None:
        """Raise ``name``: run its handlers and tell observers. Never raises."""
        entries = self._handlers.get(name)
        if entries is None:
            log.error("%r raised undeclared event %r", self._source, name)
            return
        if not entries and not self._subject.observers:
            return
        if type(payload) is Lazy:
            try:
                payload = payload.fn()
            except Exception:
                log.exception("building the payload of %s failed; not raised", name)
                return
        event = Event(name, self._source, payload, self._clock())
        if self._subject.observers:
            try:
                self._subject.on_next(event)
            except Exception:
                log.exception("an observer of %s.%s raised; contained", type(self._source).__name__, name)
        for entry in list(entries):
            self._call(entry, event)

    def _call(self, entry: _Entry, event: Event) -> None:
        args: tuple[Any, ...]
        if entry.wants_payload:
            args = (event.source, None if event.payload is NO_PAYLOAD else event.payload)
        else:
            args = (event.source,)
        try:
            result = entry.handler(*args)
        except Exception:
            log.exception("handler %r for %s raised; contained", entry.handler, event.name)
            return
        if inspect.isawaitable(result):
            self._run_async(result, entry.handler, event.name)

    def _run_async(self, awaitable: Awaitable[Any], handler: Handler, name: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:
            # No loop to hand it to: run it to completion here, so it is not lost.
            try:
                asyncio.run(_as_coroutine(awaitable))
            except Exception:
                log.exception("async handler %r for %s raised; contained", handler, name)
            return
        previous = self._async_tail.get(loop)

        async def serially() -> None:
            if previous is not None and not previous.done():
                with contextlib.suppress(BaseException):
                    await asyncio.shield(previous)
            try:
                await awaitable
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("async handler %r for %s raised; contained", handler, name)

        task = loop.create_task(serially())
        self._async_tail[loop] = task

    async def drain(self) -> None:
        """Wait until every async handler raised so far has finished (for tests and shutdown)."""
        loop = asyncio.get_running_loop()
        tail = self._async_tail.get(loop)
        while tail is not None and not tail.done():
            await asyncio.wait([tail])
            tail = self._async_tail.get(loop)

    def cancel_pending(self) -> None:
        """Cancel async handlers still running (on disposal)."""
        for tail in list(self._async_tail.values()):
            if not tail.done():
                tail.get_loop().call_soon_threadsafe(tail.cancel)
        self._async_tail.clear()

    def subscription(self, name: str, handler: Handler) -> Disposable:
        """Add ``handler`` and return a disposable that removes it."""
        self.on(name, handler)

        def remove() -> None:
            self.off(name, handler)

        return Disposable(remove)


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
