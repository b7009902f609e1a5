"""What the workspace holds and what changed in it: for observations and briefings.

Models do not notice what their own code wrote unless told. A :func:`scan` before
and after a tool call gives :func:`describe_changes` ("Files written: top5.csv (6
lines)"); a scan at the start of a run gives :func:`list_workspace`, the files'
names and sizes, which saves the first exploratory step.

Scans never follow symlinks, skip tool folders (``.git``, ``node_modules``, ...) and the
journal's ``.pymanus``, and give up past ``limit`` entries (``None``): a huge workspace
is not walked every step.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

from pymanus.sandbox.journal import STATE_DIR
from pymanus.tools.builtin.file_formats import format_warning
from pymanus.tools.builtin.file_search import NOT_EXPANDED, human_size

Snapshot = dict[str, tuple[int, int]]
"""Relative POSIX path → (modification time in ns, size in bytes), for regular files."""

SCAN_LIMIT = 2_000
LISTED_FILES = 30
"""Files :func:`list_workspace` names; more are only counted."""
_PEEK_BYTES = 64_000
"""A file is read up to this size to count its lines or show its head."""


def file_stamp(path: Path) -> tuple[int, int] | None:
    """``(modification time in ns, size)`` of ``path``, as :func:`scan` records them (None: unreadable)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def scan(root: Path, limit: int = SCAN_LIMIT) -> Snapshot | None:
    """Every regular file under ``root`` (``None`` if there are more than ``limit`` entries)."""
    found: Snapshot = {}
    seen = 0
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                return None
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in NOT_EXPANDED and not (folder == root and entry.name == STATE_DIR):
                        pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    found[Path(entry.path).relative_to(root).as_posix()] = (info.st_mtime_ns, info.st_size)
            except OSError:  # vanished while we looked
                continue
    return found


def is_file(path: Path) -> bool:
    """Whether ``path`` is a file, False for a name no file system takes (too long, a NUL byte).

    The completion checks look up names taken from what the model wrote: a line of a tool's
    note copied into a list of files is a 300-character "path".
    """
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def list_workspace(root: Path) -> str:
    """The workspace's files with their sizes, shallowest first, for the first message of a run."""
    snapshot = scan(root)
    if snapshot is None:
        return f"The workspace holds more than {SCAN_LIMIT} files and folders; use list_dir to look around."
    if not snapshot:
        return "The workspace is empty."
    paths = sorted(snapshot, key=lambda path: (path.count("/"), path))
    lines = ["Files in the workspace:"]
    for path in paths[:LISTED_FILES]:
        size = snapshot[path][1]
        lines.append(f"- {path} ({_size_note(size, _peek(root / path, size))})")
    if len(snapshot) > LISTED_FILES:
        lines.append(f"- ... and {len(snapshot) - LISTED_FILES} more files (list_dir shows them)")
    return "\n".join(lines)


def changed_files(before: Snapshot | None, after: Snapshot | None) -> list[str]:
    """Files created or modified between two scans, in path order ([] if either scan gave up)."""
    if before is None or after is None:
        return []
    return sorted(path for path, stamp in after.items() if before.get(path) != stamp)


def describe_changes(
    root: Path,
    before: Snapshot | None,
    after: Snapshot | None,
    limit: int = 10,
    *,
    show_budget: int = 0,
    shown_already: str = "",
) -> str:
    """``"Files written: top5.csv (6 lines), chart.png (14.2 KB)."`` or ``""`` when nothing changed.

    With a ``show_budget``, the head of each written text file follows (up to :data:`SHOWN_LINES` lines,
    within the budget in characters), unless ``shown_already`` (the tool's output) holds it: a small
    model takes "Files written" for success, and sees ``0`` words or an empty join column only when the
    rows are in front of it. Empty CSV cells are counted per column for the same reason.
    """
    paths = changed_files(before, after)
    if not paths:
        return ""
    assert after is not None
    names = []
    heads = []
    for path in paths[:limit]:
        size = after[path][1]
        text = _peek(root / path, size)
        names.append(f"{path} ({_size_note(size, text)})")
        if text and text.strip() and text.strip() not in shown_already and show_budget > 0:
            head = _head_of(path, text, show_budget)
            show_budget -= len(head)
            heads.append(head)
        if text and (warning := format_warning(path, text)):  # as write_file warns, for files code wrote
            heads.append(warning)
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return "\n\n".join([f"Files written: {', '.join(names)}{more}.", *heads])


SHOWN_LINES = 12
"""Lines of a written file that :func:`describe_changes` shows."""


def _head_of(path: str, text: str, budget: int) -> str:
    """The first lines of a written file, fenced, with a note of empty CSV cells."""
    lines = text.rstrip("\n").splitlines()
    shown: list[str] = []
    used = 0
    for line in lines[:SHOWN_LINES]:
        line = line if len(line) <= 200 else line[:200] + "…"
        if used + len(line) > budget and shown:
            break
        shown.append(line)
        used += len(line) + 1
    title = f"{path}:" if len(shown) == len(lines) else f"{path} (first {len(shown)} of {len(lines)} lines):"
    return f"{title}\n```\n" + "\n".join(shown) + "\n```" + _empty_cells(path, lines)


def _empty_cells(path: str, lines: list[str]) -> str:
    counted = empty_cells(path, lines)
    return f"\nEmpty cells: {', '.join(f'{n} in {name}' for name, n in counted.items())}." if counted else ""


def empty_cells(path: str, lines: list[str]) -> dict[str, int]:
    """Empty cells per column of a CSV file's ``lines`` (columns with none left out; {} for other files)."""
    if not path.lower().endswith(".csv") or len(lines) < 2:
        return {}
    rows = list(csv.reader(lines))
    header = rows[0]
    counts = {
        name: sum(1 for row in rows[1:] if column < len(row) and not row[column].strip())
        for column, name in enumerate(header)
    }
    return {name: count for name, count in counts.items() if count}


def _size_note(size: int, text: str | None) -> str:
    """Lines for a small text file (``text``), else the size."""
    if size == 0:
        return "empty"
    if text is None:
        return human_size(size)
    count = text.count("\n") + (not text.endswith("\n"))
    return f"{count} line{'s' * (count != 1)}"


def _peek(path: Path, size: int) -> str | None:
    """The text of a small UTF-8 file, or ``None`` (too big, binary, not UTF-8 or unreadable)."""
    raw = _head(path, _PEEK_BYTES + 1) if size <= _PEEK_BYTES else None
    if raw is None or len(raw) > _PEEK_BYTES or b"\x00" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _head(path: Path, limit: int) -> bytes | None:
    try:
        with path.open("rb") as handle:
            return handle.read(limit)
    except OSError:
        return None


def defining_module(root: Path, name: str, limit: int = 200) -> str | None:
    """The importable workspace module that defines ``name`` at its top level (``"pkg.tools"``), if one does.

    A model adds ``slugify`` to ``textutils.py`` and calls it in a block that never imported it;
    the NameError alone does not tell it where the function is. At most ``limit`` files are read.
    """
    snapshot = scan(root) or {}
    definition = re.compile(rf"^(?:(?:async\s+)?def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]", re.M)
    modules = sorted(path for path in snapshot if path.endswith(".py"))[:limit]
    for path in modules:
        dotted = path.removesuffix(".py").replace("/", ".")
        source = _peek(root / path, snapshot[path][1]) or ""
        if all(part.isidentifier() for part in dotted.split(".")) and definition.search(source):
            return dotted
    return None
