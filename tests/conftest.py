"""Shared test fixtures: where the shared speech fixtures and models live."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import shared_dir, smart_turn_model_path


@pytest.fixture(scope="session")
def shared() -> Path:
    """Path of the shared fixtures folder."""
    return shared_dir()


@pytest.fixture(scope="session")
def smart_turn_model() -> Path:
    """The Smart Turn v3.2 model: $RXVOICE_SMART_TURN_MODEL or ../shared/models/ (a missing one fails loudly)."""
    try:
        return smart_turn_model_path()
    except RuntimeError as exc:
        pytest.fail(str(exc))
