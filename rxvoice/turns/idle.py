"""The idle watch: notice when the user has said nothing for a while.

The clock starts when the bot stops speaking, and again after every user
turn (an empty or noise-only turn too, so a cough does not silence the
watch for good). It pauses while the bot speaks or a tool call runs, and it
fires once per arming.
"""

from __future__ import annotations

from typing import NamedTuple

from ..frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    UserIdleTimeoutUpdateFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)

__all__ = ["IDLE_TYPES", "IdleEffect", "IdleState", "idle_fired", "idle_step"]

IDLE_TYPES: frozenset[type[Frame]] = frozenset({
    BotStartedSpeakingFrame, BotStoppedSpeakingFrame, UserStartedSpeakingFrame, UserStoppedSpeakingFrame,
    FunctionCallsStartedFrame, FunctionCallResultFrame, FunctionCallCancelFrame, UserIdleTimeoutUpdateFrame,
})
"""The frame types the idle watch reacts to."""


class IdleState(NamedTuple):
    """Where the idle watch stands."""

    timeout: float = 0.0
    waiting: bool = False
    bot_speaking: bool = False
    user_turn: bool = False
    calls: int = 0
    paused: bool = False


class IdleEffect(NamedTuple):
    """``arm`` the timer for ``delay`` seconds, ``disarm`` it, or ``fire`` the idle event."""

    kind: str
    delay: float = 0.0


_DISARM = (IdleEffect("disarm"),)
_NOTHING: tuple[IdleEffect, ...] = ()


def _arm(state: IdleState) -> tuple[IdleEffect, ...]:
    return (IdleEffect("arm", state.timeout),) if state.timeout > 0 else _NOTHING


def idle_step(state: IdleState, frame: Frame) -> tuple[IdleState, tuple[IdleEffect, ...]]:
    """React to one frame of a type in :data:`IDLE_TYPES`."""
    timeout, waiting, bot, user_turn, calls, paused = state
    t = type(frame)
    if t is BotStoppedSpeakingFrame:
        if not user_turn and calls == 0:
            s = IdleState(timeout, True, False, user_turn, calls, paused)
            return s, _arm(s)
        return IdleState(timeout, waiting, False, user_turn, calls, paused), _NOTHING
    if t is BotStartedSpeakingFrame:
        return IdleState(timeout, False, True, user_turn, calls, False), _DISARM
    if t is UserStartedSpeakingFrame:
        return IdleState(timeout, False, bot, True, calls, False), _DISARM
    if t is UserStoppedSpeakingFrame:
        if not bot and calls == 0:
            s = IdleState(timeout, True, bot, False, calls, paused)
            return s, _arm(s)
        return IdleState(timeout, waiting, bot, False, calls, paused), _NOTHING
    if isinstance(frame, FunctionCallsStartedFrame):
        n = len(frame.function_calls)
        return IdleState(timeout, False, bot, user_turn, calls + n, paused or waiting), _DISARM
    if isinstance(frame, FunctionCallResultFrame | FunctionCallCancelFrame):
        props = frame.properties if isinstance(frame, FunctionCallResultFrame) else None
        if props is not None and not props.is_final:
            return state, _NOTHING
        left = max(0, calls - 1)
        if left == 0 and paused and not bot and not user_turn:
            s = IdleState(timeout, True, bot, user_turn, 0, False)
            return s, _arm(s)
        return IdleState(timeout, waiting, bot, user_turn, left, paused), _NOTHING
    if isinstance(frame, UserIdleTimeoutUpdateFrame):
        s = IdleState(float(frame.timeout), waiting, bot, user_turn, calls, paused)
        if s.timeout <= 0:
            return s, _DISARM
        return s, (_arm(s) if s.waiting else _NOTHING)
    return state, _NOTHING


def idle_fired(state: IdleState) -> tuple[IdleState, tuple[IdleEffect, ...]]:
    """The timer fired: raise the idle event if the user is still the one expected to speak."""
    if state.waiting and not state.bot_speaking and not state.user_turn and state.calls == 0:
        return state, (IdleEffect("fire"),)
    return state, _NOTHING
