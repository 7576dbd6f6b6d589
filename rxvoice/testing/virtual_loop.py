"""asyncio in virtual time: a loop whose clock jumps to its next timer instead of waiting for it.

Code that runs on asyncio (``arun``, the model stage, async event handlers)
is timed by the loop. Under :class:`VirtualTimeLoop` a 0.6 s silence timer or
an ``await asyncio.sleep(30)`` takes no wall time and fires at exactly the
same loop time on every run, so such tests need no real sleeps and no
tolerances. Whenever nothing is ready the loop first polls its file
descriptors (sockets, and the wake-up pipe other threads write to through
``call_soon_threadsafe``) without blocking; only when none is ready does it
jump its clock to the next timer. With no timer at all it blocks for real,
as a loop waiting on a socket or a thread must.

Callbacks due at the same instant run in the order they were scheduled. On
a real loop two deadlines computed a moment apart differ; on a virtual clock
that stands still they are often equal, and asyncio's timer heap does not
keep equal deadlines in order (a streamed reply's end would overtake its last
token).

Example:
    >>> from rxvoice.testing import run_virtual
    >>> async def nap() -> float:
    ...     loop = asyncio.get_running_loop()
    ...     start = loop.time()
    ...     await asyncio.sleep(3600)
    ...     return loop.time() - start
    >>> run_virtual(nap())  # returns at once
    3600.0
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import selectors
from collections.abc import Callable, Coroutine, Mapping
from contextvars import Context
from typing import Any, TypeVar

__all__ = ["VirtualTimeLoop", "run_virtual"]

_T = TypeVar("_T")


class _JumpingSelector(selectors.BaseSelector):
    """A real selector that, instead of sleeping until a timer is due, moves the loop's clock there."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._real = selectors.DefaultSelector()
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:  # no timer: only a socket or another thread can wake the loop
            return self._real.select(None)
        self._loop.advance(timeout)
        return []

    def close(self) -> None:
        self._real.close()

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._real.get_map()


class _OrderedTimerHandle(asyncio.TimerHandle):
    """A timer that, due at the same instant as another, runs after the ones scheduled before it."""

    __slots__ = ("_order",)

    def __init__(
        self, order: int, when: float, callback: Callable[..., object], args: tuple[Any, ...],
        loop: asyncio.AbstractEventLoop, context: Context | None,
    ) -> None:
        super().__init__(when, callback, args, loop, context)
        self._order = order

    def __lt__(self, other: asyncio.TimerHandle) -> bool:
        if isinstance(other, _OrderedTimerHandle) and self.when() == other.when():
            return self._order < other._order
        return self.when() < other.when()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop on a virtual clock that starts at ``start`` seconds."""

    def __init__(self, start: float = 0.0) -> None:
        self._virtual_now = float(start)
        self._timer_order = itertools.count()
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self._virtual_now

    def call_at(  # type: ignore[override]
        self, when: float, callback: Callable[..., object], *args: Any, context: Context | None = None
    ) -> asyncio.TimerHandle:
        """As asyncio's own, with the timer ordered after those already due at the same instant."""
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()  # type: ignore[attr-defined]
        if self.get_debug():
            self._check_thread()  # type: ignore[attr-defined]
            self._check_callback(callback, "call_at")  # type: ignore[attr-defined]
        timer = _OrderedTimerHandle(next(self._timer_order), when, callback, args, self, context)
        if timer._source_traceback:  # type: ignore[attr-defined]
            del timer._source_traceback[-1]  # type: ignore[attr-defined]
        heapq.heappush(self._scheduled, timer)  # type: ignore[attr-defined]
        timer._scheduled = True  # type: ignore[attr-defined]
        return timer

    def advance(self, seconds: float) -> None:
        """Move the clock forward (the loop does this itself whenever it would wait for a timer)."""
        if seconds > 0:
            self._virtual_now += seconds


def run_virtual(main: Coroutine[Any, Any, _T], *, start: float = 0.0) -> _T:
    """Like :func:`asyncio.run`, on a :class:`VirtualTimeLoop`."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(start)) as runner:
        return runner.run(main)
