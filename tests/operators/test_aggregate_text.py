"""aggregate_text: streamed text cut into typed units by a text aggregator, one aggregator per subscription."""

from __future__ import annotations

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.subject import Subject
from reactivex.testing.marbles import marbles_testing

from rxvoice.errors import ConfigurationError
from rxvoice.operators import aggregate_text
from rxvoice.text import Aggregation, MatchAction, PatternPairAggregator, SimpleTextAggregator


def code_aggregator() -> PatternPairAggregator:
    return PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)


def test_marbles_units_go_out_when_complete_and_the_last_at_completion() -> None:
    """Sentences leave with the token that confirms them; the held one is flushed as the stream completes."""
    lookup = {"a": "Hello", "b": " world", "c": ". Next", "d": " one"}
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-c---d-|", lookup).pipe(aggregate_text()))
        assert got == exp("-----x-----(y,|)", {"x": Aggregation("Hello world."), "y": Aggregation("Next one")})


def test_marbles_pattern_units_are_typed() -> None:
    """A code block is a unit of its own, with its written form as raw_text."""
    lookup = {"a": "See <co", "b": "de>x = 1</code>", "c": " now."}
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b---c---|", lookup).pipe(aggregate_text(code_aggregator)))
        assert got == exp(
            "---(s,x)---(n,|)",
            {"s": Aggregation("See"), "x": Aggregation("x = 1", "code", "<code>x = 1</code>"),
             "n": Aggregation("now.")},
        )


def test_an_instance_serves_one_subscription_and_a_copy_the_next() -> None:
    """Given one aggregator, two live subscriptions never share a buffer; the first uses the instance itself."""
    agg = code_aggregator()
    op = aggregate_text(agg)
    a: Subject[str] = Subject()
    b: Subject[str] = Subject()
    out_a: list[Aggregation] = []
    out_b: list[Aggregation] = []
    a.pipe(op).subscribe(out_a.append)
    b.pipe(op).subscribe(out_b.append)
    a.on_next("Alpha")
    b.on_next("Beta")
    assert agg.text.text == "Alpha"
    a.on_completed()
    b.on_completed()
    assert [u.text for u in out_a] == ["Alpha"]
    assert [u.text for u in out_b] == ["Beta"]


def test_the_instance_is_free_again_once_its_subscription_ends() -> None:
    """After a disposal the next subscription gets the instance back, not a copy."""
    agg = SimpleTextAggregator()
    op = aggregate_text(agg)
    first: Subject[str] = Subject()
    subscription = first.pipe(op).subscribe(lambda _u: None)
    subscription.dispose()
    second: Subject[str] = Subject()
    second.pipe(op).subscribe(lambda _u: None)
    second.on_next("Held here")
    assert agg.text.text == "Held here"


def test_a_factory_builds_one_aggregator_per_subscription() -> None:
    """A zero-argument factory is called once per subscription."""
    made: list[SimpleTextAggregator] = []

    def factory() -> SimpleTextAggregator:
        made.append(SimpleTextAggregator())
        return made[-1]

    op = aggregate_text(factory)
    for _ in range(2):
        assert reactivex.of("One. Two").pipe(op, ops.map(lambda u: u.text), ops.to_list()).run() == ["One.", "Two"]
    assert len(made) == 2


def test_what_is_not_an_aggregator_is_refused() -> None:
    """A non-aggregator fails at once; a factory returning one fails the subscription."""
    with pytest.raises(ConfigurationError):
        aggregate_text(42)  # type: ignore[arg-type]
    errors: list[Exception] = []
    reactivex.of("x").pipe(aggregate_text(lambda: "nope")).subscribe(on_error=errors.append)  # type: ignore[arg-type,return-value]
    assert [type(e) for e in errors] == [ConfigurationError]


def test_an_aggregator_that_raises_fails_the_stream() -> None:
    """As with reactivex's map: the exception goes to on_error."""

    class Broken(SimpleTextAggregator):
        def aggregate(self, text: str) -> list[Aggregation]:
            raise RuntimeError("broken")

    errors: list[Exception] = []
    reactivex.of("x").pipe(aggregate_text(Broken())).subscribe(on_error=errors.append)
    assert [str(e) for e in errors] == ["broken"]
