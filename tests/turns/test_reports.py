"""Turn reports' timestamps: exactly what ``datetime`` writes, whatever the rounding."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from rxvoice.turns.reports import iso8601

# Ties and near-ties of the microsecond rounding (half to even), negative times, whole seconds, far times.
EDGES = [
    0.0, -0.0, 0, 1, 0.001, 5e-7, 1.5e-6, 2.5e-6, -5e-7, -1.5e-6, 0.9999995, 0.99999949, -0.9999995, 59.9999996,
    86399.9999996, 1.7e9 + 0.9999995, 9.9e9 + 0.5, -9.9e9 + 0.25, 1e-300, -1e-300, 2e10 + 0.1234565, -2e10 - 0.5,
]


def _datetime(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


@pytest.mark.parametrize("seconds", EDGES)
def test_a_stamp_is_what_datetime_writes(seconds: float) -> None:
    iso8601.cache_clear()
    assert iso8601(seconds) == _datetime(seconds)


def test_stamps_of_many_times_are_what_datetime_writes() -> None:
    rng = random.Random(8601)
    for _ in range(20000):
        seconds = rng.uniform(-1.0, 1.0) * 10 ** rng.uniform(-8, 10)
        if rng.random() < 0.3:
            seconds = round(seconds, rng.choice([3, 6, 7]))
        iso8601.cache_clear()
        assert iso8601(seconds) == _datetime(seconds), seconds


def test_a_time_datetime_refuses_is_refused_the_same_way() -> None:
    with pytest.raises(ValueError):
        _datetime(float("nan"))
    with pytest.raises(ValueError):
        iso8601(float("nan"))
