"""Counts of lines, words and characters a run wrote about workspace files, held against the files.

"For each .txt file in the texts folder, count its lines and words, and write counts.md": the
1.5B counted ``re.findall(r'\\n', line) or line.split()`` as the words of each line, wrote one
word per line into the table, and called it done. A file's lines and words have one common
meaning (``wc``: ``len(text.splitlines())`` or its line breaks, ``len(text.split())``), so a
table row that names a workspace file and gives such a count is a fact to check, like a
saved script output (:mod:`pymanus.agent.saved_output`). :func:`count_problems` names the
rows that disagree when a final answer is given (:func:`pymanus.agent.manus.missing_outputs`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from pymanus.agent.progress import written_files
from pymanus.agent.table_checks import read_table
from pymanus.agent.task_scope import locate
from pymanus.tools.builtin.file_state import TASK_WORDS
from pymanus.tools.builtin.workspace_scan import is_file
from pymanus.tools.tool import ToolContext

_COUNTED_LIMIT = 2_000_000
"""Files larger than this are not counted (their count is not judged)."""
_SHOWN = 3
"""Wrong rows named in one problem."""


def _lines(text: str) -> set[int]:
    return {len(text.splitlines()), text.count("\n")}  # a last line without a line break counts or not


def _words(text: str) -> set[int]:
    return {len(text.split())}


def _characters(text: str) -> set[int]:
    return {len(text), len(text.encode("utf-8"))}


# A column whose header holds one of these words counts that thing in the file its row names:
# what it counts, how to count it in python, and the values that count as right.
_COUNTS: dict[str, tuple[str, str, Callable[[str], set[int]]]] = {
    "line": ("lines", "len(text.splitlines())", _lines),
    "word": ("words", "len(text.split())", _words),
    "char": ("characters", "len(text)", _characters),
    "byte": ("bytes", "len(text.encode())", _characters),
}


def count_problems(context: ToolContext) -> list[str]:
    """Rows of the tables the run wrote whose line, word or character counts differ from the files they name,
    and, for a task about each file, such tables that name no file at all (its code searched the wrong folder)."""
    workspace = Path(context.workspace)
    words = context.state.get(TASK_WORDS, frozenset())
    per_file = bool({"each", "every", "Each", "Every"} & words) and bool({"file", "files"} & words)
    problems = []
    for name in written_files(context):
        table = read_table(workspace / name)
        if table is None:
            continue
        header, rows = table
        columns = {index: _COUNTS[key] for index, cell in enumerate(header) if (key := _count_key(cell))}
        if not columns:
            continue
        texts = [_named_file_text(workspace, row) for row in rows]
        files_column = bool(header) and bool(re.search(r"file|path", header[0], re.IGNORECASE))
        if per_file and files_column and not any(text is not None for text in texts):
            labels = ", ".join(repr(row[0].strip()) for row in rows[:_SHOWN] if row) or "no rows"
            problems.append(
                f"{name} counts {', '.join(sorted({what for what, _, _ in columns.values()}))}, but no row of its "
                f"table names a file of the workspace ({labels}): the code found no files to count; check the "
                "folder it searched (a path relative to the workspace, with /) and write a row for each file"
            )
            continue
        wrong = []
        for row, text in zip(rows, texts, strict=True):
            if text is None:
                continue
            label = row[0].strip() or "?"
            for index, (what, _, count) in columns.items():
                value = _integer(row[index]) if index < len(row) else None
                if value is not None and value not in (actual := count(text)):
                    wrong.append(f"{label} has {min(actual)} {what}, not {value}")
        if wrong:
            hows = sorted({how for _, how, _ in columns.values()})
            problems.append(
                f"{name} gives counts the files do not have: {'; '.join(wrong[:_SHOWN])}"
                f"{f' (and {len(wrong) - _SHOWN} more)' if len(wrong) > _SHOWN else ''}; count each file's "
                f"text with python ({', '.join(hows)}) and write the table from those counts"
            )
    return problems


def _count_key(cell: str) -> str | None:
    """``"line"`` for a header like ``lines``, ``Line count`` or ``num_lines``; ``None`` for other columns."""
    words = re.findall(r"[a-z]+", cell.lower())
    if len(words) > 3:
        return None
    found = [key for key in _COUNTS if any(word.startswith(key) for word in words)]
    return found[0] if len(found) == 1 else None


def _named_file_text(workspace: Path, row: Sequence[str]) -> str | None:
    """The text of the workspace file the row's first cell names (a path, or a name found in one folder)."""
    cell = row[0].strip().strip("`") if row else ""
    if not cell or "." not in cell:
        return None
    path = locate(workspace, cell)
    if path is None or not is_file(path) or path.stat().st_size > _COUNTED_LIMIT:
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _integer(cell: str) -> int | None:
    text = cell.strip().replace(",", "")
    return int(text) if text.isdigit() else None
