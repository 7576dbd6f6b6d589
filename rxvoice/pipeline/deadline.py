"""Named timers that cost nothing to re-arm: a deadline moves, one firing follows it.

Turn strategies re-arm their timers on nearly every frame (a silence
timeout restarts with each transcript), and the VAD's audio-idle watch on
every chunk of speech. Scheduling each time would cost a scheduler call per
frame; instead each named timer keeps a deadline, at most one scheduled
firing checks it, and when the deadline moved later the firing sleeps again
for the rest. This is the one implementation every stage uses.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from reactivex import abc

__all__ = ["Clock", "Deadlines"]


class Clock(Protocol):
    """What the timers need of a session: its time, and a call later inside it (a ``Port`` or a ``Session``)."""

    def time(self) -> float:
        """The session's clock in seconds."""

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        """Run ``fn()`` inside the session after ``seconds``."""

K = TypeVar("K", bound=Hashable)

_EPS = 1e-9
_RESOLUTION = 1e-6
"""A deadline this close counts as reached: schedulers keep time in microseconds (reactivex's
``TestScheduler`` and ``datetime`` round to them), so a rest shorter than that would sleep for
nothing and check again forever."""


class _Deadline:
    __slots__ = ("due", "handle", "handle_due")

    def __init__(self) -> None:
        self.due: float | None = None
        self.handle: abc.DisposableBase | None = None
        self.handle_due = 0.0


class Deadlines(Generic[K]):
    """The named timers of one session, fired inside it.

    Args:
        port: The session's port, or the session (timers run on its scheduler, through its gate).
        fire: Called with the timer's key and the session time when a deadline passes.
    """

    __slots__ = ("_fire", "_port", "_time", "_timers", "closed", "find")

    def __init__(self, port: Clock, fire: Callable[[K, float], None]) -> None:
        self._port = port
        self._fire = fire
        clock = getattr(port, "clock", None)  # a session's fastest way to read its time, when it offers one
        self._time: Callable[[], float] = clock if callable(clock) else port.time
        self._timers: dict[K, _Deadline] = {}
        self.closed = False
        self.find: Callable[[K], _Deadline | None] = self._timers.get
        """The deadline of a key, if it ever had one (``find(key).due = None`` disarms it: :meth:`disarm` inlined
        by a caller that disarms on nearly every decision)."""

    def arm(self, key: K, delay: float, now: float) -> None:
        """Fire ``key`` ``delay`` seconds after ``now`` (re-arming moves the deadline)."""
        if self.closed:
            return
        due = now + delay
        timer = self._timers.get(key)
        if timer is None:
            timer = self._timers[key] = _Deadline()
        timer.due = due
        if timer.handle is not None:
            if timer.handle_due <= due + _EPS:
                return  # the pending firing comes first and will sleep again for the rest
            timer.handle.dispose()
        self._schedule(key, timer, delay, due)

    def disarm(self, key: K) -> None:
        """Forget ``key``'s deadline (harmless when it is not armed)."""
        timer = self._timers.get(key)
        if timer is not None:
            timer.due = None

    def armed(self, key: K) -> bool:
        """Whether ``key`` has a deadline."""
        timer = self._timers.get(key)
        return timer is not None and timer.due is not None

    def armed_keys(self) -> list[K]:
        """The keys with a deadline."""
        return [k for k, t in self._timers.items() if t.due is not None]

    def _schedule(self, key: K, timer: _Deadline, delay: float, due: float) -> None:
        def check() -> None:
            timer.handle = None
            deadline = timer.due
            if deadline is None or self.closed:
                return
            now = self._time()
            if now < deadline - _RESOLUTION:
                self._schedule(key, timer, deadline - now, deadline)
                return
            timer.due = None
            self._fire(key, now)

        timer.handle_due = due
        timer.handle = self._port.call_later(delay, check)

    def cancel_all(self) -> None:
        """Disarm every timer and cancel their firings (the session is ending)."""
        timers = list(self._timers.values())
        self._timers.clear()  # the same dict: :attr:`find` stays bound to it
        for timer in timers:
            timer.due = None
            if timer.handle is not None:
                timer.handle.dispose()
                timer.handle = None

    def close(self) -> None:
        """No timer fires any more."""
        self.closed = True
        self.cancel_all()
