"""examples/async_openai.py talks to its own loopback model server when no OpenAI settings are given."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "async_openai.py"


def load_example() -> ModuleType:
    name = "rxvoice_example_async_openai"
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_async_openai_example_prints_the_conversation(capsys: pytest.CaptureFixture[str]) -> None:
    """Offline, the example says it uses a loopback server, then prints three exchanges and the message count."""
    example = load_example()
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
