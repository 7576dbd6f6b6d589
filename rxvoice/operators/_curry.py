"""``curry_flip``: write an operator as ``op_(source, *args)``, use it as ``source.pipe(op_(*args))``.

The same shape as reactivex's private operator modules; reactivex keeps its helper in
``reactivex.internal``, which is not public, so rxvoice carries these few lines itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

__all__ = ["curry_flip"]

_P = ParamSpec("_P")
_A = TypeVar("_A")
_B = TypeVar("_B")


def curry_flip(fun: Callable[Concatenate[_A, _P], _B]) -> Callable[_P, Callable[[_A], _B]]:
    """Move ``fun``'s first argument (the source) to a second, one-argument call.

    Examples:
        >>> @curry_flip
        ... def add(source: int, n: int) -> int:
        ...     return source + n
        >>> add(2)(40)
        42
    """

    @functools.wraps(fun)
    def with_args(*args: _P.args, **kwargs: _P.kwargs) -> Callable[[_A], _B]:
        def on_source(source: _A) -> _B:
            return fun(source, *args, **kwargs)

        return on_source

    return with_args
