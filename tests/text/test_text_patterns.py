"""PatternPairAggregator and SkipTagsAggregator: the reference examples and more."""

from __future__ import annotations

import asyncio
import logging

import pytest

from rxvoice.text import (
    TOKEN,
    Aggregation,
    MatchAction,
    PatternMatch,
    PatternPairAggregator,
    SkipTagsAggregator,
)

from ._helpers import feed, flushed_text, texts

# ---------------------------------------------------------------- SkipTags (§7.3, §8 112)


def test_skip_tags_keep_a_tagged_email_in_one_sentence() -> None:
    """Periods inside <spell> are not sentence ends: one sentence, at flush."""
    agg = SkipTagsAggregator()
    text = "My email is <spell>foo.bar@pipecat.ai</spell>."
    assert agg.aggregate(text) == []
    assert flushed_text(agg) == text


def test_skip_tags_char_by_char_then_the_next_sentence() -> None:
    """Streamed char by char, the tagged sentence ends only after the closing tag."""
    agg = SkipTagsAggregator()
    text = "Mail <spell>a.b@c.io</spell>. Then call. Ok"
    assert texts(feed(agg, text)) == ["Mail <spell>a.b@c.io</spell>.", "Then call."]


def test_skip_tags_unclosed_tag_is_spoken_at_flush() -> None:
    """An unclosed tag's content is returned verbatim by flush."""
    agg = SkipTagsAggregator()
    assert agg.aggregate("<spell>foo@pipecat.ai") == []
    assert flushed_text(agg) == "<spell>foo@pipecat.ai"


def test_skip_tags_token_mode_yields_a_tag_whole() -> None:
    """Token mode: "Hi ", "<spell>X</spell>", " bye"."""
    agg = SkipTagsAggregator(aggregation_type=TOKEN)
    assert feed(agg, ["Hi ", "<spell>", "X", "</spell>", " bye"]) == [
        Aggregation("Hi ", "token"),
        Aggregation("<spell>X</spell>", "token"),
        Aggregation(" bye", "token"),
    ]


def test_skip_tags_token_mode_reassembles_split_tags() -> None:
    """Tags split across tokens are reassembled: "Call ", "<spell>a b c</spell> now"."""
    agg = SkipTagsAggregator(aggregation_type=TOKEN)
    units = feed(agg, ["Call <spe", "ll>a b", " c</sp", "ell> now"])
    assert texts(units) == ["Call ", "<spell>a b c</spell> now"]
    assert agg.flush() is None


def test_skip_tags_token_mode_two_pieces() -> None:
    """§8 112: "<spe" + "ll>a b c</spell>" is one token."""
    agg = SkipTagsAggregator(aggregation_type=TOKEN)
    assert feed(agg, ["<spe", "ll>a b c</spell>"]) == [Aggregation("<spell>a b c</spell>", "token")]


def test_skip_tags_token_mode_holds_back_a_partial_start() -> None:
    """ "Hi <" holds back "<" and emits "< there" next."""
    agg = SkipTagsAggregator(aggregation_type=TOKEN)
    assert texts(agg.aggregate("Hi <")) == ["Hi "]
    assert texts(agg.aggregate(" there")) == ["< there"]


def test_skip_tags_token_mode_flush_returns_an_unclosed_tag() -> None:
    """Token mode flush returns everything held, an unclosed tag included."""
    agg = SkipTagsAggregator(aggregation_type=TOKEN)
    assert texts(agg.aggregate("say <spell>ab")) == ["say "]
    assert flushed_text(agg) == "<spell>ab"


def test_skip_tags_handles_every_tag_pair() -> None:
    """All tag pairs are honoured, not only the first one."""
    agg = SkipTagsAggregator(tags=[("<spell>", "</spell>"), ("[[", "]]")])
    text = "Call [[Dr. X. Y.]] now. Ok"
    assert texts(agg.aggregate(text)) == ["Call [[Dr. X. Y.]] now."]
    assert agg.tags == (("<spell>", "</spell>"), ("[[", "]]"))


def test_skip_tags_text_keeps_the_sentence_type() -> None:
    """An open tag does not change the type of what is held."""
    agg = SkipTagsAggregator()
    agg.aggregate("a <spell>b")
    assert agg.text == Aggregation("a <spell>b", "sentence")


def test_skip_tags_interruption_clears_an_open_tag() -> None:
    """After an interruption a closing tag is plain text."""
    agg = SkipTagsAggregator()
    agg.aggregate("x <spell>a.b")
    agg.handle_interruption()
    assert texts(agg.aggregate("</spell> Done. Next")) == ["</spell> Done."]


def test_skip_tags_refuses_empty_tags() -> None:
    """Empty tags are a configuration error."""
    with pytest.raises(ValueError):
        SkipTagsAggregator(tags=[("", "</x>")])
    with pytest.raises(ValueError):
        SkipTagsAggregator(tags=[("<x>", "</x>"), ("<x>", "</y>")])


# ---------------------------------------------------------------- PatternPair (§7.4, §8 113)


def test_remove_pattern_and_handler_called_once() -> None:
    """REMOVE deletes the match; the handler runs once with the stripped content."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("test", "<test>", "</test>", MatchAction.REMOVE)
    agg.on_pattern_match("test", calls.append)
    assert texts(agg.aggregate("Hello <test>pattern content</test>!")) == []
    assert texts(agg.aggregate(" This is another sentence.")) == ["Hello !"]
    assert flushed_text(agg) == "This is another sentence."
    assert calls == [PatternMatch("test", "pattern content", "<test>pattern content</test>")]


def test_remove_pattern_streamed_char_by_char() -> None:
    """The same, one character at a time: the handler still runs exactly once."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("test", "<test>", "</test>")
    agg.on_pattern_match("test", calls.append)
    units = feed(agg, "Hello <test>pattern content</test>! This is another sentence.")
    assert texts(units) == ["Hello !"]
    assert len(calls) == 1


def test_aggregate_pattern_yields_pre_text_then_content() -> None:
    """AGGREGATE: the text before is a sentence; the content is typed with the pattern."""
    agg = PatternPairAggregator().add_pattern(
        "code_pattern", "<code>", "</code>", MatchAction.AGGREGATE
    )
    units = agg.aggregate("Here is code <code>pattern content</code> This is another sentence.")
    assert units == [
        Aggregation("Here is code", "sentence"),
        Aggregation("pattern content", "code_pattern", "<code>pattern content</code>"),
    ]
    assert units[1].original() == "<code>pattern content</code>"
    assert flushed_text(agg) == "This is another sentence."


def test_aggregate_pattern_streamed() -> None:
    """Streamed in small tokens, AGGREGATE gives the same units and the handler runs once."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("code", "```", "```", MatchAction.AGGREGATE)
    agg.on_pattern_match("code", calls.append)
    text = "Try this. ```\nx = 1.5\nprint(x)\n``` It prints 1.5. Done"
    tokens = [text[i : i + 3] for i in range(0, len(text), 3)]
    units = feed(agg, tokens)
    assert [(u.text, u.type) for u in units] == [
        ("Try this.", "sentence"),
        ("x = 1.5\nprint(x)", "code"),
        ("It prints 1.5.", "sentence"),
    ]
    assert units[1].raw_text == "```\nx = 1.5\nprint(x)\n```"
    assert len(calls) == 1


def test_keep_pattern_keeps_delimiters() -> None:
    """KEEP leaves the match, delimiters included; REMOVE leaves a double space."""
    agg = PatternPairAggregator()
    agg.add_pattern("voice", "<voice>", "</voice>", MatchAction.REMOVE)
    agg.add_pattern("em", "<em>", "</em>", MatchAction.KEEP)
    text = "Hello <voice>female</voice> I am <em>very</em> excited to meet you!"
    assert agg.aggregate(text) == []
    assert flushed_text(agg) == "Hello  I am <em>very</em> excited to meet you!"


def test_no_sentence_ends_inside_a_kept_pattern() -> None:
    """Terminators inside an open or closed KEEP pattern are not sentence ends."""
    agg = PatternPairAggregator().add_pattern("em", "<em>", "</em>", MatchAction.KEEP)
    units = feed(agg, ["I am <em>very. Very.", " Much.</em> happy. ", "Yes"])
    assert texts(units) == ["I am <em>very. Very. Much.</em> happy."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Well <test>pattern content", "Well"),
        ("<test>x", None),
        ("Hello <te", "Hello"),
        ("Hello <test>a</test> there <te", "Hello  there"),
    ],
)
def test_flush_drops_unclosed_and_partial_remove_patterns(text: str, expected: str | None) -> None:
    """Flush cuts an unclosed REMOVE start and trims a partial one; no handler runs."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("test", "<test>", "</test>")
    agg.on_pattern_match("test", calls.append)
    agg.aggregate(text)
    assert flushed_text(agg) == expected
    assert len(calls) == text.count("</test>")


def test_flush_keeps_unclosed_keep_content() -> None:
    """An unclosed KEEP pattern is flushed verbatim; a partial KEEP start is kept."""
    agg = PatternPairAggregator().add_pattern("em", "<em>", "</em>", MatchAction.KEEP)
    agg.aggregate("So <em>very")
    assert flushed_text(agg) == "So <em>very"
    agg.aggregate("So <e")
    assert flushed_text(agg) == "So <e"


def test_flush_drops_unclosed_aggregate() -> None:
    """An unclosed AGGREGATE pattern is dropped at flush (its pre-text went out already)."""
    agg = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    assert texts(agg.aggregate("See <code>x = ")) == ["See"]
    assert agg.flush() is None


def test_text_is_typed_with_the_open_pattern() -> None:
    """While a start delimiter is open, text carries the pattern's type."""
    agg = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    agg.aggregate("See <code>x = 1")
    assert agg.text == Aggregation("<code>x = 1", "code")
    agg.aggregate("</code>")
    assert agg.text == Aggregation("", "sentence")


def test_interruption_never_calls_the_handler() -> None:
    """An interruption clears the buffer; a later end delimiter completes nothing."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("test", "<test>", "</test>")
    agg.on_pattern_match("test", calls.append)
    agg.aggregate("Hello <test>abc")
    agg.handle_interruption()
    assert agg.text.text == ""
    agg.aggregate("</test> ok")
    assert calls == []
    assert flushed_text(agg) == "</test> ok"


def test_reset_keeps_patterns_and_handlers() -> None:
    """reset forgets the text, not the configuration."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("test", "<test>", "</test>")
    agg.on_pattern_match("test", calls.append)
    agg.aggregate("x <test>a")
    agg.reset()
    agg.aggregate("<test>b</test>")
    assert [c.text for c in calls] == ["b"]
    assert agg.patterns == {"test": ("<test>", "</test>", MatchAction.REMOVE)}


@pytest.mark.parametrize("reserved", ["sentence", "word", "token"])
def test_reserved_types_are_refused(reserved: str) -> None:
    """The built-in aggregation types cannot name a pattern."""
    with pytest.raises(ValueError, match="built-in"):
        PatternPairAggregator().add_pattern(reserved, "<a>", "</a>")


def test_bad_patterns_are_refused() -> None:
    """Empty delimiters, unknown actions and shared start delimiters are refused."""
    agg = PatternPairAggregator()
    with pytest.raises(ValueError):
        agg.add_pattern("a", "", "</a>")
    with pytest.raises(ValueError):
        agg.add_pattern("a", "<a>", "</a>", "explode")
    agg.add_pattern("a", "<a>", "</a>", "keep")
    with pytest.raises(ValueError):
        agg.add_pattern("b", "<a>", "</b>")
    agg.add_pattern("a", "<a>", "</a>", "remove")  # same type: replaced
    assert agg.patterns["a"][2] is MatchAction.REMOVE
    agg.remove_pattern("a")
    assert agg.patterns == {}


def test_handler_errors_are_logged_and_contained(caplog: pytest.LogCaptureFixture) -> None:
    """A failing handler is logged; the aggregation and later handlers go on."""
    calls: list[str] = []

    def broken(match: PatternMatch) -> None:
        calls.append(match.text)
        raise RuntimeError("boom")

    agg = PatternPairAggregator().add_pattern("t", "<t>", "</t>").on_pattern_match("t", broken)
    with caplog.at_level(logging.ERROR, logger="rxvoice.text"):
        units = agg.aggregate("A <t>1</t>b. C <t>2</t>. D")
    assert texts(units) == ["A b.", "C ."]
    assert calls == ["1", "2"]
    assert "boom" in caplog.text


def test_async_handlers_are_refused_loudly(caplog: pytest.LogCaptureFixture) -> None:
    """An async handler is reported (handlers are synchronous) without a never-awaited warning."""

    async def handler(match: PatternMatch) -> None:
        await asyncio.sleep(0)

    agg = PatternPairAggregator().add_pattern("t", "<t>", "</t>").on_pattern_match("t", handler)
    with caplog.at_level(logging.ERROR, logger="rxvoice.text"):
        agg.aggregate("<t>x</t>")
    assert "synchronous" in caplog.text


def test_patterns_do_not_nest() -> None:
    """Inside an open pattern only its own end delimiter is looked for."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator()
    agg.add_pattern("a", "<a>", "</a>").add_pattern("b", "<b>", "</b>", MatchAction.KEEP)
    agg.on_pattern_match("a", calls.append).on_pattern_match("b", calls.append)
    agg.aggregate("x <a>1 <b>2</b> 3</a> y <b>4</b>")
    assert [c.type for c in calls] == ["a", "b"]
    assert flushed_text(agg) == "x  y <b>4</b>"


def test_same_start_and_end_delimiter() -> None:
    """A pattern may use one delimiter for both ends (markdown fences, *actions*)."""
    agg = PatternPairAggregator().add_pattern("action", "*", "*")
    assert texts(agg.aggregate("Hi *waves* there. *smiles* Ok. Go")) == ["Hi  there.", "Ok."]


def test_empty_aggregate_content_is_not_a_unit() -> None:
    """An empty AGGREGATE match calls the handler but yields nothing to speak."""
    calls: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("c", "<c>", "</c>", MatchAction.AGGREGATE)
    agg.on_pattern_match("c", calls.append)
    assert agg.aggregate("<c> </c>") == []
    assert len(calls) == 1


# ---------------------------------------------------------------- token mode


def test_pattern_token_mode() -> None:
    """Token mode: plain text passes at once, patterns act, partial starts are held back."""
    agg = PatternPairAggregator(TOKEN)
    agg.add_pattern("voice", "<voice>", "</voice>")
    agg.add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    agg.add_pattern("em", "<em>", "</em>", MatchAction.KEEP)
    units = feed(
        agg,
        ["Hi ", "<vo", "ice>f</voice>", "there <c", "ode>x=1</code>", " and <em>so", "</em> on"],
    )
    assert [(u.text, u.type) for u in units] == [
        ("Hi ", "token"),
        ("there ", "token"),
        ("x=1", "code"),
        (" and ", "token"),
        ("<em>so</em> on", "token"),
    ]
    assert agg.flush() is None


def test_pattern_token_mode_flush_is_not_stripped() -> None:
    """Token mode flush keeps spaces (they join tokens) but drops an unclosed REMOVE."""
    agg = PatternPairAggregator(TOKEN).add_pattern("voice", "<voice>", "</voice>")
    assert texts(agg.aggregate(" bye <voi")) == [" bye "]
    assert agg.flush() is None
    assert texts(agg.aggregate("x <voice>y")) == ["x "]
    assert agg.flush() is None


def test_pattern_pair_strips_all_whitespace_at_its_edges() -> None:
    """Like the reference, the pattern aggregator strips newlines from pre-text and flush."""
    agg = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    units = agg.aggregate("Done.\n\nHere is code: <code>x</code> Bye.\n")
    assert [(u.text, u.type) for u in units] == [
        ("Done.", "sentence"),
        ("Here is code:", "sentence"),
        ("x", "code"),
    ]
    assert flushed_text(agg) == "Bye."
    simple = SkipTagsAggregator()
    simple.aggregate("Bye.\n")
    assert flushed_text(simple) == "Bye.\n"
