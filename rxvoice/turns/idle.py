"""The idle watch: notice when the user has said nothing for a while.

The user is the one expected to speak once the bot has finished: the clock
starts when the bot stops speaking (or, with no speech output, when the
bot's turn is written: an ``LLMContextAssistantTurnFrame`` coming back
upstream), and after a user turn that nobody will answer (an empty or
noise-only turn, so a cough does not silence the watch for good). A user
turn that was answered starts nothing: its reply is pending, and the clock
waits for the bot to have spoken, however slow the model. The watch pauses
while the bot speaks, a tool call runs or the user's voice is heard (a VAD
or a service hears speech that has not made a turn yet), and it fires once
per arming. A timeout update re-arms only a watch that is waiting.

The steps answer in the strategies' vocabulary
(:mod:`rxvoice.turns.strategy`): ``Arm("idle", seconds)``,
``Disarm("idle")``, and :data:`~rxvoice.turns.strategy.USER_IDLE` when the
watch fires.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

from ..frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    LLMContextAssistantTurnFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    UserIdleTimeoutUpdateFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ._tuples import build
from .strategy import NOTHING, USER_IDLE, Arm, Disarm, Effects

__all__ = ["IDLE_KEY", "IDLE_TYPES", "SPEECH_TYPES", "IdleState", "idle_fired", "idle_heard", "idle_step"]

IDLE_TYPES: frozenset[type[Frame]] = frozenset({
    BotStartedSpeakingFrame, BotStoppedSpeakingFrame, UserStartedSpeakingFrame, UserStoppedSpeakingFrame,
    FunctionCallsStartedFrame, FunctionCallResultFrame, FunctionCallCancelFrame, UserIdleTimeoutUpdateFrame,
    LLMContextAssistantTurnFrame,
})
"""The frame types the idle watch reacts to."""

SPEECH_ON: frozenset[type[Frame]] = frozenset({VADUserStartedSpeakingFrame, ProposedUserStartedSpeakingFrame})
SPEECH_OFF: frozenset[type[Frame]] = frozenset({VADUserStoppedSpeakingFrame, ProposedUserStoppedSpeakingFrame})
SPEECH_TYPES: frozenset[type[Frame]] = SPEECH_ON | SPEECH_OFF
"""The user's voice as a VAD or a service hears it: the watch pauses while it is heard."""


class IdleState(NamedTuple):
    """Where the idle watch stands."""

    timeout: float = 0.0
    waiting: bool = False
    bot_speaking: bool = False
    user_turn: bool = False
    calls: int = 0
    paused: bool = False
    reply_pending: bool = False
    user_speaking: bool = False


IDLE_KEY = "idle"
"""The idle timer's key."""

_DISARM: Effects = (Disarm(IDLE_KEY),)
_OFF: tuple[Effects, Effects] = (NOTHING, _DISARM)
"""What stops the watch, by whether it is on (``_OFF[timeout > 0]``): with no timeout nothing was armed, so
nothing is disarmed (the idle timer is armed only while the timeout is above 0, and a timeout set to 0
disarms it then)."""
_FIRE: Effects = (USER_IDLE,)


def _arm(state: IdleState) -> Effects:
    return (Arm(IDLE_KEY, state.timeout),) if state.timeout > 0 else NOTHING


def _resume(s: IdleState) -> tuple[IdleState, Effects]:
    """The watch was interrupted (a call, the user's voice): it waits again if nothing else holds it."""
    if s.paused and not s.bot_speaking and not s.user_turn and not s.user_speaking and s.calls == 0 \
            and not s.reply_pending:
        s = s._replace(waiting=True, paused=False)
        return s, _arm(s)
    return s, NOTHING


def _wait(s: IdleState) -> tuple[IdleState, Effects]:
    """The user is now the one expected to speak: wait for them (after their voice, if it is heard)."""
    timeout, _waiting, bot, user_turn, calls, paused, pending, speaking = s
    if speaking:
        return build(IdleState, (timeout, False, bot, user_turn, calls, True, pending, speaking)), NOTHING
    s = build(IdleState, (timeout, True, bot, user_turn, calls, paused, pending, speaking))
    return s, _arm(s)


def idle_heard(state: IdleState, speaking: bool) -> tuple[IdleState, Effects]:
    """The user's voice is heard (``speaking``), or no longer: the watch pauses, then resumes from its end.

    Speech that opens a turn hands the watch to the turn (its end decides);
    speech that makes no turn (a cough with a transcript-started turn, a
    turn another stage decides) resumes the watch when it ends.
    """
    timeout, waiting, bot, user_turn, calls, paused, pending, _speaking = state  # built whole: every VAD edge
    if speaking:
        return build(IdleState, (timeout, False, bot, user_turn, calls, paused or waiting, pending, True)), _OFF[
            timeout > 0]
    return _resume(build(IdleState, (timeout, waiting, bot, user_turn, calls, paused, pending, False)))


def idle_step(state: IdleState, frame: Frame, answered: bool = False) -> tuple[IdleState, Effects]:
    """React to one frame of a type in :data:`IDLE_TYPES` or :data:`SPEECH_TYPES`.

    ``answered`` goes with a user turn's end: the turn wrote words and asked
    for a reply (the watch then waits for the bot to have spoken).
    """
    t = type(frame)
    if t in SPEECH_ON:
        return idle_heard(state, True)
    if t in SPEECH_OFF:
        return idle_heard(state, False)
    # The turn's own frames come on every turn: their states are built whole (cheaper than _replace).
    timeout, waiting, bot, user_turn, calls, paused, pending, speaking = state
    if t is BotStoppedSpeakingFrame:
        s = build(IdleState, (timeout, waiting, False, user_turn, calls, paused, False, speaking))
        if not user_turn and calls == 0:
            return _wait(s)
        return s, NOTHING
    if t is BotStartedSpeakingFrame:
        return build(IdleState, (timeout, False, True, user_turn, calls, False, False, speaking)), _OFF[timeout > 0]
    if t is UserStartedSpeakingFrame:
        return build(IdleState, (timeout, False, bot, True, calls, False, False, speaking)), _OFF[timeout > 0]
    if t is UserStoppedSpeakingFrame:
        if answered:  # a reply is on its way: the user is not the one expected to speak
            return build(IdleState, (timeout, False, bot, False, calls, False, True, speaking)), NOTHING
        s = build(IdleState, (timeout, waiting, bot, False, calls, paused, pending, speaking))
        if not bot and calls == 0:
            return _wait(s)
        return s, NOTHING
    if t is LLMContextAssistantTurnFrame:
        # The bot's turn is written. Without speech output nothing else says it is over.
        if pending and not bot and not user_turn and calls == 0:
            return _wait(build(IdleState, (timeout, waiting, bot, user_turn, calls, paused, False, speaking)))
        return state, NOTHING
    if isinstance(frame, FunctionCallsStartedFrame):
        n = len(frame.function_calls)
        return state._replace(waiting=False, calls=state.calls + n, paused=state.paused or state.waiting), _OFF[
            state.timeout > 0]
    if isinstance(frame, FunctionCallResultFrame | FunctionCallCancelFrame):
        props = frame.properties if isinstance(frame, FunctionCallResultFrame) else None
        if props is not None and not props.is_final:
            return state, NOTHING
        return _resume(state._replace(calls=max(0, state.calls - 1)))
    if isinstance(frame, UserIdleTimeoutUpdateFrame):
        s = state._replace(timeout=float(frame.timeout))
        if s.timeout <= 0:
            return s, _OFF[state.timeout > 0]
        return s, (_arm(s) if s.waiting else NOTHING)
    return state, NOTHING


def idle_fired(state: IdleState) -> tuple[IdleState, Effects]:
    """The timer fired: raise the idle event if the user is still the one expected to speak."""
    s = state
    if s.waiting and not s.bot_speaking and not s.user_turn and not s.user_speaking and s.calls == 0:
        return state, _FIRE
    return state, NOTHING


def __getattr__(name: str) -> Any:
    # The idle watch used an effect vocabulary of its own; it answers in the strategies' now.
    if name == "IdleEffect":
        warnings.warn(
            "rxvoice.turns.idle.IdleEffect is gone: the idle steps answer with Arm/Disarm('idle') and "
            "USER_IDLE (rxvoice.turns.strategy); the name goes in 0.3",
            DeprecationWarning, stacklevel=2,
        )
        return _LegacyIdleEffect
    raise AttributeError(f"module 'rxvoice.turns.idle' has no attribute {name!r}")


class _LegacyIdleEffect(NamedTuple):
    kind: str
    delay: float = 0.0
