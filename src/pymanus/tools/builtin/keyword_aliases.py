"""Keywords small models give a library method that names that parameter otherwise.

``df.to_markdown(index=False, file_path='report.md')`` was the first call of the 1.5B in every
run of the sales report task: pandas passes the unknown keyword on to tabulate, which fails
with "unexpected keyword argument 'file_path'"; shown the same call with ``buf=``, the model
wrote its call again, or typed the table by hand. The python tool renames such a keyword
before the code runs, and says so. Only the methods in :data:`ALIASES` are touched, only when
the call gives the parameter neither by position nor by its own name.
"""

from __future__ import annotations

import ast

ALIASES: dict[str, tuple[str, str, frozenset[str]]] = {
    "to_markdown": (
        "buf",
        "the file to write",
        frozenset({"file_path", "path", "filename", "file", "path_or_buf", "output_file"}),
    ),
}
"""Method name -> (its parameter, what the parameter is, the names models give it)."""


def rename_keywords(code: str) -> tuple[str, list[str]]:
    """``code`` with aliased keywords renamed, and a note for each rename ([] when there is none)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code, []
    renames = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ALIASES):
            continue
        parameter, _, aliases = ALIASES[node.func.attr]
        if node.args or any(keyword.arg == parameter for keyword in node.keywords):
            continue
        wrong = next((keyword for keyword in node.keywords if keyword.arg in aliases), None)
        if wrong is not None and wrong.arg is not None:
            renames.append((wrong.lineno, wrong.col_offset, wrong.arg, parameter, node.func.attr))
    lines = code.split("\n")
    notes = []
    for line, column, alias, parameter, method in sorted(renames, reverse=True):
        encoded = lines[line - 1].encode()  # ast columns count UTF-8 bytes
        if encoded[column : column + len(alias)] != alias.encode():
            continue
        lines[line - 1] = (encoded[:column] + parameter.encode() + encoded[column + len(alias) :]).decode()
        notes.append(
            f"Note: {method}() has no `{alias}` parameter; line {line} ran with `{parameter}=` instead "
            f"({ALIASES[method][1]})."
        )
    return "\n".join(lines), sorted(notes)
