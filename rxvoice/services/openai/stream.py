"""The streamed answer: one request in flight, read on the loop, its pieces handled in the session.

:func:`read_answer` is the one reader of a chat-completions answer (a
server-sent event stream, or a single JSON completion from servers that
ignore ``stream``), used by the answer and by the summaries.
:class:`Answers` is the session's side: the request in flight, its timeout
on the session's scheduler, what it emits, how it ends (finished, failed,
superseded, cancelled).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
from reactivex import abc

from ...context import ContextSnapshot
from ...errors import ServiceError
from ...frames import (
    Frame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMThoughtEndFrame,
    LLMThoughtStartFrame,
)
from ..chat_stream import ChatStreamDecoder, ToolCallRequest, status_error
from ..sse import DONE, SSEDecoder
from .link import Link

__all__ = ["Answers", "Stream", "read_answer"]

log = logging.getLogger("rxvoice.services.openai")


async def read_answer(
    link: Link, body: dict[str, Any], decoder: ChatStreamDecoder, *,
    opened: Callable[[], None], frames: Callable[[list[Frame]], None], done: Callable[[], None],
    touched: Callable[[], None] = lambda: None, drain: bool = True,
) -> None:
    """POST ``body`` and read the answer (on the loop): ``opened()`` once the server accepted it, ``frames(...)``
    for each decoded piece, ``done()`` at its end; ``touched()`` whenever the server sent something.

    After the stream's ``[DONE]`` the rest of the body is read only to reuse
    the connection (``drain``), or not at all. Raises ``ServiceError`` for an
    HTTP error status, a broken JSON completion, or an answer with no events.
    """
    llm = link.llm
    async with link.http().stream("POST", llm.url, json=body, headers=llm.headers, **llm.request_auth) as response:
        if response.status_code >= 400:
            raise status_error(response.status_code, await response.aread())
        opened()
        if "json" in response.headers.get("content-type", ""):
            payload = await response.aread()
            touched()
            try:
                pieces = decoder.feed_completion(response.json() if payload else None)
            except ValueError:
                raise ServiceError(f"the model server answered with broken JSON: {payload[:200]!r}") from None
            if pieces:
                frames(pieces)
            done()
            return
        sse = SSEDecoder()
        events = 0
        finished = False
        async for line in response.aiter_lines():
            touched()
            event = sse.feed(line)
            if event is None or finished:
                continue
            events += 1
            if event.data == DONE:
                finished = True
                done()
                if not drain:
                    return
                continue
            pieces = decoder.feed(event.data, event.event)
            if pieces:
                frames(pieces)
        event = sse.flush()
        if event is not None and not finished and event.data != DONE:
            events += 1
            pieces = decoder.feed(event.data, event.event)
            if pieces:
                frames(pieces)
        if not events:
            kind = response.headers.get("content-type", "no content type")
            raise ServiceError(f"the model server's answer ({kind}) held no server-sent events")
        if not finished:
            done()


class Stream:
    """One request in flight."""

    __slots__ = ("decoder", "ended", "job", "last", "started", "thinking", "timer")

    def __init__(self, now: float) -> None:
        self.decoder = ChatStreamDecoder()
        self.job: Any = None
        self.timer: abc.DisposableBase | None = None
        self.last = now
        self.started = False
        self.thinking = False
        self.ended = False


class Answers:
    """The session's side of the answer: at most one request in flight, and what comes of it.

    Args:
        link: The session.
        settled: Called in the session when the request in flight is over
            (finished, failed, superseded or cancelled), so what waited
            behind it can go on.
        calls: Called with the tool calls a finished answer asked for.
        push: Where the answer's frames go (default: downstream); a held
            speculative answer pushes into its hold.
        failed: Called with the error of a request that failed (default:
            reported as the stage's error).
    """

    def __init__(self, link: Link, settled: Callable[[], None],
                 calls: Callable[[list[ToolCallRequest]], None], *,
                 push: Callable[[Frame], None] | None = None,
                 failed: Callable[[ServiceError], None] | None = None) -> None:
        self.link = link
        self.current: Stream | None = None
        self._settled = settled
        self._calls = calls
        self._push = push
        self._on_failed = failed

    def go_live(self, settled: Callable[[], None], calls: Callable[[list[ToolCallRequest]], None]) -> None:
        """A held answer was released: from now on it goes downstream, and its tool calls run."""
        self._settled = settled
        self._calls = calls
        self._push = None
        self._on_failed = None

    def _out(self) -> Callable[[Frame], None]:
        return self._push if self._push is not None else self.link.port.push_down

    @property
    def busy(self) -> bool:
        """A request is in flight."""
        return self.current is not None

    def request(self, snapshot: ContextSnapshot) -> None:
        """Answer ``snapshot`` (a newer context supersedes the answer in flight)."""
        link = self.link
        loop = link.resolve_loop()
        if loop is None:
            return
        body = link.llm.request_body(snapshot)
        self.end()
        self._settled()
        port = link.port
        stream = self.current = Stream(port.time())
        timeout = link.llm.timeout
        if timeout is not None:
            stream.timer = link.later(timeout, partial(self._check_timeout, stream))
        stream.job = link.spawn(loop, self._run(stream, body))

    async def _run(self, stream: Stream, body: dict[str, Any]) -> None:
        """The request (on the loop, off the session): every result re-enters through the gate."""
        link = self.link
        enter = link.enter
        clock = link.port.time

        def touched() -> None:
            stream.last = clock()

        def done() -> None:
            stream.ended = True
            enter(partial(self._finished, stream))

        try:
            await read_answer(
                link, body, stream.decoder, opened=lambda: enter(partial(self._opened, stream)),
                frames=lambda frames: enter(partial(self._emit, stream, frames)), done=done, touched=touched,
            )
        except asyncio.CancelledError:
            raise
        except ServiceError as exc:
            if not stream.ended:
                enter(partial(self._failed, stream, exc))
        except httpx.HTTPError as exc:
            if not stream.ended:
                error = ServiceError(f"the connection to the model server failed: {exc!r}", retryable=True)
                enter(partial(self._failed, stream, error))
        except Exception as exc:
            log.exception("%s: the request failed unexpectedly", link.llm.name)
            if not stream.ended:
                enter(partial(self._failed, stream, ServiceError(f"the request failed: {exc!r}")))

    # -- its results (inside the session) ---------------------------------------------------------

    def _opened(self, stream: Stream) -> None:
        if stream is self.current:
            stream.started = True
            self._out()(LLMFullResponseStartFrame())

    def _emit(self, stream: Stream, frames: list[Frame]) -> None:
        if stream is not self.current:
            return  # cancelled or superseded: nothing more from it
        push = self._out()
        for f in frames:
            t = type(f)
            if t is LLMThoughtStartFrame:
                stream.thinking = True
            elif t is LLMThoughtEndFrame:
                stream.thinking = False
            push(f)

    def _close_response(self, stream: Stream) -> None:
        if stream.started:
            push = self._out()
            if stream.thinking:
                push(LLMThoughtEndFrame())
            push(LLMFullResponseEndFrame())

    def _finished(self, stream: Stream) -> None:
        if stream is not self.current:
            return
        self.current = None
        if stream.timer is not None:
            stream.timer.dispose()
        if not stream.started:
            stream.started = True
            self._out()(LLMFullResponseStartFrame())
        self._close_response(stream)
        decoder = stream.decoder
        llm = self.link.llm
        if decoder.finish_reason not in (None, "stop", "tool_calls", "function_call"):
            log.info("%s: the answer ended with finish_reason=%r", llm.name, decoder.finish_reason)
        if decoder.usage is not None:
            self.link.event("on_usage", decoder.usage)
        if decoder.has_tool_calls:
            self._calls(decoder.tool_calls(llm.new_call_id))
        self._settled()

    def _failed(self, stream: Stream, error: ServiceError) -> None:
        if stream is not self.current:
            return
        self.drop()
        if self._on_failed is not None:
            self._on_failed(error)
        else:
            self.link.failed(error, "the request")
        self._close_response(stream)
        self._settled()

    def _check_timeout(self, stream: Stream) -> None:
        timeout = self.link.llm.timeout
        if stream is not self.current or timeout is None:
            return
        port = self.link.port
        remaining = timeout - (port.time() - stream.last)
        if remaining > 1e-3:
            stream.timer = self.link.later(remaining, partial(self._check_timeout, stream))
            return
        waited = "to start answering" if not stream.started else "for the next piece of the answer"
        self._failed(stream, ServiceError(
            f"the model server took more than {timeout:g} s {waited}; the request was cancelled", retryable=True
        ))

    # -- ending it ----------------------------------------------------------------------------------

    def drop(self) -> Stream | None:
        """Cancel the request in flight: its connection is closed, nothing more of it is emitted."""
        stream = self.current
        if stream is None:
            return None
        self.current = None
        if stream.timer is not None:
            stream.timer.dispose()
        if stream.job is not None:
            stream.job.cancel()
        return stream

    def end(self) -> None:
        """A newer context supersedes the answer in flight: cancel it and close what it opened."""
        stream = self.drop()
        if stream is not None:
            self._close_response(stream)
