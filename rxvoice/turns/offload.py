"""Moved: where heavy work runs is the runtime's business (:mod:`rxvoice.pipeline.offload`).

The decisions in :mod:`rxvoice.turns` hold no scheduler; these names warn and go in 0.3.
"""

from __future__ import annotations

from .._moved import moved_names

__all__: list[str] = []  # the moved names are found through __getattr__, with a warning

__getattr__ = moved_names(__name__, "rxvoice.pipeline.offload", {"Offload", "SchedulerOffload", "inline_offload"},
                          also="(also in rxvoice.workers)")
