"""What the workspace held when a run started, for aids that compare it with what the run left."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pymanus.tools.builtin.workspace_scan import Snapshot, changed_files, scan
from pymanus.tools.tool import ToolContext


@dataclass
class StartFiles:
    """The run's workspace as its first message found it (``None``: too many files to scan)."""

    files: Snapshot | None = None
    taken: bool = False


def record_start(context: ToolContext) -> None:
    """Scan the workspace once per run, when the first message is built."""
    start = context.store(StartFiles)
    if not start.taken:
        start.files, start.taken = scan(Path(context.workspace)), True


def changed_since_start(context: ToolContext) -> tuple[Snapshot | None, list[str]]:
    """The workspace now, and the files created or changed since the run started."""
    now = scan(Path(context.workspace))
    if now is None:
        return None, []
    return now, changed_files(context.store(StartFiles).files or {}, now)
