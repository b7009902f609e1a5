"""Runs that start over: a failed attempt is undone and the task begins again."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from helpers.agent_cases import add, assert_protocol
from pymanus import Agent, Message, RunRestarted, RunResult, RunState, ToolContext, tool
from pymanus.agent import snapshot
from pymanus.agent.attempts import ATTEMPT_TEMPERATURE, MIN_ATTEMPT_STEPS, AttemptErrors, restart_note
from pymanus.agent.snapshot import WorkspaceSnapshot
from pymanus.errors import ModelOutputError
from pymanus.models import ScriptedModel, call
from pymanus.models.base import ModelResponse, ModelSettings, ToolDefinition


@tool
def save(path: str, text: str, ctx: ToolContext) -> str:
    """Write a file in the workspace.

    Args:
        path: where, relative to the workspace
        text: what to write
    """
    target = ctx.workspace / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    ctx.state["saved"] = ctx.state.get("saved", 0) + 1
    return f"saved {path}"


@tool
def delete(path: str, ctx: ToolContext) -> str:
    """Delete a file of the workspace.

    Args:
        path: which, relative to the workspace
    """
    (ctx.workspace / path).unlink()
    return f"deleted {path}"


@tool
def count_saves(ctx: ToolContext) -> int:
    """How many files this attempt has saved."""
    return int(ctx.state.get("saved", 0))


def give_up(message: str = "I could not do it.") -> object:
    return call("terminate", status="failure", message=message)


def finish(message: str = "Done.") -> object:
    return call("terminate", status="success", message=message)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('original')\n")
    (root / "data.csv").write_text("a,b\n1,2\n")
    return root


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own, where snapshots are made."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


async def drive(agent: Agent, task: str) -> tuple[list[object], RunResult]:
    """Run ``task``: every event, and the result."""
    run = agent.start(task)
    events = [event async for event in run.events()]
    return events, run.result()


@tool
def run_code(code: str) -> str:
    """Run a snippet.

    Args:
        code: the snippet
    """
    raise ValueError(f"Traceback (most recent call last):\nTypeError: tabulate() got an unexpected keyword {code!r}")


async def test_the_new_attempt_is_told_the_errors_the_failed_one_met(workspace: Path, private_tmp: Path) -> None:
    model = ScriptedModel(
        [
            call("run_code", code="file_path"),
            call("save", path="a.txt", text="x"),
            call("delete", path="missing.txt"),
            call("run_code", code="file_path"),  # the same error again is quoted once
            give_up("The report cannot be written."),
            finish(),
        ]
    )
    agent = Agent(model, tools=[save, delete, run_code], workspace=workspace, attempts=2, max_steps=10)
    _, result = await drive(agent, "Write the report.")
    note = result.messages[1].text
    assert note.endswith(
        "It ended with: The report cannot be written.\nErrors it met on the way:\n"
        "- run_code: TypeError: tabulate() got an unexpected keyword 'file_path'\n"
        f"- delete: `delete` raised FileNotFoundError: [Errno 2] No such file or directory: "
        f"'{workspace / 'missing.txt'}'\n"
        "Do the task again from the beginning, and do not repeat what went wrong."
    )


def test_attempt_errors_keep_the_last_exception_line_of_a_few_distinct_errors() -> None:
    errors = AttemptErrors()
    chained = (
        "Traceback:\nKeyError: 'x'\n\nDuring handling...\njson.decoder.JSONDecodeError: Expecting value\n\nFix it."
    )
    errors.observe("python", chained)
    errors.observe("python", chained)
    errors.observe("edit_file", "\nold_text was not found in stats.py.\nRead it first.")
    errors.observe("python", "x" * 500)
    errors.observe("python", "ZeroDivisionError: division by zero")  # past the limit
    assert errors.lines == [
        "- python: json.decoder.JSONDecodeError: Expecting value",
        "- edit_file: old_text was not found in stats.py.",
        "- python: " + "x" * 189 + "…",
    ]
    assert "Errors it met" not in restart_note("Gave up.", AttemptErrors())
    assert restart_note("Gave up.").endswith(
        "It ended with: Gave up.\nDo the task again from the beginning, and do not repeat what went wrong."
    )


async def test_a_failed_attempt_is_undone_and_the_task_starts_again(workspace: Path, private_tmp: Path) -> None:
    model = ScriptedModel(
        [
            call("save", path="src/app.py", text="broken"),
            call("save", path="new/extra.txt", text="left over"),
            call("delete", path="data.csv"),
            give_up("The table in report.md is not valid."),
            call("count_saves"),
            finish(),
        ]
    )
    agent = Agent(model, tools=[save, delete, count_saves], workspace=workspace, attempts=2, max_steps=10)
    events, result = await drive(agent, "Fix the app.")
    restarts = [e for e in events if isinstance(e, RunRestarted)]
    assert [(e.attempt, e.reason, e.output, e.step) for e in restarts] == [
        (2, "terminate", "The table in report.md is not valid.", 4)
    ]
    # Every change of the failed attempt is gone: the edit, the new folder, the deletion.
    assert (workspace / "src" / "app.py").read_text() == "print('original')\n"
    assert (workspace / "data.csv").read_text() == "a,b\n1,2\n"
    assert not (workspace / "new").exists()
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "Done.", 6)
    # The second attempt's conversation is the task again with how the first one ended, and
    # the per-run tool state started empty.
    first_user = result.messages[1].text
    assert first_user.startswith("Fix the app.")
    assert "earlier attempt" in first_user and "The table in report.md is not valid." in first_user
    assert [m.text for m in result.messages if m.role == "tool"] == ["0", "Done."]
    assert_protocol(result.messages)
    assert model.requests[4][1].text == first_user
    assert list(private_tmp.iterdir()) == []  # the copy is deleted when the run ends


async def test_without_attempts_a_failure_ends_the_run(workspace: Path) -> None:
    model = ScriptedModel([call("save", path="data.csv", text="changed"), give_up()])
    events, result = await drive(Agent(model, tools=[save], workspace=workspace), "task")
    assert not any(isinstance(e, RunRestarted) for e in events)
    assert (result.state, result.reason, result.steps) == (RunState.ERROR, "terminate", 2)
    assert (workspace / "data.csv").read_text() == "changed"  # nothing is undone


async def test_the_last_attempt_ends_the_run_as_it_failed(workspace: Path) -> None:
    model = ScriptedModel([give_up("first"), give_up("second"), give_up("third")])
    events, result = await drive(Agent(model, workspace=workspace, attempts=2, max_steps=10), "task")
    assert [e.attempt for e in events if isinstance(e, RunRestarted)] == [2]
    assert (result.state, result.reason, result.output, result.steps) == (RunState.ERROR, "terminate", "second", 2)
    assert len(model.requests) == 2


async def test_a_stuck_attempt_starts_over(workspace: Path) -> None:
    stuck = call("add", a="x", b=1)  # fails the same way every time
    model = ScriptedModel([stuck, stuck, stuck, call("add", a=1, b=2), finish("3")])
    agent = Agent(model, tools=[add], workspace=workspace, attempts=2, max_repeats=3, resample_repeats=0)
    events, result = await drive(agent, "task")
    (restart,) = [e for e in events if isinstance(e, RunRestarted)]
    assert (restart.attempt, restart.reason, restart.step) == (2, "stuck", 3)
    assert "repeated the same `add` call 3 times" in result.messages[1].text
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "3", 5)
    assert_protocol(result.messages)


@pytest.mark.parametrize("max_steps", [MIN_ATTEMPT_STEPS, MIN_ATTEMPT_STEPS + 1])
async def test_an_attempt_starts_only_with_enough_steps_left(workspace: Path, max_steps: int) -> None:
    model = ScriptedModel([call("add", a=1, b=1), give_up(), finish()])
    events, result = await drive(Agent(model, tools=[add], workspace=workspace, attempts=2, max_steps=max_steps), "t")
    restarted = any(isinstance(e, RunRestarted) for e in events)
    assert restarted is (max_steps - 2 >= MIN_ATTEMPT_STEPS)
    assert result.state is (RunState.FINISHED if restarted else RunState.ERROR)


async def test_running_out_of_steps_or_succeeding_is_final(workspace: Path) -> None:
    model = ScriptedModel([call("add", a=1, b=1), call("add", a=2, b=1), finish()])
    events, result = await drive(Agent(model, tools=[add], workspace=workspace, attempts=3, max_steps=2), "t")
    assert (result.reason, any(isinstance(e, RunRestarted) for e in events)) == ("max_steps", False)
    events, result = await drive(Agent(ScriptedModel([finish()]), workspace=workspace, attempts=3), "t")
    assert (result.state, any(isinstance(e, RunRestarted) for e in events)) == (RunState.FINISHED, False)


async def test_restart_hooks_drop_per_run_state(workspace: Path) -> None:
    dropped: list[str] = []

    async def drop(run_id: str) -> None:
        dropped.append(run_id)

    agent = Agent(ScriptedModel([give_up(), finish()]), workspace=workspace, attempts=2)
    agent.on_run_restart(drop)
    _, result = await drive(agent, "task")
    assert dropped == [result.run_id]


async def test_a_workspace_too_large_to_copy_does_not_start_over(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(snapshot, "MAX_FILES", 2)  # the workspace holds 3 entries
    model = ScriptedModel([give_up(), finish()])
    with caplog.at_level("INFO", logger="pymanus.agent"):
        events, result = await drive(Agent(model, workspace=workspace, attempts=2), "task")
    assert not any(isinstance(e, RunRestarted) for e in events)
    assert result.state is RunState.ERROR
    assert "too large to copy" in caplog.text


def test_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="attempts must be at least 1"):
        Agent(ScriptedModel([]), attempts=0)


def test_a_snapshot_restores_files_folders_and_links_without_following_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "workspace"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("A")
    (root / "link").symlink_to(outside)
    taken = WorkspaceSnapshot.take(root)
    assert taken is not None
    assert (taken.copy / "link").is_symlink()  # copied as a link, the target not read
    (root / "docs" / "a.md").write_text("changed")
    (root / "docs" / "b.md").write_text("new")
    (root / "link").unlink()
    (root / "link").mkdir()
    (root / "made").mkdir()
    taken.restore()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == ["docs", "docs/a.md", "link"]
    assert (root / "docs" / "a.md").read_text() == "A"
    assert os.readlink(root / "link") == str(outside)
    assert outside.read_text() == "secret"
    taken.discard()
    assert not taken.copy.exists()


def test_a_snapshot_of_a_missing_workspace_restores_an_empty_one(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    taken = WorkspaceSnapshot.take(root)
    assert taken is not None
    root.mkdir()
    (root / "x.txt").write_text("x")
    taken.restore()
    assert list(root.iterdir()) == []
    taken.discard()


def test_a_workspace_that_cannot_be_copied_is_not(
    tmp_path: Path, private_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "w"
    root.mkdir()
    with socket.socket(socket.AF_UNIX) as server:  # a special file: copying it fails
        server.bind(str(root / "s"))
        assert WorkspaceSnapshot.take(root) is None
    assert "could not copy workspace" in caplog.text
    assert list(private_tmp.iterdir()) == []


def never_satisfied(task: str, answer: str, context: ToolContext) -> str:
    return f"report.md is still missing (answer was {answer!r})"


async def test_an_answer_the_check_still_doubts_starts_another_attempt(workspace: Path) -> None:
    answers = [finish("one"), finish("two"), finish("three"), finish("four"), finish("five"), finish("six")]
    model = ScriptedModel(answers)
    agent = Agent(model, workspace=workspace, attempts=2, max_steps=10, completion_check=never_satisfied)
    events, result = await drive(agent, "Write report.md.")
    (restart,) = [e for e in events if isinstance(e, RunRestarted)]
    # Sent back twice, then doubted a third time: the attempt ends unfinished and the next begins.
    assert (restart.attempt, restart.reason, restart.step) == (2, "unfinished", 3)
    assert restart.output == "three\nStill unfinished: report.md is still missing (answer was 'three')"
    assert "Still unfinished: report.md is still missing" in result.messages[1].text
    # The last attempt's answer is accepted once its rejections run out, as without attempts.
    assert (result.state, result.reason, result.output, result.steps) == (RunState.FINISHED, "terminate", "six", 6)


async def test_an_answer_the_check_accepts_in_the_end_is_final(workspace: Path) -> None:
    verdicts = iter(["not yet", "not yet", None])

    def check(task: str, answer: str, context: ToolContext) -> str | None:
        return next(verdicts)

    model = ScriptedModel([finish("one"), finish("two"), finish("three")])
    events, result = await drive(Agent(model, workspace=workspace, attempts=2, completion_check=check), "t")
    assert not any(isinstance(e, RunRestarted) for e in events)
    assert (result.state, result.output) == (RunState.FINISHED, "three")


class TemperatureScript(ScriptedModel):
    """A scripted model that also records each request's temperature."""

    def __init__(self, answers: list[Any]) -> None:
        super().__init__(answers)
        self.temperatures: list[float | None] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        self.temperatures.append(settings.temperature)
        return await super().request(messages, tools, settings)


async def test_a_new_attempt_samples_more_freely_than_the_failed_one(workspace: Path) -> None:
    model = TemperatureScript([call("add", a=1, b=1), give_up(), call("add", a=1, b=1), finish()])
    agent = Agent(model, tools=[add], workspace=workspace, attempts=2, settings=ModelSettings(temperature=0.2))
    _, result = await drive(agent, "task")
    assert result.state is RunState.FINISHED
    # The same model at 0.2 began the new attempt with the failed one's calls, token for token.
    assert model.temperatures == [0.2, 0.2, ATTEMPT_TEMPERATURE, ATTEMPT_TEMPERATURE]


async def test_a_workspace_that_cannot_be_put_back_ends_the_run_as_it_failed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def disk_error(self: WorkspaceSnapshot) -> None:  # a full or failing disk cannot be made here
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(WorkspaceSnapshot, "restore", disk_error)
    model = ScriptedModel([give_up("first"), finish()])
    events, result = await drive(Agent(model, workspace=workspace, attempts=2), "task")
    assert not any(isinstance(e, RunRestarted) for e in events)
    assert (result.state, result.reason, result.output) == (RunState.ERROR, "terminate", "first")
    assert "could not put the workspace back" in caplog.text


async def test_a_reply_unreadable_twice_ends_only_its_attempt(workspace: Path, private_tmp: Path) -> None:
    """project_layout: the 1.5B's one python call for every file never closed its string, twice, and the
    run ended at its first step, with 14 steps and a second attempt unused."""
    cut_off = ModelOutputError("local model output ended inside a tool call")
    model = ScriptedModel([call("save", path="a.txt", text="half"), cut_off, cut_off, finish()])
    agent = Agent(model, tools=[save], workspace=workspace, attempts=2, max_steps=10)
    events, result = await drive(agent, "Write a.txt.")
    assert (result.state, result.output) == (RunState.FINISHED, "Done.")
    [restart] = [e for e in events if isinstance(e, RunRestarted)]
    assert restart.reason == "unreadable" and "ended inside a tool call" in restart.output
    assert not (workspace / "a.txt").exists()  # the failed attempt's file is undone
    assert "ended inside a tool call" in model.requests[-1][1].text  # the new attempt is told why
