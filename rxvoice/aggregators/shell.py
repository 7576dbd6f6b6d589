"""Moved: the stage shell is the runtime's (:mod:`rxvoice.pipeline.shell`); these names warn and go in 0.3."""

from __future__ import annotations

from .._moved import moved_names

__all__: list[str] = []  # the moved names are found through __getattr__, with a warning

__getattr__ = moved_names(__name__, "rxvoice.pipeline.shell", {"RUNNING", "StageShell", "TurnShell", "TurnStage"},
                          also="(the runtime wing)")
