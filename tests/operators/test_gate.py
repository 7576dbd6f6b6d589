"""gate and Gate: a window opened and closed by predicates, holding what arrives while shut."""

from __future__ import annotations

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.subject import Subject
from reactivex.testing.marbles import marbles_testing

from rxvoice.errors import ConfigurationError
from rxvoice.operators import Gate, gate


def is_(value: str) -> object:
    return lambda x: x == value


def test_marbles_the_opener_goes_first_then_what_was_held() -> None:
    """Shut: held; the opener leaves first, the held items right behind it, in order; then items pass."""
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-o-------c-|").pipe(gate(opens=is_("o"))))
        assert got == exp("-----(o,a,b)-c-|")


def test_marbles_the_closer_is_held_and_released_first_next_time() -> None:
    """Open, then shut by c: c waits with the rest and leaves right behind the next opener."""
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-o-------d-c-f-o-------g-|").pipe(gate(opens=is_("o"), closes=is_("c"))))
        assert got == exp("-----(o,a,b)-d-----(o,c,f)-g-|")


def test_marbles_start_open() -> None:
    """Open from the start: items pass until the closer."""
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-c-b-o-------|").pipe(gate(opens=is_("o"), closes=is_("c"), start_open=True)))
        assert got == exp("-a-----(o,c,b)-|")


def test_marbles_items_that_always_pass() -> None:
    """A passing item goes through a shut gate at once and leaves what is held where it is."""
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-!-b-o-------|").pipe(gate(opens=is_("o"), passes=is_("!"))))
        assert got == exp("---!---(o,a,b)-|")


def test_marbles_completion_releases_what_is_held_or_drops_it() -> None:
    """By default the source completing hands on what is held; release_on_complete=False drops it."""
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-|").pipe(gate(opens=is_("o"))))
        assert got == exp("-----(a,b,|)")
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-|").pipe(gate(opens=is_("o"), release_on_complete=False)))
        assert got == exp("-----|")


def test_marbles_a_predicate_that_raises_fails_the_stream() -> None:
    """The predicate's exception goes to on_error."""

    def opens(x: str) -> bool:
        if x == "b":
            raise ValueError("bad")
        return x == "o"

    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-o-|").pipe(gate(opens=opens)))
        assert got == exp("---#", error=ValueError("bad"))


def test_each_subscription_has_its_own_gate() -> None:
    """Opening one subscription's gate does not open another's."""
    op = gate(opens=is_("o"))
    a: Subject[str] = Subject()
    b: Subject[str] = Subject()
    out_a: list[str] = []
    out_b: list[str] = []
    a.pipe(op).subscribe(out_a.append)
    b.pipe(op).subscribe(out_b.append)
    a.on_next("x")
    b.on_next("y")
    a.on_next("o")
    assert out_a == ["o", "x"]
    assert out_b == []


def test_nothing_opens_a_gate_without_an_opener() -> None:
    """No opener: everything is held until the end."""
    assert reactivex.of(1, 2).pipe(gate(), ops.to_list()).run() == [1, 2]
    assert reactivex.of(1, 2).pipe(gate(release_on_complete=False), ops.to_list()).run() == []


def test_predicates_must_be_callable() -> None:
    """A non-callable predicate is refused when the operator is made."""
    with pytest.raises(ConfigurationError):
        gate(opens="o")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Gate(closes=1)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ the machine


def test_machine_state_and_holdings() -> None:
    """push returns what leaves now; is_open and held show the state in between."""
    g: Gate[str] = Gate(opens=lambda x: x == "o", closes=lambda x: x == "c")
    assert (g.push("1"), g.is_open, g.held) == ((), False, ("1",))
    assert g.push("o") == ["o", "1"]
    assert (g.is_open, g.held) == (True, ())
    assert g.push("c") == ()
    assert (g.is_open, g.held) == (False, ("c",))
    assert g.clear() == 1
    assert g.held == ()


def test_machine_a_raising_predicate_leaves_the_gate_as_it_was() -> None:
    """Nothing is held or released by the push that failed; the caller decides."""

    def opens(x: str) -> bool:
        raise RuntimeError("no")

    g: Gate[str] = Gate(opens=opens)
    with pytest.raises(RuntimeError):
        g.push("1")
    assert (g.is_open, g.held) == (False, ())


def test_machine_flush_releases_or_drops() -> None:
    """flush hands on what is held unless built with release_on_flush=False; either way the gate is empty after."""
    g: Gate[int] = Gate()
    g.push(1)
    assert g.flush() == [1]
    h: Gate[int] = Gate(release_on_flush=False)
    h.push(1)
    assert h.flush() == ()
    assert h.held == ()
