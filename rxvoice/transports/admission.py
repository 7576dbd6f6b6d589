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
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigurationError

__all__ = ["Admission", "AdmissionControl", "SharedAdmission"]


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
