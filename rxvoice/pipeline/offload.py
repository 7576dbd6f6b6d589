"""Where heavy work runs (an end-of-turn model, a summary, a recognizer): the shared pool, and executors for tests.

A stage with work too slow for the session (the user aggregator's
end-of-turn model, the :class:`~rxvoice.aggregators.UserTurnProcessor`, the
turn-taking detector, a speech-to-text stage) hands each job to its
``offload``: a callable taking the job and returning a
:class:`concurrent.futures.Future` of its result. The default is
:func:`default_offload`, rxvoice's one shared worker pool (:func:`shared_pool`; also
importable from :mod:`rxvoice.workers`). The result
re-enters the session through its gate, so it is handled like any other
input, one at a time.

Set it on the stage, before the pipeline runs::

    pair.user().offload = inline_offload                      # verdicts at once, on the session
    pair.user().offload = SchedulerOffload(scheduler, 0.05)   # verdicts 50 ms later, in virtual time

The two executors here make model latency a test parameter instead of a
race: with a ``TestScheduler``, a verdict arrives exactly ``latency``
virtual seconds after it was asked for.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeAlias

from reactivex import abc

from .._seconds import check_seconds

__all__ = [
    "LazyPool", "Offload", "SchedulerOffload", "default_offload", "inline_offload", "io_offload", "loop_offload",
    "shared_pool",
]

Offload: TypeAlias = Callable[[Callable[[], Any]], "concurrent.futures.Future[Any]"]
"""Runs a job somewhere and returns a future of its result."""


def _settle(future: concurrent.futures.Future[Any], job: Callable[[], Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = job()
    except BaseException as exc:  # handed back as the value, as a worker thread would
        future.set_exception(exc)
    else:
        future.set_result(result)


def inline_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run the job at once, on the calling thread (its result still re-enters after the current frame)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    _settle(future, job)
    return future


class SchedulerOffload:
    """Run each job ``latency`` seconds later on ``scheduler`` (virtual time in tests).

    Args:
        scheduler: The scheduler the session runs on (e.g. ``FrameMarbles.scheduler``).
        latency: Seconds between asking and the answer, or a callable giving
            the latency of each successive job (to script slow and fast verdicts).
    """

    def __init__(self, scheduler: abc.SchedulerBase, latency: float | Callable[[int], float] = 0.0) -> None:
        if not callable(latency):
            check_seconds(latency, "SchedulerOffload.latency")
        self.scheduler = scheduler
        self.latency = latency
        self.jobs = 0

    def __call__(self, job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        n = self.jobs
        self.jobs += 1
        delay = self.latency(n) if callable(self.latency) else self.latency
        def run(_scheduler: abc.SchedulerBase, _state: Any = None) -> None:
            _settle(future, job)

        handle = self.scheduler.schedule_relative(max(0.0, float(delay)), run)

        def forget(f: concurrent.futures.Future[Any]) -> None:
            if f.cancelled():  # the session ended before the answer: nothing stays scheduled
                handle.dispose()

        future.add_done_callback(forget)
        return future


class LazyPool:
    """A thread pool of ``workers`` threads named ``prefix-*``, made on first use and then shared (thread-safe)."""

    __slots__ = ("_lock", "_pool", "prefix", "workers")

    def __init__(self, workers: int, prefix: str) -> None:
        self.workers = workers
        self.prefix = prefix
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __call__(self) -> concurrent.futures.ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._lock:
                pool = self._pool
                if pool is None:
                    pool = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix=self.prefix)
                    self._pool = pool
        return pool

    def submit(self, job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run ``job`` on the pool (an offload)."""
        return self().submit(job)


_SHARED = LazyPool(4, "rxvoice-worker")
_IO = LazyPool(16, "rxvoice-io")


def shared_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The one worker pool rxvoice's stages share (four threads), created on first use.

    Model calls release the GIL, and a dedicated summary model mostly waits
    on the network: four threads keep a slow summary from holding up an
    end-of-turn verdict. Each stage keeps at most one job of a kind in
    flight per session.
    """
    return _SHARED()


def default_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on :func:`shared_pool`: the default ``offload`` of every stage."""
    return shared_pool().submit(job)


def loop_offload(loop: asyncio.AbstractEventLoop) -> Offload:
    """An offload for jobs that make a coroutine: the coroutine runs on ``loop`` (a model function written
    ``async``), its outcome comes back as any other job's."""

    def run(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(job(), loop)

    return run


def io_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on rxvoice's I/O threads (16, shared): the default offload of stages that wait on the network.

    Waiting for an HTTP answer costs no CPU, so it does not belong on the
    compute workers of :func:`shared_pool`, where it would hold up end-of-turn
    verdicts.
    """
    return _IO.submit(job)
