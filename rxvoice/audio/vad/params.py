"""VAD parameters and states, with Pipecat's defaults and names."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from ...errors import ConfigurationError

__all__ = ["SMART_TURN_MIN_VOLUME", "SMART_TURN_STOP_SECS", "VADParams", "VADState"]

SMART_TURN_STOP_SECS = 0.16
"""VAD ``stop_secs`` for setups where an end-of-turn model (Smart Turn) decides.

Four Silero windows (128 ms): the VAD stop then only marks a pause to judge,
and the model (with the transcript gate of the stop strategy) decides whether
the turn ended, so the answer can start ~0.2 s after the last word instead of
~0.3 s. See ``docs/audio.md`` ("Answering within 0.25 s") for the trade-off.
"""

SMART_TURN_MIN_VOLUME = 0.5
"""VAD ``min_volume`` of the recommended Smart Turn setup (:func:`rxvoice.audio.recommended.recommended_turn_setup`)."""


class VADState(enum.Enum):
    """Where the analyzer is in a user's utterance.

    STARTING and STOPPING are the debounce states: speech (or silence) has been
    seen but not yet for long enough to count.
    """

    QUIET = 1
    STARTING = 2
    SPEAKING = 3
    STOPPING = 4


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"VADParams.{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigurationError(f"VADParams.{name} must be finite, got {value!r}")
    return number


@dataclass(frozen=True, slots=True)
class VADParams:
    """How sure, how loud and how long speech (or silence) must be to count.

    Attributes:
        confidence: minimum model confidence (0..1) for a window to be speech.
        start_secs: speech needed before QUIET becomes SPEAKING (debounces clicks).
        stop_secs: silence needed before SPEAKING becomes QUIET. 0.2 s suits an
            end-of-turn model that decides afterwards; use ~0.8 s without one.
        min_volume: minimum smoothed loudness (0..1, see ``volume.py``) for a
            window to be speech; 0.6 ≈ -50 LUFS. 0 disables the volume gate.
    """

    confidence: float = 0.7
    start_secs: float = 0.2
    stop_secs: float = 0.2
    min_volume: float = 0.6

    def __post_init__(self) -> None:
        confidence = _number("confidence", self.confidence)
        start_secs = _number("start_secs", self.start_secs)
        stop_secs = _number("stop_secs", self.stop_secs)
        min_volume = _number("min_volume", self.min_volume)
        if not 0.0 <= confidence <= 1.0:
            raise ConfigurationError(f"VADParams.confidence must be in [0, 1], got {confidence}")
        if not 0.0 <= min_volume <= 1.0:
            raise ConfigurationError(f"VADParams.min_volume must be in [0, 1], got {min_volume}")
        for name, secs in (("start_secs", start_secs), ("stop_secs", stop_secs)):
            if not 0.0 <= secs <= 60.0:
                raise ConfigurationError(f"VADParams.{name} must be in [0, 60] s, got {secs}")
