"""Smart Turn's small value types: the verdict, its threshold and the buffering parameters.

Kept apart from the analyzer, the buffer and the stream so each can use them
without importing the others.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from ...errors import ConfigurationError

__all__ = ["COMPLETE_THRESHOLD", "EndOfTurnState", "SmartTurnParams"]

COMPLETE_THRESHOLD = 0.5
"""The turn is complete iff Smart Turn's probability is above this."""


class EndOfTurnState(enum.Enum):
    """Whether the user's turn is over."""

    INCOMPLETE = 1
    COMPLETE = 2


def _seconds(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"SmartTurnParams.{name} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise ConfigurationError(f"SmartTurnParams.{name} must be in [{low}, {high}], got {value}")
    return float(value)


@dataclass(frozen=True, slots=True)
class SmartTurnParams:
    """Buffering parameters, with Pipecat's defaults.

    Attributes:
        stop_secs: silence after speech that ends the turn whatever the model
            says (the safety net).
        pre_speech_ms: audio kept before the detected speech start.
        max_duration_secs: the most audio the model is shown (it takes 8 s).
    """

    stop_secs: float = 3.0
    pre_speech_ms: float = 500.0
    max_duration_secs: float = 8.0

    def __post_init__(self) -> None:
        _seconds("stop_secs", self.stop_secs, 0.0, 600.0)
        _seconds("pre_speech_ms", self.pre_speech_ms, 0.0, 60_000.0)
        _seconds("max_duration_secs", self.max_duration_secs, 0.01, 600.0)
