"""Turn-taking configuration: which strategies decide, and the timeouts around them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._seconds import optional_seconds
from ..errors import ConfigurationError
from .mute import MuteStrategy
from .speculation import Speculation
from .start import ExternalStart, TranscriptionStart, VADStart
from .stop import ExternalStop, SpeechTimeoutStop
from .strategy import StartStrategy, StopStrategy, Strategy

__all__ = [
    "DEFAULT_INTERRUPTED_PROMPT",
    "RECOVERY_WINDOW",
    "EmptyUserTurnConfig",
    "ExternalStrategies",
    "TurnsConfig",
    "UserTurnStrategies",
    "default_start_strategies",
    "default_stop_strategies",
]

RECOVERY_WINDOW = 1.0
"""Seconds after a turn's end during which resumed speech (the bot still silent) reopens it."""


def default_start_strategies() -> tuple[StartStrategy[Any], ...]:
    """VAD start, then transcription start (for speech the VAD did not hear, and text input)."""
    return (VADStart(), TranscriptionStart())


def default_stop_strategies() -> tuple[StopStrategy[Any], ...]:
    """A 0.6 s speech timeout that waits for the transcript."""
    return (SpeechTimeoutStop(),)


@dataclass(frozen=True)
class UserTurnStrategies:
    """The start and stop chains. ``None`` means the defaults; an empty chain is an error."""

    start: Sequence[StartStrategy[Any]] | None = None
    stop: Sequence[StopStrategy[Any]] | None = None
    external_interruptions: bool | None = None

    def resolved(self) -> tuple[tuple[StartStrategy[Any], ...], tuple[StopStrategy[Any], ...]]:
        """The chains with defaults filled in, validated."""
        _chain("start", self.start)
        _chain("stop", self.stop)
        start = default_start_strategies() if self.start is None else tuple(self.start)
        stop = default_stop_strategies() if self.stop is None else tuple(self.stop)
        if not start:
            raise ConfigurationError("no start strategy: a turn could never begin (pass None for the defaults)")
        if not stop:
            raise ConfigurationError("no stop strategy: a turn could never end (pass None for the defaults)")
        for a in start:
            if not isinstance(a, StartStrategy):
                raise ConfigurationError(f"{a!r} is not a start strategy")
        for b in stop:
            if not isinstance(b, StopStrategy):
                raise ConfigurationError(f"{b!r} is not a stop strategy")
        return start, stop


class ExternalStrategies(UserTurnStrategies):
    """Adopt turn decisions made elsewhere (a :class:`UserTurnProcessor`, a service's proposals).

    The chains are ``[ExternalStart]`` and ``[ExternalStop]``: the turn starts
    and ends when an announced ``UserStartedSpeakingFrame`` /
    ``UserStoppedSpeakingFrame`` (or a proposal) says so.

    Args:
        enable_interruptions: Whether an adopted start interrupts the bot
            (off when whoever decided the turn already did).
    """

    def __init__(self, *, enable_interruptions: bool = True) -> None:
        super().__init__(
            start=(ExternalStart(enable_interruptions=enable_interruptions),),
            stop=(ExternalStop(),),
            external_interruptions=enable_interruptions,
        )

    def __repr__(self) -> str:
        return f"ExternalStrategies(enable_interruptions={self.external_interruptions})"


DEFAULT_INTERRUPTED_PROMPT = (
    "The user may have said something while you were responding, but it was not recognized. "
    "Your response was cut off there, and the conversation only includes the part they heard, "
    "which may be none of it. Briefly ask them to repeat what they said, and repeat any question "
    "of yours they may have missed."
)


@dataclass(frozen=True)
class EmptyUserTurnConfig:
    """What to do when a user turn ends with no words (the VAD heard something, the STT nothing).

    If that turn interrupted the bot, the bot's answer was cut off for
    nothing: a developer message (``interrupted_prompt``) asks the model to
    have the user repeat, at most ``max_consecutive_recoveries`` times in a
    row. An empty turn that interrupted nothing (a cough while the bot was
    quiet) runs the model only if ``idle_prompt`` is set.
    """

    interrupted_prompt: str | None = DEFAULT_INTERRUPTED_PROMPT
    idle_prompt: str | None = None
    max_consecutive_recoveries: int = 1

    def __post_init__(self) -> None:
        n = self.max_consecutive_recoveries
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigurationError(f"max_consecutive_recoveries must be a whole number >= 0, got {n!r}")
        for name in ("interrupted_prompt", "idle_prompt"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(f"{name} must be a string or None, got {value!r}")


def _seconds(name: str, value: float | None, *, allow_zero: bool = True) -> None:
    optional_seconds(value, f"TurnsConfig.{name}", positive=not allow_zero)


def _chain(name: str, value: object) -> None:
    if value is not None and (isinstance(value, Strategy | str) or not isinstance(value, Sequence)):
        raise ConfigurationError(f"{name} must be a list of strategies (or None for the defaults), got {value!r}")


@dataclass(frozen=True)
class TurnsConfig:
    """How the user aggregator decides when the user's turn began and ended.

    Args:
        start: Start strategies (``None``: VAD start, then transcription start).
        stop: Stop strategies (``None``: a 0.6 s speech timeout).
        strategies: Both chains at once, e.g. ``ExternalStrategies()``;
            exclusive with ``start``/``stop``.
        stop_timeout: Seconds without activity after which an open turn is
            closed although no stop strategy decided (never while the user
            speaks). Fires ``on_user_turn_stop_timeout``.
        idle_timeout: Seconds without a user turn after the bot stopped
            speaking (or after a turn) before ``on_user_turn_idle`` fires;
            ``0`` or ``None`` turns the watch off.
        on_idle: Called with the aggregator when the user is idle (it may
            ``push`` a frame, e.g. a ``TTSSpeakFrame``).
        mute: Mute strategies (merged with ``Pair(mute=...)``).
        empty_turn: The empty-turn policy (``None`` turns it off).
        late_transcript_window: A transcript arriving this many seconds after
            a turn was answered, with no speech heard since, belongs to that
            turn (a slow STT): it is kept for the next turn rather than
            answered on its own.
        recovery_window: A turn that starts within this many seconds of the
            last one's end, before the bot has started speaking, continues it
            (a false end recovered: the unheard reply is interrupted, the
            words join the same user message, the whole turn is answered
            once; ``on_user_turn_recovered`` reports it). ``0`` turns
            recovery off.
        speculate: Speculative replies (:class:`~rxvoice.turns.speculation.Speculation`,
            or ``True`` for its defaults; off by default): when a stop
            strategy sees the end coming (``Likely``), the model is asked
            early with the words so far and its answer held, released at
            once if the turn ends with those words, dropped (and counted)
            if not. Faster answers for tokens sometimes paid for nothing;
            no tool call ever starts from a held answer.
    """

    start: Sequence[StartStrategy[Any]] | None = None
    stop: Sequence[StopStrategy[Any]] | None = None
    strategies: UserTurnStrategies | None = None
    stop_timeout: float = 5.0
    idle_timeout: float | None = None
    on_idle: Callable[[Any], Any] | None = None
    mute: Sequence[MuteStrategy[Any]] = ()
    empty_turn: EmptyUserTurnConfig | None = field(default_factory=EmptyUserTurnConfig)
    late_transcript_window: float = 1.0
    recovery_window: float = RECOVERY_WINDOW
    speculate: Speculation | bool | None = None

    def __post_init__(self) -> None:
        if self.speculate is True:
            object.__setattr__(self, "speculate", Speculation())
        elif self.speculate is False:
            object.__setattr__(self, "speculate", None)
        elif self.speculate is not None and not isinstance(self.speculate, Speculation):
            raise ConfigurationError(f"speculate must be a Speculation, True or None, got {self.speculate!r}")
        if self.strategies is not None and (self.start is not None or self.stop is not None):
            raise ConfigurationError("give either strategies= or start=/stop=, not both")
        if self.strategies is not None and not isinstance(self.strategies, UserTurnStrategies):
            raise ConfigurationError(f"strategies must be a UserTurnStrategies, got {self.strategies!r}")
        if self.empty_turn is not None and not isinstance(self.empty_turn, EmptyUserTurnConfig):
            raise ConfigurationError(f"empty_turn must be an EmptyUserTurnConfig or None, got {self.empty_turn!r}")
        _chain("mute", self.mute)
        _seconds("stop_timeout", self.stop_timeout, allow_zero=False)
        _seconds("idle_timeout", self.idle_timeout)
        _seconds("late_transcript_window", self.late_transcript_window)
        _seconds("recovery_window", self.recovery_window)
        if self.on_idle is not None and not callable(self.on_idle):
            raise ConfigurationError("on_idle must be callable")
        for m in self.mute:
            if not isinstance(m, MuteStrategy):
                raise ConfigurationError(f"{m!r} is not a mute strategy")
        self.chains()  # validate now, not at run time

    @property
    def speculation(self) -> Speculation | None:
        """The speculation settings (``None``: off)."""
        return self.speculate if isinstance(self.speculate, Speculation) else None

    @property
    def pinned(self) -> bool:
        """Whether the application chose strategies (service recommendations are then ignored)."""
        return self.strategies is not None or self.start is not None or self.stop is not None

    def chains(self) -> tuple[tuple[StartStrategy[Any], ...], tuple[StopStrategy[Any], ...]]:
        """The start and stop chains, defaults filled in."""
        strategies = self.strategies or UserTurnStrategies(self.start, self.stop)
        return strategies.resolved()
