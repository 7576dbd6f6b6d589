"""The assistant half of a pair: the model's streamed answer in, one assistant message out."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reactivex import abc

from ..context import LLMContext
from ..events import EventRegistry, contain
from ..frames import (
    DOWN,
    UP,
    AggregatedTextFrame,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    LLMTextFrame,
    LLMThoughtEndFrame,
    LLMThoughtTextFrame,
    TextFrame,
    TTSTextFrame,
)
from ..pipeline.processor import EventfulProcessor, Port
from ..pipeline.shell import StageShell
from ..text.parts import concatenate
from .assistant_core import ASSISTANT_EVENTS, AssistantCore, AssistantState

if TYPE_CHECKING:
    from .summarizer import Summarizer, SummarizerSession

__all__ = ["AssistantAggregator"]

log = logging.getLogger("rxvoice.aggregators.assistant")


class AssistantAggregator(EventfulProcessor):
    """Collects the model's streamed text into one assistant message per bot turn.

    Place it last in the pipeline (after the output transport). A turn opens
    when the model starts answering (or speech with no answer around it
    starts) and closes at the response's end: the text is written to the
    shared context then. An interruption commits what was said so far,
    marked interrupted, so the conversation remembers what the user heard.
    Tool calls are written as they start (an ``IN_PROGRESS`` placeholder)
    and settled in place by their result; a result re-runs the model once
    per batch of calls, never while the bot or the user is speaking.

    Events: ``on_assistant_turn_started``, ``on_assistant_turn_stopped``
    (:class:`AssistantTurnStopped`), ``on_assistant_thought``
    (:class:`AssistantThought`), ``on_assistant_backchannel`` (a
    ``BotBackchannelFrame`` the synthesizer spoke: not a turn, not in the
    conversation), ``on_error``.
    """

    name = "AssistantContextAggregator"
    exclusive = "the bot's messages to the shared conversation"

    def __init__(
        self,
        context: LLMContext,
        *,
        summarizer: Summarizer | None = None,
        tool_change_messages: bool = False,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        from .summarizer import Summarizer

        self._context = context
        self.core = AssistantCore(tool_change_messages=tool_change_messages)
        self.scheduler = scheduler
        self.events = EventRegistry(self, (*ASSISTANT_EVENTS, "on_error"))
        self._summarizer = summarizer if summarizer is not None else Summarizer(context, auto_trigger=False)
        self._sessions: list[_AssistantSession] = []
        self._last: _AssistantSession | None = None

    def __repr__(self) -> str:
        return f"<{self.name}>"

    @property
    def context(self) -> LLMContext:
        """The shared conversation this aggregator writes to."""
        return self._context

    @property
    def state(self) -> AssistantState | None:
        """The state of the most recent session (for inspection and tests), or ``None``."""
        return self._last.state if self._last is not None else None

    def summarizer(self) -> Summarizer:
        """The summarizer this aggregator owns, for attaching handlers to its events."""
        return self._summarizer

    def has_function_calls_in_progress(self) -> bool:
        """Whether a tool call has yet to report its final result (in a running session, else the last one)."""
        sessions = self._sessions or ([self._last] if self._last is not None else [])
        return any(session.state.calls for session in sessions)

    def open(self, port: Port) -> _AssistantSession:
        session = _AssistantSession(self, port)
        self._sessions.append(session)
        self._last = session
        return session


class _AssistantSession(StageShell):
    """One session of an assistant aggregator: gathered text, the core's state, the port it acts through."""

    def __init__(self, aggregator: AssistantAggregator, port: Port) -> None:
        super().__init__(aggregator, port, aggregator.events, context=aggregator.context)
        self.aggregator = aggregator
        self.core = aggregator.core
        self.state = self.core.initial()
        self.parts: list[tuple[str, bool]] = []
        self.thought: list[tuple[str, bool]] = []
        self._after: set[abc.DisposableBase] = set()
        self.summary: SummarizerSession = aggregator.summarizer().open(self)
        self._summary_types = aggregator.summarizer().handled_types
        self._dispatch: dict[type[Frame], Callable[[Frame, Direction], None]] = {}
        decides = self._decide  # one bound method for the whole table: :meth:`on_down` knows it
        self._inline: object = decides if type(self)._decide is _AssistantSession._decide else None
        for t in self.core.handled_types:
            self._dispatch[t] = decides
        for t in (LLMTextFrame, TextFrame):
            self._dispatch[t] = self._text
        for t in (AggregatedTextFrame, TTSTextFrame):
            self._dispatch[t] = self._aggregated_text
        self._dispatch[LLMThoughtTextFrame] = self._thought_text
        self._dispatch[LLMThoughtEndFrame] = self._thought_end
        for t in getattr(aggregator.summarizer(), "consumed_types", ()):
            self._dispatch.setdefault(t, _consumed)  # answers addressed to the summarizer stop here

    # -- frames ------------------------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if t is LLMTextFrame:  # most frames are tokens: their path is inlined
            text = frame.text  # type: ignore[attr-defined]
            if text and frame.append_to_context:  # type: ignore[attr-defined]
                self.parts.append((text, frame.includes_inter_frame_spaces))  # type: ignore[attr-defined]
            if direction is DOWN:
                self.link.emit_down(frame)
            else:
                self.link.emit_up(frame)
            return
        handler = self._dispatch.get(t)
        if handler is not None:
            handler(frame, direction)
        elif direction is DOWN:
            self.link.emit_down(frame)
        else:
            self.link.emit_up(frame)
        if t in self._summary_types:
            self.summary.on_frame(frame, direction)

    def on_down(self, frame: Frame) -> None:
        """A frame from upstream: the model's tokens take the shortest path (failures contained here)."""
        t = type(frame)
        if t is LLMTextFrame:
            text = frame.text  # type: ignore[attr-defined]
            if text and frame.append_to_context:  # type: ignore[attr-defined]
                self.parts.append((text, frame.includes_inter_frame_spaces))  # type: ignore[attr-defined]
            emit = self.link.emit_down  # read, then called: not looked up as a method (faster)
            emit(frame)
            return
        try:
            handler = self._dispatch.get(t)
            if handler is self._inline and handler is not None:  # :meth:`_decide`, written out (every decision)
                clock = self.clock  # read, then called: not looked up as a method (faster)
                self.now = now = clock()
                self.core.on_frame(self.state, self, frame, DOWN, now)
                if t is EndFrame or t is CancelFrame:
                    self._end()
            elif handler is not None:
                handler(frame, DOWN)
            else:
                emit = self.link.emit_down  # read, then called: not looked up as a method (faster)
                emit(frame)
            if t in self._summary_types:
                self.summary.on_frame(frame, DOWN)
        except Exception as exc:
            self.link.failed(frame, exc)

    def on_up(self, frame: Frame) -> None:
        try:
            self.on_frame(frame, UP)
        except Exception as exc:
            self.link.failed(frame, exc)

    def _text(self, frame: Frame, direction: Direction) -> None:
        text = frame.text  # type: ignore[attr-defined]
        if text and frame.append_to_context:  # type: ignore[attr-defined]
            self.parts.append((text, frame.includes_inter_frame_spaces))  # type: ignore[attr-defined]
        self.emit(frame, direction)

    def _aggregated_text(self, frame: Frame, direction: Direction) -> None:
        f: AggregatedTextFrame = frame  # type: ignore[assignment]
        text = f.raw_text if f.raw_text is not None else f.text
        if text and f.append_to_context:
            self.parts.append((text, f.includes_inter_frame_spaces))
        self.emit(frame, direction)

    def _thought_text(self, frame: Frame, direction: Direction) -> None:
        text = frame.text  # type: ignore[attr-defined]
        if text:
            self.thought.append((text, True))

    def _thought_end(self, frame: Frame, direction: Direction) -> None:
        text = concatenate(self.thought)
        self.thought = []
        self.now = now = self.clock()
        self.core.on_thought(self.state, self, text, frame.signature, now)  # type: ignore[attr-defined]

    def _decide(self, frame: Frame, direction: Direction) -> None:
        self.now = now = self.clock()
        self.core.on_frame(self.state, self, frame, direction, now)
        if type(frame) is EndFrame or type(frame) is CancelFrame:
            self._end()

    # -- the port the core acts through ---------------------------------------------------------

    def text(self) -> list[tuple[str, bool]]:
        return self.parts

    def clear_text(self) -> None:
        self.parts = []

    def skip(self, reason: str) -> None:
        log.warning("%s: %s; skipped", self.stage.name, reason)

    def after_write(self, fn: Callable[[], Any]) -> None:
        """Call ``fn`` once the write it follows is in (on the next turn of the session)."""
        handle: list[abc.DisposableBase] = []

        def call() -> None:
            for h in handle:
                self._after.discard(h)  # fired: forgotten, so a long session does not accumulate them
            if not self.closed:
                contain(fn, what="an on_context_updated callback")

        handle.append(self.port.call_later(0.0, call))
        self._after.add(handle[0])

    # -- the end --------------------------------------------------------------------------------

    def _end(self) -> None:
        for handle in self._after:
            handle.dispose()
        self._after.clear()
        self.summary.close()

    def on_input_end(self, direction: Direction) -> None:
        if direction is not DOWN:
            return
        self.now = now = self.clock()
        self.core.end_of_input(self.state, self, now)
        self._end()

    def close(self) -> None:
        super().close()
        self._end()
        if self in self.aggregator._sessions:
            self.aggregator._sessions.remove(self)


def _consumed(frame: Frame, direction: Direction) -> None:
    return None

