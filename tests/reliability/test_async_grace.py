"""An async handler that never finishes does not outlive its session: it is cancelled ASYNC_GRACE after the end.

(Real time on an asyncio loop, bounded: the grace is shortened to 50 ms here.)
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rxvoice.events
from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import arun

GRACE = 0.05


async def _talk(pair: Pair) -> None:
    async for _ in arun(pipeline(pair.user()), [F.TranscriptionFrame("hello there", "u"), F.EndFrame()]):
        pass


def test_a_handler_that_never_finishes_is_cancelled_after_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rxvoice.events, "ASYNC_GRACE", GRACE)

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
        await asyncio.wait_for(cancelled.wait(), 5)
        return loop.time() - ended

    waited = asyncio.run(main())
    assert GRACE * 0.5 <= waited < 2.0


def test_a_handler_that_finishes_within_the_grace_completes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rxvoice.events, "ASYNC_GRACE", 1.0)

    async def main() -> list[str]:
        done: list[str] = []
        pair = Pair(LLMContext())

        async def brief(_aggregator: Any, turn: Any) -> None:
            await asyncio.sleep(0.01)
            done.append(turn.content)

        pair.user().events.on("on_user_turn_stopped", brief)
        await _talk(pair)
        for _ in range(100):
            if done:
                break
            await asyncio.sleep(0.01)
        return done

    assert asyncio.run(main()) == ["hello there"]
