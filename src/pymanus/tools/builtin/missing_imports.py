"""Standard-library modules a Python file uses and never imports: found, and added by the file tools.

add_function, runs 222, 224 and 225: the 1.5B wrote ``re.sub`` into slugify without
``import re``. Told so, it tried to put ``import re`` in front of the ``re.sub`` line
(``title = import re``), or inside the function at the wrong indentation, had both edits
refused, and spent its steps on the pattern while every call raised NameError. A name
that is a standard-library module, used as ``re.sub(...)`` and bound nowhere in the file (no
import, assignment, parameter or definition), can only mean that module, so ``write_file``
and ``edit_file`` add the import at the top, with a note. Code the ``python`` tool runs
itself writes files unchanged: for those the workspace notes carry the same finding as a
warning (:func:`pymanus.tools.builtin.file_formats.unimported_modules`).
"""

from __future__ import annotations

import ast
import sys


def missing_modules(tree: ast.Module) -> list[tuple[int, str]]:
    """(first line, module) for each standard-library module ``tree`` uses as ``module.attr`` and never
    binds, by line; [] after a star import, which may bind any name."""
    used: dict[str, int] = {}
    bound: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and isinstance(node.value.ctx, ast.Load)
        ):
            used.setdefault(node.value.id, node.lineno)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    if "*" in bound:
        return []
    return sorted((line, name) for name, line in used.items() if name in sys.stdlib_module_names and name not in bound)


def with_missing_imports(text: str) -> tuple[str, list[str]]:
    """``text`` with ``import x`` added for each module :func:`missing_modules` finds, and those modules.

    The imports go after the module's docstring and the imports it starts with; ``text`` comes back
    unchanged when it does not parse or imports nothing that is missing.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text, []
    modules = [name for _, name in missing_modules(tree)]
    if not modules or not tree.body:
        return text, []
    first = tree.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    head = int(docstring)  # the statements before the new imports: the docstring and the leading imports
    while head < len(tree.body) and isinstance(tree.body[head], ast.Import | ast.ImportFrom):
        head += 1
    lines = text.splitlines(keepends=True)
    at = (tree.body[head - 1].end_lineno or 0) if head else first.lineno - 1
    if at and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    imports = [f"import {name}\n" for name in modules]
    if head == int(docstring):  # no imports yet: they go before the code, two blank lines apart from it
        while at < len(lines) and not lines[at].strip():
            at += 1
        imports += ["\n", "\n"] if at < len(lines) else []
    return "".join([*lines[:at], *imports, *lines[at:]]), modules


def add_missing_imports(path: str, text: str) -> tuple[str, str]:
    """``text`` with the imports it lacks added (:func:`with_missing_imports`), and the note saying so
    ("" when none were): the lines after the new imports moved down, so a note gives how far."""
    added, modules = with_missing_imports(text)
    if not modules:
        return text, ""
    moved = len(added.splitlines()) - len(text.splitlines())
    imports = ", ".join(f"`import {name}`" for name in modules)
    return added, (
        f"\nNote: {path} uses {', '.join(modules)} but did not import {'it' if len(modules) == 1 else 'them'}, "
        f"which would raise NameError, so {imports} was added at the top (the file's lines after it moved down "
        f"by {moved})."
    )
