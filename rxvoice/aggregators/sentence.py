"""``Sentence``: text frames in, whole-sentence text frames out."""

from __future__ import annotations

import logging

from ..errors import ConfigurationError
from ..events import EventRegistry
from ..frames import DOWN, Direction, EndFrame, Frame, InterimTranscriptionFrame, TextFrame
from ..pipeline.processor import EventfulProcessor, Port
from ..text.tokenizer import IncrementalSentenceTokenizer, SentenceTokenizer, default_tokenizer

__all__ = ["Sentence"]

log = logging.getLogger("rxvoice.aggregators.text")


class Sentence(EventfulProcessor):
    """Gathers text frames into whole sentences; one ``TextFrame`` per completed buffer.

    For a stage that needs coherent sentences rather than fragments::

        TextFrame("Hello,")  -> nothing
        TextFrame(" world. ") -> TextFrame("Hello, world. ")

    When the tokenizer finds a sentence end anywhere in the buffer, the whole
    buffer (trailing whitespace included) goes out as one ``TextFrame`` and the
    buffer starts over; the gathered frames are consumed. ``EndFrame`` flushes
    what is left, then goes on. Interim transcriptions are dropped: they are
    guesses the final transcription will repeat.

    Matching is by exact type, as in jargo (the Go port of Pipecat): only plain ``TextFrame`` is
    gathered. ``LLMTextFrame``, ``TranscriptionFrame``, ``AggregatedTextFrame``
    and the other subclasses pass untouched, because rewriting them into a plain
    ``TextFrame`` would lose what makes them what they are (a model token's
    spacing, a transcript's speaker and finality). Group a model's tokens with
    :class:`LLMText` instead, which also confirms each end by what follows it.

    An interruption does not clear the buffer (as in jargo): a plain text
    stream may carry the user's words, which must not be lost. Frames travelling
    upstream pass untouched.

    Args:
        tokenizer: Sentence end detection (any object with
            ``match_end_of_sentence(text) -> int``); the default English one if
            ``None``.
        language: Language of the default tokenizer, when ``tokenizer`` is ``None``.

    Examples:
        >>> import reactivex
        >>> from rxvoice.frames import TextFrame
        >>> out = []
        >>> words = ["Hello, ", "world. ", "How ", "are ", "you? "]
        >>> _ = reactivex.from_iterable([TextFrame(w) for w in words]).pipe(Sentence()).subscribe(out.append)
        >>> [f.text for f in out]
        ['Hello, world. ', 'How are you? ']
    """

    name = "Sentence"

    def __init__(self, tokenizer: SentenceTokenizer | None = None, *, language: str | None = None) -> None:
        if tokenizer is None:
            tokenizer = default_tokenizer(language)
        elif not callable(getattr(tokenizer, "match_end_of_sentence", None)):
            raise ConfigurationError(
                f"Sentence needs a tokenizer with match_end_of_sentence(text) -> int, got {tokenizer!r}"
            )
        self.tokenizer = tokenizer
        self.events = EventRegistry(self, ("on_error",))

    def __repr__(self) -> str:
        return f"Sentence(tokenizer={self.tokenizer!r})"

    def open(self, port: Port) -> _SentenceSession:
        return _SentenceSession(self.tokenizer, port)



class _SentenceSession:
    """One subscription's buffer."""

    __slots__ = ("_buffer", "_link", "_match", "_resume", "_scan")

    def __init__(self, tokenizer: SentenceTokenizer, port: Port) -> None:
        self._link = port.link
        self._match = tokenizer.match_end_of_sentence
        # A resumable tokenizer looks only at what it has not decided yet: linear, not quadratic.
        self._scan = tokenizer.scan_end_of_sentence if isinstance(tokenizer, IncrementalSentenceTokenizer) else None
        self._buffer = ""
        self._resume = 0

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if direction is DOWN:
            if t is TextFrame:
                self._gather(frame.text)  # type: ignore[attr-defined]
                return
            if t is InterimTranscriptionFrame:
                return
            if t is EndFrame:
                self._flush()
            self._link.emit_down(frame)
        else:
            self._link.emit_up(frame)

    def _gather(self, text: str) -> None:
        if not text:
            return
        buffer = self._buffer
        self._buffer = ""
        buffer += text  # in place: CPython grows a string held by one reference
        self._buffer = buffer
        if self._scan is not None:
            eos, self._resume = self._scan(buffer, self._resume)
        else:
            eos = self._match(buffer)
        if eos > 0:
            self._flush()

    def _flush(self) -> None:
        buffer = self._buffer
        self._buffer = ""
        self._resume = 0
        if buffer:
            self._link.emit_down(TextFrame(buffer))

    def on_input_end(self, direction: Direction) -> None:
        if direction is DOWN:
            self._flush()

    def close(self) -> None:
        self._buffer = ""
