"""What the parts of a model session (the stream, the tool calls, the summaries) ask of the session."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

import httpx
from reactivex import abc

from ...context import ContextSnapshot
from ...pipeline.processor import Port
from .._jobs import Job
from ..functions import Function

__all__ = ["Link", "Model"]


class Model(Protocol):
    """What the parts read of the stage's configuration (:class:`~rxvoice.services.openai.OpenAILLM`)."""

    @property
    def name(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def request_auth(self) -> Mapping[str, Any]: ...
    @property
    def params(self) -> Mapping[str, Any]: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def functions(self) -> Mapping[str, Function]: ...

    def request_body(self, snapshot: ContextSnapshot) -> dict[str, Any]:
        """The JSON body sent for ``snapshot``."""

    def new_call_id(self) -> str:
        """An id for a tool call the server streamed without one."""

    def new_group_id(self) -> str:
        """The group id shared by the calls of one response."""


class Link(Protocol):
    """One session of :class:`~rxvoice.services.openai.OpenAILLM`, as its parts see it."""

    @property
    def llm(self) -> Model:
        """The stage's configuration."""

    @property
    def port(self) -> Port:
        """The session's port."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop requests run on, once resolved."""

    def enter(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the session (through its gate), from the loop."""

    def spawn(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]) -> Job:
        """Run ``coro`` on the loop, as a job the session cancels when it closes."""

    def resolve_loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop requests run on (``None``: none is running; reported)."""

    def http(self) -> httpx.AsyncClient:
        """The HTTP client of the session."""

    def later(self, seconds: float, fn: Callable[[], Any]) -> abc.DisposableBase:
        """Run ``fn()`` in the session after ``seconds`` of its scheduler's time (the shell's timers)."""

    def failed(self, error: BaseException, what: str, *, upstream: bool = True, wrap: bool = True) -> BaseException:
        """Report work that failed, once (the shell's failure rule); returns the typed error."""

    def event(self, name: str, payload: Any) -> None:
        """Raise the stage's event ``name`` for this session."""
