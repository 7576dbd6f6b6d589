"""The turn controller: runs the start and stop strategies and keeps the turn's state.

It is a pure step function. Fed a frame (or a timer firing, or a result), it
updates whether the user is speaking, runs the start chain then the stop
chain (each strategy only for the frame types it handles, a chain cut short
by ``HALT``), and turns the strategies' triggers into decisions:

* a start opens a turn unless one is open;
* an inference trigger inside an open turn asks for an answer now;
* a finalize closes the turn, never while the user is speaking;
* a reset of the aggregation is passed on only outside a turn (the words of
  an open turn are never dropped);
* the stop watchdog closes a turn no strategy ended after ``stop_timeout``
  seconds without activity, never while the user is speaking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..frames import (
    Direction,
    Frame,
    InterimTranscriptionFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
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
    StartStrategy,
    StopStrategy,
    Strategy,
    Touch,
)

__all__ = [
    "WATCHDOG",
    "AggregationReset",
    "ControllerEffect",
    "InferenceTriggered",
    "StopTimedOut",
    "StrategyCall",
    "StrategyPush",
    "StrategyTimer",
    "TurnController",
    "TurnStarted",
    "TurnState",
    "TurnStopped",
]

WATCHDOG = -1
"""The owner index of the stop watchdog's timer."""

_SPEAKING_ON: frozenset[type[Frame]] = frozenset(
    {VADUserStartedSpeakingFrame, UserStartedSpeakingFrame, ProposedUserStartedSpeakingFrame}
)
_SPEAKING_OFF: frozenset[type[Frame]] = frozenset(
    {VADUserStoppedSpeakingFrame, UserStoppedSpeakingFrame, ProposedUserStoppedSpeakingFrame}
)
_ACTIVITY: frozenset[type[Frame]] = _SPEAKING_ON | _SPEAKING_OFF | {TranscriptionFrame, InterimTranscriptionFrame}


# -- decisions the controller hands to its owner ------------------------------


class TurnStarted(NamedTuple):
    """A turn started; announce it (``speaking_frames``) and interrupt the bot (``interruptions``)."""

    strategy: Strategy[Any]
    interruptions: bool
    speaking_frames: bool


class InferenceTriggered(NamedTuple):
    """Answer now: write what the user said so far and run the model."""

    strategy: Strategy[Any]


class TurnStopped(NamedTuple):
    """The turn is over. ``strategy`` is ``None`` when the watchdog closed it."""

    strategy: Strategy[Any] | None
    speaking_frames: bool


@dataclass(frozen=True, slots=True)
class StopTimedOut:
    """No strategy ended the turn in time; the watchdog is closing it."""


class AggregationReset(NamedTuple):
    """Drop the words gathered so far."""

    strategy: Strategy[Any]


class StrategyTimer(NamedTuple):
    """Arm (``delay`` set) or disarm (``delay`` ``None``) timer ``key`` of strategy ``owner``."""

    owner: int
    key: str
    delay: float | None


class StrategyPush(NamedTuple):
    """Send a frame a strategy produced."""

    frame: Frame
    direction: Direction
    both_ways: bool


class StrategyCall(NamedTuple):
    """Call ``fn`` on strategy ``owner``'s resource (off the session when ``offload``)."""

    owner: int
    key: str | None
    fn: Any
    offload: bool


ControllerEffect = (
    TurnStarted | InferenceTriggered | TurnStopped | StopTimedOut | AggregationReset
    | StrategyTimer | StrategyPush | StrategyCall
)


class TurnState(NamedTuple):
    """The controller's state: the turn, the user's speech, each strategy's state, the watchdog."""

    open: bool = False
    user_speaking: bool = False
    starts: tuple[Any, ...] = ()
    stops: tuple[Any, ...] = ()
    last_activity: float = 0.0
    watchdog_armed: bool = False


class _Work:
    """The mutable scratch of one step (never escapes it)."""

    __slots__ = ("armed", "last", "open", "out", "speaking", "states")

    def __init__(
        self, open_: bool, speaking: bool, states: list[Any], last: float, armed: bool, out: list[ControllerEffect]
    ) -> None:
        self.open = open_
        self.speaking = speaking
        self.states = states
        self.last = last
        self.armed = armed
        self.out = out


_new = tuple.__new__


def _load(state: TurnState) -> _Work:
    return _Work(state.open, state.user_speaking, [*state.starts, *state.stops], state.last_activity,
                 state.watchdog_armed, [])


class TurnController:
    """Start and stop strategies, the watchdog, and the rules that tie them together.

    Args:
        start: Start strategies, in the order they are consulted.
        stop: Stop strategies, in the order they are consulted.
        stop_timeout: Seconds without activity after which an open turn is
            closed even though no stop strategy decided (never while the user
            is speaking).
    """

    def __init__(
        self, start: Sequence[StartStrategy[Any]], stop: Sequence[StopStrategy[Any]], stop_timeout: float
    ) -> None:
        self.start: tuple[StartStrategy[Any], ...] = tuple(start)
        self.stop: tuple[StopStrategy[Any], ...] = tuple(stop)
        self.strategies: tuple[Strategy[Any], ...] = (*self.start, *self.stop)
        self.stop_timeout = stop_timeout
        self.recommendation: Any = None
        """The service recommendation this controller was built from (``None``: the application's own)."""
        self._n_start = len(self.start)
        self._routes: dict[type[Frame], tuple[tuple[int, ...], tuple[int, ...]]] = {}
        types: set[type[Frame]] = set(_ACTIVITY)
        for s in self.strategies:
            types |= s.handles
        self.handled_types: frozenset[type[Frame]] = frozenset(types)

    @property
    def resolves_proposed_starts(self) -> bool:
        """Whether a start strategy turns proposed starts into turns (so they are not forwarded)."""
        return any(s.resolves_proposals for s in self.start)

    @property
    def resolves_proposed_stops(self) -> bool:
        """Whether a stop strategy turns proposed stops into turn ends."""
        return any(s.resolves_proposals for s in self.stop)

    def initial(self) -> TurnState:
        """The state a session starts with."""
        return TurnState(
            starts=tuple(s.initial() for s in self.start), stops=tuple(s.initial() for s in self.stop)
        )

    def takeover(self, previous: TurnState, now: float) -> tuple[TurnState, list[ControllerEffect]]:
        """Take a session over from another controller (a service recommended other strategies).

        The turn and the user's speech carry over; the strategies start
        fresh, told that a turn is open if one is. The caller cancels the
        previous strategies' timers.
        """
        fresh = self.initial()
        w = _Work(previous.open, previous.user_speaking, [*fresh.starts, *fresh.stops], previous.last_activity,
                  previous.watchdog_armed, [])
        if w.open:
            self._each(w, now, started=True)
        return self._finish(w), w.out

    def _route(self, t: type[Frame]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        route = self._routes.get(t)
        if route is None:
            n = self._n_start
            route = (
                tuple(i for i, s in enumerate(self.start) if t in s.handles),
                tuple(n + i for i, s in enumerate(self.stop) if t in s.handles),
            )
            self._routes[t] = route
        return route

    # -- steps -----------------------------------------------------------------

    def on_frame(
        self, state: TurnState, frame: Frame, now: float, *, may_start: bool = True
    ) -> tuple[TurnState, list[ControllerEffect]]:
        """Feed one frame. ``may_start=False`` keeps the start chain from seeing it."""
        t = type(frame)
        open_, speaking, starts, stops, last, armed = state
        out: list[ControllerEffect] = []
        if t in _ACTIVITY:
            if t in _SPEAKING_ON:
                speaking = True
            elif t in _SPEAKING_OFF:
                speaking = False
            last = now
            if not armed:
                armed = True
                out.append(StrategyTimer(WATCHDOG, "watchdog", self.stop_timeout))
        route = self._routes.get(t)
        if route is None:
            route = self._route(t)
        start_ids, stop_ids = route
        if not may_start:
            start_ids = ()
        if not start_ids and not stop_ids:
            return _new(TurnState, (open_, speaking, starts, stops, last, armed)), out
        strategies = self.strategies
        n = self._n_start
        w: _Work | None = None
        for ids in (start_ids, stop_ids):
            for i in ids:
                strategy = strategies[i]
                if w is None:
                    current = starts[i] if i < n else stops[i - n]
                    new_state, effects = strategy.on_frame(current, frame, now)
                    if not effects:
                        if i < n:
                            starts = (*starts[:i], new_state, *starts[i + 1:])
                        else:
                            stops = (*stops[:i - n], new_state, *stops[i - n + 1:])
                        continue
                    w = _Work(open_, speaking, [*starts, *stops], last, armed, out)
                    w.states[i] = new_state
                else:
                    w.states[i], effects = strategy.on_frame(w.states[i], frame, now)
                    if not effects:
                        continue
                if self._apply(w, i, strategy, effects, now):
                    break
        if w is None:
            return _new(TurnState, (open_, speaking, starts, stops, last, armed)), out
        return self._finish(w), out

    def on_timer(self, state: TurnState, owner: int, key: str, now: float) -> tuple[TurnState, list[ControllerEffect]]:
        """Timer ``key`` of ``owner`` (or the watchdog) fired."""
        w = _load(state)
        if owner == WATCHDOG:
            w.armed = False
            idle_for = now - w.last
            if idle_for < self.stop_timeout - 1e-9:
                w.armed = True
                w.out.append(StrategyTimer(WATCHDOG, "watchdog", self.stop_timeout - idle_for))
            elif w.open and not w.speaking:
                w.out.append(StopTimedOut())
                self._finalize(w, None, None, now)
        else:
            strategy = self.strategies[owner]
            w.states[owner], effects = strategy.on_timer(w.states[owner], key, now)
            self._apply(w, owner, strategy, effects, now)
        return self._finish(w), w.out

    def on_result(
        self, state: TurnState, owner: int, key: str, value: Any, now: float
    ) -> tuple[TurnState, list[ControllerEffect]]:
        """The result of a strategy's resource call came back."""
        w = _load(state)
        strategy = self.strategies[owner]
        w.states[owner], effects = strategy.on_result(w.states[owner], key, value, now)
        self._apply(w, owner, strategy, effects, now)
        return self._finish(w), w.out

    # -- rules -----------------------------------------------------------------

    def _finish(self, w: _Work) -> TurnState:
        n = self._n_start
        return _new(TurnState, (w.open, w.speaking, tuple(w.states[:n]), tuple(w.states[n:]), w.last, w.armed))

    def _touch(self, w: _Work, now: float) -> None:
        w.last = now
        if not w.armed:
            w.armed = True
            w.out.append(StrategyTimer(WATCHDOG, "watchdog", self.stop_timeout))

    def _apply(self, w: _Work, owner: int, strategy: Strategy[Any], effects: Effects, now: float) -> bool:
        halted = False
        for e in effects:
            et = type(e)
            if et is Halt:
                halted = True
            elif et is Start:
                self._start(w, strategy, e, now)  # type: ignore[arg-type]
            elif et is Inference:
                if w.open:
                    self._touch(w, now)
                    w.out.append(InferenceTriggered(strategy))
            elif et is Finalize:
                self._finalize(w, strategy, e.speaking_frames, now)  # type: ignore[union-attr]
            elif et is ResetAggregation:
                if not w.open:  # words of an open turn are never dropped
                    w.out.append(AggregationReset(strategy))
            elif et is Arm:
                w.out.append(StrategyTimer(owner, e.key, e.delay))  # type: ignore[union-attr, arg-type]
            elif et is Disarm:
                w.out.append(StrategyTimer(owner, e.key, None))  # type: ignore[union-attr, arg-type]
            elif et is Push:
                w.out.append(StrategyPush(e.frame, e.direction, e.both_ways))  # type: ignore[union-attr]
            elif et is Touch:
                w.out.append(StrategyCall(owner, e.key, e.fn, False))  # type: ignore[union-attr]
            elif et is Analyze:
                w.out.append(StrategyCall(owner, e.key, e.fn, True))  # type: ignore[union-attr]
        return halted

    def _each(self, w: _Work, now: float, started: bool) -> None:
        for i, strategy in enumerate(self.strategies):
            if started:
                w.states[i], effects = strategy.on_turn_started(w.states[i], now)
            else:
                w.states[i], effects = strategy.on_turn_stopped(w.states[i], now)
            self._apply(w, i, strategy, effects, now)

    def _start(self, w: _Work, strategy: Strategy[Any], e: Start, now: float) -> None:
        if w.open:
            return
        w.open = True
        self._touch(w, now)
        self._each(w, now, started=True)
        interruptions = e.interruptions
        if interruptions is None:
            interruptions = getattr(strategy, "enable_interruptions", True)
        speaking = e.speaking_frames
        if speaking is None:
            speaking = getattr(strategy, "enable_user_speaking_frames", True)
        w.out.append(TurnStarted(strategy, bool(interruptions), bool(speaking)))

    def _finalize(self, w: _Work, strategy: Strategy[Any] | None, speaking_frames: bool | None, now: float) -> None:
        if not w.open or w.speaking:
            return
        w.open = False
        self._touch(w, now)
        self._each(w, now, started=False)
        if speaking_frames is None:
            speaking_frames = getattr(strategy, "enable_user_speaking_frames", True) if strategy else True
        w.out.append(TurnStopped(strategy, bool(speaking_frames)))
