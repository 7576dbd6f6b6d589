"""Shared test fixtures: where the shared speech fixtures and models live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The shared fixtures folder (``RXVOICE_SHARED``, else ``../shared`` next to the repo, else /work/shared)."""
    for candidate in (os.environ.get("RXVOICE_SHARED"), REPO.parent / "shared", Path("/work/shared")):
        if candidate and (Path(candidate) / "audio").is_dir():
            return Path(candidate)
    raise RuntimeError("the shared fixtures (audio, models) were not found; set RXVOICE_SHARED")


@pytest.fixture(scope="session")
def shared() -> Path:
    """Path of the shared fixtures folder."""
    return shared_dir()
