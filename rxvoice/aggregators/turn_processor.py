"""Turn detection as a stage of its own: :class:`UserTurnProcessor`.

The user aggregator decides turns itself by default, on the same frames and
in the same order as it gathers the words. Where the decision has to be
shared (an interruption decision, a transport, a recorder need it too), put
a :class:`UserTurnProcessor` after speech-to-text and give the aggregator
:func:`~rxvoice.turns.ExternalStrategies`, so it adopts what the processor
decided instead of deciding again::

    pipeline(stt, UserTurnProcessor(), pair.user(), llm, tts, output, pair.assistant())
    # with Pair(context, turns=TurnsConfig(strategies=ExternalStrategies()))

It runs the same turn machine as the aggregator (:mod:`rxvoice.turns.machine`)
but keeps no words: every frame goes on **first**, transcripts included, and
only then the decisions it caused (user started/stopped, the interruption),
so a decision never overtakes the transcript it was made on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reactivex import abc

from ..errors import ConfigurationError
from ..events import EventRegistry
from ..frames import CancelFrame, Direction, EndFrame, Frame, StartFrame
from ..pipeline.offload import Offload
from ..pipeline.processor import Port
from ..pipeline.shell import TurnShell, TurnStage
from ..turns.config import TurnsConfig
from ..turns.machine import TurnMachine
from ..turns.mute import MuteStrategy
from ..turns.reports import (
    EVENT_USER_BACKCHANNEL,
    EVENT_USER_MUTE_STARTED,
    EVENT_USER_MUTE_STOPPED,
    EVENT_USER_TURN_CLASSIFIED,
    EVENT_USER_TURN_IDLE,
    EVENT_USER_TURN_INFERENCE_TRIGGERED,
    EVENT_USER_TURN_STARTED,
    EVENT_USER_TURN_STOP_TIMEOUT,
    EVENT_USER_TURN_STOPPED,
)

__all__ = ["TURN_EVENTS", "UserTurnProcessor"]

TURN_EVENTS = (
    EVENT_USER_TURN_STARTED,
    EVENT_USER_TURN_STOPPED,
    EVENT_USER_TURN_INFERENCE_TRIGGERED,
    EVENT_USER_TURN_STOP_TIMEOUT,
    EVENT_USER_TURN_IDLE,
    EVENT_USER_MUTE_STARTED,
    EVENT_USER_MUTE_STOPPED,
    EVENT_USER_TURN_CLASSIFIED,
    EVENT_USER_BACKCHANNEL,
)
"""The processor's events: the aggregator's names, minus the message it does not write (plus ``on_error``)."""


class UserTurnProcessor(TurnStage):
    """Decides when the user's turn starts and stops, as a stage of its own.

    Args:
        turns: Strategies, timeouts, idle and mute settings (the defaults
            without it). ``empty_turn`` is the aggregator's business; the
            late-tail rule is applied here too (a late transcript opens no
            turn).
        mute: Mute strategies (merged with ``turns.mute``).
        scheduler: The scheduler to run on (default: the one given at
            subscribe time).
        offload: Where heavy strategy work runs (see :mod:`rxvoice.pipeline.offload`).

    Events (``handler(processor, payload)``): ``on_user_turn_started``
    (the start strategy), ``on_user_turn_stopped`` (a
    :class:`~rxvoice.aggregators.UserTurnStopped` whose ``content`` is
    empty: the processor gathers no words), ``on_user_turn_inference_triggered``
    (the stop strategy), ``on_user_turn_stop_timeout``, ``on_user_turn_idle``,
    ``on_user_mute_started``, ``on_user_mute_stopped``, ``on_error``.
    """

    name = "UserTurnProcessor"

    def __init__(
        self,
        turns: TurnsConfig | None = None,
        *,
        mute: Sequence[MuteStrategy[Any]] = (),
        scheduler: abc.SchedulerBase | None = None,
        offload: Offload | None = None,
    ) -> None:
        if turns is not None and not isinstance(turns, TurnsConfig):
            raise ConfigurationError(f"turns must be a TurnsConfig, got {type(turns).__name__}")
        for m in mute:
            if not isinstance(m, MuteStrategy):
                raise ConfigurationError(f"{m!r} is not a mute strategy")
        self.turns = turns if turns is not None else TurnsConfig()
        self.machine = TurnMachine(self.turns, mute)
        self.scheduler = scheduler
        self.offload = offload
        self.events = EventRegistry(self, (*TURN_EVENTS, "on_error"))

    def open(self, port: Port) -> _TurnSession:
        session = _TurnSession(self, port)
        self._track(session)
        return session


class _TurnSession(TurnShell):
    """One session of a processor: the machine's state, every frame passed on first."""

    def __init__(self, processor: UserTurnProcessor, port: Port) -> None:
        super().__init__(processor, port, processor.events, processor.machine, offload=processor.offload)
        self.processor = processor

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if t is StartFrame:
            self.start_session(frame, direction)
        elif t is EndFrame or t is CancelFrame:
            self.end_session(frame, direction)
        else:
            self.feed(frame, direction)

    def close(self) -> None:
        super().close()
        self.processor._forget(self)
