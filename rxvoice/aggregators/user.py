"""The user half of a pair: transcripts in, one user message per turn out.

The stage is a thin shell: the turn machine (:mod:`rxvoice.turns.machine`)
decides the turn, :class:`~rxvoice.aggregators.user_words.UserWords` keeps
its words, and the shell hands each frame to the one that handles its type
(a dispatch table built once per session, so a frame nobody handles costs a
lookup and a call).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Sequence
from typing import Any

from reactivex import abc

from ..context import LLMContext
from ..events import EventRegistry
from ..frames import (
    DOWN,
    UP,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    LLMMessagesAppendFrame,
    LLMMessagesTransformFrame,
    LLMMessagesUpdateFrame,
    LLMRunFrame,
    LLMSetToolChoiceFrame,
    LLMSetToolsFrame,
    LLMSpeculationEndedFrame,
    SpeechControlParamsFrame,
    StartFrame,
    TranslationFrame,
    UserBackchannelFrame,
)
from ..pipeline.offload import Offload
from ..pipeline.processor import Port
from ..pipeline.shell import TurnShell, TurnStage
from ..turns.config import TurnsConfig
from ..turns.controller import TurnController
from ..turns.machine import TurnMachine
from ..turns.mute import MuteStrategy
from ..turns.reports import (
    EVENT_USER_BACKCHANNEL,
    EVENT_USER_MUTE_STARTED,
    EVENT_USER_MUTE_STOPPED,
    EVENT_USER_TURN_CLASSIFIED,
    EVENT_USER_TURN_IDLE,
    EVENT_USER_TURN_INFERENCE_TRIGGERED,
    EVENT_USER_TURN_MESSAGE_ADDED,
    EVENT_USER_TURN_RECOVERED,
    EVENT_USER_TURN_SPECULATION,
    EVENT_USER_TURN_STARTED,
    EVENT_USER_TURN_STOP_TIMEOUT,
    EVENT_USER_TURN_STOPPED,
)
from .context_writes import context_update, tool_choice_update, tools_update
from .user_words import UserWords
from .vad_config import VADConfig

__all__ = ["USER_EVENTS", "UserAggregator"]

log = logging.getLogger("rxvoice.aggregators.user")

USER_EVENTS = (
    EVENT_USER_TURN_STARTED,
    EVENT_USER_TURN_STOPPED,
    EVENT_USER_TURN_INFERENCE_TRIGGERED,
    EVENT_USER_TURN_STOP_TIMEOUT,
    EVENT_USER_TURN_IDLE,
    EVENT_USER_TURN_MESSAGE_ADDED,
    EVENT_USER_TURN_RECOVERED,
    EVENT_USER_MUTE_STARTED,
    EVENT_USER_MUTE_STOPPED,
    EVENT_USER_TURN_SPECULATION,
    EVENT_USER_TURN_CLASSIFIED,
    EVENT_USER_BACKCHANNEL,
)
"""The events of the user half of a pair (plus ``on_error``)."""


class UserAggregator(TurnStage):
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
    ``on_user_turn_recovered`` (:class:`UserTurnRecovered`: a false end
    undone, see ``TurnsConfig.recovery_window``),
    ``on_user_mute_started``, ``on_user_mute_stopped``, and ``on_error``
    (a typed error from :mod:`rxvoice.errors`).

    ``offload`` is where heavy strategy work (an end-of-turn model) runs:
    a callable taking a job and returning a ``concurrent.futures.Future``
    (default: rxvoice's shared worker pool). Tests set it to
    :func:`rxvoice.pipeline.inline_offload` or a
    :class:`rxvoice.pipeline.SchedulerOffload` to put model latency in virtual
    time; it can be set after construction (``pair.user().offload = ...``),
    before the pipeline runs.
    """

    name = "UserContextAggregator"
    exclusive = "the user's messages to the shared conversation"

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
        self.machine = TurnMachine(self.turns, mute)
        self.tool_change_messages = tool_change_messages
        self.scheduler = scheduler
        self.offload = offload
        self.events = EventRegistry(self, (*USER_EVENTS, "on_error"))

    @property
    def context(self) -> LLMContext:
        """The shared conversation this aggregator writes to."""
        return self._context

    def open(self, port: Port) -> _UserSession:
        session = _UserSession(self, port)
        self._track(session)
        return session


Handler = Callable[[Frame, Direction], object]


class _UserSession(TurnShell):
    """One session of a user aggregator: the machine's state, the words, the frames handed to each."""

    # What the user said is written (and asked about) before the end goes on, so the model's answer to it
    # comes before the end: an end lets work already asked for finish (Pipecat forwards the end first, and
    # its model never answers those words).
    decides_before_end = True

    def __init__(self, aggregator: UserAggregator, port: Port) -> None:
        empty_turn = aggregator.turns.empty_turn
        vad = aggregator.vad
        super().__init__(
            aggregator, port, aggregator.events, aggregator.machine, context=aggregator.context,
            offload=aggregator.offload,
            words=lambda shell: UserWords(shell, empty_turn, aggregator.turns.speculation),
            params=None if vad is None else SpeechControlParamsFrame(vad_params=getattr(vad.analyzer, "params", None)),
        )
        self.aggregator = aggregator
        self.words: UserWords = self.turn.words  # type: ignore[assignment]
        self.vad = aggregator.vad.open(self) if aggregator.vad is not None else None
        self._decides: Handler = self.decide
        """The handler of the turn's frames, one bound method for the whole table (:meth:`on_down` knows it)."""
        self._inline: object = self._decides if type(self).decide is TurnShell.decide else None
        """:meth:`on_down` writes :meth:`TurnShell.decide` out when it is that (not a subclass's own)."""
        self._dispatch: dict[type[Frame], Handler] = self._table()
        self.down_handled: Container[type] = self._dispatch
        """The frame types :meth:`on_down` handles; it passes every other one on as it is (the way into a
        fused chain does that itself). The same table for the session's life (updated in place)."""

    def _table(self) -> dict[type[Frame], Handler]:
        """Who handles each frame type: built once (again when a recommendation swaps the strategies)."""
        # The turn's frames go straight into the machine's decision (``decide``): no hop, no sorting.
        table: dict[type[Frame], Handler] = dict.fromkeys(self.handled, self._decides)
        table.update({
            StartFrame: self._start, EndFrame: self._end, CancelFrame: self._end, LLMRunFrame: self._run,
            LLMMessagesAppendFrame: self._messages, LLMMessagesUpdateFrame: self._messages,
            LLMMessagesTransformFrame: self._messages, LLMSetToolsFrame: self._tools,
            LLMSetToolChoiceFrame: self._tool_choice, TranslationFrame: _consumed,
            LLMSpeculationEndedFrame: self._speculation_ended, UserBackchannelFrame: self._backchannel,
        })
        if self.vad is not None:
            table[InputAudioRawFrame] = self._audio
        return table

    def use(self, controller: TurnController) -> None:
        super().use(controller)
        table = self._table()
        self._dispatch.clear()  # in place: the door of a fused chain holds it
        self._dispatch.update(table)

    # -- frames ------------------------------------------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        handler = self._dispatch.get(type(frame))
        if handler is None:
            if direction is DOWN:
                self.link.emit_down(frame)
            else:
                self.link.emit_up(frame)
            return
        handler(frame, direction)

    def on_down(self, frame: Frame) -> None:
        """A frame from upstream: the one call a frame costs here (its failure is contained here too)."""
        handler = self._dispatch.get(type(frame))
        if handler is None:
            self.link.emit_down(frame)
            return
        try:
            if handler is self._inline:  # :meth:`TurnShell.decide`, written out: the turn's frames, every one
                clock = self.clock  # read, then called: not looked up as a method (faster)
                self.now = now = clock()
                self.machine.on_frame(self.turn, frame, DOWN, now)
            else:
                handler(frame, DOWN)
        except Exception as exc:
            self.link.failed(frame, exc)

    def on_up(self, frame: Frame) -> None:
        """A frame from downstream (the bot's speech, errors, tool results)."""
        handler = self._dispatch.get(type(frame))
        if handler is None:
            self.link.emit_up(frame)
            return
        try:
            handler(frame, UP)
        except Exception as exc:
            self.link.failed(frame, exc)

    def _audio(self, frame: Frame, direction: Direction) -> None:
        heard = True
        if type(frame) in self.handled:
            heard = self.decide(frame, direction)
        else:
            self.emit(frame, direction)
        if heard and self.vad is not None:  # muted audio never reaches the analyzer
            self.vad.analyze(frame)  # type: ignore[arg-type]

    def _start(self, frame: Frame, direction: Direction) -> None:
        self.start_session(frame, direction)

    def _end(self, frame: Frame, direction: Direction) -> None:
        self.end_session(frame, direction)

    def _greet(self) -> None:
        self.machine.greet(self.turn)

    def _run(self, frame: Frame, direction: Direction) -> None:
        self._greet()
        self.emit_context(DOWN)

    def _messages(self, frame: Frame, direction: Direction) -> None:
        self._greet()
        if self.write(context_update(frame)) and getattr(frame, "run_llm", None):
            self.emit_context(DOWN)

    def _tools(self, frame: Frame, direction: Direction) -> None:
        self._greet()
        self.write(tools_update(frame, self.aggregator.tool_change_messages))  # type: ignore[arg-type]
        self.emit(frame, direction)

    def _tool_choice(self, frame: Frame, direction: Direction) -> None:
        self._greet()
        self.write(tool_choice_update(frame))  # type: ignore[arg-type]

    def _speculation_ended(self, frame: Frame, direction: Direction) -> None:
        self.words.speculation_ended(frame)  # type: ignore[arg-type]
        self.emit(frame, direction)

    def _backchannel(self, frame: Frame, direction: Direction) -> None:
        """A continuer (decided here or upstream): reported, kept out of the conversation, passed on."""
        if self.listens(EVENT_USER_BACKCHANNEL):
            self.event(EVENT_USER_BACKCHANNEL, frame)
        self.emit(frame, direction)

    def close(self) -> None:
        super().close()
        if self.vad is not None:
            self.vad.close()
        self.aggregator._forget(self)


def _consumed(frame: Frame, direction: Direction) -> None:
    return None

