"""The user half of a pair: transcripts in, one user message per turn out."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from reactivex import abc

from ..context import LLMContext
from ..events import EventRegistry
from ..frames import DOWN, Direction, Frame
from ..pipeline.processor import Port
from ..turns.config import TurnsConfig
from ..turns.mute import MuteStrategy
from ..turns.offload import Offload
from .strategy_shell import StrategyProcessor, StrategyShell
from .user_core import USER_EVENTS, AnalyzeAudio, ShellEffect, UserCore, UserState
from .vad_config import VADConfig

__all__ = ["UserAggregator"]

log = logging.getLogger("rxvoice.aggregators.user")


class UserAggregator(StrategyProcessor):
    """Collects what the user says into one user message per turn and asks the model to answer.

    Place it after speech-to-text and before the model. It decides when the
    user's turn began and ended (``turns``), mutes the user while the bot must
    not be interrupted (``mute``), and can run its own VAD (``vad``). When a
    turn ends it appends ``{"role": "user", ...}`` to the shared context and
    sends an ``LLMContextFrame`` downstream.

    Events (``handler(aggregator, payload)``): ``on_user_turn_started``
    (the start strategy), ``on_user_turn_stopped`` (:class:`UserTurnStopped`),
    ``on_user_turn_inference_triggered`` (the stop strategy),
    ``on_user_turn_stop_timeout``, ``on_user_turn_idle``,
    ``on_user_turn_message_added`` (:class:`UserTurnMessageAdded`),
    ``on_user_mute_started``, ``on_user_mute_stopped``, and ``on_error``
    (a typed error from :mod:`rxvoice.errors`).

    ``offload`` is where heavy strategy work (an end-of-turn model) runs:
    a callable taking a job and returning a ``concurrent.futures.Future``
    (default: rxvoice's shared worker thread). Tests set it to
    :func:`rxvoice.turns.inline_offload` or a
    :class:`rxvoice.turns.SchedulerOffload` to put model latency in virtual
    time; it can be set after construction (``pair.user().offload = ...``),
    before the pipeline runs.
    """

    name = "UserContextAggregator"

    def __init__(
        self,
        context: LLMContext,
        *,
        turns: TurnsConfig | None = None,
        mute: Sequence[MuteStrategy[Any]] = (),
        vad: VADConfig | None = None,
        tool_change_messages: bool = False,
        scheduler: abc.SchedulerBase | None = None,
        offload: Offload | None = None,
    ) -> None:
        self._context = context
        self.turns = turns if turns is not None else TurnsConfig()
        self.vad = vad
        self.core = UserCore(
            self.turns, mute, tool_change_messages=tool_change_messages, has_vad=vad is not None,
            vad_params=getattr(vad.analyzer, "params", None) if vad is not None else None,
        )
        self.scheduler = scheduler
        self.offload = offload
        self.events = EventRegistry(self, (*USER_EVENTS, "on_error"))
        self.core.listening = self.events.listened
        self._session: _UserSession | None = None

    @property
    def context(self) -> LLMContext:
        """The shared conversation this aggregator writes to."""
        return self._context

    @property
    def state(self) -> UserState | None:
        """The current session's state (for inspection and tests), or ``None``."""
        return self._session.state if self._session is not None else None

    def open(self, port: Port) -> _UserSession:
        session = _UserSession(self, port)
        self._session = session
        return session


class _UserSession(StrategyShell):
    """One session of a user aggregator: the core's state and its effects carried out."""

    def __init__(self, aggregator: UserAggregator, port: Port) -> None:
        super().__init__(aggregator, port, aggregator.context, aggregator.events, aggregator.core)
        self.handlers[AnalyzeAudio] = self._analyze_audio
        self.aggregator = aggregator
        self.core = aggregator.core
        self.state = self.core.initial()
        self.offload = aggregator.offload
        self.vad = aggregator.vad.open(self) if aggregator.vad is not None else None

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if type(frame) not in self._handled:
            if direction is DOWN:
                self._link.emit_down(frame)
            else:
                self._link.emit_up(frame)
            return
        self.now = now = self.clock()
        self.state, effects = self.core.on_frame(self.state, frame, direction, now)
        self.execute(effects)

    def execute(self, effects: list[ShellEffect]) -> None:
        self.run(effects)

    def _analyze_audio(self, e: AnalyzeAudio) -> None:
        if self.vad is not None:
            self.vad.analyze(e.frame)

    def on_timer(self, owner: int, key: str) -> None:
        self.state, effects = self.core.on_timer(self.state, owner, key, self.now)
        self.execute(effects)

    def on_result(self, owner: int, key: str, value: Any) -> None:
        self.now = now = self.clock()
        self.state, effects = self.core.on_result(self.state, owner, key, value, now)
        self.execute(effects)

    def on_input_end(self, direction: Direction) -> None:
        if direction is DOWN:  # after an end frame, writes only what came in since (the core decides)
            self.now = now = self.clock()
            self.state, effects = self.core.end_of_input(self.state, now)
            self.execute(effects)

    def close(self) -> None:
        super().close()
        if self.vad is not None:
            self.vad.close()

