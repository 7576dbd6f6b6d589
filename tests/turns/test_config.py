"""Configuration: the defaults, and misconfiguration refused at construction (never a hang at run time)."""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice.aggregators import Pair, UserTurnProcessor, VADConfig
from rxvoice.errors import ConfigurationError
from rxvoice.pipeline import SchedulerOffload
from rxvoice.turns import (
    AlwaysUserMute,
    EmptyUserTurnConfig,
    ExternalStart,
    ExternalStop,
    ExternalStrategies,
    SpeechTimeoutStop,
    TranscriptionStart,
    TurnsConfig,
    UserTurnStrategies,
    VADStart,
    default_start_strategies,
    default_stop_strategies,
)

from .helpers import FakeVAD


def test_defaults() -> None:
    """Start: VAD, then transcription; stop: a 0.6 s speech timeout; 5 s watchdog; idle off; recovery on."""
    cfg = TurnsConfig()
    start, stop = cfg.chains()
    assert start == (VADStart(), TranscriptionStart()) == default_start_strategies()
    assert stop == (SpeechTimeoutStop(0.6),) == default_stop_strategies()
    assert cfg.stop_timeout == 5.0 and cfg.idle_timeout is None and cfg.late_transcript_window == 1.0
    assert cfg.empty_turn == EmptyUserTurnConfig() and cfg.empty_turn.max_consecutive_recoveries == 1
    assert not cfg.pinned


def test_none_chains_mean_defaults() -> None:
    """None for a chain takes its defaults; the other chain is kept."""
    start, stop = TurnsConfig(stop=[ExternalStop()]).chains()
    assert start == default_start_strategies() and stop == (ExternalStop(),)


def test_external_strategies() -> None:
    """ExternalStrategies() is external start + external stop and remembers the interruption setting."""
    s = ExternalStrategies(enable_interruptions=False)
    assert s.resolved() == ((ExternalStart(enable_interruptions=False),), (ExternalStop(),))
    assert s.external_interruptions is False
    assert TurnsConfig(strategies=s).pinned


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stop": []}, "no stop strategy"),
        ({"start": []}, "no start strategy"),
        ({"strategies": UserTurnStrategies(stop=())}, "no stop strategy"),
        ({"start": [SpeechTimeoutStop()]}, "not a start strategy"),
        ({"stop": [VADStart()]}, "not a stop strategy"),
        ({"stop_timeout": -1}, "stop_timeout"),
        ({"stop_timeout": 0}, "stop_timeout"),
        ({"stop_timeout": float("nan")}, "stop_timeout"),
        ({"stop_timeout": float("inf")}, "stop_timeout"),
        ({"stop_timeout": "5"}, "stop_timeout"),
        ({"idle_timeout": -0.5}, "idle_timeout"),
        ({"late_transcript_window": -1}, "late_transcript_window"),
        ({"on_idle": "call me"}, "on_idle"),
        ({"mute": ["always"]}, "not a mute strategy"),
        ({"strategies": ExternalStrategies(), "stop": [ExternalStop()]}, "either"),
        ({"strategies": "external"}, "UserTurnStrategies"),
        ({"start": VADStart()}, "list"),
        ({"empty_turn": "yes"}, "EmptyUserTurnConfig"),
    ],
)
def test_misconfiguration_is_refused_at_construction(kwargs: dict[str, Any], match: str) -> None:
    """Empty chains, wrong kinds, negative or non-finite timeouts: a ConfigurationError naming the problem."""
    with pytest.raises(ConfigurationError, match=match):
        TurnsConfig(**kwargs)


def test_empty_turn_config_validation() -> None:
    """A negative recovery budget is refused."""
    with pytest.raises(ConfigurationError, match="max_consecutive_recoveries"):
        EmptyUserTurnConfig(max_consecutive_recoveries=-1)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "1"])
def test_vad_config_validation(bad: Any) -> None:
    """VADConfig refuses a bad audio idle timeout and something that is not a VAD analyzer."""
    with pytest.raises(ConfigurationError, match="audio_idle_timeout"):
        VADConfig(FakeVAD(), audio_idle_timeout=bad)
    with pytest.raises(ConfigurationError, match="VAD analyzer"):
        VADConfig(object())


def test_pair_and_processor_validate_their_arguments() -> None:
    """Pair and UserTurnProcessor refuse a turns or mute argument of the wrong type."""
    with pytest.raises(ConfigurationError):
        Pair(turns={"stop_timeout": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Pair(mute=["always"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError):
        UserTurnProcessor(turns={"stop_timeout": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        UserTurnProcessor(mute=[AlwaysUserMute, "x"])  # type: ignore[list-item]


def test_scheduler_offload_validation() -> None:
    """A negative model latency is refused."""
    with pytest.raises(ConfigurationError, match="latency"):
        SchedulerOffload(object(), -1)  # type: ignore[arg-type]
