"""The messages of one snapshot: a persistent sequence, so a write costs the same at message 10 and 100,000.

Every write publishes a new snapshot and every earlier snapshot stays as it
was, so the messages are a persistent sequence: blocks of
:data:`BLOCK` messages that never change once full (shared by every
snapshot that holds them), and a short open tail. Appending adds to the tail
(shared too, while nobody grew past it); reopening the end of the
conversation (a user turn that goes on, :meth:`Messages.truncated`) keeps
every full block it does not touch; reading from the end
(``reversed(messages)``) starts where the conversation ends, without a copy.
The running token estimate (:attr:`Messages.tokens`) is one number per
snapshot. So a turn's writes cost what the messages they touch cost, not
the conversation's length (a branch from an old snapshot copies at most one
pointer a block).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Any

from .frozen import thaw
from .tokens import estimate_message_tokens

__all__ = ["BLOCK", "Messages"]

BLOCK = 64
"""Messages a full block holds."""


class Messages(Sequence[Any]):
    """The messages of one snapshot: a read-only sequence of read-only dicts.

    Snapshots share storage with the snapshot they grew from (see the module
    docstring). It compares equal to a list or tuple with the same messages.
    """

    __slots__ = ("_blocks", "_k", "_t", "_tail", "_tokens")

    def __init__(self, items: Iterable[Any] = ()) -> None:
        messages = list(items)
        k = len(messages) // BLOCK
        self._blocks: list[tuple[Any, ...]] = [tuple(messages[i * BLOCK:(i + 1) * BLOCK]) for i in range(k)]
        self._k = k
        self._tail: list[Any] = messages[k * BLOCK:]
        self._t = len(self._tail)
        self._tokens = sum(estimate_message_tokens(m) for m in messages)

    @classmethod
    def _of(cls, blocks: list[tuple[Any, ...]], k: int, tail: list[Any], t: int, tokens: int) -> Messages:
        view = cls.__new__(cls)
        view._blocks = blocks
        view._k = k
        view._tail = tail
        view._t = t
        view._tokens = tokens
        return view

    @property
    def tokens(self) -> int:
        """The estimated tokens of these messages (:func:`rxvoice.summarization.estimate_context_tokens`), O(1)."""
        return self._tokens

    # -- new snapshots ------------------------------------------------------------------------

    def appended(self, *messages: Any) -> Messages:
        """A new sequence with ``messages`` added (sharing storage when nothing grew past this one)."""
        blocks, k, tail, t, tokens = self._blocks, self._k, self._tail, self._t, self._tokens
        if len(tail) != t:  # another snapshot grew this tail: branch (fewer than BLOCK pointers copied)
            tail = tail[:t]
        for m in messages:
            tail.append(m)
            t += 1
            tokens += estimate_message_tokens(m)
            if t == BLOCK:
                if len(blocks) != k:  # another snapshot grew past this one: branch (a pointer a block)
                    blocks = blocks[:k]
                blocks.append(tuple(tail))
                k += 1
                tail, t = [], 0
        return Messages._of(blocks, k, tail, t, tokens)

    def truncated(self, n: int) -> Messages:
        """The first ``n`` messages (costs what the messages dropped cost)."""
        size = len(self)
        if not 0 <= n <= size:
            raise IndexError(f"cannot keep {n} of {size} messages")
        dropped = sum(estimate_message_tokens(self[i]) for i in range(n, size))
        c, r = divmod(n, BLOCK)
        if c < self._k:
            return Messages._of(self._blocks, c, list(self._blocks[c][:r]), r, self._tokens - dropped)
        return Messages._of(self._blocks, self._k, self._tail, r, self._tokens - dropped)

    def replaced(self, index: int, message: Any) -> Messages:
        """A new sequence with the message at ``index`` replaced."""
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("message index out of range")
        old = self[index]
        tokens = self._tokens - estimate_message_tokens(old) + estimate_message_tokens(message)
        c, r = divmod(index, BLOCK)
        if c < self._k:
            blocks = self._blocks[: self._k]
            block = list(blocks[c])
            block[r] = message
            blocks[c] = tuple(block)
            return Messages._of(blocks, self._k, self._tail, self._t, tokens)
        tail = self._tail[: self._t]
        tail[r] = message
        return Messages._of(self._blocks, self._k, tail, self._t, tokens)

    # -- reading ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._k * BLOCK + self._t

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        size = self._k * BLOCK + self._t
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("message index out of range")
        c, r = divmod(index, BLOCK)
        return self._blocks[c][r] if c < self._k else self._tail[r]

    def __iter__(self) -> Iterator[Any]:
        if not self._k:
            tail = self._tail
            return iter(tail) if len(tail) == self._t else islice(tail, self._t)
        return chain(chain.from_iterable(islice(self._blocks, self._k)), islice(self._tail, self._t))

    def __reversed__(self) -> Iterator[Any]:
        tail, blocks = self._tail, self._blocks
        # The list's own reverse iterator (a slice only when another snapshot grew this tail past ours).
        newest: Iterator[Any] = reversed(tail) if len(tail) == self._t else reversed(tail[:self._t])
        if not self._k:
            return newest
        older = chain.from_iterable(map(reversed, map(blocks.__getitem__, range(self._k - 1, -1, -1))))
        return chain(newest, older)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Messages | list | tuple):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))

    def __copy__(self) -> list[Any]:
        return self.to_list()

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return self.to_list()

    def to_list(self) -> list[dict[str, Any]]:
        """Plain, mutable copies of the messages."""
        return [thaw(m) for m in self]

