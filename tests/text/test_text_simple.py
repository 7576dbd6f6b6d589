"""SimpleTextAggregator: lookahead sentence aggregation and token pass-through."""

from __future__ import annotations

import pytest

from rxvoice.frames import AggregationType
from rxvoice.text import TOKEN, Aggregation, SimpleTextAggregator

from ._helpers import feed, flushed_text, texts


def test_a_lone_sentence_waits_for_flush() -> None:
    """ "Hello world." alone yields nothing: its end is not confirmed until flush."""
    agg = SimpleTextAggregator()
    assert agg.aggregate("Hello world.") == []
    assert agg.text.text == "Hello world."
    assert flushed_text(agg) == "Hello world."
    assert agg.flush() is None


def test_the_next_character_confirms_the_end() -> None:
    """ "Hello. W" yields "Hello." and keeps "W"."""
    agg = SimpleTextAggregator()
    assert agg.aggregate("Hello. W") == [Aggregation("Hello.", "sentence")]
    assert agg.text == Aggregation("W", "sentence")


def test_whitespace_alone_confirms_nothing() -> None:
    """Spaces and punctuation after a terminator keep the sentence open."""
    agg = SimpleTextAggregator()
    assert agg.aggregate("Hello. ") == []
    assert agg.aggregate('  "') == []
    assert texts(agg.aggregate("N")) == ["Hello."]


@pytest.mark.parametrize(
    "text",
    ["Hello Mr. Smith. Next", "It costs $29.95/month. Next", "Call Dr. Who at 3:00 p.m. now. Next"],
)
def test_never_split_early(text: str) -> None:
    """Abbreviations, prices and times are never taken as sentence ends, char by char or whole."""
    expected = text[: text.rindex(" Next")]
    assert texts(feed(SimpleTextAggregator(), text)) == [expected]
    assert texts(SimpleTextAggregator().aggregate(text)) == [expected]


def test_the_seed_example() -> None:
    """Seed §2.6: "Hello", ",", " world", ". ", "Next", " one" → "Hello, world."."""
    agg = SimpleTextAggregator()
    assert texts(feed(agg, ["Hello", ",", " world", ". ", "Next", " one"])) == ["Hello, world."]
    assert flushed_text(agg) == "Next one"


def test_the_processor_example() -> None:
    """Pipecat §7.5: "Hello there. How" + " are you?" → "Hello there.", then "How are you?"."""
    agg = SimpleTextAggregator()
    assert texts(feed(agg, ["Hello there. How", " are you?"])) == ["Hello there."]
    assert flushed_text(agg) == "How are you?"


def test_a_stream_of_sentences() -> None:
    """Each sentence is emitted once the next one starts, spaces trimmed."""
    tokens = ["Hi", " there", "!", " How", " are", " you", "?", " I", "'m", " fine", "."]
    agg = SimpleTextAggregator()
    assert texts(feed(agg, tokens)) == ["Hi there!", "How are you?"]
    assert flushed_text(agg) == "I'm fine."


def test_several_sentences_in_one_token() -> None:
    """A token holding several complete sentences yields them all, in order."""
    agg = SimpleTextAggregator()
    assert texts(agg.aggregate("One. Two! Three? Four")) == ["One.", "Two!", "Three?"]


def test_cjk_without_spaces() -> None:
    """CJK terminators need no space after them."""
    agg = SimpleTextAggregator()
    assert texts(feed(agg, ["你好", "。", "我", "很好", "！", "谢谢"])) == ["你好。", "我很好！"]
    assert flushed_text(agg) == "谢谢"


def test_newlines_are_kept_inside_sentences() -> None:
    """Only spaces are trimmed from a sentence's edges (as the seed does)."""
    agg = SimpleTextAggregator()
    assert texts(agg.aggregate("One.\nTwo. Three")) == ["One.", "\nTwo."]


def test_whitespace_only_flush_is_none() -> None:
    """Nothing but whitespace held means nothing to flush."""
    agg = SimpleTextAggregator()
    agg.aggregate(" \n ")
    assert agg.flush() is None


def test_interruption_clears_the_buffer() -> None:
    """handle_interruption and reset drop what is held and the lookahead state."""
    agg = SimpleTextAggregator()
    agg.aggregate("Hello there.")
    agg.handle_interruption()
    assert agg.text.text == ""
    assert agg.flush() is None
    # the pending terminator is forgotten too
    assert agg.aggregate(" Next") == []
    agg.reset()
    assert agg.flush() is None


def test_token_mode_passes_text_through() -> None:
    """In token mode every non-empty input is one unit, unchanged; flush has nothing."""
    agg = SimpleTextAggregator(TOKEN)
    assert feed(agg, ["Hello", "", " world.", " "]) == [
        Aggregation("Hello", "token"),
        Aggregation(" world.", "token"),
        Aggregation(" ", "token"),
    ]
    assert agg.flush() is None
    assert agg.aggregation_type == "token"


def test_the_frames_enum_is_accepted() -> None:
    """rxvoice.frames.AggregationType values work as aggregation types."""
    assert SimpleTextAggregator(AggregationType.TOKEN).aggregation_type == "token"
    agg = SimpleTextAggregator(AggregationType.SENTENCE)
    assert agg.aggregate("Ok. B")[0].type == AggregationType.SENTENCE


def test_an_unknown_type_is_refused() -> None:
    """Only "sentence" and "token" are aggregation modes."""
    with pytest.raises(ValueError, match="sentence"):
        SimpleTextAggregator("paragraph")


def test_language_picks_the_abbreviations() -> None:
    """The language argument selects the default tokenizer's language."""
    agg = SimpleTextAggregator(language="de")
    assert texts(feed(agg, "Heute ist der 3. Oktober. Morgen")) == ["Heute ist der 3. Oktober."]
    assert agg.tokenizer.match_end_of_sentence("z. B. Berlin. Ja") == len("z. B. Berlin.")


def test_original_is_the_text_without_raw_text() -> None:
    """Aggregation.original() is raw_text when set, else text."""
    assert Aggregation("a").original() == "a"
    assert Aggregation("a", "code", "<c>a</c>").original() == "<c>a</c>"
