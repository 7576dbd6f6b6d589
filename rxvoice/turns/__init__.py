"""Turn-taking: who speaks when, decided by pure strategies.

See ``docs/turn-taking.md`` for each strategy with a marble diagram.
"""

from .analyzer import AnalyzerSession, EndOfTurnAnalyzer, EndOfTurnStream
from .completion import (
    Completion,
    CompletionRules,
    CompletionVerdict,
    WordRules,
    completion_rules,
    judge_completion,
    register_completion,
)
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
from .fused import FusedTurnState, FusedTurnStop
from .idle import IdleState
from .mute import (
    AlwaysUserMute,
    FirstSpeechUserMute,
    FunctionCallUserMute,
    MuteStrategy,
    MuteUntilFirstBotComplete,
)
from .offload import Offload, SchedulerOffload, inline_offload
from .processor import UserTurnProcessor
from .start import ExternalStart, MinWordsStart, TranscriptionStart, VADStart, WakePhraseStart
from .stop import (
    TRANSCRIPT_GRACE,
    Deferred,
    ExternalCompletionStop,
    ExternalStop,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
)
from .strategy import StartStrategy, StopStrategy, Strategy

__all__ = [
    "DEFAULT_INTERRUPTED_PROMPT",
    "TRANSCRIPT_GRACE",
    "AlwaysUserMute",
    "AnalyzerSession",
    "Completion",
    "CompletionRules",
    "CompletionVerdict",
    "Deferred",
    "EmptyUserTurnConfig",
    "EndOfTurnAnalyzer",
    "EndOfTurnStream",
    "ExternalCompletionStop",
    "ExternalStart",
    "ExternalStop",
    "ExternalStrategies",
    "FirstSpeechUserMute",
    "FunctionCallUserMute",
    "FusedTurnState",
    "FusedTurnStop",
    "IdleState",
    "MinWordsStart",
    "MuteStrategy",
    "MuteUntilFirstBotComplete",
    "Offload",
    "SchedulerOffload",
    "SpeechTimeoutStop",
    "StartStrategy",
    "StopStrategy",
    "Strategy",
    "TranscriptionStart",
    "TurnAnalyzerStop",
    "TurnController",
    "TurnState",
    "TurnsConfig",
    "UserTurnProcessor",
    "UserTurnStrategies",
    "VADStart",
    "WakePhraseStart",
    "WordRules",
    "completion_rules",
    "default_start_strategies",
    "default_stop_strategies",
    "inline_offload",
    "judge_completion",
    "register_completion",
]
