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
import selectors
from collections.abc import Coroutine, Mapping
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


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop on a virtual clock that starts at ``start`` seconds."""

    def __init__(self, start: float = 0.0) -> None:
        self._virtual_now = float(start)
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move the clock forward (the loop does this itself whenever it would wait for a timer)."""
        if seconds > 0:
            self._virtual_now += seconds


def run_virtual(main: Coroutine[Any, Any, _T], *, start: float = 0.0) -> _T:
    """Like :func:`asyncio.run`, on a :class:`VirtualTimeLoop`."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(start)) as runner:
        return runner.run(main)
