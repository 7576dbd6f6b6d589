"""Admission control: how many sessions a server takes, and the load figure a dispatcher reads.

A session costs a known share of a core (``benchmarks/serve.py`` measures
it); past the number the machine carries, a new caller would slow every
other one down. So a server takes at most ``capacity`` sessions and refuses
the next one with a reason ("server full"), and :meth:`Admission.load`
(``sessions / capacity``, 0 to 1) tells the app's own dispatcher or load
balancer where there is room (``rxvoice serve`` serves it at ``/load``).

:class:`Admission` counts the sessions of one process. With several worker
processes on one machine (``rxvoice serve --workers N``) the count is the
machine's: :class:`SharedAdmission` keeps one counter per worker in shared
memory, so any worker admits against the machine's total and reports the
machine's load.

Opening a session costs a few milliseconds of CPU on the event loop that
every other session shares, so a client reconnecting in a loop would slow
them all down without ever holding a seat: :class:`SessionStarts` lets each
address open at most ``rate`` sessions a second (after a ``burst``), and
the server refuses the others before the WebSocket is opened (cheaply).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigurationError

__all__ = ["Admission", "AdmissionControl", "SessionStarts", "SharedAdmission"]


@runtime_checkable
class AdmissionControl(Protocol):
    """What a server asks before it opens a session."""

    capacity: int

    def admit(self) -> bool:
        """Take one session if there is room (then :meth:`release` it when it ends)."""
        ...

    def release(self) -> None:
        """A session ended."""
        ...

    @property
    def sessions(self) -> int:
        """Sessions running now."""
        ...

    def load(self) -> float:
        """``sessions / capacity``, 0 to 1."""
        ...


def _capacity(capacity: object) -> int:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ConfigurationError(f"the session capacity must be an int >= 1, got {capacity!r}")
    return capacity


class Admission:
    """The sessions of one process, at most ``capacity`` at once."""

    def __init__(self, capacity: int) -> None:
        self.capacity = _capacity(capacity)
        self._sessions = 0
        self._lock = threading.Lock()
        self.refused = 0
        """Sessions refused so far."""

    def admit(self) -> bool:
        with self._lock:
            if self._sessions >= self.capacity:
                self.refused += 1
                return False
            self._sessions += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._sessions = max(0, self._sessions - 1)

    @property
    def sessions(self) -> int:
        return self._sessions

    def load(self) -> float:
        return min(1.0, self._sessions / self.capacity)


class SharedAdmission:
    """The sessions of every worker process of one machine, at most ``capacity`` in all.

    Args:
        counts: One shared integer per worker (a ``multiprocessing.Array("i", n)``).
        index: This worker's slot.
        capacity: The machine's session capacity.
        lock: A lock shared by the workers (``multiprocessing.Lock()``).
    """

    def __init__(self, counts: Sequence[int], index: int, capacity: int, lock: Any) -> None:
        if not 0 <= index < len(counts):
            raise ConfigurationError(f"worker index {index} is not one of the {len(counts)} slots")
        self.capacity = _capacity(capacity)
        self._counts: Any = counts
        self._index = index
        self._lock = lock
        self.refused = 0

    def admit(self) -> bool:
        with self._lock:
            if sum(self._counts) >= self.capacity:
                self.refused += 1
                return False
            self._counts[self._index] += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._counts[self._index] = max(0, self._counts[self._index] - 1)

    @property
    def sessions(self) -> int:
        return int(sum(self._counts))

    @property
    def own_sessions(self) -> int:
        """This worker's sessions."""
        return int(self._counts[self._index])

    def load(self) -> float:
        return min(1.0, self.sessions / self.capacity)


class SessionStarts:
    """Session starts per client address: a token bucket each (``burst`` at once, then ``rate`` a second).

    Time is an argument (the server passes its loop's clock). At most ``max_addresses`` buckets are kept;
    past that the full ones (addresses that have been quiet) are forgotten first, then the oldest.

    Args:
        rate: Session starts a second an address may keep up.
        burst: Starts an address may make at once (a page's reconnects, a load test's clients).
    """

    def __init__(self, rate: float = 4.0, burst: int = 32, *, max_addresses: int = 4096) -> None:
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0:
            raise ConfigurationError(f"the session start rate must be a positive number, got {rate!r}")
        for name, value in (("burst", burst), ("max_addresses", max_addresses)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"the session starts' {name} must be an int >= 1, got {value!r}")
        self.rate = float(rate)
        self.burst = burst
        self.max_addresses = max_addresses
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, when)
        self._lock = threading.Lock()
        self.refused = 0
        """Starts refused so far."""

    def allow(self, address: str, now: float) -> bool:
        """Whether ``address`` may open a session at ``now`` (seconds); takes one start if so."""
        with self._lock:
            tokens, then = self._buckets.get(address, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + max(0.0, now - then) * self.rate)
            if tokens < 1.0:
                self._buckets[address] = (tokens, now)
                self.refused += 1
                return False
            self._buckets[address] = (tokens - 1.0, now)
            if len(self._buckets) > self.max_addresses:
                self._forget(now)
            return True

    def _forget(self, now: float) -> None:
        full = [a for a, (t, w) in self._buckets.items() if t + (now - w) * self.rate >= self.burst]
        for address in full:
            del self._buckets[address]
        while len(self._buckets) > self.max_addresses:
            del self._buckets[next(iter(self._buckets))]
