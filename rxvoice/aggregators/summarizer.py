"""The conversation summarizer the assistant aggregator owns.

It watches the frames the assistant hands it (only the types in
:attr:`Summarizer.handled_types`, so the per-token path pays nothing), decides
when a summary is due, asks a model for one, and applies the answer to the
shared context. The asking never blocks the conversation: the pipeline's own
model is asked through a request frame sent upstream (its answer comes back
downstream as an ``LLMContextSummaryResultFrame``), and a dedicated model runs
on a worker thread, an asyncio task, or as a side stage on the session's
scheduler. Every answer re-enters the session serialized with the frames,
under a timeout kept on the session's scheduler. The decisions themselves
(thresholds, the cut, validation, the rewrite) are the pure functions of
:mod:`rxvoice.summarization`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.subject import Subject

from ..context import ContextSnapshot, LLMContext, Messages
from ..errors import ConfigurationError, SummarizationError
from ..events import EventRegistry
from ..frames import (
    Direction,
    Frame,
    InterruptionFrame,
    LLMContextSummaryRequestFrame,
    LLMContextSummaryResultFrame,
    LLMFullResponseStartFrame,
    LLMSummarizeContextFrame,
)
from ..pipeline.offload import Offload, default_offload, loop_offload
from ..pipeline.session import Session
from ..pipeline.stage import Stage
from ..summarization import (
    AppliedSummary,
    AutoSummarizationConfig,
    SummaryConfig,
    SummaryRequest,
    apply_summary,
    format_transcript,
    messages_to_summarize,
    should_summarize,
)
from .reports import EVENT_REQUEST_SUMMARIZATION, EVENT_SUMMARY_APPLIED, SummaryApplied

if TYPE_CHECKING:
    from ..pipeline.shell import StageShell

__all__ = ["SUMMARIZER_EVENTS", "Summarizer", "SummarizerSession"]

log = logging.getLogger("rxvoice.aggregators.summarizer")

SUMMARIZER_EVENTS = (EVENT_REQUEST_SUMMARIZATION, EVENT_SUMMARY_APPLIED, "on_error")
"""The events a :class:`Summarizer` raises."""

class Summarizer:
    """Compresses a conversation that has grown long, beside the conversation, never in its way.

    The assistant aggregator owns one (``pair.assistant().summarizer()``) and
    hands it the frames it cares about. A summary is requested:

    * automatically (``auto_trigger``), when a response starts and the
      conversation has reached ``config.max_context_tokens`` (estimated) or
      ``config.max_unsummarized_messages``, and there is something to summarize;
    * on demand, when an ``LLMSummarizeContextFrame`` arrives (its ``config``, if
      any, overrides the summary settings for that request).

    At most one request is in flight. The answer replaces the older messages with
    one summary message (role ``user``, from the template) placed after the first
    system message and before the kept recent messages. A stale answer (another
    request's, one that arrives after the timeout, or one computed on a
    conversation that has since been rewritten) is ignored; a failed or invalid
    one (an error, an empty summary, a cut that would keep too few messages or
    separate a tool call from its result) leaves the conversation untouched and
    raises ``on_error``. An interruption clears the in-flight mark of a request
    sent to the pipeline's model (it may have been lost with the interruption,
    so a new one may be made) but keeps the pending request id, so its answer is
    still applied if nothing newer was asked. A dedicated model's request is
    not affected by interruptions.

    Events:
        ``on_request_summarization``: the ``LLMContextSummaryRequestFrame`` about
            to be sent upstream to the pipeline's model (only when no dedicated
            model is configured); raised synchronously, before it is sent.
        ``on_summary_applied``: a :class:`~rxvoice.aggregators.SummaryApplied`.
        ``on_error``: a :class:`~rxvoice.errors.SummarizationError`.

    Args:
        context: The conversation to compress.
        config: Thresholds and summary settings (defaults: 8000 tokens, 20
            messages, keep 4, target 6000, 120 s timeout).
        auto_trigger: Check the thresholds at each response start; when off,
            summaries happen only on demand.
        executor: Where a synchronous dedicated model runs (a
            ``concurrent.futures.Executor``); rxvoice's shared worker pool by default.
    """

    def __init__(
        self,
        context: LLMContext,
        config: AutoSummarizationConfig | None = None,
        *,
        auto_trigger: bool = False,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        if not isinstance(context, LLMContext):
            raise ConfigurationError(f"Summarizer needs an LLMContext, got {type(context).__name__}")
        if config is not None and not isinstance(config, AutoSummarizationConfig):
            raise ConfigurationError(f"config must be an AutoSummarizationConfig, got {type(config).__name__}")
        self.context = context
        self.config = config if config is not None else AutoSummarizationConfig()
        self.auto_trigger = bool(auto_trigger)
        self.executor = executor
        self.events = EventRegistry(self, SUMMARIZER_EVENTS)
        handled: set[type[Frame]] = {LLMSummarizeContextFrame, LLMContextSummaryResultFrame, InterruptionFrame}
        if self.auto_trigger:
            handled.add(LLMFullResponseStartFrame)
        self.handled_types: frozenset[type[Frame]] = frozenset(handled)
        """The frame types the owner hands over (nothing else reaches the summarizer)."""
        self.consumed_types: frozenset[type[Frame]] = frozenset({LLMContextSummaryResultFrame})
        """The frame types the owner hands over instead of forwarding (answers addressed to it)."""
        self._sessions: list[SummarizerSession] = []
        self._last: SummarizerSession | None = None

    def __repr__(self) -> str:
        return f"<Summarizer auto={self.auto_trigger} {self.config!r}>"

    @property
    def session(self) -> SummarizerSession | None:
        """The most recent session (for inspection and tests), or ``None``."""
        return self._last

    @property
    def in_flight(self) -> bool:
        """Whether a running session has a summary request in flight."""
        return any(session.in_flight for session in self._sessions)

    def open(self, shell: StageShell) -> SummarizerSession:
        """Start watching one session of the owner."""
        session = SummarizerSession(self, shell)
        self._sessions.append(session)
        self._last = session
        return session


@dataclass(eq=False)
class _Pending:
    """A request waiting for its answer."""

    request_id: str
    config: SummaryConfig
    requested: Messages
    last_index: int = -1
    timer: abc.DisposableBase | None = None
    cancel: Callable[[], Any] | None = None
    extra: list[abc.DisposableBase] = field(default_factory=list)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.dispose()
            self.timer = None
        if self.cancel is not None:
            try:
                self.cancel()
            except Exception:
                log.debug("cancelling a summary call failed", exc_info=True)
            self.cancel = None
        for d in self.extra:
            d.dispose()
        self.extra.clear()


class SummarizerSession:
    """The summarizer of one session of its owner: what is in flight, what was applied."""

    def __init__(self, summarizer: Summarizer, shell: StageShell) -> None:
        self.summarizer = summarizer
        self.shell = shell
        self.port = shell.port
        self.context = summarizer.context
        self.events = summarizer.events.session(shell.port.time)
        self.in_flight = False
        self.pending: _Pending | None = None
        self.summary_message: Any = None
        self.closed = False
        self._stage_input: Subject[Frame] | None = None
        self._stage_subscription: abc.DisposableBase | None = None

    # -- frames ------------------------------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        """Handle one of the frame types in ``handled_types``."""
        if self.closed:
            return
        t = type(frame)
        if t is LLMFullResponseStartFrame:
            self._maybe_auto()
        elif t is InterruptionFrame:
            pending = self.pending
            if pending is not None and pending.config.llm is None:
                # The request travelled through the pipeline and may have died with the interruption:
                # a new one may be made. Its id stays pending, so its answer still counts if it comes.
                self.in_flight = False
        elif t is LLMSummarizeContextFrame:
            if self.in_flight:
                log.info("a summary is already in flight; the LLMSummarizeContextFrame is ignored")
                return
            override = frame.config  # type: ignore[attr-defined]
            if override is not None and not isinstance(override, SummaryConfig):
                self._fail(SummarizationError(
                    f"LLMSummarizeContextFrame.config must be a SummaryConfig or None, got {override!r:.80}; "
                    "nothing was requested"
                ))
                return
            self.request(override or self.summarizer.config.summary_config, manual=True)
        elif t is LLMContextSummaryResultFrame:
            self._on_result_frame(frame)  # type: ignore[arg-type]

    def _maybe_auto(self) -> None:
        if self.in_flight:
            return
        cfg = self.summarizer.config
        messages = self.context.messages
        # O(1) whatever the conversation's length: the messages keep their token estimate as they grow.
        if not should_summarize(messages, cfg, self.summary_message):
            return
        if messages_to_summarize(messages, cfg.summary_config.min_messages_after_summary).empty:
            log.debug("summary threshold reached but nothing can be summarized yet")
            return
        self.request(cfg.summary_config, manual=False)

    # -- asking ------------------------------------------------------------------------

    def request(self, config: SummaryConfig, *, manual: bool = True) -> str | None:
        """Ask for a summary now with ``config``; returns the request id (``None`` if nothing was asked)."""
        if self.closed:
            return None
        snapshot = self.context.snapshot
        keep = config.min_messages_after_summary
        llm = config.llm
        request_id = uuid.uuid4().hex
        selection = None
        if llm is not None and not isinstance(llm, Stage) and not callable(llm):
            self._fail(SummarizationError(f"the summary model {llm!r:.80} is neither callable nor a Stage"))
            return None
        if llm is not None and not isinstance(llm, Stage):
            selection = messages_to_summarize(snapshot.messages, keep)
            if selection.empty:
                log.info("nothing to summarize yet (keeping the last %d messages)", keep)
                return None
        if self.pending is not None:
            self.pending.stop()
        pending = _Pending(request_id, config, snapshot.messages)
        self.pending = pending
        self.in_flight = True
        pending.timer = self.shell.later(config.summarization_timeout, lambda: self._timed_out(pending))
        frame = LLMContextSummaryRequestFrame(
            request_id, self.context, keep, config.target_context_tokens, config.prompt,
            config.summarization_timeout,
        )
        log.debug("summary %s requested (%s)", request_id, "on demand" if manual else "automatically")
        if llm is None:
            self.events.emit(EVENT_REQUEST_SUMMARIZATION, frame)
            self.port.push_up(frame)
        elif isinstance(llm, Stage):
            self._ask_stage(llm, frame)
        else:
            assert selection is not None
            pending.last_index = selection.last_index
            chosen = tuple(snapshot.messages[selection.start : selection.end])
            summary_request = SummaryRequest(
                request_id, chosen, format_transcript(chosen), config.prompt, config.target_context_tokens,
                selection.last_index, keep, config.summarization_timeout,
            )
            self._ask_callable(llm, summary_request, pending)  # a refused job comes back as the model's failure
        return request_id

    def _ask_stage(self, stage: Stage, frame: LLMContextSummaryRequestFrame) -> None:
        """A dedicated model stage, run beside the pipeline on the same session."""
        if self._stage_input is None:
            source: Subject[Frame] = Subject()
            down, _up = stage.duplex(source, reactivex.never())
            session = self.port.session

            def answer(f: Frame) -> None:
                if type(f) is LLMContextSummaryResultFrame:
                    self.shell.enter(lambda: self._on_result_frame(f))

            self._stage_input = source
            self._stage_subscription = down.subscribe(answer, lambda e: log.error("the summary stage failed: %s", e),
                                                      scheduler=session)
        self._stage_input.on_next(frame)

    def _ask_callable(self, fn: Callable[[SummaryRequest], Any], request: SummaryRequest, pending: _Pending) -> None:
        """A dedicated model function, run off the session (the shell's submit); its answer comes back through it."""
        loop = _loop_of(self.port.session)
        offload: Offload
        if loop is not None and inspect.iscoroutinefunction(fn):
            offload = loop_offload(loop)
            job: Callable[[], Any] = partial(_call_async, fn, request)
        else:
            executor = self.summarizer.executor
            offload = executor.submit if executor is not None else default_offload
            job = partial(_call_sync, fn, request, loop)
        future = self.shell.submit(job, lambda outcome: self._on_answer(pending, outcome), offload=offload)
        if future is not None:
            pending.cancel = future.cancel

    # -- answers ---------------------------------------------------------------------------

    def _on_answer(self, pending: _Pending, outcome: Any) -> None:
        """A dedicated model function answered (a summary, an error, or an observable of the summary)."""
        if pending is not self.pending:
            log.info("a late or superseded summary was ignored")
            return
        if isinstance(outcome, Observable):
            self._follow(pending, outcome)
            return
        if isinstance(outcome, BaseException):
            self._settle(pending)
            self._fail(SummarizationError(f"the summary model failed: {outcome!r}"))
            return
        if not isinstance(outcome, str):
            self._settle(pending)
            self._fail(SummarizationError(f"the summary model returned {type(outcome).__name__}, not a string"))
            return
        self._settle(pending)
        self._apply(pending, outcome, pending.last_index)

    def _follow(self, pending: _Pending, answer: Observable[Any]) -> None:
        """An observable answer: its first item, on the session's scheduler."""
        session = self.port.session
        got = [False]

        def on_next(value: Any) -> None:
            if not got[0]:
                got[0] = True
                self.shell.enter(lambda: self._on_answer(pending, value))

        def on_error(error: Exception) -> None:
            if not got[0]:
                got[0] = True
                self.shell.enter(lambda: self._on_answer(pending, error))

        def on_completed() -> None:
            on_error(SummarizationError("the summary model completed without a summary"))

        pending.extra.append(answer.pipe(ops.take(1)).subscribe(on_next, on_error, on_completed, scheduler=session))

    def _on_result_frame(self, frame: LLMContextSummaryResultFrame) -> None:
        """The pipeline's model (or a dedicated stage) answered with a result frame."""
        pending = self.pending
        if pending is None or frame.request_id != pending.request_id:
            log.info("a summary result for request %r, which is not pending, was ignored", frame.request_id)
            return
        self._settle(pending)
        if frame.error:
            self._fail(SummarizationError(f"the model could not summarize: {frame.error}"))
            return
        self._apply(pending, frame.summary, frame.last_summarized_index)

    def _settle(self, pending: _Pending) -> None:
        pending.stop()
        if self.pending is pending:
            self.pending = None
            self.in_flight = False

    def _timed_out(self, pending: _Pending) -> None:
        if pending is not self.pending:
            return
        self._settle(pending)
        self._fail(SummarizationError(
            f"no summary within {pending.config.summarization_timeout:g} s; the conversation is left as it is"
        ))

    def _apply(self, pending: _Pending, summary: str, last_index: int) -> None:
        config = pending.config
        applied: list[AppliedSummary] = []

        def change(snapshot: ContextSnapshot) -> ContextSnapshot:
            messages = snapshot.messages
            if not _same_prefix(messages, pending.requested, last_index + 1):
                raise SummarizationError("the conversation was rewritten while the summary was made; it is stale")
            result = apply_summary(
                messages, summary, last_index, keep=config.min_messages_after_summary,
                template=config.summary_message_template,
            )
            applied.append(result)
            return ContextSnapshot(Messages(result.messages), snapshot.tools, snapshot.tool_choice)

        try:
            self.context.update(change)
        except SummarizationError as error:
            self._fail(error)
            return
        result = applied[0]
        self.summary_message = result.summary_message
        log.info(
            "summary applied: %d messages -> %d (%d summarized)",
            result.original_message_count, result.new_message_count, result.summarized_message_count,
        )
        self.events.emit(EVENT_SUMMARY_APPLIED, SummaryApplied(
            result.original_message_count, result.new_message_count,
            result.summarized_message_count, result.preserved_message_count,
        ))

    def _fail(self, error: SummarizationError) -> None:
        log.warning("summarization: %s", error)
        self.events.emit("on_error", error)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """The session ends: abandon what is in flight (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self in self.summarizer._sessions:
            self.summarizer._sessions.remove(self)
        self.events.close()
        if self.pending is not None:
            self.pending.stop()
            self.pending = None
        self.in_flight = False
        if self._stage_subscription is not None:
            self._stage_subscription.dispose()
            self._stage_subscription = None
        if self._stage_input is not None:
            self._stage_input.on_completed()
            self._stage_input = None


def _same_prefix(current: Sequence[Any], requested: Sequence[Any], upto: int) -> bool:
    """Whether the first ``upto`` messages the request knew are still there, unchanged."""
    n = min(upto, len(requested))
    if len(current) < n:
        return False
    for i in range(n):
        a, b = current[i], requested[i]
        if a is not b and a != b:
            return False
    return True


def _loop_of(session: Session) -> asyncio.AbstractEventLoop | None:
    """The asyncio loop the session runs on, if any (coroutine models run there)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    loop = getattr(session.scheduler, "_loop", None)
    if isinstance(loop, asyncio.AbstractEventLoop) and loop.is_running():
        return loop
    return None


async def _call_async(fn: Callable[[SummaryRequest], Any], request: SummaryRequest) -> Any:
    result = fn(request)
    if inspect.isawaitable(result) and not isinstance(result, Observable):
        result = await result
    return result


def _call_sync(fn: Callable[[SummaryRequest], Any], request: SummaryRequest,
               loop: asyncio.AbstractEventLoop | None) -> Any:
    """Run a dedicated model function on a worker thread; await what it returns if need be."""
    result = fn(request)
    if isinstance(result, Observable):
        return result  # followed on the session's scheduler (an Observable is awaitable too: not here)
    if inspect.isawaitable(result):
        if loop is not None and loop.is_running():
            return asyncio.run_coroutine_threadsafe(_await(result), loop).result()
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable
