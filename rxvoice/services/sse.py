"""Server-sent events: lines in, events out.

Chat-completions servers stream their answer as server-sent events
(``data: {...}`` lines separated by blank lines, ``data: [DONE]`` at the end).
The decoder follows the HTML specification's parsing rules, so servers that
split one event's data over several lines, name their events
(``event: error``) or send comment keep-alives (``: ping``) are all read
correctly. It is pure: no I/O, no clock, one line at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DONE", "SSEDecoder", "SSEEvent"]

DONE = "[DONE]"
"""The data of the event that ends a chat-completions stream."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its data (lines joined by ``\\n``), its type and its id."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Feed it the body's lines (without line endings); it returns an event when a blank line ends one."""

    __slots__ = ("_data", "_event", "_id")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None

    def feed(self, line: str) -> SSEEvent | None:
        """Take one line; return the event it completes, if any."""
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None  # a comment (servers send them as keep-alives)
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        return None  # "retry" and unknown fields are ignored, as the specification says

    def flush(self) -> SSEEvent | None:
        """The event left pending when the body ended without a final blank line (servers do that)."""
        return self._dispatch()

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent("\n".join(self._data), self._event or "message", self._id)
        self._data = []
        self._event = ""
        return event
