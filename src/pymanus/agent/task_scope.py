"""The folder a task limits itself to: "every file under src/", "the documents in the docs folder"."""

from __future__ import annotations

import re
from pathlib import Path

_FOLDER = re.compile(
    r"\b(?:in|under|inside)\s+(?:the\s+)?`?([\w.-]+(?:/[\w.-]+)*)/?`?(?:\s+(?:folder|directory)|/)", re.IGNORECASE
)


def scoped_folder(task: str, workspace: Path) -> str:
    """The workspace folder ``task`` names as where its files are (``"src"``), or ``""`` for none."""
    named = _FOLDER.search(task)
    return named.group(1) if named is not None and (workspace / named.group(1)).is_dir() else ""
