"""buffer_until and BufferUntil: lists closed by a boundary, in virtual time and with plain asserts."""

from __future__ import annotations

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.subject import Subject
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.marbles import marbles_testing

from rxvoice.errors import ConfigurationError
from rxvoice.operators import BufferUntil, buffer_until


def is_dot(x: str) -> bool:
    return x == "."


def test_marbles_each_boundary_closes_a_list_and_completion_flushes() -> None:
    """The closing item ends its own list; what is left goes out as the stream completes."""
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-.-c-.-d-|").pipe(buffer_until(is_dot)))
        assert got == exp("-----x---y---(z,|)", {"x": ["a", "b", "."], "y": ["c", "."], "z": ["d"]})


def test_marbles_nothing_left_means_no_last_list() -> None:
    """A stream ending right after a boundary completes without an empty list."""
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-.-|").pipe(buffer_until(is_dot)))
        assert got == exp("---x-|", {"x": ["a", "."]})


def test_marbles_a_source_error_drops_what_is_held() -> None:
    """The source's error passes straight on; the unfinished list is not emitted."""
    boom = ValueError("boom")
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-.-b-#", error=boom).pipe(buffer_until(is_dot)))
        assert got == exp("---x---#", {"x": ["a", "."]}, boom)


def test_a_boundary_that_raises_fails_the_stream() -> None:
    """As with reactivex's map: the callback's exception goes to on_error, after the lists already closed."""

    def boundary(x: int) -> bool:
        if x == 3:
            raise RuntimeError("bad item")
        return x == 0

    out: list[list[int]] = []
    errors: list[Exception] = []
    reactivex.of(1, 0, 2, 3, 4).pipe(buffer_until(boundary)).subscribe(out.append, errors.append)
    assert out == [[1, 0]]
    assert [str(e) for e in errors] == ["bad item"]


def test_each_subscription_gathers_on_its_own() -> None:
    """One operator, two subscriptions: no shared list."""
    op = buffer_until(is_dot)
    a: Subject[str] = Subject()
    b: Subject[str] = Subject()
    out_a: list[list[str]] = []
    out_b: list[list[str]] = []
    a.pipe(op).subscribe(out_a.append)
    b.pipe(op).subscribe(out_b.append)
    a.on_next("x")
    b.on_next("y")
    b.on_next(".")
    a.on_next(".")
    assert out_a == [["x", "."]]
    assert out_b == [["y", "."]]


def test_the_subscription_is_disposed_with_the_result() -> None:
    """Disposing the result unsubscribes the source at that instant."""
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(ReactiveTest.on_next(210, "a"), ReactiveTest.on_next(400, "."))
    results = scheduler.start(lambda: xs.pipe(buffer_until(is_dot)), disposed=300)
    assert results.messages == []
    assert xs.subscriptions == [ReactiveTest.subscribe(200, 300)]


def test_works_on_any_items() -> None:
    """Numbers, tuples, anything: the boundary decides."""
    got = reactivex.of(1, 2, 10, 3, 20).pipe(buffer_until(lambda n: n >= 10), ops.to_list()).run()
    assert got == [[1, 2, 10], [3, 20]]


def test_a_boundary_must_be_callable() -> None:
    """A non-callable boundary is refused when the operator is made."""
    with pytest.raises(ConfigurationError):
        buffer_until(42)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- the state machine


def test_machine_push_returns_the_closed_list() -> None:
    """push returns () until the boundary, then the whole list; held shows what waits."""
    m = BufferUntil(is_dot)
    assert m.push("a") == ()
    assert m.held == ("a",)
    assert m.push(".") == (["a", "."],)
    assert m.held == ()


def test_machine_flush_returns_the_rest_once() -> None:
    """flush hands on the rest and starts over; a second flush has nothing."""
    m = BufferUntil(is_dot)
    m.push("a")
    m.push("b")
    assert m.flush() == (["a", "b"],)
    assert m.flush() == ()


def test_machine_keeps_the_item_when_the_boundary_raises() -> None:
    """The item is gathered before the boundary is asked: a failing boundary loses nothing."""

    def boundary(x: str) -> bool:
        raise RuntimeError("no")

    m = BufferUntil(boundary)
    with pytest.raises(RuntimeError):
        m.push("kept")
    assert m.flush() == (["kept"],)
