"""``gate``: a window over a stream, opened and closed by predicates, holding what arrives while shut."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from reactivex import Observable

from ..errors import ConfigurationError
from ._chunk import chunked_
from ._curry import curry_flip

__all__ = ["Gate", "check_predicate", "gate_"]

_T = TypeVar("_T")


def _never(_item: object) -> bool:
    return False


def check_predicate(what: str, fn: object) -> None:
    """Refuse, with a clear error, a predicate that cannot be called (``None`` is fine)."""
    if fn is not None and not callable(fn):
        raise ConfigurationError(f"{what} must be a predicate (a function of one item), got {fn!r}")


class Gate(Generic[_T]):
    """The state of one ``gate`` subscription: open or shut, and what it holds.

    * While shut, ``opens(item)`` is asked: no, and the item is held; yes, and the
      gate opens, that item goes first and everything held follows, in arrival order.
    * While open, ``closes(item)`` is asked: yes, and the gate shuts with that item
      held (it is the first released next time); no, and the item passes.
    * An item ``passes(item)`` accepts goes straight through, whatever the gate
      stands at, and no other predicate is asked about it.

    Items released behind an opener are not asked anything again.

    Args:
        opens: Whether an item opens the gate; ``None``: nothing does.
        closes: Whether an item closes it; ``None``: nothing does.
        start_open: The gate is open before the first item.
        passes: Items that are never held; ``None``: every item takes the gate.
        release_on_flush: Whether :meth:`flush` releases what is held (the
            ``gate`` operator's end of stream), or drops it.

    Examples:
        >>> g = Gate(opens=lambda x: x == "go")
        >>> g.push(1), g.push(2), g.push("go"), g.push(3)
        ((), (), ['go', 1, 2], (3,))
    """

    __slots__ = ("_closes", "_held", "_opens", "_passes", "is_open", "release_on_flush")

    def __init__(
        self,
        opens: Callable[[_T], bool] | None = None,
        closes: Callable[[_T], bool] | None = None,
        *,
        start_open: bool = False,
        passes: Callable[[_T], bool] | None = None,
        release_on_flush: bool = True,
    ) -> None:
        for name, fn in (("opens", opens), ("closes", closes), ("passes", passes)):
            check_predicate(f"the gate's {name}", fn)
        self._opens: Callable[[_T], bool] = opens or _never
        self._closes: Callable[[_T], bool] = closes or _never
        self._passes = passes
        self.is_open = bool(start_open)
        self.release_on_flush = release_on_flush
        self._held: deque[_T] = deque()

    @property
    def held(self) -> Sequence[_T]:
        """What the gate holds, in arrival order."""
        return tuple(self._held)

    def push(self, item: _T) -> Sequence[_T]:
        """Take ``item``; return what goes out now, in order.

        A predicate that raises leaves the gate as it was and the item neither held nor
        passed: the caller decides (the ``gate`` operator fails the stream).
        """
        passes = self._passes
        if passes is not None and passes(item):
            return (item,)
        if self.is_open:
            if self._closes(item):
                self.is_open = False
                self._held.append(item)
                return ()
            return (item,)
        if not self._opens(item):
            self._held.append(item)
            return ()
        self.is_open = True
        out = [item]
        held = self._held
        if held:
            out.extend(held)
            held.clear()
        return out

    def flush(self) -> Sequence[_T]:
        """End of stream: what is held, released in order (or dropped, see ``release_on_flush``)."""
        held = list(self._held)
        self._held.clear()
        return held if self.release_on_flush else ()

    def clear(self) -> int:
        """Drop what is held; return how many items that was."""
        n = len(self._held)
        self._held.clear()
        return n


@curry_flip
def gate_(
    source: Observable[_T],
    opens: Callable[[_T], bool] | None,
    closes: Callable[[_T], bool] | None = None,
    start_open: bool = False,
    passes: Callable[[_T], bool] | None = None,
    release_on_complete: bool = True,
) -> Observable[_T]:
    """Hold items while the gate is shut; release them in order behind the item that opens it.

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> reactivex.of(1, 2, 0, 3).pipe(gate_(lambda x: x == 0), ops.to_list()).run()
        [0, 1, 2, 3]
    """

    def machine() -> Gate[_T]:
        return Gate(opens, closes, start_open=start_open, passes=passes, release_on_flush=release_on_complete)

    return source.pipe(chunked_(machine))
