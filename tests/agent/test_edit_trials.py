"""Edits of the code a task's failing check tests are tried in a copy of the workspace first."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest

from helpers.preset_cases import run_preset, settings_for
from pymanus import RunState
from pymanus.agent import progress
from pymanus.agent.edit_trials import EditTrial
from pymanus.agent.manus import build_manus_agent
from pymanus.models import ScriptedModel, call
from pymanus.tools.tool import ToolContext

STATS = """def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle] + ordered[middle + 1]) / 2
"""
TESTS = """import unittest

from stats import median


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(median([7, 1, 3]), 3)

    def test_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)
"""
TASK = "The tests in test_stats.py fail. Fix stats.py so that `python -m unittest test_stats` passes."
# fix_failing_test: the 1.5B's first fix made the even test pass and the odd one fail
HALF_FIX = call("edit_file", path="stats.py", old_text="len(ordered) // 2", new_text="len(ordered) // 2 - 1")
NO_FIX = call("edit_file", path="stats.py", old_text=") / 2\n", new_text=") / 2.0\n")
FIX = call(
    "edit_file",
    path="stats.py",
    old_text="(ordered[middle] + ordered[middle + 1])",
    new_text="(ordered[middle - 1] + ordered[middle])",
)


def stats_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "stats.py").write_text(STATS)
    (workspace / "test_stats.py").write_text(TESTS)
    return workspace


def trial_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("pymanus-trial-*")}


async def test_an_edit_that_leaves_the_tasks_check_failing_is_drawn_again_and_the_fix_runs(tmp_path: Path) -> None:
    workspace = stats_workspace(tmp_path)
    folders = trial_folders()
    model = ScriptedModel([HALF_FIX, NO_FIX, FIX], name="local:test")
    result = await run_preset(workspace, model, TASK)
    # the fix ran at the first step and the passing check ended the run; the other draws never touched the file
    assert (result.state, result.reason, result.steps) == (RunState.FINISHED, "done_check", 1), result.output
    assert (workspace / "stats.py").read_text() == STATS.replace(
        "(ordered[middle] + ordered[middle + 1])", "(ordered[middle - 1] + ordered[middle])"
    )
    assert [m.text.split(".")[0] for m in result.messages if m.role == "tool"] == ["Edited stats"]
    assert trial_folders() == folders  # the copies are gone
    # the draws were asked with what the check said of the first edit
    assert "AssertionError: 1 != 3" in model.requests[1][-1].text
    assert model.requests[2][-1].text == model.requests[1][-1].text  # every draw: the report on the first edit
    assert sorted(p.name for p in workspace.iterdir()) == ["stats.py", "test_stats.py"]


async def test_when_no_draw_fixes_the_check_the_first_edit_runs(tmp_path: Path) -> None:
    workspace = stats_workspace(tmp_path)
    model = ScriptedModel([HALF_FIX, NO_FIX, NO_FIX, NO_FIX], name="local:test")
    result = await run_preset(workspace, model, TASK)
    assert "len(ordered) // 2 - 1" in (workspace / "stats.py").read_text()
    assert ") / 2.0" not in (workspace / "stats.py").read_text()
    assert result.reason == "model_error"  # the script ran out at the next step


async def test_only_edits_of_files_the_run_started_with_are_tried_while_the_check_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = stats_workspace(tmp_path)
    agent = build_manus_agent(settings_for(workspace), model=ScriptedModel([], name="local:test"))
    trial = agent.call_trial
    assert isinstance(trial, EditTrial)
    context = ToolContext(run_id="r", workspace=workspace)
    progress.task_message(TASK, context, await trial.results(TASK, context))
    half = await trial(TASK, [HALF_FIX], context)
    assert half is not None and not half.passed
    # the draws that follow are told what the check said of it
    assert half.report.startswith(
        "Your reply's edits were made first in a copy of the workspace, and the task's check still fails there:\n"
        "`python -m unittest test_stats` FAILS"
    )
    assert "AssertionError: 1 != 3" in half.report and half.report.endswith(
        "Write a different change that makes it pass."
    )
    # and shown the file as it still is, so that their edits start from its real text
    assert f"The workspace itself is unchanged.\nstats.py as it is now:\n```\n{STATS.rstrip()}\n```" in half.report
    fixed = await trial(TASK, [FIX], context)
    assert fixed is not None and fixed.passed
    assert (workspace / "stats.py").read_text() == STATS  # tried in a copy
    new_file = call("write_file", path="helpers.py", content="X = 1\n")
    assert await trial(TASK, [new_file], context) is None  # a file the run did not start with
    assert await trial(TASK, [call("python", code="print(1)")], context) is None
    # an edit that cannot be made fails on its own; the log says why it was not tried
    with caplog.at_level(logging.INFO, logger="pymanus.agent.edit_trials"):
        assert (
            await trial(TASK, [call("edit_file", path="stats.py", old_text="no such", new_text="x")], context) is None
        )
    assert "the edit cannot be made, so it is not tried: old_text was not found in stats.py" in caplog.text
    # a test edited to pass is not the code fixed
    easier_test = call("edit_file", path="test_stats.py", old_text="), 2.5)", new_text="), 3.5)")
    assert await trial(TASK, [easier_test], context) is None
    assert await trial(TASK, [HALF_FIX, easier_test], context) is None
    (workspace / "stats.py").write_text(
        STATS.replace("ordered[middle] + ordered[middle + 1]", "ordered[middle - 1] + ordered[middle]")
    )
    assert await trial(TASK, [NO_FIX], context) is None  # the check passes already
    # a task without a named check: nothing to try edits against
    other = ToolContext(run_id="r", workspace=workspace)
    progress.task_message("Tidy up stats.py.", other)
    assert await trial("Tidy up stats.py.", [NO_FIX], other) is None


async def test_a_hosted_model_gets_no_trials(tmp_path: Path) -> None:
    agent = build_manus_agent(settings_for(tmp_path), model=ScriptedModel([], name="openai:gpt-4o-mini"))
    assert agent.call_trial is None
