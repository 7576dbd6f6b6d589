"""Coroutines on an asyncio loop, started and cancelled from whichever thread a session runs on.

A session can be entered from any thread (a microphone callback, an STT
client's thread), while HTTP work must run on the event loop. A :class:`Job`
hides the difference: on the loop's own thread it creates the task at once,
elsewhere it hands creation and cancellation to the loop thread-safely.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from reactivex import abc
from reactivex.scheduler.eventloop import AsyncIOScheduler

__all__ = ["Job", "running_loop", "scheduler_loop"]


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running on this thread, or ``None``."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def scheduler_loop(scheduler: abc.SchedulerBase) -> asyncio.AbstractEventLoop | None:
    """The loop behind an asyncio scheduler (reactivex keeps it in ``_loop``), else ``None``."""
    if isinstance(scheduler, AsyncIOScheduler):
        loop = getattr(scheduler, "_loop", None)
        if isinstance(loop, asyncio.AbstractEventLoop):
            return loop
    return None


class Job:
    """A coroutine on the loop, started and cancelled from any thread."""

    __slots__ = ("_cancelled", "_on_done", "loop", "task")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        coro: Coroutine[Any, Any, None],
        on_done: Callable[[Job], None] | None = None,
    ) -> None:
        self.loop = loop
        self.task: asyncio.Task[None] | None = None
        self._cancelled = False
        self._on_done = on_done
        if running_loop() is loop:
            self._start(coro)
        else:
            loop.call_soon_threadsafe(self._start, coro)

    def _start(self, coro: Coroutine[Any, Any, None]) -> None:
        if self._cancelled:
            coro.close()
            if self._on_done is not None:
                self._on_done(self)
            return
        task = self.task = self.loop.create_task(coro)
        if self._on_done is not None:
            on_done = self._on_done
            task.add_done_callback(lambda _t: on_done(self))

    def cancel(self) -> None:
        """Cancel the task (at its next ``await``; it closes what it holds as it unwinds)."""
        self._cancelled = True
        task = self.task
        if task is None or task.done():
            return
        if running_loop() is self.loop:
            task.cancel()
        else:
            with contextlib.suppress(RuntimeError):  # a closed loop runs nothing any more
                self.loop.call_soon_threadsafe(task.cancel)
