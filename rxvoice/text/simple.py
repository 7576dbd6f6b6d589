"""Sentence (or token) aggregation of a model's streamed text."""

from __future__ import annotations

from rxvoice.text._engine import TextAggregatorEngine
from rxvoice.text.aggregation import SENTENCE, aggregation_type_name
from rxvoice.text.tokenizer import SentenceTokenizer, default_tokenizer

__all__ = ["SimpleTextAggregator"]


class SimpleTextAggregator(TextAggregatorEngine):
    """Groups streamed text into sentences, confirming each end by what follows it.

    A sentence end is only taken once the next visible character has arrived, so
    "Hello Mr." waits for "Smith" and "$29." waits for "95": "Hello world." alone
    yields nothing until ``flush``; "Hello. W" yields "Hello." and keeps "W".
    In "token" mode every non-empty input is passed on unchanged.

    Args:
        aggregation_type: "sentence" (default) or "token".
        tokenizer: Sentence end detection; ``DefaultSentenceTokenizer(language)`` if None.
        language: Language for the default tokenizer, when ``tokenizer`` is None.

    Examples:
        >>> agg = SimpleTextAggregator()
        >>> [a.text for a in agg.aggregate("Hello Mr. Smith. How")]
        ['Hello Mr. Smith.']
        >>> agg.flush().text
        'How'
    """

    def __init__(
        self,
        aggregation_type: str = SENTENCE,
        tokenizer: SentenceTokenizer | None = None,
        *,
        language: str | None = None,
    ) -> None:
        if tokenizer is None and language is not None:
            tokenizer = default_tokenizer(language)
        super().__init__(
            aggregation_type_name(aggregation_type), tokenizer, cut_unclosed_on_flush=True
        )

    def __repr__(self) -> str:
        return (
            f"SimpleTextAggregator(aggregation_type={self._type!r}, tokenizer={self._tokenizer!r})"
        )
