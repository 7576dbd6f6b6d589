"""An async handler that never finishes does not outlive its session: it is cancelled ASYNC_GRACE after the end.

asyncio in virtual time (``run_virtual``): the one-second grace is measured on the loop's clock and takes no
wall time.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.events import ASYNC_GRACE
from rxvoice.pipeline import arun
from rxvoice.testing import run_virtual


async def _talk(pair: Pair) -> None:
    async for _ in arun(pipeline(pair.user()), [F.TranscriptionFrame("hello there", "u"), F.EndFrame()]):
        pass


def test_a_handler_that_never_finishes_is_cancelled_after_the_grace() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        started, cancelled = asyncio.Event(), asyncio.Event()
        pair = Pair(LLMContext())

        async def forever(_aggregator: Any, _turn: Any) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        pair.user().events.on("on_user_turn_stopped", forever)
        await _talk(pair)
        await asyncio.wait_for(started.wait(), 5)
        ended = loop.time()
        await asyncio.wait_for(cancelled.wait(), 30)
        return loop.time() - ended

    waited = run_virtual(main())
    assert abs(waited - ASYNC_GRACE) < 0.05


def test_a_handler_that_finishes_within_the_grace_completes() -> None:
    async def main() -> list[str]:
        done: list[str] = []
        pair = Pair(LLMContext())

        async def brief(_aggregator: Any, turn: Any) -> None:
            await asyncio.sleep(ASYNC_GRACE / 2)
            done.append(turn.content)

        pair.user().events.on("on_user_turn_stopped", brief)
        await _talk(pair)
        await asyncio.sleep(ASYNC_GRACE * 2)
        return done

    assert run_virtual(main()) == ["hello there"]
