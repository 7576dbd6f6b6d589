"""What turn strategies are: pure step functions and the effects they ask for.

A strategy is configuration (a frozen dataclass, shareable by any number of
sessions) plus a per-session state value it never mutates. The turn
controller hands it frames, timer firings and results; it answers with a new
state and a tuple of effects, plain data such as "the turn started", "arm
timer ``speech`` for 0.6 s" or "ask the analyzer, off the session". Because
nothing here touches a clock, a thread or a stream, every rule is testable
with plain asserts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, NamedTuple, TypeAlias, TypeVar

from ..frames import DOWN, Direction, Frame
from .reasons import TurnEndReason

__all__ = [
    "HALT",
    "INFERENCE",
    "LIKELY",
    "LIKELY_BEFORE_WORDS",
    "NOTHING",
    "RESET_AGGREGATION",
    "USER_IDLE",
    "Analyze",
    "Arm",
    "Disarm",
    "Effect",
    "Effects",
    "Finalize",
    "Inference",
    "Likely",
    "Notify",
    "Push",
    "ResetAggregation",
    "Start",
    "StartStrategy",
    "StopStrategy",
    "Strategy",
    "Touch",
    "UserIdle",
    "stopped",
]

S = TypeVar("S")


class Start(NamedTuple):
    """The user's turn started. ``None`` flags take the strategy's own settings."""

    interruptions: bool | None = None
    speaking_frames: bool | None = None


@dataclass(frozen=True, slots=True)
class Inference:
    """There is enough to answer: write what the user said and run the model."""


@dataclass(frozen=True, slots=True)
class Likely:
    """The turn is likely over but not decided yet (a verdict waits for the words, or for its patience).

    Any stop strategy may raise it, as often as it likes; it decides
    nothing. With ``TurnsConfig(speculate=...)`` the user aggregator then
    asks the model early, with the words so far, and holds the answer until
    the turn ends (see :mod:`rxvoice.turns.speculation`); otherwise it is
    ignored. ``words_in``: the final words of the last speech are in; when
    they are not (the audio model said complete first), only an interim
    transcript after the last final can stand for them, and without one
    nothing is asked (it would be asked without the last words).
    """

    words_in: bool = True


@dataclass(frozen=True, slots=True)
class Finalize:
    """The user's turn is over (ignored while the user is still speaking).

    ``reason`` says why, in the deciding strategy's own words
    (:class:`~rxvoice.turns.reasons.TurnEndReason`); it reaches
    ``UserTurnStopped.reason``. It is a report, not part of the decision,
    so it does not count in comparisons (``Finalize() == Finalize(reason=r)``).
    """

    speaking_frames: bool | None = None
    reason: TurnEndReason | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ResetAggregation:
    """Drop the words gathered so far (they did not make a turn)."""


@dataclass(frozen=True, slots=True)
class Halt:
    """Stop the chain: later strategies of the same kind do not see this frame."""


class Arm(NamedTuple):
    """(Re)arm this strategy's timer ``key`` to fire after ``delay`` seconds."""

    key: str
    delay: float


class Disarm(NamedTuple):
    """Cancel this strategy's timer ``key`` (harmless when it is not armed)."""

    key: str


class Push(NamedTuple):
    """Send a frame (metrics, parameters) from where the turn decisions are made."""

    frame: Frame
    direction: Direction = DOWN
    both_ways: bool = False


class Touch(NamedTuple):
    """Call ``fn(resource)`` inline on the strategy's per-session resource.

    The result, when ``key`` is set, comes back through ``on_result``. Used
    for cheap, stateful numeric work the pure state cannot hold (an audio
    buffer).
    """

    fn: Callable[[Any], Any]
    key: str | None = None


class Analyze(NamedTuple):
    """Run ``fn(resource)`` off the session (a model inference); its result comes back as ``on_result(key)``."""

    key: str
    fn: Callable[[Any], Any]


class Notify(NamedTuple):
    """Raise event ``name`` with ``payload`` from the stage running the strategy (a verdict worth reporting)."""

    name: str
    payload: Any = None


@dataclass(frozen=True, slots=True)
class UserIdle:
    """The user said nothing for the idle timeout: raise ``on_user_turn_idle`` and call ``on_idle``."""


HALT = Halt()
INFERENCE = Inference()
LIKELY = Likely()
LIKELY_BEFORE_WORDS = Likely(words_in=False)
RESET_AGGREGATION = ResetAggregation()
USER_IDLE = UserIdle()

Effect: TypeAlias = (
    Start | Inference | Likely | Finalize | ResetAggregation | Halt | Arm | Disarm | Push | Notify | Touch | Analyze
    | UserIdle
)
Effects: TypeAlias = tuple[Effect, ...]

NOTHING: Effects = ()


def stopped(speaking_frames: bool | None = None, reason: TurnEndReason | None = None) -> Effects:
    """Trigger inference, then end the turn (for ``reason``): what most stop strategies do."""
    return (INFERENCE, Finalize(speaking_frames, reason))


class Strategy(Generic[S]):
    """Base of start and stop strategies.

    Subclasses are frozen dataclasses (the configuration) and list the frame
    types they react to in ``handles``; the controller only calls
    :meth:`on_frame` for those.
    """

    handles: ClassVar[frozenset[type[Frame]]] = frozenset()
    resolves_proposals: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """The strategy's class name (what events and docs call it)."""
        return type(self).__name__

    def initial(self) -> S:
        """The state a session starts with."""
        raise NotImplementedError

    def on_frame(self, state: S, frame: Frame, now: float) -> tuple[S, Effects]:
        """React to one frame of a type in ``handles``."""
        return state, NOTHING

    def on_timer(self, state: S, key: str, now: float) -> tuple[S, Effects]:
        """React to this strategy's timer ``key`` firing."""
        return state, NOTHING

    def on_result(self, state: S, key: str, value: Any, now: float) -> tuple[S, Effects]:
        """React to the result of a :class:`Touch` or :class:`Analyze` (``value`` may be an exception)."""
        return state, NOTHING

    def on_turn_started(self, state: S, now: float) -> tuple[S, Effects]:
        """A turn started (whoever decided it)."""
        return state, NOTHING

    def on_turn_stopped(self, state: S, now: float) -> tuple[S, Effects]:
        """A turn stopped (whoever decided it)."""
        return state, NOTHING

    def on_turn_resumed(self, state: S, words: str, now: float) -> tuple[S, Effects]:
        """The turn just started reopens one that ended too soon (after :meth:`on_turn_started`).

        ``words`` are what that turn had said: the reopened turn's words so
        far (a continuation without words still has them).
        """
        return state, NOTHING

    def open_resource(self, sample_rate: int) -> Any:
        """A per-session resource for :class:`Touch` and :class:`Analyze` (e.g. an audio buffer)."""
        return None

    def close_resource(self, resource: Any) -> None:
        """Release what :meth:`open_resource` returned."""


class StartStrategy(Strategy[S]):
    """Decides when the user's turn starts."""

    enable_interruptions: bool = True
    enable_user_speaking_frames: bool = True


class StopStrategy(Strategy[S]):
    """Decides when the user's turn ends (and when to answer)."""

    enable_user_speaking_frames: bool = True
