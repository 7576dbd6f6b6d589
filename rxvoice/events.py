"""Named events with sync and async handlers, also readable as an observable.

Aggregators announce what happened (a turn started, a summary was applied)
through an :class:`EventRegistry`. A handler is ``handler(source, payload)``
(or ``handler(source)`` for an event without payload; one-argument handlers
always work). Plain functions run inline, in registration order, at the
moment the event is raised, which is what makes events assertable in
virtual-time tests. Coroutine functions run on the asyncio loop, one at a
time per registry, in the order the events were raised, so a slow handler
never holds up frames. A handler that raises is logged and contained.

Each running session raises its events through its own
:class:`SessionEvents` (from :meth:`EventRegistry.session`): the events are
stamped with that session's clock, and the async handlers it started are its
own, so when the session ends they get :data:`ASYNC_GRACE` seconds to finish
and are then cancelled. Nothing of one session is kept on the shared
registry.

:func:`contain` is the one way rxvoice calls an application's callback (an
event handler, an ``on_idle`` callback, a tool's ``on_context_updated``): an
``Exception`` or a ``CancelledError`` it raises is logged and contained, an
awaitable it returns runs on the running loop (or, with no loop running, to
completion at once), and only an interpreter exit (``KeyboardInterrupt``,
``SystemExit``) goes through.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar, overload

import reactivex
from reactivex import abc
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.subject import Subject

from ._subjects import ContainedSubject
from .errors import ConfigurationError

__all__ = ["ASYNC_GRACE", "NO_PAYLOAD", "Event", "EventRegistry", "Handler", "Lazy", "SessionEvents", "contain"]

log = logging.getLogger("rxvoice.events")

Handler = Callable[..., Any]
_H = TypeVar("_H", bound=Handler)


class _NoPayload:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_PAYLOAD"


NO_PAYLOAD: Final = _NoPayload()
"""Marks an event raised without a payload."""


ASYNC_GRACE = 1.0
"""Seconds a session's unfinished async handlers get after the session ends, before they are cancelled."""

_CONTAINED: tuple[type[BaseException], ...] = (Exception, asyncio.CancelledError)


def contain(fn: Callable[..., Any], *args: Any, what: str = "a callback",
            tasks: set[asyncio.Future[Any]] | None = None) -> Any:
    """Call an application callback; nothing it does can break the caller.

    An ``Exception`` (or ``CancelledError``) it raises is logged and ``None``
    returned. If it returns an awaitable, that runs as a task on the running
    loop (added to ``tasks`` while it runs) or, with no loop running, to
    completion right here; its failure is logged too. ``KeyboardInterrupt``
    and ``SystemExit`` propagate.
    """
    try:
        result = fn(*args)
    except _CONTAINED:
        log.exception("%s raised; contained", what)
        return None
    if inspect.isawaitable(result):
        run_awaitable(result, what=what, tasks=tasks)
        return None
    return result


def run_awaitable(awaitable: Awaitable[Any], *, what: str, tasks: set[asyncio.Future[Any]] | None = None) -> None:
    """Run ``awaitable`` as a task on the running loop, or to completion now when no loop runs."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        try:
            asyncio.run(_guarded_await(awaitable, what))
        except _CONTAINED:
            log.exception("%s raised; contained", what)
        return
    task = loop.create_task(_guarded_await(awaitable, what))
    if tasks is not None:
        tasks.add(task)
        task.add_done_callback(tasks.discard)


def _cancel_later(loop: asyncio.AbstractEventLoop, after: float, task: asyncio.Future[Any]) -> None:
    loop.call_later(after, task.cancel)


async def _guarded_await(awaitable: Awaitable[Any], what: str) -> None:
    try:
        await awaitable
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("%s raised; contained", what)


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


_POSITIONAL: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
"""A function's positional parameters (``-1``: ``*args``), by function: a session's objects register the
same methods' handlers on every connection, and ``inspect.signature`` is dear (about 0.1 ms a call)."""


def _positional(fn: Any) -> int:
    """How many positional arguments ``fn`` takes (``-1``: any number)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return -1
    positional = 0
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return -1
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional


def _wants_payload(handler: Handler) -> bool:
    """Whether ``handler`` takes a second positional argument (decided once, at registration)."""
    bound = 0
    fn: Any = handler
    if inspect.ismethod(handler) and inspect.isfunction(handler.__func__):
        fn, bound = handler.__func__, 1  # the method's own function, its first parameter taken by __self__
    elif not inspect.isfunction(handler):
        arity = _positional(handler)  # a partial, a callable object, a builtin: not cached
        return arity < 0 or arity >= 2
    known = _POSITIONAL.get(fn)
    count = _POSITIONAL[fn] = _positional(fn) if known is None else known
    return count < 0 or count - bound >= 2


class _WatchedSubject(ContainedSubject[Event]):
    """A registry's subject that tells the registry when an observer comes or goes (who listens changed)."""

    def __init__(self, what: str, changed: Callable[[], None]) -> None:
        super().__init__(what)
        self._changed = changed

    def _subscribe_core(
        self, observer: abc.ObserverBase[Event], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        inner = super()._subscribe_core(observer, scheduler)
        self._changed()

        def leave() -> None:
            inner.dispose()
            self._changed()

        return Disposable(leave)


class _Listening(dict[str, bool]):
    """Whether raising each declared name would reach anyone; an undeclared name, whether anything observes."""

    __slots__ = ("_subject",)

    def __init__(self, subject: Subject[Event]) -> None:
        super().__init__()
        self._subject = subject

    def __missing__(self, name: str) -> bool:
        return bool(self._subject.observers)


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
        self._subject: Subject[Event] = _WatchedSubject("an event registry", self._relisten)
        self._listening = _Listening(self._subject)
        self.listens: Callable[[str], bool] = self._listening.__getitem__
        """:meth:`listened` as a table lookup, kept current as handlers and observers come and go: asked on
        nearly every decision, it is a builtin's lookup instead of a Python call (bind it once)."""
        self._clock: Callable[[], float] = lambda: 0.0
        self._lane = _AsyncLane()
        self._lanes: weakref.WeakSet[_AsyncLane] = weakref.WeakSet()
        self._lock = threading.Lock()
        for name in names:
            self.register(name)

    @property
    def names(self) -> frozenset[str]:
        """The declared event names."""
        return frozenset(self._handlers)

    def register(self, name: str) -> None:
        """Declare an event name (declaring one twice is harmless)."""
        with self._lock:
            self._handlers.setdefault(name, [])
            self._relisten_locked()

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
                self._relisten_locked()
            return h

        return add(handler) if handler is not None else add

    def off(self, name: str, handler: Handler) -> bool:
        """Remove ``handler`` from ``name``; ``False`` if it was not there."""
        entries = self._check(name)
        with self._lock:
            for i, entry in enumerate(entries):
                if entry.handler is handler:
                    del entries[i]
                    self._relisten_locked()
                    return True
        return False

    def _relisten(self) -> None:
        """Bring :attr:`listens`' table up to date (an observer came or went)."""
        with self._lock:
            self._relisten_locked()

    def _relisten_locked(self) -> None:
        # Each name updated in place, never cleared first: a lookup on another thread sees the old answer
        # or the new one, nothing in between.
        observed = bool(self._subject.observers)
        listening = self._listening
        for name, entries in self._handlers.items():
            listening[name] = observed or bool(entries)

    def listened(self, name: str) -> bool:
        """Whether raising ``name`` would reach anyone (a handler, or an observer of the events)."""
        return self._listening[name]

    def has_handlers(self, name: str) -> bool:
        """Whether anything listens to ``name`` (handlers or observers)."""
        return self._listening[name]

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
        """Raise ``name``: run its handlers and tell observers. Never raises.

        Stages raise through their session's :class:`SessionEvents`; this is
        for events of the object itself (stamped with the clock of
        :meth:`set_clock`).
        """
        self._emit(name, payload, self._clock, self._lane)

    def session(self, clock: Callable[[], float]) -> SessionEvents:
        """The events of one running session: stamped with its clock, its async handlers its own."""
        lane = _AsyncLane()
        with self._lock:
            self._lanes.add(lane)
        return SessionEvents(self, clock, lane)

    def _emit(self, name: str, payload: Any, clock: Callable[[], float], lane: _AsyncLane) -> None:
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
        event = Event(name, self._source, payload, clock())
        if self._subject.observers:
            try:
                self._subject.on_next(event)
            except _CONTAINED:
                log.exception("an observer of %s.%s raised; contained", type(self._source).__name__, name)
        for entry in list(entries):
            self._call(entry, event, lane)

    def _call(self, entry: _Entry, event: Event, lane: _AsyncLane) -> None:
        args: tuple[Any, ...]
        if entry.wants_payload:
            args = (event.source, None if event.payload is NO_PAYLOAD else event.payload)
        else:
            args = (event.source,)
        try:
            result = entry.handler(*args)
        except _CONTAINED:
            log.exception("handler %r for %s raised; contained", entry.handler, event.name)
            return
        if inspect.isawaitable(result):
            lane.run(result, f"async handler {entry.handler!r} for {event.name}")

    async def drain(self) -> None:
        """Wait until every async handler raised so far has finished (for tests and shutdown)."""
        await self._lane.drain()
        with self._lock:
            lanes = list(self._lanes)
        for lane in lanes:
            await lane.drain()

    def cancel_pending(self) -> None:
        """Cancel async handlers still running, of the object and of every session (on disposal)."""
        self._lane.cancel()
        with self._lock:
            lanes = list(self._lanes)
        for lane in lanes:
            lane.cancel()

    def subscription(self, name: str, handler: Handler) -> Disposable:
        """Add ``handler`` and return a disposable that removes it."""
        self.on(name, handler)

        def remove() -> None:
            self.off(name, handler)

        return Disposable(remove)


class SessionEvents:
    """The events one session raises: its clock on every event, its own async handlers.

    Made by :meth:`EventRegistry.session`; a stage's shell raises through it.
    :meth:`close` gives async handlers still running ``grace`` seconds
    (:data:`ASYNC_GRACE`), then cancels them, so none outlives its session.
    """

    __slots__ = ("_clock", "_lane", "registry")

    def __init__(self, registry: EventRegistry, clock: Callable[[], float], lane: _AsyncLane) -> None:
        self.registry = registry
        self._clock = clock
        self._lane = lane

    def emit(self, name: str, payload: Any = NO_PAYLOAD) -> None:
        """Raise ``name`` (see :meth:`EventRegistry.emit`). Never raises."""
        self.registry._emit(name, payload, self._clock, self._lane)

    def listened(self, name: str) -> bool:
        """Whether raising ``name`` would reach anyone."""
        return self.registry.listened(name)

    @property
    def tasks(self) -> frozenset[asyncio.Future[Any]]:
        """Async handlers of this session still running."""
        return frozenset(self._lane.tasks)

    def close(self, grace: float | None = None) -> None:
        """The session ended: async handlers still running are cancelled after ``grace`` s (:data:`ASYNC_GRACE`)."""
        self._lane.cancel(after=ASYNC_GRACE if grace is None else grace)


class _AsyncLane:
    """Async handlers run one at a time, in the order raised, per loop; tracked so they can be cancelled."""

    __slots__ = ("__weakref__", "tail", "tasks")

    def __init__(self) -> None:
        self.tail: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = {}
        self.tasks: set[asyncio.Future[Any]] = set()

    def run(self, awaitable: Awaitable[Any], what: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            run_awaitable(awaitable, what=what)  # no loop to hand it to: run it to completion here
            return
        previous = self.tail.get(loop)

        async def serially() -> None:
            if previous is not None and not previous.done():
                with contextlib.suppress(BaseException):
                    await asyncio.shield(previous)
            await _guarded_await(awaitable, what)

        task = loop.create_task(serially())
        self.tail[loop] = task
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        loop = asyncio.get_running_loop()
        tail = self.tail.get(loop)
        while tail is not None and not tail.done():
            await asyncio.wait([tail])
            tail = self.tail.get(loop)

    def cancel(self, after: float = 0.0) -> None:
        for task in list(self.tasks):
            if task.done():
                continue
            loop = task.get_loop()
            if loop.is_closed():
                continue
            if after > 0:
                loop.call_soon_threadsafe(_cancel_later, loop, after, task)
            else:
                loop.call_soon_threadsafe(task.cancel)
        self.tail.clear()
