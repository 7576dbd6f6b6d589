"""asyncio bridges: async iterables in, async iterators out, pipelines on the event loop.

RxPY has no async-iterable source and its timers default to threads. These
helpers run a stage on the running loop's scheduler (so every timer fires on
the loop thread), pull frames from an async iterable in one task per
subscription, and hand output frames to ``async for`` through a queue that
is disposed of in ``finally``, so an abandoned iteration never leaks a
subscription.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any, TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from ..frames import Frame
from .loop_clock import LoopScheduler
from .session import Session
from .stage import Operator, Stage, as_stage

__all__ = ["arun", "from_async_iterable", "loop_scheduler", "to_async_iterator"]

_T = TypeVar("_T")

_DONE = object()


def loop_scheduler(loop: asyncio.AbstractEventLoop | None = None) -> LoopScheduler:
    """A scheduler for the running loop (thread-safe: other threads may hand it work; its clock is the loop's)."""
    return LoopScheduler(loop or asyncio.get_running_loop())


def from_async_iterable(source: AsyncIterable[_T]) -> Observable[_T]:
    """An observable pulling from ``source`` in a task on the running loop, one task per subscription.

    Disposing the subscription cancels the task (which closes an async generator).
    """

    def subscribe(observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        loop = asyncio.get_running_loop()

        async def pump() -> None:
            try:
                async for item in source:
                    observer.on_next(item)
            except asyncio.CancelledError:
                return
            except Exception as exc:
                observer.on_error(exc)
                return
            observer.on_completed()

        task = loop.create_task(pump())

        def cancel() -> None:
            task.cancel()

        return Disposable(cancel)

    return Observable(subscribe)


async def to_async_iterator(
    source: Observable[_T], *, scheduler: abc.SchedulerBase | None = None, maxsize: int = 0
) -> AsyncIterator[_T]:
    """Iterate an observable with ``async for``; the subscription is disposed when iteration stops."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize)

    def put(item: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    subscription = source.subscribe(
        put, lambda e: put(_Failure(e)), lambda: put(_DONE), scheduler=scheduler or loop_scheduler(loop)
    )
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        subscription.dispose()


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


async def arun(
    stage: Stage | Operator,
    frames: AsyncIterable[Frame] | Iterable[Frame],
    *,
    up: AsyncIterable[Frame] | Iterable[Frame] | None = None,
    include_upstream: bool = False,
) -> AsyncIterator[Frame]:
    """Run ``stage`` on the running loop: frames in, output frames out (``async for``).

    Timers run on the loop's scheduler. With ``include_upstream``, frames
    leaving the stage upstream are yielded too.
    """
    loop = asyncio.get_running_loop()
    session = Session(loop_scheduler(loop))
    down_in = from_async_iterable(frames) if isinstance(frames, AsyncIterable) else reactivex.from_iterable(frames)
    if up is None:
        up_in: Observable[Frame] = reactivex.never()
    elif isinstance(up, AsyncIterable):
        up_in = from_async_iterable(up)
    else:
        up_in = reactivex.from_iterable(up)
    down_out, up_out = as_stage(stage).duplex(down_in, up_in)
    output = reactivex.merge(down_out, up_out) if include_upstream else down_out
    async for frame in to_async_iterator(output, scheduler=session):
        yield frame
