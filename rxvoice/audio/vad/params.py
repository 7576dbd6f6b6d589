"""VAD parameters and states, with Pipecat's defaults and names."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from ..._seconds import check_seconds
from ...errors import ConfigurationError

__all__ = ["SMART_TURN_MIN_VOLUME", "SMART_TURN_STOP_SECS", "VADParams", "VADState"]

SMART_TURN_STOP_SECS = 0.16
"""VAD ``stop_secs`` of the recommended Smart Turn setup (:mod:`rxvoice.audio.recommended`).

Five Silero windows (160 ms). The VAD stop only marks a pause to judge; the
stop strategy (the model, the words and the silence) decides whether the
turn ended. With the words deciding, 0.12, 0.16 and 0.2 s gave the same ends
and cut-offs on the development and extra calls; 0.16 s still answers within
0.25 s of the end of speech when the transcript is in (Pipecat's 0.2 s does
not), and judges fewer mid-phrase pauses than 0.12 s. See
``docs/turn-taking.md`` ("The recommended setup").
"""

SMART_TURN_MIN_VOLUME = 0.5
"""VAD ``min_volume`` of the recommended setup: about -60 LUFS (``VADParams``' default, Pipecat's, is 0.6).

A caller at -38 dBFS is heard ~0.1 s sooner and a short "Hello?" at that level
reaches the VAD; the cost is that background talk down to about -58 dBFS does
too (0.6 holds back anything under about -50). Pink noise starts nothing at
either (``benchmarks/vad_gate.py``).
"""


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
            check_seconds(secs, f"VADParams.{name}", high=60.0)
