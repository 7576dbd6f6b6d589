"""What the turn machine reports through events: plain, immutable values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from .reasons import TurnEndReason

__all__ = [
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
    "UserTurnRecovered",
    "UserTurnStopped",
    "iso8601",
]

# The events a user turn raises (the aggregator, UserTurnProcessor and the turn detector raise them by these names).
EVENT_USER_TURN_STARTED = "on_user_turn_started"
EVENT_USER_TURN_STOPPED = "on_user_turn_stopped"
EVENT_USER_TURN_INFERENCE_TRIGGERED = "on_user_turn_inference_triggered"
EVENT_USER_TURN_STOP_TIMEOUT = "on_user_turn_stop_timeout"
EVENT_USER_TURN_IDLE = "on_user_turn_idle"
EVENT_USER_TURN_MESSAGE_ADDED = "on_user_turn_message_added"
EVENT_USER_TURN_RECOVERED = "on_user_turn_recovered"
EVENT_USER_MUTE_STARTED = "on_user_mute_started"
EVENT_USER_MUTE_STOPPED = "on_user_mute_stopped"
EVENT_USER_TURN_SPECULATION = "on_user_turn_speculation"
"""A speculative request was asked, released, dropped or refused.

The payload is a :class:`~rxvoice.turns.speculation.SpeculationReport`.
"""
EVENT_USER_TURN_CLASSIFIED = "on_user_turn_classified"
"""A turn-completion classifier judged a turn end (:class:`~rxvoice.turns.classifier.TurnClassified`)."""
EVENT_USER_BACKCHANNEL = "on_user_backchannel"
"""The user said a continuer while the bot spoke (Pipecat's name; the payload is the ``UserBackchannelFrame``)."""


_SECONDS: dict[float, str] = {}
"""``YYYY-MM-DDTHH:MM:SS`` of the whole seconds seen lately (a session's stamps share them)."""
_SANE = 1e10
"""Seconds from the epoch (either way) within which a stamp is written out; others take ``datetime``'s way."""


@lru_cache(maxsize=64)
def iso8601(seconds: float) -> str:
    """Scheduler time (seconds since the epoch) as an ISO 8601 UTC timestamp.

    Exactly ``datetime.fromtimestamp(seconds, tz=UTC).isoformat()``, written
    out: the microseconds rounded as ``fromtimestamp`` rounds them (the
    fraction's, half to even), the whole seconds' text kept.
    """
    if type(seconds) is not float or not -_SANE < seconds < _SANE:
        return datetime.fromtimestamp(seconds, tz=UTC).isoformat()
    fraction, whole = math.modf(seconds)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros -= 1_000_000
        whole += 1.0
    elif micros < 0:
        micros += 1_000_000
        whole -= 1.0
    text = _SECONDS.get(whole)
    if text is None:
        if len(_SECONDS) >= 256:
            _SECONDS.clear()
        text = _SECONDS[whole] = datetime.fromtimestamp(int(whole), tz=UTC).isoformat()[:19]
    return f"{text}.{micros:06d}+00:00" if micros else f"{text}+00:00"


@dataclass(frozen=True, slots=True)
class UserTurnStopped:
    """A user turn that has just ended.

    ``strategy`` decided it (``None`` when the watchdog closed it or the
    session ended); ``content`` is everything said in the turn, including what
    an early inference already answered (empty for a stage that keeps no
    words); ``timestamp`` is when it began; ``reason`` is why it ended, as the
    deciding strategy (or the machine, for the watchdog and the session's end)
    reported it (``None`` from a strategy that reports none).
    """

    strategy: Any
    content: str
    timestamp: str
    user_id: str = ""
    reason: TurnEndReason | None = None


@dataclass(frozen=True, slots=True)
class UserTurnRecovered:
    """A turn that ended too soon, reopened: the user spoke again before the bot said anything.

    ``content`` is what the turn ended with (the continuation will join it);
    ``after`` is how many seconds after the false end the user resumed;
    ``timestamp`` is when the reopened turn first began.
    """

    content: str
    after: float
    timestamp: str
