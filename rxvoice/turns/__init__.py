"""Turn-taking: who speaks when, decided by pure strategies."""

from .config import (
    DEFAULT_INTERRUPTED_PROMPT,
    EmptyUserTurnConfig,
    ExternalStrategies,
    TurnsConfig,
    UserTurnStrategies,
    default_start_strategies,
    default_stop_strategies,
)
from .controller import TurnController, TurnState
from .idle import IdleState
from .mute import (
    AlwaysUserMute,
    FirstSpeechUserMute,
    FunctionCallUserMute,
    MuteStrategy,
    MuteUntilFirstBotComplete,
)
from .start import ExternalStart, MinWordsStart, TranscriptionStart, VADStart
from .stop import TRANSCRIPT_GRACE, Deferred, ExternalCompletionStop, ExternalStop, SpeechTimeoutStop
from .strategy import StartStrategy, StopStrategy, Strategy

__all__ = [
    "DEFAULT_INTERRUPTED_PROMPT",
    "TRANSCRIPT_GRACE",
    "AlwaysUserMute",
    "Deferred",
    "EmptyUserTurnConfig",
    "ExternalCompletionStop",
    "ExternalStart",
    "ExternalStop",
    "ExternalStrategies",
    "FirstSpeechUserMute",
    "FunctionCallUserMute",
    "IdleState",
    "MinWordsStart",
    "MuteStrategy",
    "MuteUntilFirstBotComplete",
    "SpeechTimeoutStop",
    "StartStrategy",
    "StopStrategy",
    "Strategy",
    "TranscriptionStart",
    "TurnController",
    "TurnState",
    "TurnsConfig",
    "UserTurnStrategies",
    "VADStart",
    "default_start_strategies",
    "default_stop_strategies",
]
