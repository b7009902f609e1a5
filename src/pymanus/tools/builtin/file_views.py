"""How the file tools show a file's lines to the model: numbered, cut to a budget, previewed."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from pymanus.errors import ToolError
from pymanus.tools.builtin.file_search import human_size

PREVIEW_ROWS = 20
MAX_LINE_CHARS = 2_000


def _decode(raw: bytes) -> str:
    line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if len(line) > MAX_LINE_CHARS:
        return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line):,} characters]"
    return line


NUMBERED_LINE = re.compile(r"^(?=[ \d]{6}\t) *\d+\t", re.MULTILINE)
"""A line as :func:`numbered_line` shows it (found again in files a model copied a tool's output into)."""


def numbered_line(number: int, text: str) -> str:
    """A file's line as the tools show it: its number right-aligned, a tab, the text."""
    return f"{number:>6}\t{text}"


def numbered_lines(path: str, handle: Any, start: int, end: int | None, budget: int, *, count_all: bool) -> str:
    """Lines ``start``..``end`` with numbers, within ``budget`` characters; counts all lines if asked."""
    shown: list[str] = []
    used = 0
    stopped_at: int | None = None
    total = 0
    for number, raw in enumerate(handle, 1):
        total = number
        if number < start:
            continue
        done = (end is not None and number > end) or stopped_at is not None
        if not done:
            line = numbered_line(number, _decode(raw))
            if used + len(line) > budget and shown:
                stopped_at = number
                done = True
            else:
                shown.append(line)
                used += len(line) + 1
        if done and not count_all:
            break
    if not shown:
        raise ToolError(f"{path} has only {total} lines; start_line {start} is past the end.")
    last = start + len(shown) - 1
    of = f" of {total:,}" if count_all else ""
    footer = f"\n[... stopped at line {stopped_at} to keep this short; continue with start_line={stopped_at}]"
    return f"{path} (lines {start}-{last}{of}):\n" + "\n".join(shown) + (footer if stopped_at else "")


def preview_lines(path: str, real: Path, handle: Any, size: int) -> str:
    """The first rows of the file open as ``handle``, numbered, with a CSV/TSV header's column names."""
    rows: list[str] = []
    total = 0
    for number, raw in enumerate(handle, 1):
        total = number
        if number <= PREVIEW_ROWS:
            rows.append(numbered_line(number, _decode(raw)))
        elif size > 50_000_000:
            break
    counted = f"{total:,} lines" if size <= 50_000_000 else human_size(size)
    text = f"{path}: first {len(rows)} rows of {counted}."
    delimiter = {".csv": ",", ".tsv": "\t", ".tab": "\t"}.get(real.suffix.lower())
    if delimiter is not None and rows:
        handle.seek(0)
        first = handle.readline().decode("utf-8", errors="replace")
        header = next(csv.reader([first], delimiter=delimiter), [])
        kind = "CSV" if delimiter == "," else "TSV"
        text += (
            f" This is a {kind} file: its first line is the header, with {len(header)} columns: "
            f"{', '.join(header)}. Data rows start at line 2."
        )
    return text + "\n" + "\n".join(rows)


def snippet(text: str, first: int, count: int, context: int = 3) -> str:
    """Lines ``first``.. of an edited ``text`` (``count`` of them), numbered, with ``context`` lines around."""
    lines = text.splitlines()
    low, high = max(first - context, 1), min(first + count - 1 + context, len(lines))
    return "\n".join(numbered_line(n, _decode(lines[n - 1].encode())) for n in range(low, high + 1))
