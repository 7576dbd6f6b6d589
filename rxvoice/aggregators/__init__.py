"""The conversation around the model: the user/assistant pair, the turn processor and their companions."""

from ..notify import Notifier
from ..summarization import AutoSummarizationConfig, SummaryConfig, SummaryRequest
from .assistant import AssistantAggregator
from .full_response import FullResponse
from .gates import Gated, GatedConfig, GatedContext, GateFunc
from .llm_text import LLMText
from .pair import Pair
from .reports import (
    AssistantThought,
    AssistantTurnStopped,
    Completion,
    SummaryApplied,
    UserTurnMessageAdded,
    UserTurnRecovered,
    UserTurnStopped,
)
from .sentence import Sentence
from .summarizer import Summarizer
from .turn_processor import UserTurnProcessor
from .user import UserAggregator
from .vad_config import VADConfig

EVENT_USER_TURN_STARTED = "on_user_turn_started"
EVENT_USER_TURN_STOPPED = "on_user_turn_stopped"
EVENT_USER_TURN_INFERENCE_TRIGGERED = "on_user_turn_inference_triggered"
EVENT_USER_TURN_STOP_TIMEOUT = "on_user_turn_stop_timeout"
EVENT_USER_TURN_IDLE = "on_user_turn_idle"
EVENT_USER_TURN_MESSAGE_ADDED = "on_user_turn_message_added"
EVENT_USER_MUTE_STARTED = "on_user_mute_started"
EVENT_USER_MUTE_STOPPED = "on_user_mute_stopped"
EVENT_ASSISTANT_TURN_STARTED = "on_assistant_turn_started"
EVENT_ASSISTANT_TURN_STOPPED = "on_assistant_turn_stopped"
EVENT_ASSISTANT_THOUGHT = "on_assistant_thought"
EVENT_REQUEST_SUMMARIZATION = "on_request_summarization"
EVENT_SUMMARY_APPLIED = "on_summary_applied"
EVENT_COMPLETION = "on_completion"

__all__ = [
    "EVENT_ASSISTANT_THOUGHT",
    "EVENT_ASSISTANT_TURN_STARTED",
    "EVENT_ASSISTANT_TURN_STOPPED",
    "EVENT_COMPLETION",
    "EVENT_REQUEST_SUMMARIZATION",
    "EVENT_SUMMARY_APPLIED",
    "EVENT_USER_MUTE_STARTED",
    "EVENT_USER_MUTE_STOPPED",
    "EVENT_USER_TURN_IDLE",
    "EVENT_USER_TURN_INFERENCE_TRIGGERED",
    "EVENT_USER_TURN_MESSAGE_ADDED",
    "EVENT_USER_TURN_STARTED",
    "EVENT_USER_TURN_STOPPED",
    "EVENT_USER_TURN_STOP_TIMEOUT",
    "AssistantAggregator",
    "AssistantThought",
    "AssistantTurnStopped",
    "AutoSummarizationConfig",
    "Completion",
    "FullResponse",
    "GateFunc",
    "Gated",
    "GatedConfig",
    "GatedContext",
    "LLMText",
    "Notifier",
    "Pair",
    "Sentence",
    "Summarizer",
    "SummaryApplied",
    "SummaryConfig",
    "SummaryRequest",
    "UserAggregator",
    "UserTurnMessageAdded",
    "UserTurnProcessor",
    "UserTurnRecovered",
    "UserTurnStopped",
    "VADConfig",
]
