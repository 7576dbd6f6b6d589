"""The one check for a number of seconds, used wherever rxvoice takes one (a timeout, a delay, a window).

A duration is a real number (not a bool, not a string), finite, in range:
``>= 0`` (or ``> 0``) and at most :data:`MAX_SECONDS` (one day) unless the
caller names a tighter range. Anything else fails where it was written, as
the caller's error type (``ConfigurationError`` for settings,
``InvalidFrameFieldError`` for a frame's field), naming the setting. A timer
armed with ``inf`` or ``1e308`` seconds would overflow the scheduler; one day
is far past any turn, call or answer.
"""

from __future__ import annotations

import math

from .errors import ConfigurationError

__all__ = ["MAX_SECONDS", "check_seconds", "optional_seconds"]

MAX_SECONDS = 86_400.0
"""The longest duration rxvoice takes (one day)."""


def check_seconds(
    value: object, name: str, *, positive: bool = False, low: float = 0.0, high: float = MAX_SECONDS,
    error: type[Exception] = ConfigurationError,
) -> float:
    """``value`` as a float of seconds, or ``error`` naming ``name`` and the range it must lie in.

    Args:
        value: What the caller was given.
        name: The setting, as the user wrote it (``"SpeechTimeoutStop.user_speech_timeout"``).
        positive: ``0`` is refused too.
        low: The least value allowed (``0`` unless the setting needs more).
        high: The greatest value allowed (one day unless the setting needs less).
        error: The exception type to raise.
    """
    t = type(value)
    if t is float or t is int:
        number = float(value)  # type: ignore[arg-type]
        if (number > low if positive else number >= low) and number <= high:
            return number
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and (number > low if positive else number >= low) and number <= high:
            return number
    lower = f"> {low:g}" if positive else f">= {low:g}"
    raise error(f"{name} must be a number of seconds {lower} and at most {high:g}, got {value!r}")


def optional_seconds(
    value: object, name: str, *, positive: bool = False, low: float = 0.0, high: float = MAX_SECONDS,
    error: type[Exception] = ConfigurationError,
) -> float | None:
    """:func:`check_seconds`, with ``None`` allowed (and returned): the setting is off."""
    if value is None:
        return None
    return check_seconds(value, name, positive=positive, low=low, high=high, error=error)
