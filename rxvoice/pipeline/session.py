"""A session: one conversation's scheduler, through which every input is serialized.

A voice conversation has many producers: the microphone callback, the STT
client's thread, timers, a model answering on a worker thread, frames that a
later stage sends back upstream. The stages of a pipeline must see them one at
a time. :class:`Session` wraps the scheduler a pipeline runs on and adds a
gate: :meth:`Session.run` executes a call at once when nothing else of this
session is running, and otherwise queues it for whichever thread is inside to
run next. Nobody blocks, nothing overlaps, nothing is lost, and a call made
while another is running (from the same thread or another) waits for it to
finish. Timers scheduled through the session enter through the same gate, so
a firing timer never interleaves with a frame.

This gate is the only re-entrancy guard of a pipeline: frames travelling down
are handed from stage to stage as plain calls, and every edge that can loop
back (upstream frames, timers, results from workers, a stage feeding a frame
back into itself) enters through the gate.

What escapes a call: an ``Exception`` is logged and the session goes on; an
interpreter exit (``KeyboardInterrupt``, ``SystemExit``) releases the gate
first and then propagates, so the session is never left wedged. Callbacks of
the application (event handlers, context subscribers, ``on_idle``) are
contained where rxvoice calls them (:func:`rxvoice.events.contain`), a
``CancelledError`` they raise included.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Container
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from reactivex import abc, typing
from reactivex.scheduler import TimeoutScheduler, VirtualTimeScheduler
from reactivex.scheduler.scheduler import Scheduler

from .loop_clock import LoopScheduler
from .virtual_time import virtual_queue

__all__ = ["Session", "default_scheduler", "session_of"]

log = logging.getLogger("rxvoice.session")

_T = TypeVar("_T")


def default_scheduler() -> abc.SchedulerBase:
    """The scheduler used when none was given: the running asyncio loop's, else timer threads."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return TimeoutScheduler.singleton()
    return LoopScheduler(loop)


class _GatedAction(abc.DisposableBase):
    """A scheduled action that enters the session's gate when it fires, unless cancelled (dispose it to cancel)."""

    __slots__ = ("_action", "_cancelled", "_session", "inner")

    def __init__(self, session: Session, action: Any) -> None:
        self._session = session
        self._action: Any = action
        self._cancelled = False
        self.inner: abc.DisposableBase | None = None

    def fire(self, _scheduler: abc.SchedulerBase, state: Any = None) -> None:
        if not self._cancelled:
            self._session.run(self._run, state)

    def _run(self, state: Any) -> None:
        # Fired once: let go of the action and the scheduler's item, so no cycle (this <-> the item's
        # callback) outlives the timer and the garbage collector has nothing of it to trace.
        action, self._action, self.inner = self._action, None, None
        if action is not None and not self._cancelled and not self._session.disposed:
            self._call(action, state)

    def _call(self, action: Any, state: Any) -> None:
        action(self._session, state)  # a scheduler action: (scheduler, state)

    def dispose(self) -> None:
        self._cancelled = True
        inner, self.inner, self._action = self.inner, None, None
        if inner is not None:
            inner.dispose()


class _GatedCall(_GatedAction):
    """A plain ``fn()`` the session runs later (:meth:`Session.call_later`): no scheduler action to adapt it."""

    __slots__ = ()

    def _call(self, action: Any, state: Any) -> None:
        action()  # a plain call: fn()


class Session(Scheduler):
    """A scheduler for one conversation that serializes everything entering it.

    Args:
        scheduler: The scheduler that keeps time (a ``TestScheduler`` in
            tests, an asyncio scheduler in apps). Default: the running
            asyncio loop's, else timer threads.
    """

    def __init__(self, scheduler: abc.SchedulerBase | None = None) -> None:
        super().__init__()
        if isinstance(scheduler, Session):
            scheduler = scheduler.scheduler
        self.scheduler: abc.SchedulerBase = scheduler or default_scheduler()
        self._queue: deque[tuple[Callable[[Any], Any], Any]] = deque()
        self._free: dict[int, bool] = {0: True}
        """The gate: its one token (key ``0``) is in while nobody is inside. ``pop(0, False)`` takes it, one
        atomic operation of the dict (``True``: in; ``False``: someone is inside), ``[0] = True`` puts it back.
        Every frame takes the gate, and a lock's ``acquire(False)`` parses its arguments on every call, which
        made it about twice the cost of the token taken and given back."""
        self.disposed = False
        self._time: Callable[[], float]
        self._queue_call = virtual_queue(self.scheduler)
        """On reactivex's own virtual clock: how :meth:`call_later` queues a call there directly."""
        self.later: Callable[[float, Callable[[], Any]], abc.DisposableBase] = self.call_later
        """:meth:`call_later` at its fastest (bind it once): on a virtual clock, the queueing itself."""
        if self._queue_call is not None and type(self).call_later is Session.call_later:
            self.later = partial(self._queue_call, self)
        if isinstance(self.scheduler, VirtualTimeScheduler):
            self._time = self._virtual_time
        elif isinstance(self.scheduler, LoopScheduler):
            self._time = self.scheduler.seconds
        else:
            self._time = self._wall_time

    # -- time ----------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return self.scheduler.now

    def time(self) -> float:
        """The scheduler's clock in seconds (what rxvoice stamps frames and events with)."""
        return self._time()

    def _virtual_time(self) -> float:
        clock = self.scheduler._clock  # type: ignore[attr-defined]
        t = type(clock)
        if t is float:
            return clock  # type: ignore[no-any-return]
        if t is int:
            return float(clock)
        return float(self.scheduler.to_seconds(clock))

    @property
    def clock(self) -> Callable[[], float]:
        """The fastest way to read :meth:`time` (bind it once, call it per frame)."""
        return self._time

    def _wall_time(self) -> float:
        return self.scheduler.now.timestamp()

    # -- the gate ------------------------------------------------------------

    def run(self, fn: Callable[[_T], Any], arg: _T) -> None:
        """Call ``fn(arg)`` now, or after the call already running in this session.

        After :meth:`dispose` the call is dropped.
        """
        if self.disposed:
            return
        free = self._free
        queue = self._queue
        if not queue and free.pop(0, False):
            try:
                fn(arg)
            except Exception:
                log.exception("a call inside the session raised; the session goes on")
            finally:
                if queue:
                    self._drain()
                free[0] = True
        else:
            queue.append((fn, arg))
        # A call queued while the owner was releasing must not be stranded.
        while queue and free.pop(0, False):
            try:
                self._drain()
            finally:
                free[0] = True

    def _drain(self) -> None:
        """Run what was queued while a call was inside (the caller holds the gate)."""
        queue = self._queue
        while not self.disposed:
            try:
                f, a = queue.popleft()
            except IndexError:  # empty (or emptied by dispose() on another thread)
                return
            try:
                f(a)
            except Exception:
                log.exception("a call inside the session raised; the session goes on")

    def door(
        self, receive: Callable[[Any], Any], reject: Callable[[Any], Any], kind: type,
        passes: tuple[Container[type], Any] | None = None,
    ) -> Callable[[Any], None]:
        """:meth:`run` for one receiver, with the check at the door: the way into a fused chain.

        Returns a callable that hands an item of type ``kind`` to
        ``receive`` inside the gate (now, or after the call already
        running), and anything else to ``reject`` (through the gate too). It
        is :meth:`run` specialized once, so an input frame pays one call
        here and none for the check.

        ``passes``: ``(handled, link)`` when ``receive`` of an item whose type
        is not in ``handled`` is exactly ``link.emit_down(item)`` (the
        receiver only passes it on): such an item goes to ``link.emit_down``
        directly, one call less.
        """
        handled: Container[type] = passes[0] if passes is not None else ()
        link: Any = passes[1] if passes is not None else None  # used only with ``passes``
        passing = passes is not None
        free = self._free
        queue = self._queue
        take = free.pop
        drain = self._drain
        run = self.run

        def enter(item: Any) -> None:
            if self.disposed:
                return
            if not isinstance(item, kind):
                run(reject, item)
                return
            if not queue and take(0, False):
                try:
                    if passing and type(item) not in handled:
                        emit = link.emit_down  # read, then called: not looked up as a method (faster)
                        emit(item)
                    else:
                        receive(item)
                except Exception:
                    log.exception("a call inside the session raised; the session goes on")
                finally:
                    if queue:
                        drain()
                    free[0] = True
            else:
                queue.append((receive, item))
            while queue and take(0, False):  # a call queued while the owner was releasing
                try:
                    drain()
                finally:
                    free[0] = True

        return enter

    @property
    def busy(self) -> bool:
        """Whether a call is running inside the session right now (on any thread)."""
        return 0 not in self._free

    def dispose(self) -> None:
        """Stop running anything: queued calls and timers that fire later are dropped."""
        self.disposed = True
        self._queue.clear()

    # -- scheduling ----------------------------------------------------------

    # Every scheduled action is wrapped once: the wrapper enters the gate when it fires and is itself the
    # disposable that cancels it.

    def schedule(self, action: typing.ScheduledAction[Any], state: Any = None) -> abc.DisposableBase:
        gated = _GatedAction(self, action)
        gated.inner = self.scheduler.schedule(gated.fire, state)
        return gated

    def schedule_relative(
        self, duetime: typing.RelativeTime, action: typing.ScheduledAction[Any], state: Any = None
    ) -> abc.DisposableBase:
        gated = _GatedAction(self, action)
        gated.inner = self.scheduler.schedule_relative(duetime, gated.fire, state)
        return gated

    def schedule_absolute(
        self, duetime: typing.AbsoluteTime, action: typing.ScheduledAction[Any], state: Any = None
    ) -> abc.DisposableBase:
        gated = _GatedAction(self, action)
        gated.inner = self.scheduler.schedule_absolute(duetime, gated.fire, state)
        return gated

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        """Run ``fn()`` inside the session after ``seconds`` of scheduler time."""
        if self._queue_call is not None:  # a virtual clock: the call queued as the scheduler would, fewer layers
            return self._queue_call(self, seconds, fn)
        gated = _GatedCall(self, fn)
        gated.inner = self.scheduler.schedule_relative(max(0.0, seconds), gated.fire)
        return gated


def session_of(scheduler: abc.SchedulerBase | None) -> tuple[Session, bool]:
    """The session for a subscription, and whether it was already there (inputs already gated)."""
    if isinstance(scheduler, Session):
        return scheduler, True
    return Session(scheduler), False
