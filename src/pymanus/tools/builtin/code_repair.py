"""Repairs of a mistake small models make when they write code inside JSON.

In a JSON string, ``\\n`` is a line break. A model that means the two characters
backslash-n inside a Python string literal (``print('a\\nb')``) must write ``\\\\n``;
small models rarely do, so the code arrives with a raw line break in the middle of a
string literal and fails to compile. Joining such lines back with an escaped line
break restores what the model meant. The repair is used only when the original does
not compile and the repaired code does.
"""

from __future__ import annotations

import re

_UNTERMINATED = ("unterminated string literal", "EOL while scanning string literal")
_PREFIXED_QUOTE = re.compile(r"[rRbBuUfF]{0,2}(['\"])")


def repair_string_line_breaks(code: str) -> str | None:
    """The code with line breaks inside one-line string literals escaped, or ``None``.

    ``None`` means there is nothing to repair (the code compiles, fails for another
    reason, uses triple-quoted strings, or is still broken after the repair).
    """
    if not _fails_on_unterminated_string(code) or "'''" in code or '"""' in code:
        return None
    joined: list[str] = []
    pending: str | None = None
    for line in code.split("\n"):
        pending = line if pending is None else pending + "\\n" + line
        if not _ends_inside_string(pending):
            joined.append(pending)
            pending = None
    if pending is not None:
        return None
    repaired = "\n".join(joined)
    try:
        compile(repaired, "<cell>", "exec")
    except SyntaxError:
        return None
    return repaired


def _fails_on_unterminated_string(code: str) -> bool:
    try:
        compile(code, "<cell>", "exec")
    except SyntaxError as exc:
        return any(marker in str(exc.msg) for marker in _UNTERMINATED)
    except ValueError:  # NUL bytes
        return False
    return False


def _ends_inside_string(line: str) -> bool:
    """Whether ``line`` ends inside a single- or double-quoted string literal."""
    quote: str | None = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote is None:
            if char == "#":
                return False
            if char in "'\"":
                quote = char
        elif char == "\\":
            index += 1  # skip the escaped character
        elif char == quote:
            quote = None
        index += 1
    return quote is not None
