"""Turn-taking decisions: who speaks when, decided by pure strategies and one turn machine.

This package holds the rules only (it imports nothing but frames, the
context and errors): strategies, the turn controller and machine, mute,
idle, the late-tail rule, service recommendations. The stages that run the
machine live with the stages: the user aggregator
(:class:`rxvoice.aggregators.UserAggregator`), :class:`rxvoice.aggregators.UserTurnProcessor`
and the turn-taking detector (:class:`rxvoice.audio.turn.TurnTakingDetector`).
See ``docs/turn-taking.md`` for each strategy with a marble diagram.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .._moved import moved_names
from .analyzer import AnalyzerSession, EndOfTurnAnalyzer, EndOfTurnStream
from .backchannel import BackchannelStart, is_continuer, register_backchannels
from .classifier import (
    ClassifierStop,
    ClassifyRequest,
    CompletionClassifier,
    TurnClassified,
    TurnCompletion,
    TurnCompletionClassifier,
)
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
    RECOVERY_WINDOW,
    EmptyUserTurnConfig,
    ExternalStrategies,
    TurnsConfig,
    UserTurnStrategies,
    default_start_strategies,
    default_stop_strategies,
)
from .controller import TurnController
from .fused import FusedTurnState, FusedTurnStop
from .idle import IdleState
from .machine import RecordingPort, ResultBack, TimerFired, TurnMachine, TurnPort, TurnScan, TurnState, Words, turn_step
from .mute import (
    AlwaysUserMute,
    FirstSpeechUserMute,
    FunctionCallUserMute,
    MuteStrategy,
    MuteUntilFirstBotComplete,
)
from .reasons import REASON_KINDS, TurnEndReason
from .speculation import Speculation, SpeculationReport
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
from .words_wait import WordsState, WordsWait

__all__ = [
    "DEFAULT_INTERRUPTED_PROMPT",
    "REASON_KINDS",
    "RECOVERY_WINDOW",
    "TRANSCRIPT_GRACE",
    "AlwaysUserMute",
    "AnalyzerSession",
    "BackchannelStart",
    "ClassifierStop",
    "ClassifyRequest",
    "Completion",
    "CompletionClassifier",
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
    "RecordingPort",
    "ResultBack",
    "Speculation",
    "SpeculationReport",
    "SpeechTimeoutStop",
    "StartStrategy",
    "StopStrategy",
    "Strategy",
    "TimerFired",
    "TranscriptionStart",
    "TurnAnalyzerStop",
    "TurnClassified",
    "TurnCompletion",
    "TurnCompletionClassifier",
    "TurnController",
    "TurnEndReason",
    "TurnMachine",
    "TurnPort",
    "TurnScan",
    "TurnState",
    "TurnsConfig",
    "UserTurnStrategies",
    "VADStart",
    "WakePhraseStart",
    "WordRules",
    "Words",
    "WordsState",
    "WordsWait",
    "completion_rules",
    "default_start_strategies",
    "default_stop_strategies",
    "is_continuer",
    "judge_completion",
    "register_backchannels",
    "register_completion",
    "turn_step",
]


# Where heavy work runs is the runtime's business: it lives in rxvoice.pipeline.offload (and rxvoice.workers).
_moved_offload = moved_names(__name__, "rxvoice.pipeline.offload", {"Offload", "SchedulerOffload", "inline_offload"},
                             also="(also in rxvoice.workers)", stacklevel=3)


def __getattr__(name: str) -> Any:
    # UserTurnProcessor is a stage, and stages sit above the decisions: it lives in
    # rxvoice.aggregators. The old spelling keeps working, with a warning.
    if name == "UserTurnProcessor":
        warnings.warn(
            "rxvoice.turns.UserTurnProcessor moved to rxvoice.aggregators.UserTurnProcessor "
            "(the turns package holds the decisions only); the old name goes in 0.3",
            DeprecationWarning, stacklevel=2,
        )
        return importlib.import_module("rxvoice.aggregators").UserTurnProcessor
    return _moved_offload(name)
