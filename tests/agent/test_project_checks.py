"""The project name and version a task gives, held against the pyproject.toml the run wrote, and the
tests it asks for, held against the test files the run wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymanus.agent import progress
from pymanus.agent.manus import missing_outputs
from pymanus.agent.project_checks import missing_tests, pyproject_problems
from pymanus.tools.tool import ToolContext

TASK = (
    "Set up a new Python project called weather in this folder: a package folder weather with __init__.py "
    "and cli.py, and a pyproject.toml with the project name and version 0.1.0."
)


def started(workspace: Path, task: str = TASK) -> ToolContext:
    context = ToolContext(run_id="r", workspace=workspace)
    progress.task_message(task, context)
    return context


def test_another_name_or_version_sends_the_answer_back(tmp_path: Path) -> None:
    context = started(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.poetry]\nname = "weather-cli"\nversion = "1.0"\n')
    assert pyproject_problems(TASK, context) == [
        "pyproject.toml gives the project name 'weather-cli', but the task calls the project weather: "
        'set name = "weather" under [tool.poetry]',
        "pyproject.toml gives the version '1.0', but the task asks for version 0.1.0: "
        'set version = "0.1.0" under [tool.poetry]',
    ]
    problem = missing_outputs(TASK, "Done.", context)
    assert problem is not None and "the task calls the project weather" in problem
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "0.1.0"\n')
    assert pyproject_problems(TASK, context) == [
        "pyproject.toml gives no project name, but the task calls the project weather: "
        'set name = "weather" under [project]'
    ]


def test_a_file_without_the_table_gets_the_whole_table_to_write(tmp_path: Path) -> None:
    # The 1.5B wrote name and version as bare keys, then read "set name under [project]" and ran python.
    context = started(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[build-system]\nrequires = ['setuptools']\n")
    [problem] = pyproject_problems(TASK, context)
    assert problem == (
        "pyproject.toml has no [project] table with the project's name and version (keys outside a table belong "
        "to no table): write_file it with this content (other tables it needs go after it): "
        '"[project]\\nname = \\"weather\\"\\nversion = \\"0.1.0\\"\\n"'
    )
    # Bare keys: the format check gives the file with its [project] line, once.
    (tmp_path / "pyproject.toml").write_text("name = 'weather'\nversion = '0.1.0'\n")
    assert pyproject_problems(TASK, context) == []
    sent_back = missing_outputs(TASK, "Done.", context)
    assert sent_back is not None and sent_back.count("pyproject.toml") == 2, sent_back
    assert "pyproject.toml sets name, version outside any table" in sent_back
    assert sent_back.endswith(". Fix this, then call terminate again.")
    # project_layout run 231: the keys with the table's name in front, which the [project] line replaces.
    (tmp_path / "pyproject.toml").write_text("project_name = 'weather'\nproject-version = '0.1.0'\n")
    sent_back = missing_outputs(TASK, "Done.", context) or ""
    assert "pyproject.toml sets project_name, project-version outside any table" in sent_back
    assert "with this content: \"[project]\\nname = 'weather'\\nversion = '0.1.0'\\n\"" in sent_back
    # `tool = 'poetry'` as a key, not the [tool.poetry] table: the done check crashed on the string.
    (tmp_path / "pyproject.toml").write_text("tool = 'poetry'\n[build-system]\nrequires = []\n")
    [problem] = pyproject_problems(TASK, context)
    assert problem.startswith("pyproject.toml has no [project] table with the project's name and version")


@pytest.mark.parametrize(
    "written",
    [
        '[project]\nname = "weather"\nversion = "0.1.0"\n',
        '[project]\nname = "Weather"\nversion = "0.1.0"\n',  # names compare as packaging does
        '[tool.poetry]\nname = "weather"\nversion = "0.1.0"\n',
        "[project\nname = ",  # does not parse: the format check speaks for it
    ],
)
def test_the_name_and_version_the_task_gives_pass(tmp_path: Path, written: str) -> None:
    context = started(tmp_path)
    (tmp_path / "pyproject.toml").write_text(written)
    assert pyproject_problems(TASK, context) == []


def test_tasks_that_give_no_name_or_version_and_files_the_run_did_not_write_are_not_judged(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "old"\nversion = "9"\n')
    context = started(tmp_path)
    assert pyproject_problems(TASK, context) == []  # there before the run
    other = "Add a pyproject.toml that requires Python version 3.11."
    context = started(tmp_path, other)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0.2"\n')
    assert pyproject_problems(other, context) == []


LAYOUT = "Set up a project: a package folder weather with cli.py, and a tests folder with a test for main()."


def test_a_task_that_asks_for_a_test_is_unfinished_without_a_test_file(tmp_path: Path) -> None:
    # project_layout: the 1.5B wrote tests/__init__.py alone and called the project done.
    context = started(tmp_path, LAYOUT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    expected = (
        "the task asks for a test, but this run wrote no test file: write one such as tests/test_main.py, "
        "with a function def test_...() that calls main()"
    )
    assert missing_tests(LAYOUT, context) == [expected]
    problem = missing_outputs(LAYOUT, "Done.", context)
    assert problem is not None and expected in problem
    (tmp_path / "tests" / "test_cli.py").write_text("from weather.cli import main\n\ndef test_main():\n    main()\n")
    assert missing_tests(LAYOUT, context) == []


@pytest.mark.parametrize(
    ("task", "suggested"),
    [
        ("Write tests for the parser in parser.py.", "test_main.py, with a function def test_...()"),
        ("Add one unit test of `parse` to the project.", "test_parse.py, with a function def test_...()"),
        ("Add a test for the parser.", "test_main.py, with a function def test_...()"),
    ],
)
def test_the_suggested_test_file_follows_the_task(tmp_path: Path, task: str, suggested: str) -> None:
    [problem] = missing_tests(task, started(tmp_path, task))
    assert problem.endswith(suggested)


@pytest.mark.parametrize(
    "task", ["Fix the failing test in test_stats.py so it passes.", "Run the tests and report what fails."]
)
def test_tasks_that_ask_for_no_new_test(tmp_path: Path, task: str) -> None:
    assert missing_tests(task, started(tmp_path, task)) == []


def test_a_test_file_that_was_there_before_the_run_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "test_old.py").write_text("def test_old():\n    pass\n")
    context = started(tmp_path, "Add a test for slugify() in textutils.py.")
    assert missing_tests("Add a test for slugify() in textutils.py.", context) != []
    (tmp_path / "textutils_test.py").write_text("def test_slugify():\n    pass\n")
    assert missing_tests("Add a test for slugify() in textutils.py.", context) == []
