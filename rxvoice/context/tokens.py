"""A rough token estimate of messages, cheap enough to keep as a running sum."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["estimate_message_tokens", "estimate_text_tokens"]


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
    if not isinstance(message, dict) and not isinstance(message, Mapping):  # a dict first: no ABC check
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
