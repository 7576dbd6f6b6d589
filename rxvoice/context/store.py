"""The store: one conversation as a ``BehaviorSubject`` of immutable snapshots, written atomically.

Both halves of a pair write to one :class:`LLMContext`. Each write is atomic:
it builds a new :class:`ContextSnapshot` from the current one and publishes
it, so a subscriber (a transcript view, persistence, a test) sees every state
the conversation passed through, and nothing anyone was handed can change
under them. Every write is checked (:mod:`rxvoice.context.messages`,
:mod:`rxvoice.context.tools`) before anything is published.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import reactivex
from reactivex import abc as rx_abc

from .._subjects import ContainedBehaviorSubject
from ..errors import InvalidMessageError, InvalidToolCallError
from .frozen import FrozenDict, LLMSpecificMessage, thaw
from .messages import (
    Message,
    answers_a_call,
    assistant_message,
    check_batch,
    developer_message,
    system_message,
    text_message,
    tool_call_message,
    tool_result_message,
    user_message,
)
from .sequence import Messages
from .strict import has_surrogate
from .tools import ToolsSchema, check_tool_choice, normalize_tools, tool_change_message

__all__ = ["ContextSnapshot", "LLMContext", "reopen_plan"]


def reopen_plan(messages: Sequence[Any], old: str) -> tuple[int, list[Any]] | None:
    """Where the last user message (reading ``old``) is, and what after it stays when that turn reopens.

    Plain assistant messages after it go (a reply nobody heard); anything
    else stays. ``None`` when the turn cannot be reopened in place: ``old``
    is not the last user message (a summary replaced it, someone wrote
    another), or a tool ran since (its call and result must stay together
    and answered).
    """
    later: list[Any] = []
    i = len(messages)
    for m in reversed(messages):
        i -= 1
        if isinstance(m, dict) and m.get("role") == "user":
            if m.get("content") != old:
                return None
            later.reverse()
            if any(isinstance(x, dict) and (x.get("role") == "tool" or x.get("tool_calls")) for x in later):
                return None
            return i, [x for x in later if not (isinstance(x, dict) and x.get("role") == "assistant")]
        later.append(m)
    return None


@dataclass(frozen=True, slots=True)
class ContextSnapshot:
    """The conversation at one instant. ``version`` counts the writes that made it."""

    messages: Messages = field(default_factory=Messages)
    tools: ToolsSchema | None = None
    tool_choice: Any = None
    version: int = 0

    @property
    def tool_names(self) -> frozenset[str]:
        """Names of the standard tools currently advertised."""
        return self.tools.names if self.tools is not None else frozenset()

    def messages_for(self, llm: str = "openai") -> list[dict[str, Any]]:
        """Plain-dict messages for one provider: universal ones plus that provider's own."""
        out: list[dict[str, Any]] = []
        for m in self.messages:
            if isinstance(m, LLMSpecificMessage):
                if m.llm == llm:
                    out.append(thaw(m.message))
            else:
                out.append(thaw(m))
        return out

    def to_openai(self) -> dict[str, Any]:
        """A chat-completions request body's conversation part (plain, mutable data)."""
        body: dict[str, Any] = {"messages": self.messages_for("openai")}
        if self.tools is not None and self.tools.standard:
            body["tools"] = [thaw(t) for t in self.tools.standard] + [
                thaw(t) for t in self.tools.custom.get("openai", ())
            ]
            if self.tool_choice is not None:
                body["tool_choice"] = thaw(self.tool_choice)
        return body

    def find_tool_result(self, tool_call_id: str) -> int:
        """Index of the tool message answering ``tool_call_id``, or -1."""
        i = len(self.messages)
        for m in reversed(self.messages):
            i -= 1
            if isinstance(m, Mapping) and m.get("role") == "tool" and m.get("tool_call_id") == tool_call_id:
                return i
        return -1


def _frozen_messages(messages: Iterable[Any]) -> Messages:
    return Messages(check_batch((), messages))


def _system_prompt(messages: Sequence[Any]) -> Any:
    """The conversation's system prompt: its first message when that is a system message, else ``None``."""
    if messages:
        first = messages[0]
        if isinstance(first, Mapping) and first.get("role") == "system":
            return first
    return None


class LLMContext:
    """One conversation, shared by the user and assistant aggregators of a pair.

    Every method that changes the conversation is one atomic write that
    publishes a new :class:`ContextSnapshot`. Subscribe to :attr:`snapshots`
    (or call :meth:`subscribe`) to see each one as it is made; the current one
    is replayed on subscription.
    """

    def __init__(
        self,
        messages: Iterable[Mapping[str, Any] | LLMSpecificMessage] | None = None,
        tools: Any = None,
        tool_choice: Any = None,
    ) -> None:
        snapshot = ContextSnapshot(
            _frozen_messages(messages or ()), normalize_tools(tools), check_tool_choice(tool_choice)
        )
        self._subject: ContainedBehaviorSubject[ContextSnapshot] = ContainedBehaviorSubject(snapshot, "an LLMContext")
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        snap = self.snapshot
        return f"<LLMContext v{snap.version}: {len(snap.messages)} messages>"

    # -- reading -----------------------------------------------------------

    @property
    def snapshot(self) -> ContextSnapshot:
        """The conversation as it stands."""
        return self._subject.value

    @property
    def messages(self) -> Messages:
        """The current messages (a read-only list of read-only dicts)."""
        return self._subject.value.messages

    @property
    def tools(self) -> ToolsSchema | None:
        """The tools currently advertised, or ``None``."""
        return self._subject.value.tools

    @property
    def tool_choice(self) -> Any:
        """The current tool choice, or ``None`` (the provider's default)."""
        return self._subject.value.tool_choice

    @property
    def snapshots(self) -> reactivex.Observable[ContextSnapshot]:
        """Every snapshot from now on, starting with the current one."""
        return self._subject

    def subscribe(
        self,
        on_next: Callable[[ContextSnapshot], None] | rx_abc.ObserverBase[ContextSnapshot] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        on_completed: Callable[[], None] | None = None,
    ) -> rx_abc.DisposableBase:
        """Shorthand for ``context.snapshots.subscribe(...)``."""
        return self._subject.subscribe(on_next, on_error, on_completed)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    # -- the one write primitive -------------------------------------------

    def update(self, change: Callable[[ContextSnapshot], ContextSnapshot | None]) -> ContextSnapshot:
        """Apply ``change`` to the current snapshot atomically and publish the result.

        ``change`` returns the new snapshot, or ``None`` to leave the
        conversation as it is (nothing is published then).
        """
        with self._lock:
            current = self._subject.value
            new = change(current)
            if new is None or new is current:
                return current
            # Stamp the version without building a second snapshot.
            object.__setattr__(new, "version", current.version + 1)
            self._subject.put(new)
            return new

    # -- writes ------------------------------------------------------------

    def add_message(self, message: Mapping[str, Any] | LLMSpecificMessage) -> None:
        """Append one message (validated; raises :class:`InvalidMessageError`)."""
        self.add_messages([message])

    def _append(self, message: FrozenDict) -> None:
        """Append a message built (and so already valid) by one of the helpers below."""
        with self._lock:
            s = self._subject.value
            new = ContextSnapshot(s.messages.appended(message), s.tools, s.tool_choice, s.version + 1)
            self._subject.put(new)

    def add_messages(self, messages: Iterable[Mapping[str, Any] | LLMSpecificMessage]) -> None:
        """Append several messages in one write; none is written if any is invalid."""
        batch = list(messages)
        if not batch:
            return

        def change(s: ContextSnapshot) -> ContextSnapshot:
            checked = check_batch(s.messages, batch)
            return ContextSnapshot(s.messages.appended(*checked), s.tools, s.tool_choice)

        self.update(change)

    def set_messages(
        self, messages: Iterable[Mapping[str, Any] | LLMSpecificMessage], *, keep_system_prompt: bool = False
    ) -> None:
        """Replace the messages (tools and tool choice stay).

        With ``keep_system_prompt``, the conversation's system prompt (its
        leading system message) stays in front of the new messages, unless
        they begin with a system message of their own, which replaces it.
        This is what an ``LLMMessagesUpdateFrame`` does by default.
        """
        fresh = _frozen_messages(messages)

        def change(s: ContextSnapshot) -> ContextSnapshot:
            prompt = _system_prompt(s.messages) if keep_system_prompt else None
            kept = fresh if prompt is None or _system_prompt(fresh) is not None else Messages([prompt, *fresh])
            return ContextSnapshot(kept, s.tools, s.tool_choice)

        self.update(change)

    def transform_messages(
        self, transform: Callable[[list[dict[str, Any]]], Sequence[Mapping[str, Any]]]
    ) -> None:
        """Replace the messages with ``transform(copy_of_messages)``."""

        def change(s: ContextSnapshot) -> ContextSnapshot:
            try:
                result = transform(thaw(s.messages))
            except InvalidMessageError:
                raise
            except Exception as exc:
                raise InvalidMessageError(f"the messages transform raised {exc!r}; nothing was changed") from exc
            if not isinstance(result, list | tuple):
                raise InvalidMessageError(f"a messages transform must return a list, got {type(result).__name__}")
            return ContextSnapshot(_frozen_messages(result), s.tools, s.tool_choice)

        self.update(change)

    def set_tools(self, tools: Any) -> None:
        """Replace the toolset (a list of tools, a :class:`ToolsSchema`, or ``None``)."""
        schema = normalize_tools(tools)
        self.update(lambda s: ContextSnapshot(s.messages, schema, s.tool_choice))

    def set_tool_choice(self, tool_choice: Any) -> None:
        """Set ``"auto"``, ``"none"``, ``"required"``, a dict naming a tool, or ``None``."""
        choice = check_tool_choice(tool_choice)
        self.update(lambda s: ContextSnapshot(s.messages, s.tools, choice))

    def add_user_message(self, text: str) -> None:
        """Append ``{"role": "user", "content": text}``."""
        self._append(text_message(user_message(text), text))

    def reopen_user_message(self, old: str, text: str) -> bool:
        """Make the last user message, which reads ``old``, read ``text``; drop the plain replies after it.

        For a user turn that ended too soon and goes on: what the unheard
        reply wrote after it goes, anything else stays. ``False`` (nothing
        changed) when the last user message is not ``old`` or a tool ran
        since (see :func:`reopen_plan`). Costs what the messages after it
        cost, not the conversation's length.
        """
        message = text_message(user_message(text), text)
        done = False

        def change(s: ContextSnapshot) -> ContextSnapshot | None:
            nonlocal done
            ms = s.messages
            plan = reopen_plan(ms, old)
            if plan is None:
                return None
            index, kept = plan
            done = True
            return ContextSnapshot(ms.truncated(index).appended(message, *kept), s.tools, s.tool_choice)

        self.update(change)
        return done

    def add_assistant_message(self, text: str) -> None:
        """Append ``{"role": "assistant", "content": text}``."""
        self._append(text_message(assistant_message(text), text))

    def add_developer_message(self, text: str) -> None:
        """Append a developer message."""
        self._append(text_message(developer_message(text), text))

    def add_system_message(self, text: str) -> None:
        """Append a system message."""
        self._append(text_message(system_message(text), text))

    def add_assistant_tool_call(self, tool_call_id: str, name: str, arguments: Any) -> None:
        """Append one assistant message carrying one tool call."""
        self.add_message(tool_call_message(tool_call_id, name, arguments))

    def add_tool_result(self, tool_call_id: str, content: str) -> None:
        """Append the answer to one tool call (one the conversation made: else :class:`InvalidToolCallError`)."""
        if not isinstance(tool_call_id, str) or not tool_call_id or not isinstance(content, str):
            raise InvalidToolCallError("a tool result needs a string tool_call_id and string content")
        if has_surrogate(content):
            raise InvalidToolCallError("a tool result's content holds a lone surrogate, which UTF-8 cannot encode")
        message = tool_result_message(tool_call_id, content)
        with self._lock:
            if not answers_a_call(self._subject.value.messages, tool_call_id):
                raise InvalidToolCallError(
                    f"a tool message: tool_call_id {tool_call_id!r} answers no tool call of the conversation "
                    "(write the assistant's tool call first)"
                )
            self._append(message)

    def update_tool_result(self, tool_call_id: str, content: str) -> bool:
        """Rewrite the answer to ``tool_call_id`` in place; ``False`` if there is none."""
        if not isinstance(content, str) or has_surrogate(content):
            raise InvalidToolCallError("a tool result's content must be a string UTF-8 can encode")
        found = False

        def change(s: ContextSnapshot) -> ContextSnapshot | None:
            nonlocal found
            index = s.find_tool_result(tool_call_id)
            if index < 0:
                return None
            found = True
            return ContextSnapshot(
                s.messages.replaced(index, tool_result_message(tool_call_id, content)), s.tools, s.tool_choice
            )

        self.update(change)
        return found

    def announce_tool_change(self, tools: Any) -> str | None:
        """Diff ``tools`` against the advertised toolset and append the announcement.

        Diff and write happen in one atomic step, so when both halves of a pair
        see the same change the second finds nothing to say. Returns the
        message written, or ``None``.
        """
        new_names = normalize_tools(tools)
        names = new_names.names if new_names is not None else frozenset()
        written: str | None = None

        def change(s: ContextSnapshot) -> ContextSnapshot | None:
            nonlocal written
            text = tool_change_message(s.tool_names, names)
            if text is None:
                return ContextSnapshot(s.messages, new_names, s.tool_choice) if s.tools != new_names else None
            written = text
            return ContextSnapshot(s.messages.appended(developer_message(text)), new_names, s.tool_choice)

        self.update(change)
        return written

    def to_openai(self) -> dict[str, Any]:
        """The current conversation as a chat-completions body part (plain data)."""
        return self.snapshot.to_openai()
