"""What the aggregators report through their events: plain, immutable values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

__all__ = [
    "AssistantThought",
    "AssistantTurnStopped",
    "Completion",
    "SummaryApplied",
    "UserTurnMessageAdded",
    "UserTurnStopped",
    "iso8601",
]


@lru_cache(maxsize=64)
def iso8601(seconds: float) -> str:
    """Scheduler time (seconds since the epoch) as an ISO 8601 UTC timestamp."""
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


@dataclass(frozen=True, slots=True)
class UserTurnStopped:
    """A user turn that has just ended.

    ``strategy`` decided it (``None`` when the watchdog closed it or the
    session ended); ``content`` is everything said in the turn, including what
    an early inference already answered; ``timestamp`` is when it began.
    """

    strategy: Any
    content: str
    timestamp: str
    user_id: str = ""


@dataclass(frozen=True, slots=True)
class UserTurnMessageAdded:
    """A user message written to the conversation (this write's segment, not the whole turn)."""

    content: str
    timestamp: str
    user_id: str = ""


@dataclass(frozen=True, slots=True)
class AssistantTurnStopped:
    """A bot turn that has just ended: what it said (markers stripped), whether it was cut off."""

    content: str
    interrupted: bool
    timestamp: str


@dataclass(frozen=True, slots=True)
class AssistantThought:
    """One completed thought of a reasoning model, and when it began."""

    content: str
    timestamp: str


@dataclass(frozen=True, slots=True)
class Completion:
    """A gathered model response; ``completed`` is ``False`` when an interruption cut it short."""

    text: str
    completed: bool


@dataclass(frozen=True, slots=True)
class SummaryApplied:
    """A compression applied to the conversation."""

    original_message_count: int
    new_message_count: int
    summarized_message_count: int
    preserved_message_count: int
