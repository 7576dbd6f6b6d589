"""The assistant half of a pair: the model's streamed answer in, one assistant message out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reactivex import abc

from ..context import LLMContext
from ..events import EventRegistry
from ..frames import (
    DOWN,
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
from ..text.parts import Part, concatenate
from .assistant_core import ASSISTANT_EVENTS, AfterWrite, AssistantCore, AssistantState, ClearText, HoldText, Skip
from .effects import ShellSession

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
    (:class:`AssistantThought`), ``on_error``.
    """

    name = "AssistantContextAggregator"

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
        self.core.listening = self.events.listened
        self._summarizer = summarizer if summarizer is not None else Summarizer(context, auto_trigger=False)
        self._session: _AssistantSession | None = None

    def __repr__(self) -> str:
        return f"<{self.name}>"

    @property
    def context(self) -> LLMContext:
        """The shared conversation this aggregator writes to."""
        return self._context

    @property
    def state(self) -> AssistantState | None:
        """The current session's state (for inspection and tests), or ``None``."""
        return self._session.state if self._session is not None else None

    def summarizer(self) -> Summarizer:
        """The summarizer this aggregator owns, for attaching handlers to its events."""
        return self._summarizer

    def has_function_calls_in_progress(self) -> bool:
        """Whether a tool call of the current turn has yet to report its final result."""
        session = self._session
        return bool(session is not None and session.state.calls)

    def open(self, port: Port) -> _AssistantSession:
        session = _AssistantSession(self, port)
        self._session = session
        return session



class _AssistantSession(ShellSession):
    """One session of an assistant aggregator: gathered text, the core's state, its effects."""

    def __init__(self, aggregator: AssistantAggregator, port: Port) -> None:
        super().__init__(aggregator, port, aggregator.context, aggregator.events)
        self.handlers.update({
            ClearText: self._clear_text, HoldText: self._hold_text, AfterWrite: self._on_after_write, Skip: self._skip,
        })
        self.aggregator = aggregator
        self.core = aggregator.core
        self.state = self.core.initial()
        self.parts: list[tuple[str, bool]] = []
        self.thought: list[tuple[str, bool]] = []
        self._tasks: set[asyncio.Future[Any]] = set()
        self._after: set[abc.DisposableBase] = set()
        self.summary: SummarizerSession = aggregator.summarizer().open(self)
        self._summary_types = aggregator.summarizer().handled_types
        handled = self.core.handled_types
        self._dispatch: dict[type[Frame], Callable[[Frame, Direction], None]] = {}
        for t in handled:
            self._dispatch[t] = self._decide
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
                self._link.emit_down(frame)
            else:
                self._link.emit_up(frame)
            return
        handler = self._dispatch.get(t)
        if handler is not None:
            handler(frame, direction)
        else:
            if direction is DOWN:
                self._link.emit_down(frame)
            else:
                self._link.emit_up(frame)
        if t in self._summary_types:
            self.summary.on_frame(frame, direction)

    def _text(self, frame: Frame, direction: Direction) -> None:
        text = frame.text  # type: ignore[attr-defined]
        if text and frame.append_to_context:  # type: ignore[attr-defined]
            self.parts.append((text, frame.includes_inter_frame_spaces))  # type: ignore[attr-defined]
        if direction is DOWN:
            self._link.emit_down(frame)
        else:
            self._link.emit_up(frame)

    def _aggregated_text(self, frame: Frame, direction: Direction) -> None:
        f: AggregatedTextFrame = frame  # type: ignore[assignment]
        text = f.raw_text if f.raw_text is not None else f.text
        if text and f.append_to_context:
            self.parts.append((text, f.includes_inter_frame_spaces))
        self._push(frame, direction)

    def _thought_text(self, frame: Frame, direction: Direction) -> None:
        text = frame.text  # type: ignore[attr-defined]
        if text:
            self.thought.append((text, True))

    def _thought_end(self, frame: Frame, direction: Direction) -> None:
        text = concatenate(self.thought)
        self.thought = []
        self.now = now = self.clock()
        self.state, effects = self.core.on_thought(self.state, text, frame.signature, now)  # type: ignore[attr-defined]
        self.execute(effects)

    def _decide(self, frame: Frame, direction: Direction) -> None:
        held: tuple[Part, ...] = tuple(self.parts)  # type: ignore[arg-type]
        self.now = now = self.clock()
        self.state, effects = self.core.on_frame(self.state, frame, direction, now, held)
        self.execute(effects)
        if type(frame) is EndFrame or type(frame) is CancelFrame:
            self._end()

    def execute(self, effects: list[Any]) -> None:
        self.run(effects)

    def _clear_text(self, _e: ClearText) -> None:
        self.parts = []

    def _hold_text(self, e: HoldText) -> None:
        self.parts.append((e.part.text, e.part.includes_inter_part_spaces))

    def _on_after_write(self, e: AfterWrite) -> None:
        self._after_write(e.fn)

    def _skip(self, e: Skip) -> None:
        log.warning("%s: %s; skipped", self.processor.name, e.reason)

    # -- callbacks after a tool result is written ----------------------------------------

    def _after_write(self, fn: Callable[[], Any]) -> None:
        handle: list[abc.DisposableBase] = []

        def call() -> None:
            for h in handle:
                self._after.discard(h)  # fired: forgotten, so a long session does not accumulate them
            if self.closed:
                return
            try:
                result = fn()
            except Exception:
                log.exception("an on_context_updated callback raised; contained")
                return
            if hasattr(result, "__await__"):
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    try:
                        asyncio.run(_wrap(result))
                    except Exception:
                        log.exception("an on_context_updated callback raised; contained")
                    return
                task = loop.create_task(_wrap(result))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

        handle.append(self.port.call_later(0.0, call))
        self._after.add(handle[0])

    def _end(self) -> None:
        for handle in self._after:
            handle.dispose()
        self._after.clear()
        for task in list(self._tasks):
            task.cancel()
        self.summary.close()

    def on_timer(self, owner: int, key: str) -> None:
        self.summary.on_timer(owner, key)

    def on_result(self, owner: int, key: str, value: Any) -> None:
        self.summary.on_result(owner, key, value)

    def on_input_end(self, direction: Direction) -> None:
        if direction is not DOWN:
            return
        held: tuple[Part, ...] = tuple(self.parts)  # type: ignore[arg-type]
        self.state, effects = self.core.on_frame(self.state, _END, DOWN, self.clock(), held)
        self.execute([e for e in effects if getattr(e, "frame", None) is not _END])
        self._end()

    def close(self) -> None:
        super().close()
        self._end()


def _consumed(frame: Frame, direction: Direction) -> None:
    return None


async def _wrap(awaitable: Any) -> Any:
    return await awaitable


_END = EndFrame(reason="input completed")
