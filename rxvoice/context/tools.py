"""Tools: the toolset the model may call, the tool choice, and the announcement of a change.

Tools are held to strict JSON like the messages (a NaN default, a set of
enum values, bytes fail here, as :class:`~rxvoice.errors.InvalidToolCallError`,
not later when the request body is built).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidToolCallError
from .frozen import FrozenDict, freeze
from .strict import check_json

__all__ = ["TOOL_CHOICES", "ToolsSchema", "check_tool_choice", "normalize_tools", "tool_change_message"]

TOOL_CHOICES = frozenset({"auto", "none", "required"})
"""The tool choices named by a string."""


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
    tool = {"type": "function", "function": spec}
    check_json(tool, f"the tool {name!r}", "tool", InvalidToolCallError)
    return freeze(tool)  # type: ignore[no-any-return]


def normalize_tools(tools: Any) -> ToolsSchema | None:
    """Accept ``None``, a list of tools, or a :class:`ToolsSchema`; ``None`` means no tools."""
    if tools is None:
        return None
    if isinstance(tools, ToolsSchema):
        for provider, custom_tools in tools.custom.items():
            check_json(list(custom_tools), f"the {provider!r} tools", "tools", InvalidToolCallError)
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
                check_json(tool, "a provider-specific tool", "tool", InvalidToolCallError)
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


def check_tool_choice(choice: Any) -> Any:
    """``"auto"``, ``"none"``, ``"required"``, a mapping naming a tool (frozen), or ``None``; else refused."""
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice in TOOL_CHOICES:
            return choice
    elif isinstance(choice, Mapping):
        check_json(choice, "tool_choice", "tool_choice", InvalidToolCallError)
        if choice.get("type") == "function":
            fn = choice.get("function")
            if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn.get("name"):
                raise InvalidToolCallError(
                    f'a function tool_choice is {{"type": "function", "function": {{"name": ...}}}}, got {choice!r:.80}'
                )
        return freeze(choice)
    raise InvalidToolCallError(f'tool_choice must be "auto", "none", "required" or a dict, got {choice!r:.80}')


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
