"""The assistant side's decisions as a pure step function.

The model's streamed text is gathered by the shell (appending a token is
not a decision); this core decides everything else: when a bot turn opens
and closes, what is written to the conversation, how tool calls are
recorded, when a tool result re-runs the model, and what is reported.
Closing steps receive the gathered text as an argument.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..context import IN_PROGRESS, LLMSpecificMessage
from ..frames import (
    DOWN,
    UP,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    InterruptionFrame,
    LLMAssistantPushAggregationFrame,
    LLMContextAssistantTimestampFrame,
    LLMContextAssistantTurnFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMMarkerFrame,
    LLMMessagesAppendFrame,
    LLMMessagesTransformFrame,
    LLMMessagesUpdateFrame,
    LLMRunFrame,
    LLMSetToolChoiceFrame,
    LLMSetToolsFrame,
    LLMThoughtEndFrame,
    LLMThoughtStartFrame,
    TTSStartedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from ..text.parts import Part, concatenate
from .context_writes import context_update, tool_choice_update, tools_update
from .effects import Broadcast, Emit, EmitContext, Raise, Write
from .reports import AssistantThought, AssistantTurnStopped, iso8601

__all__ = [
    "ASSISTANT_EVENTS",
    "CANCELLED",
    "COMPLETED",
    "DEFAULT_MARKERS",
    "AfterWrite",
    "AssistantCore",
    "AssistantState",
    "CallInfo",
    "ClearText",
    "HoldText",
    "Skip",
    "strip_markers",
]

ASSISTANT_EVENTS = ("on_assistant_turn_started", "on_assistant_turn_stopped", "on_assistant_thought")
"""The events of the assistant half of a pair (plus ``on_error``)."""

COMPLETED = "COMPLETED"
"""The result written for a tool call that finished without returning anything."""

CANCELLED = "CANCELLED"
"""The result written for a tool call that was cancelled (or cut off by an interruption)."""

DEFAULT_MARKERS = ("●", "◐", "○", "✓")
"""Turn-completion markers a model may emit; kept in the context, stripped from reports."""

ASYNC_STARTED = "The tool call has started and is running in the background; its result will follow."
ASYNC_CANCELLED = "CANCELLED: this tool call was cancelled before it returned a result"



def _always(_name: str) -> bool:
    return True

class ClearText(NamedTuple):
    """Drop the text the shell gathered (it was written, or the bot was cut off)."""


class HoldText(NamedTuple):
    """Add a piece to the gathered text (a completion marker written with the reply)."""

    part: Part


class AfterWrite(NamedTuple):
    """Call a tool result's ``on_context_updated`` once the result is in the context."""

    fn: Any


class CallInfo(NamedTuple):
    """A tool call in progress."""

    name: str
    cancel_on_interruption: bool
    group_id: str | None


class AssistantState(NamedTuple):
    """Everything the assistant side remembers between frames."""

    started_at: float | None = None
    markers: frozenset[str] = frozenset(DEFAULT_MARKERS)
    calls: Mapping[str, CallInfo | None] = {}
    user_speaking: bool = False
    bot_speaking: bool = False
    push_on_bot_stopped: bool = False
    owed: bool = False
    thought_at: float | None = None
    thought_append: bool = False
    thought_llm: str | None = None


def strip_markers(text: str, markers: frozenset[str]) -> str:
    """``text`` without completion markers (trimmed only when a marker was removed)."""
    stripped = text
    for m in markers:
        if m in stripped:
            stripped = stripped.replace(m, "")
    return stripped.strip() if stripped != text else text


def _async_payload(tool_call_id: str, status: str, description: str, result: Any = None) -> str:
    payload: dict[str, Any] = {
        "type": "async_tool", "status": status, "tool_call_id": tool_call_id, "description": description,
    }
    if result is not None:
        payload["result"] = result
    return json.dumps(payload, ensure_ascii=False)


def result_text(result: Any) -> str:
    """How a tool's result is written: strings as they are, anything else as JSON; nothing → COMPLETED."""
    if result is None or result == "" or (isinstance(result, dict | list) and not result):
        return COMPLETED
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


_EMPTY_CALLS: Mapping[str, CallInfo | None] = {}


class _Work:
    """The mutable scratch of one step (never escapes it)."""

    __slots__ = AssistantState._fields

    def __init__(self, s: AssistantState) -> None:
        (self.started_at, self.markers, self.calls, self.user_speaking, self.bot_speaking,
         self.push_on_bot_stopped, self.owed, self.thought_at, self.thought_append, self.thought_llm) = s

    def store(self) -> AssistantState:
        return _new(AssistantState, (
            self.started_at, self.markers, self.calls, self.user_speaking, self.bot_speaking,
            self.push_on_bot_stopped, self.owed, self.thought_at, self.thought_append, self.thought_llm,
        ))


_new = tuple.__new__


class AssistantCore:
    """The assistant aggregator's logic, configured once and shared by every session."""

    handled_types: frozenset[type[Frame]] = frozenset({
        LLMMarkerFrame, LLMMessagesAppendFrame, LLMMessagesUpdateFrame, LLMMessagesTransformFrame,
        LLMSetToolsFrame, LLMSetToolChoiceFrame, LLMFullResponseStartFrame, LLMFullResponseEndFrame,
        TTSStartedFrame, LLMThoughtStartFrame, LLMThoughtEndFrame, LLMAssistantPushAggregationFrame,
        EndFrame, CancelFrame, InterruptionFrame, LLMRunFrame, FunctionCallsStartedFrame,
        FunctionCallInProgressFrame, FunctionCallResultFrame, FunctionCallCancelFrame,
        UserStartedSpeakingFrame, UserStoppedSpeakingFrame, BotStartedSpeakingFrame, BotStoppedSpeakingFrame,
    })

    def __init__(self, *, tool_change_messages: bool = False) -> None:
        self.tool_change_messages = tool_change_messages
        # Which events anyone listens to: a report nobody reads is not built (set by the aggregator).
        self.listening: Callable[[str], bool] = _always

    def initial(self) -> AssistantState:
        """The state a session starts with."""
        return AssistantState()

    def on_frame(
        self, s: AssistantState, frame: Frame, direction: Direction, now: float, held: tuple[Part, ...]
    ) -> tuple[AssistantState, list[Any]]:
        """Handle one frame; ``held`` is the text gathered so far."""
        out: list[Any] = []
        t = type(frame)
        # The speaking notices only flip a flag: no scratch needed.
        if t is UserStartedSpeakingFrame or t is UserStoppedSpeakingFrame:
            out.append(Emit(frame, direction))
            return s._replace(user_speaking=t is UserStartedSpeakingFrame), out
        w = _Work(s)
        if t is LLMFullResponseStartFrame:
            w.owed = False
            self._open(w, now, out)
            out.append(Emit(frame, direction))
        elif t is LLMFullResponseEndFrame or t is LLMAssistantPushAggregationFrame or t is EndFrame:
            self._close(w, held, False, now, out)
            out.append(Emit(frame, direction))
        elif t is InterruptionFrame:
            self._close(w, held, True, now, out)
            self._cancel_calls_on_interruption(w, out)
            out.append(ClearText())
            w.push_on_bot_stopped = w.owed = False
            w.thought_at = None
            out.append(Emit(frame, direction))
        elif t is CancelFrame:
            self._close(w, held, True, now, out)
            out.append(Emit(frame, direction))
        elif t is TTSStartedFrame:
            if frame.append_to_context:  # type: ignore[attr-defined]
                self._open(w, now, out)
            out.append(Emit(frame, direction))
        elif t is LLMMarkerFrame:
            marker = frame.marker  # type: ignore[attr-defined]
            w.markers = w.markers | {marker}
            if frame.append_to_context_immediately:  # type: ignore[attr-defined]
                out.append(Write(lambda c: c.add_assistant_message(marker)))
                out.append(EmitContext(UP))
            else:
                out.append(HoldText(Part(marker, False)))
        elif t is LLMThoughtStartFrame:
            w.thought_at = now
            w.thought_append = frame.append_to_context  # type: ignore[attr-defined]
            w.thought_llm = frame.llm  # type: ignore[attr-defined]
        elif t is LLMThoughtEndFrame:
            pass  # the shell calls on_thought with the gathered thought
        elif t is LLMRunFrame:
            out.append(EmitContext(UP))
        elif t is LLMMessagesAppendFrame:
            out.append(context_update(frame))
            if frame.run_llm:  # type: ignore[attr-defined]
                w.owed = True
            if w.owed:
                self._want_run(w, out)
        elif t is LLMMessagesUpdateFrame or t is LLMMessagesTransformFrame:
            out.append(context_update(frame))
            if getattr(frame, "run_llm", None):
                out.append(EmitContext(UP))
        elif t is LLMSetToolsFrame:
            out.append(tools_update(frame, self.tool_change_messages))  # type: ignore[arg-type]
        elif t is LLMSetToolChoiceFrame:
            out.append(tool_choice_update(frame))  # type: ignore[arg-type]
        elif t is FunctionCallsStartedFrame:
            calls = dict(w.calls)
            for call in frame.function_calls:  # type: ignore[attr-defined]
                calls.setdefault(call.tool_call_id, None)
            w.calls = calls
        elif t is FunctionCallInProgressFrame:
            self._in_progress(w, frame, out)  # type: ignore[arg-type]
        elif t is FunctionCallResultFrame:
            self._result(w, frame, out)  # type: ignore[arg-type]
        elif t is FunctionCallCancelFrame:
            self._cancelled(w, frame, out)  # type: ignore[arg-type]
        elif t is BotStartedSpeakingFrame:
            w.bot_speaking = True
            out.append(Emit(frame, direction))
        elif t is BotStoppedSpeakingFrame:
            w.bot_speaking = False
            out.append(Emit(frame, direction))
            if w.push_on_bot_stopped and not w.user_speaking:
                w.push_on_bot_stopped = w.owed = False
                out.append(EmitContext(UP))
        else:
            out.append(Emit(frame, direction))
        return w.store(), out

    def on_thought(self, s: AssistantState, text: str, signature: Any, now: float) -> tuple[AssistantState, list[Any]]:
        """A thought ended with ``text``: record it (if asked to) and report it."""
        out: list[Any] = []
        started = iso8601(now if s.thought_at is None else s.thought_at)
        if s.thought_append and s.thought_llm:
            message = LLMSpecificMessage(s.thought_llm, {"type": "thought", "text": text, "signature": signature})
            out.append(Write(lambda c: c.add_message(message)))
        if self.listening("on_assistant_thought"):
            out.append(Raise("on_assistant_thought", AssistantThought(text, started)))
        return s._replace(thought_at=None, thought_append=False, thought_llm=None), out

    # -- turns -------------------------------------------------------------------

    def _open(self, w: _Work, now: float, out: list[Any]) -> None:
        if w.started_at is not None:
            return
        if self.listening("on_assistant_turn_started"):
            out.append(Raise("on_assistant_turn_started"))
        w.started_at = now

    def _close(self, w: _Work, held: tuple[Part, ...], interrupted: bool, now: float, out: list[Any]) -> None:
        """Write the turn's text as one assistant message and report the turn."""
        if w.started_at is None:
            return
        text = concatenate(held)
        if text:
            out.append(Write(lambda c: c.add_assistant_message(text)))
            out.append(EmitContext(DOWN))
            out.append(Emit(LLMContextAssistantTimestampFrame(iso8601(now)), DOWN))
        content = strip_markers(text, w.markers)
        started = iso8601(w.started_at)
        if self.listening("on_assistant_turn_stopped"):
            out.append(Raise("on_assistant_turn_stopped", AssistantTurnStopped(content, interrupted, started)))
        if content:
            out.append(Broadcast(LLMContextAssistantTurnFrame(content, started)))
        out.append(ClearText())
        w.started_at = None
        w.push_on_bot_stopped = False

    # -- tool calls ------------------------------------------------------------------

    def _in_progress(self, w: _Work, frame: FunctionCallInProgressFrame, out: list[Any]) -> None:
        call_id, name = frame.tool_call_id, frame.function_name
        arguments = dict(frame.arguments) if isinstance(frame.arguments, Mapping) else frame.arguments
        if w.calls.get(call_id) is not None:
            return  # already recorded: a repeated frame must not write a second placeholder
        out.append(Write(lambda c: c.add_assistant_tool_call(call_id, name, arguments)))
        if frame.cancel_on_interruption:
            out.append(Write(lambda c: c.add_tool_result(call_id, IN_PROGRESS)))
        else:
            payload = _async_payload(call_id, "running", ASYNC_STARTED)
            out.append(Write(lambda c: c.add_tool_result(call_id, payload)))
        calls = dict(w.calls)
        calls[call_id] = CallInfo(name, frame.cancel_on_interruption, frame.group_id)
        w.calls = calls

    @staticmethod
    def _siblings_running(calls: Mapping[str, CallInfo | None], call_id: str, group_id: str | None) -> bool:
        for other, info in calls.items():
            if other == call_id:
                continue
            if group_id is None or info is None or info.group_id == group_id:
                return True
        return False

    def _result(self, w: _Work, frame: FunctionCallResultFrame, out: list[Any]) -> None:
        call_id = frame.tool_call_id
        info = w.calls.get(call_id)
        if info is None:
            out.append(_Skip(f"a result for tool call {call_id!r}, which is not in progress"))
            return
        props = frame.properties
        content = result_text(frame.result)
        if frame.error and content == COMPLETED:
            content = f"ERROR: {frame.error}"
        if props is not None and not props.is_final:
            if content == COMPLETED:
                return
            payload = _async_payload(call_id, "running", "intermediate result", content)
            out.append(Write(lambda c: c.add_developer_message(payload)))
        else:
            calls = dict(w.calls)
            del calls[call_id]
            w.calls = calls
            if info.cancel_on_interruption:
                out.append(Write(lambda c: c.update_tool_result(call_id, content)))
            else:
                payload = _async_payload(call_id, "finished", "final result", content)
                out.append(Write(lambda c: c.add_developer_message(payload)))
        if props is not None and props.on_context_updated is not None:
            out.append(AfterWrite(props.on_context_updated))
        if content == COMPLETED and not frame.error:
            run = False
        elif props is not None and props.run_llm is not None:
            run = props.run_llm
        elif frame.run_llm is not None:
            run = frame.run_llm
        else:
            run = not self._siblings_running(w.calls, call_id, info.group_id)
        if run:
            w.owed = True
        if w.owed:
            self._want_run(w, out)

    def _cancelled(self, w: _Work, frame: FunctionCallCancelFrame, out: list[Any]) -> None:
        call_id = frame.tool_call_id
        if call_id not in w.calls:
            return
        info = w.calls[call_id]
        calls = dict(w.calls)
        del calls[call_id]
        w.calls = calls
        if info is None:
            return
        if info.cancel_on_interruption:
            out.append(Write(lambda c: c.update_tool_result(call_id, CANCELLED)))
        else:
            payload = _async_payload(call_id, "finished", "cancelled", ASYNC_CANCELLED)
            out.append(Write(lambda c: c.add_developer_message(payload)))
        if frame.run_llm and not self._siblings_running(w.calls, call_id, info.group_id):
            w.owed = True
            self._want_run(w, out)

    def _cancel_calls_on_interruption(self, w: _Work, out: list[Any]) -> None:
        """Calls that die with an interruption are marked CANCELLED now, so none stays in progress forever."""
        if not w.calls:
            return
        calls: dict[str, CallInfo | None] = {}
        for call_id, info in w.calls.items():
            if info is None:
                continue  # announced, never started: nothing was written
            if info.cancel_on_interruption:
                out.append(_cancel_write(call_id))
            else:
                calls[call_id] = info
        w.calls = calls

    def _want_run(self, w: _Work, out: list[Any]) -> None:
        """Re-run the model now, or as soon as nobody is speaking."""
        if w.user_speaking:
            return  # owed: the user's own turn will run the model, or the next result will
        if w.bot_speaking:
            w.push_on_bot_stopped = True
            return
        out.append(EmitContext(UP))
        w.owed = w.push_on_bot_stopped = False


def _cancel_write(call_id: str) -> Write:
    return Write(lambda c: c.update_tool_result(call_id, CANCELLED))


class _Skip(NamedTuple):
    """A documented skip: log it and raise ``on_error`` (nothing else happens)."""

    reason: str


Skip = _Skip
