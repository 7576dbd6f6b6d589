"""The code on the documentation pages runs as written, so the docs cannot drift from the library."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from rxvoice.testing import FrameMarbles

DOCS = Path(__file__).resolve().parents[2] / "docs"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def run_page(page: str) -> dict[str, Any]:
    """Execute a page's ``python`` blocks in order, in one namespace, then its ``test_*`` functions."""
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = PYTHON_BLOCK.findall(text)
    assert blocks, f"{page} has no python blocks"
    namespace: dict[str, Any] = {"__name__": f"docs_{Path(page).stem}"}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{page} (python block {number})", "exec"), namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test_") and inspect.isfunction(value):
            needs_marbles = "marbles" in inspect.signature(value).parameters
            value(FrameMarbles()) if needs_marbles else value()
    return namespace


@pytest.mark.parametrize("page", ["index.md", "concepts.md", "testing.md", "text.md"])
def test_the_code_on_the_page_runs(page: str) -> None:
    """Every python block of the page runs, in order, with its asserts holding."""
    run_page(page)


def test_the_quickstart_program_prints_what_the_page_says(capsys: pytest.CaptureFixture[str]) -> None:
    """The quickstart's 20-line program holds the conversation shown right after it."""
    run_page("quickstart.md")
    text = (DOCS / "quickstart.md").read_text(encoding="utf-8")
    shown = re.search(r"It prints:\n\n```text\n(.*?)```", text, re.DOTALL)
    assert shown is not None
    assert capsys.readouterr().out == shown.group(1)
