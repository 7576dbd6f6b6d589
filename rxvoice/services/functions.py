"""The functions a model stage may run for the model: handlers and how they behave.

A handler takes the call's arguments (a dict decoded from the model's JSON)
and returns the result, or an awaitable of it. Whatever it returns is
written into the conversation by the assistant aggregator: strings as they
are, anything else as JSON, nothing as ``COMPLETED``. A handler that raises
answers the call with ``ERROR: ...`` so the model can recover.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from .._seconds import optional_seconds
from ..errors import ConfigurationError

__all__ = ["Function", "FunctionHandler", "as_function", "functions_of"]

FunctionHandler: TypeAlias = Callable[[Mapping[str, Any]], Any]
"""``handler(arguments) -> result`` (or an awaitable of it)."""


@dataclass(frozen=True, slots=True)
class Function:
    """A handler and how its calls behave.

    Args:
        handler: ``handler(arguments)`` returning the result, or an awaitable
            of it. A sync handler runs on the event loop: keep it quick, and
            make it ``async`` when it waits on I/O.
        cancel_on_interruption: Whether an interruption cancels a running call
            (``False`` makes it an async call that reports later).
        timeout: Seconds (scheduler time) a call may take; past it the call is
            cancelled and the model re-run. ``None``: no limit.
    """

    handler: FunctionHandler
    cancel_on_interruption: bool = True
    timeout: float | None = None

    def __post_init__(self) -> None:
        if not callable(self.handler):
            raise ConfigurationError(f"a function handler must be callable, got {self.handler!r}")
        optional_seconds(self.timeout, "a function timeout", positive=True)


def as_function(name: str, spec: Function | FunctionHandler) -> Function:
    """``spec`` as a :class:`Function` (a bare callable gets the defaults)."""
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"a function needs a non-empty string name, got {name!r}")
    if isinstance(spec, Function):
        return spec
    if callable(spec):
        return Function(spec)
    raise ConfigurationError(f"function {name!r}: expected a callable or a Function, got {type(spec).__name__}")


def functions_of(functions: Mapping[str, Function | FunctionHandler] | None) -> dict[str, Function]:
    """Validate a name → handler mapping (raises :class:`ConfigurationError`)."""
    if functions is None:
        return {}
    if not isinstance(functions, Mapping):
        raise ConfigurationError(f"functions must map names to handlers, got {type(functions).__name__}")
    return {name: as_function(name, spec) for name, spec in functions.items()}
