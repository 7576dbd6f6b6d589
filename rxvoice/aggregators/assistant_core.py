"""The assistant side's decisions: bot turns, what they write, tool calls, model re-runs.

The model's streamed text is gathered by the shell (appending a token is
not a decision); this core decides everything else: when a bot turn opens
and closes, what is written to the conversation, how tool calls are
recorded, when a tool result re-runs the model, and what is reported. It
keeps one session's :class:`AssistantState` (mutable, never shared) and
does what it decides through calls on an :class:`AssistantPort`, which a
test records and the stage's shell carries out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

from ..context import IN_PROGRESS, LLMContext, LLMSpecificMessage
from ..frames import (
    DOWN,
    UP,
    BotBackchannelFrame,
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
from ..text.parts import concatenate
from .context_writes import context_update, tool_choice_update, tools_update
from .reports import (
    EVENT_ASSISTANT_BACKCHANNEL,
    EVENT_ASSISTANT_THOUGHT,
    EVENT_ASSISTANT_TURN_STARTED,
    EVENT_ASSISTANT_TURN_STOPPED,
    AssistantThought,
    AssistantTurnStopped,
    iso8601,
)

__all__ = [
    "ASSISTANT_EVENTS",
    "CANCELLED",
    "COMPLETED",
    "DEFAULT_MARKERS",
    "AssistantCore",
    "AssistantPort",
    "AssistantState",
    "CallInfo",
    "strip_markers",
]

ASSISTANT_EVENTS = (EVENT_ASSISTANT_TURN_STARTED, EVENT_ASSISTANT_TURN_STOPPED, EVENT_ASSISTANT_THOUGHT,
                    EVENT_ASSISTANT_BACKCHANNEL)
"""The events of the assistant half of a pair (plus ``on_error``)."""

COMPLETED = "COMPLETED"
"""The result written for a tool call that finished without returning anything."""

CANCELLED = "CANCELLED"
"""The result written for a tool call that was cancelled (or cut off by an interruption)."""

DEFAULT_MARKERS = ("●", "◐", "○", "✓")
"""Turn-completion markers a model may emit; kept in the context, stripped from reports."""

ASYNC_STARTED = "The tool call has started and is running in the background; its result will follow."
ASYNC_CANCELLED = "CANCELLED: this tool call was cancelled before it returned a result"



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


class CallInfo(NamedTuple):
    """A tool call in progress."""

    name: str
    cancel_on_interruption: bool
    group_id: str | None


class AssistantState:
    """Everything one session's assistant side remembers between frames (mutable, never shared)."""

    __slots__ = (
        "bot_speaking", "calls", "markers", "owed", "push_on_bot_stopped", "started_at", "thought_append",
        "thought_at", "thought_llm", "user_speaking",
    )

    def __init__(self) -> None:
        self.started_at: float | None = None
        self.markers: set[str] = set(DEFAULT_MARKERS)
        self.calls: dict[str, CallInfo | None] = {}
        """Tool calls announced (``None``) or in progress, by id."""
        self.user_speaking = False
        self.bot_speaking = False
        self.push_on_bot_stopped = False
        self.owed = False
        self.thought_at: float | None = None
        self.thought_append = False
        self.thought_llm: str | None = None


class AssistantPort(Protocol):
    """What the assistant core asks of its shell."""

    def emit(self, frame: Frame, direction: Direction) -> None:
        """Send a frame."""

    def emit_context(self, direction: Direction = DOWN) -> None:
        """Send the conversation as it stands now."""

    def write(self, op: Callable[[LLMContext], Any]) -> bool:
        """Change the conversation; ``False`` if it refused (reported by the shell)."""

    def listens(self, name: str) -> bool:
        """Whether anyone listens to event ``name``."""

    def event(self, name: str, payload: Any = None) -> None:
        """Raise event ``name``."""

    def text(self) -> list[tuple[str, bool]]:
        """The text gathered for the current bot turn (the shell gathers the model's tokens)."""

    def clear_text(self) -> None:
        """Drop the gathered text (it was written, or the bot was cut off)."""

    def after_write(self, fn: Callable[[], Any]) -> None:
        """Call a tool result's ``on_context_updated`` once the result is in the context."""

    def skip(self, reason: str) -> None:
        """A documented skip: log it, raise ``on_error``."""


class AssistantCore:
    """The assistant aggregator's logic, configured once and shared by every session."""

    handled_types: frozenset[type[Frame]] = frozenset({
        LLMMarkerFrame, LLMMessagesAppendFrame, LLMMessagesUpdateFrame, LLMMessagesTransformFrame,
        LLMSetToolsFrame, LLMSetToolChoiceFrame, LLMFullResponseStartFrame, LLMFullResponseEndFrame,
        TTSStartedFrame, LLMThoughtStartFrame, LLMThoughtEndFrame, LLMAssistantPushAggregationFrame,
        EndFrame, CancelFrame, InterruptionFrame, LLMRunFrame, FunctionCallsStartedFrame,
        FunctionCallInProgressFrame, FunctionCallResultFrame, FunctionCallCancelFrame,
        UserStartedSpeakingFrame, UserStoppedSpeakingFrame, BotStartedSpeakingFrame, BotStoppedSpeakingFrame,
        BotBackchannelFrame,
    })

    def __init__(self, *, tool_change_messages: bool = False) -> None:
        self.tool_change_messages = tool_change_messages

    def initial(self) -> AssistantState:
        """The state a session starts with."""
        return AssistantState()

    def on_frame(self, s: AssistantState, port: AssistantPort, frame: Frame, direction: Direction, now: float) -> None:
        """Handle one frame of a type in :attr:`handled_types`."""
        t = type(frame)
        if t is UserStartedSpeakingFrame or t is UserStoppedSpeakingFrame:
            s.user_speaking = t is UserStartedSpeakingFrame
            port.emit(frame, direction)
        elif t is LLMFullResponseStartFrame:
            s.owed = False
            self._open(s, port, now)
            port.emit(frame, direction)
        elif t is LLMFullResponseEndFrame or t is LLMAssistantPushAggregationFrame or t is EndFrame:
            self._close(s, port, False, now)
            port.emit(frame, direction)
        elif t is InterruptionFrame:
            self._close(s, port, True, now)
            self._cancel_calls_on_interruption(s, port)
            port.clear_text()
            s.push_on_bot_stopped = s.owed = False
            s.thought_at = None
            port.emit(frame, direction)
        elif t is CancelFrame:
            self._close(s, port, True, now)
            port.emit(frame, direction)
        elif t is TTSStartedFrame:
            if frame.append_to_context:  # type: ignore[attr-defined]
                self._open(s, port, now)
            port.emit(frame, direction)
        elif t is LLMMarkerFrame:
            marker = frame.marker  # type: ignore[attr-defined]
            s.markers.add(marker)
            if frame.append_to_context_immediately:  # type: ignore[attr-defined]
                if port.write(lambda c: c.add_assistant_message(marker)):
                    port.emit_context(UP)
            else:
                port.text().append((marker, False))
        elif t is LLMThoughtStartFrame:
            s.thought_at = now
            s.thought_append = frame.append_to_context  # type: ignore[attr-defined]
            s.thought_llm = frame.llm  # type: ignore[attr-defined]
        elif t is LLMThoughtEndFrame:
            pass  # the shell calls on_thought with the gathered thought
        elif t is LLMRunFrame:
            port.emit_context(UP)
        elif t is LLMMessagesAppendFrame:
            port.write(context_update(frame))
            if frame.run_llm:  # type: ignore[attr-defined]
                s.owed = True
            if s.owed:
                self._want_run(s, port)
        elif t is LLMMessagesUpdateFrame or t is LLMMessagesTransformFrame:
            if port.write(context_update(frame)) and getattr(frame, "run_llm", None):
                port.emit_context(UP)
        elif t is LLMSetToolsFrame:
            port.write(tools_update(frame, self.tool_change_messages))  # type: ignore[arg-type]
        elif t is LLMSetToolChoiceFrame:
            port.write(tool_choice_update(frame))  # type: ignore[arg-type]
        elif t is FunctionCallsStartedFrame:
            for call in frame.function_calls:  # type: ignore[attr-defined]
                s.calls.setdefault(call.tool_call_id, None)
        elif t is FunctionCallInProgressFrame:
            self._in_progress(s, port, frame)  # type: ignore[arg-type]
        elif t is FunctionCallResultFrame:
            self._result(s, port, frame)  # type: ignore[arg-type]
        elif t is FunctionCallCancelFrame:
            self._cancelled(s, port, frame)  # type: ignore[arg-type]
        elif t is BotBackchannelFrame:
            # Spoken during the user's turn: no bot turn, nothing written; reported.
            if port.listens(EVENT_ASSISTANT_BACKCHANNEL):
                port.event(EVENT_ASSISTANT_BACKCHANNEL, frame)
            port.emit(frame, direction)
        elif t is BotStartedSpeakingFrame:
            s.bot_speaking = True
            port.emit(frame, direction)
        elif t is BotStoppedSpeakingFrame:
            s.bot_speaking = False
            port.emit(frame, direction)
            if s.push_on_bot_stopped and not s.user_speaking:
                s.push_on_bot_stopped = s.owed = False
                port.emit_context(UP)
        else:
            port.emit(frame, direction)

    def end_of_input(self, s: AssistantState, port: AssistantPort, now: float) -> None:
        """The input completed: like an end frame, without one to pass on."""
        self._close(s, port, False, now)

    def on_thought(self, s: AssistantState, port: AssistantPort, text: str, signature: Any, now: float) -> None:
        """A thought ended with ``text``: record it (if asked to) and report it."""
        started = iso8601(now if s.thought_at is None else s.thought_at)
        if s.thought_append and s.thought_llm:
            message = LLMSpecificMessage(s.thought_llm, {"type": "thought", "text": text, "signature": signature})
            port.write(lambda c: c.add_message(message))
        if port.listens(EVENT_ASSISTANT_THOUGHT):
            port.event(EVENT_ASSISTANT_THOUGHT, AssistantThought(text, started))
        s.thought_at = None
        s.thought_append = False
        s.thought_llm = None

    # -- turns -------------------------------------------------------------------

    def _open(self, s: AssistantState, port: AssistantPort, now: float) -> None:
        if s.started_at is not None:
            return
        if port.listens(EVENT_ASSISTANT_TURN_STARTED):
            port.event(EVENT_ASSISTANT_TURN_STARTED)
        s.started_at = now

    def _close(self, s: AssistantState, port: AssistantPort, interrupted: bool, now: float) -> None:
        """Write the turn's text as one assistant message and report the turn."""
        if s.started_at is None:
            return
        text = concatenate(port.text())
        if text and port.write(lambda c: c.add_assistant_message(text)):
            port.emit_context(DOWN)
            port.emit(LLMContextAssistantTimestampFrame(iso8601(now)), DOWN)
        content = strip_markers(text, frozenset(s.markers)) if s.markers else text
        started = iso8601(s.started_at)
        if port.listens(EVENT_ASSISTANT_TURN_STOPPED):
            port.event(EVENT_ASSISTANT_TURN_STOPPED, AssistantTurnStopped(content, interrupted, started))
        if content:
            turn = LLMContextAssistantTurnFrame(content, started)
            port.emit(turn, DOWN)
            port.emit(turn, UP)
        port.clear_text()
        s.started_at = None
        s.push_on_bot_stopped = False

    # -- tool calls ------------------------------------------------------------------

    def _in_progress(self, s: AssistantState, port: AssistantPort, frame: FunctionCallInProgressFrame) -> None:
        call_id, name = frame.tool_call_id, frame.function_name
        arguments = dict(frame.arguments) if isinstance(frame.arguments, Mapping) else frame.arguments
        if s.calls.get(call_id) is not None:
            return  # already recorded: a repeated frame must not write a second placeholder
        if not port.write(lambda c: c.add_assistant_tool_call(call_id, name, arguments)):
            return
        if frame.cancel_on_interruption:
            port.write(lambda c: c.add_tool_result(call_id, IN_PROGRESS))
        else:
            payload = _async_payload(call_id, "running", ASYNC_STARTED)
            port.write(lambda c: c.add_tool_result(call_id, payload))
        s.calls[call_id] = CallInfo(name, frame.cancel_on_interruption, frame.group_id)

    @staticmethod
    def _siblings_running(calls: Mapping[str, CallInfo | None], call_id: str, group_id: str | None) -> bool:
        for other, info in calls.items():
            if other == call_id:
                continue
            if group_id is None or info is None or info.group_id == group_id:
                return True
        return False

    def _result(self, s: AssistantState, port: AssistantPort, frame: FunctionCallResultFrame) -> None:
        call_id = frame.tool_call_id
        info = s.calls.get(call_id)
        if info is None:
            port.skip(f"a result for tool call {call_id!r}, which is not in progress")
            return
        props = frame.properties
        content = result_text(frame.result)
        if frame.error and content == COMPLETED:
            content = f"ERROR: {frame.error}"
        if props is not None and not props.is_final:
            if content == COMPLETED:
                return
            payload = _async_payload(call_id, "running", "intermediate result", content)
            port.write(lambda c: c.add_developer_message(payload))
        else:
            del s.calls[call_id]
            if info.cancel_on_interruption:
                port.write(lambda c: c.update_tool_result(call_id, content))
            else:
                payload = _async_payload(call_id, "finished", "final result", content)
                port.write(lambda c: c.add_developer_message(payload))
        if props is not None and props.on_context_updated is not None:
            port.after_write(props.on_context_updated)
        if content == COMPLETED and not frame.error:
            run = False
        elif props is not None and props.run_llm is not None:
            run = props.run_llm
        elif frame.run_llm is not None:
            run = frame.run_llm
        else:
            run = not self._siblings_running(s.calls, call_id, info.group_id)
        if run:
            s.owed = True
        if s.owed:
            self._want_run(s, port)

    def _cancelled(self, s: AssistantState, port: AssistantPort, frame: FunctionCallCancelFrame) -> None:
        call_id = frame.tool_call_id
        if call_id not in s.calls:
            return
        info = s.calls.pop(call_id)
        if info is None:
            return
        if info.cancel_on_interruption:
            port.write(lambda c: c.update_tool_result(call_id, CANCELLED))
        else:
            payload = _async_payload(call_id, "finished", "cancelled", ASYNC_CANCELLED)
            port.write(lambda c: c.add_developer_message(payload))
        if frame.run_llm and not self._siblings_running(s.calls, call_id, info.group_id):
            s.owed = True
            self._want_run(s, port)

    def _cancel_calls_on_interruption(self, s: AssistantState, port: AssistantPort) -> None:
        """Calls that die with an interruption are marked CANCELLED now, so none stays in progress forever."""
        if not s.calls:
            return
        kept: dict[str, CallInfo | None] = {}
        for call_id, info in s.calls.items():
            if info is None:
                continue  # announced, never started: nothing was written
            if info.cancel_on_interruption:
                port.write(_cancel_write(call_id))
            else:
                kept[call_id] = info
        s.calls = kept

    def _want_run(self, s: AssistantState, port: AssistantPort) -> None:
        """Re-run the model now, or as soon as nobody is speaking."""
        if s.user_speaking:
            return  # owed: the user's own turn will run the model, or the next result will
        if s.bot_speaking:
            s.push_on_bot_stopped = True
            return
        port.emit_context(UP)
        s.owed = s.push_on_bot_stopped = False


def _cancel_write(call_id: str) -> Callable[[LLMContext], Any]:
    return lambda c: c.update_tool_result(call_id, CANCELLED)
