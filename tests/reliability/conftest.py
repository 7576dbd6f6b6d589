"""Fixtures of the reliability suite: the stress level, loading a benchmark, catching contained crashes."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support import REPO, load_script


def full_stress() -> bool:
    """Whether the long forms run (``RXVOICE_STRESS=full``); CI runs the short forms."""
    return os.environ.get("RXVOICE_STRESS", "").strip().lower() == "full"


def load_benchmark(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` (the long runs live there; the tests run their short forms)."""
    key = f"rxvoice_benchmark_{name}"
    if key in sys.modules:
        return sys.modules[key]
    return load_script(REPO / "benchmarks" / f"{name}.py", key)


class Crashes(logging.Handler):
    """Records every exception rxvoice logged with a traceback (contained, but a bug all the same)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []
        self.errors: list[logging.LogRecord] = []
        """Every ERROR record, with a traceback or not."""

    def emit(self, record: logging.LogRecord) -> None:
        self.errors.append(record)
        if record.exc_info:
            self.records.append(record)

    def messages(self) -> list[str]:
        """What was logged, with the exception."""
        return [f"{r.name}: {r.getMessage()} ({r.exc_info[1]!r})" for r in self.records if r.exc_info]

    def clear(self) -> None:
        self.records.clear()
        self.errors.clear()


@pytest.fixture
def crashes() -> Iterator[Crashes]:
    """Exceptions rxvoice caught and logged with a traceback during the test (assert there are none)."""
    handler = Crashes()
    logger = logging.getLogger("rxvoice")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
