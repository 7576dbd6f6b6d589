"""A scripted model stage: streamed answers, tool calls and thoughts from a script.

It stands where a real model stage would (after the user aggregator) and
answers each ``LLMContextFrame`` (from either side: the user's turn, or the
assistant re-running the model after a tool result) with the next reply of
its script, streamed token by token on the scheduler. An interruption cuts
the reply off where it is; a tool call already running with
``cancel_on_interruption=False`` runs on and delivers its result. Every run
is recorded in :attr:`ScriptedLLM.runs` with the conversation it was given,
which is what tests assert on.

What a session has to say waits on one timeline, in the order it was
scripted: two frames due at the same instant (the last token and the
response's end) come out in that order on every scheduler.

It speculates as a real model stage does: an ``LLMSpeculativeContextFrame``
is answered into a hold (the reply the script would give, without using it
up; recorded in :attr:`ScriptedLLM.speculative_runs`), an ``LLMContextFrame``
naming it releases what is held at once (and goes on streaming the rest),
an ``EagerEndOfTurnCancelFrame`` drops it, and a held reply that makes a
tool call is refused before any tool is started (its handler never runs);
each outcome goes upstream as an ``LLMSpeculationEndedFrame``.
"""

from __future__ import annotations

import heapq
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reactivex import abc

from ..context import ContextSnapshot
from ..errors import InvalidToolCallError
from ..frames import (
    DOWN,
    UP,
    CancelFrame,
    Direction,
    EagerEndOfTurnCancelFrame,
    EndFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallFromLLM,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    InterruptionFrame,
    LLMContextFrame,
    LLMContextSummaryRequestFrame,
    LLMContextSummaryResultFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMSpeculationEndedFrame,
    LLMSpeculativeContextFrame,
    LLMTextFrame,
    LLMThoughtEndFrame,
    LLMThoughtStartFrame,
    LLMThoughtTextFrame,
)
from ..pipeline.processor import Port, Processor

__all__ = ["Reply", "ScriptedLLM", "ToolCall", "tokens"]

log = logging.getLogger("rxvoice.testing.llm")


def tokens(text: str) -> list[str]:
    """Split text the way models stream it: words with their leading space."""
    return re.findall(r"\s*\S+", text) or ([text] if text else [])


@dataclass(frozen=True)
class ToolCall:
    """A tool call a reply makes; ``result`` (or ``handler(arguments)``) answers it after ``delay`` seconds."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    handler: Callable[[Mapping[str, Any]], Any] | None = None
    delay: float = 0.0
    cancel_on_interruption: bool = True
    run_llm: bool | None = None
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    thought: str | None = None
    token_delay: float | None = None
    first_token_delay: float | None = None


Script = Sequence["Reply | str"] | Callable[[ContextSnapshot], "Reply | str | None"]


@dataclass
class Run:
    """One model run: what it was given, and what it answered."""

    snapshot: ContextSnapshot
    reply: Reply | None
    direction: Direction


END_GRACE = 30.0
"""Seconds an end (an ``EndFrame``, or the input completing) waits at most for the reply already asked for."""


class ScriptedLLM(Processor):
    """A model stage answering from a script (a list of replies, or a function of the conversation).

    Args:
        script: Replies in order (strings or :class:`Reply`), or a callable
            that maps the conversation to a reply.
        token_delay: Seconds between streamed tokens (0: all at once).
        first_token_delay: Seconds before the first token (time to first byte).
        summary: How to answer a summary request: a string (summarizing what
            :func:`~rxvoice.summarization.messages_to_summarize` selects), or a
            function of the request frame returning ``(summary,
            last_summarized_index)``; a function that raises answers with an
            error result. ``None``: requests pass through unanswered.
        summary_delay: Seconds before the summary answer (``None``: never answer,
            like a model that hangs).
    """

    name = "ScriptedLLM"

    def __init__(
        self,
        script: Script,
        *,
        token_delay: float = 0.0,
        first_token_delay: float = 0.0,
        summary: str | Callable[[LLMContextSummaryRequestFrame], tuple[str, int]] | None = None,
        summary_delay: float | None = 0.0,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        self.script = script
        self.token_delay = token_delay
        self.first_token_delay = first_token_delay
        self.summary = summary
        self.summary_delay = summary_delay
        self.scheduler = scheduler
        self.runs: list[Run] = []
        self.speculative_runs: list[Run] = []
        """The speculative requests, with the reply the script had for each (held, never used up)."""
        self.tool_calls_started = 0
        """Tool calls whose handler ran or whose result was scripted to come (never one of a held reply)."""
        self.summary_requests: list[LLMContextSummaryRequestFrame] = []
        self._next = 0
        self._call_ids = 0

    def next_reply(self, snapshot: ContextSnapshot, *, peek: bool = False) -> Reply | None:
        """The reply for this run (``None`` when the script has run out); ``peek``: do not use it up."""
        if callable(self.script):
            reply = self.script(snapshot)
        else:
            if self._next >= len(self.script):
                return None
            reply = self.script[self._next]
            if not peek:
                self._next += 1
        if reply is None:
            return None
        return Reply(reply) if isinstance(reply, str) else reply

    def use_reply(self) -> None:
        """A peeked reply was released: the script moves past it."""
        if not callable(self.script):
            self._next += 1

    def new_call_id(self) -> str:
        self._call_ids += 1
        return f"call_{self._call_ids}"

    def open(self, port: Port) -> _LLMSession:
        return _LLMSession(self, port)


_EPS = 1e-9  # what "due by now" tolerates of float arithmetic on the clock


class _Due:
    """One frame the session will emit: when, which way, and the tool call it starts or settles."""

    __slots__ = ("at", "call", "direction", "finishes", "frame", "speculation", "starts")

    def __init__(
        self, at: float, frame: Frame, direction: Direction, call: str | None, starts: ToolCall | None,
        finishes: bool, speculation: int | None = None,
    ) -> None:
        self.at = at
        self.frame = frame
        self.direction = direction
        self.call = call  # the tool call this frame belongs to (its progress, or its result)
        self.starts = starts  # emitting it starts that call
        self.finishes = finishes  # emitting it settles that call
        self.speculation = speculation  # a held reply's frame: it goes into the hold, not downstream


class _Hold:
    """The speculative reply held: its id, its snapshot, what it streamed so far."""

    __slots__ = ("frames", "reply", "snapshot", "speculation_id", "tokens")

    def __init__(self, speculation_id: int, snapshot: ContextSnapshot, reply: Reply) -> None:
        self.speculation_id = speculation_id
        self.snapshot = snapshot
        self.reply = reply
        self.frames: list[Frame] = []
        self.tokens = 0


class _LLMSession:
    def __init__(self, llm: ScriptedLLM, port: Port) -> None:
        self.llm = llm
        self.port = port
        self.pending: list[tuple[float, int, _Due]] = []  # a heap: (due, order scripted, what)
        self.timer: abc.DisposableBase | None = None
        self.timer_at = 0.0
        self.summaries: dict[int, abc.DisposableBase] = {}
        self.next_key = 0
        self.calls: dict[str, ToolCall] = {}
        self.ending: Frame | None = None
        self.input_ended = False
        self.hold: _Hold | None = None

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if t is LLMContextFrame:
            sid = frame.speculation_id  # type: ignore[attr-defined]
            if self.hold is not None and sid is not None and sid == self.hold.speculation_id:
                self.release(frame.snapshot, direction)  # type: ignore[attr-defined]
                return
            self.drop_speculation(None, "a request for another conversation came")
            self.answer(frame.snapshot, direction)  # type: ignore[attr-defined]
            return
        if t is LLMSpeculativeContextFrame:
            self.speculate(frame)  # type: ignore[arg-type]
            return
        if t is EagerEndOfTurnCancelFrame:
            self.drop_speculation(frame.speculation_id, frame.reason or "withdrawn")  # type: ignore[attr-defined]
            return
        if t is LLMContextSummaryRequestFrame and self.llm.summary is not None:
            self.summarize(frame)  # type: ignore[arg-type]
            return
        if t is EndFrame and self._live():
            self.ending = frame  # an end lets the reply already asked for finish, then goes on
            return
        if t is InterruptionFrame or t is CancelFrame or t is EndFrame:
            if t is not InterruptionFrame:
                self.drop_speculation(None, "the session ended")
            self.cut_off(t is InterruptionFrame)
            if t is CancelFrame:
                self.ending = None  # a cancel ends now: the held end is superseded
        self.port.push(frame, direction)
        if (self.ending is not None or self.input_ended) and not self._live():
            self._release_end()

    def _live(self) -> bool:
        """Something other than a held reply is still due (an end waits for it)."""
        return any(p[2].speculation is None for p in self.pending)

    def on_input_end(self, direction: Direction) -> float | None:
        if direction is DOWN and self._live():
            self.input_ended = True
            return END_GRACE  # the output completes once the reply is out (bounded)
        return None

    def _release_end(self) -> None:
        """Nothing is pending any more: a held end goes on."""
        ending, self.ending = self.ending, None
        if ending is not None:
            self.cut_off(False)
            self.port.push(ending, DOWN)
        if self.input_ended:
            self.input_ended = False
            self.port.finish_input()

    def close(self) -> None:
        self.hold = None
        self.pending = [p for p in self.pending if p[2].speculation is None]
        self.cut_off(False)
        self._rearm()

    # -- speculation --------------------------------------------------------------------

    def speculate(self, frame: LLMSpeculativeContextFrame) -> None:
        """Answer into the hold; a reply that calls a tool is refused before anything of it runs."""
        llm = self.llm
        self.drop_speculation(None, "a newer speculative request came")
        snapshot = frame.snapshot
        reply = llm.next_reply(snapshot, peek=True)
        llm.speculative_runs.append(Run(snapshot, reply, DOWN))
        sid = frame.speculation_id
        if reply is None:
            self._ended(sid, "failed", "the script has no reply")
            return
        if reply.tool_calls:
            self._ended(sid, "refused", "the answer asks for a tool; asked again when the turn ends")
            return
        self.hold = _Hold(sid, snapshot, reply)
        for t, f in self._timeline(reply):
            self._at(t, f, DOWN, speculation=sid)

    def release(self, snapshot: ContextSnapshot, direction: Direction) -> None:
        """The turn ended with the held words: what is held goes out now, the rest streams on."""
        hold, self.hold = self.hold, None
        assert hold is not None
        llm = self.llm
        llm.use_reply()
        llm.runs.append(Run(snapshot, hold.reply, direction))
        for f in hold.frames:
            self.port.push(f, DOWN)
        for _, _, due in self.pending:
            if due.speculation == hold.speculation_id:
                due.speculation = None
        self._ended(hold.speculation_id, "released", "the turn ended with the same words")

    def drop_speculation(self, speculation_id: int | None, reason: str) -> None:
        """Drop the held reply (``speculation_id``: only if it is that one): nothing of it goes out."""
        hold = self.hold
        if hold is None or (speculation_id is not None and speculation_id != hold.speculation_id):
            return
        self.hold = None
        self.pending = [p for p in self.pending if p[2].speculation != hold.speculation_id]
        heapq.heapify(self.pending)
        self._rearm()
        self._ended(hold.speculation_id, "dropped", reason, hold.tokens)
        if (self.ending is not None or self.input_ended) and not self._live():
            self._release_end()

    def _ended(self, speculation_id: int, outcome: str, reason: str, tokens: int = 0) -> None:
        self.port.push(LLMSpeculationEndedFrame(speculation_id, outcome, reason, tokens), UP)

    # -- answering --------------------------------------------------------------------

    def answer(self, snapshot: ContextSnapshot, direction: Direction) -> None:
        llm = self.llm
        reply = llm.next_reply(snapshot)
        llm.runs.append(Run(snapshot, reply, direction))
        if reply is None:
            log.info("ScriptedLLM: the script has no reply for run %d", len(llm.runs))
            return
        t = 0.0
        for t, f in self._timeline(reply):
            self._at(t, f, DOWN)
        if reply.tool_calls:
            self._tool_calls(reply.tool_calls, t)

    def _timeline(self, reply: Reply) -> list[tuple[float, Frame]]:
        """The reply's frames, each with its delay after the request."""
        llm = self.llm
        frames: list[Frame] = [LLMFullResponseStartFrame()]
        if reply.thought:
            frames += [LLMThoughtStartFrame(), LLMThoughtTextFrame(reply.thought), LLMThoughtEndFrame()]
        frames += [LLMTextFrame(tok) for tok in tokens(reply.text)]
        frames.append(LLMFullResponseEndFrame())
        first = llm.first_token_delay if reply.first_token_delay is None else reply.first_token_delay
        gap = llm.token_delay if reply.token_delay is None else reply.token_delay
        t = 0.0
        out: list[tuple[float, Frame]] = []
        for i, f in enumerate(frames):
            if i == 1:
                t += first
            elif i > 1:
                t += gap if isinstance(f, LLMTextFrame) else 0.0
            out.append((t, f))
        return out

    def _tool_calls(self, calls: Sequence[ToolCall], t: float) -> None:
        group = self.llm.new_call_id().replace("call", "group")
        started = []
        by_id: dict[str, ToolCall] = {}
        for c in calls:
            call_id = c.id or self.llm.new_call_id()
            by_id[call_id] = c
            started.append(FunctionCallFromLLM(c.name, call_id, dict(c.arguments)))
        announce = FunctionCallsStartedFrame(tuple(started))
        self._at(t, announce, DOWN)
        self._at(t, announce, UP)
        for fc in started:
            c = by_id[fc.tool_call_id]
            progress = FunctionCallInProgressFrame(
                c.name, fc.tool_call_id, dict(c.arguments), cancel_on_interruption=c.cancel_on_interruption,
                group_id=group,
            )
            self._at(t, progress, DOWN, call=fc.tool_call_id, starts=c)
            self.llm.tool_calls_started += 1
            result = c.handler(c.arguments) if c.handler is not None else c.result
            try:
                done = FunctionCallResultFrame(c.name, fc.tool_call_id, dict(c.arguments), result, run_llm=c.run_llm)
            except InvalidToolCallError as exc:  # a result that is not JSON: the call is answered with the error
                done = FunctionCallResultFrame(c.name, fc.tool_call_id, dict(c.arguments), None, run_llm=c.run_llm,
                                               error=str(exc))
            self._at(t + c.delay, done, DOWN, call=fc.tool_call_id, finishes=True)
            self._at(t + c.delay, done, UP, call=fc.tool_call_id)

    def _at(
        self, delay: float, frame: Frame, direction: Direction, *, call: str | None = None,
        starts: ToolCall | None = None, finishes: bool = False, speculation: int | None = None,
    ) -> None:
        """Emit ``frame`` after ``delay`` seconds (a model answers asynchronously, even when fast)."""
        key = self.next_key = self.next_key + 1
        due = _Due(self.port.time() + delay, frame, direction, call, starts, finishes, speculation)
        heapq.heappush(self.pending, (due.at, key, due))
        self._rearm()

    def _rearm(self) -> None:
        """One timer, for the earliest frame due (re-armed when an earlier one is scripted)."""
        if not self.pending:
            if self.timer is not None:
                self.timer.dispose()
                self.timer = None
            return
        head = self.pending[0][0]
        if self.timer is not None:
            if self.timer_at <= head + _EPS:
                return
            self.timer.dispose()
        self.timer_at = head
        self.timer = self.port.call_later(head - self.port.time(), self._fire)

    def _fire(self) -> None:
        """Emit, in the order scripted, every frame due by now."""
        self.timer = None
        pending = self.pending
        while pending and pending[0][0] <= self.port.time() + _EPS:
            due = heapq.heappop(pending)[2]
            if due.starts is not None and due.call is not None:
                self.calls[due.call] = due.starts
            if due.finishes and due.call is not None:
                self.calls.pop(due.call, None)
            if due.speculation is not None:
                hold = self.hold
                if hold is not None and hold.speculation_id == due.speculation:
                    hold.frames.append(due.frame)
                    if type(due.frame) is LLMTextFrame:
                        hold.tokens += 1
                continue
            self.port.push(due.frame, due.direction)
        self._rearm()
        if not self._live() and (self.ending is not None or self.input_ended):
            self._release_end()

    def cut_off(self, interrupted: bool) -> None:
        """Stop streaming the reply in flight; cancel tool calls that die with an interruption.

        A call already running with ``cancel_on_interruption=False`` survives
        an interruption: its result stays due. A call the reply had not made
        yet (its progress frame still to come) is never made.
        """
        survivors = {call_id for call_id, c in self.calls.items() if interrupted and not c.cancel_on_interruption}
        # A held reply is nobody's output yet: its own withdrawal (or release) decides what becomes of it.
        self.pending = [p for p in self.pending if p[2].speculation is not None
                        or (p[2].call in survivors and p[2].starts is None)]
        heapq.heapify(self.pending)
        for call_id, c in list(self.calls.items()):
            if call_id in survivors:
                continue
            del self.calls[call_id]
            cancel = FunctionCallCancelFrame(c.name, call_id)
            self.port.push(cancel, DOWN)
            self.port.push(cancel, UP)
        self._rearm()

    # -- summaries ----------------------------------------------------------------------

    def summarize(self, request: LLMContextSummaryRequestFrame) -> None:
        self.llm.summary_requests.append(request)
        delay = self.llm.summary_delay
        if delay is None:
            return  # a model that never answers
        self._later(delay, lambda: self.port.push(self._summary_result(request), DOWN))

    def _summary_result(self, request: LLMContextSummaryRequestFrame) -> LLMContextSummaryResultFrame:
        from ..summarization import messages_to_summarize

        spec = self.llm.summary
        if callable(spec):
            try:
                text, index = spec(request)
            except Exception as exc:
                return LLMContextSummaryResultFrame(request.request_id, "", -1, error=str(exc) or repr(exc))
            return LLMContextSummaryResultFrame(request.request_id, text, index)
        selection = messages_to_summarize(request.context.messages, request.min_messages_to_keep)
        if selection.empty:
            return LLMContextSummaryResultFrame(request.request_id, "", -1, error="nothing to summarize")
        return LLMContextSummaryResultFrame(request.request_id, str(spec), selection.last_index)

    def _later(self, delay: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` after ``delay`` seconds (not cut off by an interruption: summaries are uninterruptible)."""
        key = self.next_key = self.next_key + 1

        def fire() -> None:
            self.summaries.pop(key, None)
            fn()

        self.summaries[key] = self.port.call_later(delay, fire)
