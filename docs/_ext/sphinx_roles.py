"""Griffe extension for the docs build: Sphinx-style roles in docstrings become cross-references.

rxvoice's docstrings use ``:class:`~rxvoice.turns.TurnAnalyzerStop```-style
roles (readable in ``help()`` and editors). mkdocstrings reads Markdown, where
they would show up verbatim. This extension rewrites each role into an
*optional* autorefs link: a link when the target is rendered in the API
reference, plain code otherwise (never a build warning). A ``~`` prefix shows
only the last component, as in Sphinx. Relative names are resolved in the
docstring owner's scope. It also turns reST's ``text::`` literal-block marker
into ``text:``, since the indented block after it is already code in Markdown,
and a reactivex-style ``.. marble::`` block (the diagrams of
:mod:`rxvoice.operators`) into a fenced ``text`` block.

Loaded by mkdocs.yml (``extensions: [docs/_ext/sphinx_roles.py]``); used only
at docs build time, never imported by rxvoice.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const):`(?P<target>[^`]+)`")
LITERAL_MARKER = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)
LONE_LITERAL_MARKER = re.compile(r"^[ \t]*::[ \t]*\n", re.MULTILINE)


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path ``target`` names, seen from ``obj`` (``None`` if it names nothing known)."""
    if target.startswith("rxvoice"):
        return target
    head, _, rest = target.partition(".")
    scopes: list[griffe.Object] = [obj]
    parent = obj.parent
    while parent is not None:
        scopes.append(parent)
        parent = parent.parent
    for scope in scopes:
        try:
            base = scope.resolve(head)
        except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError):
            continue
        return f"{base}.{rest}" if rest else base
    return None


MARBLE = re.compile(r"^(?P<indent>[ \t]*)\.\. marble::[ \t]*$")
MARBLE_OPTION = re.compile(r"^[ \t]+:\w+:")


def _marbles(text: str) -> str:
    """``.. marble::`` directives (options dropped, the diagram kept verbatim) as fenced text blocks."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = MARBLE.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        indent = match["indent"]
        i += 1
        while i < len(lines) and MARBLE_OPTION.match(lines[i]):
            i += 1
        body: list[str] = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        cut = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        out.append(f"{indent}```text")
        out.extend(indent + b[cut:] if b.strip() else "" for b in body)
        out.extend([f"{indent}```", ""])
    return "\n".join(out)


def _rewrite(obj: griffe.Object, text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        target = match["target"].strip()
        short = target.startswith("~")
        target = target.lstrip("~").removesuffix("()")
        title = target.rsplit(".", 1)[-1] if short else target
        path = _resolve(obj, target)
        code = f"<code>{html.escape(title)}</code>"
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    text = _marbles(ROLE.sub(replace, text))
    text = LONE_LITERAL_MARKER.sub("", text)
    return LITERAL_MARKER.sub(":", text)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles of every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = _rewrite(obj, obj.docstring.value)
            for member in obj.members.values():
                if not member.is_alias:
                    stack.append(member)  # type: ignore[arg-type]
