"""The tool calls a streamed answer asked for: announced, run on the loop, answered or cancelled in the session.

Each call is announced (``FunctionCallsStartedFrame`` both ways, a
``FunctionCallInProgressFrame`` per call), its handler runs on the loop
(sync handlers inline, async ones awaited), and it ends exactly once: its
result (``FunctionCallResultFrame`` both ways, the assistant aggregator
writes it and runs the model again), its failure (the error as its result),
its timeout (``FunctionCallCancelFrame`` with ``run_llm``) or its
cancellation (an interruption, unless the function says otherwise; a
cancel frame).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from functools import partial
from typing import Any

from reactivex import abc

from ...errors import InvalidToolCallError, ServiceError
from ...frames import (
    FunctionCallCancelFrame,
    FunctionCallFromLLM,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
)
from .._jobs import Job
from ..chat_stream import ToolCallRequest
from ..functions import Function
from .link import Link

__all__ = ["ToolCalls"]

log = logging.getLogger("rxvoice.services.openai")


class _Call:
    """One tool call running."""

    __slots__ = ("function", "job", "request", "timer")

    def __init__(self, request: ToolCallRequest, function: Function) -> None:
        self.request = request
        self.function = function
        self.job: Job | None = None
        self.timer: abc.DisposableBase | None = None


class ToolCalls:
    """The running tool calls of one session (inside the session, but for the handlers themselves)."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.running: dict[str, _Call] = {}

    def start(self, requests: list[ToolCallRequest]) -> None:
        """The answer asked for these calls: announce them and run the ones that can run."""
        link = self.link
        port = link.port
        runnable: list[tuple[ToolCallRequest, Function | None]] = []
        for r in requests:
            if r.error is not None:
                link.failed(r.error, "a tool call")
            if r.function_name:
                runnable.append((r, link.llm.functions.get(r.function_name)))
        if not runnable:
            return
        group = link.llm.new_group_id()
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
                log.warning("%s: the model called %r, which has no handler", link.llm.name, r.function_name)
                self._answer(r, None, f"there is no function named {r.function_name!r}; the call was not made")
            else:
                self._run(r, fn)

    def cancel(self, *, interruption: bool) -> None:
        """Cancel the running calls (on an interruption, those whose function allows it)."""
        port = self.link.port
        for call in list(self.running.values()):
            if interruption and not call.function.cancel_on_interruption:
                continue
            self._take(call)
            if call.job is not None:
                call.job.cancel()
            cancel = FunctionCallCancelFrame(call.request.function_name, call.request.tool_call_id)
            port.push_down(cancel)
            port.push_up(cancel)

    def clear(self) -> None:
        """The session closed (its jobs are cancelled with it)."""
        self.running.clear()

    # -- one call ---------------------------------------------------------------------------------

    def _run(self, request: ToolCallRequest, function: Function) -> None:
        link = self.link
        call = _Call(request, function)
        self.running[request.tool_call_id] = call
        if function.timeout is not None:
            call.timer = link.later(function.timeout, partial(self._timed_out, call))
        assert link.loop is not None  # a call only follows a stream, which resolved the loop
        call.job = link.spawn(link.loop, self._handler(call))

    async def _handler(self, call: _Call) -> None:
        """Run one handler on the loop (sync handlers inline, async ones awaited)."""
        try:
            result = call.function.handler(dict(call.request.arguments))
            if inspect.isawaitable(result):
                result = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.link.enter(partial(self._failed, call, exc))
            return
        self.link.enter(partial(self._done, call, result))

    def _take(self, call: _Call) -> bool:
        """Remove ``call`` if it is still running (a cancelled or timed-out call reports nothing)."""
        call_id = call.request.tool_call_id
        if self.running.get(call_id) is not call:
            return False
        del self.running[call_id]
        if call.timer is not None:
            call.timer.dispose()
        return True

    def _done(self, call: _Call, result: Any) -> None:
        if self._take(call):
            self._answer(call.request, result, None)

    def _failed(self, call: _Call, exc: Exception) -> None:
        if not self._take(call):
            return
        name = call.request.function_name
        log.debug("%s: function %r raised", self.link.llm.name, name, exc_info=exc)
        self.link.failed(exc, f"function {name!r}", wrap=False)  # the application's own exception, as raised
        self._answer(call.request, None, f"function {name!r} failed: {type(exc).__name__}: {exc}")

    def _timed_out(self, call: _Call) -> None:
        if not self._take(call):
            return
        if call.job is not None:
            call.job.cancel()
        r = call.request
        port = self.link.port
        self.link.failed(
            ServiceError(f"function {r.function_name!r} took longer than {call.function.timeout:g} s; cancelled"),
            f"function {r.function_name!r}", upstream=False,
        )
        cancel = FunctionCallCancelFrame(r.function_name, r.tool_call_id, run_llm=True)
        port.push_down(cancel)
        port.push_up(cancel)

    def _answer(self, request: ToolCallRequest, result: Any, error: str | None) -> None:
        port = self.link.port
        try:
            frame = FunctionCallResultFrame(
                request.function_name, request.tool_call_id, request.arguments, result, error=error
            )
        except InvalidToolCallError as exc:  # the handler returned something that is not JSON: say so, settle the call
            self.link.failed(exc, f"function {request.function_name!r}")
            frame = FunctionCallResultFrame(
                request.function_name, request.tool_call_id, request.arguments, None,
                error=f"function {request.function_name!r} returned a result that is not JSON; the call failed",
            )
        port.push_down(frame)
        port.push_up(frame)
