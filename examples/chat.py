"""A text conversation in the terminal, through rxvoice's pair and a scripted model.

Type a line and press enter: it becomes a final transcription, the user
aggregator decides the turn is over, the model answers, the assistant
aggregator writes the answer, and the shared context is printed as it grows.
With no terminal attached (or ``--auto``), a short scripted conversation
plays by itself, so ``python examples/chat.py`` always shows something.

Run: ``python examples/chat.py`` (``--auto`` to play the built-in lines;
``--pause S`` sets the seconds between them once the bot has answered).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Sequence

from rxvoice import LLMContext, pipeline
from rxvoice.aggregators import Pair, UserTurnStopped
from rxvoice.context import ContextSnapshot
from rxvoice.frames import EndFrame, Frame, TranscriptionFrame
from rxvoice.pipeline import arun
from rxvoice.testing import Reply, ScriptedLLM, ToolCall
from rxvoice.turns import SpeechTimeoutStop, TurnsConfig

AUTO_LINES = [
    "Hi, I'd like to book a table for two.",
    "Tomorrow at seven, please.",
    "What will the weather be like?",
    "Great, thanks!",
]


def answer(snapshot: ContextSnapshot) -> Reply:
    """A tiny rule-based 'model' so the demo runs offline."""
    last = snapshot.messages[-1]
    said = str(last.get("content", "")).lower() if isinstance(last, dict) else ""
    if last.get("role") == "tool":
        return Reply("It will be clear and mild, a nice evening for it.")
    if "weather" in said:
        return Reply("Let me check.", tool_calls=[ToolCall("get_weather", {"when": "tomorrow evening"},
                                                          {"sky": "clear", "temp_c": 18})])
    if "book" in said or "table" in said:
        return Reply("Sure. For which day and time?")
    if any(w in said for w in ("tomorrow", "seven", "pm", "am")):
        return Reply("Done: a table for two, tomorrow at seven.")
    if "thank" in said:
        return Reply("You're welcome, enjoy your dinner!")
    return Reply("I see. Tell me more.")


async def typed_lines(auto: bool, answered: asyncio.Event, pause: float) -> AsyncIterator[Frame]:
    """The user's lines as final transcriptions (stdin, or the built-in script, each once the bot has answered)."""
    if auto:
        for line in AUTO_LINES:
            print(f"\nyou> {line}")
            answered.clear()
            yield TranscriptionFrame(line, user_id="you", finalized=True)
            await answered.wait()
            await asyncio.sleep(pause)
    else:
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            if line.strip():
                yield TranscriptionFrame(line.strip(), user_id="you", finalized=True)
    yield EndFrame()


async def main(auto: bool, pause: float = 1.0) -> LLMContext:
    """Hold the conversation; returns it."""
    context = LLMContext(messages=[{"role": "system", "content": "You are a friendly restaurant assistant."}])
    context.set_tools([{"type": "function", "function": {"name": "get_weather", "description": "Forecast"}}])
    pair = Pair(context, turns=TurnsConfig(stop=[SpeechTimeoutStop(user_speech_timeout=0.3)]))
    calling_tools = False
    answered = asyncio.Event()

    def model(snapshot: ContextSnapshot) -> Reply:
        nonlocal calling_tools
        reply = answer(snapshot)
        calling_tools = bool(reply.tool_calls)  # the bot is done only after the reply that calls nothing
        return reply

    llm = ScriptedLLM(model, token_delay=0.03)

    @pair.user().events.on("on_user_turn_stopped")
    def turn_over(_agg: object, turn: UserTurnStopped) -> None:
        print(f"  [your turn ended: {turn.strategy.name if turn.strategy else 'session end'}]")

    @pair.assistant().events.on("on_assistant_turn_stopped")
    def bot_said(_agg: object, turn: object) -> None:
        print(f"bot> {turn.content}")  # type: ignore[attr-defined]
        if not calling_tools:
            answered.set()

    seen = 0

    def show(snapshot: ContextSnapshot) -> None:
        nonlocal seen
        for m in snapshot.messages[seen:]:
            role = m.get("role", "?") if isinstance(m, dict) else "llm-specific"
            content = m.get("content") if isinstance(m, dict) else ""
            if content is None:
                content = ", ".join(c["function"]["name"] for c in m.get("tool_calls", ()))
                content = f"(calls {content})"
            print(f"  context[{seen}] {role}: {content}")
            seen += 1

    context.subscribe(show)
    async for _ in arun(pipeline(pair.user(), llm, pair.assistant()), typed_lines(auto, answered, pause)):
        pass
    print(f"\n{len(context.messages)} messages in the conversation.")
    return context


def cli(argv: Sequence[str] | None = None) -> LLMContext:
    """Parse the command line and hold the conversation."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--auto", action="store_true", help="play the built-in conversation")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between built-in lines (default 1)")
    args = parser.parse_args(argv)
    return asyncio.run(main(args.auto or not sys.stdin.isatty(), args.pause))


if __name__ == "__main__":
    cli()
