"""Joining text parts that may or may not carry their own spaces.

Speech-to-text words arrive bare ("Hello", "world") and need a space between them;
model tokens carry their spacing (" world") and must be joined as they are; CJK text
has no spaces at all. One join rule serves the user transcript, the assistant turn and
thoughts alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Part", "concatenate"]


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of text and whether it already contains the spaces around it.

    Attributes:
        text: The text, kept exactly as received.
        includes_inter_part_spaces: True for model tokens (" world"), False for
            speech-to-text words that need a space to be joined.
    """

    text: str
    includes_inter_part_spaces: bool = False


def concatenate(parts: Iterable[Part | tuple[str, bool]]) -> str:
    """Join ``parts`` with spaces only where they are missing, then trim the result.

    * Empty parts are skipped; the first part is taken as is.
    * Two bare parts in a row get one space between them.
    * Two self-spaced parts are appended directly.
    * Between a bare and a self-spaced part a space is added only if neither side
      already has whitespace at the join.
    * The result is trimmed at both ends; inner whitespace is never collapsed.

    Examples:
        >>> concatenate([Part("Hello"), Part("world")])
        'Hello world'
        >>> concatenate([("你好", True), ("世界", True), ("Hi", False)])
        '你好世界 Hi'
    """
    if type(parts) is list and parts and type(parts[0]) is tuple:
        # Only self-spaced (text, True) pairs, a model's tokens, or only bare (text, False) ones, a user's
        # finals (the common cases): the rule below appends the first as they are and puts one space between
        # the others, so one join does it. Anything else (Part objects, a mix, a text that is not a string)
        # takes the rule itself (a list of Parts without trying: no exception to catch).
        try:
            texts, spaced_flags = zip(*parts, strict=True)
            spaced = spaced_flags.count(True)
            if spaced == len(spaced_flags):
                return "".join(texts).strip()
            if not spaced and spaced_flags.count(False) == len(spaced_flags):
                return " ".join(filter(None, texts)).strip()
        except (TypeError, ValueError):
            pass
    pieces: list[str] = []
    previous: bool | None = None
    last = ""
    for part in parts:
        text, spaced = (
            (part.text, part.includes_inter_part_spaces) if isinstance(part, Part) else part
        )
        if not text:
            continue
        if previous is not None and (
            (not spaced and not previous)
            or (spaced != previous and not last[-1].isspace() and not text[0].isspace())
        ):
            pieces.append(" ")
        pieces.append(text)
        previous = spaced
        last = text
    return "".join(pieces).strip()
