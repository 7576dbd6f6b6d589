"""The units text aggregators produce, and the interface they share.

A model streams tokens; a synthesizer wants sentences; a context wants the text as
written. An aggregator sits between them and cuts the stream into ``Aggregation``
units, each with a type ("sentence", "token", or a pattern's own type such as
"code") and, when it differs, the written form (``raw_text``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "RESERVED_TYPES",
    "SENTENCE",
    "TOKEN",
    "WORD",
    "Aggregation",
    "MatchAction",
    "PatternMatch",
    "TextAggregator",
    "aggregation_type_name",
]

#: Built-in aggregation types. ``rxvoice.frames.AggregationType`` has the same values.
SENTENCE = "sentence"
WORD = "word"
TOKEN = "token"

RESERVED_TYPES = frozenset((SENTENCE, WORD, TOKEN))


def aggregation_type_name(value: str) -> str:
    """The plain string of an aggregation type given as a str or a str-valued enum."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


@dataclass(frozen=True, slots=True)
class Aggregation:
    """A unit of text an aggregator completed.

    Attributes:
        text: What should be spoken or shown ("pattern content").
        type: "sentence", "token", or a pattern type ("code").
        raw_text: The text as the model wrote it, when it differs
            ("<code>pattern content</code>"); None otherwise.
    """

    text: str
    type: str = SENTENCE
    raw_text: str | None = None

    def original(self) -> str:
        """The written form: ``raw_text`` when set, else ``text``; what a context records."""
        return self.raw_text if self.raw_text is not None else self.text


@dataclass(frozen=True, slots=True)
class PatternMatch:
    """A completed start/end delimiter pair, as given to ``on_pattern_match`` handlers.

    Attributes:
        type: The pattern's type, as registered with ``add_pattern``.
        text: The content between the delimiters, stripped.
        full_match: The content with its delimiters, as written.
    """

    type: str
    text: str
    full_match: str


class MatchAction(enum.StrEnum):
    """What a pattern aggregator does with a completed pattern."""

    #: Drop it from the text (after calling the handler): stage directions, voice tags.
    REMOVE = "remove"
    #: Leave it in the text, delimiters included, and never split a sentence inside it.
    KEEP = "keep"
    #: Emit it as a unit of its own, typed with the pattern's type: code blocks.
    AGGREGATE = "aggregate"


class TextAggregator(Protocol):
    """Cuts streamed text into units; synchronous and pure, driven by an Rx operator."""

    @property
    def aggregation_type(self) -> str:
        """The type of the units it cuts: "sentence" or "token"."""
        ...

    @property
    def text(self) -> Aggregation:
        """What is held, not yet emitted (typed with an open pattern's type, if any)."""
        ...

    def aggregate(self, text: str) -> list[Aggregation]:
        """Add ``text``; return every unit it completed, in order (often none)."""
        ...

    def flush(self) -> Aggregation | None:
        """Return what is held as a last unit (or None if nothing is) and start over."""
        ...

    def reset(self) -> None:
        """Forget what is held; registered patterns and handlers stay."""
        ...

    def handle_interruption(self) -> None:
        """The bot was interrupted: drop what is held without calling any handler."""
        ...
