"""Aggregation that recognizes delimited patterns (code, voice tags, stage directions)."""

from __future__ import annotations

from rxvoice.errors import ConfigurationError
from rxvoice.text._engine import Pattern, PatternHandler, TextAggregatorEngine
from rxvoice.text.aggregation import RESERVED_TYPES, SENTENCE, MatchAction, aggregation_type_name
from rxvoice.text.tokenizer import SentenceTokenizer, default_tokenizer

__all__ = ["PatternPairAggregator"]


class PatternPairAggregator(TextAggregatorEngine):
    """Sentence (or token) aggregation that also handles start/end delimited patterns.

    Each pattern is a start and an end delimiter with an action:

    * ``REMOVE``: the match (delimiters included) is deleted from the text, after its
      handler ran: "Hello <voice>x</voice>!" is spoken "Hello !".
    * ``KEEP``: the match stays in the text, delimiters included, and no sentence is
      split inside it.
    * ``AGGREGATE``: the text before the start delimiter is released at once, and the
      match becomes a unit of its own typed with the pattern's type, its stripped
      content as ``text`` and the delimited original as ``raw_text``.

    While a start delimiter is open no sentence ends; only the open pattern's end
    delimiter is looked for (patterns do not nest). Handlers run once per completed
    match, never for an unclosed one or on an interruption.

    Args:
        aggregation_type: "sentence" (default) or "token".
        tokenizer: Sentence end detection; ``DefaultSentenceTokenizer(language)`` if None.
        language: Language for the default tokenizer, when ``tokenizer`` is None.

    Examples:
        >>> agg = PatternPairAggregator()
        >>> _ = agg.add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
        >>> [(a.text, a.type) for a in agg.aggregate("See <code>x = 1</code> now")]
        [('See', 'sentence'), ('x = 1', 'code')]
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
            aggregation_type_name(aggregation_type),
            tokenizer,
            cut_unclosed_on_flush=True,
            flush_strip=None,
        )

    def add_pattern(
        self,
        type: str,
        start: str,
        end: str,
        action: MatchAction | str = MatchAction.REMOVE,
    ) -> PatternPairAggregator:
        """Register (or replace) the pattern ``type``; returns self for chaining.

        Raises:
            ConfigurationError: (a ValueError) for a reserved type ("sentence", "word",
                "token"), an empty type or delimiter, or an unknown action.
        """
        name = aggregation_type_name(type)
        if not name:
            raise ConfigurationError("a pattern type must not be empty")
        if name in RESERVED_TYPES:
            raise ConfigurationError(
                f"{name!r} is a built-in aggregation type; give the pattern another type"
            )
        if not start or not end:
            raise ConfigurationError(f"pattern {name!r} needs non-empty start and end delimiters")
        try:
            match_action = MatchAction(action)
        except ValueError:
            raise ConfigurationError(
                f"unknown action {action!r}; use one of {[a.value for a in MatchAction]}"
            ) from None
        for other in self._patterns.values():
            if other.type != name and other.start == start:
                raise ConfigurationError(
                    f"patterns {other.type!r} and {name!r} share the start delimiter {start!r}"
                )
        self._add_pattern(Pattern(name, start, end, match_action))
        return self

    def remove_pattern(self, type: str) -> PatternPairAggregator:
        """Forget the pattern ``type`` (and its handler); returns self."""
        name = aggregation_type_name(type)
        self._patterns.pop(name, None)
        self._handlers.pop(name, None)
        self._rebuild_patterns()
        return self

    def on_pattern_match(self, type: str, handler: PatternHandler) -> PatternPairAggregator:
        """Call ``handler(PatternMatch)`` once for each completed ``type`` match; returns self.

        One handler per type (a new one replaces the old). It must be synchronous;
        an exception it raises is logged to the "rxvoice.text" logger and contained.
        """
        self._set_handler(aggregation_type_name(type), handler)
        return self

    @property
    def patterns(self) -> dict[str, tuple[str, str, MatchAction]]:
        """The registered patterns: type → (start, end, action)."""
        return {p.type: (p.start, p.end, p.action) for p in self._patterns.values()}

    def __repr__(self) -> str:
        patterns = sorted(self._patterns)
        return f"PatternPairAggregator(aggregation_type={self._type!r}, patterns={patterns!r})"
