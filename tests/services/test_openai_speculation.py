"""OpenAILLM holds a speculative answer: released without a second request, dropped, refused for a tool.

Against the loopback chat server, the stage alone (the frames a user
aggregator with speculation on would send are sent by hand), bounded by a
5 s guard on a real loop (a loopback HTTP test: the wall clock is the point).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.context import ContextSnapshot, user_message
from rxvoice.services import LoopbackChatServer, StreamReply, text_chunks, tool_call_chunks
from rxvoice.services.openai import OpenAILLM

from ._harness import Harness

SYSTEM = {"role": "system", "content": "Be brief."}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(5):
            await main()

    asyncio.run(bounded())


async def poll(predicate: Callable[[], bool]) -> None:
    """Wait until ``predicate()`` holds (the server's side changes without a frame leaving the stage)."""
    while not predicate():  # noqa: ASYNC110 (the server's side has no event to wait on)
        await asyncio.sleep(0.005)


def speculative(context: LLMContext, words: str, sid: int) -> F.LLMSpeculativeContextFrame:
    base = context.snapshot
    snap = ContextSnapshot(base.messages.appended(user_message(words)), base.tools, base.tool_choice, base.version)
    return F.LLMSpeculativeContextFrame(snap, sid)


def ended(h: Harness) -> list[tuple[int, str]]:
    return [(f.speculation_id, f.outcome) for f in h.up(F.LLMSpeculationEndedFrame)]


def test_a_held_answer_is_released_without_asking_again() -> None:
    async def main() -> None:
        async with LoopbackChatServer([StreamReply(text_chunks("It is sunny."))]) as server:
            llm = OpenAILLM("m", base_url=server.base_url, api_key="k")
            h = Harness(llm)
            context = LLMContext([SYSTEM])
            h.send(speculative(context, "Weather in Paris?", 1))
            await poll(lambda: len(server.requests) == 1)
            await asyncio.sleep(0.05)  # the answer streams into the hold meanwhile (nothing leaves)
            assert h.down() == []
            context.add_user_message("Weather in Paris?")
            h.send(F.LLMContextFrame(context, speculation_id=1))
            await h.until(lambda _h: bool(h.down(F.LLMFullResponseEndFrame)))
            assert "".join(f.text for f in h.down(F.LLMTextFrame)) == "It is sunny."
            assert len(server.requests) == 1  # released, not asked again
            assert ended(h) == [(1, "released")]
            h.close()
            await llm.aclose()

    run(main)


def test_a_withdrawn_answer_is_dropped_and_the_real_request_asks_again() -> None:
    async def main() -> None:
        replies = [StreamReply(text_chunks("Held, never", finish=False), done=False, hold=True),
                   StreamReply(text_chunks("Real."))]
        async with LoopbackChatServer(replies) as server:
            llm = OpenAILLM("m", base_url=server.base_url, api_key="k")
            h = Harness(llm)
            context = LLMContext([SYSTEM])
            h.send(speculative(context, "Weather in", 1))
            await poll(lambda: len(server.requests) == 1)
            h.send(F.EagerEndOfTurnCancelFrame(1, "the user went on"))
            await h.until(lambda _h: bool(ended(h)))
            assert ended(h) == [(1, "dropped")]
            assert h.up(F.LLMSpeculationEndedFrame)[0].reason == "the user went on"
            context.add_user_message("Weather in Paris?")
            h.send(F.LLMContextFrame(context, speculation_id=1))  # nothing held any more: asked as usual
            await h.until(lambda _h: bool(h.down(F.LLMFullResponseEndFrame)))
            assert "".join(f.text for f in h.down(F.LLMTextFrame)) == "Real."
            assert len(server.requests) == 2
            await poll(server.requests[0].disconnected.is_set)  # the held request's connection closed
            h.close()
            await llm.aclose()

    run(main)


def test_a_held_answer_that_asks_for_a_tool_is_refused_before_any_tool_starts() -> None:
    ran: list[Mapping[str, Any]] = []

    def weather(arguments: Mapping[str, Any]) -> str:
        ran.append(arguments)
        return "sunny"

    async def main() -> None:
        call = tool_call_chunks([("call_1", "get_weather", '{"city": "Paris"}')])
        async with LoopbackChatServer([StreamReply(call), StreamReply(call), StreamReply(text_chunks("x"))]) as server:
            llm = OpenAILLM("m", base_url=server.base_url, api_key="k", functions={"get_weather": weather})
            h = Harness(llm)
            context = LLMContext([SYSTEM], tools=TOOLS)
            h.send(speculative(context, "Weather in Paris?", 4))
            await h.until(lambda _h: bool(ended(h)))
            assert ended(h) == [(4, "refused")]
            assert ran == [] and h.down(F.FunctionCallInProgressFrame) == []
            assert h.up(F.FunctionCallsStartedFrame) == []
            context.add_user_message("Weather in Paris?")
            h.send(F.LLMContextFrame(context, speculation_id=4))  # refused: the turn's end asks again
            await poll(lambda: bool(ran))
            assert ran == [{"city": "Paris"}] and len(server.requests) == 2
            h.close()
            await llm.aclose()

    run(main)
