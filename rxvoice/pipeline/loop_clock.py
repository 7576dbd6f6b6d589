"""The asyncio scheduler rxvoice uses: its clock is the loop's own.

reactivex's asyncio schedulers arm timers with ``loop.call_later`` (the
loop's monotonic clock) but report ``now`` from the wall clock. A stage that
re-checks a deadline when its timer fires then compares two clocks, and
under a loop whose time is virtual (``rxvoice.testing.VirtualTimeLoop``) the
wall clock never catches up. Reading both from the loop keeps them one.

A timer armed on the loop's own thread goes straight to ``loop.call_later``:
reactivex's thread-safe path first hops through ``call_soon_threadsafe`` (a
self-pipe write per timer) and keeps the handle in a list its own callback
closes over, a reference cycle per timer that only the garbage collector
frees. With many sessions on one loop those collections were most of the
cost per frame.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from reactivex import abc, typing
from reactivex.scheduler.eventloop import AsyncIOThreadSafeScheduler

__all__ = ["LoopScheduler"]


class LoopScheduler(AsyncIOThreadSafeScheduler):
    """A thread-safe asyncio scheduler whose ``now`` follows ``loop.time()`` (wall-clock based, loop-paced)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self._offset = time.time() - loop.time()

    def seconds(self) -> float:
        """``now`` as seconds since the epoch, without building a datetime."""
        return self._offset + self._loop.time()

    @property
    def now(self) -> datetime:
        return datetime.fromtimestamp(self._offset + self._loop.time(), tz=UTC)

    def schedule_relative(
        self, duetime: typing.RelativeTime, action: typing.ScheduledAction[Any], state: Any = None
    ) -> abc.DisposableBase:
        seconds = self.to_seconds(duetime)
        if seconds > 0 and self._on_own_loop():
            timer = _LoopTimer(self, action, state)
            timer.handle = self._loop.call_later(seconds, timer.run)
            return timer
        return super().schedule_relative(duetime, action, state)

    def _on_own_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False


class _LoopTimer(abc.DisposableBase):
    """One timer on the loop's own thread; it lets go of everything once it fired or was cancelled."""

    __slots__ = ("_action", "_scheduler", "_state", "handle", "inner")

    def __init__(self, scheduler: LoopScheduler, action: typing.ScheduledAction[Any], state: Any) -> None:
        self._scheduler = scheduler
        self._action: typing.ScheduledAction[Any] | None = action
        self._state = state
        self.handle: asyncio.TimerHandle | None = None
        self.inner: abc.DisposableBase | None = None

    def run(self) -> None:
        action, state = self._action, self._state
        self._action = self._state = self.handle = None
        if action is not None:
            self.inner = self._scheduler.invoke_action(action, state=state)

    def dispose(self) -> None:
        handle, inner = self.handle, self.inner
        self._action = self._state = self.handle = self.inner = None
        if handle is not None:
            handle.cancel()
        if inner is not None:
            inner.dispose()
