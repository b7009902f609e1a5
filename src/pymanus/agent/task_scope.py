"""What a task's words bound: the files it names and where it puts them ("a package folder
weather with __init__.py"), the folder it limits itself to ("every file under src/"), the
files it only reads ("Convert products.csv to products.json"), and the files it says not to
change ("Don't change the tests").

The 1.5B converted products.csv, then renamed its ``sku`` column with ``edit_file`` and
converted it again: the user's data changed though the task asked only to read it. Files the
task names as sources are kept as they are (:func:`pymanus.agent.progress.task_message`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from pymanus.tools.builtin.workspace_scan import Snapshot, scan

FILE_NAME = re.compile(
    r"(?<![\w./-])((?:[\w-]+/)*[\w][\w.-]*\.(?:md|txt|csv|tsv|json|jsonl|py|html|yaml|yml|toml|xml|png|svg|log|ini))\b"
)
"""A file name the task mentions: a name with a common extension, optionally in folders."""
# "a package folder weather with __init__.py and cli.py": the files belong in weather/.
_FOLDER_WITH_FILES = re.compile(
    r"\b(?:folder|directory|package)\s+(?:named\s+|called\s+)?[`'\"]?([\w-]+)[`'\"]?\s+(?:with|containing|holding)\s+"
    r"((?:[\w-]+\.\w+)(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+)[\w-]+\.\w+)*)",
    re.IGNORECASE,
)


def named_files(task: str) -> list[str]:
    """The file names ``task`` mentions, in order, without repeats; in their folder when the task puts them there."""
    placed = {
        name: f"{folder}/{name}"
        for folder, names in _FOLDER_WITH_FILES.findall(task)
        for name in re.findall(r"[\w-]+\.\w+", names)
    }
    return list(dict.fromkeys(placed.get(name, name) for name in FILE_NAME.findall(task)))


def locate(workspace: Path, name: str, snapshot: Snapshot | None = None) -> Path | None:
    """Where the file the task calls ``name`` is: at that path, or (a bare name) in any folder.

    "a package weather with __init__.py" names a file that belongs in ``weather/``.
    """
    path = workspace / name
    try:
        if path.exists():
            return path
    except (OSError, ValueError):  # no file system takes such a name (a note copied as a path)
        return None
    if "/" in name:
        return None
    if snapshot is None:
        snapshot = scan(workspace)
    for relative in sorted(snapshot or ()):
        if relative.rsplit("/", 1)[-1] == name:
            return workspace / relative
    return None


_FOLDER = re.compile(
    r"\b(?:in|under|inside)\s+(?:the\s+)?`?([\w.-]+(?:/[\w.-]+)*)/?`?(?:\s+(?:folder|directory)|/)", re.IGNORECASE
)
_FILE = FILE_NAME.pattern
# "Convert products.csv", "Read sales.csv", "Using orders.json", "From scores.csv",
# "Merge orders.csv with customers.csv", "the temperature column in readings.csv": files the task
# reads to make its output (the 1.5B added its results as columns to readings.csv).
_SOURCE = re.compile(
    r"\b(convert|read|merge|using|from|load|parse|combine|join|(?:columns?|rows|values|records|entries)\s+(?:in|of))"
    rf"\s+(?:the\s+(?:file\s+)?)?`?{_FILE}`?"
    rf"(?:\s+(?:with|and)\s+`?{_FILE}`?)?",
    re.IGNORECASE,
)
_MAKES_ANOTHER = {"convert", "merge", "combine", "join"}
"""Verbs whose result is another file even when the task does not name it ("Convert x.csv to JSON")."""
# ... unless the task also writes to it: "append a line to notes.txt", "fix stats.py", "remove ... from
# config.txt", "in place".
_TARGET = re.compile(
    r"(?:\b(?:to|into|fix|edit|change|update|modify|overwrite|rewrite|clean|sort)"
    r"|\b(?:remove|delete|drop|strip|cut)\b[^.;\n]*?\bfrom)"
    rf"\s+(?:the\s+(?:file\s+)?)?`?{_FILE}`?",
    re.IGNORECASE,
)
_CHANGES_SOURCE = re.compile(r"\bin\s+(?:place|it|them)\b|\boverwrit|\bthe same file\b", re.IGNORECASE)

SOURCE_KEEPS_FILES = (
    "the task reads this file to make its output and does not ask to change it, so it stays as it is. "
    "Write what the task asks to the output file it names (from python when the values are computed)."
)
"""Why the file tools refuse to change a file the task only reads."""


_SELECTS_FILES = re.compile(
    r"\bfiles?\s+(?:\S+\s+){0,4}?(?:that|which|whose|containing)\b|\bwhich\s+(?:\S+\s+){0,2}?files?\b", re.IGNORECASE
)
"""A task that picks files by what is in them ("every file under src/ that contains TODO")."""


def selects_files(task: str) -> bool:
    """Whether ``task`` picks workspace files by what is in them ("every file under src/ that contains TODO")."""
    return _SELECTS_FILES.search(task) is not None


def scoped_folder(task: str, workspace: Path) -> str:
    """The workspace folder ``task`` names as where its files are (``"src"``), or ``""`` for none."""
    named = _FOLDER.search(task)
    return named.group(1) if named is not None and (workspace / named.group(1)).is_dir() else ""


def source_files(task: str, existing: Collection[str]) -> list[str]:
    """The files of ``existing`` (workspace paths) that ``task`` names as sources to read and never as
    targets, when it also names another file, its output."""
    if _CHANGES_SOURCE.search(task):
        return []
    targets = {name for match in _TARGET.finditer(task) for name in match.groups() if name}
    sources: dict[str, bool] = {}  # name -> whether its verb makes another file
    for match in _SOURCE.finditer(task):
        for name in match.groups()[1:]:
            if name and name not in targets and name in existing:
                sources[name] = sources.get(name, False) or match.group(1).lower() in _MAKES_ANOTHER
    # "Read config.json and add a debug key" changes what it reads: a file read counts as a
    # source beside an output the task names.
    outputs = set(FILE_NAME.findall(task)) - set(sources)
    return [name for name, makes_another in sources.items() if makes_another or outputs]


def missing_sources(task: str, existing: Collection[str]) -> list[str]:
    """The files ``task`` names as sources to read ("Read sales.csv") that ``existing`` (workspace paths,
    at any depth) lacks."""
    targets = {name for match in _TARGET.finditer(task) for name in match.groups() if name}
    names = [name for match in _SOURCE.finditer(task) for name in match.groups()[1:] if name and name not in targets]
    return [
        name
        for name in dict.fromkeys(names)
        if name not in existing and not any(path.endswith(f"/{name}") for path in existing)
    ]


MISSING_SOURCE = (
    "the task reads this file, and the workspace had no such file when the run started: its content would "
    "be made up. If it is not in the workspace under another name (list_dir), call terminate with status "
    '"failure" and say that it is missing.'
)
"""Why the file tools refuse to create a file the task reads that was not there (a made-up input)."""


# "Don't change the tests", "do not modify config.json", "without touching the test files".
_NOT_TO_CHANGE = re.compile(
    r"\b(?:don't|do\s+not|never|without)\s+(?:change|changing|modify|modifying|edit|editing|touch|touching"
    rf"|alter|altering)\s+(?:the\s+|any\s+)?(?:(?P<tests>(?:unit\s+)?tests|test\s+files)\b|`?{_FILE}`?)",
    re.IGNORECASE,
)
_TEST_PATH = re.compile(r"(?:^|/)(?:test_\w*\.py|\w+_test\.py|tests?/.*)$")

TASK_KEEPS_FILES = "the task says not to change this file, so it stays as it is. Change the other files instead."
"""Why the file tools refuse to change a file the task says not to change."""


def files_not_to_change(task: str, existing: Collection[str]) -> list[str]:
    """The files of ``existing`` (workspace paths) that ``task`` says not to change: named ones, or
    the test files for "the tests".

    fix_failing_test says "Don't change the tests"; the 1.5B added a ``test_median_even``
    function to test_stats.py so that its own import of that name would work.
    """
    kept: list[str] = []
    for match in _NOT_TO_CHANGE.finditer(task):
        if match["tests"]:
            kept += [name for name in sorted(existing) if _TEST_PATH.search(name)]
        elif match.group(2) in existing:
            kept.append(match.group(2))
    return list(dict.fromkeys(kept))
