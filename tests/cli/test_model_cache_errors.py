"""`rxvoice model install` into a cache it cannot write: one clear line, nothing half-written left behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from .conftest import run_cli
from .test_bad_input import one_line_error


def test_a_read_only_cache_is_one_line_and_leaves_nothing(without_model: Path, smart_turn_model: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing the model fails at its last step (the rename into place, as on a read-only disk): no partial file."""
    def refused(src: object, dst: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "replace", refused)
    line = one_line_error(run_cli("model", "install", "--from", str(smart_turn_model)))
    assert line == "rxvoice: error: cannot install the model: Permission denied"
    cache = without_model / "rxvoice"
    assert not (cache / "smart-turn-v3.2-cpu.onnx").exists()
    assert [p.name for p in cache.iterdir()] == []  # the temporary copy is gone too


def test_a_cache_that_is_not_a_folder_is_one_line(without_model: Path, smart_turn_model: Path) -> None:
    without_model.mkdir(parents=True, exist_ok=True)
    (without_model / "rxvoice").write_text("a file where the cache folder should be")
    line = one_line_error(run_cli("model", "install", "--from", str(smart_turn_model)))
    assert line.startswith("rxvoice: error: cannot install the model: ")
    assert (without_model / "rxvoice").read_text() == "a file where the cache folder should be"
