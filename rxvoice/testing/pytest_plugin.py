"""pytest fixtures for frame marbles (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

import pytest

from .marbles import FrameMarbles

__all__ = ["marbles"]


@pytest.fixture
def marbles() -> FrameMarbles:
    """A fresh :class:`FrameMarbles` bench on its own ``TestScheduler`` (0.1 s per ``-``)."""
    return FrameMarbles()
