"""A lint of code that looks for text the workspace's files have only in another case.

rename_product: the 1.5B's code checked ``if 'skylark' in read_file(path)`` before renaming, in
files that all say "Skylark"; it matched nothing, printed "Updated all documents" and the model
believed it, three times. Nothing fails when a search finds nothing, so the tool says so.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pymanus.tools.builtin.workspace_scan import scan

_FILES_LOOKED_AT = 200
_BYTES_READ = 64_000
_MIN_CHARS = 3
_CASE_CHANGES = frozenset({"lower", "upper", "casefold", "title", "capitalize"})
_SEARCHES = frozenset({"replace", "count", "find", "index", "split"})
"""Methods whose first argument is text looked for in the text they are called on (not startswith or
endswith: their text is mostly a file name, and `.MD` is no search of the files)."""


def searched_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """The string literals the code looks for in text it does not change the case of, with their lines:
    ``'x' in text``, ``text.replace('x', ...)`` (and count, find, ...), ``edit_file(path, 'x', ...)``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            if not _case_changed(node.comparators[0]):
                found.append((node.lineno, _literal(node.left)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SEARCHES:
            if node.args and not _case_changed(node.func.value):
                found.append((node.lineno, _literal(node.args[0])))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "edit_file":
            named = {keyword.arg: keyword.value for keyword in node.keywords}
            found.append((node.lineno, _literal(node.args[1] if len(node.args) > 1 else named.get("old_text"))))
    return [(line, text) for line, text in found if len(text.strip()) >= _MIN_CHARS]


def _literal(node: ast.AST | None) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _case_changed(node: ast.AST) -> bool:
    """Whether ``node`` is text whose case the code changed (``text.lower()``)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASE_CHANGES


def other_case_search(source: str, workspace: Path) -> str | None:
    """What is wrong when the code looks for a literal no workspace file has, while some have it in
    another case (``'skylark'`` in files that say "Skylark")."""
    try:
        literals = searched_literals(ast.parse(source))
    except (SyntaxError, ValueError):
        return None
    if not literals:
        return None
    texts = _workspace_texts(workspace)
    for line, literal in literals:
        if any(literal in text for text in texts.values()):
            continue
        holders = [name for name, text in texts.items() if literal.casefold() in text.casefold()]
        if holders:
            text = texts[holders[0]]
            start = text.casefold().index(literal.casefold())
            spelled = text[start : start + len(literal)]
            more = f" and {len(holders) - 1} more file{'s' * (len(holders) > 2)}" if len(holders) > 1 else ""
            return (
                f"line {line} looks for {literal!r}, which no workspace file has; {holders[0]}{more} "
                f"{'have' if more else 'has'} {spelled!r}, in another case. Search for the text as the files "
                "spell it (the search found nothing, without an error)"
            )
    return None


def _workspace_texts(workspace: Path) -> dict[str, str]:
    """The workspace's text files (relative path: the start of their text), a bounded number."""
    texts: dict[str, str] = {}
    for name in sorted(scan(workspace) or {})[:_FILES_LOOKED_AT]:
        try:
            with (workspace / name).open("rb") as handle:
                data = handle.read(_BYTES_READ)
        except OSError:
            continue
        if b"\0" not in data:
            texts[name] = data.decode("utf-8", errors="replace")
    return texts
