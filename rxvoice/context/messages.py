"""Messages: their shapes (OpenAI's), and the check every message written to the conversation passes.

A refused message raises :class:`~rxvoice.errors.InvalidMessageError` (or
:class:`~rxvoice.errors.InvalidToolCallError`) naming the message and the
field: an unknown role, content that is neither text nor a list of parts, a
part that is not a mapping, a text part whose ``text`` is not a string, an
image part without a URL, tool-call arguments that are not a JSON object, a
tool result for a call the conversation never made, or any value that is not
strict JSON (:mod:`rxvoice.context.strict`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

from ..errors import InvalidMessageError, InvalidToolCallError
from .frozen import FrozenDict, LLMSpecificMessage, freeze
from .strict import check_json, has_surrogate

__all__ = [
    "IN_PROGRESS",
    "ROLES",
    "Message",
    "answers_a_call",
    "assistant_message",
    "check_batch",
    "check_message",
    "developer_message",
    "system_message",
    "text_message",
    "tool_call_message",
    "tool_result_message",
    "user_message",
]

ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})
"""The roles a universal message may have."""

IN_PROGRESS = "IN_PROGRESS"
"""The placeholder result written for a tool call that has not reported yet."""

Message: TypeAlias = "FrozenDict | LLMSpecificMessage"


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
        check_json(fixed, where, "message", InvalidMessageError)
        return freeze(fixed)  # type: ignore[no-any-return]
    if content is None and role != "assistant":
        raise InvalidMessageError(f"{where}: a {role} message needs content")
    check_json(message, where, "message", InvalidMessageError)
    return freeze(message)  # type: ignore[no-any-return]


def _call_ids(message: Any) -> Iterator[str]:
    if isinstance(message, Mapping) and message.get("role") == "assistant":
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                yield call["id"]


def answers_a_call(existing: Sequence[Any], call_id: str) -> bool:
    """Whether ``existing`` holds the assistant tool call ``call_id`` (searched from the end: it is usually close)."""
    for i in range(len(existing) - 1, -1, -1):
        m = existing[i]
        if isinstance(m, Mapping) and m.get("role") == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                if isinstance(call, Mapping) and call.get("id") == call_id:
                    return True
    return False


def check_batch(existing: Sequence[Any], messages: Iterable[Any]) -> list[Message]:
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
                if call_id not in seen and not answers_a_call(existing, call_id):
                    raise InvalidToolCallError(
                        f"{where or 'a tool message'}: tool_call_id {call_id!r} answers no tool call of the "
                        "conversation (write the assistant's tool call first)"
                    )
            seen.update(_call_ids(frozen))
        checked.append(frozen)
    return checked



# -- the shapes the aggregators write ----------------------------------------------------------


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


def text_message(message: FrozenDict, text: object) -> FrozenDict:
    if not isinstance(text, str):
        raise InvalidMessageError(
            f"a {message['role']} message: content must be a string, got {type(text).__name__}"
        )
    if has_surrogate(text):
        raise InvalidMessageError(
            f"a {message['role']} message: content holds a lone surrogate, which UTF-8 cannot encode "
            "(rxvoice.text.repair_surrogates fixes it)"
        )
    return message
