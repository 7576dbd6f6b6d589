"""The turn machine: a user turn's whole life, from the first sound to the answer, in one place.

Every stage that decides the user's turn runs this turn machine: the user
aggregator (which also keeps the words), :class:`UserTurnProcessor` and the
turn-taking detector (which only announce). Read top to bottom, this module
is the life of a turn; each step is a rule of its own:

1. **mute** (:meth:`TurnMachine._mute`): a frame is judged by the mute state
   from before it; every mute strategy then sees it, and a change is
   announced. What the user says while muted is dropped, not queued.
2. **the frame itself** (:meth:`TurnMachine._frame`): the user's speech and
   the bot's are noted; a transcript goes to the words (or is passed on) and
   the *late-tail rule* decides whether it may open a turn.
3. **the start chain, then the stop chain** (:meth:`TurnMachine._decide`):
   each strategy sees the frame types it handles, in order, until one halts
   its chain. Their effects are applied as they come:

   * a start opens a turn unless one is open (the turn is announced, the bot
     interrupted);
   * an inference inside an open turn writes what was said so far and asks
     for the answer;
   * a finalize closes the turn, never while the user is still speaking;
   * a reset of the aggregation is honoured only outside a turn (the words of
     an open turn are never dropped).
4. **the watchdog** closes a turn no strategy ended after ``stop_timeout``
   seconds without activity, never while the user speaks.
5. **the idle watch** (:mod:`rxvoice.turns.idle`) notices a user who stays
   silent after the bot stopped speaking.
6. **recovery from a false end** (:meth:`TurnMachine._recover`): a turn
   that starts within ``recovery_window`` seconds of the last one's end,
   before the bot has started speaking, reopens that turn. The reply in
   progress is interrupted (nothing of it was heard), the continuation joins
   the same user message, and the whole turn is answered once. Once the bot
   has spoken, resumed speech is an ordinary new turn (a barge-in).

Decisions have no clock, scheduler, thread or I/O: time comes in as an
argument, and what a decision does is a call on a narrow :class:`TurnPort`
(send a frame, arm a timer, run a strategy's resource call, raise an event)
and on :class:`Words` (the words of the turn, when a stage keeps them). A
test records those calls (:class:`RecordingPort`); the stages carry them out.
Per-session state is one mutable :class:`TurnState` that nobody else sees;
everything configured (strategies, routes, which features run at all) is
built once in :class:`TurnMachine`, so a feature that is not configured
(mute, idle, a recommendation) costs nothing per frame.

:func:`turn_step` makes the machine an accumulator for reactivex's own
``ops.scan``::

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..frames import (
    DOWN,
    UP,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Direction,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    LLMServiceMetadataFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    StartFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    UserMuteStartedFrame,
    UserMuteStoppedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from .config import TurnsConfig
from .controller import ACTIVITY, SPEAKING_OFF, SPEAKING_ON, TurnController
from .idle import IDLE_TYPES, SPEECH_TYPES, IdleState, idle_fired, idle_step
from .late_tail import may_start
from .mute import MuteStrategy, mute_types
from .reasons import TurnEndReason, end_of_session_reason, watchdog_reason
from .recommend import recommended_controller
from .reports import (
    EVENT_USER_MUTE_STARTED,
    EVENT_USER_MUTE_STOPPED,
    EVENT_USER_TURN_IDLE,
    EVENT_USER_TURN_INFERENCE_TRIGGERED,
    EVENT_USER_TURN_RECOVERED,
    EVENT_USER_TURN_STARTED,
    EVENT_USER_TURN_STOP_TIMEOUT,
    EVENT_USER_TURN_STOPPED,
    UserTurnRecovered,
    UserTurnStopped,
    iso8601,
)
from .strategy import (
    Analyze,
    Arm,
    Disarm,
    Effects,
    Finalize,
    Halt,
    Inference,
    Push,
    ResetAggregation,
    Start,
    Strategy,
    Touch,
)

__all__ = [
    "IDLE_OWNER",
    "MUTE_OWNER",
    "USER_INPUT",
    "WATCHDOG",
    "PassWords",
    "RecordingPort",
    "ResultBack",
    "TimerFired",
    "TurnController",
    "TurnMachine",
    "TurnPort",
    "TurnScan",
    "TurnState",
    "Words",
    "turn_step",
]

WATCHDOG = -1
"""The owner of the stop watchdog's timer (strategies own 0 and up, in chain order)."""

IDLE_OWNER = -2
"""The owner of the idle timer."""

MUTE_OWNER = -100
"""Mute strategy ``i`` owns timers as ``MUTE_OWNER - i``."""

USER_INPUT: frozenset[type[Frame]] = frozenset({
    InterruptionFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
    ProposedUserStartedSpeakingFrame, ProposedUserStoppedSpeakingFrame, UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame, InputAudioRawFrame, InterimTranscriptionFrame, TranscriptionFrame,
})
"""What counts as the user's input: dropped (not queued) while the user is muted."""

_STARTED = UserStartedSpeakingFrame()
_STOPPED = UserStoppedSpeakingFrame()
_MUTED_STOP = VADUserStoppedSpeakingFrame(0.0, 0.0)
_MUTE_STARTED = UserMuteStartedFrame()
_MUTE_STOPPED = UserMuteStoppedFrame()


# -- what a decision can do --------------------------------------------------------------------


class TurnPort(Protocol):
    """The narrow way out of the machine: every effect of a decision is one of these calls."""

    def emit(self, frame: Frame, direction: Direction) -> None:
        """Send ``frame`` to the neighbour in ``direction``."""

    def arm(self, owner: int, key: str, delay: float) -> None:
        """Fire timer ``(owner, key)`` after ``delay`` seconds (re-arming moves it)."""

    def disarm(self, owner: int, key: str) -> None:
        """Cancel timer ``(owner, key)`` (harmless when it is not armed)."""

    def disarm_all(self) -> None:
        """Cancel every timer of the session (it is ending)."""

    def call(self, owner: int, key: str | None, fn: Callable[[Any], Any], offload: bool) -> None:
        """Run ``fn(resource of owner)``: inline, or off the session; the result comes back to ``key``.

        An inline call's result may come back at once: the machine holds it
        until the decision under way is done.
        """

    def listens(self, name: str) -> bool:
        """Whether anyone listens to event ``name`` (a report nobody reads is not built)."""

    def event(self, name: str, payload: Any = None) -> None:
        """Raise event ``name``."""

    def callback(self, fn: Callable[[Any], Any]) -> None:
        """Call an application callback with the stage (``on_idle``)."""

    def use(self, controller: TurnController) -> None:
        """A service's recommendation replaced the strategies: cancel their timers, swap their resources."""


class Words(Protocol):
    """What the machine asks of whoever keeps the turn's words (the user aggregator)."""

    def transcript(self, frame: TranscriptionFrame, direction: Direction, late: bool, now: float) -> None:
        """A final transcript arrived (``late``: it belongs to the turn already answered)."""

    def interim(self, frame: InterimTranscriptionFrame, direction: Direction) -> None:
        """An interim transcript arrived."""

    def pending(self) -> bool:
        """Whether words are gathered that no message holds yet."""

    def reset(self) -> None:
        """Drop the words gathered outside a turn (they did not make one)."""

    def started(self, now: float) -> None:
        """A turn started."""

    def commit(self, now: float) -> None:
        """Write what was said so far as one message and ask for the answer."""

    def content(self) -> tuple[str, str, float | None]:
        """The turn's words so far, the speaker's id, when its words began (``None``: not known)."""

    def finished(self, now: float, turn: TurnState) -> tuple[bool, bool]:
        """The turn is over (its report is out); the words start over.

        Returns whether it had words, and whether a reply was asked for (words, or the empty-turn prompt).
        """

    def ended(self, now: float) -> None:
        """The session ends: nothing said may stay unwritten."""

    def resume(self, now: float) -> str | None:
        """The last turn ended too soon and reopens: its words take the continuation in.

        Returns the words it ended with (``None``: nothing to reopen; the new
        turn is an ordinary one).
        """


class PassWords:
    """Words for a stage that keeps none: transcripts go on downstream; it only notes that words came."""

    __slots__ = ("_port", "had_words")

    def __init__(self, port: TurnPort) -> None:
        self._port = port
        self.had_words = False

    def transcript(self, frame: TranscriptionFrame, direction: Direction, late: bool, now: float) -> None:
        self._port.emit(frame, direction)
        if frame.text.strip():
            self.had_words = True

    def interim(self, frame: InterimTranscriptionFrame, direction: Direction) -> None:
        self._port.emit(frame, direction)

    def pending(self) -> bool:
        return False

    def reset(self) -> None:
        self.had_words = False

    def started(self, now: float) -> None:
        return None

    def commit(self, now: float) -> None:
        return None

    def content(self) -> tuple[str, str, float | None]:
        return "", "", None

    def finished(self, now: float, turn: TurnState) -> tuple[bool, bool]:
        had, self.had_words = self.had_words, False
        return had, had

    def ended(self, now: float) -> None:
        return None

    def resume(self, now: float) -> str | None:
        return None  # no words kept here: the stage that keeps them recovers the turn


# -- configuration, built once ---------------------------------------------------------------------


class TurnMachine:
    """The rules of the user's turn, configured once and shared by every session.

    Args:
        turns: Strategies, timeouts, idle and mute settings (defaults without it).
        mute: More mute strategies (merged with ``turns.mute``).
    """

    def __init__(self, turns: TurnsConfig | None = None, mute: Sequence[MuteStrategy[Any]] = ()) -> None:
        turns = turns if turns is not None else TurnsConfig()
        start, stop = turns.chains()
        self.turns = turns
        self.controller = TurnController(start, stop, turns.stop_timeout)
        self.mute: tuple[MuteStrategy[Any], ...] = (*mute, *turns.mute)
        self.mute_types = mute_types(self.mute)
        self.late_window = turns.late_transcript_window
        self.recovery_window = turns.recovery_window
        self.recommendable = not turns.pinned
        handled = set(self.controller.handled_types) | self.mute_types | IDLE_TYPES | {
            BotStartedSpeakingFrame, BotStoppedSpeakingFrame, InterruptionFrame, STTMetadataFrame,
            LLMServiceMetadataFrame, ProposedUserStartedSpeakingFrame, ProposedUserStoppedSpeakingFrame,
            TranscriptionFrame, InterimTranscriptionFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
        }
        if self.mute:
            handled |= USER_INPUT
        self.handled_types: frozenset[type[Frame]] = frozenset(handled)
        """The frame types a stage hands to :meth:`on_frame` (everything else is not the turn's business)."""

    def handled_with(self, controller: TurnController) -> frozenset[type[Frame]]:
        """The frame types to hand in once a session runs ``controller``."""
        return self.handled_types | controller.handled_types

    def open(self, port: TurnPort, words: Words | None = None) -> TurnState:
        """A new session's state, talking through ``port``, its words kept by ``words``."""
        return TurnState(self, port, words if words is not None else PassWords(port))

    def scan_start(self) -> TurnScan:
        """A fresh accumulator for :func:`turn_step` (one per subscription)."""
        port = RecordingPort(self)
        state = self.open(port)
        port.state = state
        return TurnScan(state, port)

    # -- the session's edges ------------------------------------------------------------------

    def start(self, s: TurnState, frame: Frame, now: float, params: Frame | None = None) -> None:
        """The session starts (its ``StartFrame`` already passed on).

        A user muted from the start is announced; ``params`` (the stage's own
        parameters, e.g. its VAD's) go both ways; then the strategies see the
        start frame.
        """
        self.greet(s)
        if params is not None:
            s.port.emit(params, DOWN)
            s.port.emit(params, UP)
        if type(frame) in s.controller.handled_types:
            s.deciding = True
            try:
                self._decide(s, frame, now, True)
            finally:
                s.deciding = False
            s.settle(now)

    def greet(self, s: TurnState) -> None:
        """A user muted from the start is announced once, with the session's first frame."""
        if not s.mute_announced:
            self._announce(s, True)

    def end(self, s: TurnState, now: float) -> None:
        """The session ends (an end, a cancel, or the input completed): nothing said is lost.

        An open turn (even an empty one) is reported stopped with no deciding
        strategy, so every started turn stops exactly once; words still held
        (a late tail) are written. Input that arrives after an end is handled
        as usual, and the next end writes it.
        """
        words = s.words
        if s.ended and not s.open and not words.pending():
            return
        words.commit(now)
        content, uid, started = words.content()
        if (s.open or content) and s.port.listens(EVENT_USER_TURN_STOPPED):
            s.port.event(EVENT_USER_TURN_STOPPED,
                         self._report(s, None, content, uid, started, now, end_of_session_reason()))
        words.ended(now)
        s.port.disarm_all()
        s.watchdog_armed = False
        s.started_at = None
        s.recoverable_until = _NEVER
        s.ended = True
        s.open = False

    # -- 1..5: one frame ------------------------------------------------------------------------

    def on_frame(self, s: TurnState, frame: Frame, direction: Direction, now: float) -> bool:
        """One frame of a type in :attr:`handled_types` (the stage passes the others on itself).

        Returns whether the frame was heard (``False``: the user is muted and it was dropped).
        """
        t = type(frame)
        s.deciding = True
        try:
            if self.mute and self._mute(s, frame, t, now):
                return False
            start_ok = self._frame(s, frame, t, direction, now)
            if t in s.controller.handled_types:
                self._decide(s, frame, now, start_ok)
            if t in _IDLE_INPUT and (t not in _TURN_FRAMES or t not in s.controller.adopted):
                # A turn announced elsewhere that no strategy here takes: the stage that announced it answers it.
                self._idle(s, frame, answered=t is UserStoppedSpeakingFrame)
        finally:
            s.deciding = False
        if s.later:
            s.settle(now)
        return True

    def sees(self, s: TurnState, frame: Frame, now: float) -> None:
        """A frame the stage passed on itself (the detector's audio): the strategies see it, nothing is sent."""
        s.deciding = True
        try:
            self._decide(s, frame, now, True)
        finally:
            s.deciding = False
        if s.later:
            s.settle(now)

    # 1. mute

    def _mute(self, s: TurnState, frame: Frame, t: type[Frame], now: float) -> bool:
        """Judge the frame by the mute state before it, then let every mute strategy see it. True: dropped."""
        self.greet(s)
        prior = s.muted
        if t in self.mute_types:
            states = s.mute_states
            for i, strategy in enumerate(self.mute):
                if t in strategy.handles:
                    states[i], effects = strategy.step(states[i], frame, now)
                    if effects:
                        self._apply_mute(s, i, effects)
            self._mute_verdict(s, now)
        return prior and t in USER_INPUT

    def _mute_verdict(self, s: TurnState, now: float) -> None:
        muted = any(m.muted(st) for m, st in zip(self.mute, s.mute_states, strict=True))
        if muted == s.muted:
            return
        s.muted = muted
        self._announce(s, muted)
        if muted and s.speaking:
            # The user's "stopped" will be dropped while muted: take the speech as over now, so the
            # turn can end (and the watchdog close it) instead of hanging.
            self._decide(s, _MUTED_STOP, now, False)
            self._idle(s, _MUTED_STOP, answered=False)

    def _apply_mute(self, s: TurnState, i: int, effects: Effects) -> None:
        e: Any
        for e in effects:
            if type(e) is Arm:
                s.port.arm(MUTE_OWNER - i, e.key, e.delay)
            elif type(e) is Disarm:
                s.port.disarm(MUTE_OWNER - i, e.key)

    def _announce(self, s: TurnState, muted: bool) -> None:
        """The user was muted or unmuted: tell the app and both neighbours."""
        s.mute_announced = True
        name = EVENT_USER_MUTE_STARTED if muted else EVENT_USER_MUTE_STOPPED
        port = s.port
        if port.listens(name):
            port.event(name)
        frame = _MUTE_STARTED if muted else _MUTE_STOPPED
        port.emit(frame, DOWN)
        port.emit(frame, UP)

    # 2. the frame itself

    def _frame(self, s: TurnState, frame: Frame, t: type[Frame], direction: Direction, now: float) -> bool:
        """Note what the frame says about the speakers; pass it on. Returns whether it may open a turn."""
        if t is TranscriptionFrame:
            start_ok = self._may_start(s, now)
            s.words.transcript(frame, direction, not start_ok, now)  # type: ignore[arg-type]
            return start_ok
        if t is InterimTranscriptionFrame:
            start_ok = self._may_start(s, now)
            s.words.interim(frame, direction)  # type: ignore[arg-type]
            return start_ok
        port = s.port
        if t is VADUserStartedSpeakingFrame:
            s.vad_seen = s.speech_since = True
        elif t is VADUserStoppedSpeakingFrame:
            s.vad_seen = True
        elif t is BotStartedSpeakingFrame:
            s.bot_speaking = True
            s.recoverable_until = _NEVER  # the bot has spoken: resumed speech is a new turn
        elif t is BotStoppedSpeakingFrame:
            s.bot_speaking = False
        elif t is InterruptionFrame:
            port.emit(frame, direction)
            if s.open and s.bot_speaking:  # an adopted turn's interruption, sent by whoever decided it
                s.interrupted_bot = True
            return True
        elif t is ProposedUserStartedSpeakingFrame:
            if not s.controller.resolves_proposed_starts:
                port.emit(frame, direction)
            return True
        elif t is ProposedUserStoppedSpeakingFrame:
            if not s.controller.resolves_proposed_stops:
                port.emit(frame, direction)
            return True
        elif t is STTMetadataFrame or t is LLMServiceMetadataFrame:
            port.emit(frame, direction)
            if self.recommendable:
                recommended = recommended_controller(self.turns, s.controller, frame)
                if recommended is not None:
                    self._use(s, recommended, now)
            return True
        port.emit(frame, direction)
        return True

    def _may_start(self, s: TurnState, now: float) -> bool:
        """The late-tail rule (:mod:`rxvoice.turns.late_tail`): may a transcript arriving now open a turn?"""
        return may_start(s.open, s.vad_seen, s.speech_since, s.answered_at, now, self.late_window)

    def _use(self, s: TurnState, controller: TurnController, now: float) -> None:
        """Run a recommended controller: the turn and the user's speech carry over, the strategies start fresh."""
        s.port.use(controller)
        s.controller = controller
        s.states = controller.initial()
        if s.open:
            self._each(s, now, started=True)

    # 3. the chains

    def _decide(self, s: TurnState, frame: Frame, now: float, start_ok: bool) -> None:
        t = type(frame)
        controller = s.controller
        if t in ACTIVITY:
            if t in SPEAKING_ON:
                s.speaking = True
            elif t in SPEAKING_OFF:
                s.speaking = False
            s.last_activity = now
            if not s.watchdog_armed:
                s.watchdog_armed = True
                s.port.arm(WATCHDOG, "watchdog", controller.stop_timeout)
        start_ids, stop_ids = controller.routes.get(t, _NO_ROUTE)
        strategies = controller.strategies
        states = s.states
        if start_ok:
            for i in start_ids:
                strategy = strategies[i]
                states[i], effects = strategy.on_frame(states[i], frame, now)
                if effects and self._apply(s, i, strategy, effects, now):
                    break
        for i in stop_ids:
            strategy = strategies[i]
            states[i], effects = strategy.on_frame(states[i], frame, now)
            if effects and self._apply(s, i, strategy, effects, now):
                break

    def _apply(self, s: TurnState, owner: int, strategy: Strategy[Any], effects: Effects, now: float) -> bool:
        """Carry out one strategy's effects, in order. Returns whether it halted its chain."""
        halted = False
        port = s.port
        e: Any
        for e in effects:
            et = type(e)
            if et is Arm:
                port.arm(owner, e.key, e.delay)
            elif et is Disarm:
                port.disarm(owner, e.key)
            elif et is Halt:
                halted = True
            elif et is Start:
                self._started(s, strategy, e, now)
            elif et is Inference:
                if s.open:
                    self._touch(s, now)
                    s.words.commit(now)
                    if port.listens(EVENT_USER_TURN_INFERENCE_TRIGGERED):
                        port.event(EVENT_USER_TURN_INFERENCE_TRIGGERED, strategy)
            elif et is Finalize:
                self._stopped(s, strategy, e.speaking_frames, now, e.reason)
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
            elif et is Touch:
                port.call(owner, e.key, e.fn, False)
            elif et is Analyze:
                port.call(owner, e.key, e.fn, True)
        return halted

    def _each(self, s: TurnState, now: float, *, started: bool) -> None:
        """Tell every strategy a turn started (or stopped), whoever decided it."""
        states = s.states
        for i, strategy in enumerate(s.controller.strategies):
            if started:
                states[i], effects = strategy.on_turn_started(states[i], now)
            else:
                states[i], effects = strategy.on_turn_stopped(states[i], now)
            if effects:
                self._apply(s, i, strategy, effects, now)

    # the turn starts

    def _started(self, s: TurnState, strategy: Strategy[Any], e: Start, now: float) -> None:
        if s.open:
            return
        s.open = True
        self._touch(s, now)
        self._each(s, now, started=True)
        interruptions = e.interruptions
        if interruptions is None:
            interruptions = getattr(strategy, "enable_interruptions", True)
        speaking = e.speaking_frames
        if speaking is None:
            speaking = getattr(strategy, "enable_user_speaking_frames", True)
        s.started_at = now
        resumed = self._recover(s, now) if now <= s.recoverable_until else None
        recovered = resumed is not None
        if resumed is None:
            s.words.started(now)
        else:
            self._resumed(s, resumed, now)
        s.interrupted_bot = bool(interruptions) and s.bot_speaking
        port = s.port
        if speaking:
            port.emit(_STARTED, DOWN)
            port.emit(_STARTED, UP)
        self._idle(s, _STARTED, answered=False)
        if interruptions or recovered:  # a recovery always cancels the reply nobody has heard
            interruption = InterruptionFrame()
            port.emit(interruption, DOWN)
            port.emit(interruption, UP)
        if port.listens(EVENT_USER_TURN_STARTED):
            port.event(EVENT_USER_TURN_STARTED, strategy)

    # the turn stops

    def _stopped(
        self, s: TurnState, strategy: Strategy[Any] | None, speaking_frames: bool | None, now: float,
        reason: TurnEndReason | None = None,
    ) -> None:
        if not s.open or s.speaking:
            return
        s.open = False
        self._touch(s, now)
        self._each(s, now, started=False)
        if speaking_frames is None:
            speaking_frames = getattr(strategy, "enable_user_speaking_frames", True) if strategy else True
        port = s.port
        words = s.words
        if speaking_frames:
            port.emit(_STOPPED, DOWN)
            port.emit(_STOPPED, UP)
        words.commit(now)
        content, uid, started = words.content()
        if port.listens(EVENT_USER_TURN_STOPPED):
            port.event(EVENT_USER_TURN_STOPPED, self._report(s, strategy, content, uid, started, now, reason))
        had_words, answered = words.finished(now, s)
        self._idle(s, _STOPPED, answered=answered)
        s.answered_at = now if had_words else None
        s.ended_at = now
        s.recoverable_until = now + self.recovery_window if had_words and self.recovery_window > 0 else _NEVER
        s.started_at = None
        s.speech_since = False
        s.interrupted_bot = False

    @staticmethod
    def _report(
        s: TurnState, strategy: Any, content: str, uid: str, started: float | None, now: float,
        reason: TurnEndReason | None = None,
    ) -> UserTurnStopped:
        began = started if started is not None else s.started_at if s.started_at is not None else now
        return UserTurnStopped(strategy, content, iso8601(began), uid, reason)

    # 4. the watchdog

    def _touch(self, s: TurnState, now: float) -> None:
        s.last_activity = now
        if not s.watchdog_armed:
            s.watchdog_armed = True
            s.port.arm(WATCHDOG, "watchdog", s.controller.stop_timeout)

    def _watchdog(self, s: TurnState, now: float) -> None:
        s.watchdog_armed = False
        timeout = s.controller.stop_timeout
        idle_for = now - s.last_activity
        if idle_for < timeout - 1e-9:
            s.watchdog_armed = True
            s.port.arm(WATCHDOG, "watchdog", timeout - idle_for)
        elif s.open and not s.speaking:
            if s.port.listens(EVENT_USER_TURN_STOP_TIMEOUT):
                s.port.event(EVENT_USER_TURN_STOP_TIMEOUT)
            self._stopped(s, None, None, now, watchdog_reason(timeout))

    # 5. the idle watch

    def _idle(self, s: TurnState, frame: Frame, *, answered: bool) -> None:
        self._idle_apply(s, *idle_step(s.idle, frame, answered=answered))

    def _idle_apply(self, s: TurnState, idle: IdleState, effects: tuple[Any, ...]) -> None:
        s.idle = idle
        for e in effects:
            if e.kind == "arm":
                s.port.arm(IDLE_OWNER, "idle", e.delay)
            elif e.kind == "disarm":
                s.port.disarm(IDLE_OWNER, "idle")

    def _idle_fired(self, s: TurnState) -> None:
        s.idle, effects = idle_fired(s.idle)
        for e in effects:
            if e.kind == "fire":
                if s.port.listens(EVENT_USER_TURN_IDLE):
                    s.port.event(EVENT_USER_TURN_IDLE)
                if self.turns.on_idle is not None:
                    s.port.callback(self.turns.on_idle)

    # 6. recovery from a false end

    def _recover(self, s: TurnState, now: float) -> str | None:
        """The turn just started continues the one that ended at ``s.ended_at``: the words it had (``None``: not)."""
        s.recoverable_until = _NEVER
        content = s.words.resume(now)
        if content is None:
            return None
        port = s.port
        if port.listens(EVENT_USER_TURN_RECOVERED):
            _, _, began = s.words.content()
            port.event(EVENT_USER_TURN_RECOVERED, UserTurnRecovered(
                content, now - s.ended_at, iso8601(began if began is not None else s.ended_at)))
        return content

    def _resumed(self, s: TurnState, words: str, now: float) -> None:
        """Tell every strategy the turn reopened with ``words`` (a continuation without words still has them)."""
        states = s.states
        for i, strategy in enumerate(s.controller.strategies):
            states[i], effects = strategy.on_turn_resumed(states[i], words, now)
            if effects:
                self._apply(s, i, strategy, effects, now)

    # -- timers and results ---------------------------------------------------------------------

    def on_timer(self, s: TurnState, owner: int, key: str, now: float) -> None:
        """Timer ``(owner, key)`` of this session fired."""
        s.deciding = True
        try:
            if owner == WATCHDOG:
                self._watchdog(s, now)
            elif owner == IDLE_OWNER:
                self._idle_fired(s)
            elif owner <= MUTE_OWNER:
                i = MUTE_OWNER - owner
                if i < len(self.mute):
                    s.mute_states[i], effects = self.mute[i].on_timer(s.mute_states[i], key, now)
                    if effects:
                        self._apply_mute(s, i, effects)
                    self._mute_verdict(s, now)
            elif owner < len(s.controller.strategies):
                strategy = s.controller.strategies[owner]
                s.states[owner], effects = strategy.on_timer(s.states[owner], key, now)
                if effects:
                    self._apply(s, owner, strategy, effects, now)
        finally:
            s.deciding = False
        if s.later:
            s.settle(now)

    def on_result(self, s: TurnState, owner: int, key: str, value: Any, now: float) -> None:
        """A strategy's resource call came back (``value`` may be an exception).

        A result that comes back while the session is deciding (an inline
        call) is handled once that decision is done.
        """
        if s.deciding:
            s.later.append((owner, key, value))
            return
        if not 0 <= owner < len(s.controller.strategies):
            return
        s.deciding = True
        try:
            strategy = s.controller.strategies[owner]
            s.states[owner], effects = strategy.on_result(s.states[owner], key, value, now)
            if effects:
                self._apply(s, owner, strategy, effects, now)
        finally:
            s.deciding = False
        if s.later:
            s.settle(now)


_NEVER = -math.inf
_NO_ROUTE: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
_TURN_FRAMES: frozenset[type[Frame]] = frozenset({UserStartedSpeakingFrame, UserStoppedSpeakingFrame})
"""Announced turns from elsewhere: when a strategy adopts them, the idle watch follows the adopted turn."""
_IDLE_INPUT: frozenset[type[Frame]] = IDLE_TYPES | SPEECH_TYPES
"""What the idle watch sees of the frames handed in (the user's voice pauses it)."""


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
        "answered_at", "bot_speaking", "controller", "deciding", "ended", "ended_at", "idle", "interrupted_bot",
        "last_activity", "later", "machine", "mute_announced", "mute_states", "muted", "open", "port",
        "recoverable_until", "speaking", "speech_since", "started_at", "states", "vad_seen", "watchdog_armed", "words",
    )

    def __init__(self, machine: TurnMachine, port: TurnPort, words: Words) -> None:
        self.machine = machine
        self.port = port
        self.words = words
        self.controller = machine.controller
        self.states: list[Any] = machine.controller.initial()
        self.open = False
        self.speaking = False
        self.last_activity = 0.0
        self.watchdog_armed = False
        self.mute_states: list[Any] = [m.initial() for m in machine.mute]
        self.muted = any(m.muted(st) for m, st in zip(machine.mute, self.mute_states, strict=True))
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

    @property
    def user_speaking(self) -> bool:
        """The user is speaking, as far as the strategies know."""
        return self.speaking

    def settle(self, now: float) -> None:
        """Handle the results that came back while deciding (inline resource calls), in order."""
        while self.later and not self.deciding:
            owner, key, value = self.later.pop(0)
            self.machine.on_result(self, owner, key, value, now)


# -- the machine as a scan ----------------------------------------------------------------------------


class TimerFired(NamedTuple):
    """An input for :func:`turn_step`: timer ``(owner, key)`` fired at ``time``."""

    owner: int
    key: str
    time: float


class ResultBack(NamedTuple):
    """An input for :func:`turn_step`: a resource call of strategy ``owner`` came back at ``time``."""

    owner: int
    key: str
    value: Any
    time: float


class RecordingPort:
    """A :class:`TurnPort` that records every call as a tuple: ``("emit", frame, direction)``, ...

    Inline resource calls run on ``resources`` (one per strategy, ``None``
    by default) and their results come back at once; off-session calls are
    only recorded (feed their results back yourself).
    """

    def __init__(self, machine: TurnMachine | None = None, *, listening: bool = True,
                 resources: Sequence[Any] = ()) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.listening = listening
        self.resources = list(resources)
        self.machine = machine
        self.state: TurnState | None = None
        self.now = 0.0

    def emit(self, frame: Frame, direction: Direction) -> None:
        self.calls.append(("emit", frame, direction))

    def arm(self, owner: int, key: str, delay: float) -> None:
        self.calls.append(("arm", owner, key, delay))

    def disarm(self, owner: int, key: str) -> None:
        self.calls.append(("disarm", owner, key))

    def disarm_all(self) -> None:
        self.calls.append(("disarm_all",))

    def call(self, owner: int, key: str | None, fn: Callable[[Any], Any], offload: bool) -> None:
        self.calls.append(("call", owner, key, offload))
        if offload:
            return
        resource = self.resources[owner] if 0 <= owner < len(self.resources) else None
        try:
            value = fn(resource)
        except Exception as exc:
            value = exc
        if key is not None and self.machine is not None and self.state is not None:
            self.machine.on_result(self.state, owner, key, value, self.now)

    def listens(self, name: str) -> bool:
        return self.listening

    def event(self, name: str, payload: Any = None) -> None:
        self.calls.append(("event", name, payload))

    def callback(self, fn: Callable[[Any], Any]) -> None:
        self.calls.append(("callback", fn))

    def use(self, controller: TurnController) -> None:
        self.calls.append(("use", controller))

    def take(self) -> list[tuple[Any, ...]]:
        """The calls recorded since the last take."""
        calls, self.calls = self.calls, []
        return calls


@dataclass(frozen=True)
class TurnScan:
    """The accumulator of :func:`turn_step`: what one step did.

    ``calls`` are the port calls the step made and ``open`` whether a turn
    was open after it; ``state`` is the session's live state (it goes on
    changing with the next steps).
    """

    state: TurnState
    port: RecordingPort
    calls: tuple[tuple[Any, ...], ...] = ()
    open: bool = False


def turn_step(machine: TurnMachine) -> Callable[[TurnScan, Any], TurnScan]:
    """The machine as a reactivex ``scan`` accumulator.

    Items are ``Timestamp(frame, datetime)`` (from ``ops.timestamp()``),
    ``(frame, seconds)`` pairs, :class:`TimerFired` or :class:`ResultBack`;
    each step returns the accumulator with the calls that step made
    (``("emit", frame, direction)``, ``("arm", owner, key, delay)``, ...).
    Start it with :meth:`TurnMachine.scan_start`, per subscription (wrap in
    ``reactivex.defer``, as ``ops.scan`` itself does, when the observable may
    be subscribed twice). The fused path of the stages calls the very same
    methods.
    """

    def step(acc: TurnScan, item: Any) -> TurnScan:
        s = acc.state
        port = acc.port
        if isinstance(item, TimerFired):
            port.now = item.time
            machine.on_timer(s, item.owner, item.key, item.time)
        elif isinstance(item, ResultBack):
            port.now = item.time
            machine.on_result(s, item.owner, item.key, item.value, item.time)
        else:
            frame, at = _timed(item)
            port.now = at
            t = type(frame)
            if t is StartFrame:
                port.emit(frame, DOWN)
                machine.start(s, frame, at)
            elif t in machine.handled_with(s.controller):
                machine.on_frame(s, frame, DOWN, at)
            else:
                port.emit(frame, DOWN)
        return TurnScan(s, port, tuple(port.take()), s.open)

    return step


def _timed(item: Any) -> tuple[Frame, float]:
    value = getattr(item, "value", None)
    stamp = getattr(item, "timestamp", None)
    if isinstance(value, Frame) and stamp is not None:
        seconds = stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)
        return value, seconds
    frame, at = item
    if not isinstance(frame, Frame) or not math.isfinite(float(at)):
        raise TypeError(f"turn_step takes timestamped frames, TimerFired or ResultBack, got {item!r}")
    return frame, float(at)
