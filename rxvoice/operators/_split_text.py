"""``split_text``: a growing text cut at the boundaries a function finds, the remainder kept."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from reactivex import Observable

from ..errors import ConfigurationError
from ..text._charsets import SENTENCE_ENDERS, is_punctuation
from ..text.tokenizer import (
    DefaultSentenceTokenizer,
    IncrementalSentenceTokenizer,
    SentenceTokenizer,
    default_tokenizer,
)
from ._chunk import chunked_
from ._curry import curry_flip

__all__ = ["SentenceEnd", "TextBoundary", "TextSplitter", "split_text_"]

TextBoundary = Callable[[str], int]
"""Where the first complete piece of a text ends: the offset just past it, or 0 if there is none yet."""

_Scan = Callable[[str, int], tuple[int, int]]
_Search = Callable[[str, int], re.Match[str] | None]

_ENDER = re.compile("[" + re.escape("".join(sorted(SENTENCE_ENDERS))) + "]")


class SentenceEnd:
    """A text boundary: the end of the first sentence, once what follows confirms it.

    The tokenizer says where a sentence may end; the end counts only once a visible
    character that is not punctuation follows it, so ``"Hello Mr."`` waits for ``" Smith"``
    and ``"$29."`` for ``"95"``. This is the rule :class:`~rxvoice.text.SimpleTextAggregator`
    (and with it :class:`~rxvoice.aggregators.LLMText`) applies.

    With an :class:`~rxvoice.text.IncrementalSentenceTokenizer` (the default one is),
    :meth:`scan` resumes where the last look stopped, so a :class:`TextSplitter` reads a
    long text once; any other tokenizer is asked about the text up to its last visible
    character on every look.

    Args:
        tokenizer: Any object with ``match_end_of_sentence(text) -> int``; the default
            one for ``language`` if ``None``.
        language: Language of the default tokenizer.

    Raises:
        ConfigurationError: ``tokenizer`` has no ``match_end_of_sentence``.

    Examples:
        >>> end = SentenceEnd()
        >>> end("Hello Mr.")  # an abbreviation may yet be followed by a name
        0
        >>> end("Hello Mr. Smith. Your")
        16
        >>> end("Hello world. ")  # nothing confirms it yet
        0
    """

    __slots__ = ("_candidate", "_match", "_scan", "tokenizer")

    def __init__(self, tokenizer: SentenceTokenizer | None = None, *, language: str | None = None) -> None:
        if tokenizer is None:
            tokenizer = default_tokenizer(language)
        elif not callable(getattr(tokenizer, "match_end_of_sentence", None)):
            raise ConfigurationError(f"a sentence boundary needs a tokenizer with match_end_of_sentence(text) -> int, "
                                     f"got {tokenizer!r}")
        self.tokenizer = tokenizer
        self._match = tokenizer.match_end_of_sentence
        self._scan = tokenizer.scan_end_of_sentence if isinstance(tokenizer, IncrementalSentenceTokenizer) else None
        # The default tokenizer only ever ends a sentence at a sentence-ending character: text
        # without one is decided by one regex test (most of a model's tokens).
        self._candidate: _Search | None = _ENDER.search if isinstance(tokenizer, DefaultSentenceTokenizer) else None

    def __repr__(self) -> str:
        return f"SentenceEnd({self.tokenizer!r})"

    def __call__(self, text: str) -> int:
        """The offset just past the first confirmed sentence of ``text``, or 0."""
        return self.scan(text)[0]

    def scan(self, text: str, start: int = 0) -> tuple[int, int]:
        """Look for the first confirmed sentence end at or after ``start``.

        Returns:
            ``(end, resume)``: ``end`` as for a call (0 if none), and ``resume``, where
            the next look at the same text, grown, may start.
        """
        candidate = self._candidate
        if candidate is not None and candidate(text, start) is None:
            return 0, len(text)
        limit = len(text)
        while limit > start:  # only text up to the last visible character can confirm an end
            c = text[limit - 1]
            if not (c.isspace() or is_punctuation(c)):
                break
            limit -= 1
        if limit <= start:
            return 0, start
        if self._scan is not None:
            end, resume = self._scan(text, start, limit)
        else:
            end, resume = self._match(text[:limit] if limit < len(text) else text), 0
        if end <= 0:
            return 0, resume
        if end >= limit:  # a tokenizer that ends a sentence on its last visible character
            return 0, start
        return end, end


def _finder(boundary: TextBoundary) -> _Scan | None:
    scan = getattr(boundary, "scan", None)
    return scan if callable(scan) else None


class TextSplitter:
    """The state of one ``split_text`` subscription: the text not cut yet.

    Each piece is exactly the text up to a boundary, whitespace included, so the pieces
    joined (with the flushed rest) are the input, character for character.

    Args:
        boundary: ``boundary(text) -> int``, the offset just past the first complete
            piece of ``text``, or 0 if there is none yet. A boundary that also has
            ``scan(text, start) -> (end, resume)`` (as :class:`SentenceEnd` has) is
            resumed where it stopped instead of being asked about the whole text.

    Examples:
        >>> s = TextSplitter(lambda text: text.find("\\n") + 1)
        >>> s.push("one\\ntw"), s.push("o\\nthr"), s.push("ee")
        (['one\\n'], ['two\\n'], ())
        >>> s.flush()
        ('three',)
    """

    __slots__ = ("_boundary", "_buffer", "_resume", "_scan")

    def __init__(self, boundary: TextBoundary) -> None:
        if not callable(boundary):
            raise ConfigurationError(f"split_text needs a boundary function (text) -> int, got {boundary!r}")
        self._boundary = boundary
        self._scan = _finder(boundary)
        self._buffer = ""
        self._resume = 0

    @property
    def held(self) -> str:
        """The text gathered since the last piece."""
        return self._buffer

    def _find(self, text: str) -> int:
        scan = self._scan
        if scan is None:
            end = self._boundary(text)
        else:
            end, self._resume = scan(text, self._resume)
        return end if end < len(text) else len(text)

    def push(self, text: str) -> Sequence[str]:
        """Add ``text``; return every piece it completed, in order (often none).

        The text is kept before the boundary is asked, so a boundary that raises loses nothing.
        """
        if not text:
            return ()
        buffer = self._buffer
        self._buffer = ""
        buffer += text  # in place: CPython grows a string held by one reference instead of copying it
        self._buffer = buffer
        scan = self._scan  # the first look inline: it is the one every chunk takes
        if scan is None:
            end = self._boundary(buffer)
        else:
            end, self._resume = scan(buffer, self._resume)
        if end <= 0:
            return ()
        if end > len(buffer):
            end = len(buffer)
        pieces: list[str] = []
        try:
            while end > 0:
                pieces.append(buffer[:end])
                buffer = buffer[end:]
                self._buffer = buffer
                self._resume = max(0, self._resume - end)
                if not buffer:
                    break
                end = self._find(buffer)
        except BaseException:
            self._buffer = "".join(pieces) + buffer  # nothing cut is lost if the boundary fails midway
            self._resume = 0
            raise
        return pieces

    def flush(self) -> tuple[str, ...]:
        """Return what is held as a last piece (nothing if empty), and start over."""
        buffer = self._buffer
        self._buffer = ""
        self._resume = 0
        return (buffer,) if buffer else ()

    def clear(self) -> None:
        """Forget what is held."""
        self._buffer = ""
        self._resume = 0


@curry_flip
def split_text_(source: Observable[str], boundary: TextBoundary) -> Observable[str]:
    """Cut the text a source streams at ``boundary``; what is left goes out at completion.

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> chunks = reactivex.of("Hi. Th", "ere.")
        >>> chunks.pipe(split_text_(SentenceEnd()), ops.to_list()).run()
        ['Hi.', ' There.']
    """
    return source.pipe(chunked_(lambda: TextSplitter(boundary)))
