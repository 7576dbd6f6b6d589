"""A chat-completions server on 127.0.0.1, for tests and offline demos.

It speaks just enough HTTP/1.1 (keep-alive, ``Content-Length`` requests,
chunked server-sent-event answers) to stand in for an OpenAI-compatible
server: each request to ``/v1/chat/completions`` is answered by the next
scripted reply, or by a function of the request. It records every request
with its JSON body, and notices when a client hangs up in the middle of an
answer (:attr:`RecordedRequest.disconnected`), which is how a test proves an
interruption really closed the connection. It never sleeps: pacing, when a
demo wants it, comes from the async iterable of events it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import re
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, TypeAlias

__all__ = [
    "ErrorReply",
    "JSONReply",
    "LoopbackChatServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "StreamReply",
    "chunk",
    "text_chunks",
    "tool_call_chunks",
]

Event: TypeAlias = "Mapping[str, Any] | str"


@dataclass(frozen=True)
class StreamReply:
    """A streamed answer: each event a chunk (sent as JSON) or raw data text.

    Args:
        events: The events, or an async iterable of them (which may pace itself).
        done: End with ``data: [DONE]``.
        hold: After the events, keep the answer open until the client hangs up
            (a model that is slow to go on).
        abort: After the events, drop the connection mid-answer (a broken stream).
        event_names: Send ``event: <name>`` before the data of a mapping whose
            ``"error"`` key is set (some servers name their error events).
    """

    events: Iterable[Event] | AsyncIterable[Event] = ()
    done: bool = True
    hold: bool = False
    abort: bool = False
    event_names: bool = False


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error status with an OpenAI-shaped JSON error body (or ``body`` as given)."""

    status: int = 500
    message: str = "the server had an error"
    body: Mapping[str, Any] | str | None = None

    def payload(self) -> bytes:
        if isinstance(self.body, str):
            return self.body.encode()
        kind = "server_error" if self.status >= 500 else "invalid_request_error"
        body = self.body if self.body is not None else {"error": {"message": self.message, "type": kind, "code": None}}
        return json.dumps(body).encode()


@dataclass(frozen=True)
class JSONReply:
    """A whole JSON answer (as a server that ignores ``stream: true`` sends)."""

    body: Mapping[str, Any]
    status: int = 200

    def payload(self) -> bytes:
        return json.dumps(self.body).encode()


Reply: TypeAlias = "StreamReply | ErrorReply | JSONReply"


@dataclass
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    disconnected: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    """Set when the client hung up before the answer was complete."""


Responder: TypeAlias = Callable[[RecordedRequest], "Reply | Awaitable[Reply]"]


def chunk(delta: Mapping[str, Any], finish_reason: str | None = None, *, model: str = "loopback") -> dict[str, Any]:
    """One ``chat.completion.chunk`` carrying ``delta``."""
    return {
        "id": "chatcmpl-loopback", "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish_reason}],
    }


def text_chunks(text: str, *, thought: str | None = None, finish: bool = True) -> list[dict[str, Any]]:
    """The chunks of a streamed text answer (a word per chunk), after an optional streamed thought."""
    out = [chunk({"role": "assistant", "content": ""})]
    if thought:
        out += [chunk({"reasoning_content": w}) for w in re.findall(r"\s*\S+", thought)]
    out += [chunk({"content": w}) for w in re.findall(r"\s*\S+", text)]
    if finish:
        out.append(chunk({}, "stop"))
    return out


def tool_call_chunks(
    calls: Sequence[tuple[str, str, str]], *, text: str = "", pieces: int = 3
) -> list[dict[str, Any]]:
    """The chunks of an answer making tool calls ``(id, name, arguments_json)``, arguments cut in ``pieces``."""
    out = text_chunks(text, finish=False) if text else [chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        out.append(chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                           "function": {"name": name, "arguments": ""}}]}))
        step = max(1, -(-len(arguments) // max(1, pieces)))
        for i in range(0, len(arguments), step):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i:i + step]}}]}))
    out.append(chunk({}, "tool_calls"))
    return out


class LoopbackChatServer:
    """A scripted chat-completions server on ``127.0.0.1`` (an ephemeral port).

    Args:
        replies: Replies in request order, or ``responder(request)`` returning
            one (or an awaitable of one). When the script runs out, requests
            get HTTP 500.

    Use it as ``async with LoopbackChatServer([...]) as server:`` and point a
    client at :attr:`base_url`.
    """

    def __init__(self, replies: Sequence[Reply] | Responder) -> None:
        self._replies = replies
        self._next = 0
        self.requests: list[RecordedRequest] = []
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def base_url(self) -> str:
        """The API root to give a client (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> LoopbackChatServer:
        """Listen on an ephemeral port of 127.0.0.1."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        """Stop listening and drop every open connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> LoopbackChatServer:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # -- HTTP ---------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            prefix: bytes | None = b""
            while prefix is not None:
                request = await self._read_request(reader, prefix)
                if request is None:
                    break
                self.requests.append(request)
                prefix = await self._answer(request, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader, prefix: bytes) -> RecordedRequest | None:
        try:
            head = prefix + await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        return RecordedRequest(method, path, headers, body)

    async def _reply_for(self, request: RecordedRequest) -> Reply:
        if not request.path.rstrip("/").endswith("/chat/completions") or request.method != "POST":
            return ErrorReply(404, f"no route for {request.method} {request.path}")
        if callable(self._replies):
            reply = self._replies(request)
            return await reply if inspect.isawaitable(reply) else reply
        if self._next >= len(self._replies):
            return ErrorReply(500, "the loopback server's script has no more replies")
        reply = self._replies[self._next]
        self._next += 1
        return reply

    async def _answer(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bytes | None:
        """Send the reply; what the client already sent of its next request, or ``None`` when the connection is over."""
        reply = await self._reply_for(request)
        if isinstance(reply, ErrorReply | JSONReply):
            payload = reply.payload()
            reason = HTTPStatus(reply.status).phrase if reply.status in HTTPStatus._value2member_map_ else "Error"
            writer.write(
                f"HTTP/1.1 {reply.status} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload
            )
            await writer.drain()
            return b""
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        # The client sends nothing while it waits for the answer: end of input means it hung up.
        hangup = asyncio.ensure_future(reader.read(1))
        sender = asyncio.ensure_future(self._send_events(reply, writer))
        prefix = b""
        try:
            await asyncio.wait({hangup, sender}, return_when=asyncio.FIRST_COMPLETED)
            if hangup.done() and hangup.exception() is None and hangup.result():
                prefix = hangup.result()  # the first byte of the next request, sent as the answer ended
                await asyncio.wait({sender})
        finally:
            # asyncio.wait never raises what the awaited tasks raise, so our own cancellation is never swallowed.
            for task in (sender, hangup):
                if not task.done():
                    task.cancel()  # a cancelled read leaves the buffer alone: no byte of a next request is lost
                    await asyncio.wait({task})
        sent = not sender.cancelled() and sender.exception() is None and not reply.abort
        if not sent:
            request.disconnected.set()
            return None
        hung_up = not hangup.cancelled() and (hangup.exception() is not None or not hangup.result())
        return None if hung_up else prefix

    async def _send_events(self, reply: StreamReply, writer: asyncio.StreamWriter) -> None:
        async def send(data: str, name: str | None = None) -> None:
            text = (f"event: {name}\n" if name else "") + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"
            payload = text.encode()
            writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            await writer.drain()

        async def each(event: Event) -> None:
            if isinstance(event, str):
                await send(event)
            else:
                name = "error" if reply.event_names and event.get("error") else None
                await send(json.dumps(event), name)

        if isinstance(reply.events, AsyncIterable):
            async for event in reply.events:
                await each(event)
        else:
            for event in reply.events:
                await each(event)
        if reply.abort:
            writer.transport.abort()
            return
        if reply.done:
            await send("[DONE]")
        if reply.hold:
            await asyncio.Event().wait()  # until the client hangs up (or the server closes)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
