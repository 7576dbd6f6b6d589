"""The user half of a pair: transcripts in, one user message per turn out."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from reactivex import abc

from ..context import LLMContext
from ..events import EventRegistry
from ..frames import Frame
from ..pipeline.processor import Port, Processor
from ..pipeline.stage import DOWN, Direction
from ..turns.config import TurnsConfig
from ..turns.controller import TurnController
from ..turns.mute import MuteStrategy
from ..turns.offload import Offload
from .effects import ShellSession
from .user_core import USER_EVENTS, AnalyzeAudio, ShellEffect, UseController, UserCore, UserState
from .vad_config import VADConfig

__all__ = ["UserAggregator"]

log = logging.getLogger("rxvoice.aggregators.user")


class UserAggregator(Processor):
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

    def __repr__(self) -> str:
        return f"<{self.name}>"

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

    def push(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Send ``frame`` from this aggregator to its neighbour (e.g. from an ``on_idle`` callback)."""
        session = self._session
        if session is None or session.closed:
            log.warning("%s.push(%s): no running session; dropped", self.name, frame.name)
            return
        port = session.port
        port.session.run(lambda _: port.push(frame, direction), None)

    def report_error(self, error: BaseException, frame: object = None) -> None:
        log.warning("%s: %s", self.name, error)
        self.events.emit("on_error", error)


class _UserSession(ShellSession):
    """One session of a user aggregator: the core's state and its effects carried out."""

    def __init__(self, aggregator: UserAggregator, port: Port) -> None:
        super().__init__(aggregator, port, aggregator.context, aggregator.events)
        extra: dict[type, Callable[[Any], bool | None]] = {
            AnalyzeAudio: self._analyze_audio, UseController: self._use_controller,
        }
        self.handlers.update(extra)
        self.aggregator = aggregator
        self.core = aggregator.core
        self.state = self.core.initial()
        self._handled = self.core.handled_types
        self.offload = aggregator.offload
        self.strategies = self.core.controller.strategies
        self.resources = [s.open_resource(16000) for s in self.strategies]
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

    def _use_controller(self, e: UseController) -> None:
        self._use(e.controller)

    def _use(self, controller: TurnController) -> None:
        """Run a recommended controller: the old strategies' timers and resources go, the new ones' come."""
        for owner, key in list(self._timers):
            if owner >= 0:
                self._timer(owner, key, None)
        self._release()
        self.strategies = controller.strategies
        self.resources = [s.open_resource(16000) for s in self.strategies]
        self._handled = self.core.handled_with(controller)

    def _release(self) -> None:
        for strategy, resource in zip(self.strategies, self.resources, strict=False):
            if resource is not None:
                try:
                    strategy.close_resource(resource)
                except Exception:
                    log.exception("releasing %s's resource failed; contained", strategy.name)
        self.resources = []

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
        self._release()

