"""The turn machine: a user turn's whole life, from the first sound to the answer, in one place.

Every stage that decides the user's turn runs the turn machine: the user
aggregator (which also keeps the words), :class:`UserTurnProcessor` and the
turn-taking detector (which only announce). Read top to bottom, this module
is the life of a turn (its state, :class:`~rxvoice.turns.state.TurnState`,
is defined first, in its own module); each step is a rule of its own:

1. **mute** (:meth:`TurnMachine._mute`): a frame is judged by the mute state
   from before it; every mute strategy then sees it. What the user says
   while muted is dropped, not queued.
2. **the frame itself** (:meth:`TurnMachine._frame`, a transcript in
   :meth:`TurnMachine.on_frame`): the user's speech and the bot's are noted;
   a transcript goes to the words, and the *late-tail rule* decides whether
   it may open a turn.
3. **the start chain, then the stop chain** (:meth:`TurnMachine._decide`):
   each strategy sees the frame types it handles, in order, until one halts
   its chain; their effects are applied as they come (:func:`~rxvoice.turns.effects.apply_effects`):
   a start opens a turn unless one is open; an inference inside a turn
   writes what was said so far and asks for the answer; a ``Likely`` (the
   end is coming, not decided) asks early for an answer that is held, when
   speculation is on (:mod:`rxvoice.turns.speculation`), and speech that
   resumes withdraws it; a finalize closes the turn, never while the user
   speaks; a reset drops words only outside a turn; a ``Notify`` raises a
   strategy's event.
4. **the watchdog** closes a turn no strategy ended after ``stop_timeout``
   seconds without activity, never while the user speaks.
5. **the idle watch** (:mod:`rxvoice.turns.idle`) notices a user who stays
   silent after the bot stopped speaking.
6. **recovery from a false end** (:meth:`TurnMachine._recover`): a turn
   that starts within ``recovery_window`` seconds of the last one's end,
   before the bot has spoken, reopens that turn: the reply in progress is
   interrupted, the continuation joins the same user message, the whole
   turn is answered once.

Decisions have no clock, scheduler, thread or I/O: time comes in as an argument, and what a decision
does is a call on a narrow :class:`~rxvoice.turns.port.TurnPort` and on :class:`~rxvoice.turns.port.Words`
(see :mod:`rxvoice.turns.port`). Everything configured is built once in :class:`TurnMachine`: mute or a
recommendation not configured costs nothing per frame (an idle watch with no timeout keeps its state and
arms nothing). Every input enters through :meth:`TurnMachine.step`: the stages feed it, and so does
:func:`~rxvoice.turns.scan.turn_step`, the machine as a ``scan`` accumulator, which
:func:`rxvoice.operators.turn_steps` runs on any stream of frames.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

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
    LLMContextAssistantTurnFrame,
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
from .effects import apply_effects
from .idle import IDLE_TYPES, SPEECH_TYPES, idle_fired, idle_step
from .late_tail import may_start
from .mute import MuteStrategy, mute_see, mute_types, mute_verdict
from .port import IDLE_OWNER, MUTE_OWNER, WATCHDOG, Owner, PassWords, RecordingPort, TimerOwner, TurnPort, Words
from .port import mute_owner as mute_owner
from .reasons import TurnEndReason, end_of_session_reason, watchdog_reason
from .recommend import recommended_controller
from .reports import (
    EVENT_USER_MUTE_STARTED,
    EVENT_USER_MUTE_STOPPED,
    EVENT_USER_TURN_RECOVERED,
    EVENT_USER_TURN_STARTED,
    EVENT_USER_TURN_STOP_TIMEOUT,
    EVENT_USER_TURN_STOPPED,
    UserTurnRecovered,
    UserTurnStopped,
    iso8601,
)
from .scan import ResultBack, TimerFired, TurnScan, turn_step
from .state import TurnState
from .strategy import Start, Strategy

__all__ = [
    "IDLE_OWNER", "MUTE_OWNER", "USER_INPUT", "WATCHDOG", "PassWords", "RecordingPort", "ResultBack", "TimerFired",
    "TurnController", "TurnMachine", "TurnPort", "TurnScan", "TurnState", "Words", "turn_step",
]

USER_INPUT: frozenset[type[Frame]] = frozenset({
    InterruptionFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
    ProposedUserStartedSpeakingFrame, ProposedUserStoppedSpeakingFrame, UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame, InputAudioRawFrame, InterimTranscriptionFrame, TranscriptionFrame,
})
"""What counts as the user's input: dropped (not queued) while the user is muted."""

_NEVER = -math.inf
_WATCHDOG_KEY = "watchdog"
_NO_ROUTE: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
_TURN_FRAMES: frozenset[type[Frame]] = frozenset({UserStartedSpeakingFrame, UserStoppedSpeakingFrame})
"""Announced turns from elsewhere: when a strategy adopts them, the idle watch follows the adopted turn."""
_IDLE_INPUT: frozenset[type[Frame]] = IDLE_TYPES | SPEECH_TYPES
"""What the idle watch sees of the frames handed in (the user's voice pauses it)."""
_STARTED = UserStartedSpeakingFrame()  # frames are immutable values: those every turn sends are built once
_STOPPED = UserStoppedSpeakingFrame()
_INTERRUPTION = InterruptionFrame()
_MUTED_STOP = VADUserStoppedSpeakingFrame(0.0, 0.0)
_MUTE_STARTED = UserMuteStartedFrame()
_MUTE_STOPPED = UserMuteStoppedFrame()


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
        self.speculating = turns.speculation is not None
        """Whether a stop strategy's ``Likely`` asks the model early (``TurnsConfig.speculate``)."""
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

    def open(
        self, port: TurnPort, words: Words | None = None, *, params: Frame | None = None,
        decides_before_end: bool = False,
    ) -> TurnState:
        """A new session's state, talking through ``port``, its words kept by ``words``.

        ``params`` (the stage's own, e.g. its VAD's) go both ways at the
        session's start; ``decides_before_end``: at its end, decide first,
        then pass the end on (see :meth:`step`).
        """
        s = TurnState(self, port, words if words is not None else PassWords(port))
        s.params = params
        s.decides_before_end = decides_before_end
        return s

    # -- one input, whatever it is: the one entry of the stages and of the scan ------------------

    def step(self, s: TurnState, item: Any, direction: Direction, now: float, *, passed: bool = False) -> bool:
        """One input of the session: a frame, a :class:`TimerFired` or a :class:`ResultBack`.

        A ``StartFrame`` goes on, then the session starts; an ``EndFrame``
        or ``CancelFrame`` ends it, after it goes on, or before when the
        session ``decides_before_end`` (what was said is written and asked
        about before the end goes on); a frame of a handled type is decided;
        any other frame goes on as it is. ``passed``: the stage passed the
        frame on itself. Returns whether a frame was heard (``False``: the
        user is muted and it was dropped).
        """
        t = type(item)
        if t is TimerFired:
            self.on_timer(s, item.owner, item.key, now)
        elif t is ResultBack:
            self.on_result(s, item.owner, item.key, item.value, now)
        elif t is StartFrame:
            if not passed:
                s.port.emit(item, direction)
            self.start(s, item, now, s.params)
        elif t is EndFrame or t is CancelFrame:
            emit = not passed
            if emit and not s.decides_before_end:
                s.port.emit(item, direction)
            self.end(s, now)
            if emit and s.decides_before_end:
                s.port.emit(item, direction)
        elif t in self.handled_types or t in s.controller.handled_types:
            return self.on_frame(s, item, direction, now)
        elif not passed:
            s.port.emit(item, direction)
        return True

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
            self._decision(s, now, self._decide, s, frame, now, True)

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
        # :meth:`_decision`, written out: this runs for every frame the turn decides on.
        s.deciding = True
        try:
            t = type(frame)
            if self.mute and self._mute(s, frame, t, now):
                heard = False
            else:
                heard = True
                if t is TranscriptionFrame or t is InterimTranscriptionFrame:  # 2. for most frames, here
                    start_ok = s.open or may_start(
                        False, s.vad_seen, s.speech_since, s.answered_at, now, self.late_window)
                    if t is TranscriptionFrame:
                        s.words.transcript(frame, direction, not start_ok, now)  # type: ignore[arg-type]
                    elif s.takes_interims:
                        s.words.interim(frame, direction)  # type: ignore[arg-type]
                else:
                    start_ok = self._frame(s, frame, t, direction, now)
                if t in s.controller.handled_types:
                    self._decide(s, frame, now, start_ok)
                if t in _IDLE_INPUT and (t not in _TURN_FRAMES or t not in s.controller.adopted):
                    # A turn announced elsewhere that no strategy here takes: the stage that announced it answers.
                    s.idle, effects = idle_step(s.idle, frame, t is UserStoppedSpeakingFrame)  # :meth:`_idle`
                    if effects:
                        apply_effects(self, s, IDLE_OWNER, None, effects, now)
        finally:
            s.deciding = False
        if s.later:
            s.settle(now)
        return heard

    def sees(self, s: TurnState, frame: Frame, now: float) -> None:
        """A frame the stage passed on itself (the detector's audio): the strategies see it, nothing is sent."""
        self._decision(s, now, self._decide, s, frame, now, True)

    def _decision(self, s: TurnState, now: float, step: Callable[..., Any], *args: Any) -> Any:
        """Run one decision: nothing re-enters it (an inline result waits), and what waited runs after it."""
        s.deciding = True
        try:
            result = step(*args)
        finally:
            s.deciding = False
        if s.later:
            s.settle(now)
        return result

    # 1. mute

    def _mute(self, s: TurnState, frame: Frame, t: type[Frame], now: float) -> bool:
        """Judge the frame by the mute state before it, then let every mute strategy see it. True: dropped."""
        self.greet(s)
        prior = s.muted
        if t in self.mute_types:
            for i, effects in mute_see(self.mute, s.mute_states, frame, now):
                apply_effects(self, s, mute_owner(i), None, effects, now)
            self._mute_verdict(s, now)
        return prior and t in USER_INPUT

    def _mute_verdict(self, s: TurnState, now: float) -> None:
        muted = mute_verdict(self.mute, s.mute_states)
        if muted == s.muted:
            return
        s.muted = muted
        self._announce(s, muted)
        if muted and s.speaking:
            # The user's "stopped" will be dropped while muted: take the speech as over now, so the
            # turn can end (and the watchdog close it) instead of hanging.
            self._decide(s, _MUTED_STOP, now, False)
            self._idle(s, _MUTED_STOP, now, answered=False)

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
        """Note what a frame says of the speakers (transcripts: :meth:`on_frame`); pass it on. True: may open a turn."""
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
        elif t is LLMContextAssistantTurnFrame:
            s.recoverable_until = _NEVER  # the reply is written (text shows at once): resumed speech is a new turn
        elif t is STTMetadataFrame or t is LLMServiceMetadataFrame:
            port.emit(frame, direction)
            if self.recommendable:
                recommended = recommended_controller(self.turns, s.controller, frame)
                if recommended is not None:
                    self._use(s, recommended, now)
            return True
        port.emit(frame, direction)
        return True

    def _use(self, s: TurnState, controller: TurnController, now: float) -> None:
        """Run a recommended controller: the turn and the user's speech carry over, the strategies start fresh."""
        s.port.use(controller)
        s.controller = controller
        s.states = controller.initial()
        if s.open:
            self._tell(s, "on_turn_started", now)

    # 3. the chains

    def _decide(self, s: TurnState, frame: Frame, now: float, start_ok: bool) -> None:
        t = type(frame)
        controller = s.controller
        if t in ACTIVITY:
            if t in SPEAKING_ON:
                if s.open and self.speculating and not s.speaking:
                    s.words.withdraw(now)  # the user went on: an answer held for the words so far is stale
                s.speaking = True
            elif t in SPEAKING_OFF:
                s.speaking = False
            s.last_activity = now  # :meth:`touch`, written out: every activity frame
            if not s.watchdog_armed:
                s.watchdog_armed = True
                s.port.arm(WATCHDOG, _WATCHDOG_KEY, controller.stop_timeout)
        start_ids, stop_ids = controller.routes.get(t, _NO_ROUTE)
        strategies = controller.strategies
        states = s.states
        if start_ok:
            for i in start_ids:
                strategy = strategies[i]
                states[i], effects = strategy.on_frame(states[i], frame, now)
                if effects and apply_effects(self, s, i, strategy, effects, now):
                    break
        for i in stop_ids:
            strategy = strategies[i]
            states[i], effects = strategy.on_frame(states[i], frame, now)
            if effects and apply_effects(self, s, i, strategy, effects, now):
                break

    def _tell(self, s: TurnState, hook: str, now: float, *args: Any) -> None:
        """Tell every strategy what happened to the turn (``on_turn_started``, ``..._stopped``, ``..._resumed``)."""
        states = s.states
        for i, strategy in s.controller.told[hook]:  # those that answer it: the others change nothing
            states[i], effects = getattr(strategy, hook)(states[i], *args, now)
            if effects:
                apply_effects(self, s, i, strategy, effects, now)

    # the turn starts

    def started(self, s: TurnState, strategy: Strategy[Any] | None, e: Start, now: float) -> None:
        """A start: the turn opens unless one is open (announced, the bot interrupted, a false end reopened)."""
        if s.open:
            return
        s.open = True
        self.touch(s, now)
        self._tell(s, "on_turn_started", now)
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
            self._tell(s, "on_turn_resumed", now, resumed)
        s.interrupted_bot = bool(interruptions) and s.bot_speaking
        port = s.port
        if speaking:
            port.emit(_STARTED, DOWN)
            port.emit(_STARTED, UP)
        self._idle(s, _STARTED, now, answered=False)
        if interruptions or recovered:  # a recovery always cancels the reply nobody has heard
            port.emit(_INTERRUPTION, DOWN)
            port.emit(_INTERRUPTION, UP)
        if port.listens(EVENT_USER_TURN_STARTED):
            port.event(EVENT_USER_TURN_STARTED, strategy)

    # the turn stops

    def stopped(
        self, s: TurnState, strategy: Strategy[Any] | None, speaking_frames: bool | None, now: float,
        reason: TurnEndReason | None = None,
    ) -> None:
        if not s.open or s.speaking:
            return
        s.open = False
        self.touch(s, now)
        self._tell(s, "on_turn_stopped", now)
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
        self._idle(s, _STOPPED, now, answered=answered)
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

    def touch(self, s: TurnState, now: float) -> None:
        """The user was active: the watchdog counts from now."""
        s.last_activity = now
        if not s.watchdog_armed:
            s.watchdog_armed = True
            s.port.arm(WATCHDOG, _WATCHDOG_KEY, s.controller.stop_timeout)

    def _watchdog(self, s: TurnState, now: float) -> None:
        s.watchdog_armed = False
        timeout = s.controller.stop_timeout
        idle_for = now - s.last_activity
        if idle_for < timeout - 1e-9:
            s.watchdog_armed = True
            s.port.arm(WATCHDOG, _WATCHDOG_KEY, timeout - idle_for)
        elif s.open and not s.speaking:
            if s.port.listens(EVENT_USER_TURN_STOP_TIMEOUT):
                s.port.event(EVENT_USER_TURN_STOP_TIMEOUT)
            self.stopped(s, None, None, now, watchdog_reason(timeout))

    # 5. the idle watch

    def _idle(self, s: TurnState, frame: Frame, now: float, *, answered: bool) -> None:
        s.idle, effects = idle_step(s.idle, frame, answered)
        if effects:
            apply_effects(self, s, IDLE_OWNER, None, effects, now)

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

    # -- timers and results ---------------------------------------------------------------------

    def on_timer(self, s: TurnState, owner: TimerOwner, key: str, now: float) -> None:
        """Timer ``(owner, key)`` of this session fired (:meth:`_decision` written out: most turns have one)."""
        s.deciding = True
        try:
            if type(owner) is Owner:
                if owner == WATCHDOG:
                    self._watchdog(s, now)
                elif owner == IDLE_OWNER:
                    s.idle, effects = idle_fired(s.idle)
                    apply_effects(self, s, IDLE_OWNER, None, effects, now)
                elif owner.kind == MUTE_OWNER.kind and owner.place < len(self.mute):
                    i = owner.place
                    s.mute_states[i], effects = self.mute[i].on_timer(s.mute_states[i], key, now)
                    apply_effects(self, s, owner, None, effects, now)
                    self._mute_verdict(s, now)
            elif isinstance(owner, int) and 0 <= owner < len(s.controller.strategies):
                strategy = s.controller.strategies[owner]
                s.states[owner], effects = strategy.on_timer(s.states[owner], key, now)
                if effects:
                    apply_effects(self, s, owner, strategy, effects, now)
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
        if 0 <= owner < len(s.controller.strategies):
            self._decision(s, now, self._result, s, owner, key, value, now)

    def _result(self, s: TurnState, owner: int, key: str, value: Any, now: float) -> None:
        strategy = s.controller.strategies[owner]
        s.states[owner], effects = strategy.on_result(s.states[owner], key, value, now)
        if effects:
            apply_effects(self, s, owner, strategy, effects, now)
