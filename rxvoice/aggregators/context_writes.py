"""The context writes that app frames ask for, the same from either half of a pair.

Messages, tools and the tool choice can be changed from upstream (the user
half) or downstream (the assistant half); each frame means one write,
wherever it arrives. An ``LLMMessagesUpdateFrame`` keeps the system prompt
unless its ``keep_system_prompt`` is off (see ``LLMContext.set_messages``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from ..context import LLMContext
from ..frames import (
    Frame,
    LLMMessagesAppendFrame,
    LLMMessagesTransformFrame,
    LLMMessagesUpdateFrame,
    LLMSetToolChoiceFrame,
    LLMSetToolsFrame,
)

__all__ = ["ContextWrite", "context_update", "tool_choice_update", "tools_update"]

ContextWrite: TypeAlias = Callable[[LLMContext], Any]
"""One atomic change of the conversation, carried out by the stage's shell."""


def context_update(frame: Frame) -> ContextWrite:
    """The write a messages append/update/transform frame asks for."""
    if isinstance(frame, LLMMessagesAppendFrame):
        messages = list(frame.messages)
        return lambda c: c.add_messages(messages)
    if isinstance(frame, LLMMessagesUpdateFrame):
        replacement = list(frame.messages)
        keep = frame.keep_system_prompt
        return lambda c: c.set_messages(replacement, keep_system_prompt=keep)
    assert isinstance(frame, LLMMessagesTransformFrame)
    transform = frame.transform
    return lambda c: c.transform_messages(transform)


def tools_update(frame: LLMSetToolsFrame, announce: bool) -> ContextWrite:
    """Replace the tools; with ``announce``, also tell the model in a message that they changed."""
    tools = frame.tools
    if announce:
        return lambda c: c.announce_tool_change(tools)
    return lambda c: c.set_tools(tools)


def tool_choice_update(frame: LLMSetToolChoiceFrame) -> ContextWrite:
    """Set how the model may choose tools."""
    choice = frame.tool_choice
    return lambda c: c.set_tool_choice(choice)
