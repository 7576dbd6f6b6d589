"""examples/chat.py --auto plays its conversation offline, as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat.py"


def test_chat_auto_plays_the_whole_conversation() -> None:
    """`python examples/chat.py --auto` holds four turns, one with a tool call, and prints the conversation."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--auto", "--pause", "0"],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL, check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("you> ") == 4
    assert out.count("[your turn ended: SpeechTimeoutStop]") == 4
    bot = [line for line in out.splitlines() if line.startswith("bot> ")]
    assert bot == [
        "bot> Sure. For which day and time?",
        "bot> Done: a table for two, tomorrow at seven.",
        "bot> Let me check.",
        "bot> It will be clear and mild, a nice evening for it.",
        "bot> You're welcome, enjoy your dinner!",
    ]
    assert "context[7] assistant: (calls get_weather)" in out
    assert out.rstrip().endswith("12 messages in the conversation.")
    assert "Traceback" not in done.stderr
