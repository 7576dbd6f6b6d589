"""Effects the aggregators' pure cores ask for, and the shell that carries them out.

A core's step returns a new state and a list of these. The shell (one per
session) executes them in order: frames go to neighbours, writes go to the
shared context, events are raised, timers are armed on the session's
scheduler, heavy calls go to a worker and come back serialized.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from reactivex import abc

from ..context import LLMContext
from ..errors import RxVoiceError
from ..events import NO_PAYLOAD, EventRegistry
from ..frames import DOWN, UP, Direction, Frame, LLMContextFrame
from ..pipeline.processor import Port

if TYPE_CHECKING:
    from ..pipeline.processor import Processor

__all__ = [
    "Broadcast",
    "Call",
    "Callback",
    "Effect",
    "Emit",
    "EmitContext",
    "Raise",
    "Requeue",
    "ShellSession",
    "StopTimers",
    "Timer",
    "Write",
]

log = logging.getLogger("rxvoice.aggregators")


class Emit(NamedTuple):
    """Send ``frame`` to the neighbour in ``direction``."""

    frame: Frame
    direction: Direction = DOWN


class Broadcast(NamedTuple):
    """Send ``frame`` downstream, then upstream."""

    frame: Frame


class EmitContext(NamedTuple):
    """Send the conversation as it stands now (an ``LLMContextFrame``) in ``direction``."""

    direction: Direction = DOWN


class Write(NamedTuple):
    """Change the shared conversation: ``op(context)``. A write that fails cancels the step's remaining effects."""

    op: Callable[[LLMContext], Any]


class Raise(NamedTuple):
    """Raise event ``name``."""

    name: str
    payload: Any = NO_PAYLOAD


class Timer(NamedTuple):
    """Arm (``delay`` in seconds) or disarm (``delay`` ``None``) timer ``(owner, key)``."""

    owner: int
    key: str
    delay: float | None


class StopTimers(NamedTuple):
    """Cancel every timer of the session (it is ending)."""


class Call(NamedTuple):
    """Call ``fn(resource_of(owner))``; off the session when ``offload``; result back to ``key``."""

    owner: int
    key: str | None
    fn: Callable[[Any], Any]
    offload: bool


class Callback(NamedTuple):
    """Call an application callback with the aggregator (its failure is contained)."""

    fn: Callable[[Any], Any]


class Requeue(NamedTuple):
    """Feed ``frame`` back into this aggregator, after the current one."""

    frame: Frame
    direction: Direction = DOWN


Effect = Emit | Broadcast | EmitContext | Write | Raise | Timer | StopTimers | Call | Callback | Requeue

_OFFLOAD_POOL: concurrent.futures.ThreadPoolExecutor | None = None


class _Timer:
    """One named timer: its deadline, and the scheduled firing that will check it."""

    __slots__ = ("deadline", "handle", "handle_due")

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.handle: abc.DisposableBase | None = None
        self.handle_due = 0.0


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _OFFLOAD_POOL
    if _OFFLOAD_POOL is None:
        _OFFLOAD_POOL = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rxvoice-infer")
    return _OFFLOAD_POOL


class ShellSession:
    """Executes a core's effects for one session of one aggregator.

    Subclasses provide ``on_timer(owner, key)`` and ``on_result(owner, key, value)``.
    """

    def __init__(self, processor: Processor, port: Port, context: LLMContext, events: EventRegistry) -> None:
        self.processor = processor
        self.port = port
        self.context = context
        self.events = events
        self._push = port.push
        self._link = port.link
        self._timers: dict[tuple[int, str], _Timer] = {}
        self.now = 0.0
        self.clock = port.session.clock
        self.resources: Sequence[Any] = ()
        self.offload: Callable[[Callable[[], Any]], concurrent.futures.Future[Any]] | None = None
        self.closed = False
        self._futures: set[concurrent.futures.Future[Any]] = set()
        events.set_clock(port.time)
        self.handlers: dict[type, Callable[[Any], bool | None]] = self._default_handlers()

    def run(self, effects: Sequence[Any]) -> None:
        """Carry out effects in order; a write the context refuses cancels the rest of the step.

        A session closed by one of the effects (an event handler or a subscriber disposing
        the pipeline) carries out nothing more: no event, write or call after disposal.
        """
        handlers = self.handlers
        for e in effects:
            if self.closed or handlers[type(e)](e) is False:
                return

    def _default_handlers(self) -> dict[type, Callable[[Any], bool | None]]:
        return {
            Emit: self._emit, Raise: self._raise, EmitContext: self._emit_context, Broadcast: self._broadcast,
            Write: self._write, Timer: self._set_timer, StopTimers: self._stop_timers, Call: self._call,
            Callback: self._callback, Requeue: self._requeue,
        }

    def _emit(self, e: Emit) -> None:
        self._push(e.frame, e.direction)

    def _raise(self, e: Raise) -> None:
        self.events.emit(e.name, e.payload)

    def _emit_context(self, e: EmitContext) -> None:
        self._push(LLMContextFrame(self.context), e.direction)

    def _broadcast(self, e: Broadcast) -> None:
        self._push(e.frame, DOWN)
        self._push(e.frame, UP)

    def _write(self, e: Write) -> bool:
        try:
            e.op(self.context)
        except RxVoiceError as err:
            log.warning("%s: %s; the rest of this step is skipped", self.processor.name, err)
            self.port.report_error(err)
            return False
        return True

    def _set_timer(self, e: Timer) -> None:
        self._timer(e.owner, e.key, e.delay)

    def _stop_timers(self, _e: StopTimers) -> None:
        self.stop_timers()

    def _callback(self, e: Callback) -> None:
        try:
            result = e.fn(self.processor)
        except Exception:
            log.exception("%s: a callback raised; contained", self.processor.name)
            return
        if hasattr(result, "__await__"):
            self._await(result)

    def _requeue(self, e: Requeue) -> None:
        self.port.requeue(e.frame, e.direction)

    def _await(self, awaitable: Any) -> None:
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            try:
                asyncio.run(_wrap(awaitable))
            except Exception:
                log.exception("%s: an async callback raised; contained", self.processor.name)
            return
        task = loop.create_task(_wrap(awaitable))
        task.add_done_callback(_log_task_error)

    # -- timers ----------------------------------------------------------------

    def _timer(self, owner: int, key: str, delay: float | None) -> None:
        """Arm or disarm a timer lazily: re-arming later only moves a deadline.

        Strategies re-arm timers on nearly every frame (a silence timeout
        restarts with each transcript). Scheduling each time would cost a
        scheduler call per frame; instead the scheduled firing checks the
        deadline and, if it moved, sleeps again for the rest.
        """
        slot = (owner, key)
        timer = self._timers.get(slot)
        if delay is None:
            if timer is not None:
                timer.deadline = None
            return
        if self.closed:
            return
        due = self.now + delay
        if timer is None:
            timer = _Timer()
            self._timers[slot] = timer
        timer.deadline = due
        if timer.handle is not None and timer.handle_due <= due + 1e-9:
            return  # the pending firing comes first and will sleep again for the rest
        if timer.handle is not None:
            timer.handle.dispose()
        self._schedule(slot, timer, delay, due)

    def _schedule(self, slot: tuple[int, str], timer: _Timer, delay: float, due: float) -> None:
        def fire() -> None:
            timer.handle = None
            deadline = timer.deadline
            if deadline is None or self.closed:
                return
            now = self.port.time()
            if now < deadline - 1e-9:
                self._schedule(slot, timer, deadline - now, deadline)
                return
            timer.deadline = None
            self.now = now
            self.on_timer(*slot)

        timer.handle_due = due
        timer.handle = self.port.call_later(delay, fire)

    def stop_timers(self) -> None:
        timers, self._timers = self._timers, {}
        for timer in timers.values():
            timer.deadline = None
            if timer.handle is not None:
                timer.handle.dispose()
                timer.handle = None

    def on_timer(self, owner: int, key: str) -> None:
        raise NotImplementedError

    # -- resource calls ----------------------------------------------------------

    def _call(self, e: Call) -> None:
        resource = self.resources[e.owner] if 0 <= e.owner < len(self.resources) else None
        if not e.offload:
            try:
                value = e.fn(resource)
            except Exception as exc:  # handed back so the strategy can decide (and report it)
                if e.key is None:
                    log.exception("%s: a resource call failed", self.processor.name)
                    return
                log.debug("%s: a resource call failed", self.processor.name, exc_info=True)
                value = exc
            if e.key is not None:
                self.on_result(e.owner, e.key, value)
            return
        submit = self.offload or (lambda job: _pool().submit(job))
        future = submit(lambda: e.fn(resource))
        self._futures.add(future)
        session = self.port.session

        def done(f: concurrent.futures.Future[Any]) -> None:
            self._futures.discard(f)
            if f.cancelled() or self.closed:
                return
            exc = f.exception()
            value: Any = exc if exc is not None else f.result()
            if e.key is not None:
                session.run(self._deliver, (e.owner, e.key, value))

        future.add_done_callback(done)

    def _deliver(self, item: tuple[int, str, Any]) -> None:
        if not self.closed:
            self.port.inject_call(lambda: self.on_result(*item))

    def on_result(self, owner: int, key: str, value: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.closed = True
        self.stop_timers()
        for f in list(self._futures):
            f.cancel()
        self._futures.clear()


async def _wrap(awaitable: Any) -> Any:
    return await awaitable


def _log_task_error(task: Any) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("an async callback raised; contained", exc_info=task.exception())
