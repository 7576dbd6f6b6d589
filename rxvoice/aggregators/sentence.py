"""``Sentence``: text frames in, whole-sentence text frames out."""

from __future__ import annotations

import logging

from ..events import EventRegistry
from ..frames import DOWN, Direction, EndFrame, Frame, InterimTranscriptionFrame, TextFrame
from ..operators import SentenceEnd, TextSplitter
from ..pipeline.processor import EventfulProcessor, Port
from ..text.tokenizer import SentenceTokenizer

__all__ = ["Sentence"]

log = logging.getLogger("rxvoice.aggregators.text")


class Sentence(EventfulProcessor):
    """Gathers text frames into whole sentences: one ``TextFrame`` per sentence.

    For a stage that needs coherent sentences rather than fragments::

        TextFrame("Hello Mr.")                                   -> nothing
        TextFrame(" Smith. Your")                                -> TextFrame("Hello Mr. Smith.")
        TextFrame(" order ships at 3.30 p.m. today! Anything")  -> TextFrame(" Your order ships at 3.30 p.m. today!")
        EndFrame()                                               -> TextFrame(" Anything"), EndFrame()

    A sentence end is found with the same rules as :class:`LLMText` uses
    (abbreviations, decimals, initials, ...) and counts only once a visible
    character that is not punctuation follows it: ``"Hello Mr."`` waits for
    ``" Smith"``. Each sentence goes out as soon as it is confirmed, exactly as
    written up to its end; what follows (the next sentence's first words, the
    space before them) is kept for the next one, so the texts pushed, joined,
    are the texts gathered. A frame holding several sentences pushes them all.
    ``EndFrame`` (and the input completing) flushes what is left, then goes on.
    Interim transcriptions are dropped: they are guesses the final
    transcription will repeat.

    This is :func:`rxvoice.operators.split_text` with
    :func:`~rxvoice.operators.sentence_end` on a frame stream: both run the same
    :class:`~rxvoice.operators.TextSplitter`.

    Matching is by exact type, as in jargo (the Go port of Pipecat): only plain ``TextFrame`` is gathered.
    ``LLMTextFrame``, ``TranscriptionFrame``, ``AggregatedTextFrame`` and the
    other subclasses pass untouched, because rewriting them into a plain
    ``TextFrame`` would lose what makes them what they are (a model token's
    spacing, a transcript's speaker and finality). Group a model's tokens with
    :class:`LLMText` instead, which also types and trims each unit.

    An interruption does not clear the buffer (as in jargo): a plain text stream
    may carry the user's words, which must not be lost. Frames travelling
    upstream pass untouched. A tokenizer that raises is reported (``on_error``,
    an ``ErrorFrame`` upstream); the text stays gathered.

    Args:
        tokenizer: Sentence end detection (any object with
            ``match_end_of_sentence(text) -> int``); the default English one if
            ``None``.
        language: Language of the default tokenizer, when ``tokenizer`` is ``None``.

    Examples:
        >>> import reactivex
        >>> from rxvoice.frames import TextFrame
        >>> out = []
        >>> chunks = ["Hello Mr.", " Smith. Your", " order ships at 3.30 p.m. today! Anything"]
        >>> _ = reactivex.from_iterable([TextFrame(c) for c in chunks]).pipe(Sentence()).subscribe(out.append)
        >>> [f.text for f in out]
        ['Hello Mr. Smith.', ' Your order ships at 3.30 p.m. today!', ' Anything']
    """

    name = "Sentence"

    def __init__(self, tokenizer: SentenceTokenizer | None = None, *, language: str | None = None) -> None:
        self.boundary = SentenceEnd(tokenizer, language=language)
        self.tokenizer = self.boundary.tokenizer
        self.events = EventRegistry(self, ("on_error",))

    def __repr__(self) -> str:
        return f"Sentence(tokenizer={self.tokenizer!r})"

    def open(self, port: Port) -> _SentenceSession:
        return _SentenceSession(self.boundary, port)


class _SentenceSession:
    """One subscription: its splitter and its way out."""

    __slots__ = ("_push_down", "_push_up", "_splitter")

    def __init__(self, boundary: SentenceEnd, port: Port) -> None:
        self._splitter = TextSplitter(boundary)
        self._push_down = port.push_down
        self._push_up = port.push_up

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if direction is not DOWN:
            self._push_up(frame)
            return
        t = type(frame)
        if t is TextFrame:
            for piece in self._splitter.push(frame.text):  # type: ignore[attr-defined]
                self._push_down(TextFrame(piece))
            return
        if t is InterimTranscriptionFrame:
            return
        if t is EndFrame:
            self._flush()
        self._push_down(frame)

    def _flush(self) -> None:
        for rest in self._splitter.flush():
            self._push_down(TextFrame(rest))

    def on_input_end(self, direction: Direction) -> None:
        if direction is DOWN:
            self._flush()

    def close(self) -> None:
        self._splitter.clear()
