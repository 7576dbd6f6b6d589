"""The pure protocol pieces: server-sent events, chunk decoding, tool-call assembly, error mapping."""

from __future__ import annotations

import json

import pytest

from rxvoice import frames as F
from rxvoice.errors import InvalidToolCallError, ServiceError
from rxvoice.services import (
    ChatStreamDecoder,
    SSEDecoder,
    SSEEvent,
    chunk,
    parse_arguments,
    payload_error,
    status_error,
    text_chunks,
    tool_call_chunks,
)


def feed_lines(decoder: SSEDecoder, text: str) -> list[SSEEvent]:
    events = [decoder.feed(line) for line in text.split("\n")]
    return [e for e in events if e is not None]


def test_sse_events_are_split_on_blank_lines_and_multi_line_data_is_joined() -> None:
    """data lines join with newlines; comments, retry and unknown fields are ignored; event and id are kept."""
    d = SSEDecoder()
    text = ": keep-alive\ndata: {\"a\":\ndata:1}\nretry: 10\nfoo: bar\n\nevent: error\nid: 7\ndata: x\n\n\n"
    assert feed_lines(d, text) == [SSEEvent('{"a":\n1}'), SSEEvent("x", "error", "7")]


def test_sse_flush_returns_an_event_the_body_did_not_terminate() -> None:
    """A last event without its blank line is still delivered at the end of the body."""
    d = SSEDecoder()
    assert d.feed("data: [DONE]") is None
    assert d.flush() == SSEEvent("[DONE]")
    assert d.flush() is None


def test_content_deltas_become_text_frames_and_empty_ones_nothing() -> None:
    """Each non-empty content delta is one LLMTextFrame; role-only and usage chunks produce nothing."""
    d = ChatStreamDecoder()
    frames = [f for c in text_chunks("Hello there") for f in d.feed(json.dumps(c))]
    assert frames == [F.LLMTextFrame("Hello"), F.LLMTextFrame(" there")]
    assert d.finish_reason == "stop"
    assert d.feed(json.dumps({"choices": [], "usage": {"total_tokens": 3}})) == []
    assert d.usage == {"total_tokens": 3}


def test_reasoning_deltas_open_and_close_a_thought() -> None:
    """reasoning_content (or reasoning) opens a thought; the first content closes it; finish() closes a dangling one."""
    d = ChatStreamDecoder()
    out = d.feed_chunk(chunk({"reasoning_content": "hmm"})) + d.feed_chunk(chunk({"content": "Yes"}))
    assert [f.name for f in out] == ["LLMThoughtStartFrame", "LLMThoughtTextFrame", "LLMThoughtEndFrame",
                                     "LLMTextFrame"]
    d2 = ChatStreamDecoder()
    d2.feed_chunk(chunk({"reasoning": "so"}))
    assert d2.finish() == [F.LLMThoughtEndFrame()] and d2.finish() == []


def test_tool_call_fragments_are_assembled_by_index() -> None:
    """Fragments keyed by index, arguments concatenated, calls returned in index order."""
    d = ChatStreamDecoder()
    for c in tool_call_chunks([("a", "f", '{"x": 1}'), ("b", "g", "")], pieces=4):
        d.feed_chunk(c)
    calls = d.tool_calls(lambda: "unused")
    assert [(c.tool_call_id, c.function_name, dict(c.arguments), c.error) for c in calls] == [
        ("a", "f", {"x": 1}, None), ("b", "g", {}, None)]
    assert d.finish_reason == "tool_calls"


def test_fragments_without_an_index_and_object_arguments_are_understood() -> None:
    """Servers that omit index (a new id starts a call) or send arguments as an object are read correctly."""
    d = ChatStreamDecoder()
    d.feed_chunk(chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x"'}}]}))
    d.feed_chunk(chunk({"tool_calls": [{"function": {"arguments": ": 2}"}}]}))
    d.feed_chunk(chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": {"y": "é"}}}]}))
    d.feed_chunk(chunk({"tool_calls": [{"index": 5, "function": {"name": "h"}}]}))
    calls = d.tool_calls(iter(["gen_1"]).__next__)
    assert [(c.tool_call_id, c.function_name, dict(c.arguments)) for c in calls] == [
        ("a", "f", {"x": 2}), ("b", "g", {"y": "é"}), ("gen_1", "h", {})]


def test_malformed_or_nameless_tool_calls_carry_an_error() -> None:
    """Broken JSON, a non-object, or no name: the request carries an InvalidToolCallError and empty arguments."""
    d = ChatStreamDecoder()
    d.feed_chunk(chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{oops"}}]}))
    d.feed_chunk(chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "f", "arguments": "[1]"}}]}))
    d.feed_chunk(chunk({"tool_calls": [{"index": 2, "id": "c", "function": {"arguments": "{}"}}]}))
    a, b, c = d.tool_calls(lambda: "x")
    assert isinstance(a.error, InvalidToolCallError) and "not valid JSON" in str(a.error) and a.raw_arguments == "{oops"
    assert isinstance(b.error, InvalidToolCallError) and "JSON object" in str(b.error) and b.arguments == {}
    assert isinstance(c.error, InvalidToolCallError) and c.function_name == "" and "without a function name" in str(
        c.error)


def test_parse_arguments_accepts_blank_as_no_arguments() -> None:
    """Blank arguments mean none; anything else must be a JSON object."""
    assert parse_arguments("  ") == {}
    assert parse_arguments('{"a": [1]}') == {"a": [1]}
    with pytest.raises(InvalidToolCallError):
        parse_arguments('"text"')


def test_error_events_and_non_json_data_raise_service_errors() -> None:
    """An error payload (or event: error) and data that is not JSON both raise ServiceError."""
    d = ChatStreamDecoder()
    with pytest.raises(ServiceError, match="Overloaded") as info:
        d.feed(json.dumps({"error": {"message": "Overloaded", "type": "server_error"}}))
    assert info.value.retryable
    with pytest.raises(ServiceError, match="quota"):
        d.feed(json.dumps({"message": "quota"}), "error")
    with pytest.raises(ServiceError, match="not JSON"):
        d.feed("<html>")
    with pytest.raises(ServiceError, match="list"):
        d.feed("[1]")


@pytest.mark.parametrize(
    ("status", "retryable"), [(400, False), (401, False), (404, False), (408, True), (429, True), (500, True),
                              (503, True)],
)
def test_status_errors_say_whether_a_retry_may_help(status: int, retryable: bool) -> None:
    """Timeouts, rate limits and 5xx are retryable; other client errors are not."""
    error = status_error(status, json.dumps({"error": {"message": "why"}}).encode())
    assert (error.status, error.retryable) == (status, retryable)
    assert str(error) == f"the model server answered HTTP {status}: why"


def test_status_errors_quote_a_body_that_is_not_json() -> None:
    """A plain-text or empty error body is quoted (trimmed) or noted as missing."""
    assert "Bad Gateway" in str(status_error(502, b"<h1>Bad Gateway</h1>"))
    assert "(no message)" in str(status_error(500, b""))


def test_payload_errors_take_a_status_from_an_integer_code() -> None:
    """A mid-stream error whose code is an HTTP status keeps it; a rate-limit type is retryable."""
    assert payload_error({"error": {"message": "m", "code": 503}}).status == 503
    assert payload_error({"error": {"message": "m", "type": "rate_limit_exceeded"}}).retryable
    assert not payload_error({"error": "plain"}).retryable
