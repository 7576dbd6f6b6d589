"""OpenAITurnClassifier against the loopback chat server: the choice question, the verdict, its failures.

A loopback HTTP test on a real loop (bounded by a 5 s guard); the classifier
blocks, so it runs in a thread as it would on the worker pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from rxvoice.errors import ConfigurationError, ServiceError
from rxvoice.services import ErrorReply, JSONReply, LoopbackChatServer
from rxvoice.services.openai import OpenAILLM, OpenAITurnClassifier
from rxvoice.turns import ClassifyRequest, TurnCompletion


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(5):
            await main()

    asyncio.run(bounded())


def answer(text: str) -> JSONReply:
    return JSONReply({"choices": [{"message": {"role": "assistant", "content": text}}]})


REQUEST = ClassifyRequest("I'd like to book a table for", ({"role": "assistant", "content": "How can I help?"},))


def test_the_model_is_asked_a_choice_question_and_its_first_word_is_the_verdict() -> None:
    async def main() -> None:
        async with LoopbackChatServer([answer("Short."), answer("complete"), answer("probably")]) as server:
            classifier = OpenAITurnClassifier("m", base_url=server.base_url, api_key="k")
            assert await asyncio.to_thread(classifier.classify, REQUEST) is TurnCompletion.SHORT_PAUSE
            assert await asyncio.to_thread(classifier.classify, REQUEST) is TurnCompletion.COMPLETE
            assert await asyncio.to_thread(classifier.classify, REQUEST) == "probably"  # junk, for the strategy
            body = server.requests[0].body
            assert body["max_tokens"] == 3 and body["temperature"] == 0 and body["stream"] is False
            said = body["messages"][1]["content"]
            assert "assistant: How can I help?" in said
            assert said.endswith("user (just now): I'd like to book a table for")
            assert server.requests[0].headers["authorization"] == "Bearer k"

    run(main)


def test_an_error_status_raises_a_typed_error() -> None:
    async def main() -> None:
        async with LoopbackChatServer([ErrorReply(500, "down")]) as server:
            classifier = OpenAITurnClassifier("m", base_url=server.base_url, api_key="k")
            with pytest.raises(ServiceError):
                await asyncio.to_thread(classifier.classify, REQUEST)

    run(main)


def test_like_asks_the_same_model_at_the_same_place() -> None:
    llm = OpenAILLM("mini", base_url="http://127.0.0.1:9/v1", api_key="sk-x")
    classifier = OpenAITurnClassifier.like(llm)
    assert classifier.model == "mini" and classifier.url == "http://127.0.0.1:9/v1/chat/completions"
    assert classifier.headers == {"Authorization": "Bearer sk-x"}


@pytest.mark.parametrize("bad", [{"model": ""}, {"base_url": "ftp://x"}, {"timeout": 0}])
def test_bad_settings_fail_at_construction(bad: dict[str, object]) -> None:
    kwargs: dict[str, object] = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k", **bad}
    with pytest.raises(ConfigurationError):
        OpenAITurnClassifier(**kwargs)  # type: ignore[arg-type]
