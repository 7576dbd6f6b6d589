"""Frozen JSON data: what a snapshot hands out, so nothing anyone was given can change under them.

:class:`FrozenDict` and :class:`FrozenList` compare equal to plain dicts and
lists and serialize with ``json.dumps``, but refuse mutation; :func:`freeze`
makes them, :func:`thaw` makes plain, mutable copies (a request body).
:class:`LLMSpecificMessage` is a provider's own message, frozen the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from ..errors import InvalidMessageError
from .strict import check_json

__all__ = ["FrozenDict", "FrozenList", "LLMSpecificMessage", "freeze", "thaw"]


def _refuse(*_: object, **__: object) -> NoReturn:
    raise TypeError("context snapshots are immutable: write through LLMContext's methods")


class FrozenDict(dict[str, Any]):
    """A dict that refuses mutation: a message nobody can change after the fact."""

    __slots__ = ()
    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))

    def __copy__(self) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]


class FrozenList(list[Any]):
    """A list that refuses mutation."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __copy__(self) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]


def freeze(value: Any) -> Any:
    """A deep, immutable copy of JSON-like data (dicts and lists become frozen)."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, Mapping):
        return FrozenDict((str(k), freeze(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A deep, mutable copy (plain dicts and lists), e.g. for an HTTP request body."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    if isinstance(value, LLMSpecificMessage):
        return LLMSpecificMessage(value.llm, thaw(value.message))
    to_list = getattr(value, "to_list", None)  # a snapshot's Messages
    if callable(to_list):
        return to_list()
    return value


@dataclass(frozen=True, slots=True)
class LLMSpecificMessage:
    """A message only one provider understands (e.g. a reasoning model's thought).

    It travels in the conversation but is left out of other providers'
    requests and of summaries. Its ``message`` is held to strict JSON like
    every other message (:class:`~rxvoice.errors.InvalidMessageError`
    otherwise, here, where it is written).
    """

    llm: str
    message: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.llm, str) or not self.llm:
            raise InvalidMessageError(f"an LLMSpecificMessage needs a provider name (a string), got {self.llm!r}")
        if not isinstance(self.message, Mapping):
            raise InvalidMessageError(
                f"an LLMSpecificMessage for {self.llm!r}: message must be a mapping, got {self.message!r:.60}"
            )
        check_json(self.message, f"an LLMSpecificMessage for {self.llm!r}", "message", InvalidMessageError)
        object.__setattr__(self, "message", freeze(self.message))
