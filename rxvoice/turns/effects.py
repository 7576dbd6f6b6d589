"""What each effect a strategy asks for does to the session: the one interpreter of the strategies' vocabulary.

A strategy (:mod:`rxvoice.turns.strategy`), a mute strategy and the idle
watch answer with effects, plain data; :func:`apply_effects` carries them
out, in order, for the turn machine (:mod:`rxvoice.turns.machine`): a timer
is armed or disarmed on the port, a start opens the turn, an inference
inside a turn writes what was said so far and asks for the answer, a
finalize closes the turn, a reset drops words only outside a turn (the
words of an open turn are never dropped), a frame goes out at once (a
verdict's report before the turn end it causes), a resource call runs
inline or off the session, the idle event is raised; a ``Likely`` asks the
words to speculate (speculation on, a turn open, the user silent), a
``Notify`` raises a strategy's event.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..frames import DOWN, UP
from .config import TurnsConfig
from .port import TimerOwner
from .reasons import TurnEndReason
from .reports import EVENT_USER_TURN_IDLE, EVENT_USER_TURN_INFERENCE_TRIGGERED
from .state import TurnState
from .strategy import (
    Analyze,
    Arm,
    Disarm,
    Effects,
    Finalize,
    Halt,
    Inference,
    Likely,
    Notify,
    Push,
    ResetAggregation,
    Start,
    Strategy,
    Touch,
    UserIdle,
)

__all__ = ["apply_effects"]


class _Rules(Protocol):
    """The machine's rules an effect triggers."""

    turns: TurnsConfig
    speculating: bool

    def started(self, s: TurnState, strategy: Strategy[Any] | None, e: Start, now: float) -> None: ...

    def stopped(
        self, s: TurnState, strategy: Strategy[Any] | None, speaking_frames: bool | None, now: float,
        reason: TurnEndReason | None = None,
    ) -> None: ...

    def touch(self, s: TurnState, now: float) -> None: ...


def apply_effects(
    machine: _Rules, s: TurnState, owner: TimerOwner, strategy: Strategy[Any] | None, effects: Effects, now: float
) -> bool:
    """Carry out effects (a strategy's, a mute strategy's, the idle watch's), in order.

    Returns whether they halted their chain.
    """
    halted = False
    port = s.port
    e: Any
    for e in effects:
        et = type(e)
        if et is Disarm:  # the commonest (most disarm a timer that is not armed): looked up in place
            find = s.find_timer
            if find is None:
                port.disarm(owner, e.key)
            else:
                timer = find((owner, e.key))
                if timer is not None:
                    timer.due = None
        elif et is Arm:
            port.arm(owner, e.key, e.delay)
        elif et is Halt:
            halted = True
        elif et is Start:
            machine.started(s, strategy, e, now)
        elif et is Inference:
            if s.open:
                machine.touch(s, now)
                s.words.commit(now)
                if port.listens(EVENT_USER_TURN_INFERENCE_TRIGGERED):
                    port.event(EVENT_USER_TURN_INFERENCE_TRIGGERED, strategy)
        elif et is Likely:
            if s.open and machine.speculating and not s.speaking:
                s.words.speculate(now, e.words_in)
        elif et is Finalize:
            machine.stopped(s, strategy, e.speaking_frames, now, e.reason)
        elif et is ResetAggregation:
            if not s.open:  # the words of an open turn are never dropped
                s.words.reset()
        elif et is Push:
            # Out at once, in the order decided: a verdict's report comes before the turn end it causes.
            if e.both_ways:
                port.emit(e.frame, DOWN)
                port.emit(e.frame, UP)
            else:
                port.emit(e.frame, e.direction)
        elif et is Notify:
            if port.listens(e.name):
                port.event(e.name, e.payload)
        elif et is Touch:
            port.call(owner, e.key, e.fn, False)  # type: ignore[arg-type]
        elif et is Analyze:
            port.call(owner, e.key, e.fn, True)  # type: ignore[arg-type]
        elif et is UserIdle:
            if port.listens(EVENT_USER_TURN_IDLE):
                port.event(EVENT_USER_TURN_IDLE)
            if machine.turns.on_idle is not None:
                port.callback(machine.turns.on_idle)
    return halted
