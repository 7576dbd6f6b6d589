"""The shared conversation: immutable snapshots in a ``BehaviorSubject``.

Both halves of a pair write to one :class:`LLMContext`. Each write is atomic:
it builds a new :class:`ContextSnapshot` from the current one and publishes
it, so a subscriber (a transcript view, persistence, a test) sees every state
the conversation passed through, and nothing anyone was handed can change
under them. Messages are OpenAI-shaped dicts, frozen: they compare equal to
plain dicts and lists and serialize with ``json.dumps``, but refuse mutation.

Every write is validated before anything is published, and a refused write
raises :class:`~rxvoice.errors.InvalidMessageError` (or
:class:`~rxvoice.errors.InvalidToolCallError`) naming the message and the
field: an unknown role, content that is neither text nor a list of parts, a
part that is not a mapping, a text part whose ``text`` is not a string, an
image part without a URL, tool-call arguments that are not a JSON object, a
tool result for a call the conversation never made, or any value that is not
strict JSON (a set, bytes, an object, NaN, a lone surrogate that UTF-8 cannot
encode). So the conversation is always a valid chat-completions body.

Each snapshot's messages also keep a running token estimate
(:attr:`Messages.tokens`), updated as messages are appended, so a threshold
check costs the same at ten messages or a hundred thousand.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeAlias

import reactivex
from reactivex import abc as rx_abc
from reactivex.subject import BehaviorSubject

from ._subjects import ContainedBehaviorSubject
from .errors import InvalidMessageError, InvalidToolCallError
from .text.blank import repair_surrogates

__all__ = [
    "IN_PROGRESS",
    "ROLES",
    "ContextSnapshot",
    "FrozenDict",
    "FrozenList",
    "LLMContext",
    "LLMSpecificMessage",
    "Message",
    "Messages",
    "ToolsSchema",
    "assistant_message",
    "developer_message",
    "freeze",
    "system_message",
    "thaw",
    "tool_call_message",
    "tool_change_message",
    "tool_result_message",
    "user_message",
]

ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})
"""The roles a universal message may have."""

IN_PROGRESS = "IN_PROGRESS"
"""The placeholder result written for a tool call that has not reported yet."""


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


class Messages(Sequence[Any]):
    """The messages of one snapshot: a read-only sequence of read-only dicts.

    Snapshots made by appending share storage with the snapshot they grew
    from (each sees only its own length), so appending a message costs the
    same whether the conversation holds ten messages or ten thousand. It
    compares equal to a list or tuple with the same messages.
    """

    __slots__ = ("_cum", "_items", "_n")

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._items: list[Any] = list(items)
        self._n = len(self._items)
        cum = [0]
        total = 0
        for m in self._items:
            total += estimate_message_tokens(m)
            cum.append(total)
        self._cum: list[int] = cum

    @classmethod
    def _view(cls, items: list[Any], n: int, cum: list[int]) -> Messages:
        view = cls.__new__(cls)
        view._items = items
        view._n = n
        view._cum = cum
        return view

    @property
    def tokens(self) -> int:
        """The estimated tokens of these messages (:func:`rxvoice.summarization.estimate_context_tokens`), O(1)."""
        return self._cum[self._n]

    def appended(self, *messages: Any) -> Messages:
        """A new sequence with ``messages`` added (sharing storage when nothing grew past this one)."""
        items, n = self._items, self._n
        if len(items) == n:
            cum = self._cum
        else:
            items = items[:n]
            cum = self._cum[: n + 1]
        items.extend(messages)
        total = cum[-1]
        for m in messages:
            total += estimate_message_tokens(m)
            cum.append(total)
        return Messages._view(items, len(items), cum)

    def replaced(self, index: int, message: Any) -> Messages:
        """A new sequence with the message at ``index`` replaced."""
        n = self._n
        if index < 0:
            index += n
        fresh = self._items[:n]
        old = fresh[index]
        fresh[index] = message
        cum = self._cum[: n + 1]
        delta = estimate_message_tokens(message) - estimate_message_tokens(old)
        if delta:
            for j in range(index + 1, n + 1):
                cum[j] += delta
        return Messages._view(fresh, n, cum)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._items[: self._n][index]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("message index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Any]:
        items, n = self._items, self._n
        it: Iterator[Any] = iter(items) if len(items) == n else iter(items[:n])
        return it

    def __reversed__(self) -> Iterator[Any]:
        it: Iterator[Any] = reversed(self._items[: self._n])
        return it

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Messages):
            return self._n == other._n and self._items[: self._n] == other._items[: other._n]
        if isinstance(other, list | tuple):
            return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._items[: self._n])

    def __copy__(self) -> list[Any]:
        return thaw(list(self))  # type: ignore[no-any-return]

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(list(self))  # type: ignore[no-any-return]

    def to_list(self) -> list[dict[str, Any]]:
        """Plain, mutable copies of the messages."""
        return thaw(list(self))  # type: ignore[no-any-return]


def estimate_text_tokens(text: str) -> int:
    """A rough token count: four characters a token.

    Examples:
        >>> estimate_text_tokens("Hello world"), estimate_text_tokens("This is a test message")
        (2, 5)
    """
    return len(text) // 4


def estimate_message_tokens(message: Any) -> int:
    """A message's estimated tokens: 10 overhead, its text, its tool calls, 10 more for a tool result.

    Images count 500 each; provider-specific messages count nothing.
    """
    if not isinstance(message, Mapping):
        return 0
    tokens = 10
    content = message.get("content")
    if isinstance(content, str):
        tokens += len(content) // 4
    elif isinstance(content, list | tuple):
        for part in content:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "text":
                tokens += len(str(part.get("text", ""))) // 4
            elif kind in ("image_url", "image"):
                tokens += 500
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping):
            tokens += len(str(fn.get("name", "")) + str(fn.get("arguments", ""))) // 4
    if "tool_call_id" in message:
        tokens += 10
    return tokens


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and repair_surrogates(text) is not text


def _json_problem(value: Any, path: str) -> str | None:
    """Where and why ``value`` is not strict JSON (``None`` when it is): the first bad field found."""
    if value is None or value is True or value is False or type(value) is int:
        return None
    if isinstance(value, str):
        return f"{path} holds a lone surrogate, which UTF-8 cannot encode" if _has_surrogate(value) else None
    if isinstance(value, float):
        return None if value == value and value not in (float("inf"), float("-inf")) else f"{path} is {value!r}"
    if isinstance(value, int):
        return None
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path} has a key that is not a string: {k!r}"
            problem = _json_problem(v, f"{path}.{k}")
            if problem is not None:
                return problem
        return None
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            problem = _json_problem(v, f"{path}[{i}]")
            if problem is not None:
                return problem
        return None
    return f"{path} is a {type(value).__name__}, not JSON data ({value!r:.60})"


def _check_json_message(message: Mapping[str, Any], where: str) -> None:
    try:
        json.dumps(message, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        problem = _json_problem(message, "message") or str(exc)
        raise InvalidMessageError(f"{where}: {problem}; the conversation must be strict JSON") from None


def _check_parts(content: list[Any] | tuple[Any, ...], where: str) -> None:
    for i, part in enumerate(content):
        field_ = f"content[{i}]"
        if not isinstance(part, Mapping):
            raise InvalidMessageError(f"{where}: {field_} must be a mapping part ({{'type': ...}}), got {part!r:.60}")
        kind = part.get("type")
        if not isinstance(kind, str) or not kind:
            raise InvalidMessageError(f"{where}: {field_}.type must be a non-empty string, got {kind!r}")
        if kind == "text" and not isinstance(part.get("text"), str):
            raise InvalidMessageError(f"{where}: {field_}.text must be a string, got {part.get('text')!r:.60}")
        if kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else None
            if not isinstance(url, str) or not url:
                raise InvalidMessageError(
                    f"{where}: {field_}.image_url.url must be a non-empty string (an image part needs a URL), "
                    f"got {image!r:.60}"
                )


def freeze(value: Any) -> Any:
    """A deep, immutable copy of JSON-like data (dicts and lists become frozen)."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, Mapping):
        return FrozenDict((str(k), freeze(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


def reopen_plan(messages: Sequence[Any], old: str) -> tuple[int, list[Any]] | None:
    """Where the last user message (reading ``old``) is, and what after it stays when that turn reopens.

    Plain assistant messages after it go (a reply nobody heard); anything
    else stays. ``None`` when the turn cannot be reopened in place: ``old``
    is not the last user message (a summary replaced it, someone wrote
    another), or a tool ran since (its call and result must stay together
    and answered).
    """
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            if m.get("content") != old:
                return None
            later = [messages[j] for j in range(i + 1, len(messages))]
            if any(isinstance(x, dict) and (x.get("role") == "tool" or x.get("tool_calls")) for x in later):
                return None
            return i, [x for x in later if not (isinstance(x, dict) and x.get("role") == "assistant")]
    return None


def thaw(value: Any) -> Any:
    """A deep, mutable copy (plain dicts and lists), e.g. for an HTTP request body."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple | Messages):
        return [thaw(v) for v in value]
    if isinstance(value, LLMSpecificMessage):
        return LLMSpecificMessage(value.llm, thaw(value.message))
    return value


@dataclass(frozen=True, slots=True)
class LLMSpecificMessage:
    """A message only one provider understands (e.g. a reasoning model's thought).

    It travels in the conversation but is left out of other providers'
    requests and of summaries.
    """

    llm: str
    message: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", freeze(self.message))


Message: TypeAlias = "FrozenDict | LLMSpecificMessage"


@dataclass(frozen=True, slots=True)
class ToolsSchema:
    """The tools the model may call.

    ``standard`` holds OpenAI-shaped function tools (``{"type": "function",
    "function": {...}}``); ``custom`` holds provider-specific ones by provider
    name, which are passed along but never diffed or validated.
    """

    standard: tuple[FrozenDict, ...] = ()
    custom: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def names(self) -> frozenset[str]:
        """The standard tools' function names."""
        return frozenset(str(t["function"]["name"]) for t in self.standard)

    def is_empty(self) -> bool:
        """Whether no tool at all is advertised."""
        return not self.standard and not any(self.custom.values())


def _normalize_tool(tool: Any) -> FrozenDict:
    if not isinstance(tool, Mapping):
        raise InvalidToolCallError(f"a tool must be a mapping, got {type(tool).__name__}")
    if "function" in tool and isinstance(tool["function"], Mapping):
        fn = tool["function"]
    elif "name" in tool:
        fn = tool
    else:
        raise InvalidToolCallError(
            'a standard tool is {"type": "function", "function": {"name": ..., "parameters": ...}}'
        )
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidToolCallError(f"a tool needs a non-empty string name, got {name!r}")
    spec: dict[str, Any] = {"name": name}
    if fn.get("description") is not None:
        spec["description"] = fn["description"]
    spec["parameters"] = fn.get("parameters") or {"type": "object", "properties": {}}
    for key, value in fn.items():
        if key not in spec:
            spec[key] = value
    return freeze({"type": "function", "function": spec})  # type: ignore[no-any-return]


def normalize_tools(tools: Any) -> ToolsSchema | None:
    """Accept ``None``, a list of tools, or a :class:`ToolsSchema`; ``None`` means no tools."""
    if tools is None:
        return None
    if isinstance(tools, ToolsSchema):
        schema = tools
        schema = ToolsSchema(
            tuple(_normalize_tool(t) for t in tools.standard),
            {k: tuple(freeze(list(v))) for k, v in tools.custom.items()},
        )
    elif isinstance(tools, list | tuple):
        standard: list[FrozenDict] = []
        custom: list[Any] = []
        for tool in tools:
            if isinstance(tool, Mapping) and (
                tool.get("type", "function") == "function" and ("function" in tool or "name" in tool)
            ):
                standard.append(_normalize_tool(tool))
            else:
                custom.append(freeze(tool))
        schema = ToolsSchema(tuple(standard), {"openai": tuple(custom)} if custom else {})
    else:
        raise InvalidToolCallError(
            f"tools must be a list of tool schemas, a ToolsSchema or None, got {type(tools).__name__}"
        )
    names = [t["function"]["name"] for t in schema.standard]
    if len(names) != len(set(names)):
        raise InvalidToolCallError(f"tool names must be unique, got {sorted(names)}")
    return None if schema.is_empty() else schema


_TOOL_CHOICES = frozenset({"auto", "none", "required"})


def _check_tool_choice(choice: Any) -> Any:
    if choice is None or choice in _TOOL_CHOICES:
        return choice
    if isinstance(choice, Mapping):
        return freeze(choice)
    raise InvalidToolCallError(f'tool_choice must be "auto", "none", "required" or a dict, got {choice!r}')


def _check_tool_call(call: Any) -> FrozenDict:
    if not isinstance(call, Mapping):
        raise InvalidToolCallError(f"a tool call must be a mapping, got {type(call).__name__}")
    fn = call.get("function")
    if not isinstance(call.get("id"), str) or not call.get("id"):
        raise InvalidToolCallError(f"a tool call needs a string id: {dict(call)!r}")
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn.get("name"):
        raise InvalidToolCallError(f"a tool call needs function.name: {dict(call)!r}")
    args = fn.get("arguments", "{}")
    if isinstance(args, str):
        try:
            parsed = json.loads(args) if args.strip() else {}
        except ValueError:
            raise InvalidToolCallError(f"tool call arguments are a string that is not JSON: {args[:80]!r}") from None
        if not isinstance(parsed, dict):
            raise InvalidToolCallError(f"tool call arguments must be a JSON object, got {args[:80]!r}")
        args = args if args.strip() else "{}"
    elif isinstance(args, Mapping):
        try:
            args = json.dumps(dict(args), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidToolCallError(f"tool call arguments are not JSON-serializable: {exc}") from exc
    else:
        raise InvalidToolCallError(
            f"tool call arguments must be a mapping (or a string holding a JSON object), got {args!r:.80}"
        )
    return freeze(  # type: ignore[no-any-return]
        {"id": call["id"], "type": call.get("type", "function"),
         "function": {"name": fn["name"], "arguments": args}}
    )


def check_message(message: Any, where: str | None = None) -> Message:
    """Validate and freeze one message; raises :class:`InvalidMessageError` naming ``where`` and the field."""
    if isinstance(message, LLMSpecificMessage):
        return message
    if not isinstance(message, Mapping):
        raise InvalidMessageError(f"{where or 'a message'} must be a mapping, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise InvalidMessageError(
            f"{where or 'a message'}: unknown message role {role!r}; expected one of {sorted(ROLES)}"
        )
    where = where or f"a {role} message"
    content = message.get("content")
    if content is not None and not isinstance(content, str | list | tuple):
        raise InvalidMessageError(f"{where}: content must be a string or a list of parts, got {content!r:.60}")
    if isinstance(content, list | tuple):
        _check_parts(content, where)
    if role == "tool" and (not isinstance(message.get("tool_call_id"), str) or not message.get("tool_call_id")):
        raise InvalidToolCallError(f"{where}: a tool message needs a tool_call_id")
    if "tool_calls" in message and message["tool_calls"] is not None:
        if role != "assistant":
            raise InvalidToolCallError(f"{where}: only assistant messages carry tool_calls")
        calls = message["tool_calls"]
        if not isinstance(calls, list | tuple) or not calls:
            raise InvalidToolCallError(f"{where}: tool_calls must be a non-empty list")
        fixed = dict(message)
        try:
            fixed["tool_calls"] = [_check_tool_call(c) for c in calls]
        except InvalidToolCallError as exc:
            raise InvalidToolCallError(f"{where}: {exc}") from None
        _check_json_message(fixed, where)
        return freeze(fixed)  # type: ignore[no-any-return]
    if content is None and role != "assistant":
        raise InvalidMessageError(f"{where}: a {role} message needs content")
    _check_json_message(message, where)
    return freeze(message)  # type: ignore[no-any-return]


def _call_ids(message: Any) -> Iterator[str]:
    if isinstance(message, Mapping) and message.get("role") == "assistant":
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                yield call["id"]


def _answers_a_call(existing: Sequence[Any], call_id: str) -> bool:
    """Whether ``existing`` holds the assistant tool call ``call_id`` (searched from the end: it is usually close)."""
    for i in range(len(existing) - 1, -1, -1):
        m = existing[i]
        if isinstance(m, Mapping) and m.get("role") == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                if isinstance(call, Mapping) and call.get("id") == call_id:
                    return True
    return False


def _check_batch(existing: Sequence[Any], messages: Iterable[Any]) -> list[Message]:
    """Validate messages written after ``existing``: each on its own, and each tool result answers a call."""
    checked: list[Message] = []
    seen: set[str] = set()
    items = list(messages)
    for i, m in enumerate(items):
        where = f"message {i} of {len(items)}" if len(items) > 1 else None
        frozen = check_message(m, where)
        if isinstance(frozen, Mapping):
            if frozen.get("role") == "tool":
                call_id = frozen["tool_call_id"]
                if call_id not in seen and not _answers_a_call(existing, call_id):
                    raise InvalidToolCallError(
                        f"{where or 'a tool message'}: tool_call_id {call_id!r} answers no tool call of the "
                        "conversation (write the assistant's tool call first)"
                    )
            seen.update(_call_ids(frozen))
        checked.append(frozen)
    return checked


# ---------------------------------------------------------------------------
# Message shapes the aggregators write


def user_message(text: str) -> FrozenDict:
    """``{"role": "user", "content": text}``."""
    return FrozenDict(role="user", content=text)


def assistant_message(text: str) -> FrozenDict:
    """``{"role": "assistant", "content": text}``."""
    return FrozenDict(role="assistant", content=text)


def developer_message(text: str) -> FrozenDict:
    """Out-of-band guidance; providers without the role receive it as a user message."""
    return FrozenDict(role="developer", content=text)


def system_message(text: str) -> FrozenDict:
    """``{"role": "system", "content": text}``."""
    return FrozenDict(role="system", content=text)


def tool_call_message(tool_call_id: str, name: str, arguments: Any) -> FrozenDict:
    """One assistant message carrying one tool call (arguments as a JSON string)."""
    return check_message(  # type: ignore[return-value]
        {"role": "assistant", "tool_calls": [
            {"id": tool_call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ]}
    )


def tool_result_message(tool_call_id: str, content: str) -> FrozenDict:
    """The answer to one tool call."""
    return FrozenDict(role="tool", tool_call_id=tool_call_id, content=content)


def tool_change_message(old: frozenset[str], new: frozenset[str]) -> str | None:
    """The developer message announcing a change of toolset, or ``None`` when nothing changed."""
    added, removed = sorted(new - old), sorted(old - new)
    parts: list[str] = []
    if added:
        names = ", ".join(f"`{n}`" for n in added)
        parts.append(
            f"The following function(s) have just been added and may now be called: {names}. "
            "Any previously available functions remain available."
        )
    if removed:
        names = ", ".join(f"`{n}`" for n in removed)
        parts.append(
            f"The following function(s) have just been removed and should not be called: {names}. "
            "Any previously available functions remain available. The removed function(s) may "
            "become available again later, in which case you will be informed."
        )
    return " ".join(parts) if parts else None


# ---------------------------------------------------------------------------
# Snapshots and the context


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
        for i in range(len(self.messages) - 1, -1, -1):
            m = self.messages[i]
            if isinstance(m, Mapping) and m.get("role") == "tool" and m.get("tool_call_id") == tool_call_id:
                return i
        return -1


def _text_message(message: FrozenDict, text: object) -> FrozenDict:
    if not isinstance(text, str):
        raise InvalidMessageError(
            f"a {message['role']} message: content must be a string, got {type(text).__name__}"
        )
    if _has_surrogate(text):
        raise InvalidMessageError(
            f"a {message['role']} message: content holds a lone surrogate, which UTF-8 cannot encode "
            "(rxvoice.text.repair_surrogates fixes it)"
        )
    return message


def _frozen_messages(messages: Iterable[Any]) -> Messages:
    return Messages(_check_batch((), messages))


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
            _frozen_messages(messages or ()), normalize_tools(tools), _check_tool_choice(tool_choice)
        )
        self._subject: BehaviorSubject[ContextSnapshot] = ContainedBehaviorSubject(snapshot, "an LLMContext")
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
            self._subject.on_next(new)
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
            self._subject.on_next(new)

    def add_messages(self, messages: Iterable[Mapping[str, Any] | LLMSpecificMessage]) -> None:
        """Append several messages in one write; none is written if any is invalid."""
        batch = list(messages)
        if not batch:
            return

        def change(s: ContextSnapshot) -> ContextSnapshot:
            checked = _check_batch(s.messages, batch)
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
        choice = _check_tool_choice(tool_choice)
        self.update(lambda s: ContextSnapshot(s.messages, s.tools, choice))

    def add_user_message(self, text: str) -> None:
        """Append ``{"role": "user", "content": text}``."""
        self._append(_text_message(user_message(text), text))

    def reopen_user_message(self, old: str, text: str) -> bool:
        """Make the last user message, which reads ``old``, read ``text``; drop the plain replies after it.

        For a user turn that ended too soon and goes on: what the unheard
        reply wrote after it goes, anything else stays. ``False`` (nothing
        changed) when the last user message is not ``old`` or a tool ran
        since (see :func:`reopen_plan`). Costs what the messages after it
        cost, not the conversation's length.
        """
        message = _text_message(user_message(text), text)
        done = False

        def change(s: ContextSnapshot) -> ContextSnapshot | None:
            nonlocal done
            ms = s.messages
            plan = reopen_plan(ms, old)
            if plan is None:
                return None
            index, kept = plan
            prefix = Messages._view(ms._items, index, ms._cum[: index + 1])
            done = True
            return ContextSnapshot(prefix.appended(message, *kept), s.tools, s.tool_choice)

        self.update(change)
        return done

    def add_assistant_message(self, text: str) -> None:
        """Append ``{"role": "assistant", "content": text}``."""
        self._append(_text_message(assistant_message(text), text))

    def add_developer_message(self, text: str) -> None:
        """Append a developer message."""
        self._append(_text_message(developer_message(text), text))

    def add_system_message(self, text: str) -> None:
        """Append a system message."""
        self._append(_text_message(system_message(text), text))

    def add_assistant_tool_call(self, tool_call_id: str, name: str, arguments: Any) -> None:
        """Append one assistant message carrying one tool call."""
        self.add_message(tool_call_message(tool_call_id, name, arguments))

    def add_tool_result(self, tool_call_id: str, content: str) -> None:
        """Append the answer to one tool call (one the conversation made: else :class:`InvalidToolCallError`)."""
        if not isinstance(tool_call_id, str) or not tool_call_id or not isinstance(content, str):
            raise InvalidToolCallError("a tool result needs a string tool_call_id and string content")
        if _has_surrogate(content):
            raise InvalidToolCallError("a tool result's content holds a lone surrogate, which UTF-8 cannot encode")
        message = tool_result_message(tool_call_id, content)
        with self._lock:
            if not _answers_a_call(self._subject.value.messages, tool_call_id):
                raise InvalidToolCallError(
                    f"a tool message: tool_call_id {tool_call_id!r} answers no tool call of the conversation "
                    "(write the assistant's tool call first)"
                )
            self._append(message)

    def update_tool_result(self, tool_call_id: str, content: str) -> bool:
        """Rewrite the answer to ``tool_call_id`` in place; ``False`` if there is none."""
        if not isinstance(content, str) or _has_surrogate(content):
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
