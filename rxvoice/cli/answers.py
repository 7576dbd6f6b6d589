"""The scripted model of a measured run: what ``--first-token-delay`` runs answer with (offline, deterministic)."""

from __future__ import annotations

from ..context import ContextSnapshot
from ..testing import Reply, ToolCall

__all__ = ["TOOL_EVERY", "scripted_answer"]

TOOL_EVERY = 3
"""Every third user turn, the scripted model answers with a tool call (speculation must not start it)."""


def scripted_answer(snapshot: ContextSnapshot) -> Reply:
    """The scripted model of a measured run: a short answer, and a tool call every :data:`TOOL_EVERY` turns."""
    turns = sum(1 for m in snapshot.messages if isinstance(m, dict) and m.get("role") == "user")
    last = snapshot.messages[-1] if snapshot.messages else {}
    if isinstance(last, dict) and last.get("role") == "tool":
        return Reply("It's all in order.")
    if turns % TOOL_EVERY == 0:
        return Reply("Let me look that up.", tool_calls=[ToolCall("look_up", {"turn": turns}, result="found")])
    return Reply("Okay, got it.")
