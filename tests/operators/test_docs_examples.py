"""The examples in the operators' docstrings (and in the stages built on them) run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "rxvoice.operators",
    "rxvoice.operators._chunk",
    "rxvoice.operators._curry",
    "rxvoice.operators._buffer_until",
    "rxvoice.operators._split_text",
    "rxvoice.operators._aggregate_text",
    "rxvoice.operators._gate",
    "rxvoice.aggregators.sentence",
    "rxvoice.aggregators.llm_text",
    "rxvoice.aggregators.gates",
]


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_hold(name: str) -> None:
    """Every ``>>>`` example of the module gives the output written under it."""
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
