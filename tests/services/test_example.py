"""examples/async_openai.py runs offline against its own loopback server."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "async_openai.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("async_openai_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_asyncio_example_holds_a_whole_conversation_with_a_tool_call() -> None:
    """With no OpenAI settings, the example talks to a loopback server: three turns, one tool call, one re-run."""
    example = load_example()
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
