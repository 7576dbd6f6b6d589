"""Judging each pause of a labelled recording against what a turn-taking setup did."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .eval_items import Item
from .observations import Turn
from .replies import ReplyCounts, ReplyResult, reply_summary
from .runner import Analysis
from .setups import Setup

__all__ = ["BOT_DELAY", "HEARD", "PauseResult", "RunResult", "Totals", "judge", "totals"]

HEARD = 0.25
"""Seconds into a segment before a VAD can have heard it (Silero's 0.2 s start, a frame): a turn that
ends that early in a segment is judged with the pause before it."""
BOT_DELAY = 0.6
"""Seconds from a turn end to the bot's first audio (a fast model plus TTS): a caller who resumes
sooner never hears the cut-off."""
_EPS = 0.0015


@dataclass(frozen=True)
class PauseResult:
    """What happened in the pause after one segment.

    Attributes:
        index: the segment (1, 2, ...).
        text: its words.
        end: when it ended (s).
        should_answer: its label (a listener would take the turn).
        answered_at: when a turn ended in the pause (``None``: no answer).
        outcome: ``found``, ``missed``, ``cut-off`` or ``held``.
        latency: ``answered_at - end`` for an answer.
        cause: the deciding reason's short form (``model``, ``words``, ...).
        reason: the deciding reason in words.
        recovered: a cut-off the caller never heard: they resumed before the bot's first audio
            (``answered_at + bot_delay``), or the turn ended inside their speech.
        resumed_at: when the caller went on after this segment (``None``: they did not).
    """

    index: int
    text: str
    end: float
    should_answer: bool
    answered_at: float | None
    outcome: str
    latency: float | None
    cause: str | None = None
    reason: str | None = None
    recovered: bool = False
    resumed_at: float | None = None

    @property
    def audible(self) -> bool:
        """A cut-off the caller heard: the bot started speaking before they went on."""
        return self.outcome == "cut-off" and not self.recovered


def judge(item: Item, analysis: Analysis, *, bot_delay: float = BOT_DELAY) -> list[PauseResult]:
    """Every segment's pause, judged against its label (``bot_delay``: see :data:`BOT_DELAY`)."""
    segments = item.transcript.segments
    decided = [t for t in analysis.turns if t.cause != "end"]
    out: list[PauseResult] = []
    for i, seg in enumerate(segments):
        if i + 1 < len(segments):
            until = segments[i + 1].start
        elif item.resume_after is not None:
            until = seg.end + item.resume_after
        else:
            until = math.inf
        resumed = None if math.isinf(until) else until
        # No VAD hears speech before HEARD seconds of it: an answer that early still belongs to the pause.
        inside = [t for t in decided if seg.start + (HEARD if i else 0.0) + _EPS < t.ended < seg.end - _EPS]
        after = [t for t in decided if seg.end - _EPS <= t.ended < until + HEARD]
        hits = inside or after
        hit: Turn | None = hits[0] if hits else None
        if inside or (after and not seg.turn_end):
            outcome = "cut-off"
        elif after and after[0].ended < until:
            outcome = "found"
        else:
            outcome = "missed" if seg.turn_end else "held"  # an end answered after the caller went on: missed
        latency = None if hit is None else round(hit.ended - seg.end, 6)
        recovered = outcome == "cut-off" and hit is not None and (
            bool(inside) or (resumed is not None and resumed < hit.ended + bot_delay - _EPS)
        )
        out.append(PauseResult(
            i + 1, seg.text, seg.end, seg.turn_end, None if hit is None else hit.ended, outcome, latency,
            None if hit is None else hit.cause, None if hit is None else hit.reason, recovered, resumed,
        ))
    return out


@dataclass(frozen=True)
class Totals:
    """Counts over many pauses."""

    turn_ends: int
    found: int
    missed: int
    pauses: int
    cut_offs: int
    recovered: int
    latency_p50: float | None
    latency_p90: float | None
    audible: int = 0

    @property
    def found_rate(self) -> float:
        return self.found / self.turn_ends if self.turn_ends else 1.0

    @property
    def cut_off_rate(self) -> float:
        return self.cut_offs / self.pauses if self.pauses else 0.0

    @property
    def audible_rate(self) -> float:
        return self.audible / self.pauses if self.pauses else 0.0

    def as_json(self) -> dict[str, Any]:
        """The totals under their documented keys (``docs/turn-taking.md``, "Measuring it")."""
        return {
            "turn_ends": self.turn_ends, "found": self.found, "missed": self.missed, "pauses": self.pauses,
            "cut_offs": self.cut_offs, "recovered_cut_offs": self.recovered, "audible_cut_offs": self.audible,
            "found_rate": round(self.found_rate, 4), "cut_off_rate": round(self.cut_off_rate, 4),
            "audible_rate": round(self.audible_rate, 4),
            "latency_p50": self.latency_p50, "latency_p90": self.latency_p90,
        }


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1], 3)


def totals(pauses: Iterable[PauseResult]) -> Totals:
    """The counts and the latency percentiles (found ends only)."""
    ps = list(pauses)
    ends = [p for p in ps if p.should_answer]
    mids = [p for p in ps if not p.should_answer]
    latencies = [p.latency for p in ends if p.outcome == "found" and p.latency is not None]
    return Totals(
        len(ends), sum(p.outcome == "found" for p in ends), sum(p.outcome == "missed" for p in ends),
        len(mids), sum(p.outcome == "cut-off" for p in ps), sum(p.recovered for p in ps),
        _quantile(latencies, 0.5), _quantile(latencies, 0.9), sum(p.audible for p in ps),
    )


@dataclass
class RunResult:
    """One setup over every recording."""

    setup: Setup
    params: dict[str, float]
    recordings: list[tuple[Item, list[PauseResult]]] = field(default_factory=list)
    errors: list[tuple[Path, str]] = field(default_factory=list)
    replies: list[tuple[list[ReplyResult], ReplyCounts]] = field(default_factory=list)
    """With ``--first-token-delay``: each recording's first-audio latencies and speculation counts."""

    @property
    def totals(self) -> Totals:
        return totals(p for _, ps in self.recordings for p in ps)

    def reply_figures(self) -> dict[str, Any] | None:
        """The end of speech to the bot's first audio and the speculation counts, over every recording."""
        if not self.replies:
            return None
        results = [r for rs, _ in self.replies for r in rs]
        counts = sum((c for _, c in self.replies), ReplyCounts())
        return reply_summary(results, counts)


