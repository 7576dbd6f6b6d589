"""The idle watch: notice when the user has said nothing for a while.

The user is the one expected to speak once the bot has finished: the clock
starts when the bot stops speaking (or, with no speech output, when the
bot's turn is written: an ``LLMContextAssistantTurnFrame`` coming back
upstream), and after a user turn that nobody will answer (an empty or
noise-only turn, so a cough does not silence the watch for good). A user
turn that was answered starts nothing: its reply is pending, and the clock
waits for the bot to have spoken, however slow the model. The watch pauses
while the bot speaks or a tool call runs, and it fires once per arming.
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
    LLMContextAssistantTurnFrame,
    UserIdleTimeoutUpdateFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)

__all__ = ["IDLE_TYPES", "IdleEffect", "IdleState", "idle_fired", "idle_step"]

IDLE_TYPES: frozenset[type[Frame]] = frozenset({
    BotStartedSpeakingFrame, BotStoppedSpeakingFrame, UserStartedSpeakingFrame, UserStoppedSpeakingFrame,
    FunctionCallsStartedFrame, FunctionCallResultFrame, FunctionCallCancelFrame, UserIdleTimeoutUpdateFrame,
    LLMContextAssistantTurnFrame,
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
    reply_pending: bool = False


class IdleEffect(NamedTuple):
    """``arm`` the timer for ``delay`` seconds, ``disarm`` it, or ``fire`` the idle event."""

    kind: str
    delay: float = 0.0


_DISARM = (IdleEffect("disarm"),)
_NOTHING: tuple[IdleEffect, ...] = ()


def _arm(state: IdleState) -> tuple[IdleEffect, ...]:
    return (IdleEffect("arm", state.timeout),) if state.timeout > 0 else _NOTHING


def idle_step(state: IdleState, frame: Frame, *, answered: bool = False) -> tuple[IdleState, tuple[IdleEffect, ...]]:
    """React to one frame of a type in :data:`IDLE_TYPES`.

    ``answered`` goes with a user turn's end: the turn wrote words and asked
    for a reply (the watch then waits for the bot to have spoken).
    """
    timeout, waiting, bot, user_turn, calls, paused, pending = state
    t = type(frame)
    if t is BotStoppedSpeakingFrame:
        if not user_turn and calls == 0:
            s = IdleState(timeout, True, False, user_turn, calls, paused, False)
            return s, _arm(s)
        return IdleState(timeout, waiting, False, user_turn, calls, paused, False), _NOTHING
    if t is BotStartedSpeakingFrame:
        return IdleState(timeout, False, True, user_turn, calls, False, False), _DISARM
    if t is UserStartedSpeakingFrame:
        return IdleState(timeout, False, bot, True, calls, False, False), _DISARM
    if t is UserStoppedSpeakingFrame:
        if answered:  # a reply is on its way: the user is not the one expected to speak
            return IdleState(timeout, False, bot, False, calls, False, True), _NOTHING
        if not bot and calls == 0:
            s = IdleState(timeout, True, bot, False, calls, paused, pending)
            return s, _arm(s)
        return IdleState(timeout, waiting, bot, False, calls, paused, pending), _NOTHING
    if t is LLMContextAssistantTurnFrame:
        # The bot's turn is written. Without speech output nothing else says it is over.
        if pending and not bot and not user_turn and calls == 0:
            s = IdleState(timeout, True, bot, user_turn, calls, paused, False)
            return s, _arm(s)
        return state, _NOTHING
    if isinstance(frame, FunctionCallsStartedFrame):
        n = len(frame.function_calls)
        return IdleState(timeout, False, bot, user_turn, calls + n, paused or waiting, pending), _DISARM
    if isinstance(frame, FunctionCallResultFrame | FunctionCallCancelFrame):
        props = frame.properties if isinstance(frame, FunctionCallResultFrame) else None
        if props is not None and not props.is_final:
            return state, _NOTHING
        left = max(0, calls - 1)
        if left == 0 and paused and not bot and not user_turn:
            s = IdleState(timeout, True, bot, user_turn, 0, False, pending)
            return s, _arm(s)
        return IdleState(timeout, waiting, bot, user_turn, left, paused, pending), _NOTHING
    if isinstance(frame, UserIdleTimeoutUpdateFrame):
        s = IdleState(float(frame.timeout), waiting, bot, user_turn, calls, paused, pending)
        if s.timeout <= 0:
            return s, _DISARM
        return s, (_arm(s) if s.waiting else _NOTHING)
    return state, _NOTHING


def idle_fired(state: IdleState) -> tuple[IdleState, tuple[IdleEffect, ...]]:
    """The timer fired: raise the idle event if the user is still the one expected to speak."""
    if state.waiting and not state.bot_speaking and not state.user_turn and state.calls == 0:
        return state, (IdleEffect("fire"),)
    return state, _NOTHING
