"""What one session's turn remembers between inputs: the state the turn machine reads and changes.

One :class:`TurnState` per session, mutable, seen by nobody else; the rules
that change it are :mod:`rxvoice.turns.machine`'s, in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

from ..frames import Frame
from .config import TurnsConfig
from .controller import TurnController
from .idle import IdleState
from .mute import MuteStrategy, mute_verdict
from .port import TurnPort, Words

__all__ = ["TurnState"]

_NEVER = -math.inf


class _Machine(Protocol):
    """What the state reads of the machine that opened it."""

    turns: TurnsConfig
    controller: TurnController
    mute: tuple[MuteStrategy[Any], ...]

    def on_result(self, s: Any, owner: int, key: str, value: Any, now: float) -> None: ...


class TurnState:
    """One session's turn: everything the machine remembers between inputs (mutable, never shared).

    Attributes a reader may want: ``open`` (a turn is open), ``speaking``
    (the user is speaking, as far as the strategies know), ``muted``,
    ``bot_speaking``, ``interrupted_bot`` (the open turn cut the bot off),
    ``answered_at`` (when the last turn with words ended), ``recoverable_until``
    (until when resumed speech reopens that turn), ``idle``
    (:class:`~rxvoice.turns.IdleState`), ``states`` (each strategy's).
    """

    __slots__ = (
        "answered_at",
        "bot_speaking",
        "controller",
        "decides_before_end",
        "deciding",
        "ended",
        "ended_at",
        "find_timer",
        "idle",
        "interrupted_bot",
        "last_activity",
        "later",
        "machine",
        "mute_announced",
        "mute_states",
        "muted",
        "open",
        "params",
        "port",
        "recoverable_until",
        "speaking",
        "speech_since",
        "started_at",
        "states",
        "takes_interims",
        "vad_seen",
        "watchdog_armed",
        "words",
    )

    def __init__(self, machine: _Machine, port: TurnPort, words: Words) -> None:
        self.machine = machine
        self.port = port
        self.find_timer: Callable[[tuple[Any, str]], Any] | None = getattr(port, "find_timer", None)
        """The port's timers looked up in place, for a disarm without a call (``None``: ask :meth:`disarm`)."""
        self.words = words
        self.takes_interims: bool = getattr(words, "takes_interims", True)
        """Whether the words are told of interim transcripts (:attr:`Words.interim`'s note on ``takes_interims``)."""
        self.controller = machine.controller
        self.states: list[Any] = machine.controller.initial()
        self.open = False
        self.speaking = False
        self.last_activity = 0.0
        self.watchdog_armed = False
        self.mute_states: list[Any] = [m.initial() for m in machine.mute]
        self.muted = mute_verdict(machine.mute, self.mute_states)
        self.mute_announced = not self.muted
        self.idle = IdleState(timeout=float(machine.turns.idle_timeout or 0.0))
        self.answered_at: float | None = None
        self.ended_at = 0.0
        self.recoverable_until = _NEVER
        self.started_at: float | None = None
        self.speech_since = False
        self.vad_seen = False
        self.bot_speaking = False
        self.interrupted_bot = False
        self.ended = False
        self.deciding = False
        self.later: list[tuple[int, str, Any]] = []
        """Results that came back while deciding (inline resource calls), handled once the decision is done."""
        self.params: Frame | None = None
        """The stage's own parameters, announced both ways when the session starts."""
        self.decides_before_end = False
        """At the session's end, decide before the end frame goes on (the user aggregator)."""

    @property
    def user_speaking(self) -> bool:
        """The user is speaking, as far as the strategies know."""
        return self.speaking

    def settle(self, now: float) -> None:
        """Handle the results that came back while deciding (inline resource calls), in order."""
        while self.later and not self.deciding:
            owner, key, value = self.later.pop(0)
            self.machine.on_result(self, owner, key, value, now)
