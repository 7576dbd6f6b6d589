"""The API reference (docs/reference/) documents every public name, and every module says what is public.

The reference pages render objects with mkdocstrings directives::

    ::: rxvoice.events
        options:
          members:
            - EventRegistry
            - ...

Members are listed explicitly, so a name newly added to a module's
``__all__`` is not in the reference until someone lists it, and these tests
say so. (``mkdocs build --strict``, run by CI, then checks every listed name
resolves and renders.)
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import rxvoice

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference"
MKDOCS_YML = REPO / "mkdocs.yml"

# The public modules: every direct child of rxvoice, plus the submodules whose names users import
# directly (the strategy effects for custom strategies, the VAD operator, the pytest fixture).
PUBLIC_SUBMODULES = (
    "rxvoice.audio.vad",
    "rxvoice.audio.turn",
    "rxvoice.audio.vad_processor",
    "rxvoice.audio.recommended",
    "rxvoice.turns.strategy",
    "rxvoice.testing.pytest_plugin",
    "rxvoice.services.stt",
    "rxvoice.services.whisper",
    "rxvoice.services.whisper_model",
    "rxvoice.services.spoken",
    "rxvoice.services.tts",
)


def top_level_modules() -> list[str]:
    """``rxvoice`` and its direct, non-private children (a new one is public by default)."""
    children = [info.name for info in pkgutil.iter_modules(rxvoice.__path__) if not info.name.startswith("_")]
    return ["rxvoice", *sorted(f"rxvoice.{name}" for name in children)]


def public_modules() -> list[str]:
    return top_level_modules() + list(PUBLIC_SUBMODULES)


def all_modules() -> list[str]:
    """Every importable rxvoice module whose path has no private component."""
    names = ["rxvoice"]
    for info in pkgutil.walk_packages(rxvoice.__path__, "rxvoice."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


@dataclass(frozen=True)
class Directive:
    """One ``::: identifier`` block of a reference page."""

    page: str
    identifier: str
    members: tuple[str, ...] | None


DIRECTIVE = re.compile(r"^:::\s+(\S+)\s*$")
MEMBER = re.compile(r"^\s+-\s+(\S+)\s*$")


def directives() -> list[Directive]:
    """Every mkdocstrings directive of the reference pages, with its explicit members list (if any)."""
    found: list[Directive] = []
    for page in sorted(REFERENCE.glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            match = DIRECTIVE.match(lines[i])
            i += 1
            if not match:
                continue
            members: list[str] | None = None
            while i < len(lines) and (lines[i].startswith(" ") or not lines[i].strip()):
                line = lines[i]
                if line.strip() == "members:":
                    members = []
                elif members is not None and (m := MEMBER.match(line)):
                    members.append(m.group(1))
                elif members is not None and line.strip():
                    break
                i += 1
            found.append(Directive(page.name, match.group(1), tuple(members) if members is not None else None))
    return found


def resolve(identifier: str) -> object:
    """The object a dotted identifier names (a module, or an attribute of one)."""
    try:
        return importlib.import_module(identifier)
    except ImportError:
        module, _, name = identifier.rpartition(".")
        return getattr(importlib.import_module(module), name)


def module_all(name: str) -> list[str]:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{name} has no __all__"
    return list(names)


def shadowed(module: str, member: str) -> bool:
    """Whether ``module.member`` is also a submodule that the attribute hides (``rxvoice.pipeline``, the function).

    Griffe, which renders the reference, takes such a name for the submodule, so listing it under
    ``members:`` renders nothing: the object must be rendered from its defining module instead.
    """
    parent = importlib.import_module(module)
    if not hasattr(parent, "__path__"):
        return False  # a plain module has no submodules
    full = f"{module}.{member}"
    return importlib.util.find_spec(full) is not None and getattr(parent, member) is not importlib.import_module(full)


def test_every_public_name_is_in_the_api_reference() -> None:
    """Each name of each public module's __all__ is rendered by a reference page (listed, or its own directive)."""
    blocks = directives()
    listed = {(d.identifier, n) for d in blocks for n in d.members or () if not shadowed(d.identifier, n)}
    rendered = {d.identifier for d in blocks}
    rendered_objects = {id(resolve(d.identifier)) for d in blocks}
    rendered_objects |= {id(getattr(importlib.import_module(m), n)) for m, n in listed}
    missing: list[str] = []
    for name in public_modules():
        module: ModuleType = importlib.import_module(name)
        for member in module_all(name):
            value = getattr(module, member)
            if (name, member) in listed:
                continue
            if isinstance(value, ModuleType) and value.__name__ in rendered:
                continue  # a submodule with a page (or block) of its own
            if (isinstance(value, type) or callable(value)) and id(value) in rendered_objects:
                continue  # the same class or function, rendered under another public path
            missing.append(f"{name}.{member}")
    assert not missing, (
        "not in the API reference: " + ", ".join(missing)
        + ". List each under `members:` of the module's `::: module` block in docs/reference/ "
        "(a new module gets a page there and a line in mkdocs.yml's nav)."
    )


def test_no_listed_member_is_hidden_by_a_submodule() -> None:
    """A name that a submodule of the same name shadows for griffe is rendered by its own directive instead."""
    hidden = [
        f"{d.page}: {d.identifier}.{n}" for d in directives() for n in d.members or () if shadowed(d.identifier, n)
    ]
    assert not hidden, f"these render nothing (griffe sees the submodule); use `::: defining.module.name`: {hidden}"


def test_every_public_module_has_a_block_in_the_reference() -> None:
    """Each public module (a new top-level one included) is rendered by some reference page."""
    rendered = {d.identifier for d in directives()}
    missing = [name for name in public_modules() if name not in rendered]
    assert not missing, f"public modules without a `::: module` block in docs/reference/: {missing}"


def test_module_blocks_list_their_members_explicitly() -> None:
    """Module blocks list members explicitly, each one exported by the module (no stale or private names)."""
    problems: list[str] = []
    for block in directives():
        if not isinstance(resolve(block.identifier), ModuleType):
            continue
        if block.members is None:
            problems.append(f"{block.page}: `::: {block.identifier}` has no explicit members list")
            continue
        exported = set(module_all(block.identifier))
        stale = [m for m in block.members if m not in exported]
        if stale:
            problems.append(f"{block.page}: {block.identifier} lists names not in its __all__: {stale}")
        if len(set(block.members)) != len(block.members):
            problems.append(f"{block.page}: {block.identifier} lists a name twice")
    assert not problems, "\n".join(problems)


def test_every_reference_page_is_in_the_nav() -> None:
    """Each reference page is reachable from the site's navigation (mkdocs only notes orphans)."""
    nav = MKDOCS_YML.read_text(encoding="utf-8")
    orphans = [p.name for p in REFERENCE.glob("*.md") if f"reference/{p.name}" not in nav]
    assert not orphans, f"reference pages missing from mkdocs.yml nav: {orphans}"


def test_every_public_module_declares_an_explicit_all_of_existing_names() -> None:
    """Every non-private rxvoice module has an explicit __all__ of unique strings naming real attributes."""
    problems: list[str] = []
    for name in all_modules():
        module = importlib.import_module(name)
        names = module.__dict__.get("__all__")
        if not isinstance(names, list | tuple):
            problems.append(f"{name}: no explicit __all__ list")
            continue
        if not all(isinstance(n, str) for n in names):
            problems.append(f"{name}: __all__ holds non-strings")
            continue
        if len(set(names)) != len(names):
            problems.append(f"{name}: __all__ names something twice")
        absent = [n for n in names if not hasattr(module, n)]
        if absent:
            problems.append(f"{name}: __all__ names what the module does not have: {absent}")
    assert not problems, "\n".join(problems)


def test_the_listed_public_submodules_exist() -> None:
    """The extra public submodules named above are real modules (a rename must update this list and the pages)."""
    for name in PUBLIC_SUBMODULES:
        assert importlib.util.find_spec(name) is not None, name
