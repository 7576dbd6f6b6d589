"""Moved: where heavy work runs is the runtime's business (:mod:`rxvoice.pipeline.offload`).

The decisions in :mod:`rxvoice.turns` hold no scheduler; these names warn and go in 0.3.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__: list[str] = []  # the moved names are found through __getattr__, with a warning

_MOVED = frozenset({"Offload", "SchedulerOffload", "inline_offload"})


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(
            f"rxvoice.turns.offload.{name} moved to rxvoice.pipeline.offload.{name} (also in rxvoice.workers); "
            "the old name goes in 0.3",
            DeprecationWarning, stacklevel=2,
        )
        return getattr(importlib.import_module("rxvoice.pipeline.offload"), name)
    raise AttributeError(f"module 'rxvoice.turns.offload' has no attribute {name!r}")
