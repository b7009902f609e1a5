"""Edits of a task's code, tried against the task's failing check in a copy of the workspace.

A task whose named check fails when the run starts ("so that `python -m unittest test_stats`
passes", 'slugify("Hello, World!") returns "hello-world"') tests every edit of the code it
checks. The 1.5B fixed the even-count median of fix_failing_test and broke the odd one, undid
its edit, and went back and forth until the run ended; sampled again from the same request, it
wrote the right fix in one of a few draws. So a response that edits a file the run started with,
while that check fails, is made first in a copy of the workspace and the check run there: a
response whose edits leave it failing is sampled again (see :mod:`pymanus.agent.trials`), told what the
check said and shown the edited files as they still are. A response
that edits a test module is not tried: a test made to pass is not the code fixed; nor is one whose
edit cannot be made (an ``old_text`` not in the file): its error is the quicker lesson, and draws
of such a response (half a minute each on 2 cores) mostly failed the same way.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pymanus.agent import progress
from pymanus.agent.hooks import TrialResult
from pymanus.agent.task_checks import CheckResult, TaskChecks
from pymanus.errors import PathEscapeError
from pymanus.messages import ToolCall
from pymanus.sandbox import PathJail
from pymanus.tools.builtin.file_state import written_path
from pymanus.tools.builtin.workspace_scan import is_test_file, scan
from pymanus.tools.tool import Tool, ToolContext
from pymanus.tools.toolset import Toolset

logger = logging.getLogger(__name__)

EDITING_TOOLS = frozenset({"write_file", "edit_file"})
"""The calls a trial makes in the copy; the response's other calls (python, terminate) it leaves out."""
TRIAL_REPORT = (
    "Your reply's edits were made first in a copy of the workspace, and the task's check still fails there:\n"
    "{checks}\nThe workspace itself is unchanged.{files}\nWrite a different change that makes it pass."
)
"""What the draws after a response that failed its trial are asked with."""
REPORT_CHARS = 1_200
"""Characters of a failing check's output in :data:`TRIAL_REPORT` (its trace comes on top)."""
SHOWN_FILE_CHARS = 3_000
"""Longest edited file :data:`TRIAL_REPORT` shows as it is. A draw does not see the reply that failed,
and some of add_function's draws gave an ``old_text`` that file does not hold, which spent the
draw (8 s on 2 cores) before its change was tried."""
TRIAL_WORKSPACE_BYTES = 20_000_000
"""Workspaces larger than this are not copied for a trial."""


@dataclass(frozen=True)
class EditTrial:
    """A :data:`~pymanus.agent.hooks.CallTrial` of file edits against the task's named checks.

    ``results(task, context)``: the checks' results for the run's workspace as it is;
    ``tools(folder)``: the file tools bound to ``folder``; ``checks(folder)``: the task's checks run there.
    """

    results: Callable[[str, ToolContext], Awaitable[list[CheckResult]]]
    tools: Callable[[Path], list[Tool]]
    checks: Callable[[Path], TaskChecks]

    async def __call__(self, task: str, calls: list[ToolCall], context: ToolContext) -> TrialResult | None:
        workspace = Path(context.workspace)
        jail = PathJail(workspace)
        edits = [call for call in calls if call.name in EDITING_TOOLS]
        paths = [written_path(jail, call) or "" for call in edits]
        started_with = set(progress.input_files(context, ()))
        # A test made to pass is not the code fixed: a draw that edits a test is never the one picked.
        if not any(path in started_with for path in paths) or any(is_test_file(path) for path in paths):
            return None
        named = [result for result in await self.results(task, context) if not result.own]
        if not progress.checks_failed_at_start(context) or not named or all(result.passed for result in named):
            return None
        snapshot = scan(workspace)
        if snapshot is None or sum(size for _, size in snapshot.values()) > TRIAL_WORKSPACE_BYTES:
            return None
        try:
            state = copy.deepcopy(context.state)
        except Exception:  # state a tool keeps may not copy; then the edit is not tried
            return None
        with tempfile.TemporaryDirectory(prefix="pymanus-trial-") as folder:
            copied = Path(folder) / "workspace"
            await asyncio.to_thread(shutil.copytree, workspace, copied, symlinks=True)
            trial = ToolContext(run_id=context.run_id, step=context.step, workspace=copied, state=state)
            logger.info("trying %d edit(s) in a copy of the workspace against the task's check", len(edits))
            outcomes = await Toolset(self.tools(copied)).run_calls(edits, trial)
            failed = [outcome.result for outcome in outcomes if outcome.result.is_error]
            if failed:
                logger.info("the edit cannot be made, so it is not tried: %s", failed[0].text[:300])
                return None  # an edit that cannot be made fails on its own, and its error tells the model why
            written = progress.written_files(trial)
            results = await self.checks(copied).results(task, trial, written=written)
        return _verdict(results, _files_as_they_are(jail, paths))


def _files_as_they_are(jail: PathJail, paths: Sequence[str]) -> str:
    """The short files among ``paths`` as the workspace holds them, for :data:`TRIAL_REPORT`."""
    shown = []
    for path in dict.fromkeys(paths):
        try:
            handle, _ = jail.open_read(path)
            with handle:
                text = handle.read(SHOWN_FILE_CHARS + 1).decode("utf-8")
        except (PathEscapeError, OSError, UnicodeDecodeError):
            continue
        if len(text) <= SHOWN_FILE_CHARS:
            shown.append(f"\n{path} as it is now:\n```\n{text.rstrip()}\n```")
    return "".join(shown)


def _verdict(results: Sequence[CheckResult], files: str) -> TrialResult:
    """Whether the checks the task names all pass (the run's own checks are not the task's test;
    a named command whose script the edits removed is not run, and does not pass), and if not, what they say."""
    named = [result for result in results if not result.own]
    failing = [result for result in named if not result.passed]
    if named and not failing:
        return TrialResult(passed=True)
    shown = "\n".join(result.describe(REPORT_CHARS) for result in failing) or "the task's check did not run"
    return TrialResult(passed=False, report=TRIAL_REPORT.format(checks=shown, files=files))
