"""Public names that moved keep working from where they were, with a DeprecationWarning naming the new home."""

from __future__ import annotations

import importlib

import pytest

MOVED = [
    ("rxvoice.turns", "SchedulerOffload", "rxvoice.pipeline.offload"),
    ("rxvoice.turns", "inline_offload", "rxvoice.pipeline.offload"),
    ("rxvoice.turns", "Offload", "rxvoice.pipeline.offload"),
    ("rxvoice.turns.offload", "SchedulerOffload", "rxvoice.pipeline.offload"),
    ("rxvoice.turns.vad_controller", "vad_step", "rxvoice.audio.vad.controller"),
    ("rxvoice.turns.vad_controller", "VADSettings", "rxvoice.audio.vad.controller"),
    ("rxvoice.aggregators.shell", "TurnShell", "rxvoice.pipeline.shell"),
    ("rxvoice.aggregators.shell", "StageShell", "rxvoice.pipeline.shell"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_a_moved_name_still_imports_with_a_warning(old: str, name: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)


def test_the_idle_watchs_old_effect_type_still_imports_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="USER_IDLE"):
        from rxvoice.turns.idle import IdleEffect  # noqa: F401


def test_the_runtime_names_are_where_the_runtime_is() -> None:
    """The workers module and the pipeline package hand out the very same offloads and pool."""
    pipeline = importlib.import_module("rxvoice.pipeline")  # (rxvoice.pipeline the attribute is the function)
    workers = importlib.import_module("rxvoice.workers")

    assert workers.shared_pool is pipeline.shared_pool and workers.inline_offload is pipeline.inline_offload
    assert workers.default_offload is pipeline.default_offload and workers.SchedulerOffload is pipeline.SchedulerOffload


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    for module in ("rxvoice.turns", "rxvoice.turns.offload", "rxvoice.turns.vad_controller",
                   "rxvoice.aggregators.shell"):
        with pytest.raises(AttributeError):
            importlib.import_module(module).NoSuchName  # noqa: B018
