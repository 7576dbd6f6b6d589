"""What the aggregators report through their events: plain, immutable values."""

from __future__ import annotations

from dataclasses import dataclass

from ..turns.reports import UserTurnRecovered, UserTurnStopped, iso8601

# The events the assistant side, the summarizer and FullResponse raise.
EVENT_ASSISTANT_TURN_STARTED = "on_assistant_turn_started"
EVENT_ASSISTANT_TURN_STOPPED = "on_assistant_turn_stopped"
EVENT_ASSISTANT_THOUGHT = "on_assistant_thought"
EVENT_REQUEST_SUMMARIZATION = "on_request_summarization"
EVENT_SUMMARY_APPLIED = "on_summary_applied"
EVENT_COMPLETION = "on_completion"
EVENT_ASSISTANT_BACKCHANNEL = "on_assistant_backchannel"
"""The bot said a continuer during the user's turn (Pipecat's name; the payload is the ``BotBackchannelFrame``)."""

__all__ = [
    "EVENT_ASSISTANT_BACKCHANNEL",
    "EVENT_ASSISTANT_THOUGHT",
    "EVENT_ASSISTANT_TURN_STARTED",
    "EVENT_ASSISTANT_TURN_STOPPED",
    "EVENT_COMPLETION",
    "EVENT_REQUEST_SUMMARIZATION",
    "EVENT_SUMMARY_APPLIED",
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
