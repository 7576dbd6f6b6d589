"""asyncio bridges: pipelines on the event loop, async iterables in, async iterators out."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
import reactivex
from reactivex import operators as ops

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import arun, from_async_iterable, to_async_iterator
from rxvoice.testing import ScriptedLLM, run_virtual


async def _lines() -> AsyncIterator[F.Frame]:
    yield F.TranscriptionFrame("hello", finalized=True)
    await asyncio.sleep(0.8)  # the user pauses; the turn's 0.6 s silence timer runs on the loop (virtual time)
    yield F.EndFrame()


def test_a_conversation_runs_on_the_loop() -> None:
    """arun drives the pair on asyncio: timers fire on the loop thread, at loop time, and the answer is written."""
    pair = Pair(LLMContext())
    llm = ScriptedLLM(["Hi!"])
    threads: set[int] = set()
    stopped_at: list[float] = []

    def stopped(_agg: object, _p: object) -> None:
        threads.add(threading.get_ident())
        stopped_at.append(asyncio.get_running_loop().time())

    pair.user().events.on("on_user_turn_stopped", stopped)

    async def main() -> list[F.Frame]:
        return [f async for f in arun(pipeline(pair.user(), llm, pair.assistant()), _lines())]

    out = run_virtual(main())
    assert [m["content"] for m in pair.context().messages] == ["hello", "Hi!"]
    assert threads == {threading.get_ident()}
    assert stopped_at == [pytest.approx(0.6)]
    assert any(isinstance(f, F.EndFrame) for f in out)


def test_async_iterable_to_observable_and_back() -> None:
    """from_async_iterable and to_async_iterator round-trip values and completion."""

    async def numbers() -> AsyncIterator[int]:
        for i in range(3):
            yield i

    async def main() -> list[int]:
        source = from_async_iterable(numbers()).pipe(ops.map(lambda x: x * 10))
        return [x async for x in to_async_iterator(source)]

    assert asyncio.run(main()) == [0, 10, 20]


def test_breaking_out_disposes_the_subscription() -> None:
    """Leaving ``async for`` early disposes the subscription (no leak)."""
    disposed: list[bool] = []

    def subscribe(observer, scheduler=None):  # type: ignore[no-untyped-def]
        for i in range(5):
            observer.on_next(i)
        return reactivex.disposable.Disposable(lambda: disposed.append(True))

    async def main() -> None:
        async for x in to_async_iterator(reactivex.create(subscribe)):
            if x == 1:
                break

    asyncio.run(main())
    assert disposed == [True]


def test_errors_are_raised_in_the_iteration() -> None:
    """An error in the observable raises out of ``async for``."""

    async def main() -> None:
        async for _ in to_async_iterator(reactivex.throw(ValueError("bad"))):
            pass

    try:
        asyncio.run(main())
    except ValueError as exc:
        assert str(exc) == "bad"
    else:
        raise AssertionError("expected the error")
