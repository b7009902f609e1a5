"""What the workspace holds and what changed in it: for observations and briefings.

Small models do not notice what their own code wrote unless told. A :func:`scan`
before and after a tool call gives :func:`describe_changes` ("Files written:
top5.csv (6 lines)"); a scan at the start of a run gives the briefing of
:func:`describe_workspace` (names, sizes, CSV columns, JSON shapes), which saves
the first exploratory steps.

Scans never follow symlinks, skip tool folders (``.git``, ``node_modules``, ...) and
give up past ``limit`` entries (``None``): a huge workspace is not walked every step.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pymanus.tools.builtin.file_formats import format_warning
from pymanus.tools.builtin.file_search import NOT_EXPANDED, human_size

Snapshot = dict[str, tuple[int, int]]
_TEST_FILE = re.compile(r"(?:test_\w*|\w+_test)\.py")


def is_test_file(path: str) -> bool:
    """Whether the file at ``path`` (a workspace path or a name) is a test module (``test_*.py``, ``*_test.py``)."""
    return _TEST_FILE.fullmatch(path.rsplit("/", 1)[-1]) is not None


"""Relative POSIX path → (modification time in ns, size in bytes), for regular files."""

SCAN_LIMIT = 2_000
BRIEF_FILES = 30
"""Files the workspace briefing names; more are only counted."""
SHOW_BUDGET = 4_000
"""Characters of small files' text the workspace briefing shows."""
_PEEK_BYTES = 64_000
"""A file is read up to this size to count lines or show a CSV's columns or a JSON's shape."""


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
                    if entry.name not in NOT_EXPANDED:
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


def describe_workspace(
    root: Path,
    show_budget: int = SHOW_BUDGET,
    *,
    shown: list[str] | None = None,
    heads: list[str] | None = None,
    first: Sequence[str] = (),
) -> str:
    """A short briefing on the workspace's files for the first message of a run.

    Names with lines or sizes, CSV columns and JSON shapes, then the text of the small
    files while they fit in ``show_budget`` characters: reading them is the first thing
    any agent does, and one message is cheaper than a step per file. Data files (CSV,
    JSON lists) show their first :data:`DATA_ROWS_SHOWN` records only. The paths of the
    files shown whole are appended to ``shown``, those shown in part to ``heads``.

    The files named in ``first`` (paths, or names of files in any folder) come first, in that
    order; then the others, shallowest first. Told to "merge orders.csv with customers.csv" and
    shown customers.csv first, the 1.5B merged customers first in four failed runs of merge_csv.
    """
    snapshot = scan(root)
    if snapshot is None:
        return f"The workspace holds more than {SCAN_LIMIT} files and folders; use list_dir to look around."
    if not snapshot:
        return "The workspace is empty."

    def place(path: str) -> tuple[int, int, str]:
        named = next((n for n, name in enumerate(first) if path == name or path.endswith(f"/{name}")), len(first))
        return named, path.count("/"), path

    paths = sorted(snapshot, key=place)[:BRIEF_FILES]
    texts = {path: _peek(root / path, snapshot[path][1]) for path in paths}  # each file read once
    lines = ["Files in the workspace:"]
    for path in paths:
        size, text = snapshot[path][1], texts[path]
        lines.append(f"- {path} ({_size_note(size, text)}{_shape(root / path, size, text)})")
    if len(snapshot) > BRIEF_FILES:
        lines.append(f"- ... and {len(snapshot) - BRIEF_FILES} more files (list_dir shows them)")
    for path in paths:
        text = texts[path]
        compact = compact_json(text) if text and path.lower().endswith(".json") else None
        view = compact or text
        if not view:
            continue
        head, part = data_head(path, view) or (None, None)
        if len(head or view) > show_budget:
            continue
        show_budget -= len(head or view)
        notes = [note for note in ("its JSON with one item per line" if compact else None, part) if note]
        how = f" ({'; '.join(notes)})" if notes else ""
        lines.append(f"\n{path}{how}:\n```\n{(head or view).rstrip()}\n```")
        counts = value_counts(path, view) if head is not None else ""
        if counts:
            lines.append(f"Counts of values in all of {path}: {counts}.")
        listed = shown if head is None else heads
        if listed is not None:
            listed.append(path)
    return "\n".join(lines)


DATA_ROWS_SHOWN = 5
"""Records of a CSV or JSON data file the briefing shows (after a CSV's header or a JSON list's
``[``): enough for its columns and value formats. The rest is for code to read: on 2 cores every
prompt token costs ~70 ms (sales.csv's 20 rows were 450 tokens, half a minute before the first
step), and the 1.5B copied rows it could see by hand into merged.csv, with the wrong names."""
_DATA_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl")


def data_head(path: str, view: str) -> tuple[str, str] | None:
    """The first records of a data file's ``view`` and what they are of ("first 5 of 20 rows"), when it has
    more than the briefing shows.

    A JSON object (settings, a mapping) is shown whole: its keys are not rows of one table.
    """
    name = path.lower()
    if not name.endswith(_DATA_SUFFIXES) or (name.endswith(".json") and not view.lstrip().startswith("[")):
        return None
    rows = view.strip().splitlines()
    if name.endswith(".jsonl"):
        lead, records, kind = 0, len(rows), "lines"
    elif name.endswith(".json"):  # one item per line between the brackets (compact_json)
        lead, records, kind = 1, len(rows) - 2, "items"
    else:  # the header, then a row per line
        lead, records, kind = 1, len(rows) - 1, "rows"
    if records <= DATA_ROWS_SHOWN + 1:  # cutting one record saves nothing
        return None
    return "\n".join(rows[: lead + DATA_ROWS_SHOWN]), f"first {DATA_ROWS_SHOWN} of {records} {kind}"


MAX_CATEGORIES = 6
"""Distinct values a field of a data file may have for the briefing to count them."""


def value_counts(path: str, text: str) -> str:
    """How often each value of a data file's category fields occurs: ``"status: shipped 9, pending 6,
    cancelled 5"`` ("" when it has none).

    The briefing shows only the first records: asked for the totals "not counting cancelled
    orders", the 1.5B saw shipped and pending orders, kept the shipped ones only, and the
    pending ones were lost.
    """
    return "; ".join(
        f"{field}: " + ", ".join(f"{value} {count}" for value, count in counts.items())
        for field, counts in category_fields(path, text).items()
    )


def category_fields(path: str, text: str) -> dict[str, dict[str, int]]:
    """The category fields of a data file, each with how often each of its values occurs, most often first.

    A category field holds text (not numbers), at most :data:`MAX_CATEGORIES` distinct values,
    and each of them twice on average.
    """
    records = data_records(path, text)
    fields = list(dict.fromkeys(key for record in records for key in record))
    found = {}
    for field in fields:
        values = [record.get(field) for record in records]
        if not all(isinstance(value, str) and value.strip() and not is_number(value) for value in values):
            continue
        counts = Counter(str(value) for value in values)
        if 2 <= len(counts) <= MAX_CATEGORIES and len(values) >= 2 * len(counts):
            found[field] = dict(counts.most_common())  # ties keep the order of first appearance
    return found


def data_records(path: str, text: str) -> list[dict[str, object]]:
    """The records of a CSV, TSV, JSON list of objects or JSON Lines file ([] for anything else)."""
    name = path.lower()
    if name.endswith((".csv", ".tsv")):
        reader = csv.DictReader(text.splitlines(), delimiter="\t" if name.endswith(".tsv") else ",")
        return [dict(row) for row in reader]
    try:
        if name.endswith(".jsonl"):
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        elif name.endswith(".json"):
            data = json.loads(text)
        else:
            return []
    except ValueError:
        return []
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        return []
    return data


def is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def compact_json(text: str) -> str | None:
    """A JSON list or object with one item per line, when that is shorter than ``text`` (else None).

    An indented list of records spends a line per field: orders.json's 20 orders took 900
    prompt tokens, half a minute of a 2-core run before the first step, for nothing the model
    uses (its code reads the file).
    """
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, list) and data:
        items = [json.dumps(item, ensure_ascii=False) for item in data]
        compact = "[\n" + ",\n".join(items) + "\n]"
    elif isinstance(data, dict) and data:
        items = [
            f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}"
            for key, value in data.items()
        ]
        compact = "{\n" + ",\n".join(items) + "\n}"
    else:
        return None
    return compact if len(compact) < len(text.strip()) else None


def _size_note(size: int, text: str | None) -> str:
    """Lines for a small text file (``text``), else the size."""
    if size == 0:
        return "empty"
    if text is None:
        return human_size(size)
    count = text.count("\n") + (not text.endswith("\n"))
    return f"{count} line{'s' * (count != 1)}"


def _shape(path: Path, size: int, text: str | None) -> str:
    """``"; columns: a, b"`` for a CSV, ``"; a JSON list of 12 objects with keys ..."`` for JSON."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv", ".json") or size == 0:
        return ""
    if suffix in (".csv", ".tsv"):  # a big CSV still shows its columns: read only its head
        head = (_head(path, 4096) or b"").decode("utf-8", errors="replace")
        rows = list(csv.reader(head.splitlines()[:2], delimiter="\t" if suffix == ".tsv" else ","))
        if not rows:
            return ""
        note = f"; columns: {', '.join(rows[0])}"
        return note + (f"; first row: {', '.join(rows[1])}" if len(rows) > 1 else "")
    if text is None:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return "; not valid JSON"
    if isinstance(data, list):
        objects = [item for item in data if isinstance(item, dict)]
        if objects and len(objects) == len(data):
            return f"; a JSON list of {len(data)} objects with keys {', '.join(map(str, objects[0]))}"
        return f"; a JSON list of {len(data)} items"
    if isinstance(data, dict):
        keys = list(data)
        shown = ", ".join(map(str, keys[:12])) + (", ..." if len(keys) > 12 else "")
        return f"; a JSON object with keys {shown}"
    return ""


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
