"""How ``edit_file`` changes a file's text: find old_text, replace it once or everywhere, add lines.

Pure functions of the text: :mod:`pymanus.tools.builtin.files` reads and saves the file.
"""

from __future__ import annotations

import difflib

from pymanus.errors import ToolError


def same_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """``old`` and ``new`` with Windows line endings when that is how ``text`` has them."""
    if "\r\n" in text and old not in text and old.replace("\n", "\r\n") in text:
        return old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    return old, new


def replace_once(path: str, text: str, old: str, new: str) -> tuple[str, int]:
    old, new = same_line_endings(text, old, new)
    count = text.count(old)  # at least one: change() checked that old_text occurs
    if count > 1:
        lines: list[str] = []
        position = text.find(old)
        while position >= 0 and len(lines) < 10:
            lines.append(str(text.count("\n", 0, position) + 1))
            position = text.find(old, position + 1)
        raise ToolError(
            f"old_text occurs {count} times in {path} (at lines {', '.join(lines)}). Include more of the "
            "surrounding lines to make it unique, or set replace_all to true to replace every occurrence."
        )
    start = text.index(old)
    return text[:start] + new + text[start + len(old) :], text.count("\n", 0, start) + 1


def shifted_match(text: str, old: str, new: str) -> tuple[str, str, int, str] | None:
    """``old`` found in ``text`` once with the same indentation added to each of its lines, as
    ``(block, new shifted alike, first line, indentation)``; ``None`` when there is no such single match.

    Models quote a function's body without its indentation (``return x`` for a line indented by
    four spaces) and repeat the edit after the not-found error. Only an exact match but for one
    common leading indentation counts.
    """
    old_lines = old.split("\n")
    if not old.strip() or any(line != line.lstrip(" \t") for line in old_lines if line.strip()):
        return None  # blank, or already indented: a different mismatch
    file_lines = text.split("\n")
    found: list[tuple[int, str]] = []
    for start in range(len(file_lines) - len(old_lines) + 1):
        block = file_lines[start : start + len(old_lines)]
        first = block[0]
        indent = first[: len(first) - len(first.lstrip(" \t"))]
        if indent and all(
            line == indent + expected if expected.strip() else not line.strip()
            for line, expected in zip(block, old_lines, strict=True)
        ):
            found.append((start, indent))
    if len(found) != 1:
        return None
    start, indent = found[0]
    matched = "\n".join(file_lines[start : start + len(old_lines)])
    shifted = "\n".join(indent + line if line.strip() else line for line in new.split("\n"))
    return matched, shifted, start + 1, indent


def not_found(path: str, text: str, old: str) -> str:
    """old_text is not in the file: say so, with the closest line."""
    probe = next((line.strip() for line in old.splitlines() if line.strip()), old.strip())
    file_lines = text.splitlines()
    stripped = [line.strip() for line in file_lines]
    close = difflib.get_close_matches(probe, stripped, n=1, cutoff=0.4)
    hint = ""
    if close:
        number = stripped.index(close[0]) + 1
        hint = f" The closest line is {number}: {file_lines[number - 1]!r}."
    return (
        f"old_text was not found in {path}.{hint} It must match exactly, including spaces and indentation; "
        "read_file the lines and copy the text exactly."
    )


def replace_every(path: str, text: str, old: str, new: str) -> tuple[str, int]:
    """Every occurrence replaced: the new text and the count."""
    old, new = same_line_endings(text, old, new)
    return text.replace(old, new), text.count(old)


def insert_lines(path: str, text: str, after: int, new: str) -> tuple[str, int]:
    lines = text.splitlines(keepends=True)
    if not 0 <= after <= len(lines):
        raise ToolError(f"insert_line must be between 0 and {len(lines)} (the number of lines in {path}).")
    if not new:
        raise ToolError(f"new_text is empty: give the lines to insert after line {after} of {path}.")
    if not new.endswith("\n"):
        new += "\n"
    if after == len(lines) and lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join([*lines[:after], new, *lines[after:]]), after + 1
