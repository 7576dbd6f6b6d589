"""Properties of the aggregators over arbitrary texts and arbitrary token splits."""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice.text import (
    TOKEN,
    Aggregation,
    MatchAction,
    PatternPairAggregator,
    SimpleTextAggregator,
    SkipTagsAggregator,
    TextAggregator,
)

FRAGMENTS = [
    "Hello",
    "world",
    "Mr.",
    "Smith",
    "3.14",
    "$29.95",
    "e.g.",
    "U.S.",
    "a.m.",
    "Dr",
    "I",
    "你好",
    "。",
    "！",
    "!",
    "?",
    ".",
    "...",
    "…",
    ";",
    ",",
    " ",
    " ",
    " ",
    "  ",
    "\n",
    '"',
    "(",
    ")",
    "*",
    "<spell>",
    "</spell>",
    "<code>",
    "</code>",
    "<v>",
    "</v>",
    "<",
    ">",
    "<sp",
    "ell>",
    "</",
    "http://a.b/c",
    "x@y.io",
    "1.",
    "The",
    "and",
    "नमस्ते",
    "।",
    "42",
]

texts_strategy = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


def split_points(text: str) -> st.SearchStrategy[list[str]]:
    """Arbitrary token splits of ``text``."""
    return st.sets(st.integers(0, len(text)), max_size=12).map(
        lambda cuts: [
            text[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(text)], strict=True)
        ]
    )


@st.composite
def split_texts(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text and one way of streaming it."""
    text = draw(texts_strategy)
    return text, draw(split_points(text))


def run(aggregator: TextAggregator, chunks: list[str]) -> list[Aggregation]:
    """Every unit the chunks complete, then the flushed one."""
    out: list[Aggregation] = []
    for chunk in chunks:
        out.extend(aggregator.aggregate(chunk))
    last = aggregator.flush()
    if last is not None:
        out.append(last)
    return out


def pattern_pair(kind: str = "sentence") -> PatternPairAggregator:
    """A pattern aggregator with one pattern of each action."""
    agg = PatternPairAggregator(kind)
    agg.add_pattern("spell", "<spell>", "</spell>", MatchAction.KEEP)
    agg.add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    agg.add_pattern("voice", "<v>", "</v>", MatchAction.REMOVE)
    return agg


FACTORIES: list[Callable[[], TextAggregator]] = [
    SimpleTextAggregator,
    SkipTagsAggregator,
    pattern_pair,
]

PATTERNS = {
    "<spell>": ("</spell>", MatchAction.KEEP),
    "<code>": ("</code>", MatchAction.AGGREGATE),
    "<v>": ("</v>", MatchAction.REMOVE),
}


def expected_pattern_text(text: str) -> str:
    """What a pattern aggregator keeps of ``text``: an independent, whole-text model."""
    out: list[str] = []
    i = 0
    while True:
        found = [(j, -len(s), s) for s in PATTERNS if (j := text.find(s, i)) >= 0]
        if not found:
            rest = text[i:]
            trim = 0
            for start, (_, action) in PATTERNS.items():
                if action is MatchAction.KEEP:
                    continue
                for k in range(len(start) - 1, trim, -1):
                    if rest.endswith(start[:k]):
                        trim = k
                        break
            out.append(rest[: len(rest) - trim])
            return "".join(out)
        j, _, start = min(found)
        end, action = PATTERNS[start]
        out.append(text[i:j])
        k = text.find(end, j + len(start))
        if k < 0:
            if action is MatchAction.KEEP:
                out.append(text[j:])
            return "".join(out)
        full = text[j : k + len(end)]
        if action is MatchAction.KEEP or (
            action is MatchAction.AGGREGATE and full[len(start) : -len(end)].strip()
        ):
            out.append(full)
        i = k + len(end)


def squash(text: str) -> str:
    """The text without any whitespace."""
    return re.sub(r"\s+", "", text)


@settings(max_examples=250, deadline=None)
@given(split_texts())
def test_token_splits_do_not_change_the_sentences(sample: tuple[str, list[str]]) -> None:
    """However the text is split into tokens, the same units come out."""
    text, chunks = sample
    for factory in FACTORIES:
        assert run(factory(), chunks) == run(factory(), [text]), factory


@settings(max_examples=250, deadline=None)
@given(split_texts())
def test_sentences_reconstruct_the_text(sample: tuple[str, list[str]]) -> None:
    """All units plus the flush give back the text, modulo whitespace and removed patterns."""
    text, chunks = sample
    for factory in (SimpleTextAggregator, SkipTagsAggregator):
        units = run(factory(), chunks)
        assert squash("".join(u.original() for u in units)) == squash(text)
        assert all(u.text and u.text == u.text.strip(" ") for u in units)
    units = run(pattern_pair(), chunks)
    assert squash("".join(u.original() for u in units)) == squash(expected_pattern_text(text))


@settings(max_examples=250, deadline=None)
@given(split_texts())
def test_tokens_reconstruct_the_text_exactly(sample: tuple[str, list[str]]) -> None:
    """In token mode nothing is trimmed: the units add up to the text exactly."""
    text, chunks = sample
    assert "".join(u.text for u in run(SimpleTextAggregator(TOKEN), chunks)) == text
    assert "".join(u.text for u in run(SkipTagsAggregator(aggregation_type=TOKEN), chunks)) == text
    units = run(pattern_pair(TOKEN), chunks)
    assert "".join(u.original() for u in units) == expected_pattern_text(text)


@settings(max_examples=150, deadline=None)
@given(split_texts(), st.data())
def test_an_interruption_forgets_everything(
    sample: tuple[str, list[str]], data: st.DataObject
) -> None:
    """After an interruption the aggregator behaves as a fresh one."""
    _, chunks = sample
    cut = data.draw(st.integers(0, len(chunks)))
    for factory in FACTORIES:
        agg = factory()
        for chunk in chunks[:cut]:
            agg.aggregate(chunk)
        agg.handle_interruption()
        assert run(agg, chunks[cut:]) == run(factory(), chunks[cut:])
