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
encode), in a message, a tool, a tool choice or a provider's own message. So
the conversation is always a valid chat-completions body.

Each snapshot's messages are a persistent sequence (:class:`Messages`) with
a running token estimate (:attr:`Messages.tokens`): appending, reopening the
last user turn and a threshold check cost the same at ten messages or a
hundred thousand.

The package, one job a module: :mod:`~rxvoice.context.frozen` (frozen JSON
data), :mod:`~rxvoice.context.strict` (strict JSON),
:mod:`~rxvoice.context.sequence` (the persistent messages),
:mod:`~rxvoice.context.messages` (message shapes and checks),
:mod:`~rxvoice.context.tools` (tools and the tool choice),
:mod:`~rxvoice.context.store` (snapshots and :class:`LLMContext`). Import
everything from ``rxvoice.context``.
"""

from __future__ import annotations

from .frozen import FrozenDict, FrozenList, LLMSpecificMessage, freeze, thaw
from .messages import (
    IN_PROGRESS,
    ROLES,
    Message,
    assistant_message,
    developer_message,
    system_message,
    tool_call_message,
    tool_result_message,
    user_message,
)
from .messages import check_message as check_message
from .sequence import Messages
from .store import ContextSnapshot, LLMContext
from .store import reopen_plan as reopen_plan
from .tokens import estimate_message_tokens as estimate_message_tokens
from .tokens import estimate_text_tokens as estimate_text_tokens
from .tools import ToolsSchema, tool_change_message
from .tools import normalize_tools as normalize_tools

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

