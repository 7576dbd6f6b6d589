"""Aggregation that never splits inside tags a synthesizer reads as markup (``<spell>``)."""

from __future__ import annotations

from collections.abc import Sequence

from rxvoice.errors import ConfigurationError
from rxvoice.text._engine import Pattern, TextAggregatorEngine
from rxvoice.text.aggregation import SENTENCE, MatchAction, aggregation_type_name
from rxvoice.text.tokenizer import SentenceTokenizer, default_tokenizer

__all__ = ["SkipTagsAggregator"]

_DEFAULT_TAGS = (("<spell>", "</spell>"),)


class SkipTagsAggregator(TextAggregatorEngine):
    """Sentence (or token) aggregation that treats tagged spans as opaque.

    "My email is <spell>foo.bar@pipecat.ai</spell>." is one sentence: the periods
    inside the tag are not sentence ends. Tags stay in the text. In "token" mode a
    tagged span is held until it closes and passed on whole, and a partial start tag
    at the end of a token ("<spe") is held back until it can be told apart.
    ``flush`` speaks everything held, an unclosed tag included.

    Args:
        tags: (start, end) tag pairs; ``[("<spell>", "</spell>")]`` by default.
        aggregation_type: "sentence" (default) or "token".
        tokenizer: Sentence end detection; ``DefaultSentenceTokenizer(language)`` if None.
        language: Language for the default tokenizer, when ``tokenizer`` is None.
    """

    def __init__(
        self,
        tags: Sequence[tuple[str, str]] = _DEFAULT_TAGS,
        aggregation_type: str = SENTENCE,
        tokenizer: SentenceTokenizer | None = None,
        *,
        language: str | None = None,
    ) -> None:
        if tokenizer is None and language is not None:
            tokenizer = default_tokenizer(language)
        super().__init__(
            aggregation_type_name(aggregation_type), tokenizer, cut_unclosed_on_flush=False
        )
        for index, pair in enumerate(tags):
            start, end = pair
            if not start or not end:
                raise ConfigurationError(f"tag pair {pair!r} needs non-empty start and end tags")
            if any(p.start == start for p in self._patterns.values()):
                raise ConfigurationError(f"start tag {start!r} is given twice")
            self._add_pattern(Pattern(f"skip_tag_{index}", start, end, MatchAction.KEEP))
        self._tags = tuple((s, e) for s, e in tags)

    @property
    def tags(self) -> tuple[tuple[str, str], ...]:
        """The (start, end) tag pairs."""
        return self._tags

    def _open_type_visible(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"SkipTagsAggregator(tags={list(self._tags)!r}, aggregation_type={self._type!r})"
