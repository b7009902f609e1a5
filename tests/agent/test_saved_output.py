"""A file the task says keeps a script's output must hold what the script prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymanus.agent.saved_output import SavedOutput, first_difference, output_lines, saved_output
from pymanus.agent.task_checks import TaskChecks
from pymanus.sandbox import Sandbox
from pymanus.tools.tool import ToolContext

SQUARES_TASK = (
    "Write squares.py that prints the squares of the numbers 1 to 10, one per line, run it, "
    "and save what it prints to squares.txt"
)


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (SQUARES_TASK, SavedOutput("squares.py", "squares.txt")),
        (
            "Run tools/report.py and write its output to `out/report.txt`.",
            SavedOutput("tools/report.py", "out/report.txt"),
        ),
        ("Save what stats.py prints into stats.log", SavedOutput("stats.py", "stats.log")),
        ("Write a.py, then b.py; store the output in result.txt", SavedOutput("b.py", "result.txt")),
    ],
)
def test_the_script_and_the_file_come_from_the_task(task: str, expected: SavedOutput) -> None:
    assert saved_output(task) == expected


@pytest.mark.parametrize(
    "task",
    [
        "Save what it prints to squares.txt",  # no script named
        "Write squares.py and save its output to other.py",  # the output is not kept in a script
        "Write squares.py that prints the squares and save them to squares.txt",
    ],
)
def test_tasks_without_a_script_and_its_saved_output(task: str) -> None:
    assert saved_output(task) is None


def test_lines_compare_without_trailing_spaces_and_empty_lines() -> None:
    assert output_lines("1 \r\n4\n\n") == output_lines("1\n4") == ["1", "4"]
    assert output_lines("1\n\n4") != output_lines("1\n4")


async def check(workspace: Path, task: str = SQUARES_TASK) -> list:
    return await TaskChecks(Sandbox(workspace)).results(task, ToolContext(run_id="run", workspace=workspace))


async def test_a_file_typed_by_hand_that_differs_from_the_output_fails(tmp_path: Path) -> None:
    (tmp_path / "squares.py").write_text("import math\nfor i in range(1, 4):\n    print(math.pow(i, 2))\n")
    (tmp_path / "squares.txt").write_text("1\n4\n9\n")
    [result] = await check(tmp_path)
    assert not result.passed
    assert result.command == "python squares.py"
    assert "squares.txt does not hold what it prints (line 1: it prints '1.0', squares.txt has '1')" in result.status
    assert "`python squares.py > squares.txt`" in result.status
    assert result.output == "1.0\n4.0\n9.0"  # the file's text is not shown: the 1.5B copied it into a print


def test_the_first_difference_names_the_line_and_both_sides() -> None:
    assert first_difference(["1", "4"], ["1", "5"], "s.txt") == "line 2: it prints '4', s.txt has '5'"
    assert first_difference(["1", "4"], ["1"], "s.txt") == "line 2: it prints '4', s.txt has no more lines"
    assert first_difference(["1"], ["1", "4"], "s.txt") == "line 2: it prints no more lines, s.txt has '4'"


async def test_the_saved_output_passes_and_the_script_leaves_the_workspace_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "squares.py").write_text("for i in range(1, 4):\n    print(i * i)\n")
    (tmp_path / "squares.txt").write_text("1\n4\n9\n")
    [result] = await check(tmp_path)
    assert result.passed and result.status == "exit code 0; squares.txt holds what it prints"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["squares.py", "squares.txt"]


async def test_a_script_that_prints_nothing_fails_even_with_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "squares.py").write_text("def squares():\n    for i in range(1, 4):\n        print(i * i)\n")
    (tmp_path / "squares.txt").write_text("")
    [result] = await check(tmp_path)
    assert not result.passed
    assert "it printed nothing, so squares.txt cannot hold what the task asks" in result.status
    assert "runs only where the script calls it" in result.status


async def test_a_script_that_fails_reports_its_error(tmp_path: Path) -> None:
    (tmp_path / "squares.py").write_text("print(1)\nraise SystemExit('no squares today')\n")
    (tmp_path / "squares.txt").write_text("1\n")
    [result] = await check(tmp_path)
    assert not result.passed and result.status == "exit code 1" and "no squares today" in result.output


async def test_nothing_runs_while_the_script_or_the_file_is_missing(tmp_path: Path) -> None:
    (tmp_path / "squares.py").write_text("print(1)\n")
    assert await check(tmp_path) == []
    (tmp_path / "squares.py").unlink()
    (tmp_path / "squares.txt").write_text("1\n")
    assert await check(tmp_path) == []


async def test_output_too_long_to_compare_is_not_judged(tmp_path: Path) -> None:
    (tmp_path / "squares.py").write_text("for i in range(100_000):\n    print(i * i)\n")
    (tmp_path / "squares.txt").write_text("0\n")
    assert await check(tmp_path) == []


async def test_a_kept_file_that_links_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.txt").write_text("password\n")
    (workspace / "squares.py").write_text("print(1)\n")
    (workspace / "squares.txt").symlink_to(tmp_path / "secret.txt")
    assert await check(workspace) == []
