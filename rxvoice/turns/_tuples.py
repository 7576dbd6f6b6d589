"""Building a ``NamedTuple`` state from its fields, without its Python-level ``__new__``.

A ``NamedTuple``'s constructor is a generated Python function that packs its
arguments into a tuple and calls ``tuple.__new__``; :data:`build` is that
``tuple.__new__`` itself, given the class and the fields in order::

    build(WordsState, (speaking, vad_stopped, ...))   # == WordsState(speaking, vad_stopped, ...)

The result is the same value of the same class (no defaults are filled in:
every field is given). It costs about half of ``Cls(...)``, which matters
for the states the turn's hot steps build on every VAD edge and transcript.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

__all__ = ["build"]

T = TypeVar("T")


class _Build(Protocol):
    def __call__(self, cls: type[T], fields: tuple[Any, ...], /) -> T: ...


build: _Build = tuple.__new__  # type: ignore[assignment]
"""``build(Cls, fields)``: the ``NamedTuple`` ``Cls`` with exactly ``fields`` (all of them, in field order)."""
