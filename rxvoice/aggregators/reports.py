"""What the aggregators report through their events: plain, immutable values."""

from __future__ import annotations

from dataclasses import dataclass

from ..turns.reports import UserTurnRecovered, UserTurnStopped, iso8601

__all__ = [
    "AssistantThought",
    "AssistantTurnStopped",
    "Completion",
    "SummaryApplied",
    "UserTurnMessageAdded",
    "UserTurnRecovered",
    "UserTurnStopped",
    "iso8601",
]


@dataclass(frozen=True, slots=True)
class UserTurnMessageAdded:
    """A user message written to the conversation (this write's segment, not the whole turn).

    When a recovered turn's continuation joins the message it reopened,
    ``content`` is the continuation (the message now reads both).
    """

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
