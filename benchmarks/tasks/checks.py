"""Tolerant readers for what an agent produces: numbers, markdown tables, CSV, JSON, bullets.

Checkers are strict about the values and lenient about the form: ``1,234.5``, ``$1234.50``
and ``1234.50`` are the same amount; a markdown table may lack its outer pipes or bold its
cells; CSV headers may differ in case and spacing.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.tasks.task import Verdict

# A non-negative number, with optional thousands separators and decimals; not part of a
# word, a date (2024-01-05) or a version (3.11.7). The task data holds no negative values.
_NUMBER = re.compile(r"(?<![\w.\-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w\-]|\.\d)")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(\S.*)$")
_SEPARATOR_CELL = re.compile(r"^:?-{2,}:?$")
_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip


def passed(reason: str = "ok") -> Verdict:
    """A passing verdict."""
    return True, reason


def failed(reason: str) -> Verdict:
    """A failing verdict."""
    return False, reason


@dataclass(frozen=True)
class Number:
    """A number as written: its value and how many decimals it was written with."""

    value: float
    decimals: int

    def matches(self, expected: float) -> bool:
        """Whether this is ``expected``, rounded to the precision it was written with."""
        return abs(self.value - expected) <= 0.5 * 10.0**-self.decimals + 1e-9


def numbers_in(text: str) -> list[Number]:
    """Every number written in ``text``, in order."""
    found = []
    for match in _NUMBER.finditer(text):
        whole, fraction = match.group(1).replace(",", ""), match.group(2) or ""
        found.append(Number(float(f"{whole}.{fraction or 0}"), len(fraction)))
    return found


def mentions_value(text: str, expected: float, *, min_decimals: int = 0) -> bool:
    """Whether ``text`` writes ``expected`` (rounded to at least ``min_decimals`` places)."""
    return any(n.decimals >= min_decimals and n.matches(expected) for n in numbers_in(text))


def mentions_count(text: str, expected: int) -> bool:
    """Whether ``text`` states the whole number ``expected``, in digits or as an English word."""
    if any(n.decimals == 0 and n.value == expected for n in numbers_in(text)):
        return True
    words = re.findall(r"[a-z]+", text.lower())
    return any(_WORDS.get(word) == expected for word in words)


def close(actual: Any, expected: float, tolerance: float = 0.011) -> bool:
    """Whether ``actual`` (a number, or a string holding one) is within ``tolerance`` of ``expected``."""
    value = as_number(actual)
    return value is not None and abs(value - expected) <= tolerance


def as_number(value: Any) -> float | None:
    """``value`` as a float when it is a number or a string holding exactly one number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        found = numbers_in(value)
        return found[0].value if len(found) == 1 else None
    return None


def clean_cell(cell: str) -> str:
    """A table cell without markdown emphasis, code marks or surrounding space, lowercased."""
    return re.sub(r"[*_`]", "", cell).strip().lower()


def markdown_rows(text: str) -> list[list[str]]:
    """The rows of every markdown table in ``text`` (header rows included, separator rows not).

    Any line with a ``|`` between two pieces of text counts as a row, so tables without
    outer pipes are read too.
    """
    rows = []
    for line in text.splitlines():
        if line.count("|") < 1 or not line.strip().strip("|").strip():
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or all(_SEPARATOR_CELL.match(c.replace(" ", "")) or not c for c in cells):
            continue
        rows.append(cells)
    return rows


def find_row(rows: Iterable[Sequence[str]], *labels: str) -> Sequence[str] | None:
    """The row labelled with one of ``labels`` (case and emphasis ignored).

    A cell equal to a label wins; failing that, a short cell (a link, ``North region``)
    that holds a label as a whole word.
    """
    rows = list(rows)
    wanted = {label.lower() for label in labels}
    for row in rows:
        if any(clean_cell(cell) in wanted for cell in row):
            return row
    patterns = [re.compile(rf"(?<![\w.]){re.escape(label)}(?![\w]|\.\w)") for label in wanted]
    for row in rows:
        for cell in row:
            text = clean_cell(cell)
            if len(text.split()) <= 3 and any(p.search(text) for p in patterns):
                return row
    return None


def row_has_value(row: Sequence[str], expected: float, *, skip: Sequence[str] = ()) -> bool:
    """Whether a cell of ``row`` (other than the label cells in ``skip``) holds ``expected``."""
    return any(mentions_value(cell, expected) for cell in row if clean_cell(cell) not in skip)


def bullets(text: str) -> list[str]:
    """The text of each bullet or numbered-list item in ``text``."""
    return [match.group(1) for line in text.splitlines() if (match := _BULLET.match(line))]


def read_text(workspace: Path, name: str) -> str | None:
    """The text of a workspace file, or ``None`` when it is missing or not UTF-8 text."""
    path = workspace / name
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def load_json(workspace: Path, name: str) -> tuple[Any, str | None]:
    """The parsed JSON of a workspace file, or ``(None, reason)`` when it cannot be read.

    A fenced code block around the JSON (a common slip) is tolerated.
    """
    text = read_text(workspace, name)
    if text is None:
        return None, f"{name} is missing"
    text = re.sub(r"^\s*```(?:json)?\s*\n|\n\s*```\s*$", "", text.strip())
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{name} is not valid JSON ({exc.msg} at line {exc.lineno})"


def read_csv(workspace: Path, name: str) -> tuple[list[dict[str, str]], str | None]:
    """The rows of a workspace CSV file keyed by lowercased, stripped header names."""
    text = read_text(workspace, name)
    if text is None:
        return [], f"{name} is missing"
    reader = csv.reader(io.StringIO(text.strip()))
    lines = [row for row in reader if any(cell.strip() for cell in row)]
    if not lines:
        return [], f"{name} is empty"
    header = [re.sub(r"\s+", "_", cell.strip().lower()) for cell in lines[0]]
    return [dict(zip(header, (cell.strip() for cell in row), strict=False)) for row in lines[1:]], None


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Write a CSV file with ``header`` and ``rows`` (Unix line endings)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def write_files(workspace: Path, files: dict[str, str]) -> None:
    """Write each ``relative path: text`` of ``files`` into the workspace."""
    for name, text in files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run_python(workspace: Path, args: Sequence[str], *, timeout: float = 60.0) -> tuple[int, str]:
    """Run ``python ARGS`` in the workspace; the exit code and the combined output.

    A timeout is exit code -1. The environment drops ``PYTHON*`` variables so nothing
    from outside changes what is imported, and no bytecode is written into the workspace.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        done = subprocess.run(
            [sys.executable, *args],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:g} s"
    return done.returncode, (done.stdout + done.stderr).strip()


def last_line(text: str, limit: int = 160) -> str:
    """The last non-empty line of ``text``, cut to ``limit`` characters (for reasons)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:limit] if lines else ""


def squash(text: str) -> str:
    """``text`` with every run of whitespace turned into one space, stripped."""
    return " ".join(text.split())


def fmt(value: float) -> str:
    """A number the way reasons show it (``1,234.5``)."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")
