"""A model stage for OpenAI-compatible chat-completions servers, streamed over HTTP.

:class:`OpenAILLM` stands where :class:`~rxvoice.testing.ScriptedLLM` does
(between the user and assistant aggregators) and answers each
``LLMContextFrame``, whichever way it travels, with a streaming
``POST /chat/completions``. The request runs in a task on the asyncio loop,
off the session; every piece of the answer re-enters the session through its
gate, so the stage's handler still sees one input at a time and an
interruption, handled in the session, is always in time to drop what the
cancelled stream would have said.

Requires an asyncio loop: run the pipeline with :func:`rxvoice.pipeline.arun`,
or subscribe it with ``scheduler=loop_scheduler(loop)`` (then frames may enter
from any thread), or pass ``loop=``. Install with ``pip install
'rxvoice[openai]'``.

What comes out, downstream: ``LLMFullResponseStartFrame`` once the server
accepted the request, ``LLMThoughtStartFrame``/``LLMThoughtTextFrame``/
``LLMThoughtEndFrame`` when the server streams reasoning, one
``LLMTextFrame`` per content delta, ``LLMFullResponseEndFrame``; then, for
tool calls, ``FunctionCallsStartedFrame`` (both ways),
``FunctionCallInProgressFrame`` per call and, as each handler returns,
``FunctionCallResultFrame`` (both ways). The assistant aggregator writes the
results and sends the context back up, which runs the model again. A
``LLMContextSummaryRequestFrame`` (from the summarizer) is answered with an
``LLMContextSummaryResultFrame`` downstream.

Data and control frames that arrive downstream while an answer streams wait
behind it (they came after the context, so they leave after the answer);
system frames pass at once. An interruption drops the held frames that are
interruptible, as Pipecat does.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from typing import Any
from urllib.parse import urlsplit

try:
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("rxvoice.services.openai needs httpx: pip install 'rxvoice[openai]'") from exc

from reactivex import abc

from .._seconds import optional_seconds
from ..context import ContextSnapshot
from ..errors import ConfigurationError, InvalidToolCallError, ServiceError
from ..events import EventRegistry
from ..frames import (
    DOWN,
    CancelFrame,
    Direction,
    Frame,
    FrameKind,
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
    LLMTextFrame,
    LLMThoughtEndFrame,
    LLMThoughtStartFrame,
)
from ..pipeline.processor import EventfulProcessor, Port
from ..summarization import format_transcript, messages_to_summarize
from ._http import split_credentials
from ._jobs import Job, running_loop, scheduler_loop
from .chat_stream import ChatStreamDecoder, ToolCallRequest, status_error
from .functions import Function, FunctionHandler, as_function, functions_of
from .sse import DONE, SSEDecoder

__all__ = ["DEFAULT_BASE_URL", "OPENAI_EVENTS", "OpenAILLM"]

log = logging.getLogger("rxvoice.services.openai")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when neither ``base_url`` nor ``OPENAI_BASE_URL`` says otherwise."""

OPENAI_EVENTS = ("on_error", "on_usage")
"""The stage's events: ``on_error`` (every reported error) and ``on_usage`` (the server's token counts)."""

_RESERVED = frozenset({"messages", "stream"})
_DEVELOPER_ROLES = frozenset({"developer", "system", "user"})


def _check_seconds(name: str, value: object) -> float | None:
    return optional_seconds(value, name, positive=True)


class OpenAILLM(EventfulProcessor):
    """A streaming model stage for OpenAI's chat-completions API and the servers that speak it.

    Args:
        model: The model name sent with each request.
        base_url: The API's root (``.../v1``); default ``OPENAI_BASE_URL``,
            else OpenAI's.
        api_key: Sent as a bearer token; default ``OPENAI_API_KEY``. Required
            for OpenAI's own host; optional elsewhere (local servers).
        functions: Tool handlers by function name: a callable
            ``handler(arguments) -> result`` (sync or async) or a
            :class:`~rxvoice.services.Function`. Register more with
            :meth:`register_function`.
        params: Extra request fields (``temperature``, ``max_tokens``,
            ``stream_options``, ...).
        headers: Extra HTTP headers.
        timeout: Seconds of scheduler time the stage waits for the server, for
            the answer to start and between two streamed pieces; past it the
            request is cancelled and reported. ``None``: wait forever.
        developer_role: The role developer messages are sent as
            (``"system"`` or ``"user"`` for servers that lack the role).
        client: An ``httpx.AsyncClient`` to use (the caller closes it);
            default: one per session, closed with it.
        loop: The event loop the requests run on; default: the running loop,
            else the session scheduler's.
        scheduler: The scheduler of the stage's timers (default: the session's).

    Events: ``on_error`` (the error), ``on_usage`` (the server's ``usage`` mapping).
    """

    name = "OpenAILLM"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        functions: Mapping[str, Function | FunctionHandler] | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = 30.0,
        developer_role: str = "developer",
        client: httpx.AsyncClient | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"OpenAILLM needs a model name, got {model!r}")
        base = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        parts = urlsplit(base)
        root, auth = split_credentials(parts)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"base_url must be an http(s) URL such as {DEFAULT_BASE_URL}, got {root!r}")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and parts.hostname == "api.openai.com":
            raise ConfigurationError("OpenAI's API needs a key: pass api_key= or set OPENAI_API_KEY")
        if developer_role not in _DEVELOPER_ROLES:
            raise ConfigurationError(
                f"developer_role must be one of {sorted(_DEVELOPER_ROLES)}, got {developer_role!r}"
            )
        extra = dict(params or {})
        reserved = _RESERVED & set(extra)
        if reserved:
            raise ConfigurationError(f"params may not set {sorted(reserved)}: the stage sends them itself")
        self.model = model
        self.base_url = root.rstrip("/")  # credentials written in it go as basic auth, never into a log line
        self.url = f"{self.base_url}/chat/completions"
        self.request_auth: dict[str, Any] = {"auth": httpx.BasicAuth(*auth)} if auth is not None else {}
        """Extra arguments of each request: basic auth from the base URL's credentials, when it had some."""
        self.params = extra
        self.timeout = _check_seconds("timeout", timeout)
        self.developer_role = developer_role
        self.client = client
        self.loop = loop
        self.scheduler = scheduler
        self.headers: dict[str, str] = {"Accept": "text/event-stream"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.headers.update(headers or {})
        self.functions: dict[str, Function] = functions_of(functions)
        self.events = EventRegistry(self, OPENAI_EVENTS)
        self._ids = itertools.count(1)
        self._closing: set[Job] = set()

    def __repr__(self) -> str:
        return f"OpenAILLM({self.model!r}, base_url={self.base_url!r})"

    def register_function(
        self,
        name: str,
        handler: FunctionHandler,
        *,
        cancel_on_interruption: bool = True,
        timeout: float | None = None,
    ) -> None:
        """Let the model call ``name``: ``handler(arguments)`` answers it (Pipecat's spelling)."""
        self.functions[name] = as_function(name, Function(handler, cancel_on_interruption, timeout))

    def request_body(self, snapshot: ContextSnapshot) -> dict[str, Any]:
        """The JSON body sent for ``snapshot``: model, ``stream: true``, params, messages, tools."""
        body: dict[str, Any] = {"model": self.model, "stream": True, **self.params}
        conversation = snapshot.to_openai()
        if self.developer_role != "developer":
            for m in conversation["messages"]:
                if m.get("role") == "developer":
                    m["role"] = self.developer_role
        body.update(conversation)
        return body

    def new_call_id(self) -> str:
        """An id for a tool call the server streamed without one."""
        return f"call_rx{next(self._ids)}"

    def new_group_id(self) -> str:
        """The group id shared by the calls of one response."""
        return f"group_rx{next(self._ids)}"

    def open(self, port: Port) -> _LLMSession:
        port.events = self.events.session(port.time)  # this session's clock and async handlers, not the stage's
        return _LLMSession(self, port)


    async def aclose(self) -> None:
        """Wait until the sessions that ended have closed their connections (await it after a run)."""
        tasks = [j.task for j in list(self._closing) if j.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


class _Stream:
    """One request in flight."""

    __slots__ = ("decoder", "job", "last", "started", "thinking", "timer")

    def __init__(self, now: float) -> None:
        self.decoder = ChatStreamDecoder()
        self.job: Job | None = None
        self.timer: abc.DisposableBase | None = None
        self.last = now
        self.started = False
        self.thinking = False


class _Call:
    """One tool call running."""

    __slots__ = ("function", "job", "request", "timer")

    def __init__(self, request: ToolCallRequest, function: Function) -> None:
        self.request = request
        self.function = function
        self.job: Job | None = None
        self.timer: abc.DisposableBase | None = None


async def _shutdown(jobs: list[Job], client: httpx.AsyncClient | None) -> None:
    """Let cancelled tasks unwind, then close the session's connections."""
    tasks = [j.task for j in jobs if j.task is not None and not j.task.done()]
    if tasks:
        await asyncio.wait(tasks)
    if client is not None:
        await client.aclose()


class _LLMSession:
    """One session of the stage: the stream in flight, running tool calls, frames held behind the answer."""

    def __init__(self, llm: OpenAILLM, port: Port) -> None:
        self.llm = llm
        self.port = port
        self.loop: asyncio.AbstractEventLoop | None = None
        self.client: httpx.AsyncClient | None = None
        self.stream: _Stream | None = None
        self.calls: dict[str, _Call] = {}
        self.held: deque[Frame] = deque()
        self.input_ended = False
        self.summaries: dict[str, tuple[Job, abc.DisposableBase]] = {}
        self.jobs: set[Job] = set()
        self.jobs_lock = threading.RLock()
        self.closed = False

    # -- frames (inside the session) ---------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if t is LLMContextFrame:
            self._request(frame.snapshot)  # type: ignore[attr-defined]
        elif t is InterruptionFrame and direction is DOWN:
            self._interrupt(frame)
        elif t is LLMContextSummaryRequestFrame:
            self._summarize(frame)  # type: ignore[arg-type]
        elif t is CancelFrame:
            self._drop_stream()
            self._cancel_calls(interruption=False)
            self._cancel_summaries()
            self.held.clear()
            self.port.push(frame, direction)
        elif direction is DOWN and self.stream is not None and frame.kind is not FrameKind.SYSTEM:
            self.held.append(frame)  # it came after the context: it leaves after the answer
        else:
            self.port.push(frame, direction)

    def on_input_end(self, direction: Direction) -> float | None:
        if direction is DOWN and self.stream is not None:
            self.input_ended = True  # the answer in flight finishes first (its own timeout bounds it)
            return (self.llm.timeout or 30.0) + 1.0
        return None

    def close(self) -> None:
        self.closed = True
        if self.port.events is not None:
            self.port.events.close()
        with self.jobs_lock:
            jobs = list(self.jobs)
        for job in jobs:
            job.cancel()
        self.stream = None
        self.calls.clear()
        self.summaries.clear()
        self.held.clear()
        client, self.client = self.client, None
        loop = self.loop
        if loop is not None and not loop.is_closed() and (jobs or client is not None):
            closing = self.llm._closing
            shutdown = _shutdown(jobs, client)
            try:
                closing.add(Job(loop, shutdown, closing.discard))
            except RuntimeError:  # the loop closed meanwhile
                shutdown.close()

    # -- requests ------------------------------------------------------------------------

    def _resolve_loop(self) -> asyncio.AbstractEventLoop | None:
        loop = self.loop or self.llm.loop or running_loop() or scheduler_loop(self.port.session.scheduler)
        if loop is None or loop.is_closed() or not loop.is_running():
            self.port.report_error(ConfigurationError(
                "OpenAILLM streams on an asyncio event loop and none is running: run the pipeline with "
                "rxvoice.pipeline.arun(...), subscribe it with scheduler=loop_scheduler(loop), or pass loop="
            ))
            return None
        self.loop = loop
        return loop

    def _spawn(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]) -> Job:
        with self.jobs_lock:
            job = Job(loop, coro, self._forget)
            self.jobs.add(job)
        return job

    def _forget(self, job: Job) -> None:
        with self.jobs_lock:
            self.jobs.discard(job)

    def _request(self, snapshot: ContextSnapshot) -> None:
        loop = self._resolve_loop()
        if loop is None:
            return
        body = self.llm.request_body(snapshot)
        self._end_stream()
        self._release_held()
        port = self.port
        stream = self.stream = _Stream(port.time())
        timeout = self.llm.timeout
        if timeout is not None:
            stream.timer = port.call_later(timeout, partial(self._check_timeout, stream))
        stream.job = self._spawn(loop, self._run_stream(stream, body))

    def _http(self) -> httpx.AsyncClient:
        if self.llm.client is not None:
            return self.llm.client
        if self.client is None:
            # No wall-clock timeouts here: the stage's own timer, on the session's scheduler, decides.
            self.client = httpx.AsyncClient(timeout=httpx.Timeout(None))
        return self.client

    async def _run_stream(self, stream: _Stream, body: dict[str, Any]) -> None:
        """The request (on the loop, off the session): every result re-enters through the gate."""
        llm = self.llm
        clock = self.port.time
        done = False
        try:
            async with self._http().stream("POST", llm.url, json=body, headers=llm.headers,
                                           **llm.request_auth) as response:
                if response.status_code >= 400:
                    raise status_error(response.status_code, await response.aread())
                self._enter(partial(self._opened, stream))
                decoder = stream.decoder
                if "json" in response.headers.get("content-type", ""):
                    payload = await response.aread()
                    stream.last = clock()
                    try:
                        frames = decoder.feed_completion(response.json() if payload else None)
                    except ValueError:
                        raise ServiceError(f"the model server answered with broken JSON: {payload[:200]!r}") from None
                    if frames:
                        self._enter(partial(self._emit, stream, frames))
                else:
                    sse = SSEDecoder()
                    events = 0
                    async for line in response.aiter_lines():
                        stream.last = clock()
                        event = sse.feed(line)
                        if event is None or done:
                            continue  # after [DONE] the rest of the body is read only to reuse the connection
                        events += 1
                        if event.data == DONE:
                            done = True
                            self._enter(partial(self._finished, stream))
                            continue
                        frames = decoder.feed(event.data, event.event)
                        if frames:
                            self._enter(partial(self._emit, stream, frames))
                    event = sse.flush()
                    if event is not None and not done and event.data != DONE:
                        events += 1
                        frames = decoder.feed(event.data, event.event)
                        if frames:
                            self._enter(partial(self._emit, stream, frames))
                    if not events:
                        kind = response.headers.get("content-type", "no content type")
                        raise ServiceError(f"the model server's answer ({kind}) held no server-sent events")
            if not done:
                done = True
                self._enter(partial(self._finished, stream))
        except asyncio.CancelledError:
            raise
        except ServiceError as exc:
            if not done:
                self._enter(partial(self._failed, stream, exc))
        except httpx.HTTPError as exc:
            if not done:
                error = ServiceError(f"the connection to the model server failed: {exc!r}", retryable=True)
                self._enter(partial(self._failed, stream, error))
        except Exception as exc:
            log.exception("%s: the request failed unexpectedly", llm.name)
            if not done:
                self._enter(partial(self._failed, stream, ServiceError(f"the request failed: {exc!r}")))

    def _enter(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the session (through its gate, never overlapping the handler)."""
        if not self.closed:
            self.port.session.run(self._guarded, fn)

    def _guarded(self, fn: Callable[[], None]) -> None:
        if not self.closed:
            self.port.inject_call(fn)

    # -- the stream's results (inside the session) ------------------------------------------

    def _opened(self, stream: _Stream) -> None:
        if stream is self.stream:
            stream.started = True
            self.port.push_down(LLMFullResponseStartFrame())

    def _emit(self, stream: _Stream, frames: list[Frame]) -> None:
        if stream is not self.stream:
            return  # cancelled or superseded: nothing more from it
        push = self.port.push_down
        for f in frames:
            t = type(f)
            if t is LLMThoughtStartFrame:
                stream.thinking = True
            elif t is LLMThoughtEndFrame:
                stream.thinking = False
            push(f)

    def _close_response(self, stream: _Stream) -> None:
        if stream.started:
            if stream.thinking:
                self.port.push_down(LLMThoughtEndFrame())
            self.port.push_down(LLMFullResponseEndFrame())

    def _finished(self, stream: _Stream) -> None:
        if stream is not self.stream:
            return
        self.stream = None
        if stream.timer is not None:
            stream.timer.dispose()
        if not stream.started:
            stream.started = True
            self.port.push_down(LLMFullResponseStartFrame())
        self._close_response(stream)
        decoder = stream.decoder
        if decoder.finish_reason not in (None, "stop", "tool_calls", "function_call"):
            log.info("%s: the answer ended with finish_reason=%r", self.llm.name, decoder.finish_reason)
        if decoder.usage is not None and self.port.events is not None:
            self.port.events.emit("on_usage", decoder.usage)
        if decoder.has_tool_calls:
            self._start_calls(decoder.tool_calls(self.llm.new_call_id))
        self._release_held()

    def _failed(self, stream: _Stream, error: ServiceError) -> None:
        if stream is not self.stream:
            return
        self._drop_stream()
        self.port.report_error(error)
        self._close_response(stream)
        self._release_held()

    def _check_timeout(self, stream: _Stream) -> None:
        timeout = self.llm.timeout
        if stream is not self.stream or timeout is None:
            return
        remaining = timeout - (self.port.time() - stream.last)
        if remaining > 1e-3:
            stream.timer = self.port.call_later(remaining, partial(self._check_timeout, stream))
            return
        waited = "to start answering" if not stream.started else "for the next piece of the answer"
        self._failed(stream, ServiceError(
            f"the model server took more than {timeout:g} s {waited}; the request was cancelled", retryable=True
        ))

    def _drop_stream(self) -> _Stream | None:
        """Cancel the request in flight: its connection is closed, nothing more of it is emitted."""
        stream = self.stream
        if stream is None:
            return None
        self.stream = None
        if stream.timer is not None:
            stream.timer.dispose()
        if stream.job is not None:
            stream.job.cancel()
        return stream

    def _end_stream(self) -> None:
        """A newer context supersedes the answer in flight: cancel it and close what it opened."""
        stream = self._drop_stream()
        if stream is not None:
            self._close_response(stream)

    def _release_held(self) -> None:
        held = self.held
        push = self.port.push_down
        while held and self.stream is None:
            push(held.popleft())
        if self.stream is None and self.input_ended:
            self.input_ended = False
            self.port.finish_input()

    def _interrupt(self, frame: Frame) -> None:
        self._drop_stream()
        self._cancel_calls(interruption=True)
        if self.held:
            self.held = deque(f for f in self.held if not f.interruptible)
        self.port.push_down(frame)
        self._release_held()

    # -- tool calls (inside the session) -----------------------------------------------

    def _start_calls(self, requests: list[ToolCallRequest]) -> None:
        port = self.port
        runnable: list[tuple[ToolCallRequest, Function | None]] = []
        for r in requests:
            if r.error is not None:
                port.report_error(r.error)
            if r.function_name:
                runnable.append((r, self.llm.functions.get(r.function_name)))
        if not runnable:
            return
        group = self.llm.new_group_id()
        announced = FunctionCallsStartedFrame(
            tuple(FunctionCallFromLLM(r.function_name, r.tool_call_id, r.arguments) for r, _ in runnable)
        )
        port.push_down(announced)
        port.push_up(announced)
        for r, fn in runnable:
            port.push_down(FunctionCallInProgressFrame(
                r.function_name, r.tool_call_id, r.arguments,
                cancel_on_interruption=fn.cancel_on_interruption if fn is not None else True, group_id=group,
            ))
        for r, fn in runnable:
            if r.error is not None:
                self._answer(r, None, f"{r.error}; the call was not made")
            elif fn is None:
                log.warning("%s: the model called %r, which has no handler", self.llm.name, r.function_name)
                self._answer(r, None, f"there is no function named {r.function_name!r}; the call was not made")
            else:
                self._run_call(r, fn)

    def _run_call(self, request: ToolCallRequest, function: Function) -> None:
        call = _Call(request, function)
        self.calls[request.tool_call_id] = call
        if function.timeout is not None:
            call.timer = self.port.call_later(function.timeout, partial(self._call_timed_out, call))
        assert self.loop is not None  # a call only follows a stream, which resolved the loop
        call.job = self._spawn(self.loop, self._call_handler(call))

    async def _call_handler(self, call: _Call) -> None:
        """Run one handler on the loop (sync handlers inline, async ones awaited)."""
        try:
            result = call.function.handler(dict(call.request.arguments))
            if inspect.isawaitable(result):
                result = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._enter(partial(self._call_failed, call, exc))
            return
        self._enter(partial(self._call_done, call, result))

    def _take(self, call: _Call) -> bool:
        """Remove ``call`` if it is still running (a cancelled or timed-out call reports nothing)."""
        call_id = call.request.tool_call_id
        if self.calls.get(call_id) is not call:
            return False
        del self.calls[call_id]
        if call.timer is not None:
            call.timer.dispose()
        return True

    def _call_done(self, call: _Call, result: Any) -> None:
        if self._take(call):
            self._answer(call.request, result, None)

    def _call_failed(self, call: _Call, exc: Exception) -> None:
        if not self._take(call):
            return
        name = call.request.function_name
        log.error("%s: function %r raised %r", self.llm.name, name, exc, exc_info=exc)
        self.port.report_error(exc)
        self._answer(call.request, None, f"function {name!r} failed: {type(exc).__name__}: {exc}")

    def _call_timed_out(self, call: _Call) -> None:
        if not self._take(call):
            return
        if call.job is not None:
            call.job.cancel()
        r = call.request
        self.port.report_error(
            ServiceError(f"function {r.function_name!r} took longer than {call.function.timeout:g} s; cancelled"),
            upstream=False,
        )
        cancel = FunctionCallCancelFrame(r.function_name, r.tool_call_id, run_llm=True)
        self.port.push_down(cancel)
        self.port.push_up(cancel)

    def _cancel_calls(self, *, interruption: bool) -> None:
        for call in list(self.calls.values()):
            if interruption and not call.function.cancel_on_interruption:
                continue
            self._take(call)
            if call.job is not None:
                call.job.cancel()
            cancel = FunctionCallCancelFrame(call.request.function_name, call.request.tool_call_id)
            self.port.push_down(cancel)
            self.port.push_up(cancel)

    def _answer(self, request: ToolCallRequest, result: Any, error: str | None) -> None:
        try:
            frame = FunctionCallResultFrame(
                request.function_name, request.tool_call_id, request.arguments, result, error=error
            )
        except InvalidToolCallError as exc:  # the handler returned something that is not JSON: say so, settle the call
            self.port.report_error(exc)
            frame = FunctionCallResultFrame(
                request.function_name, request.tool_call_id, request.arguments, None,
                error=f"function {request.function_name!r} returned a result that is not JSON; the call failed",
            )
        self.port.push_down(frame)
        self.port.push_up(frame)

    # -- summaries (a request from the summarizer, answered downstream) -------------------

    def _summarize(self, request: LLMContextSummaryRequestFrame) -> None:
        """Summarize the older part of the conversation, as the summarizer asked; answer with a result frame."""
        messages = request.context.messages
        selection = messages_to_summarize(messages, request.min_messages_to_keep)
        if selection.empty:
            self._summary_result(request.request_id, "", -1, "there is nothing to summarize yet")
            return
        loop = self._resolve_loop()
        if loop is None:
            self._summary_result(request.request_id, "", -1, "no event loop to run the summary request on")
            return
        transcript = format_transcript(messages[selection.start : selection.end])
        body: dict[str, Any] = {
            "model": self.llm.model, **self.llm.params, "stream": True,
            "max_tokens": request.target_context_tokens,
            "messages": [
                {"role": "system", "content": request.summarization_prompt},
                {"role": "user", "content": "Conversation history:\n" + transcript},
            ],
        }
        rid = request.request_id
        timer = self.port.call_later(request.summarization_timeout, partial(self._summary_timed_out, request))
        job = self._spawn(loop, self._run_summary(rid, selection.last_index, body))
        self.summaries[rid] = (job, timer)

    async def _run_summary(self, request_id: str, last_index: int, body: dict[str, Any]) -> None:
        """The summary request (on the loop): the streamed text gathered, then one result in the session."""
        text: list[str] = []
        try:
            decoder = ChatStreamDecoder()
            async with self._http().stream("POST", self.llm.url, json=body, headers=self.llm.headers,
                                           **self.llm.request_auth) as response:
                if response.status_code >= 400:
                    raise status_error(response.status_code, await response.aread())
                if "json" in response.headers.get("content-type", ""):
                    frames = decoder.feed_completion(json.loads(await response.aread()))
                else:
                    frames = []
                    sse = SSEDecoder()
                    async for line in response.aiter_lines():
                        event = sse.feed(line)
                        if event is not None:
                            if event.data == DONE:
                                break
                            frames += decoder.feed(event.data, event.event)
                text = [f.text for f in frames if type(f) is LLMTextFrame]
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = exc if isinstance(exc, ServiceError) else ServiceError(f"the summary request failed: {exc!r}")
            self._enter(partial(self._summary_done, request_id, "", -1, error))
            return
        self._enter(partial(self._summary_done, request_id, "".join(text).strip(), last_index, None))

    def _summary_done(self, request_id: str, summary: str, last_index: int, error: ServiceError | None) -> None:
        entry = self.summaries.pop(request_id, None)
        if entry is None:
            return  # timed out or cancelled: already answered
        entry[1].dispose()
        if error is not None:
            self.port.report_error(error)
            self._summary_result(request_id, "", -1, str(error))
        elif not summary:
            self._summary_result(request_id, "", -1, "the model returned an empty summary")
        else:
            self._summary_result(request_id, summary, last_index, None)

    def _summary_timed_out(self, request: LLMContextSummaryRequestFrame) -> None:
        entry = self.summaries.pop(request.request_id, None)
        if entry is None:
            return
        entry[0].cancel()
        message = f"the summary took more than {request.summarization_timeout:g} s; cancelled"
        self._summary_result(request.request_id, "", -1, message)

    def _cancel_summaries(self) -> None:
        for job, timer in self.summaries.values():
            job.cancel()
            timer.dispose()
        self.summaries.clear()

    def _summary_result(self, request_id: str, summary: str, last_index: int, error: str | None) -> None:
        self.port.push_down(LLMContextSummaryResultFrame(request_id, summary, last_index, error))
