"""A session's calls on reactivex's virtual clock: due exactly where the scheduler would put them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from reactivex.scheduler import HistoricalScheduler, VirtualTimeScheduler
from reactivex.testing import TestScheduler

from rxvoice.pipeline import Session
from rxvoice.pipeline.virtual_time import VirtualCall, virtual_queue

CLOCKS = [0, 0.0, 0.1, 0.3, 1.0000005, 2.4999995, 123.456789, 1e6 + 0.7]
DELAYS = [0.0, 1e-7, 4e-7, 5e-7, 6e-7, 0.001, 0.1, 0.2, 0.3, 0.6, 1.0000005, 3.3333333]


@pytest.mark.parametrize("kind", [TestScheduler, VirtualTimeScheduler])
def test_a_call_is_due_where_the_scheduler_puts_its_own_item(kind: type[VirtualTimeScheduler]) -> None:
    for clock in CLOCKS:
        for delay in DELAYS:
            scheduler = kind()
            scheduler._clock = clock
            session = Session(scheduler)
            scheduler.schedule_relative(delay, lambda _s, _st: None)
            (own, _), = scheduler._queue.items
            call = session.call_later(delay, lambda: None)
            assert isinstance(call, VirtualCall)
            assert type(call.duetime) is type(own.duetime) is datetime
            assert call.duetime == own.duetime, (clock, delay)


@pytest.mark.parametrize("clock", [
    1.7e9 + 0.1234565, 2.0**31 - 0.5, 2.0**31 - 1e-6, 2.0**31, 2.0**31 + 0.2500005, 5e9 + 0.1234565, 2.5e11 + 0.7,
    19395392668.507225, -(2.0**31) + 0.5, -1e9 - 0.0000005, -0.0000005,
])
def test_a_call_on_a_clock_far_from_the_epoch_is_due_where_the_scheduler_puts_its_own_item(clock: float) -> None:
    # Near the epoch the due time is the plain sum; far from it, float seconds round and the scheduler's round
    # trip through them is taken as it is.
    for delay in [*DELAYS, 0.2500005, 12345.6789]:
        scheduler = TestScheduler()
        scheduler._clock = clock
        session = Session(scheduler)
        scheduler.schedule_relative(delay, lambda _s, _st: None)
        (own, _), = scheduler._queue.items
        call = session.call_later(delay, lambda: None)
        assert call.duetime == own.duetime, (clock, delay)  # type: ignore[attr-defined]


def test_calls_and_the_schedulers_own_items_fire_in_time_order_then_in_arrival_order() -> None:
    scheduler = TestScheduler()
    session = Session(scheduler)
    fired: list[str] = []
    session.call_later(0.2, lambda: fired.append("call 0.2"))
    scheduler.schedule_relative(0.1, lambda _s, _st: fired.append("item 0.1"))
    session.call_later(0.1, lambda: fired.append("call 0.1"))
    scheduler.schedule_relative(0.2, lambda _s, _st: fired.append("item 0.2"))
    session.call_later(0.0, lambda: fired.append("call 0"))
    scheduler.advance_by(0.15)
    assert fired == ["call 0", "item 0.1", "call 0.1"]
    assert session.time() == pytest.approx(0.15)
    scheduler.start()
    assert fired == ["call 0", "item 0.1", "call 0.1", "call 0.2", "item 0.2"]


def test_a_call_sees_the_clock_at_its_due_time_and_runs_inside_the_gate() -> None:
    scheduler = TestScheduler()
    session = Session(scheduler)
    seen: list[tuple[float, bool]] = []
    session.call_later(0.3, lambda: seen.append((session.time(), session.busy)))
    scheduler.advance_by(1.0)
    assert seen == [(pytest.approx(0.3), True)]


def test_a_disposed_call_or_a_disposed_session_fires_nothing() -> None:
    scheduler = TestScheduler()
    session = Session(scheduler)
    fired: list[int] = []
    session.call_later(0.1, lambda: fired.append(1)).dispose()
    later = Session(scheduler)
    later.call_later(0.1, lambda: fired.append(2))
    later.dispose()
    session.call_later(0.2, lambda: fired.append(3))
    scheduler.advance_by(1.0)
    assert fired == [3]


def test_a_call_made_while_the_session_is_busy_waits_for_the_gate() -> None:
    scheduler = TestScheduler()
    session = Session(scheduler)
    order: list[str] = []

    def busy(_: None) -> None:
        session.call_later(0.0, lambda: order.append("timer"))
        scheduler.advance_by(0.1)  # fires while the session is inside this call
        order.append("busy done")

    session.run(busy, None)
    assert order == ["busy done", "timer"]


def test_other_schedulers_take_their_own_scheduling() -> None:
    class Mine(TestScheduler):
        pass

    assert virtual_queue(Mine()) is None
    assert virtual_queue(HistoricalScheduler(datetime(2026, 1, 1, tzinfo=UTC))) is None
    scheduler = Mine()
    session = Session(scheduler)
    fired: list[int] = []
    handle = session.call_later(0.1, lambda: fired.append(1))
    assert not isinstance(handle, VirtualCall)
    scheduler.advance_by(0.2)
    assert fired == [1]


def test_a_scheduler_without_the_queue_it_expects_takes_its_own_scheduling() -> None:
    scheduler = TestScheduler()
    del scheduler._queue  # a reactivex that keeps its queue another way
    assert virtual_queue(scheduler) is None
