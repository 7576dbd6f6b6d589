"""Moved: the VAD controller is the audio side's (:mod:`rxvoice.audio.vad.controller`); these names warn."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__: list[str] = []  # the moved names are found through __getattr__, with a warning


def __getattr__(name: str) -> Any:
    module = importlib.import_module("rxvoice.audio.vad.controller")
    if name in module.__all__:
        warnings.warn(
            f"rxvoice.turns.vad_controller.{name} moved to rxvoice.audio.vad.controller.{name}; "
            "the old name goes in 0.3",
            DeprecationWarning, stacklevel=2,
        )
        return getattr(module, name)
    raise AttributeError(f"module 'rxvoice.turns.vad_controller' has no attribute {name!r}")
