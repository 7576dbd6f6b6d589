"""The code on the documentation pages runs as written, so the docs cannot drift from the library.

Every ``python`` block of every page runs, in order, in one namespace per
page. A block that only includes a file (``--8<-- "examples/..."``) shows
part of an example, which ``tests/examples/`` runs whole.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from rxvoice.testing import FrameMarbles

DOCS = Path(__file__).resolve().parents[2] / "docs"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
INCLUDE_ONLY = re.compile(r'\A(\s*--8<-- "[^"]+"\s*)+\Z')


def pages_with_code() -> list[str]:
    """Every page (but the quickstart, tested below) with a python block that is not an include."""
    out = []
    for path in sorted(DOCS.rglob("*.md")):
        blocks = PYTHON_BLOCK.findall(path.read_text(encoding="utf-8"))
        if any(not INCLUDE_ONLY.match(b) for b in blocks) and path.name != "quickstart.md":
            out.append(str(path.relative_to(DOCS)))
    return out


def run_page(page: str) -> dict[str, Any]:
    """Execute a page's ``python`` blocks in order, in one namespace, then its ``test_*`` functions."""
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = [b for b in PYTHON_BLOCK.findall(text) if not INCLUDE_ONLY.match(b)]
    assert blocks, f"{page} has no python blocks"
    # A real module, so dataclasses and pickling defined on the page can find it.
    module = types.ModuleType(f"docs_{Path(page).stem.replace('-', '_')}")
    sys.modules[module.__name__] = module
    namespace: dict[str, Any] = module.__dict__
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{page} (python block {number})", "exec"), namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test_") and inspect.isfunction(value):
            needs_marbles = "marbles" in inspect.signature(value).parameters
            value(FrameMarbles()) if needs_marbles else value()
    return namespace


@pytest.mark.parametrize("page", pages_with_code())
def test_the_code_on_the_page_runs(page: str, monkeypatch: pytest.MonkeyPatch, smart_turn_model: Path) -> None:
    """Every python block of the page runs, in order, with its asserts holding (the model found as a user's is)."""
    monkeypatch.setenv("RXVOICE_SMART_TURN_MODEL", str(smart_turn_model))
    run_page(page)


def test_every_page_with_code_is_run() -> None:
    """(guard) the pages whose code runs include the guides that show stages and models."""
    assert {"index.md", "concepts.md", "testing.md", "audio.md", "turn-taking.md", "text.md",
            "summarization.md"} <= set(pages_with_code())


def test_the_quickstart_program_prints_what_the_page_says(capsys: pytest.CaptureFixture[str]) -> None:
    """The quickstart's 20-line program holds the conversation shown right after it."""
    run_page("quickstart.md")
    text = (DOCS / "quickstart.md").read_text(encoding="utf-8")
    shown = re.search(r"It prints:\n\n```text\n(.*?)```", text, re.DOTALL)
    assert shown is not None
    assert capsys.readouterr().out == shown.group(1)
