"""Aid ``file_previews``: the first message shows the heads of the workspace's small text files.

Reading the inputs is the first thing any run does; for a model that evaluates its prompt at
tens of tokens per second, one message is cheaper than a step per file, and a small model
that has the rows in front of it writes code for the columns that are there. Files the task
mentions come first, in the order it mentions them; data files (CSV, TSV, JSON lists, JSON
Lines) show their first rows only and say how many there are, so that code reads the rest.
"""

from __future__ import annotations

import re
from pathlib import Path

from pymanus.agent.extensions import Extension
from pymanus.tools.builtin.workspace_scan import scan
from pymanus.tools.tool import ToolContext

SHOW_BUDGET = 4_000
"""Characters of file text the briefing shows in all."""
FILE_BYTES = 64_000
"""Files larger than this are not previewed."""
TEXT_LINES = 40
"""Lines of a text file shown; longer files show this many and say how many there are."""
DATA_ROWS = 5
"""Records of a data file shown after its header."""
_DATA_SUFFIXES = (".csv", ".tsv", ".jsonl")
_MENTION = re.compile(r"[\w./-]+\.\w+")


class FilePreviews(Extension):
    """Adds the heads of the workspace's small text files to the first message."""

    name = "file_previews"

    def briefing(self, task: str, context: ToolContext) -> str | None:
        return previews(Path(context.workspace), task)


def previews(root: Path, task: str, budget: int = SHOW_BUDGET) -> str | None:
    """The heads of the small text files under ``root``, those ``task`` mentions first (None: none fit)."""
    snapshot = scan(root)
    if not snapshot:
        return None
    mentioned = [m.strip("./") for m in _MENTION.findall(task)]

    def place(path: str) -> tuple[int, int, str]:
        named = next((n for n, name in enumerate(mentioned) if path == name or path.endswith(f"/{name}")), None)
        return (named if named is not None else len(mentioned)), path.count("/"), path

    shown = []
    for path in sorted(snapshot, key=place):
        if snapshot[path][1] > FILE_BYTES:
            continue
        text = _text(root / path)
        if not text or not text.strip():
            continue
        head, note = _head(path, text)
        if len(head) > budget:
            continue
        budget -= len(head)
        shown.append(f"{path}{note}:\n```\n{head}\n```")
    return "\n\n".join(shown) or None


def _text(path: Path) -> str | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _head(path: str, text: str) -> tuple[str, str]:
    """What of ``text`` is shown, and a note of what was left out."""
    lines = text.rstrip("\n").splitlines()
    keep = (
        DATA_ROWS + (0 if path.lower().endswith(".jsonl") else 1)
        if path.lower().endswith(_DATA_SUFFIXES)
        else TEXT_LINES
    )
    if len(lines) <= keep + 1:  # cutting one line saves nothing
        return "\n".join(lines), ""
    return "\n".join(lines[:keep]), f" (first {keep} of {len(lines)} lines; read the rest with code)"
