"""The user side's decisions as a pure step function.

``UserCore.on_frame(state, frame, direction, now) -> (state, effects)`` is
the whole user aggregator minus the plumbing. For each frame, in this order:

1. **mute**: the frame is judged by the mute state from *before* it; every
   mute strategy then sees it, and a change is announced;
2. **the frame itself**: transcripts are gathered, context frames applied,
   everything else forwarded;
3. **the turn controller**, then **the idle watch**.

The order is the point: a turn that ends on a transcript has that
transcript in its message, because the transcript was gathered before the
strategies decided. A transcript arriving just after an answered turn is
held (:mod:`rxvoice.turns.late_tail`) and written with the next turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..events import Lazy
from ..frames import (
    DOWN,
    UP,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    LLMMessagesAppendFrame,
    LLMMessagesTransformFrame,
    LLMMessagesUpdateFrame,
    LLMRunFrame,
    LLMServiceMetadataFrame,
    LLMSetToolChoiceFrame,
    LLMSetToolsFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    SpeechControlParamsFrame,
    StartFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    TranslationFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..text.parts import Part, concatenate
from ..turns.config import TurnsConfig
from ..turns.controller import (
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
from ..turns.idle import IDLE_TYPES, IdleState, idle_fired, idle_step
from ..turns.late_tail import may_start
from ..turns.mute import MuteState, MuteStrategy, mute_initial, mute_step
from ..turns.recommend import recommended_controller
from .context_writes import context_update, tool_choice_update, tools_update
from .effects import (
    Broadcast,
    Call,
    Effect,
    Emit,
    EmitContext,
    Raise,
    Requeue,
    StopTimers,
    Timer,
    Write,
)
from .reports import UserTurnMessageAdded, UserTurnStopped, iso8601
from .turn_common import IDLE_OWNER, USER_INPUT, TurnCoreBase, UseController

__all__ = [
    "IDLE_OWNER",
    "USER_EVENTS",
    "USER_INPUT",
    "AnalyzeAudio",
    "ShellEffect",
    "UseController",
    "UserCore",
    "UserState",
]

USER_EVENTS = (
    "on_user_turn_started",
    "on_user_turn_stopped",
    "on_user_turn_inference_triggered",
    "on_user_turn_stop_timeout",
    "on_user_turn_idle",
    "on_user_turn_message_added",
    "on_user_mute_started",
    "on_user_mute_stopped",
)
"""The events of the user half of a pair (plus ``on_error``)."""

_OWN: frozenset[type[Frame]] = frozenset({
    StartFrame, EndFrame, CancelFrame, TranscriptionFrame, InterimTranscriptionFrame, TranslationFrame,
    LLMRunFrame, LLMMessagesAppendFrame, LLMMessagesUpdateFrame, LLMMessagesTransformFrame,
    LLMSetToolsFrame, LLMSetToolChoiceFrame, ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame, BotStartedSpeakingFrame, BotStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame, STTMetadataFrame, LLMServiceMetadataFrame,
    InterruptionFrame,
})

_STARTED = UserStartedSpeakingFrame()
_STOPPED = UserStoppedSpeakingFrame()


class AnalyzeAudio(NamedTuple):
    """Run the aggregator's own VAD over this (unmuted) audio."""

    frame: InputAudioRawFrame


ShellEffect = Effect | AnalyzeAudio | UseController
"""What the user core asks its shell for: the shared effects plus the two only the user shell knows."""


class UserState(NamedTuple):
    """Everything the user side remembers between frames."""

    turn: TurnState
    mute: MuteState
    idle: IdleState
    parts: tuple[Part, ...] = ()
    held: tuple[Part, ...] = ()
    started_at: float | None = None
    whole: str = ""
    user_id: str = ""
    answered_at: float | None = None
    speech_since: bool = False
    vad_seen: bool = False
    bot_speaking: bool = False
    interrupted_bot: bool = False
    recoveries: int = 0
    mute_announced: bool = True
    ended: bool = False
    controller: TurnController | None = None


class _Work:
    """The mutable scratch of one step: loaded from a state, stored as a new one (never escapes)."""

    __slots__ = UserState._fields

    def __init__(self, s: UserState) -> None:
        (self.turn, self.mute, self.idle, self.parts, self.held, self.started_at, self.whole, self.user_id,
         self.answered_at, self.speech_since, self.vad_seen, self.bot_speaking, self.interrupted_bot,
         self.recoveries, self.mute_announced, self.ended, self.controller) = s

    def store(self) -> UserState:
        return _new_state(UserState, (
            self.turn, self.mute, self.idle, self.parts, self.held, self.started_at, self.whole, self.user_id,
            self.answered_at, self.speech_since, self.vad_seen, self.bot_speaking, self.interrupted_bot,
            self.recoveries, self.mute_announced, self.ended, self.controller,
        ))


_new_state = tuple.__new__


def _stopped(strategy: Any, w: _Work, now: float) -> Lazy:
    started = now if w.started_at is None else w.started_at
    whole, uid = w.whole, w.user_id
    return Lazy(lambda: UserTurnStopped(strategy, whole, iso8601(started), uid))


def _add_user(text: str) -> Write:
    return Write(lambda c: c.add_user_message(text))


class UserCore(TurnCoreBase):
    """The user aggregator's logic, configured once and shared by every session."""

    def __init__(
        self,
        turns: TurnsConfig,
        mute: Sequence[MuteStrategy[Any]] = (),
        *,
        tool_change_messages: bool = False,
        has_vad: bool = False,
        vad_params: Any = None,
    ) -> None:
        super().__init__(turns, mute, _OWN)
        self.tool_change_messages = tool_change_messages
        self.has_vad = has_vad
        self.vad_params = vad_params
        self.late_window = turns.late_transcript_window
        self.empty_turn = turns.empty_turn
        if has_vad:
            self.handled_types |= {InputAudioRawFrame}
        # Handled only for their effect on mute, turns or idle: the frame itself just goes on.
        self._forward_only = self.handled_types - _OWN - {InputAudioRawFrame}
        self._muted_stop = VADUserStoppedSpeakingFrame(0.0, 0.0)

    def initial(self) -> UserState:
        """The state a session starts with."""
        mute = mute_initial(self.mute)
        return UserState(
            turn=self.controller.initial(),
            mute=mute,
            idle=IdleState(timeout=float(self.turns.idle_timeout or 0.0)),
            mute_announced=not mute.muted,
        )

    # -- frames ------------------------------------------------------------------

    def on_frame(
        self, s: UserState, frame: Frame, direction: Direction, now: float
    ) -> tuple[UserState, list[ShellEffect]]:
        """Handle one frame."""
        out: list[ShellEffect] = []
        w = _Work(s)
        t = type(frame)
        controller = w.controller or self.controller
        if t is StartFrame:
            out.append(Emit(frame, direction))
            if not w.mute_announced:
                self._announce(w, True, out)
            if self.has_vad:
                out.append(Broadcast(SpeechControlParamsFrame(vad_params=self.vad_params)))
            if t in controller.handled_types:
                self._controller(w, frame, now, out, may_start=True)
            return w.store(), out
        if t is EndFrame:
            out.append(Emit(frame, direction))
            self._session_end(w, now, out)
            return w.store(), out
        if t is CancelFrame:
            self._session_end(w, now, out)
            out.append(Emit(frame, direction))
            return w.store(), out

        if self.mute:
            if not w.mute_announced:
                self._announce(w, True, out)
            prior = w.mute.muted
            if t in self.mute_types:
                w.mute = mute_step(self.mute, w.mute, frame)
                if w.mute.muted != prior:
                    self._announce(w, w.mute.muted, out)
                    if w.mute.muted and w.turn.user_speaking:
                        # The user's "stopped" will be dropped while muted: take the speech as over
                        # now, so the turn can end (and the watchdog close it) instead of hanging.
                        self._controller(w, self._muted_stop, now, out, may_start=False)
            if prior and t in USER_INPUT:
                return w.store(), out

        may_start = True
        if t in self._forward_only:
            out.append(Emit(frame, direction))
        elif t is TranscriptionFrame:
            may_start = self._may_start(w, now)
            text = frame.text  # type: ignore[attr-defined]
            if text.strip():
                part = Part(text, frame.includes_inter_frame_spaces)  # type: ignore[attr-defined]
                if may_start:
                    if w.started_at is None:
                        w.started_at = now
                    w.parts = (*w.parts, part)
                else:  # a late tail of the answered turn: it joins the next turn's message
                    w.held = (*w.held, part)
                w.user_id = frame.user_id or w.user_id  # type: ignore[attr-defined]
        elif t is InterimTranscriptionFrame:
            may_start = self._may_start(w, now)
        elif t is TranslationFrame:
            pass
        elif t is VADUserStartedSpeakingFrame:
            w.vad_seen = w.speech_since = True
            out.append(Emit(frame, direction))
        elif t is VADUserStoppedSpeakingFrame:
            w.vad_seen = True
            out.append(Emit(frame, direction))
        elif t is BotStartedSpeakingFrame:
            w.bot_speaking = True
            out.append(Emit(frame, direction))
        elif t is BotStoppedSpeakingFrame:
            w.bot_speaking = False
            out.append(Emit(frame, direction))
        elif t is InterruptionFrame:
            out.append(Emit(frame, direction))
            if w.turn.open and w.bot_speaking:  # an adopted turn's interruption, sent by whoever decided it
                w.interrupted_bot = True
        elif t is LLMRunFrame:
            out.append(EmitContext(DOWN))
        elif t is LLMMessagesAppendFrame or t is LLMMessagesUpdateFrame or t is LLMMessagesTransformFrame:
            out.append(context_update(frame))
            if getattr(frame, "run_llm", None):
                out.append(EmitContext(DOWN))
        elif t is LLMSetToolsFrame:
            out.append(tools_update(frame, self.tool_change_messages))  # type: ignore[arg-type]
            out.append(Emit(frame, direction))
        elif t is LLMSetToolChoiceFrame:
            out.append(tool_choice_update(frame))  # type: ignore[arg-type]
        elif t is ProposedUserStartedSpeakingFrame:
            if not controller.resolves_proposed_starts:
                out.append(Emit(frame, direction))
        elif t is ProposedUserStoppedSpeakingFrame:
            if not controller.resolves_proposed_stops:
                out.append(Emit(frame, direction))
        elif t is STTMetadataFrame or t is LLMServiceMetadataFrame:
            out.append(Emit(frame, direction))
            recommended = recommended_controller(self.turns, controller, frame)
            if recommended is not None:
                self._use(w, recommended, now, out)
                controller = recommended
        else:
            out.append(Emit(frame, direction))
            if t is InputAudioRawFrame and self.has_vad:
                out.append(AnalyzeAudio(frame))  # type: ignore[arg-type]

        if t in controller.handled_types:
            self._controller(w, frame, now, out, may_start=may_start)
        if t in IDLE_TYPES:
            self._idle(w, frame, out)
        return w.store(), out

    def _may_start(self, w: _Work, now: float) -> bool:
        """Whether a transcript may open a turn (a late tail of an answered turn may not)."""
        return may_start(w.turn.open, w.vad_seen, w.speech_since, w.answered_at, now, self.late_window)

    def _use(self, w: _Work, controller: TurnController, now: float, out: list[ShellEffect]) -> None:
        """Swap this session's controller for one a service recommended."""
        out.append(UseController(controller))
        w.controller = controller
        w.turn, ce = controller.takeover(w.turn, now)
        if ce:
            self._apply(w, ce, now, out)

    # -- timers and results ----------------------------------------------------------

    def on_timer(self, s: UserState, owner: int, key: str, now: float) -> tuple[UserState, list[ShellEffect]]:
        """A timer of this session fired."""
        out: list[ShellEffect] = []
        w = _Work(s)
        if owner == IDLE_OWNER:
            w.idle, effects = idle_fired(w.idle)
            self._idle_fired(effects, out)
            return w.store(), out
        w.turn, ce = (w.controller or self.controller).on_timer(w.turn, owner, key, now)
        self._apply(w, ce, now, out)
        return w.store(), out

    def on_result(
        self, s: UserState, owner: int, key: str, value: Any, now: float
    ) -> tuple[UserState, list[ShellEffect]]:
        """A strategy's resource call came back."""
        out: list[ShellEffect] = []
        w = _Work(s)
        w.turn, ce = (w.controller or self.controller).on_result(w.turn, owner, key, value, now)
        self._apply(w, ce, now, out)
        return w.store(), out

    def end_of_input(self, s: UserState, now: float) -> tuple[UserState, list[ShellEffect]]:
        """The input completed: like an end frame, without one to forward."""
        out: list[ShellEffect] = []
        w = _Work(s)
        self._session_end(w, now, out)
        return w.store(), out

    # -- pieces ----------------------------------------------------------------------

    def _announce(self, w: _Work, muted: bool, out: list[ShellEffect]) -> None:
        self._announce_mute(muted, out)
        w.mute_announced = True

    def _controller(
        self, w: _Work, frame: Frame, now: float, out: list[ShellEffect], *, may_start: bool
    ) -> None:
        w.turn, ce = (w.controller or self.controller).on_frame(w.turn, frame, now, may_start=may_start)
        if ce:
            self._apply(w, ce, now, out)

    def _apply(self, w: _Work, effects: list[ControllerEffect], now: float, out: list[ShellEffect]) -> None:
        for e in effects:
            et = type(e)
            if et is StrategyTimer:
                out.append(Timer(e.owner, e.key, e.delay))  # type: ignore[union-attr, arg-type]
            elif et is TurnStarted:
                self._turn_started(w, e, now, out)  # type: ignore[arg-type]
            elif et is InferenceTriggered:
                self._commit(w, now, out)
                if self.listening("on_user_turn_inference_triggered"):
                    out.append(Raise("on_user_turn_inference_triggered", e.strategy))  # type: ignore[union-attr]
            elif et is TurnStopped:
                self._turn_stopped(w, e, now, out)  # type: ignore[arg-type]
            elif et is StopTimedOut:
                if self.listening("on_user_turn_stop_timeout"):
                    out.append(Raise("on_user_turn_stop_timeout"))
            elif et is AggregationReset:
                w.parts = ()
            elif et is StrategyPush:
                p: StrategyPush = e  # type: ignore[assignment]
                if p.both_ways:
                    out.append(Requeue(p.frame, DOWN))
                    out.append(Emit(p.frame, UP))
                elif p.direction is DOWN:
                    out.append(Requeue(p.frame, DOWN))
                else:
                    out.append(Emit(p.frame, p.direction))
            elif et is StrategyCall:
                c: StrategyCall = e  # type: ignore[assignment]
                out.append(Call(c.owner, c.key, c.fn, c.offload))

    def _turn_started(self, w: _Work, e: TurnStarted, now: float, out: list[ShellEffect]) -> None:
        w.started_at = now
        w.whole = ""
        w.interrupted_bot = e.interruptions and w.bot_speaking
        if e.speaking_frames:
            out.append(Broadcast(_STARTED))
        self._idle(w, _STARTED, out)
        if e.interruptions:
            out.append(Broadcast(InterruptionFrame()))
        if self.listening("on_user_turn_started"):
            out.append(Raise("on_user_turn_started", e.strategy))

    def _commit(self, w: _Work, now: float, out: list[ShellEffect]) -> None:
        """Write what was gathered as one user message and ask the model to answer."""
        if w.held:
            parts, w.held = (*w.held, *w.parts), ()
        elif w.parts:
            parts = w.parts
        else:
            return
        text = concatenate(parts)
        w.parts = ()
        if not text:
            return
        started = now if w.started_at is None else w.started_at
        uid = w.user_id
        out.append(_add_user(text))
        out.append(EmitContext(DOWN))
        if self.listening("on_user_turn_message_added"):
            report = Lazy(lambda: UserTurnMessageAdded(text, iso8601(started), uid))
            out.append(Raise("on_user_turn_message_added", report))
        w.whole = f"{w.whole} {text}".strip() if w.whole else text

    def _turn_stopped(self, w: _Work, e: TurnStopped, now: float, out: list[ShellEffect]) -> None:
        if e.speaking_frames:
            out.append(Broadcast(_STOPPED))
        self._idle(w, _STOPPED, out)
        self._commit(w, now, out)
        if self.listening("on_user_turn_stopped"):
            out.append(Raise("on_user_turn_stopped", _stopped(e.strategy, w, now)))
        if w.whole:
            w.recoveries = 0
            w.answered_at = now
        else:
            self._empty_turn(w, out)
            w.answered_at = None
        w.started_at = None
        w.whole = ""
        w.speech_since = False
        w.interrupted_bot = False

    def _empty_turn(self, w: _Work, out: list[ShellEffect]) -> None:
        """A turn with no words: if it cut the bot off for nothing, have the model ask again."""
        cfg = self.empty_turn
        if cfg is None:
            return
        prompt = cfg.interrupted_prompt if w.interrupted_bot else cfg.idle_prompt
        if not prompt or w.recoveries >= cfg.max_consecutive_recoveries or w.mute.muted or w.idle.calls > 0:
            return
        out.append(Write(lambda c: c.add_developer_message(prompt)))
        out.append(EmitContext(DOWN))
        w.recoveries += 1

    def _session_end(self, w: _Work, now: float, out: list[ShellEffect]) -> None:
        """End or cancel: whatever the user said is written; nothing is lost.

        An open turn (even an empty one) is reported stopped with no deciding
        strategy, so every started turn stops exactly once; so are words held
        outside a turn (a late tail), which this write answers. Input that
        arrives after an end (a stream that goes on after an ``EndFrame`` or
        ``CancelFrame``) is gathered as usual, and the next end writes it.
        """
        if w.ended and not (w.parts or w.held or w.turn.open):
            return
        self._commit(w, now, out)
        if (w.turn.open or w.whole) and self.listening("on_user_turn_stopped"):
            out.append(Raise("on_user_turn_stopped", _stopped(None, w, now)))
        out.append(StopTimers())
        w.whole = ""
        w.started_at = None
        w.ended = True
        w.turn = w.turn._replace(open=False)

    def _idle(self, w: _Work, frame: Frame, out: list[ShellEffect]) -> None:
        w.idle, effects = idle_step(w.idle, frame)
        self._idle_timer(effects, out)
