"""Mute strategies: when must the user not interrupt the bot?

Each strategy is a pure step over the frames it cares about plus a reading
of its state (muted or not); the user is muted when any strategy says so.
What the user says while muted is dropped, not queued: the bot is never
answered by something said while it was not listening.

A simple rule overrides :meth:`MuteStrategy.on_frame`. A timed rule ("mute
for two seconds after the bot starts") overrides :meth:`MuteStrategy.step`,
which gets the time and may arm and disarm timers of its own (the same
``Arm``/``Disarm`` effects turn strategies use), and
:meth:`MuteStrategy.on_timer`, called when one fires; the turn machine runs
both, nothing else needs to change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

from ..frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    ErrorFrame,
    FatalErrorFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
)
from .strategy import NOTHING, Effects

__all__ = [
    "AlwaysUserMute",
    "FirstSpeechUserMute",
    "FunctionCallUserMute",
    "MuteState",
    "MuteStrategy",
    "MuteUntilFirstBotComplete",
    "mute_see",
    "mute_step",
    "mute_types",
    "mute_verdict",
]

S = TypeVar("S")


class MuteStrategy(Generic[S]):
    """Base of mute strategies: ``on_frame`` (or ``step``) for ``handles`` types, ``muted`` reads the state."""

    handles: ClassVar[frozenset[type[Frame]]] = frozenset()

    @property
    def name(self) -> str:
        """The strategy's class name."""
        return type(self).__name__

    def initial(self) -> S:
        """The state a session starts with."""
        raise NotImplementedError

    def on_frame(self, state: S, frame: Frame) -> S:
        """React to one frame of a type in ``handles`` (a rule that needs no time)."""
        return state

    def step(self, state: S, frame: Frame, now: float) -> tuple[S, Effects]:
        """React to one frame at time ``now``; may arm or disarm this strategy's timers.

        The default applies :meth:`on_frame` and asks for nothing else.
        """
        return self.on_frame(state, frame), NOTHING

    def on_timer(self, state: S, key: str, now: float) -> tuple[S, Effects]:
        """This strategy's timer ``key`` fired."""
        return state, NOTHING

    def muted(self, state: S) -> bool:
        """Whether this strategy wants the user muted."""
        return False


@dataclass(frozen=True)
class AlwaysUserMute(MuteStrategy[bool]):
    """Muted whenever the bot is speaking."""

    handles: ClassVar[frozenset[type[Frame]]] = frozenset({BotStartedSpeakingFrame, BotStoppedSpeakingFrame})

    def initial(self) -> bool:
        return False

    def on_frame(self, state: bool, frame: Frame) -> bool:
        return type(frame) is BotStartedSpeakingFrame

    def muted(self, state: bool) -> bool:
        return state


class _FirstSpeech(NamedTuple):
    speaking: bool = False
    done: bool = False


@dataclass(frozen=True)
class FirstSpeechUserMute(MuteStrategy[_FirstSpeech]):
    """Muted during the bot's first utterance only (a greeting nobody should cut off)."""

    handles: ClassVar[frozenset[type[Frame]]] = frozenset({BotStartedSpeakingFrame, BotStoppedSpeakingFrame})

    def initial(self) -> _FirstSpeech:
        return _FirstSpeech()

    def on_frame(self, state: _FirstSpeech, frame: Frame) -> _FirstSpeech:
        if state.done:
            return state
        if type(frame) is BotStartedSpeakingFrame:
            return _FirstSpeech(True, False)
        if state.speaking:
            return _FirstSpeech(False, True)
        return state

    def muted(self, state: _FirstSpeech) -> bool:
        return state.speaking


class _FirstComplete(NamedTuple):
    started: bool = False
    done: bool = False


@dataclass(frozen=True)
class MuteUntilFirstBotComplete(MuteStrategy[_FirstComplete]):
    """Muted from the start until the bot's first utterance ends.

    An error before the bot ever spoke (a failed greeting) releases it too,
    so a broken opening never leaves the user muted forever.
    """

    handles: ClassVar[frozenset[type[Frame]]] = frozenset(
        {BotStartedSpeakingFrame, BotStoppedSpeakingFrame, ErrorFrame, FatalErrorFrame}
    )

    def initial(self) -> _FirstComplete:
        return _FirstComplete()

    def on_frame(self, state: _FirstComplete, frame: Frame) -> _FirstComplete:
        if state.done:
            return state
        t = type(frame)
        if t is BotStartedSpeakingFrame:
            return _FirstComplete(True, False)
        if t is BotStoppedSpeakingFrame:
            return _FirstComplete(state.started, True)
        if not state.started:  # an error before the bot ever spoke
            return _FirstComplete(False, True)
        return state

    def muted(self, state: _FirstComplete) -> bool:
        return not state.done


@dataclass(frozen=True)
class FunctionCallUserMute(MuteStrategy[frozenset[str]]):
    """Muted while any tool call the bot is waiting on runs."""

    handles: ClassVar[frozenset[type[Frame]]] = frozenset(
        {FunctionCallsStartedFrame, FunctionCallResultFrame, FunctionCallCancelFrame}
    )

    def initial(self) -> frozenset[str]:
        return frozenset()

    def on_frame(self, state: frozenset[str], frame: Frame) -> frozenset[str]:
        if isinstance(frame, FunctionCallsStartedFrame):
            return state | {c.tool_call_id for c in frame.function_calls}
        if isinstance(frame, FunctionCallResultFrame):
            props = frame.properties
            if props is not None and not props.is_final:
                return state
            return state - {frame.tool_call_id}
        if isinstance(frame, FunctionCallCancelFrame):
            return state - {frame.tool_call_id}
        return state

    def muted(self, state: frozenset[str]) -> bool:
        return bool(state)


class MuteState(NamedTuple):
    """The user's mute state: the verdict and each strategy's state."""

    muted: bool = False
    states: tuple[Any, ...] = ()


def mute_types(strategies: Sequence[MuteStrategy[Any]]) -> frozenset[type[Frame]]:
    """Every frame type any of ``strategies`` reacts to."""
    out: frozenset[type[Frame]] = frozenset()
    for s in strategies:
        out |= s.handles
    return out


def mute_verdict(strategies: Sequence[MuteStrategy[Any]], states: Sequence[Any]) -> bool:
    """Whether the user is muted: any strategy says so."""
    return any(s.muted(st) for s, st in zip(strategies, states, strict=True))


def mute_see(
    strategies: Sequence[MuteStrategy[Any]], states: list[Any], frame: Frame, now: float
) -> list[tuple[int, Effects]]:
    """Every strategy that handles ``frame`` steps (``states`` updated in place, one session's list).

    Returns the effects each asked for, by strategy index (timers to arm or
    disarm: the turn machine carries them out, owned by that strategy).
    """
    t = type(frame)
    asked: list[tuple[int, Effects]] = []
    for i, strategy in enumerate(strategies):
        if t in strategy.handles:
            states[i], effects = strategy.step(states[i], frame, now)
            if effects:
                asked.append((i, effects))
    return asked


def mute_initial(strategies: Sequence[MuteStrategy[Any]]) -> MuteState:
    """The state a session starts with (muted if any strategy starts muted)."""
    states = tuple(s.initial() for s in strategies)
    return MuteState(mute_verdict(strategies, states), states)


def mute_step(
    strategies: Sequence[MuteStrategy[Any]], state: MuteState, frame: Frame, now: float = 0.0
) -> MuteState:
    """:func:`mute_see` and :func:`mute_verdict` as one immutable step (the effects are dropped: no timers here).

    The turn machine runs the same two functions; a strategy's timers run
    only there (test timed rules through the machine).
    """
    states = list(state.states)
    mute_see(strategies, states, frame, now)
    return MuteState(mute_verdict(strategies, states), tuple(states))
