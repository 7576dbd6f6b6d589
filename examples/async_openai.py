"""An asyncio voice-agent loop with the HTTP model stage, offline unless you point it at a server.

The user's lines arrive as final transcriptions, the user aggregator decides
each turn is over, :class:`~rxvoice.services.openai.OpenAILLM` streams the
answer over HTTP (server-sent events), a weather tool is called and its
result fed back, and the assistant aggregator writes every reply into the
shared context.

* With ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` set, it talks to that server
  (model ``OPENAI_MODEL``, default ``gpt-4o-mini``).
* Otherwise it starts a loopback chat-completions server on 127.0.0.1 that
  answers from a few rules, word by word, so the whole path (HTTP, streaming,
  tool calls, the re-run after a tool result) runs with no network.

Run: ``python examples/async_openai.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from rxvoice import LLMContext, pipeline
from rxvoice.aggregators import Pair
from rxvoice.frames import EndFrame, Frame, TranscriptionFrame
from rxvoice.pipeline import arun
from rxvoice.services import LoopbackChatServer, RecordedRequest, StreamReply, chunk, tool_call_chunks
from rxvoice.services.openai import OpenAILLM
from rxvoice.turns import SpeechTimeoutStop, TurnsConfig

LINES = [
    "Hi, I'd like to book a table for two.",
    "What will the weather be like tomorrow evening?",
    "Great, thanks!",
]

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The forecast for a time of day",
        "parameters": {"type": "object", "properties": {"when": {"type": "string"}}, "required": ["when"]},
    },
}]


def get_weather(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The tool the model may call (a real app would ask a weather service, in an async handler)."""
    return {"when": arguments.get("when", "now"), "sky": "clear", "temp_c": 18}


def rule_based_answer(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[tuple[str, str, str]]]:
    """What the offline 'model' says to the conversation: (text, tool calls)."""
    last = messages[-1]
    if last.get("role") == "tool":
        return "It will be clear and mild, about 18 degrees. A nice evening for it.", []
    said = str(last.get("content") or "").lower()
    if "weather" in said:
        return "", [("call_weather_1", "get_weather", '{"when": "tomorrow evening"}')]
    if "table" in said or "book" in said:
        return "Sure. For which day and time?", []
    if "thank" in said:
        return "You're welcome, enjoy your dinner!", []
    return "I see. Tell me more.", []


def loopback_responder(token_delay: float) -> Any:
    """Answers each request from the rules, streaming a word per chunk every ``token_delay`` seconds."""

    def respond(request: RecordedRequest) -> StreamReply:
        text, calls = rule_based_answer(request.body["messages"])

        async def paced() -> AsyncIterator[dict[str, Any]]:
            if calls:
                events = tool_call_chunks(calls)
            else:
                words = re.findall(r"\s*\S+", text)
                events = [chunk({"role": "assistant", "content": ""}), *(chunk({"content": w}) for w in words),
                          chunk({}, "stop")]
            for event in events:
                await asyncio.sleep(token_delay)  # the example's own pacing: a model takes time per token
                yield event

        return StreamReply(paced())

    return respond


# --8<-- [start:talk]
async def talk(
    llm: OpenAILLM, lines: Sequence[str], *, speech_timeout: float = 0.3, echo: bool = True
) -> LLMContext:
    """Say each line, wait for the bot's spoken answer, then the next; return the conversation."""
    context = LLMContext([{"role": "system", "content": "You are a friendly restaurant assistant. Be brief."}],
                         tools=TOOLS)
    pair = Pair(context, turns=TurnsConfig(stop=[SpeechTimeoutStop(user_speech_timeout=speech_timeout)]))
    answered = asyncio.Event()

    @pair.assistant().events.on("on_assistant_turn_stopped")
    def bot_said(_agg: object, turn: Any) -> None:
        if turn.content:
            if echo:
                print(f"bot> {turn.content}")
            answered.set()

    @llm.events.on("on_error")
    def failed(_llm: object, error: BaseException) -> None:
        if echo:
            print(f"  [model error: {error}]")
        answered.set()  # don't wait for an answer that will not come

    async def user_lines() -> AsyncIterator[Frame]:
        for line in lines:
            if echo:
                print(f"you> {line}")
            answered.clear()
            yield TranscriptionFrame(line, user_id="you", finalized=True)
            await answered.wait()
        yield EndFrame()

    async for _ in arun(pipeline(pair.user(), llm, pair.assistant()), user_lines()):
        pass
    await llm.aclose()
    return context
# --8<-- [end:talk]


async def main(
    lines: Sequence[str] = LINES,
    *,
    token_delay: float = 0.04,
    speech_timeout: float = 0.3,
    env: Mapping[str, str] | None = None,
    echo: bool = True,
) -> LLMContext:
    """Talk to the configured server, or to a loopback one started here."""
    env = os.environ if env is None else env
    functions = {"get_weather": get_weather}
    async with contextlib.AsyncExitStack() as stack:
        if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
            llm = OpenAILLM(env.get("OPENAI_MODEL", "gpt-4o-mini"), base_url=env.get("OPENAI_BASE_URL"),
                            api_key=env.get("OPENAI_API_KEY"), functions=functions)
        else:
            server = await stack.enter_async_context(LoopbackChatServer(loopback_responder(token_delay)))
            if echo:
                print(f"(no OPENAI_API_KEY: talking to a loopback model at {server.base_url})")
            llm = OpenAILLM("loopback-model", base_url=server.base_url, functions=functions)
        context = await talk(llm, lines, speech_timeout=speech_timeout, echo=echo)
    if echo:
        print(f"\n{len(context.messages)} messages in the conversation.")
    return context


if __name__ == "__main__":
    asyncio.run(main())
