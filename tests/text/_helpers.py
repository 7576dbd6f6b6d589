"""Shared helpers for the text tests."""

from __future__ import annotations

from collections.abc import Iterable

from rxvoice.text import Aggregation, TextAggregator


def feed(aggregator: TextAggregator, chunks: Iterable[str]) -> list[Aggregation]:
    """Feed ``chunks`` one by one and collect every unit completed along the way."""
    out: list[Aggregation] = []
    for chunk in chunks:
        out.extend(aggregator.aggregate(chunk))
    return out


def texts(units: Iterable[Aggregation]) -> list[str]:
    """The text of each unit."""
    return [u.text for u in units]


def flushed_text(aggregator: TextAggregator) -> str | None:
    """The text ``flush`` returns, or None."""
    unit = aggregator.flush()
    return None if unit is None else unit.text
