"""Turn detection as a stage of its own: :class:`UserTurnProcessor`.

The user aggregator decides turns itself by default, on the same frames and
in the same order as it gathers the words. Where the decision has to be
shared (an interruption decision, a transport, a recorder need it too), put
a :class:`UserTurnProcessor` after speech-to-text and give the aggregator
:func:`~rxvoice.turns.ExternalStrategies`, so it adopts what the processor
decided instead of deciding again::

    pipeline(stt, UserTurnProcessor(), pair.user(), llm, tts, output, pair.assistant())
    # with Pair(context, turns=TurnsConfig(strategies=ExternalStrategies()))

The processor forwards every frame **first**, transcripts included, and only
then sends the decisions it caused (user started/stopped, the interruption),
so a decision never overtakes the transcript it was made on: the ordering
guarantee of the aggregator holds across the two stages. It runs the same
pure pieces as the aggregator (turn controller, mute, idle, the late-tail
rule) but gathers no words and writes nothing to the conversation.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from reactivex import abc

from ..aggregators.effects import Broadcast, Call, Effect, Emit, Raise, StopTimers, Timer
from ..aggregators.reports import UserTurnStopped, iso8601
from ..aggregators.strategy_shell import StrategyProcessor, StrategyShell
from ..aggregators.turn_common import IDLE_OWNER, USER_INPUT, TurnCoreBase, UseController
from ..context import LLMContext
from ..errors import ConfigurationError
from ..events import EventRegistry, Lazy
from ..frames import (
    DOWN,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    LLMServiceMetadataFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    StartFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..pipeline.processor import Port
from .config import TurnsConfig
from .controller import (
    AggregationReset,
    ControllerEffect,
    InferenceTriggered,
    StopTimedOut,
    StrategyCall,
    StrategyPush,
    StrategyTimer,
    TurnController,
    TurnStarted,
    TurnState,
    TurnStopped,
)
from .idle import IDLE_TYPES, IdleState, idle_fired, idle_step
from .late_tail import may_start
from .mute import MuteState, MuteStrategy, mute_initial, mute_step
from .offload import Offload
from .recommend import recommended_controller

__all__ = ["TURN_EVENTS", "TurnProcessorCore", "TurnProcessorState", "UserTurnProcessor"]

log = logging.getLogger("rxvoice.turns.processor")

TURN_EVENTS = (
    "on_user_turn_started",
    "on_user_turn_stopped",
    "on_user_turn_inference_triggered",
    "on_user_turn_stop_timeout",
    "on_user_turn_idle",
    "on_user_mute_started",
    "on_user_mute_stopped",
)
"""The processor's events: the aggregator's names, minus the message it does not write (plus ``on_error``)."""

_OWN: frozenset[type[Frame]] = frozenset({
    StartFrame, EndFrame, CancelFrame, TranscriptionFrame, InterimTranscriptionFrame,
    VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame, ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame, STTMetadataFrame, LLMServiceMetadataFrame,
})
_STARTED = UserStartedSpeakingFrame()
_STOPPED = UserStoppedSpeakingFrame()
_MUTED_STOP = VADUserStoppedSpeakingFrame(0.0, 0.0)


ProcessorEffect = Effect | UseController


class TurnProcessorState(NamedTuple):
    """What the processor remembers between frames."""

    turn: TurnState
    mute: MuteState
    idle: IdleState
    words: bool = False
    started_at: float | None = None
    answered_at: float | None = None
    speech_since: bool = False
    vad_seen: bool = False
    mute_announced: bool = True
    ended: bool = False
    controller: TurnController | None = None


class TurnProcessorCore(TurnCoreBase):
    """The processor's decisions as a pure step: frame in, new state and effects out.

    The order per frame: mute (judged by the state before the frame), the
    frame forwarded, then the controller and the idle watch, whose
    decisions therefore come out behind the frame.
    """

    def __init__(self, turns: TurnsConfig, mute: Sequence[MuteStrategy[Any]] = ()) -> None:
        super().__init__(turns, mute, _OWN)

    def initial(self) -> TurnProcessorState:
        """The state a session starts with."""
        mute = mute_initial(self.mute)
        return TurnProcessorState(
            turn=self.controller.initial(), mute=mute,
            idle=IdleState(timeout=float(self.turns.idle_timeout or 0.0)), mute_announced=not mute.muted,
        )

    def on_frame(
        self, s: TurnProcessorState, frame: Frame, direction: Direction, now: float
    ) -> tuple[TurnProcessorState, list[ProcessorEffect]]:
        """Handle one frame."""
        out: list[ProcessorEffect] = []
        t = type(frame)
        controller = s.controller or self.controller
        if t is StartFrame:
            out.append(Emit(frame, direction))
            if not s.mute_announced:
                s = self._announce(s, True, out)
            if t in controller.handled_types:
                s = self._controller(s, controller, frame, now, out, True)
            return s, out
        if t is EndFrame or t is CancelFrame:
            out.append(Emit(frame, direction))
            return self._end(s, now, out), out

        if self.mute:
            if not s.mute_announced:
                s = self._announce(s, True, out)
            prior = s.mute.muted
            if t in self.mute_types:
                s = s._replace(mute=mute_step(self.mute, s.mute, frame))
                if s.mute.muted != prior:
                    s = self._announce(s, s.mute.muted, out)
                    if s.mute.muted and s.turn.user_speaking:
                        s = self._controller(s, controller, _MUTED_STOP, now, out, False)
            if prior and t in USER_INPUT:
                return s, out

        start_ok = True
        if t is ProposedUserStartedSpeakingFrame:
            if not controller.resolves_proposed_starts:
                out.append(Emit(frame, direction))
        elif t is ProposedUserStoppedSpeakingFrame:
            if not controller.resolves_proposed_stops:
                out.append(Emit(frame, direction))
        else:
            out.append(Emit(frame, direction))
            if t is TranscriptionFrame or t is InterimTranscriptionFrame:
                start_ok = may_start(s.turn.open, s.vad_seen, s.speech_since, s.answered_at, now,
                                     self.turns.late_transcript_window)
                if t is TranscriptionFrame and not s.words and frame.text.strip():  # type: ignore[attr-defined]
                    s = s._replace(words=True)
            elif t is VADUserStartedSpeakingFrame:
                s = s._replace(vad_seen=True, speech_since=True)
            elif t is VADUserStoppedSpeakingFrame:
                s = s._replace(vad_seen=True)
            elif t is STTMetadataFrame or t is LLMServiceMetadataFrame:
                recommended = recommended_controller(self.turns, controller, frame)
                if recommended is not None:
                    out.append(UseController(recommended))
                    turn, ce = recommended.takeover(s.turn, now)
                    s = self._apply(s._replace(turn=turn, controller=recommended), ce, now, out)
                    controller = recommended
        if t in controller.handled_types:
            s = self._controller(s, controller, frame, now, out, start_ok)
        if t in IDLE_TYPES:
            s = self._idle(s, frame, out)
        return s, out

    def on_timer(
        self, s: TurnProcessorState, owner: int, key: str, now: float
    ) -> tuple[TurnProcessorState, list[ProcessorEffect]]:
        """A timer of this session fired."""
        out: list[ProcessorEffect] = []
        if owner == IDLE_OWNER:
            idle, effects = idle_fired(s.idle)
            self._idle_fired(effects, out)
            return s._replace(idle=idle), out
        turn, ce = (s.controller or self.controller).on_timer(s.turn, owner, key, now)
        return self._apply(s._replace(turn=turn), ce, now, out), out

    def on_result(
        self, s: TurnProcessorState, owner: int, key: str, value: Any, now: float
    ) -> tuple[TurnProcessorState, list[ProcessorEffect]]:
        """A strategy's resource call came back."""
        out: list[ProcessorEffect] = []
        turn, ce = (s.controller or self.controller).on_result(s.turn, owner, key, value, now)
        return self._apply(s._replace(turn=turn), ce, now, out), out

    def end_of_input(self, s: TurnProcessorState, now: float) -> tuple[TurnProcessorState, list[ProcessorEffect]]:
        """The input completed: like an end frame, without one to forward."""
        out: list[ProcessorEffect] = []
        return self._end(s, now, out), out

    # -- pieces ------------------------------------------------------------------------

    def _announce(self, s: TurnProcessorState, muted: bool, out: list[ProcessorEffect]) -> TurnProcessorState:
        self._announce_mute(muted, out)
        return s._replace(mute_announced=True)

    def _end(self, s: TurnProcessorState, now: float, out: list[ProcessorEffect]) -> TurnProcessorState:
        if s.ended:
            return s
        if s.turn.open:
            out.append(Raise("on_user_turn_stopped", _report(None, s.started_at, now)))
        out.append(StopTimers())
        return s._replace(ended=True, turn=s.turn._replace(open=False))

    def _controller(
        self, s: TurnProcessorState, controller: TurnController, frame: Frame, now: float,
        out: list[ProcessorEffect], start_ok: bool,
    ) -> TurnProcessorState:
        turn, ce = controller.on_frame(s.turn, frame, now, may_start=start_ok)
        s = s._replace(turn=turn)
        return self._apply(s, ce, now, out) if ce else s

    def _apply(
        self, s: TurnProcessorState, effects: list[ControllerEffect], now: float, out: list[ProcessorEffect]
    ) -> TurnProcessorState:
        for e in effects:
            if isinstance(e, StrategyTimer):
                out.append(Timer(e.owner, e.key, e.delay))
            elif isinstance(e, TurnStarted):
                s = s._replace(started_at=now)
                if e.speaking_frames:
                    out.append(Broadcast(_STARTED))
                s = self._idle(s, _STARTED, out)
                if e.interruptions:
                    out.append(Broadcast(InterruptionFrame()))
                out.append(Raise("on_user_turn_started", e.strategy))
            elif isinstance(e, InferenceTriggered):
                out.append(Raise("on_user_turn_inference_triggered", e.strategy))
            elif isinstance(e, TurnStopped):
                if e.speaking_frames:
                    out.append(Broadcast(_STOPPED))
                s = self._idle(s, _STOPPED, out)
                out.append(Raise("on_user_turn_stopped", _report(e.strategy, s.started_at, now)))
                s = s._replace(
                    answered_at=now if s.words else None, words=False, speech_since=False, started_at=None
                )
            elif isinstance(e, StopTimedOut):
                out.append(Raise("on_user_turn_stop_timeout"))
            elif isinstance(e, AggregationReset):
                s = s._replace(words=False)
            elif isinstance(e, StrategyPush):
                out.append(Broadcast(e.frame) if e.both_ways else Emit(e.frame, e.direction))
            elif isinstance(e, StrategyCall):
                out.append(Call(e.owner, e.key, e.fn, e.offload))
        return s

    def _idle(self, s: TurnProcessorState, frame: Frame, out: list[ProcessorEffect]) -> TurnProcessorState:
        idle, effects = idle_step(s.idle, frame)
        self._idle_timer(effects, out)
        return s._replace(idle=idle)


def _report(strategy: Any, started_at: float | None, now: float) -> Lazy:
    started = now if started_at is None else started_at
    return Lazy(lambda: UserTurnStopped(strategy, "", iso8601(started)))


class UserTurnProcessor(StrategyProcessor):
    """Decides when the user's turn starts and stops, as a stage of its own.

    Args:
        turns: Strategies, timeouts, idle and mute settings (the defaults
            without it). ``empty_turn`` and ``late_transcript_window`` are
            the aggregator's business, except that the late-tail rule is
            applied here too (a late transcript opens no turn).
        mute: Mute strategies (merged with ``turns.mute``).
        scheduler: The scheduler to run on (default: the one given at
            subscribe time).
        offload: Where heavy strategy work runs (see :mod:`rxvoice.turns.offload`).

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
        self.core = TurnProcessorCore(self.turns, mute)
        self.scheduler = scheduler
        self.offload = offload
        self.events = EventRegistry(self, (*TURN_EVENTS, "on_error"))
        self.core.listening = self.events.listened
        self._session: _TurnSession | None = None

    @property
    def state(self) -> TurnProcessorState | None:
        """The current session's state (for inspection and tests), or ``None``."""
        return self._session.state if self._session is not None else None

    def open(self, port: Port) -> _TurnSession:
        session = _TurnSession(self, port)
        self._session = session
        return session

class _TurnSession(StrategyShell):
    """One session of a processor: the core's state and its effects carried out."""

    def __init__(self, processor: UserTurnProcessor, port: Port) -> None:
        # The processor never writes to a conversation: the shell's context is a placeholder.
        super().__init__(processor, port, LLMContext(), processor.events, processor.core)
        self.core = processor.core
        self.state = self.core.initial()
        self.offload = processor.offload

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if type(frame) not in self._handled:
            self._push(frame, direction)
            return
        self.now = now = self.port.time()
        self.state, effects = self.core.on_frame(self.state, frame, direction, now)
        self.execute(effects)

    def execute(self, effects: list[ProcessorEffect]) -> None:
        self.run(effects)

    def on_timer(self, owner: int, key: str) -> None:
        self.state, effects = self.core.on_timer(self.state, owner, key, self.now)
        self.execute(effects)

    def on_result(self, owner: int, key: str, value: Any) -> None:
        self.now = now = self.port.time()
        self.state, effects = self.core.on_result(self.state, owner, key, value, now)
        self.execute(effects)

    def on_input_end(self, direction: Direction) -> None:
        if direction is DOWN and not self.state.ended:
            self.now = now = self.port.time()
            self.state, effects = self.core.end_of_input(self.state, now)
            self.execute(effects)
