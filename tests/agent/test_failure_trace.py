"""How a failing test's call ran, traced in a real sandbox."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pymanus.agent.failure_trace import TRACE_CHARS, FailingTest, example_trace, failing_test, failure_trace
from pymanus.agent.task_checks import TaskChecks
from pymanus.sandbox import Sandbox
from pymanus.tools.tool import ToolContext

STATS = '''"""Small statistics helpers."""


def mean(values):
    return sum(values) / len(values)


def median(values):
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle] + ordered[middle + 1]) / 2


def total(values):
    result = 0
    for value in values:
        result += value
    return result + 1
'''

TEST_STATS = """import unittest

from stats import mean, median, total


class StatsTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3]), 2)

    def test_median_even(self):
        self.assertEqual(median([3, 1, 2]), 2)
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_median_empty(self):
        self.assertIsNone(median([]))

    def test_total(self):
        self.assertEqual(total(range(100)), 4950)
"""

UNITTEST_OUTPUT = """.F
======================================================================
FAIL: test_median_even (test_stats.StatsTest.test_median_even)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/ws/test_stats.py", line 12, in test_median_even
    self.assertEqual(median([4, 1, 3, 2]), 2.5)
AssertionError: 3.5 != 2.5

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "stats.py").write_text(STATS)
    (folder / "test_stats.py").write_text(TEST_STATS)
    return folder


async def trace_of(workspace: Path, *command: str) -> str | None:
    """The trace of the first failing test of ``command``, run as a check would be."""
    sandbox = Sandbox(workspace)
    outcome = await sandbox.run([sys.executable, *command], env={"PYTHONDONTWRITEBYTECODE": "1"}, timeout=60)
    assert not outcome.ok
    return await failure_trace(sandbox, outcome.stdout + outcome.stderr, timeout=60)


# -- finding the failing test in a runner's output ---------------------------------------------
def test_unittest_failures_and_errors_are_found() -> None:
    assert failing_test(UNITTEST_OUTPUT) == FailingTest(
        "test_stats.StatsTest.test_median_even", "unittest", "/tmp/ws/test_stats.py", 12
    )
    error = (
        "ERROR: test_median_empty (test_stats.StatsTest.test_median_empty)\n"
        "-------\nTraceback (most recent call last):\n"
        '  File "/tmp/ws/test_stats.py", line 15, in test_median_empty\n    self.assertIsNone(median([]))\n'
        '  File "/tmp/ws/stats.py", line 10, in median\n    raise ValueError("median of an empty list")\n'
        "ValueError: median of an empty list\n\n"
        "======================================================================\n"
        "FAIL: test_mean (test_stats.StatsTest.test_mean)\n"
    )
    # The line of the test file, not of the code it called: where the call was made.
    assert failing_test(error) == FailingTest(
        "test_stats.StatsTest.test_median_empty", "unittest", "/tmp/ws/test_stats.py", 15
    )
    # Python 3.10 and older name only the class; a module that did not import is no test to trace.
    assert failing_test("FAIL: test_mean (test_stats.StatsTest)\n") == FailingTest(
        "test_stats.StatsTest.test_mean", "unittest"
    )
    assert failing_test("ERROR: test_stats (unittest.loader._FailedTest.test_stats)\n") is None
    assert failing_test("Ran 3 tests in 0.001s\n\nOK\n") is None


def test_pytest_failures_are_found() -> None:
    output = (
        "__________________________ StatsTest.test_median_even __________________________\n\n"
        "self = <test_stats.StatsTest testMethod=test_median_even>\n\n"
        "    def test_median_even(self):\n>       self.assertEqual(median([4, 1, 3, 2]), 2.5)\n"
        "E       AssertionError: 3.5 != 2.5\n\ntest_stats.py:12: AssertionError\n"
        "________________________________ test_mean ________________________________\n\n"
        "test_other.py:3: AssertionError\n"
        "=========================== short test summary info ============================\n"
        "FAILED test_stats.py::StatsTest::test_median_even - AssertionError: 3.5 != 2.5\n"
        "FAILED test_other.py::test_mean - assert 1 == 2\n"
    )
    assert failing_test(output) == FailingTest(
        "test_stats.py::StatsTest::test_median_even", "pytest", "test_stats.py", 12
    )
    # With ``--tb=no`` there is no traceback: the test is known, not its line.
    assert failing_test("FAILED tests/test_x.py::test_y[1-2] - assert 0\n") == FailingTest(
        "tests/test_x.py::test_y[1-2]", "pytest"
    )


# -- tracing ---------------------------------------------------------------------------------
async def test_the_failing_call_is_shown_line_by_line_with_its_values(workspace: Path) -> None:
    trace = await trace_of(workspace, "-m", "unittest", "test_stats.StatsTest.test_median_even")
    assert trace is not None
    # The second call fails, not the first (median([3, 1, 2]) returns 2).
    assert trace.startswith(
        "How median([4, 1, 3, 2]) ran in stats.py, called from test_stats.py line 12 (test_median_even):"
    )
    assert "ordered = sorted(values)  # ordered = [1, 2, 3, 4]" in trace
    assert "middle = len(ordered) // 2  # middle = 2" in trace
    assert "return (ordered[middle] + ordered[middle + 1]) / 2  # returned 3.5" in trace
    assert "where ordered[middle] = 3, ordered[middle + 1] = 4" in trace
    # The test expects 2.5: the line with both indexes one lower returns it.
    assert trace.endswith("expected 2.5: `return (ordered[middle - 1] + ordered[middle]) / 2` would return 2.5")
    assert "return ordered[middle]" not in trace  # the branch not taken
    assert len(trace) <= TRACE_CHARS
    # The rerun leaves the workspace as it was.
    assert sorted(path.name for path in workspace.iterdir()) == ["stats.py", "test_stats.py"]


async def test_a_pytest_failure_is_traced(workspace: Path) -> None:
    (workspace / "test_stats.py").write_text(
        "from stats import median\n\n\ndef test_median_odd():\n    assert median([3, 1, 2]) == 2\n\n\n"
        "def test_median_even():\n    assert median([4, 1, 3, 2]) == 2.5\n"
    )
    trace = await trace_of(workspace, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_stats.py")
    assert trace is not None
    assert trace.startswith(
        "How median([4, 1, 3, 2]) ran in stats.py, called from test_stats.py line 9 (test_median_even)"
    )
    assert "where ordered[middle] = 3, ordered[middle + 1] = 4" in trace
    assert "`return (ordered[middle - 1] + ordered[middle]) / 2` would return 2.5" in trace


@pytest.mark.parametrize(
    ("body", "expected", "fix"),
    [
        ("return items[1]", 10, "return items[0]"),  # one read, one lower
        ("return items[i + 1] - 10", 10, "return items[i] - 10"),
        ("return items[i] + items[i + 2]", 50, "return items[i - 1] + items[i + 2]"),  # one of two reads
        ("return (items[i] + items[i + 1]) / 2", 15, "return (items[i - 1] + items[i]) / 2"),  # 15.0 is 15
        ("return items[0] + 1", 10, None),  # no index one off returns it
        ("return items[len(items) - 1]", 30, None),  # a call in the line: nothing is evaluated
    ],
)
async def test_a_return_line_with_an_index_one_off_gets_the_line_that_returns_the_expected_value(
    workspace: Path, body: str, expected: int, fix: str | None
) -> None:
    (workspace / "pick.py").write_text(f"def pick(items, i=1):\n    {body}\n")
    (workspace / "test_pick.py").write_text(
        f"from pick import pick\n\n\ndef test_pick():\n    assert {expected} == pick([10, 20, 30, 40])\n"
    )
    trace = await trace_of(workspace, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_pick.py")
    assert trace is not None and f"{body}  # returned" in trace
    if fix:
        assert trace.endswith(f"expected {expected}: `{fix}` would return {expected}"), trace
    else:
        assert "would return" not in trace, trace


async def test_a_call_that_raises_shows_the_exception_at_its_line(workspace: Path) -> None:
    trace = await trace_of(workspace, "-m", "unittest", "test_stats.StatsTest.test_median_empty")
    assert trace is not None and trace.startswith("How median([]) ran in stats.py")
    assert 'line 10  raise ValueError("median of an empty list")  # raised ValueError: median of an empty list' in trace


async def test_a_loop_is_cut(workspace: Path) -> None:
    trace = await trace_of(workspace, "-m", "unittest", "test_stats.StatsTest.test_total")
    assert trace is not None and len(trace) <= TRACE_CHARS
    assert "for value in values:  # value = 0" in trace
    assert "more lines; the trace stops after 40)" in trace
    # How it ended is shown all the same.
    assert trace.endswith("return result + 1  # result = 4950; value = 99; returned 4951")


async def test_a_failure_in_the_test_itself_has_no_trace(workspace: Path) -> None:
    (workspace / "test_stats.py").write_text(
        "import unittest\n\n\nclass StatsTest(unittest.TestCase):\n"
        "    def test_arithmetic(self):\n        self.assertEqual(1 + 1, 3)\n"
    )
    assert await trace_of(workspace, "-m", "unittest", "test_stats") is None


# -- in the checks the task names -------------------------------------------------------------
async def test_a_failing_check_shows_the_trace_and_a_passing_one_does_not(workspace: Path) -> None:
    (workspace / "test_stats.py").write_text(TEST_STATS.split("    def test_median_empty")[0])
    checks, context = TaskChecks(Sandbox(workspace)), ToolContext(run_id="run", workspace=workspace)
    task = "Fix stats.py so that `python -m unittest test_stats` passes."
    [failing] = await checks.results(task, context)
    assert not failing.passed and "AssertionError: 3.5 != 2.5" in failing.output
    assert "ordered[middle + 1] = 4" in failing.trace
    described = failing.describe(800)
    assert described.index("AssertionError: 3.5 != 2.5") < described.index(
        "The failing call, line by line, with the values it computed:"
    )
    assert "# ordered = [1, 2, 3, 4]" in described and "where ordered[middle] = 3" in described
    (workspace / "stats.py").write_text(STATS.replace("middle + 1]", "middle - 1]"))
    [fixed] = await checks.results(task, context)
    assert fixed.passed and fixed.trace == "" and "tracer" not in fixed.describe(800)


async def test_a_failing_example_of_the_task_shows_its_call_traced(workspace: Path) -> None:
    (workspace / "textutils.py").write_text(
        "def slugify(title):\n    lowered = title.lower()\n    return '-'.join(c for c in lowered if c.isalnum())\n"
    )
    checks, context = TaskChecks(Sandbox(workspace)), ToolContext(run_id="run", workspace=workspace)
    task = 'Add slugify(title) to textutils.py. For example, slugify("Hello, World!") returns "hello-world".'
    [failing] = await checks.results(task, context)
    assert not failing.passed and "returned 'h-e-l-l-o-w-o-r-l-d', expected 'hello-world'" in failing.output
    assert failing.trace.startswith("How slugify('Hello, World!') ran in textutils.py:\n")
    assert "# lowered = 'hello, world!'" in failing.trace and "returned 'h-e-l-l-o-w-o-r-l-d'" in failing.trace
    (workspace / "textutils.py").write_text("def slugify(title):\n    raise KeyError(title)\n")
    [raising] = await checks.results(task, context)
    assert "raise KeyError(title)  # raised KeyError" in raising.trace
    (workspace / "textutils.py").write_text(
        "import re\n\n\ndef slugify(title):\n    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')\n"
    )
    [fixed] = await checks.results(task, context)
    assert fixed.passed and fixed.trace == ""


async def test_a_comprehension_in_the_call_shows_its_items_and_result(workspace: Path) -> None:
    # add_function: every word was filtered out ('Hello,'.isalnum() is False); the trace only said ''.
    (workspace / "textutils.py").write_text(
        "def slugify(title):\n    return '-'.join([w.lower() for w in title.split() if w.isalnum()])\n\n\n"
        "def nonzero(d):\n    kept = {k: v for k, v in d.items() if v}\n    return len(kept)\n"
    )
    sandbox = Sandbox(workspace)
    trace = await example_trace(sandbox, 'slugify("Hello, World!")', ["textutils"], 20)
    assert trace is not None and trace.endswith(
        "# the comprehension ran with w = 'Hello,'; w = 'World!', giving []; returned ''"
    )
    trace = await example_trace(sandbox, "nonzero({'a': 1, 'b': 0})", ["textutils"], 20)
    assert trace is not None
    assert "# the comprehension ran with k = 'a', v = 1; k = 'b', v = 0, giving {'a': 1}; kept = {'a': 1}" in trace


async def test_an_example_of_a_number_gets_the_line_that_returns_it(workspace: Path) -> None:
    checks, context = TaskChecks(Sandbox(workspace)), ToolContext(run_id="run", workspace=workspace)
    [failing] = await checks.results("In stats.py, median([4, 1, 3, 2]) returns 2.5.", context)
    assert failing.output == "median([4, 1, 3, 2]) returned 3.5, expected 2.5"
    assert failing.trace.endswith("`return (ordered[middle - 1] + ordered[middle]) / 2` would return 2.5")
