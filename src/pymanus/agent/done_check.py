"""When the workspace itself shows a task done, so the run can end without a ``terminate`` step.

On 2 CPU cores a step of the embedded model costs 15 s and more (the last result evaluated,
then ~40 tokens of ``terminate`` generated), and the step after the one that wrote the last
output is nearly always that ``terminate``. The preset ends such runs itself when there is
evidence of completion that does not rest on the model's word:

* a file the task names that the workspace lacked when the run started now exists;
* a check the task names (a test command, an example call) failed when the run started and
  passes now;
* a rename the task asks for is done in every file.

The completion check (:func:`pymanus.agent.manus.missing_outputs`) must also find nothing
wrong, as it would with the model's own final answer. Tasks that want a reply in words (a
question at the end, "tell me", "explain") go on to the model's answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pymanus.agent import progress
from pymanus.agent.progress import read_head
from pymanus.agent.renames import rename_notes, requested_renames
from pymanus.agent.task_checks import CheckResult
from pymanus.agent.task_scope import locate, named_files
from pymanus.tools.tool import ToolContext

_WANTS_REPLY = re.compile(
    r"\b(?:tell|let me know|explain|answer|reply|show me|summari[sz]e for me)\b|\?[\s\"'`)]*\Z", re.IGNORECASE
)
"""A task that asks for an answer in words, not only for files."""
SHOWN_CHARS = 600
"""A written file this short is quoted whole in the answer (``stats.json`` answers "what are the mean and median?")."""
LISTED_FILES = 8


def done_evidence(task: str, context: ToolContext, checks: Sequence[CheckResult]) -> bool:
    """Whether the workspace shows ``task`` done by more than the model's word (see the module docstring)."""
    if progress.asks_only(task) or _WANTS_REPLY.search(task.strip()):
        return False
    written = progress.written_files(context)
    if not written:
        return False
    workspace = Path(context.workspace)
    existed = set(progress.input_files(context, ()))
    created = [
        name
        for name in named_files(task)
        if (path := locate(workspace, name)) is not None and path.relative_to(workspace).as_posix() not in existed
    ]
    task_checks = [check for check in checks if not check.own]
    fixed = bool(task_checks) and progress.checks_failed_at_start(context) and all(c.passed for c in task_checks)
    renamed = bool(requested_renames(task, workspace)) and not rename_notes(task, workspace)
    return bool(created) or fixed or renamed


def done_answer(context: ToolContext) -> str:
    """The final answer of a run ended by the done check: what it wrote, short files quoted whole."""
    workspace = Path(context.workspace)
    written = progress.written_files(context)
    more = f" and {len(written) - LISTED_FILES} more" if len(written) > LISTED_FILES else ""
    parts = [f"Done. Files written: {', '.join(written[:LISTED_FILES])}{more}."]
    for name in written[:LISTED_FILES]:
        path = workspace / name
        if path.is_file() and 0 < path.stat().st_size <= SHOWN_CHARS:
            parts.append(f"{name}:\n{read_head(path).rstrip()}")
    return "\n\n".join(parts)
