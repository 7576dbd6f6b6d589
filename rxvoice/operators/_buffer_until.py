"""``buffer_until``: items gathered into lists, each closed by an item the boundary predicate accepts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from reactivex import Observable

from ._chunk import chunked_
from ._curry import curry_flip

__all__ = ["BufferUntil", "buffer_until_"]

_T = TypeVar("_T")


class BufferUntil(Generic[_T]):
    """The state of one ``buffer_until`` subscription: the items gathered since the last boundary.

    Args:
        boundary: Whether an item closes the list it joins.

    Examples:
        >>> b = BufferUntil(lambda x: x == ".")
        >>> b.push("a"), b.push("."), b.push("b")
        ((), (['a', '.'],), ())
        >>> b.flush()
        (['b'],)
    """

    __slots__ = ("_boundary", "_items")

    def __init__(self, boundary: Callable[[_T], bool]) -> None:
        self._boundary = boundary
        self._items: list[_T] = []

    @property
    def held(self) -> Sequence[_T]:
        """The items gathered so far, not yet emitted."""
        return tuple(self._items)

    def push(self, item: _T) -> tuple[list[_T], ...]:
        """Add ``item``; return the list it closed, if the boundary accepts it.

        The item is kept before the boundary is asked, so a boundary that raises loses nothing.
        """
        items = self._items
        items.append(item)
        if not self._boundary(item):
            return ()
        self._items = []
        return (items,)

    def flush(self) -> tuple[list[_T], ...]:
        """Return what is gathered as a last list (nothing if empty), and start over."""
        items = self._items
        if not items:
            return ()
        self._items = []
        return (items,)


@curry_flip
def buffer_until_(source: Observable[_T], boundary: Callable[[_T], bool]) -> Observable[list[_T]]:
    """Group items into lists, each closed by an item ``boundary`` accepts.

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> reactivex.of("a", ".", "b").pipe(buffer_until_(lambda x: x == "."), ops.to_list()).run()
        [['a', '.'], ['b']]
    """
    return source.pipe(chunked_(lambda: BufferUntil(boundary)))
