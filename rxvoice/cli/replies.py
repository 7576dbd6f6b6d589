"""What the caller waits for after they stop: the end of speech to the bot's first audio, and what speculation cost.

A run with ``Setup.first_token_delay`` has a scripted model
(:func:`scripted_answer`) answer every turn and a paced synthesizer speak
the answer; :func:`reply_results` reads, for each labelled end of turn that
was found, how long after the end of speech the bot's voice started, and
what the speculative requests of the run came to (asked, released, dropped,
refused, the tokens streamed for nothing, and the tool calls: those of
requests made at a turn's end, and those of speculative ones, which must be
none). ``rxvoice eval --first-token-delay`` and ``rxvoice demo
--first-token-delay`` report them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..testing import Transcript
from .answers import TOOL_EVERY, scripted_answer
from .observations import BotAudio, Recovered, Speculated, Turn, TurnStarted
from .runner import Analysis

__all__ = ["TOOL_EVERY", "ReplyCounts", "ReplyResult", "reply_results", "reply_summary", "scripted_answer"]

@dataclass(frozen=True)
class ReplyResult:
    """One labelled end of turn that was found: when the turn ended and when the bot's voice started."""

    segment: int
    end: float
    turn_ended: float
    first_audio: float | None
    """``None``: the bot said nothing before the caller went on."""

    @property
    def latency(self) -> float | None:
        """The end of speech to the bot's first audio."""
        return None if self.first_audio is None else round(self.first_audio - self.end, 6)


@dataclass(frozen=True)
class ReplyCounts:
    """What a run's speculative requests and tool calls came to."""

    turns: int = 0
    asked: int = 0
    released: int = 0
    dropped: int = 0
    refused: int = 0
    failed: int = 0
    wasted_tokens: int = 0
    tool_calls: int = 0
    """Tool calls started for requests made at a turn's end."""
    speculative_tool_calls: int = 0
    """Tool calls started for speculative requests (must be 0)."""
    recovered: int = 0
    """False ends the user aggregator undid (``on_user_turn_recovered``): the caller went on before the bot spoke."""

    def __add__(self, other: ReplyCounts) -> ReplyCounts:
        return ReplyCounts(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple(), strict=True)))

    def as_tuple(self) -> tuple[int, ...]:
        return (self.turns, self.asked, self.released, self.dropped, self.refused, self.failed, self.wasted_tokens,
                self.tool_calls, self.speculative_tool_calls, self.recovered)

    @property
    def wasted(self) -> int:
        """Speculative requests whose answer nobody heard."""
        return self.asked - self.released

    def per_turn(self, n: int) -> float:
        return round(n / self.turns, 3) if self.turns else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "turns": self.turns, "speculative_asked": self.asked, "released": self.released,
            "dropped": self.dropped, "refused": self.refused, "failed": self.failed,
            "wasted_per_turn": self.per_turn(self.wasted), "wasted_tokens": self.wasted_tokens,
            "tool_calls": self.tool_calls, "speculative_tool_calls": self.speculative_tool_calls,
            "recovered": self.recovered,
        }


def reply_results(
    transcript: Transcript, found: Iterable[tuple[int, float]], analysis: Analysis
) -> tuple[list[ReplyResult], ReplyCounts]:
    """For each found end (``(segment index, turn end)``), when the bot's voice started; and the run's counts.

    The bot's first audio counts when it starts after the turn ended and
    before the caller's next segment begins.
    """
    segments = transcript.segments
    audio = [o.time for o in analysis.observations if isinstance(o, BotAudio)]
    starts = [o.time for o in analysis.observations if isinstance(o, TurnStarted)]
    results: list[ReplyResult] = []
    for index, ended in found:
        seg = segments[index - 1]
        until = segments[index].start if index < len(segments) else float("inf")
        later = [t for t in starts if t > ended + 1e-6]
        if later:
            until = min(until, later[0])
        spoken = [t for t in audio if ended - 1e-6 <= t < until]
        results.append(ReplyResult(index, seg.end, ended, spoken[0] if spoken else None))
    speculated = [o for o in analysis.observations if isinstance(o, Speculated)]
    model = analysis.model
    tool_calls = speculative = 0
    if model is not None:
        made = sum(len(r.reply.tool_calls) for r in model.runs if r.reply is not None)
        tool_calls = model.tool_calls_started
        speculative = max(0, model.tool_calls_started - made)
    counts = ReplyCounts(
        turns=len([o for o in analysis.observations if isinstance(o, Turn) and o.cause != "end"]),
        asked=sum(o.outcome == "asked" for o in speculated),
        released=sum(o.outcome == "released" for o in speculated),
        dropped=sum(o.outcome == "dropped" for o in speculated),
        refused=sum(o.outcome == "refused" for o in speculated),
        failed=sum(o.outcome == "failed" for o in speculated),
        wasted_tokens=sum(o.tokens for o in speculated if o.outcome != "released"),
        tool_calls=tool_calls, speculative_tool_calls=speculative,
        recovered=sum(1 for o in analysis.observations if isinstance(o, Recovered)),
    )
    return results, counts


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _p90(values: Sequence[float]) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=10, method="inclusive")[8], 3)


def reply_summary(results: Sequence[ReplyResult], counts: ReplyCounts) -> dict[str, Any]:
    """The figures of a run: first-audio latency (p50, p90) over the found ends, and the speculation counts."""
    latencies = [r.latency for r in results if r.latency is not None]
    return {
        "first_audio_p50": _median(latencies), "first_audio_p90": _p90(latencies),
        "answered": len(latencies), "unanswered": len(results) - len(latencies), **counts.as_json(),
    }
