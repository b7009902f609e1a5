"""Windows paths in code the python tool runs: ``os.walk('.\\\\texts')`` on Linux.

word_counts: the 1.5B walked ``'.\\\\texts'``, which on Linux names one file called ``.\\texts``;
``os.walk`` gave nothing without an error, the table got no rows, and told so, the model ran
the same code again in three runs of five. A string literal that names no workspace path with
its backslashes, and an existing one with ``/`` in their place, can only mean that one: it runs
as that path, with a note. So does one whose backslash made an escape (``'.\texts'``, a tab),
when its source text with ``/`` names a workspace path.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

_PREFIXES = frozenset("rRuU")


def windows_paths(code: str, workspace: Path) -> tuple[str, list[str]]:
    """``code`` with its Windows-style workspace paths written with ``/``, and a note for each."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code, []
    lines = code.split("\n")
    notes = []
    for token in reversed(tokens):  # from the end, so earlier columns stay valid
        if token.type != tokenize.STRING or token.start[0] != token.end[0]:
            continue
        prefix = token.string[: len(token.string) - len(token.string.lstrip("rRuUbBfF"))]
        if not set(prefix) <= _PREFIXES:
            continue  # bytes and f-strings are left alone
        try:
            value = ast.literal_eval(token.string)
        except (ValueError, SyntaxError):
            continue
        # '.\texts' written with one backslash reads as '.', a tab and 'exts': the path is in the source text
        body = token.string[len(prefix) :].strip(token.string[-1])
        fixed, shown = _workspace_path(value, workspace), repr(value)
        if fixed is None:
            fixed, shown = _workspace_path(body.replace("\\\\", "\\"), workspace), token.string
        if fixed is None:
            continue
        row, start, end = token.start[0] - 1, token.start[1], token.end[1]
        lines[row] = lines[row][:start] + repr(fixed) + lines[row][end:]
        notes.append(
            f"Note: line {row + 1}'s path {shown} uses \\, which Linux reads as part of a name; it ran as {fixed!r}."
        )
    return "\n".join(lines), notes[::-1]


def _workspace_path(value: object, workspace: Path) -> str | None:
    """``value`` with ``/`` for ``\\`` when only that names a workspace path, else None."""
    if not isinstance(value, str) or "\\" not in value or len(value) > 200 or "\n" in value:
        return None
    fixed = value.replace("\\", "/")
    try:
        root = workspace.resolve()
        if (workspace / value).exists() or not (workspace / fixed).resolve().is_relative_to(root):
            return None
        return fixed if (workspace / fixed).exists() else None
    except (OSError, ValueError):
        return None
