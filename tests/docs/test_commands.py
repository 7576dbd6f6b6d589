"""The commands in the docs are the ones a new user can type from the repository root after command 1.

The README and the quickstart open with the same two commands; every shell
line in ``docs/``, ``README.md`` and ``benchmarks/README.md`` calls the
programs in ``.venv/bin/`` (there is no activated environment to rely on),
and so does every command written inline (``python ...``, ``pytest ...``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`((?:python3?|pytest|pip|mkdocs|mypy|ruff) [^`]*)`")
COMMAND_1 = ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/rxvoice model install "
             "&& .venv/bin/rxvoice demo")


def _pages() -> list[Path]:
    return [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md", REPO / "benchmarks" / "README.md"]


def _first_shell_block(page: Path) -> str:
    match = SHELL_BLOCK.search(page.read_text(encoding="utf-8"))
    assert match is not None, f"{page} has no shell block"
    return match.group(1)


def test_readme_and_quickstart_open_with_the_same_two_commands() -> None:
    """Command 1 installs, fetches the model and runs the demo; command 2 runs the tests; both pages agree."""
    readme = _first_shell_block(REPO / "README.md")
    assert readme == _first_shell_block(REPO / "docs" / "quickstart.md")
    commands = [line for line in readme.splitlines() if line.strip() and not line.startswith("#")]
    assert commands == [COMMAND_1, ".venv/bin/python -m pytest"]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_uses_the_environment_of_command_1(page: Path) -> None:
    """Shell lines and inline commands run `.venv/bin/...` (command 1 itself creates it)."""
    text = page.read_text(encoding="utf-8")
    bad = []
    for block in SHELL_BLOCK.findall(text):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith("#") and line != COMMAND_1 and not line.startswith(".venv/bin/"):
                bad.append(line)
    bad += INLINE.findall(text)
    assert bad == [], f"{page.relative_to(REPO)}: not runnable as written after command 1: {bad}"
