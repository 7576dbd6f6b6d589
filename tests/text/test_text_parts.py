"""Joining transcript and token parts with the right spaces."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice.text import Part, concatenate

EXAMPLES = [
    ([Part("Hello"), Part("world")], "Hello world"),
    ([Part("  Hello "), Part("world")], "Hello  world"),
    ([Part("你好", True), Part("世界", True), Part("Hi", False)], "你好世界 Hi"),
    ([Part("Hello ", True), Part("world", True), Part("again", False)], "Hello world again"),
    ([Part("Hello ", False), Part(" world", True)], "Hello  world"),
    ([], ""),
    ([Part(""), Part("a"), Part(""), Part("b")], "a b"),
    ([Part("Hello", True), Part(" world", True)], "Hello world"),
    ([Part("Hello", True), Part("world", True)], "Helloworld"),
    ([Part("Hello", True), Part("world", False)], "Hello world"),
    ([Part("Hello", False), Part("world", True)], "Hello world"),
    ([Part("Hello\n", False), Part("world", True)], "Hello\nworld"),
    ([Part("a  b"), Part("c")], "a  b c"),
    ([Part("   ")], ""),
]


@pytest.mark.parametrize(("parts", "expected"), EXAMPLES)
def test_concatenate(parts: list[Part], expected: str) -> None:
    """Parts are joined by the reference rules (pipecat §2.3, seed §1.6)."""
    assert concatenate(parts) == expected


def test_tuples_are_accepted() -> None:
    """(text, includes_inter_part_spaces) tuples work like Parts."""
    assert concatenate([("你好", True), ("世界", True), ("Hi", False)]) == "你好世界 Hi"


def test_a_generator_is_consumed_once() -> None:
    """Any iterable of parts can be joined."""
    assert concatenate(Part(w) for w in ["one", "two", "three"]) == "one two three"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", " ", "a", " b", "c ", "你", "\n", " d e "]), st.booleans()),
                max_size=12))
def test_a_list_of_pairs_joins_as_the_rule_says(pairs: list[tuple[str, bool]]) -> None:
    """A list of (text, spaced) pairs (the quick path for a model's tokens) joins as any other iterable does."""
    assert concatenate(pairs) == concatenate(iter(pairs))
