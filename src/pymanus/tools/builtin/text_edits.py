"""How ``edit_file`` changes a file's text: find old_text, replace it once or everywhere, add lines.

Pure functions of the text: :mod:`pymanus.tools.builtin.files` reads and saves the file.
"""

from __future__ import annotations

import ast
import difflib
import re

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

    Small models quote a function's body without its indentation (add_function run 98:
    ``import re\nreturn re.sub(...)`` for lines indented by four spaces) and repeat the edit after
    the not-found error. Only an exact match but for one common leading indentation counts.
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


_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.MULTILINE)


def new_definitions(path: str, text: str, new: str) -> str:
    """When ``new`` defines functions or classes the file lacks, how to add them: the 1.5B gave the name of
    the function it meant to add as old_text, then repeated that edit."""
    added = [name for name in dict.fromkeys(_DEFINITION.findall(new)) if name not in _DEFINITION.findall(text)]
    if not added:
        return ""
    names = ", ".join(f"`{name}`" for name in added)
    return (
        f" new_text defines {names}, which {path} does not define yet: to add new code after its last line, "
        'call edit_file with an empty old_text ("").'
    )


def only_new_definitions(text: str, new: str) -> list[str]:
    """The functions and classes ``new`` defines when it is nothing but top-level definitions (and imports)
    that the module ``text`` has none of; [] otherwise. Such a new_text with an old_text not in the file
    can only mean "add these" (add_function run 71: old_text "slugify", new_text its def, sent twice)."""
    try:
        tree = ast.parse(new)
    except (SyntaxError, ValueError):
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    if not all(isinstance(node, (*kinds, ast.Import, ast.ImportFrom)) for node in tree.body):
        return []
    names = [node.name for node in tree.body if isinstance(node, kinds)]
    return names if names and not set(names) & set(_DEFINITION.findall(text)) else []


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


def restated_context(text: str, old: str, new: str) -> tuple[str, list[int]]:
    """``old`` grown over the file's lines next to it that ``new`` repeats, and those lines' numbers.

    The 1.5B gave a function's body line as old_text and its ``def`` line plus the new body
    as new_text: replaced as given, the ``def`` line is there twice and the module no longer
    parses. A line new_text starts (or ends) with that is the file's line just before (after)
    old_text is context said again, not a line to add. Only whole lines count, with a letter or
    digit among them (a repeated blank line or ``}`` may be meant), and new_text keeps a line of its own.
    """
    if text.count(old) != 1:
        return old, []
    start = text.index(old)
    end = start + len(old)
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end) % (len(text) + 1)  # no newline after: the end of the text
    new_lines = new.split("\n")
    restated: list[int] = []
    if not text[line_start:start].strip():
        before = text[:line_start].split("\n")[:-1]
        if count := _overlap(before, new_lines, room=len(new_lines) - 1):
            start = line_start - sum(len(line) + 1 for line in before[-count:])
            restated += range(len(before) - count + 1, len(before) + 1)
            new_lines = new_lines[count:]
    if not text[end:line_end].strip() and line_end < len(text):
        after = text[line_end + 1 :].split("\n")
        if count := _overlap(new_lines, after, room=len(new_lines) - 1):
            end = line_end + sum(len(line) + 1 for line in after[:count])
            first = text.count("\n", 0, line_end) + 2
            restated += range(first, first + count)
    return text[start:end], restated


def restated_note(path: str, numbers: list[int]) -> str:
    """What the edit report says of the lines :func:`restated_context` replaced."""
    if len(numbers) == 1:
        return (
            f"new_text repeats line {numbers[0]} of {path}, the line next to old_text, so it was replaced, "
            "not written twice."
        )
    span = (
        f"{numbers[0]}-{numbers[-1]}" if numbers[-1] - numbers[0] + 1 == len(numbers) else ", ".join(map(str, numbers))
    )
    return (
        f"new_text repeats lines {span} of {path}, the lines next to old_text, so they were replaced, "
        "not written twice."
    )


def _overlap(left: list[str], right: list[str], *, room: int) -> int:
    """The most lines, at most ``room``, that ``left`` ends with and ``right`` begins with, one of them with a
    letter or digit."""
    for count in range(min(room, len(left), len(right)), 0, -1):
        shared = right[:count]
        if [line.rstrip() for line in left[-count:]] == [line.rstrip() for line in shared] and any(
            char.isalnum() for line in shared for char in line
        ):
            return count
    return 0


def present_lines(text: str, new: str) -> int | None:
    """The line where ``text`` already holds ``new``'s lines, one after another (blank ends ignored), if it does.

    Each time its check still failed, the 1.5B added the same ``slugify = lambda ...`` line to
    the end of the module again, four copies in all.
    """
    wanted = [line.rstrip() for line in new.strip("\n").split("\n")]
    if not any(char.isalnum() for line in wanted for char in line):
        return None
    lines = [line.rstrip() for line in text.split("\n")]
    for index in range(len(lines) - len(wanted) + 1):
        if lines[index : index + len(wanted)] == wanted:
            return index + 1
    return None
