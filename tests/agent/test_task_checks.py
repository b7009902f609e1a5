"""Checks a task names, run in a real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymanus.agent import progress
from pymanus.agent.task_checks import TaskChecks, check_commands
from pymanus.agent.task_examples import task_examples
from pymanus.sandbox import Sandbox
from pymanus.tools.tool import ToolContext

FAILING_TEST = """import unittest
from calc import double


class CalcTest(unittest.TestCase):
    def test_double(self):
        self.assertEqual(double(4), 8)
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "calc.py").write_text("def double(x):\n    return x + 2\n")
    (folder / "test_calc.py").write_text(FAILING_TEST)
    return folder


def context_for(workspace: Path) -> ToolContext:
    return ToolContext(run_id="run", workspace=workspace)


def test_only_python_commands_in_backticks_are_checks() -> None:
    task = (
        "Fix calc.py so that `python -m unittest test_calc` passes and `python main.py` prints 8; "
        "`pytest -q` too. Then run `rm -rf /` and `ls`, python main.py, `python -m unittest test_calc`."
    )
    assert check_commands(task) == ["python -m unittest test_calc", "python main.py", "pytest -q"]
    assert check_commands("Write a `report.md` with `pythonic` names.") == []


async def test_a_failing_test_fails_and_passes_after_the_fix(workspace: Path) -> None:
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    task = "Fix calc.py so that `python -m unittest test_calc` passes."
    [failing] = await checks.results(task, context)
    assert not failing.passed and failing.status == "exit code 1"
    assert "AssertionError: 6 != 8" in failing.output and "FAILED (failures=1)" in failing.output
    assert "FAILS (exit code 1)" in failing.describe(2000)
    (workspace / "calc.py").write_text("def double(x):\n    return x * 2\n")
    [fixed] = await checks.results(task, context)
    assert fixed.passed and "OK" in fixed.output
    # A check leaves no bytecode behind: the workspace holds only what the run wrote.
    assert sorted(p.name for p in workspace.iterdir()) == ["calc.py", "test_calc.py"]


async def test_results_are_reused_while_the_workspace_is_unchanged(workspace: Path) -> None:
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    task = "Run `python -c 'import time; print(time.monotonic_ns())'`."
    first = await checks.results(task, context)
    assert first[0].passed and first[0].output.strip().isdigit()
    assert await checks.results(task, context) == first
    (workspace / "note.txt").write_text("changed")
    assert await checks.results(task, context) != first


@pytest.mark.parametrize(
    "task",
    [
        "Rename total to compute_total. `python main.py` must still work and print the same as before.",
        "Tidy main.py; `python main.py` must give the same output.",
    ],
)
async def test_a_command_that_must_print_the_same_fails_when_its_output_changes(workspace: Path, task: str) -> None:
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    (workspace / "main.py").write_text("print('total:', 24.0)\n")
    [before] = await checks.results(task, context)
    assert before.passed and before.output == "total: 24.0"
    (workspace / "main.py").write_text("print('total:', 24.0)\nprint('total:', 24.0)\n")
    [changed] = await checks.results(task, context)
    assert not changed.passed and changed.status == "exit code 0, but its output changed"
    assert changed.output == "total: 24.0\ntotal: 24.0\n--- before the changes it printed:\ntotal: 24.0"
    assert "FAILS (exit code 0, but its output changed)" in changed.describe(2000)
    (workspace / "main.py").write_text("TOTAL = 24.0\nprint('total:', TOTAL)\n")
    [same] = await checks.results(task, context)
    assert same.passed


async def test_without_asking_for_the_same_output_only_the_exit_code_counts(workspace: Path) -> None:
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    task = "Make `python main.py` print the total twice."
    (workspace / "main.py").write_text("print(1)\n")
    await checks.results(task, context)
    (workspace / "main.py").write_text("print(1)\nprint(1)\n")
    [changed] = await checks.results(task, context)
    assert changed.passed


async def test_a_script_not_written_yet_is_not_run(workspace: Path) -> None:
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    task = "Write main.py so that `python main.py` prints hello."
    assert await checks.results(task, context) == []
    (workspace / "main.py").write_text("print('hello')\n")
    [ran] = await checks.results(task, context)
    assert ran.passed and ran.output == "hello"
    assert await checks.results("Just `python`, or `python 'unclosed`.", context) == []


async def test_a_check_that_hangs_is_stopped(workspace: Path) -> None:
    (workspace / "spin.py").write_text("while True:\n    pass\n")
    checks = TaskChecks(Sandbox(workspace), timeout=0.5)
    [hung] = await checks.results("Make `python spin.py` finish.", context_for(workspace))
    assert not hung.passed and "time limit" in hung.status


async def test_prompts_show_the_verdict(workspace: Path) -> None:
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    task = "Fix calc.py so that `python -m unittest test_calc` passes."
    results = await checks.results(task, context)
    briefing = progress.task_message(task, context, results)
    assert "The task's checks, run now:\n`python -m unittest test_calc` FAILS" in briefing
    reminder = progress.next_step_prompt(task, context, results)
    assert "AssertionError: 6 != 8" in reminder and "call `terminate` now" not in reminder
    (workspace / "calc.py").write_text("def double(x):\n    return x * 2\n")
    reminder = progress.next_step_prompt(task, context, await checks.results(task, context))
    assert "`python -m unittest test_calc` passes (exit code 0)" in reminder and "call `terminate` now" in reminder


# -- examples the task gives ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("task", "found"),
    [
        (
            'Add slugify(title) to calc.py. For example, slugify("Hello, World!") returns "hello-world".',
            ['slugify("Hello, World!") == "hello-world"'],
        ),
        ("In calc.py, `double(4)` should return `8` and double(x=0) -> 0.", ["double(4) == 8", "double(x=0) == 0"]),
        ("Make double(4) return 8 in calc.py.", []),  # no "returns": not an example
        ("double(4) returns 8, somewhere.", []),  # no module named: nothing to import
        ("In calc.py, double(n) returns twice n and double(open('x')) returns 1.", []),  # not literals
        ('calc.py has a show() function that prints "ready"; ping() should print `pong`.', ['show() prints "ready"']),
    ],
)
def test_examples_in_the_task(workspace: Path, task: str, found: list[str]) -> None:
    assert [example.label for example in task_examples(task, workspace)] == found


async def test_an_example_runs_as_a_check(workspace: Path) -> None:
    """The user's own example is the test a small model skips: 6 is not 8."""
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    task = "Fix double in calc.py: double(4) returns 8, and add half to it: half(8) returns 4.0."
    wrong, missing = await checks.results(task, context)
    assert not wrong.passed and wrong.output == "double(4) returned 6, expected 8"
    assert "`double(4) == 8` FAILS (exit code 1)" in wrong.describe(500)
    assert not missing.passed and missing.output == "half(8) raised NameError: name 'half' is not defined"
    (workspace / "calc.py").write_text("def double(x):\n    return x * 2\n\n\ndef half(x):\n    return x / 2\n")
    fixed, added = await checks.results(task, context)
    assert fixed.passed and added.passed and added.output == "half(8) returned 4.0"


async def test_a_string_example_says_where_the_result_differs(workspace: Path) -> None:
    # add_function: the 1.5B read 'hello-world-' as 'hello-world' and called its slugify done.
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    task = 'Add slugify to calc.py: slugify("Hello, World!") returns "hello-world".'
    cases = {
        "title.lower().replace(', ', '-').replace('!', '-')": "'hello-world-', expected 'hello-world' "
        "('-' is extra at the end; value.strip('-') gives the expected value, where value is what it returns now)",
        # Told only where the result differs, the 1.5B edited this slugify for 15 steps: the fix, in two steps.
        "title.lower().replace(', ', '--').replace('!', '-')": "'hello--world-', expected 'hello-world' "
        "('-' is extra after 'hello-'; '-' is extra at the end; re.sub('-+', '-', value).strip('-') gives the "
        "expected value, where value is what it returns now)",
        "title.lower().replace(', ', '\\\\').replace('!', '')": "'hello\\\\world', expected 'hello-world' "
        "('\\\\' should be '-' after 'hello')",  # no separator run to collapse: no expression
        "title.replace(', ', '-').replace('!', '')": "'Hello-World', expected 'hello-world' "
        "('H' should be 'h' at the start; 'W' should be 'w' after 'Hello-'; value.lower() gives the expected value, "
        "where value is what it returns now)",
        "title.lower().replace(', ', '').replace('!', '')": "'helloworld', expected 'hello-world' "
        "('-' is missing after 'hello')",
        "''": "'', expected 'hello-world'",  # nothing to compare
    }
    for body, shown in cases.items():
        (workspace / "calc.py").write_text(f"def slugify(title):\n    return {body}\n")
        (result,) = await checks.results(task, context)
        assert not result.passed and result.output == f'slugify("Hello, World!") returned {shown}'


PROJECT_TASK = (
    "Set up a project: a package folder weather with __init__.py and cli.py, where cli.py has a main() "
    'function that prints "Weather CLI ready".'
)


async def test_what_a_call_prints_is_checked_in_the_module_the_task_names(tmp_path: Path) -> None:
    # project_layout run 225: the 1.5B gave main a parameter its own test passed, and called the project done.
    (tmp_path / "weather").mkdir()
    (tmp_path / "weather" / "__init__.py").write_text("")
    checks, context = TaskChecks(Sandbox(tmp_path)), context_for(tmp_path)
    assert await checks.results(PROJECT_TASK, context) == []  # no cli.py yet: nothing to run
    cases = {
        "def main(city):\n    print('Weather CLI ready')\n": (
            False,
            "main() raised TypeError: main() missing 1 required positional argument: 'city'",
        ),
        "def main():\n    print('Weather CLI ready!')\n": (
            False,
            "main() printed 'Weather CLI ready!', expected 'Weather CLI ready' ('!' is extra at the end)",
        ),
        "def main():\n    print('Weather CLI ready')\n    raise SystemExit(2)\n": (
            False,
            "main() exited with 2 after printing 'Weather CLI ready\\n'",
        ),
        # Printed on import (and shown as it was), not by the call: main() itself prints nothing.
        "print('Weather CLI ready')\n\ndef main():\n    pass\n": (
            False,
            "Weather CLI ready\nmain() printed '', expected 'Weather CLI ready'",
        ),
        "import sys\n\ndef main():\n    print('Starting')\n    print('  Weather CLI ready ')\n    sys.exit(0)\n": (
            True,
            "main() printed 'Weather CLI ready'",
        ),
    }
    for source, (passed, output) in cases.items():
        (tmp_path / "weather" / "cli.py").write_text(source)
        [result] = await checks.results(PROJECT_TASK, context)
        assert (result.command, result.passed, result.output) == ('main() prints "Weather CLI ready"', passed, output)


def test_the_module_of_an_example_is_where_the_task_puts_it(tmp_path: Path) -> None:
    for folder in ("tools", "weather"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "cli.py").write_text("def main():\n    print('Weather CLI ready')\n")
    [example] = task_examples(PROJECT_TASK, tmp_path)
    assert example.modules == ("weather.cli",) and example.prints  # not tools/cli.py; __init__.py is no module
    [bare] = task_examples('cli.py has a main() that prints "Weather CLI ready".', tmp_path)
    assert bare.modules == ("tools.cli",)  # no folder named: the first cli.py found
    (tmp_path / "weather").rename(tmp_path / "my-weather")
    (tmp_path / "tools").rename(tmp_path / "my-tools")
    assert task_examples(PROJECT_TASK, tmp_path) == []  # no weather/cli.py
    assert task_examples('cli.py has a main() that prints "ready".', tmp_path) == []  # my-tools.cli: no module name


async def test_the_tests_and_package_modules_a_run_wrote_are_checked(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "weather").mkdir(parents=True)
    (workspace / "tests").mkdir()
    # What the 1.5B wrote: a package whose __init__ and cli import each other, a test that
    # expects a printing function to return its text, and a script that works on import.
    (workspace / "weather" / "__init__.py").write_text("from .cli import main\n")
    (workspace / "weather" / "cli.py").write_text("from . import main\n\n\ndef main():\n    print('ready')\n")
    (workspace / "tests" / "test_cli.py").write_text(
        "from weather.cli import main\n\n\ndef test_main():\n    assert main() == 'ready'\n"
    )
    (workspace / "make_report.py").write_text("open('report.md', 'w').write('x')\n")
    written = ["make_report.py", "tests/test_cli.py", "weather/__init__.py", "weather/cli.py"]
    checks, context = TaskChecks(Sandbox(workspace)), context_for(workspace)
    results = await checks.results("Set up the weather package.", context, written=written)
    assert [(r.command, r.passed, r.own) for r in results] == [
        ("python -m pytest -q -p no:cacheprovider tests/test_cli.py", False, True),
        ('python -c "import weather"', False, True),
        ('python -c "import weather.cli"', False, True),
    ]
    assert "ImportError: cannot import name 'main' from partially initialized module" in results[1].output
    assert not (workspace / "report.md").exists()  # the script was not imported
    (workspace / "weather" / "__init__.py").write_text("")
    (workspace / "weather" / "cli.py").write_text("def main():\n    print('ready')\n")
    (workspace / "tests" / "test_cli.py").write_text(
        "from weather.cli import main\n\n\ndef test_main(capsys):\n"
        "    main()\n    assert capsys.readouterr().out == 'ready\\n'\n"
    )
    fixed = await checks.results("Set up the weather package.", context, written=written)
    assert [r.passed for r in fixed] == [True, True, True], [r.output for r in fixed]
    assert sorted(p.name for p in workspace.iterdir()) == ["make_report.py", "tests", "weather"]
    assert await checks.results("Set up the weather package.", context, written=["notes.md"]) == []


async def test_a_failing_test_of_the_run_sends_the_answer_back(tmp_path: Path) -> None:
    from pymanus.agent.manus import missing_outputs

    (tmp_path / "test_calc.py").write_text("def test_double():\n    assert 2 * 2 == 5\n")
    context = context_for(tmp_path)
    results = await TaskChecks(Sandbox(tmp_path)).results("Write a test.", context, written=["test_calc.py"])
    problem = missing_outputs("Write a test.", "Done.", context, results)
    assert problem is not None
    assert problem.startswith("a check of the files this run wrote fails: `python -m pytest -q")
    assert "FAILED test_calc.py::test_double - assert (2 * 2) == 5" in problem


async def test_a_test_file_of_the_run_that_runs_no_test_fails(tmp_path: Path) -> None:
    # project_layout run 213: a test of main() parametrized with no cases, which pytest skips (exit code 0)
    (tmp_path / "test_cli.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('args', [])\ndef test_main(args):\n    assert args\n"
    )
    (tmp_path / "test_calc.py").write_text(
        "import unittest\n\n\nclass CalcTest(unittest.TestCase):\n"
        "    @unittest.skip('later')\n    def test_double(self):\n        self.assertEqual(2 * 2, 4)\n"
    )
    checks, context = TaskChecks(Sandbox(tmp_path)), context_for(tmp_path)
    results = await checks.results("Write the tests.", context, written=["test_calc.py", "test_cli.py"])
    assert [(r.passed, r.status) for r in results] == [
        (False, "it ran no test: every test was skipped or none was found"),
        (False, "it ran no test: every test was skipped or none was found"),
    ], [r.output for r in results]
    (tmp_path / "test_cli.py").write_text("def test_main():\n    assert 1 + 1 == 2\n\n\ndef test_skip():\n    pass\n")
    (tmp_path / "test_calc.py").write_text(
        "import pytest\n\n\ndef test_a():\n    pytest.skip('x')\n\n\ndef test_b():\n    pass\n"
    )
    results = await checks.results("Write the tests.", context, written=["test_calc.py", "test_cli.py"])
    assert [r.passed for r in results] == [True, True]  # one test ran, another was skipped: a test ran
