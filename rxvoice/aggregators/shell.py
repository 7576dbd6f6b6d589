"""Moved: the stage shell is the runtime's (:mod:`rxvoice.pipeline.shell`); these names warn and go in 0.3."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__: list[str] = []  # the moved names are found through __getattr__, with a warning

_MOVED = frozenset({"RUNNING", "StageShell", "TurnShell", "TurnStage"})


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(
            f"rxvoice.aggregators.shell.{name} moved to rxvoice.pipeline.shell.{name} (the runtime wing); "
            "the old name goes in 0.3",
            DeprecationWarning, stacklevel=2,
        )
        return getattr(importlib.import_module("rxvoice.pipeline.shell"), name)
    raise AttributeError(f"module 'rxvoice.aggregators.shell' has no attribute {name!r}")
