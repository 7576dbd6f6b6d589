"""examples/async_openai.py talks to its own loopback model server when no OpenAI settings are given."""

from __future__ import annotations

import asyncio

import pytest

from tests.support import load_example


def test_async_openai_example_prints_the_conversation(capsys: pytest.CaptureFixture[str]) -> None:
    """Offline, the example says it uses a loopback server, then prints three exchanges and the message count."""
    example = load_example("async_openai")
    context = asyncio.run(asyncio.wait_for(example.main(token_delay=0.0, speech_timeout=0.05, env={}), 10))
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("(no OPENAI_API_KEY: talking to a loopback model at http://127.0.0.1:")
    assert [line for line in out if line.startswith(("you> ", "bot> "))] == [
        "you> Hi, I'd like to book a table for two.",
        "bot> Sure. For which day and time?",
        "you> What will the weather be like tomorrow evening?",
        "bot> It will be clear and mild, about 18 degrees. A nice evening for it.",
        "you> Great, thanks!",
        "bot> You're welcome, enjoy your dinner!",
    ]
    assert out[-1] == "9 messages in the conversation."
    assert [m["role"] for m in context.messages].count("tool") == 1


def test_the_asyncio_example_holds_a_whole_conversation_with_a_tool_call() -> None:
    """With no OpenAI settings, the example talks to a loopback server: three turns, one tool call, one re-run."""
    example = load_example("async_openai")
    context = asyncio.run(asyncio.wait_for(
        example.main(token_delay=0.0, speech_timeout=0.05, env={}, echo=False), 5
    ))
    messages = context.messages
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "user", "assistant", "tool", "assistant", "user", "assistant",
    ]
    assert messages[4]["tool_calls"][0]["function"] == {"name": "get_weather",
                                                         "arguments": '{"when": "tomorrow evening"}'}
    assert messages[5]["content"] == '{"when": "tomorrow evening", "sky": "clear", "temp_c": 18}'
    assert messages[6]["content"].startswith("It will be clear and mild")
    assert messages[8]["content"] == "You're welcome, enjoy your dinner!"
