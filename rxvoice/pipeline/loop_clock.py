"""The asyncio scheduler rxvoice uses: its clock is the loop's own.

reactivex's asyncio schedulers arm timers with ``loop.call_later`` (the
loop's monotonic clock) but report ``now`` from the wall clock. A stage that
re-checks a deadline when its timer fires then compares two clocks, and
under a loop whose time is virtual (``rxvoice.testing.VirtualTimeLoop``) the
wall clock never catches up. Reading both from the loop keeps them one.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

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
