"""Strict JSON: what every value the conversation holds must be, so a request body always builds.

Strict JSON is ``None``, bools, ints, finite floats, strings UTF-8 can
encode (no lone surrogate), and lists and string-keyed mappings of those. A
set, bytes, an arbitrary object, NaN or infinity is not: it is refused where
it was written (a message, a tool, a tool choice, a provider's own message),
naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..text.blank import repair_surrogates

__all__ = ["check_json", "has_surrogate", "json_problem"]


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (which UTF-8 cannot encode)."""
    return not text.isascii() and repair_surrogates(text) is not text


def json_problem(value: Any, path: str) -> str | None:
    """Where and why ``value`` is not strict JSON (``None`` when it is): the first bad field found."""
    if value is None or value is True or value is False or type(value) is int:
        return None
    if isinstance(value, str):
        return f"{path} holds a lone surrogate, which UTF-8 cannot encode" if has_surrogate(value) else None
    if isinstance(value, float):
        return None if value == value and value not in (float("inf"), float("-inf")) else f"{path} is {value!r}"
    if isinstance(value, int):
        return None
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path} has a key that is not a string: {k!r}"
            problem = json_problem(v, f"{path}.{k}")
            if problem is not None:
                return problem
        return None
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            problem = json_problem(v, f"{path}[{i}]")
            if problem is not None:
                return problem
        return None
    return f"{path} is a {type(value).__name__}, not JSON data ({value!r:.60})"


def check_json(value: Any, where: str, path: str, error: type[Exception]) -> None:
    """Raise ``error`` naming ``where`` and the bad field when ``value`` is not strict JSON.

    The common case (it is) costs one ``json.dumps``; the walk that names the
    field runs only on failure.
    """
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        problem = json_problem(value, path) or str(exc)
        raise error(f"{where}: {problem}; the conversation must be strict JSON") from None
