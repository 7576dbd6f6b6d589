"""Long responses without a sentence end are processed in linear time.

Each test counts work (characters the tokenizer scans) rather than timing it; the
few wall-clock bounds are generous (tens of times the expected cost) and only
catch quadratic behaviour, which would be hundreds of times slower.
"""

from __future__ import annotations

import time

from rxvoice.text import (
    DefaultSentenceTokenizer,
    MatchAction,
    PatternPairAggregator,
    SimpleTextAggregator,
    SkipTagsAggregator,
)

# Full of terminators that are not sentence ends: decimals, abbreviations, initialisms.
TRICKY = "pi is 3.14 and e.g. this, Mr. Smith met the U.S. army and "
PLAIN = "the quick brown fox jumps over a lazy dog and then some more "


class CountingTokenizer(DefaultSentenceTokenizer):
    """The default tokenizer, counting the calls and the characters each call scans."""

    def __init__(self) -> None:
        super().__init__("en")
        self.calls = 0
        self.scanned = 0

    def scan_end_of_sentence(
        self, text: str, start: int = 0, end: int | None = None
    ) -> tuple[int, int]:
        """Count, then delegate."""
        stop = len(text) if end is None else min(end, len(text))
        self.calls += 1
        self.scanned += max(0, stop - start)
        return super().scan_end_of_sentence(text, start, end)


def response(unit: str, size: int) -> str:
    """``unit`` repeated to ``size`` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def tokens(text: str, size: int = 4) -> list[str]:
    """Model-sized tokens of ``text``."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream(text: str) -> tuple[CountingTokenizer, str]:
    """Stream ``text`` through a sentence aggregator; return the tokenizer and the flush."""
    tokenizer = CountingTokenizer()
    aggregator = SimpleTextAggregator(tokenizer=tokenizer)
    for token in tokens(text):
        assert aggregator.aggregate(token) == []
    flushed = aggregator.flush()
    assert flushed is not None
    return tokenizer, flushed.text


def test_tokenizer_work_is_linear_in_a_long_unbroken_response() -> None:
    """200k characters with no sentence end: each character is scanned a bounded number of times."""
    text = response(TRICKY, 200_000)
    tokenizer, flushed = stream(text)
    assert flushed == text.strip(" ")
    terminators = text.count(".")
    assert tokenizer.calls <= 3 * terminators
    assert tokenizer.scanned <= 3 * len(text)


def test_tokenizer_work_grows_linearly() -> None:
    """Four times the text costs about four times the scanning, not sixteen."""
    small, _ = stream(response(TRICKY, 50_000))
    large, _ = stream(response(TRICKY, 200_000))
    assert large.scanned <= 4.5 * small.scanned
    assert large.calls <= 4.5 * small.calls


def test_text_without_terminators_is_never_scanned() -> None:
    """Plain words never reach the tokenizer."""
    tokenizer, flushed = stream(response(PLAIN, 200_000))
    assert tokenizer.calls == 0
    assert len(flushed) == 199_999


def test_appending_tokens_does_not_copy_the_buffer() -> None:
    """800k characters in 200k tokens: far below what copying the buffer per token costs."""
    aggregator = SimpleTextAggregator()
    chunks = tokens(response(PLAIN, 800_000))
    started = time.perf_counter()
    for token in chunks:
        aggregator.aggregate(token)
    assert time.perf_counter() - started < 8.0  # ~0.1 s linear; ~25 s if quadratic


def test_a_long_open_pattern_is_linear() -> None:
    """A 400k-character code block streamed in tokens: only new text is searched."""
    body = response("x = 1.5; y.z(3)  # ok. Next\n", 400_000)
    aggregator = PatternPairAggregator().add_pattern(
        "code", "<code>", "</code>", MatchAction.AGGREGATE
    )
    skip = SkipTagsAggregator(tags=[("<code>", "</code>")])
    text = "See <code>" + body + "</code> Done. Ok"
    started = time.perf_counter()
    units = [u for token in tokens(text) for u in aggregator.aggregate(token)]
    held = [u for token in tokens(text) for u in skip.aggregate(token)]
    assert time.perf_counter() - started < 8.0  # ~0.3 s linear; minutes if quadratic
    assert [u.type for u in units] == ["sentence", "code", "sentence"]
    assert len(units[1].text) == len(body.strip())
    assert len(held) == 1
    assert held[0].text.endswith("</code> Done.")
