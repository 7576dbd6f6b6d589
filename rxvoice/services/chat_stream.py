"""The chat-completions streaming protocol, decoded into rxvoice frames (pure: no I/O, no clock).

A streamed answer is a series of ``chat.completion.chunk`` objects whose
``choices[0].delta`` carries a piece of the reply (``content``), of a
reasoning model's thought (``reasoning_content`` or ``reasoning``, as
DeepSeek, vLLM, OpenRouter and Ollama spell it) or of tool calls
(``tool_calls``: fragments keyed by ``index``, the arguments a JSON string cut
anywhere). :class:`ChatStreamDecoder` turns each chunk into the frames it
means and gathers tool-call fragments; :meth:`ChatStreamDecoder.tool_calls`
then parses them once the stream is over, which is where malformed arguments
are found. :func:`status_error` and :func:`payload_error` turn the server's
complaints into :class:`~rxvoice.errors.ServiceError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidToolCallError, ServiceError
from ..frames import Frame, LLMTextFrame, LLMThoughtEndFrame, LLMThoughtStartFrame, LLMThoughtTextFrame

__all__ = [
    "RETRYABLE_STATUSES",
    "ChatStreamDecoder",
    "ToolCallRequest",
    "parse_arguments",
    "payload_error",
    "status_error",
]

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
"""Statuses below 500 worth retrying (timeouts, conflicts, rate limits); every 5xx is retryable too."""

_RETRYABLE_KINDS = ("server_error", "overloaded", "rate_limit", "timeout", "unavailable", "internal")


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the model asked for, assembled from its fragments.

    ``error`` is set when the call cannot be made as asked (arguments that
    are not a JSON object); the call is then answered with the error instead
    of being run. ``raw_arguments`` is what the model streamed.
    """

    tool_call_id: str
    function_name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""
    error: InvalidToolCallError | None = None


class _Partial:
    """One tool call being streamed (fragments are appended: gathering is not a decision)."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Python's json reads NaN and Infinity; strict JSON has neither


def parse_arguments(raw: str) -> dict[str, Any]:
    """A tool call's arguments as a dict; empty means none. Raises :class:`InvalidToolCallError`."""
    text = raw.strip()
    if not text:
        return {}
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise InvalidToolCallError(f"the arguments are not valid JSON ({exc}): {text[:200]!r}") from exc
    if not isinstance(value, dict):
        raise InvalidToolCallError(f"the arguments must be a JSON object, got {type(value).__name__}: {text[:200]!r}")
    return value


class ChatStreamDecoder:
    """Turns one response's chunks into frames and gathers its tool calls.

    Only the first choice is read (a voice agent asks for one, ``n=1``).
    """

    __slots__ = ("_calls", "finish_reason", "thinking", "usage")

    def __init__(self) -> None:
        self.thinking = False
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self._calls: dict[int, _Partial] = {}

    def feed(self, data: str, event: str = "message") -> list[Frame]:
        """The frames one event's data means. Raises :class:`ServiceError` for an error event or non-JSON data."""
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ServiceError(f"the model server streamed data that is not JSON: {data[:200]!r}") from None
        return self.feed_chunk(chunk, event)

    def feed_chunk(self, chunk: Any, event: str = "message") -> list[Frame]:
        """The frames one decoded chunk means (see :meth:`feed`)."""
        if not isinstance(chunk, Mapping):
            raise ServiceError(f"the model server sent {type(chunk).__name__} where a chunk object belongs")
        if event == "error" or chunk.get("error"):
            raise payload_error(chunk)
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = usage
        choices = chunk.get("choices")
        if not choices or not isinstance(choices, list):
            return []  # e.g. the final usage chunk
        choice = choices[0]
        if not isinstance(choice, Mapping):
            return []
        out: list[Frame] = []
        delta = choice.get("delta")
        if delta is None:
            delta = choice.get("message")  # a server that answered in one piece
        if isinstance(delta, Mapping):
            self._delta(delta, out)
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = str(reason)
        return out

    def feed_completion(self, body: Any) -> list[Frame]:
        """A whole (non-streamed) completion, for servers that ignore ``stream: true``."""
        return self.feed_chunk(body)

    def _delta(self, delta: Mapping[str, Any], out: list[Frame]) -> None:
        thought = delta.get("reasoning_content") or delta.get("reasoning")
        if thought and isinstance(thought, str):
            if not self.thinking:
                self.thinking = True
                out.append(LLMThoughtStartFrame())
            out.append(LLMThoughtTextFrame(thought))
        content = delta.get("content")
        calls = delta.get("tool_calls")
        if self.thinking and (content or calls):
            self.thinking = False
            out.append(LLMThoughtEndFrame())
        if content and isinstance(content, str):
            out.append(LLMTextFrame(content))
        if calls and isinstance(calls, list):
            for fragment in calls:
                if isinstance(fragment, Mapping):
                    self._gather(fragment)

    def _gather(self, fragment: Mapping[str, Any]) -> None:
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # No index (some compatible servers): a new id starts a new call, anything else continues the last.
            new_id = fragment.get("id")
            known = any(p.id == new_id for p in self._calls.values())
            index = len(self._calls) if (new_id and not known) or not self._calls else max(self._calls)
        partial = self._calls.get(index)
        if partial is None:
            partial = self._calls[index] = _Partial()
        call_id = fragment.get("id")
        if call_id and not partial.id:
            partial.id = str(call_id)
        fn = fragment.get("function")
        if isinstance(fn, Mapping):
            name = fn.get("name")
            if name and not partial.name:
                partial.name = str(name)
            args = fn.get("arguments")
            if isinstance(args, str):
                if args:
                    partial.arguments.append(args)
            elif isinstance(args, Mapping):  # a server that sends the arguments as an object
                partial.arguments.append(json.dumps(args, ensure_ascii=False))

    def finish(self) -> list[Frame]:
        """Frames that close what the stream left open (a thought)."""
        if self.thinking:
            self.thinking = False
            return [LLMThoughtEndFrame()]
        return []

    @property
    def has_tool_calls(self) -> bool:
        """Whether any tool-call fragment arrived."""
        return bool(self._calls)

    def tool_calls(self, new_id: Callable[[], str]) -> list[ToolCallRequest]:
        """The streamed tool calls, in index order, each parsed (``new_id`` names a call the server left unnamed)."""
        out: list[ToolCallRequest] = []
        for index in sorted(self._calls):
            p = self._calls[index]
            raw = "".join(p.arguments)
            call_id = p.id or new_id()
            if not p.name:
                error = InvalidToolCallError(f"the model streamed tool call {call_id!r} without a function name")
                out.append(ToolCallRequest(call_id, "", {}, raw, error))
                continue
            try:
                arguments = parse_arguments(raw)
            except InvalidToolCallError as exc:
                error = InvalidToolCallError(f"tool call {call_id!r} to {p.name!r}: {exc}")
                out.append(ToolCallRequest(call_id, p.name, {}, raw, error))
                continue
            out.append(ToolCallRequest(call_id, p.name, arguments, raw))
        return out


def _message_of(body: Any) -> tuple[str, str, Any]:
    """(message, kind, code) from an OpenAI-style error body ``{"error": {"message", "type", "code"}}``."""
    err = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(err, Mapping):
        message = str(err.get("message") or err.get("detail") or json.dumps(err)[:300])
        return message, str(err.get("type") or ""), err.get("code")
    if isinstance(err, str):
        return err, "", None
    if isinstance(body, Mapping) and body.get("message"):
        return str(body["message"]), str(body.get("type") or ""), body.get("code")
    return json.dumps(body)[:300] if body is not None else "", "", None


def status_error(status: int, body: bytes | str) -> ServiceError:
    """The error for an HTTP status of 400 or more, with the server's own message when it sent one."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        message, _kind, _code = _message_of(json.loads(text))
    except ValueError:
        message = text.strip()[:300]
    retryable = status >= 500 or status in RETRYABLE_STATUSES
    return ServiceError(
        f"the model server answered HTTP {status}: {message or '(no message)'}", status=status, retryable=retryable
    )


def payload_error(body: Any) -> ServiceError:
    """The error for an error event in the middle of a stream."""
    message, kind, code = _message_of(body)
    status = code if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599 else None
    hint = f"{kind} {code or ''}".lower()
    retryable = (status is not None and (status >= 500 or status in RETRYABLE_STATUSES)) or any(
        k in hint for k in _RETRYABLE_KINDS
    )
    return ServiceError(f"the model server reported an error mid-stream: {message}", status=status, retryable=retryable)
