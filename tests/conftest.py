"""Fixtures every test folder may use: the recordings in ``tests/data`` and the Smart Turn model.

The recordings and labels are in the checkout (``tests/data/README.md`` says
how they were made); the model is where ``rxvoice model install`` put it. See
``tests/support.py`` for the same things as plain functions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import booking_paths, data_dir, smart_turn_model_path


@pytest.fixture(scope="session")
def data() -> Path:
    """``tests/data``: the suite's recordings, transcripts and labels."""
    return data_dir()


@pytest.fixture(scope="session")
def booking_wav() -> Path:
    """``tests/data/conversation/booking.wav`` (its transcript, booking.transcript.json, lies beside it)."""
    return booking_paths()[0]


@pytest.fixture(scope="session")
def smart_turn_model() -> Path:
    """The Smart Turn v3.2 model, found as the CLI finds it (a missing one fails in one line naming the fix)."""
    return smart_turn_model_path()
