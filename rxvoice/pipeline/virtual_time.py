"""A session's timers on reactivex's virtual clock, queued without the scheduler's layers.

Tests, replays and evaluations run a session on reactivex's ``TestScheduler``
(``rxvoice turns`` and ``rxvoice eval`` do too). Scheduling one call there
costs about fifteen Python calls: the delay goes to a ``datetime`` and back to
float seconds and again to a ``datetime``, a ``ScheduledItem`` is built with a
lock-holding disposable, and firing it checks what the action returned
against an ABC and wraps it in one more disposable. A session's own timers
(its deadlines and calls later, :meth:`Session.call_later`) need none of that.

:func:`virtual_queue` answers, for the exact reactivex classes only, how to
queue such a call on the scheduler's own queue as a :class:`VirtualCall`: due
at exactly the ``datetime`` the scheduler would have computed (the same
arithmetic, so the same microsecond rounding), queued the same way (so the
same order among equal times), and fired into the session's gate by the
scheduler's ``advance_by``/``advance_to``/``start`` as its own items are. A
subclass of those schedulers (which may keep time its own way) gets ``None``
and goes through its ``schedule_relative``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from reactivex import abc
from reactivex.scheduler import VirtualTimeScheduler
from reactivex.testing import TestScheduler

__all__ = ["Gate", "VirtualCall", "virtual_queue"]

_EPOCH = datetime.fromtimestamp(0, tz=UTC)
"""reactivex's own epoch (``UTC_ZERO``): its virtual seconds count from it."""


def _as_datetime(value: Any) -> datetime:
    """``Scheduler.to_datetime``: a virtual clock reading as the ``datetime`` reactivex compares."""
    if isinstance(value, timedelta):
        return _EPOCH + value
    if isinstance(value, datetime):
        return value
    return datetime.fromtimestamp(value, tz=UTC)


_EXACT = 2.0**31
"""Below this many seconds from the epoch a float holds a clock reading to well under half a microsecond, so
``datetime.fromtimestamp(to_seconds(d))`` gives ``d`` back exactly (the round trip changes nothing)."""
_DELTAS: dict[float, timedelta] = {}
"""The delays seen so far as ``timedelta``: a session arms the same few delays over and over."""


def _delta(seconds: float) -> timedelta:
    delta = _DELTAS.get(seconds)
    if delta is None:
        if len(_DELTAS) >= 256:  # a bound: delays computed from deadlines vary
            _DELTAS.clear()
        delta = _DELTAS[seconds] = timedelta(0, seconds)
    return delta


def _test_due(clock: Any, seconds: float) -> datetime:
    """Where ``TestScheduler.schedule_relative`` puts a call ``seconds`` from ``clock``.

    It adds the delay as a ``timedelta`` to the clock as a ``datetime``, turns
    that into float seconds (``schedule_absolute``), and back into the
    ``datetime`` the item is queued at. Both ``datetime`` values are whole
    microseconds from the epoch; within :data:`_EXACT` seconds of it the
    float in between is within a quarter of a microsecond of the first, so
    the second is the first (``fromtimestamp`` rounds to the nearest
    microsecond): the sum itself, without the round trip.
    """
    delta = _DELTAS.get(seconds)
    if delta is None:
        delta = _delta(seconds)
    kind = type(clock)
    if kind is float or kind is int:
        start = datetime.fromtimestamp(clock, UTC)
        if -_EXACT < clock + seconds < _EXACT:
            return start + delta
        return _round_trip(start, delta)
    return _round_trip(_as_datetime(clock), delta)


def _round_trip(start: datetime, delta: timedelta) -> datetime:
    """``schedule_absolute``'s way: the sum as float seconds, then back to a ``datetime``."""
    return datetime.fromtimestamp(((start + delta) - _EPOCH).total_seconds(), tz=UTC)


def _virtual_due(clock: Any, seconds: float) -> datetime:
    """Where ``VirtualTimeScheduler.schedule_relative`` puts it (no round trip through seconds)."""
    return _as_datetime(clock) + timedelta(seconds=seconds)


class Gate(Protocol):
    """What a call needs of its session: the gate it fires into (a :class:`~rxvoice.pipeline.Session`)."""

    disposed: bool

    def run(self, fn: Callable[[Any], Any], arg: Any) -> None:
        """Call ``fn(arg)`` now, or after the call already running in the session."""


class VirtualCall(abc.DisposableBase):
    """A plain ``fn()`` queued on a virtual-time scheduler for a session; dispose it to cancel.

    It stands in the scheduler's queue where a ``ScheduledItem`` would: it has
    a ``duetime``, compares by it, says whether it ``is_cancelled`` and is
    ``invoke``-d when the clock reaches it.
    """

    __slots__ = ("_fn", "_session", "duetime")

    def __init__(self, session: Gate, fn: Callable[[], Any], duetime: datetime) -> None:
        self._session = session
        self._fn: Callable[[], Any] | None = fn
        self.duetime = duetime

    def is_cancelled(self) -> bool:
        return self._fn is None

    def invoke(self) -> None:
        if self._fn is not None:
            self._session.run(self._run, None)

    def _run(self, _: None) -> None:
        # Fired once: let go of the call, so nothing it holds outlives the timer.
        fn, self._fn = self._fn, None
        if fn is not None and not self._session.disposed:
            fn()

    def dispose(self) -> None:
        self._fn = None

    # The scheduler's queue orders its items by due time (and, among equal times, by arrival).

    def __lt__(self, other: Any) -> bool:
        return bool(self.duetime < other.duetime)

    def __gt__(self, other: Any) -> bool:
        return bool(self.duetime > other.duetime)

    def __eq__(self, other: object) -> bool:
        try:
            return bool(self.duetime == other.duetime)  # type: ignore[attr-defined]
        except AttributeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like the scheduler's own items: ordered, not hashed


QueueCall = Callable[[Gate, float, Callable[[], Any]], abc.DisposableBase]
"""Queue ``fn()`` for a session ``seconds`` from now (no less than now) on the scheduler's virtual clock."""


def virtual_queue(scheduler: abc.SchedulerBase) -> QueueCall | None:
    """How to queue a session's calls on ``scheduler`` directly, or ``None`` when it is not reactivex's own
    ``TestScheduler`` or ``VirtualTimeScheduler`` (exactly)."""
    kind = type(scheduler)
    if kind is TestScheduler:
        due_at = _test_due
    elif kind is VirtualTimeScheduler:
        due_at = _virtual_due
    else:
        return None
    virtual: VirtualTimeScheduler = scheduler  # type: ignore[assignment]
    lock = getattr(virtual, "_lock", None)
    queue: Any = getattr(virtual, "_queue", None)
    if lock is None or not callable(getattr(queue, "enqueue", None)) or not hasattr(virtual, "_clock"):
        return None  # a reactivex whose scheduler keeps its queue another way: its own schedule_relative

    def queue_call(session: Gate, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        call = VirtualCall(session, fn, due_at(virtual._clock, seconds if seconds > 0.0 else 0.0))  # max(0.0, s)
        with lock:
            queue.enqueue(call)
        return call

    return queue_call
