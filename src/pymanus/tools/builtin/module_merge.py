"""A rewrite of a Python module that holds only the new code, merged into the module.

Asked to add a function and keep the others, the 1.5B rewrote ``textutils.py`` as its new
``slugify`` alone, and once told that this lost two functions it never wrote the whole file
again. The rewrite says what the model means to add or change; the module says what must stay.
"""

from __future__ import annotations

import ast
import builtins
import difflib

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)


def merged_module(before: str, after: str) -> str | None:
    """``before`` with the top-level statements of ``after`` merged in, or None.

    A function or class ``before`` defines is replaced where it stands by the one of the same
    name; an import ``before`` lacks goes after its imports (or its docstring); anything else
    goes after its last line. None when either side does not parse or the result does not compile.
    """
    try:
        old, new = ast.parse(before), ast.parse(after)
    except (SyntaxError, ValueError):
        return None
    old_lines, new_lines = before.splitlines(), after.splitlines()
    defined = {node.name: node for node in old.body if isinstance(node, _DEFINITIONS)}
    imported = {ast.dump(node) for node in old.body if isinstance(node, _IMPORTS)}
    edits: list[tuple[int, int, list[str]]] = []  # (first line index, end index, new lines) of `before`
    imports: list[str] = []
    tail: list[str] = []
    for node in new.body:
        source = _source(node, new_lines)
        if _is_docstring(node, new):
            continue  # the module keeps its own docstring
        if isinstance(node, _DEFINITIONS) and node.name in defined:
            replaced = defined.pop(node.name)
            edits.append((_first_line(replaced) - 1, _end_line(replaced), source))
        elif isinstance(node, _IMPORTS):
            if ast.dump(node) not in imported:
                imports.extend(source)
        else:
            gap = isinstance(node, _DEFINITIONS) or not tail  # two blank lines before a def, as PEP 8 has it
            tail.extend(["", "", *source] if gap else source)
    if imports:
        after_imports = [node for node in old.body if isinstance(node, _IMPORTS)]
        docstring = [node for node in old.body[:1] if _is_docstring(node, old)]
        anchor = after_imports or docstring
        at = _end_line(anchor[-1]) if anchor else 0
        edits.append((at, at, imports if after_imports or not docstring else ["", *imports]))
    lines = list(old_lines)
    for start, end, replacement in sorted(edits, key=lambda edit: edit[0], reverse=True):
        lines[start:end] = replacement
    while lines and not lines[-1].strip():
        lines.pop()
    merged = "\n".join(lines + tail) + "\n"
    try:
        compile(merged, "<merged>", "exec")
    except (SyntaxError, ValueError):
        return None
    return merged


def misplaced_line(before: str, after: str) -> str | None:
    """Why ``after``, merged into the module ``before``, would break its imports, or None.

    The statements of ``after`` that are neither definitions nor imports run at the top of the
    merged module. When they use a name the module binds nowhere at its top level (a local
    variable of one of its functions), the import fails with NameError: asked to fix one line of
    ``median``, the 1.5B sent ``median = len(ordered) // 2 - 1`` alone as stats.py, and every
    import of stats failed after.
    """
    try:
        old, new = ast.parse(before), ast.parse(after)
    except (SyntaxError, ValueError):
        return None
    bound = set(dir(builtins)) | {"__name__", "__file__", "__doc__"} | _top_level_names(old) | _top_level_names(new)
    for node in new.body:
        if isinstance(node, (*_DEFINITIONS, *_IMPORTS)):
            continue
        unbound = sorted({name for name in _loaded_names(node) if name not in bound})
        if unbound:
            line = ast.get_source_segment(after, node) or ""
            shown = ", ".join(f"`{name}`" for name in unbound)
            close = difflib.get_close_matches(line.strip(), [text.strip() for text in before.splitlines()], n=1)
            where = f": the closest line is {close[0]!r}" if close else ""
            return (
                f"the line {line.splitlines()[0]!r} would run at the top of the module, where {shown} is not "
                f"defined (a function's own names exist only inside it), so every import of it would fail with "
                f"NameError. To change a "
                f"line inside a function, use edit_file with that line as it is now as old_text{where}"
            )
    return None


def _top_level_names(module: ast.Module) -> set[str]:
    """The names a module binds at its top level (not inside its functions, classes or comprehensions)."""
    names: set[str] = set()
    for node in module.body:
        if isinstance(node, _DEFINITIONS):
            names.add(node.name)
        elif isinstance(node, _IMPORTS):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        else:
            names.update(child.id for child in _outer_nodes(node) if isinstance(child, ast.Name) and not _loads(child))
    return names


def _loaded_names(node: ast.stmt) -> set[str]:
    return {child.id for child in _outer_nodes(node) if isinstance(child, ast.Name) and _loads(child)}


def _loads(name: ast.Name) -> bool:
    return isinstance(name.ctx, ast.Load)


_SCOPES = (*_DEFINITIONS, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _outer_nodes(node: ast.AST) -> list[ast.AST]:
    """``node`` and the nodes under it, but not those of the scopes it opens (lambdas, comprehensions)."""
    found = [node]
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, _SCOPES):
            found.extend(_outer_nodes(child))
    return found


def redefinition(before: str, added: str) -> tuple[str, list[str], tuple[int, int]] | None:
    """For code to add to the module ``before`` that redefines some of its functions or classes:
    the module with them replaced where they stand (:func:`merged_module`), their names, and the
    first and last line of the first of them in the result. None for anything else: code with
    statements other than definitions and imports, or that defines nothing ``before`` has.

    Asked to add ``import re`` at the top, the 1.5B added ``import re`` and its whole ``slugify``
    again after the last line, so the module held two; appended code that redefines a function
    means "this is the function now", as a second definition would only shadow the first.
    """
    try:
        old, new = ast.parse(before), ast.parse(added)
    except (SyntaxError, ValueError):
        return None
    if not all(isinstance(node, (*_DEFINITIONS, *_IMPORTS)) for node in new.body):
        return None
    defined = {node.name for node in old.body if isinstance(node, _DEFINITIONS)}
    names = [node.name for node in new.body if isinstance(node, _DEFINITIONS) and node.name in defined]
    merged = merged_module(before, added) if names else None
    if merged is None:
        return None
    first = next(node for node in ast.parse(merged).body if isinstance(node, _DEFINITIONS) and node.name == names[0])
    return merged, names, (_first_line(first), _end_line(first))


def _is_docstring(node: ast.stmt, module: ast.Module) -> bool:
    return (
        node is module.body[0]
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(decorator.lineno for decorator in decorators)])


def _end_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _source(node: ast.stmt, lines: list[str]) -> list[str]:
    return lines[_first_line(node) - 1 : _end_line(node)]
