"""The turn machine as a reactivex ``scan``: one accumulator step per input, the calls it made as data.

:func:`turn_step` is the accumulator: each input (a timed frame, a
:class:`TimerFired`, a :class:`ResultBack`) goes through
:meth:`TurnMachine.step <rxvoice.turns.machine.TurnMachine.step>`, the one
entry every stage feeds too, and the step returns what that input did: the
port calls, recorded (``("emit", frame, direction)``, ``("arm", owner, key,
seconds)``, ``("event", name, payload)``, ...). It is pure in the way the
stages are: time comes in with the item, timers go out as recorded calls.
:func:`rxvoice.operators.turn_steps` runs it on a stream of frames, with
the timers on a scheduler::

    source.pipe(ops.timestamp(), ops.scan(turn_step(machine), machine.scan_start()))

.. marble::
    :alt: the machine as a scan over timed frames

    -v----h--s-------|
    [ scan(turn_step) ]
    -a----b--c-------|

(``a``: the turn started; ``b``: nothing decided; ``c``: the stop strategy
armed its timer; feed :class:`TimerFired` to fire it.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..frames import DOWN, Direction, Frame
from .port import RecordingPort, TimerOwner

__all__ = ["ResultBack", "TimerFired", "TurnScan", "turn_step"]


class TimerFired(NamedTuple):
    """An input for :func:`turn_step`: timer ``(owner, key)`` fired at ``time``."""

    owner: TimerOwner
    key: str
    time: float


class ResultBack(NamedTuple):
    """An input for :func:`turn_step`: a resource call of strategy ``owner`` came back at ``time``."""

    owner: int
    key: str
    value: Any
    time: float


@dataclass(frozen=True)
class TurnScan:
    """The accumulator of :func:`turn_step`: what one step did.

    ``calls`` are the port calls the step made and ``open`` whether a turn
    was open after it; ``state`` is the session's live ``TurnState`` (it goes
    on changing with the next steps).
    """

    state: Any
    port: RecordingPort
    calls: tuple[tuple[Any, ...], ...] = ()
    open: bool = False


class _Machine(Protocol):
    def step(self, s: Any, item: Any, direction: Direction, now: float, *, passed: bool = False) -> bool: ...


def turn_step(machine: _Machine) -> Callable[[TurnScan, Any], TurnScan]:
    """The machine as a reactivex ``scan`` accumulator.

    Items are ``Timestamp(frame, datetime)`` (from ``ops.timestamp()``),
    ``(frame, seconds)`` pairs, :class:`TimerFired` or :class:`ResultBack`;
    each step returns the accumulator with the calls that step made. Start
    it with :meth:`TurnMachine.scan_start <rxvoice.turns.machine.TurnMachine.scan_start>`,
    per subscription (wrap in ``reactivex.defer``, as ``ops.scan`` itself
    does, when the observable may be subscribed twice).
    """

    def step(acc: TurnScan, item: Any) -> TurnScan:
        port = acc.port
        thing: Any
        if isinstance(item, TimerFired | ResultBack):
            thing, at = item, item.time
        else:
            thing, at = _timed(item)
        port.now = at
        machine.step(acc.state, thing, DOWN, at)
        return TurnScan(acc.state, port, tuple(port.take()), acc.state.open)

    return step


def _timed(item: Any) -> tuple[Frame, float]:
    value = getattr(item, "value", None)
    stamp = getattr(item, "timestamp", None)
    if isinstance(value, Frame) and stamp is not None:
        seconds = stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)
        return value, seconds
    try:
        frame, at = item
    except (TypeError, ValueError):
        frame, at = None, math.nan
    if not isinstance(frame, Frame) or not math.isfinite(float(at)):
        raise TypeError(f"turn_step takes timestamped frames, TimerFired or ResultBack, got {item!r}")
    return frame, float(at)
