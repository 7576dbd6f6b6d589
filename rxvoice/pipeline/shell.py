"""The shell of a stage that runs a pure core: it carries out what the core asks, for one session.

The cores (the turn machine, the user's words, the assistant's decisions)
never touch a stream, a clock or a thread: they call a narrow port. This
module is the one interpreter of that port for rxvoice's stages:

* frames go to the neighbours (``emit``);
* named timers are deadlines on the session's scheduler (:class:`~rxvoice.pipeline.deadline.Deadlines`),
  fired back into the core;
* events are raised through the session's own :class:`~rxvoice.events.SessionEvents`;
* application callbacks are contained (:func:`~rxvoice.events.contain`);
* writes go to the shared conversation; one it refuses is reported, never raised;
* heavy calls go to the offload (one shared worker pool by default) and
  their results come back through the session's gate.

The one failure rule of work off the session (:meth:`StageShell.submit`,
:meth:`StageShell.enter`): its outcome always comes back as an input of the
session, the value or the exception the job raised (an offload that refuses
the job is that exception), after the step under way, unless the session
closed or the work was cancelled; it is never raised into the stream. The
stage turns a failure into its typed error and reports it once through
:meth:`StageShell.failed` (logged, ``on_error``, an ``ErrorFrame`` upstream),
or hands it to the core that asked (a turn strategy's verdict). Every
service's session (speech-to-text, text-to-speech, the model, the
summarizer) and every turn stage runs on this shell.

:class:`TurnShell` adds what a stage running the turn machine needs: the
strategies' per-session resources (opened lazily at the audio's rate) and a
controller swapped on a service's recommendation.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, Protocol

from reactivex import abc

from ..context import ContextSnapshot, LLMContext
from ..errors import RxVoiceError, ServiceError
from ..events import NO_PAYLOAD, EventRegistry, contain
from ..frames import DOWN, Direction, Frame, LLMContextFrame
from ..turns.controller import TurnController
from ..turns.machine import TurnMachine, Words
from ..turns.scan import ResultBack
from .deadline import Deadlines
from .offload import Offload, default_offload
from .processor import EventfulProcessor, Port, Processor

__all__ = ["RUNNING", "ServiceStage", "StageShell", "TurnShell", "TurnStage"]

log = logging.getLogger("rxvoice.pipeline.shell")

RUNNING: contextvars.ContextVar[StageShell | None] = contextvars.ContextVar("rxvoice_running_shell", default=None)
"""The session whose event handler or callback is running (``stage.push`` goes through it)."""


class ServiceStage(Protocol):
    """What the session of a service reads of its stage, whatever the service: its name, events, offload, and
    how long an end waits for its last piece of work."""

    @property
    def name(self) -> str: ...
    @property
    def events(self) -> EventRegistry: ...
    @property
    def offload(self) -> Offload: ...
    @property
    def end_grace(self) -> float: ...


class StageShell:
    """Carries out a core's calls for one session of one stage."""

    def __init__(
        self, stage: Processor, port: Port, events: EventRegistry, *,
        context: LLMContext | None = None, offload: Offload | None = None,
    ) -> None:
        self.stage = stage
        self.port = port
        self.link = port.link
        self.events = events.session(port.time)
        port.events = self.events
        self.context = context
        self.offload: Offload = offload or default_offload
        self.clock = port.session.clock
        self.now = 0.0
        self.timers: Deadlines[tuple[Hashable, str]] = Deadlines(port, self._fire)
        self._deadline = self.timers.find
        # A subclass whose disarm does more than clear the deadline is asked (no lookup in place).
        self.find_timer: Callable[[tuple[Hashable, str]], Any] | None = (
            self._deadline if type(self).disarm is StageShell.disarm else None)
        """Where :meth:`disarm` looks a timer up: the turn machine disarms in place through it (``find((owner,
        key)).due = None``, no call of :meth:`disarm`); ``None`` on a port whose :meth:`disarm` does more."""
        self.closed = False
        self._futures: set[concurrent.futures.Future[Any]] = set()
        # Asked on nearly every decision: the registry's own table, without a Python call per question.
        self.listens: Callable[[str], bool] = events.listens

    # -- frames -------------------------------------------------------------------------------

    def emit(self, frame: Frame, direction: Direction) -> None:
        """Send ``frame`` to the neighbour in ``direction`` (nothing once the session closed)."""
        if self.closed:
            return
        # Read, then called: an attribute of the link, not looked up as a method (faster).
        emit = self.link.emit_down if direction is DOWN else self.link.emit_up
        emit(frame)

    def emit_context(self, direction: Direction = DOWN, *, speculation_id: int | None = None) -> None:
        """Send the conversation as it stands now (an ``LLMContextFrame``) in ``direction``.

        ``speculation_id``: the held speculative answer that stands for this request.
        """
        if self.closed:
            return
        assert self.context is not None
        self.emit(LLMContextFrame(self.context, speculation_id=speculation_id), direction)

    # -- timers -------------------------------------------------------------------------------

    def arm(self, owner: Hashable, key: str, delay: float) -> None:
        """Fire ``(owner, key)`` ``delay`` seconds from the current step's time."""
        self.timers.arm((owner, key), delay, self.now)

    def disarm(self, owner: Hashable, key: str) -> None:
        timer = self._deadline((owner, key))  # Deadlines.disarm, inlined: strategies disarm on most decisions
        if timer is not None:
            timer.due = None

    def disarm_all(self) -> None:
        self.timers.cancel_all()

    def _fire(self, key: tuple[Hashable, str], now: float) -> None:
        self.now = now
        self.on_timer(key[0], key[1], now)

    def on_timer(self, owner: Any, key: str, now: float) -> None:
        """A timer fired (inside the session)."""

    # -- events and callbacks ---------------------------------------------------------------

    def event(self, name: str, payload: Any = NO_PAYLOAD) -> None:
        if self.closed:
            return
        token = RUNNING.set(self)
        try:
            self.events.emit(name, payload)
        finally:
            RUNNING.reset(token)

    def callback(self, fn: Callable[[Any], Any]) -> None:
        """Call an application callback with the stage; whatever it raises is contained."""
        if self.closed:
            return
        token = RUNNING.set(self)
        try:
            contain(fn, self.stage, what=f"{self.stage.name}'s callback {fn!r}")
        finally:
            RUNNING.reset(token)

    # -- the conversation ---------------------------------------------------------------------

    def messages(self) -> Sequence[Any]:
        """The shared conversation's messages as they stand now."""
        return self.context.messages if self.context is not None else ()

    def snapshot(self) -> ContextSnapshot:
        """The shared conversation as it stands now."""
        assert self.context is not None
        return self.context.snapshot

    def write(self, op: Callable[[LLMContext], Any]) -> bool:
        """Change the shared conversation; a write it refuses is reported (``False``)."""
        if self.closed:
            return False
        assert self.context is not None
        try:
            op(self.context)
        except RxVoiceError as err:
            log.warning("%s: %s; not written", self.stage.name, err)
            self.port.report_error(err)
            return False
        return True

    # -- work off the session -------------------------------------------------------------------

    def submit(
        self, job: Callable[[], Any], deliver: Callable[[Any], None], *, offload: Offload | None = None
    ) -> concurrent.futures.Future[Any] | None:
        """Run ``job`` on the offload (this one, else the shell's); ``deliver(result or exception)`` in the session.

        Returns the job's future (cancel it to drop the outcome), or ``None``
        when the offload refused the job: ``deliver`` then gets the refusal,
        as a later input too. Nothing comes back once the session closed.
        """
        if self.closed:
            return None
        try:
            future = (offload or self.offload)(job)
        except Exception as exc:  # a broken or shut-down offload: the asker's input, not the stream's end
            log.warning("%s: the offload refused a job (%s)", self.stage.name, exc)
            refused = exc
            self.enter(lambda: deliver(refused))
            return None
        self._futures.add(future)

        def done(f: concurrent.futures.Future[Any]) -> None:
            self._futures.discard(f)
            if f.cancelled() or self.closed:
                return
            error = f.exception()
            value: Any = error if error is not None else f.result()
            self.enter(lambda: deliver(value))

        future.add_done_callback(done)
        return future

    def enter(self, fn: Callable[[], Any]) -> None:
        """Run ``fn()`` as an input of the session (from any thread), unless the session closed first."""
        if not self.closed:
            self.port.inject_call(lambda: None if self.closed else fn())

    def later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        """Run ``fn()`` in the session after ``seconds`` of its scheduler's time (dispose to cancel; a session
        that closes cancels them all)."""
        return self.port.call_later(seconds, fn)

    def failed(
        self, error: BaseException, what: str, *, upstream: bool = True, wrap: bool = True
    ) -> BaseException:
        """Report work that failed, once: logged, raised as ``on_error``, sent upstream as an ``ErrorFrame``
        (unless not ``upstream``). An error that is not rxvoice's is wrapped in a ``ServiceError`` naming
        ``what`` (its cause kept), unless it is the application's own (``wrap=False``: a tool handler's
        exception is reported as it was raised). Returns what was reported."""
        typed = error if isinstance(error, RxVoiceError) or not wrap else ServiceError(
            f"{self.stage.name}: {what} failed: {error!r}")
        if typed is not error:
            typed.__cause__ = error
        if not self.closed:
            self.port.report_error(typed, upstream=upstream)
        return typed

    def close(self) -> None:
        """The session ends: no timer fires, no result comes back, async handlers get their grace."""
        self.closed = True
        self.timers.close()
        for f in list(self._futures):
            f.cancel()
        self._futures.clear()
        self.events.close()


class TurnShell(StageShell):
    """The shell of a stage running the turn machine: the :class:`~rxvoice.turns.TurnPort` it talks through."""

    def __init__(
        self, stage: Processor, port: Port, events: EventRegistry, machine: TurnMachine, *,
        words: Callable[[TurnShell], Words] | None = None, context: LLMContext | None = None,
        offload: Offload | None = None, params: Frame | None = None,
    ) -> None:
        super().__init__(stage, port, events, context=context, offload=offload)
        self.machine = machine
        self.controller = machine.controller
        self.sample_rate = 16000
        self._resources: list[Any] | None = None
        self._generation = 0
        self.handled = machine.handled_types
        self.turn = machine.open(
            self, words(self) if words is not None else None, params=params,
            decides_before_end=self.decides_before_end,
        )

    # -- the session's edges: one place for every stage that runs the machine --------------------

    decides_before_end: ClassVar[bool] = False
    """At the session's end, decide first, then pass the end on (``True``: the user aggregator writes what
    was said, and asks for its answer, before the end goes on, so the answer comes before the end); or pass
    the end on first (``False``: a stage that only announces turns)."""

    def start_session(self, frame: Frame, direction: Direction, *, passed: bool = False) -> None:
        """The session starts: the start frame goes on (unless ``passed`` already), then the machine starts.

        The audio's rate (a ``StartFrame``'s ``audio_in_sample_rate``) is the
        rate the strategies' resources open at; the stage's own parameters
        (given at open, e.g. its VAD's) go both ways.
        """
        rate = getattr(frame, "audio_in_sample_rate", None)
        if isinstance(rate, int) and rate > 0:
            self.sample_rate = rate
        self.feed(frame, direction, passed=passed)

    def end_session(self, frame: Frame | None, direction: Direction = DOWN, *, passed: bool = False) -> None:
        """The session ends (an end or cancel frame, or ``None``: the input completed): nothing said is lost.

        The end goes on before or after the machine ends, as
        :attr:`decides_before_end` says (unless ``passed`` already).
        """
        if frame is not None:
            self.feed(frame, direction, passed=passed)
            return
        self.now = now = self.clock()
        self.machine.end(self.turn, now)

    def feed(self, item: Any, direction: Direction = DOWN, *, passed: bool = False) -> bool:
        """One input of the session (a frame, a timer that fired, a result): into the machine's one entry."""
        self.now = now = self.clock()
        return self.machine.step(self.turn, item, direction, now, passed=passed)

    def decide(self, frame: Frame, direction: Direction = DOWN) -> bool:
        """A frame of a handled type that is not a session edge: :meth:`feed` without the sorting (one call less)."""
        self.now = now = self.clock()
        return self.machine.on_frame(self.turn, frame, direction, now)

    def on_input_end(self, direction: Direction) -> None:
        """The input completed: like an end frame, without one to pass on."""
        if direction is DOWN:
            self.end_session(None)

    # -- the strategies' resources ---------------------------------------------------------------

    def _resource(self, owner: int) -> Any:
        resources = self._resources
        if resources is None:  # opened on first use, at the rate the audio comes at
            resources = self._resources = [s.open_resource(self.sample_rate) for s in self.controller.strategies]
        return resources[owner] if 0 <= owner < len(resources) else None

    def _release(self) -> None:
        resources, self._resources = self._resources, None
        if resources is None:
            return
        for strategy, resource in zip(self.controller.strategies, resources, strict=False):
            if resource is not None:
                contain(strategy.close_resource, resource, what=f"releasing {strategy.name}'s resource")

    def call(self, owner: int, key: str | None, fn: Callable[[Any], Any], offload: bool) -> None:
        if self.closed:
            return
        resource = self._resource(owner)
        if offload:
            generation = self._generation
            self.submit(lambda: fn(resource), lambda value: self._result(generation, owner, key, value))
            return
        try:
            value = fn(resource)
        except Exception as exc:  # handed back, so the strategy can decide (and report it)
            if key is None:
                log.exception("%s: a strategy's resource call failed", self.stage.name)
                return
            log.debug("%s: a strategy's resource call failed", self.stage.name, exc_info=True)
            value = exc
        if key is not None:
            self.machine.on_result(self.turn, owner, key, value, self.now)  # held until the decision is done

    def _result(self, generation: int, owner: int, key: str | None, value: Any) -> None:
        if key is None or generation != self._generation:  # a swapped-out strategy's answer is not theirs
            return
        self.feed(ResultBack(owner, key, value, 0.0))

    def use(self, controller: TurnController) -> None:
        """A service's recommendation: the old strategies' timers and resources go, the new ones' come."""
        for owner, key in self.timers.armed_keys():
            if isinstance(owner, int):
                self.timers.disarm((owner, key))
        self._release()
        self._generation += 1
        self.controller = controller
        self.handled = self.machine.handled_with(controller)

    def on_timer(self, owner: Any, key: str, now: float) -> None:
        self.machine.on_timer(self.turn, owner, key, now)  # what step does with a TimerFired, without building one

    def _fire(self, key: tuple[Hashable, str], now: float) -> None:
        self.now = now
        owner: Any = key[0]  # a strategy's place or one of the machine's owners: what this shell armed
        self.machine.on_timer(self.turn, owner, key[1], now)  # :meth:`on_timer`, without a call of its own

    def close(self) -> None:
        super().close()
        self._release()


class TurnStage(EventfulProcessor):
    """A stage whose sessions run the turn machine: the live sessions, and pushing through one."""

    _sessions: list[TurnShell]

    def __repr__(self) -> str:
        return f"<{self.name}>"

    @property
    def state(self) -> Any:
        """The turn of the most recent session (for inspection and tests), or ``None``."""
        last = self.__dict__.get("_last")
        return last.turn if last is not None else None

    def _track(self, session: TurnShell) -> None:
        self.__dict__.setdefault("_sessions", []).append(session)
        self.__dict__["_last"] = session

    def _forget(self, session: TurnShell) -> None:
        sessions = self.__dict__.get("_sessions", [])
        if session in sessions:
            sessions.remove(session)

    def push(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Send ``frame`` from this stage to its neighbour (e.g. from an ``on_idle`` callback).

        From an event handler or callback it goes through the session that
        raised it; otherwise through the most recent running session.
        """
        running = RUNNING.get()
        session = running if isinstance(running, TurnShell) and running.stage is self else None
        if session is None:
            sessions = self.__dict__.get("_sessions")
            session = sessions[-1] if sessions else None
        if session is None or session.closed:
            log.warning("%s.push(%s): no running session; dropped", self.name, frame.name)
            return
        chosen = session
        chosen.port.session.run(lambda _: chosen.emit(frame, direction), None)
