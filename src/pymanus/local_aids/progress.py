"""Aid ``progress_note``: every request after the first says how many steps are left and what changed.

A small model loses track of a long run: it rewrites a file it has already written, keeps
exploring with two steps left, or runs the code a task asks for without ever saving it to the
file the task names. The reminder (sent, never kept in the conversation) gives the steps used
and left, the files the run has created or changed so far, the files the task names that do
not exist yet, and how to finish.
"""

from __future__ import annotations

from pymanus.agent.extensions import Extension
from pymanus.local_aids.outputs import locate, named_files
from pymanus.local_aids.start import changed_since_start, record_start
from pymanus.tools.tool import ToolContext

LISTED = 12
"""Changed files the reminder names; more are only counted."""


class ProgressNote(Extension):
    """The per-step reminder of steps left and files changed."""

    name = "progress_note"

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps

    def briefing(self, task: str, context: ToolContext) -> None:
        record_start(context)

    def reminder(self, task: str, context: ToolContext) -> str:
        left = self.max_steps - context.step + 1
        now, changed = changed_since_start(context)
        lines = [f"Step {context.step} of {self.max_steps} ({left} left, this one included)."]
        lines.append(
            f"Files this run created or changed: {_listed(changed)}." if changed else "No file has changed yet."
        )
        missing = [name for name in named_files(task) if now is not None and locate(name, now) is None]
        if missing:
            lines.append(f"Files the task names that do not exist yet: {_listed(missing)}.")
        lines.append("If the task is done, call `terminate` with your answer; otherwise make the next call.")
        return " ".join(lines)


def _listed(names: list[str]) -> str:
    return ", ".join(names[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
