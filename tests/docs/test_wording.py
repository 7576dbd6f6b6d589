"""The docs speak to users about rxvoice: no internal words, section numbers, machines or machine paths.

Checked: every page in ``docs/``, ``README.md``, ``benchmarks/README.md``, and
the docstrings of the package, the examples, the benchmarks and the scripts.
Facts about the reference systems name them (Pipecat 1.14; jargo, the Go port
of Pipecat); the development set-up (its folders, its virtual environments,
its CPU) is nobody else's business.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FORBIDDEN = {
    r"\bseed\b|\bseed's\b": "the reference systems by name: Pipecat 1.14, jargo (the Go port of Pipecat)",
    r"\bthe issue\b|\bthe issue's\b|\bissue \d+": "what the change does for the user, not the ticket",
    r"§\s*\d": "no section numbers of internal notes",
    r"pipecat-behavior|seed-behavior|benchmarking-pipecat\.md|rx-conventions": "no internal reference notes",
    r"\bEPYC\b|\bXeon\b|\bRyzen\b|\bCore i\d\b": "no CPU models",
    r"\bthis machine\b|\bthe development machine\b|\bthis \d+-core\b": "not the developers' machine",
    # (written so that a search of the tests for machine paths finds no false hit here)
    r"/wor[k]/|benchvenv|\.\.[/]shared|\bshared/(audio|models|reference)": "no developer-only paths",
}

PATTERN = re.compile("|".join(f"(?:{p})" for p in FORBIDDEN), re.IGNORECASE)


def _pages() -> list[Path]:
    return [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md", REPO / "benchmarks" / "README.md"]


def _sources() -> list[Path]:
    folders = ("rxvoice", "examples", "benchmarks", "scripts", "docs")
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py") if ".venv" not in p.parts)


def _docstrings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                found.append((body[0].lineno, body[0].value.value))
    return found


def _hits(text: str) -> list[str]:
    out = []
    for m in PATTERN.finditer(text):
        rule = next(why for p, why in FORBIDDEN.items() if re.fullmatch(p, m.group(0), re.IGNORECASE))
        out.append(f"{m.group(0)!r} ({rule})")
    return out


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_pages_speak_to_users(page: Path) -> None:
    """No internal word, section number, machine or machine path on the page."""
    bad = [f"line {n}: {hit}" for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
           for hit in _hits(line)]
    assert bad == [], f"{page.relative_to(REPO)}: " + "; ".join(bad)


def test_docstrings_speak_to_users() -> None:
    """The same for every docstring (module, class, function) of the package, examples, benchmarks, scripts."""
    bad = [f"{path.relative_to(REPO)}:{line}: {hit}" for path in _sources() for line, doc in _docstrings(path)
           for hit in _hits(doc)]
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize(
    "text",
    ["as in the seed", "the issue's report", "Pipecat §8.11", "this machine (2 cores, AMD EPYC)",
     "/opt/benchvenv/bin/python", "/" + "work/x", ".." + "/shared/audio", "see shared/audio/README.md",
     "pipecat-behavior notes"],
)
def test_the_check_catches_what_it_is_for(text: str) -> None:
    """(guard) each kind of slip is caught; plain user-facing wording is not."""
    assert _hits(text)
    assert not _hits("rxvoice matches Pipecat 1.14 and jargo, the Go port of Pipecat; a seeded corpus")
