"""Soak: many user/assistant turns through one pair, memory sampled as it goes.

Run from the repository root (the ``rxvoice`` venv is enough; Pipecat is not used)::

    python benchmarks/soak.py                        # 100 000 turns, a sample every 10 000
    python benchmarks/soak.py --turns 5000 --every 500

One conversation runs in virtual time (a ``TestScheduler``) through
``pipeline(pair.user(), ScriptedLLM, Speaker, pair.assistant())``: the
default turn strategies (VAD start, transcription start, a 0.6 s speech
timeout), a scripted model that calls a tool in one turn out of ten (the
result re-runs the model), a speaker that reports the bot speaking both ways,
and automatic summaries (past 40 messages, keeping 4) answered by the
scripted model, so the conversation stays bounded. Each turn is a VAD start,
an interim transcript, five 20 ms audio chunks, the final transcript and a VAD
stop, then 2 s of virtual time for the answer.

Every turn is checked as it goes: the user message written holds exactly
that turn's words, the answer is the one meant for that turn, no error is
raised. Every ``--every`` turns the live Python heap (``sys.getallocatedblocks``
after a full collection) and the resident set size are sampled; the first
sample is the warm-up, and the slopes over the later ones (per 10 000 turns)
say whether memory is flat. The scripted model's run log (``ScriptedLLM.runs``,
a test aid that keeps every run) is emptied as the run goes.

The last line is machine-readable::

    soak_turns=<n> blocks_per_10k=<slope> rss_kib_per_10k=<slope> max_messages=<n> ok=<True|False>
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _reliability import Speaker, heap_blocks, rss_kib, slope
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.context import ContextSnapshot
from rxvoice.summarization import AutoSummarizationConfig, SummaryConfig
from rxvoice.testing import Reply, ScriptedLLM, ToolCall
from rxvoice.turns import TurnsConfig

__all__ = ["Sample", "SoakResult", "run_soak"]

TURN_SECONDS = 2.0
CHUNK = F.InputAudioRawFrame(b"\x00\x00" * 320)


def words(i: int) -> str:
    """What the user says in turn ``i``."""
    return f"turn {i} please book seat {i % 97}"


def _turn_of(snapshot: ContextSnapshot) -> int:
    for message in reversed(snapshot.messages):
        if message["role"] == "user" and str(message.get("content", "")).startswith("turn "):
            return int(str(message["content"]).split()[1])
    return -1


@dataclass(frozen=True)
class Sample:
    """Memory after ``turns`` turns."""

    turns: int
    seconds: float
    heap_blocks: int
    rss_kib: int
    messages: int


@dataclass
class SoakResult:
    """What a soak run measured and found."""

    turns: int
    samples: list[Sample] = field(default_factory=list)
    tool_turns: int = 0
    model_runs: int = 0
    summaries: int = 0
    max_messages: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def warm(self) -> list[Sample]:
        """The samples after the warm-up one."""
        return self.samples[1:]

    @property
    def blocks_per_10k(self) -> float:
        """Slope of the live heap (blocks) per 10 000 turns, after warm-up."""
        w = self.warm
        return slope([s.turns for s in w], [s.heap_blocks for s in w]) * 10_000

    @property
    def rss_kib_per_10k(self) -> float:
        """Slope of the resident set (KiB) per 10 000 turns, after warm-up."""
        w = self.warm
        return slope([s.turns for s in w], [s.rss_kib for s in w]) * 10_000

    @property
    def ok(self) -> bool:
        """Whether every turn was answered as scripted, with no error."""
        return not self.problems


def run_soak(turns: int = 100_000, every: int = 10_000, *, tool_every: int = 10,
             report: Any = None) -> SoakResult:
    """Run ``turns`` turns through one pair and sample memory every ``every`` turns.

    Args:
        turns: How many user turns.
        every: Sample memory after this many turns (at least two samples make a slope).
        tool_every: One turn in this many calls a tool.
        report: Called with each :class:`Sample` as it is taken (e.g. ``print``).
    """
    result = SoakResult(turns)
    sched = TestScheduler()
    pair = Pair(
        LLMContext([{"role": "system", "content": "Be brief."}]),
        turns=TurnsConfig(),
        summarization=AutoSummarizationConfig(
            max_context_tokens=None, max_unsummarized_messages=40,
            summary_config=SummaryConfig(min_messages_after_summary=4),
        ),
    )

    def script(snapshot: ContextSnapshot) -> Reply:
        last = snapshot.messages[-1]
        n = _turn_of(snapshot)
        if last["role"] == "tool":
            return Reply(f"Seat booked for turn {n}.")
        if n % tool_every == 0:
            return Reply("Let me check.", tool_calls=[ToolCall("book", {"turn": n}, result={"ok": n}, delay=0.2)])
        return Reply(f"Answer to turn {n}.")

    llm = ScriptedLLM(script, token_delay=0.02, summary="Earlier, the user booked seats.", summary_delay=0.1)
    expected_user: deque[str] = deque()
    expected_bot: deque[str] = deque()
    problems = result.problems

    def user_written(_agg: Any, added: Any) -> None:
        want = expected_user.popleft() if expected_user else None
        if added.content != want:
            problems.append(f"user message {added.content!r}, expected {want!r}")

    def bot_said(_agg: Any, stopped: Any) -> None:
        want = expected_bot.popleft() if expected_bot else None
        if stopped.content != want:
            problems.append(f"assistant said {stopped.content!r}, expected {want!r}")

    def failed(source: Any, error: Any) -> None:
        problems.append(f"{source!r} on_error: {error!r}")

    def summarized(_s: Any, _applied: Any) -> None:
        result.summaries += 1

    user, assistant = pair.user(), pair.assistant()
    user.events.on("on_user_turn_message_added", user_written)
    assistant.events.on("on_assistant_turn_stopped", bot_said)
    for source in (user, assistant, assistant.summarizer()):
        source.events.on("on_error", failed)
    assistant.summarizer().events.on("on_summary_applied", summarized)

    down: Subject[F.Frame] = Subject()
    up: Subject[F.Frame] = Subject()
    out_down, out_up = pipeline(user, llm, Speaker(), assistant).duplex(down, up)
    subscriptions = [out_down.subscribe(lambda f: None, scheduler=sched),
                     out_up.subscribe(lambda f: None, scheduler=sched)]
    started = time.perf_counter()
    for i in range(turns):
        t = sched.clock
        expected_user.append(words(i))
        if i % tool_every == 0:
            result.tool_turns += 1
            expected_bot.extend(("Let me check.", f"Seat booked for turn {i}."))
        else:
            expected_bot.append(f"Answer to turn {i}.")
        down.on_next(F.VADUserStartedSpeakingFrame(0.2, t))
        down.on_next(F.InterimTranscriptionFrame(words(i)[:6]))
        for k in range(5):
            sched.advance_to(t + 0.02 * (k + 1))
            down.on_next(CHUNK)
        sched.advance_to(t + 0.3)
        down.on_next(F.TranscriptionFrame(words(i), finalized=True))
        down.on_next(F.VADUserStoppedSpeakingFrame(0.2, t + 0.3))
        sched.advance_to(t + TURN_SECONDS)
        result.model_runs += len(llm.runs)
        llm.runs.clear()
        llm.summary_requests.clear()
        result.max_messages = max(result.max_messages, len(pair.context().messages))
        if (i + 1) % every == 0:
            sample = Sample(i + 1, time.perf_counter() - started, heap_blocks(), rss_kib(),
                            len(pair.context().messages))
            result.samples.append(sample)
            if report is not None:
                report(sample)
    for s in subscriptions:
        s.dispose()
    if expected_user or expected_bot:
        problems.append(f"{len(expected_user)} user messages and {len(expected_bot)} answers never came")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    args = parser.parse_args(argv)
    print(f"{'turns':>8} {'seconds':>8} {'heap blocks':>12} {'RSS KiB':>9} {'messages':>9}")

    def show(s: Sample) -> None:
        print(f"{s.turns:>8} {s.seconds:>8.1f} {s.heap_blocks:>12} {s.rss_kib:>9} {s.messages:>9}", flush=True)

    result = run_soak(args.turns, args.every, report=show)
    elapsed = result.samples[-1].seconds if result.samples else 0.0
    print(f"{result.turns} turns ({result.tool_turns} with a tool call), {result.model_runs} model runs, "
          f"{result.summaries} summaries, {elapsed:.1f} s ({1000 * elapsed / max(1, result.turns):.2f} ms/turn)")
    for problem in result.problems[:10]:
        print("PROBLEM:", problem)
    print(f"soak_turns={result.turns} blocks_per_10k={result.blocks_per_10k:.1f} "
          f"rss_kib_per_10k={result.rss_kib_per_10k:.1f} max_messages={result.max_messages} ok={result.ok}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
