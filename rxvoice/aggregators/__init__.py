"""The conversation around the model: the user/assistant pair, the turn processor and their companions."""

from ..notify import Notifier
from ..summarization import AutoSummarizationConfig, SummaryConfig, SummaryRequest
from ..turns.reports import (
    EVENT_USER_BACKCHANNEL,
    EVENT_USER_MUTE_STARTED,
    EVENT_USER_MUTE_STOPPED,
    EVENT_USER_TURN_CLASSIFIED,
    EVENT_USER_TURN_IDLE,
    EVENT_USER_TURN_INFERENCE_TRIGGERED,
    EVENT_USER_TURN_MESSAGE_ADDED,
    EVENT_USER_TURN_RECOVERED,
    EVENT_USER_TURN_SPECULATION,
    EVENT_USER_TURN_STARTED,
    EVENT_USER_TURN_STOP_TIMEOUT,
    EVENT_USER_TURN_STOPPED,
)
from .assistant import AssistantAggregator
from .full_response import FullResponse
from .gates import Gated, GatedConfig, GatedContext, GateFunc
from .llm_text import LLMText
from .pair import Pair
from .reports import (
    EVENT_ASSISTANT_BACKCHANNEL,
    EVENT_ASSISTANT_THOUGHT,
    EVENT_ASSISTANT_TURN_STARTED,
    EVENT_ASSISTANT_TURN_STOPPED,
    EVENT_COMPLETION,
    EVENT_REQUEST_SUMMARIZATION,
    EVENT_SUMMARY_APPLIED,
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

__all__ = [
    "EVENT_ASSISTANT_BACKCHANNEL",
    "EVENT_ASSISTANT_THOUGHT",
    "EVENT_ASSISTANT_TURN_STARTED",
    "EVENT_ASSISTANT_TURN_STOPPED",
    "EVENT_COMPLETION",
    "EVENT_REQUEST_SUMMARIZATION",
    "EVENT_SUMMARY_APPLIED",
    "EVENT_USER_BACKCHANNEL",
    "EVENT_USER_MUTE_STARTED",
    "EVENT_USER_MUTE_STOPPED",
    "EVENT_USER_TURN_CLASSIFIED",
    "EVENT_USER_TURN_IDLE",
    "EVENT_USER_TURN_INFERENCE_TRIGGERED",
    "EVENT_USER_TURN_MESSAGE_ADDED",
    "EVENT_USER_TURN_RECOVERED",
    "EVENT_USER_TURN_SPECULATION",
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
