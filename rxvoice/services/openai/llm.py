"""The model stage's configuration: what to ask, where, how; each session is a :class:`~.session.LLMSession`."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from typing import Any

try:
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("rxvoice.services.openai needs httpx: pip install 'rxvoice[openai]'") from exc

from reactivex import abc

from ..._seconds import optional_seconds
from ...context import ContextSnapshot
from ...errors import ConfigurationError, ServiceError
from ...events import EventRegistry
from ...frames import (
    DOWN,
    UP,
    CancelFrame,
    Direction,
    EagerEndOfTurnCancelFrame,
    Frame,
    FrameKind,
    InterruptionFrame,
    LLMContextFrame,
    LLMContextSummaryRequestFrame,
    LLMSpeculationEndedFrame,
    LLMSpeculativeContextFrame,
    LLMTextFrame,
)
from ...pipeline.processor import EventfulProcessor, Port
from ...pipeline.shell import StageShell
from .._http import endpoint
from .._jobs import Job, running_loop, scheduler_loop
from ..chat_stream import ToolCallRequest
from ..functions import Function, FunctionHandler, as_function, functions_of
from .stream import Answers
from .summaries import Summaries
from .tools import ToolCalls

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

    Speculation: an ``LLMSpeculativeContextFrame`` (sent by a user aggregator
    with ``TurnsConfig(speculate=...)``) is asked beside the answer in
    flight and held: nothing of it goes downstream, and an answer that asks
    for a tool is dropped before any tool starts (``refused``). An
    ``LLMContextFrame`` naming it releases what is held at once (a held
    answer still streaming goes on live); an ``EagerEndOfTurnCancelFrame``
    or a request for another conversation drops it (the connection is
    closed). Each outcome goes upstream as an ``LLMSpeculationEndedFrame``.

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
        root, bearer, auth = endpoint(base_url, api_key)
        if developer_role not in _DEVELOPER_ROLES:
            raise ConfigurationError(
                f"developer_role must be one of {sorted(_DEVELOPER_ROLES)}, got {developer_role!r}"
            )
        extra = dict(params or {})
        reserved = _RESERVED & set(extra)
        if reserved:
            raise ConfigurationError(f"params may not set {sorted(reserved)}: the stage sends them itself")
        self.model = model
        self.base_url = root  # credentials written in it go as basic auth, never into a log line
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
        self.headers.update(bearer)
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
        return _LLMSession(self, port)

    async def aclose(self) -> None:
        """Wait until the sessions that ended have closed their connections (await it after a run)."""
        tasks = [j.task for j in list(self._closing) if j.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


async def _shutdown(jobs: list[Job], client: httpx.AsyncClient | None) -> None:
    """Let cancelled tasks unwind, then close the session's connections."""
    tasks = [j.task for j in jobs if j.task is not None and not j.task.done()]
    if tasks:
        await asyncio.wait(tasks)
    if client is not None:
        await client.aclose()


def _nothing() -> None:
    return None


class _Hold:
    """A speculative answer held: its request, and what it streamed so far."""

    __slots__ = ("answers", "frames", "speculation_id", "tokens")

    def __init__(self, speculation_id: int) -> None:
        self.speculation_id = speculation_id
        self.answers: Answers | None = None
        self.frames: list[Frame] = []
        self.tokens = 0


class _LLMSession:
    """One session of the stage: its answer (:class:`~.stream.Answers`), its tool calls
    (:class:`~.tools.ToolCalls`), its summaries (:class:`~.summaries.Summaries`), and the frames held behind
    the answer; the loop, the HTTP client and the jobs they share."""

    def __init__(self, llm: OpenAILLM, port: Port) -> None:
        self.llm = llm
        self.port = port
        self.shell = StageShell(llm, port, llm.events)  # events, timers, the way back in, failures
        self.loop: asyncio.AbstractEventLoop | None = None
        self.client: httpx.AsyncClient | None = None
        self.held: deque[Frame] = deque()
        self.input_ended = False
        self.jobs: set[Job] = set()
        self.jobs_lock = threading.RLock()
        self.closed = False
        self.tools = ToolCalls(self)
        self.answers = Answers(self, self._release_held, self.tools.start)
        self.summaries = Summaries(self)
        self.hold: _Hold | None = None

    # -- frames (inside the session) ---------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if t is LLMContextFrame:
            hold, sid = self.hold, frame.speculation_id  # type: ignore[attr-defined]
            if hold is not None and sid is not None and sid == hold.speculation_id:
                self._release(hold)
            else:
                self._drop(None, "a request for another conversation came")
                self.answers.request(frame.snapshot)  # type: ignore[attr-defined]
        elif t is LLMSpeculativeContextFrame:
            self._speculate(frame)  # type: ignore[arg-type]
        elif t is EagerEndOfTurnCancelFrame:
            self._drop(frame.speculation_id, frame.reason or "withdrawn")  # type: ignore[attr-defined]
        elif t is InterruptionFrame and direction is DOWN:
            self._interrupt(frame)
        elif t is LLMContextSummaryRequestFrame:
            self.summaries.summarize(frame)  # type: ignore[arg-type]
        elif t is CancelFrame:
            self._drop(None, "the session was cancelled")
            self.answers.drop()
            self.tools.cancel(interruption=False)
            self.summaries.cancel()
            self.held.clear()
            self.port.push(frame, direction)
        elif direction is DOWN and self.answers.busy and frame.kind is not FrameKind.SYSTEM:
            self.held.append(frame)  # it came after the context: it leaves after the answer
        else:
            self.port.push(frame, direction)

    def on_input_end(self, direction: Direction) -> float | None:
        if direction is DOWN and self.answers.busy:
            self.input_ended = True  # the answer in flight finishes first (its own timeout bounds it)
            return (self.llm.timeout or 30.0) + 1.0
        return None

    def _release_held(self) -> None:
        held = self.held
        push = self.port.push_down
        while held and not self.answers.busy:
            push(held.popleft())
        if not self.answers.busy and self.input_ended:
            self.input_ended = False
            self.port.finish_input()

    # -- speculation: a held answer ------------------------------------------------------

    def _speculate(self, frame: LLMSpeculativeContextFrame) -> None:
        self._drop(None, "a newer speculative request came")
        hold = self.hold = _Hold(frame.speculation_id)
        answers = hold.answers = Answers(
            self, _nothing, partial(self._held_calls, hold),
            push=partial(self._held_push, hold), failed=partial(self._held_failed, hold),
        )
        answers.request(frame.snapshot)
        if not answers.busy and self.hold is hold:  # no loop to ask on (reported): nothing is held
            self.hold = None
            self._ended(hold, "failed", "no event loop to ask on")

    def _held_push(self, hold: _Hold, frame: Frame) -> None:
        if self.hold is hold:
            hold.frames.append(frame)
            if type(frame) is LLMTextFrame:
                hold.tokens += 1

    def _held_calls(self, hold: _Hold, requests: list[ToolCallRequest]) -> None:
        """The held answer asks for a tool: it is dropped, and no tool starts (the turn's end asks again)."""
        if self.hold is hold:
            self.hold = None
            self._ended(hold, "refused", "the answer asks for a tool; asked again when the turn ends")

    def _held_failed(self, hold: _Hold, error: ServiceError) -> None:
        if self.hold is hold:
            self.hold = None
            log.info("%s: a speculative request failed (%s)", self.llm.name, error)
            self._ended(hold, "failed", str(error))

    def _release(self, hold: _Hold) -> None:
        """The turn ended on the held words: what is held goes out now; a stream still running goes on live."""
        self.hold = None
        answers = hold.answers
        assert answers is not None
        self.answers.end()  # an older answer in flight is superseded, as by any new request
        push = self.port.push_down
        for f in hold.frames:
            push(f)
        if answers.busy:
            answers.go_live(self._release_held, self.tools.start)
            self.answers = answers
        self._ended(hold, "released", "the turn ended with the same words")
        self._release_held()

    def _drop(self, speculation_id: int | None, reason: str) -> None:
        hold = self.hold
        if hold is None or (speculation_id is not None and speculation_id != hold.speculation_id):
            return
        self.hold = None
        if hold.answers is not None:
            hold.answers.drop()  # its connection is closed: nothing more is paid for
        self._ended(hold, "dropped", reason)

    def _ended(self, hold: _Hold, outcome: str, reason: str) -> None:
        tokens = 0 if outcome == "released" else hold.tokens
        self.port.push(LLMSpeculationEndedFrame(hold.speculation_id, outcome, reason, tokens), UP)

    def _interrupt(self, frame: Frame) -> None:
        self.answers.drop()
        self.tools.cancel(interruption=True)
        if self.held:
            self.held = deque(f for f in self.held if not f.interruptible)
        self.port.push_down(frame)
        self._release_held()

    def close(self) -> None:
        self.closed = True
        self.shell.close()
        with self.jobs_lock:
            jobs = list(self.jobs)
        for job in jobs:
            job.cancel()
        self.answers.current = None
        if self.hold is not None and self.hold.answers is not None:
            self.hold.answers.current = None
        self.hold = None
        self.tools.clear()
        self.summaries.pending.clear()
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

    # -- what the parts share (the Link) -----------------------------------------------------

    def resolve_loop(self) -> asyncio.AbstractEventLoop | None:
        loop = self.loop or self.llm.loop or running_loop() or scheduler_loop(self.port.session.scheduler)
        if loop is None or loop.is_closed() or not loop.is_running():
            self.shell.failed(ConfigurationError(
                "OpenAILLM streams on an asyncio event loop and none is running: run the pipeline with "
                "rxvoice.pipeline.arun(...), subscribe it with scheduler=loop_scheduler(loop), or pass loop="
            ), "streaming")
            return None
        self.loop = loop
        return loop

    def spawn(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]) -> Job:
        with self.jobs_lock:
            job = Job(loop, coro, self._forget)
            self.jobs.add(job)
        return job

    def _forget(self, job: Job) -> None:
        with self.jobs_lock:
            self.jobs.discard(job)

    def http(self) -> httpx.AsyncClient:
        if self.llm.client is not None:
            return self.llm.client
        if self.client is None:
            # No wall-clock timeouts here: the stage's own timer, on the session's scheduler, decides.
            self.client = httpx.AsyncClient(timeout=httpx.Timeout(None))
        return self.client

    def enter(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the session (through its gate, never overlapping the handler)."""
        self.shell.enter(fn)

    def later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        return self.shell.later(seconds, fn)

    def failed(self, error: BaseException, what: str, *, upstream: bool = True, wrap: bool = True) -> BaseException:
        return self.shell.failed(error, what, upstream=upstream, wrap=wrap)

    def event(self, name: str, payload: Any) -> None:
        self.shell.event(name, payload)
