"""The named deadlines: a firing follows the latest deadline, and a rest finer than the clock still fires."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import abc
from reactivex.testing import TestScheduler

from rxvoice.pipeline.deadline import Deadlines


class SchedulerClock:
    """A clock on reactivex's TestScheduler (which keeps time in microseconds)."""

    def __init__(self) -> None:
        self.scheduler = TestScheduler()
        self.calls = 0

    def time(self) -> float:
        return float(self.scheduler.clock)

    def call_later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        self.calls += 1
        assert self.calls < 100, "the deadline re-armed itself without end"
        return self.scheduler.schedule_relative(seconds, lambda *_: fn())


def test_a_moved_deadline_fires_once_at_its_latest_time() -> None:
    clock = SchedulerClock()
    fired: list[tuple[str, float]] = []
    timers: Deadlines[str] = Deadlines(clock, lambda key, now: fired.append((key, now)))
    timers.arm("quiet", 1.0, 0.0)
    clock.scheduler.advance_to(0.5)
    timers.arm("quiet", 1.0, 0.5)
    clock.scheduler.start()
    assert fired == [("quiet", 1.5)]


def test_a_deadline_finer_than_the_clock_fires_instead_of_re_arming_forever() -> None:
    clock = SchedulerClock()
    fired: list[float] = []
    timers: Deadlines[str] = Deadlines(clock, lambda _key, now: fired.append(now))
    timers.arm("words", 0.3000004, 0.0)  # the scheduler rounds the rest (0.4 µs) to nothing
    clock.scheduler.start()
    assert len(fired) == 1 and abs(fired[0] - 0.3) < 1e-5
