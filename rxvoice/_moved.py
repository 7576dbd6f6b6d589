"""Public names that moved: a module ``__getattr__`` that still hands them out, with a warning.

A module that lost names to another one keeps a line for them::

    __getattr__ = moved_names(__name__, "rxvoice.pipeline.offload", {"Offload", "inline_offload"})

The new home is imported only when an old name is asked for, so a shim in a
lower layer never imports the upper one at import time.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["moved_names"]


def moved_names(
    module: str, target: str, names: Iterable[str], *, also: str = "", stacklevel: int = 2
) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``module``: each of ``names`` comes from ``target`` with a ``DeprecationWarning``.

    ``also`` is said after the new home in the warning (another place that has the name, or why it moved);
    ``stacklevel`` is the warning's (3 when a module's own ``__getattr__`` calls this one).
    """
    moved = frozenset(names)
    note = f" {also}" if also else ""

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} moved to {target}.{name}{note}; the old name goes in 0.3",
                      DeprecationWarning, stacklevel=stacklevel)
        return getattr(importlib.import_module(target), name)

    return __getattr__
