"""The checks a task names, run for the model: "so that `python -m unittest test_stats` passes".

A task that names a command gives its own test of success. Small models seldom run it:
they re-type parts of the tests, misread a number, and declare the bug fixed. The
preset runs the named command in the sandbox and shows the verdict in the first
message, in the reminder after a step that changed the workspace, and before a final
answer is accepted (a failing check sends the answer back).

Only commands in backticks that start with ``python``, ``python3`` or ``pytest`` count.
They run in the run's :class:`~pymanus.sandbox.Sandbox` (the isolation and limits of the
``python`` tool) on the interpreter PyManus runs on; a command whose script does not
exist yet is skipped (the task may ask to write it). When one fails on a test, the call that
test made into the workspace is rerun and shown line by line with its values
(:mod:`pymanus.agent.failure_trace`). When the task asks for the same
output as before ("must still work and print the same"), a command that passed once in the
run fails when it later prints something else. The examples the task gives ("f(x)
returns y", :mod:`pymanus.agent.task_examples`) run the same way, and so does a script whose
output the task says to save to a file (:mod:`pymanus.agent.saved_output`).

The run's own work is checked too (:func:`own_checks`): the test files it wrote must pass
(with pytest when it is installed, else unittest), and the modules it wrote in a package must
import. The 1.5B set up a package whose ``__init__`` and ``cli`` imported each other and
a test asserting that a function which prints returns the text, and called it done.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path, PurePosixPath

from pymanus.agent.failure_trace import TRACE_TIMEOUT, example_trace, failure_trace
from pymanus.agent.saved_output import SavedOutput, first_difference, output_lines, saved_output
from pymanus.agent.task_examples import task_examples
from pymanus.errors import PathEscapeError
from pymanus.sandbox.paths import PathJail
from pymanus.sandbox.process import ProcessResult, Sandbox
from pymanus.sandbox.streams import fit
from pymanus.tools.builtin.python_commands import parse_command
from pymanus.tools.builtin.workspace_scan import is_test_file, scan
from pymanus.tools.tool import ToolContext

CHECK_TIMEOUT = 60.0
"""Wall-clock seconds one check may run."""
_COMMAND = re.compile(r"`((?:python3?|pytest)(?: [^`\n]*)?)`")
_STATE = "task_checks.last"
"""``ToolContext.state`` key: the commands and workspace scan the last results belong to, and the results."""
_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}  # a check leaves the workspace as it was
_OWN_ENV = {**_ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""Own checks run without the environment's pytest plugins, some of which write files (``.benchmarks/``)."""


_SAVED_LIMIT = 200_000
"""Bytes of a script's output (and of the file said to keep it) compared; longer ones are not judged."""
_SAME_OUTPUT = re.compile(r"\b(?:prints?|outputs?|shows?)\b[^.`]{0,20}\bsame\b|\bsame output\b", re.IGNORECASE)
"""A task that wants a command's output unchanged ("must still work and print the same as before")."""
_BEFORE = "task_checks.before"
"""``ToolContext.state`` key: what each command printed the first time it passed in the run."""


def _as_before(result: CheckResult, before: dict[str, str]) -> CheckResult:
    """``result``, failed when its command passed before in the run and now prints something else."""
    if not result.passed:
        return result
    expected = before.setdefault(result.command, result.output)
    if result.output == expected:
        return result
    output = f"{result.output}\n--- before the changes it printed:\n{expected}"
    return replace(result, passed=False, status=f"{result.status}, but its output changed", output=output)


def check_commands(task: str) -> list[str]:
    """The commands ``task`` names in backticks that PyManus can run as checks."""
    return list(dict.fromkeys(command.strip() for command in _COMMAND.findall(task)))


@dataclass(frozen=True)
class CheckResult:
    """What one named command did."""

    command: str
    """The command, or the example's call and value."""
    passed: bool
    status: str
    """How it ended: "exit code 1", "stopped: it ran longer than the time limit ..."."""
    output: str
    """Standard output and error, as the terminal would show them."""
    own: bool = False
    """A check of the run's own work (:func:`own_checks`), not one the task names."""
    trace: str = ""
    """How the failing test's call into the workspace ran (:func:`~pymanus.agent.failure_trace.failure_trace`)."""

    def describe(self, limit: int) -> str:
        """The verdict and the output cut to ``limit`` characters, for a prompt; then the trace, if any.

        The trace (at most about :data:`~pymanus.agent.failure_trace.TRACE_CHARS`) does not count against
        ``limit``: cut in the middle of a runner's traceback, it would lose the lines that locate the bug.
        """
        verdict = "passes" if self.passed else "FAILS"
        text = fit(self.output.strip(), limit) if self.output.strip() else "(no output)"
        described = f"`{self.command}` {verdict} ({self.status}). Its output:\n```\n{text}\n```"
        if self.trace:
            described += f"\nThe failing call, line by line, with the values it computed:\n```\n{self.trace}\n```"
        return described


def own_checks(workspace: Path, written: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Commands (label, argv) that check the run's work: the test files it wrote pass, and
    the modules it wrote in a package (a folder with ``__init__.py``, from the workspace
    root down) import. Plain modules are not imported: a script runs its work on import."""
    checks = []
    runner = ["-m", "pytest", "-q", "-p", "no:cacheprovider"] if importlib.util.find_spec("pytest") else None
    for name in written:
        path = PurePosixPath(name)
        if path.suffix != ".py" or not (workspace / name).is_file():
            continue
        if is_test_file(path.name):
            argv = [*(runner or ["-m", "unittest"]), name]
            checks.append((f"python {' '.join(argv)}", [sys.executable, *argv]))
        elif path.parent.parts and all(
            (workspace / PurePosixPath(*path.parent.parts[: depth + 1]) / "__init__.py").is_file()
            for depth in range(len(path.parent.parts))
        ):
            module = ".".join(path.with_suffix("").parts).removesuffix(".__init__")
            checks.append((f'python -c "import {module}"', [sys.executable, "-c", f"import {module}"]))
    return checks


# pytest's summary with skips and no pass ("1 skipped in 0.01s"), or none collected
_PYTEST_NOTHING_RAN = re.compile(r"^(?!.*\bpassed\b)(?:=+ )?\d+ skipped\b.* in [\d.]+s|\bno tests ran\b", re.MULTILINE)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in .*\n+OK(?: \(skipped=(\d+)\))?$", re.MULTILINE)


def _nothing_ran(output: str) -> bool:
    """Whether a pytest or unittest run that passed ran no test: none found, or every one skipped."""
    if _PYTEST_NOTHING_RAN.search(output):
        return True
    ran = _UNITTEST_RAN.search(output)
    return ran is not None and int(ran.group(1)) == int(ran.group(2) or 0)


def _ran_a_test(result: CheckResult) -> CheckResult:
    """``result`` of a test file the run wrote, failed when it passed without running a test.

    project_layout run 213: the 1.5B's test of ``main()`` was ``@pytest.mark.parametrize('args', [])``,
    a test with no cases, which pytest skips: "1 skipped", exit code 0, and a project "with a test".
    """
    if not result.passed or "import " in result.command or not _nothing_ran(result.output):
        return result
    return replace(result, passed=False, status="it ran no test: every test was skipped or none was found")


class TaskChecks:
    """Runs a task's named checks in ``sandbox``, once per state of the workspace."""

    def __init__(self, sandbox: Sandbox, *, timeout: float = CHECK_TIMEOUT) -> None:
        self.sandbox = sandbox
        self.timeout = timeout

    async def results(self, task: str, context: ToolContext, written: Sequence[str] = ()) -> list[CheckResult]:
        """The checks' results for the workspace as it is now (rerun only after a change).

        ``written``: the files the run has written so far, whose own checks run too.
        """
        workspace = Path(context.workspace)
        commands = check_commands(task)
        examples = task_examples(task, workspace)
        own = own_checks(workspace, written)
        saved = saved_output(task)
        if not commands and not examples and not own and saved is None:
            return []
        snapshot = scan(workspace)
        key = (commands, examples, own, saved)
        last = context.state.get(_STATE)
        if snapshot is not None and last is not None and last[:2] == (key, snapshot):
            return list(last[2])
        runnable = [(command, argv) for command in commands if (argv := self._argv(command)) is not None]
        results = []
        for label, argv in runnable:
            result = await self._run(label, argv)
            results.append(await self._traced(result, partial(failure_trace, self.sandbox, result.output)))
        if _SAME_OUTPUT.search(task):
            results = [_as_before(result, context.state.setdefault(_BEFORE, {})) for result in results]
        for example in examples:
            result = await self._run(example.label, example.argv())
            results.append(
                await self._traced(
                    result,
                    partial(example_trace, self.sandbox, example.call, example.modules, expected=example.returns),
                )
            )
        if saved is not None and (saved_check := await self._saved_output(saved)) is not None:
            results.append(saved_check)
        results += [_ran_a_test(replace(await self._run(label, argv, _OWN_ENV), own=True)) for label, argv in own]
        context.state[_STATE] = (key, snapshot, results)
        return results

    async def _run(self, label: str, argv: list[str], env: dict[str, str] = _ENV) -> CheckResult:
        outcome = await self.sandbox.run(argv, env=env, timeout=self.timeout, output_limit=20_000)
        return self._result(label, outcome)

    def _result(self, label: str, outcome: ProcessResult) -> CheckResult:
        status = outcome.exit_description(self.sandbox.limits)
        output = "\n".join(part.rstrip("\n") for part in (outcome.stdout, outcome.stderr) if part.strip())
        return CheckResult(label, outcome.ok, status, output)

    async def _saved_output(self, saved: SavedOutput) -> CheckResult | None:
        """Whether ``saved.file`` holds what ``saved.script`` prints; ``None`` while either is missing."""
        jail = PathJail(self.sandbox.workspace)
        if not (jail.root / saved.script).is_file():
            return None
        try:
            handle, _ = jail.open_read(saved.file)  # the file may be a link out of the workspace
        except (PathEscapeError, OSError):
            return None
        with handle:
            kept = handle.read(_SAVED_LIMIT + 1).decode("utf-8", errors="replace")
        label = f"python {saved.script}"
        outcome = await self.sandbox.run(
            [sys.executable, saved.script], env=_ENV, timeout=self.timeout, output_limit=_SAVED_LIMIT
        )
        result = self._result(label, outcome)
        if not result.passed:
            return result
        if outcome.stdout_truncated or len(kept) > _SAVED_LIMIT:
            return None  # too long to compare whole
        if not output_lines(outcome.stdout):
            return replace(
                result,
                passed=False,
                status=(
                    f"{result.status}, but it printed nothing, so {saved.file} cannot hold what the task asks: "
                    "the script must print its results (a function it defines runs only where the script calls it)"
                ),
            )
        if output_lines(outcome.stdout) == output_lines(kept):
            return replace(result, status=f"{result.status}; {saved.file} holds what it prints")
        # Where they differ, not the file's whole text: shown under the output, the 1.5B copied
        # the file's heading into the script as a print.
        return replace(
            result,
            passed=False,
            status=(
                f"{result.status}, but {saved.file} does not hold what it prints "
                f"({first_difference(output_lines(outcome.stdout), output_lines(kept), saved.file)}): once the "
                f"script prints what the task asks, save its output with the python tool's command "
                f"`python {saved.script} > {saved.file}`"
            ),
        )

    async def _traced(self, result: CheckResult, trace: Callable[[float], Awaitable[str | None]]) -> CheckResult:
        """``result``, when it failed, with what ``trace`` (given a time limit) shows of the failing call."""
        if result.passed:
            return result
        shown = await trace(min(self.timeout, TRACE_TIMEOUT))
        return replace(result, trace=shown) if shown else result

    def _argv(self, command: str) -> list[str] | None:
        """The command on PyManus's interpreter; ``None`` when it names a script that is not there."""
        parsed = parse_command(command)
        if parsed is None or parsed.output_file is not None:
            return None  # a check only reads the workspace
        if parsed.lacks_script(self.sandbox.workspace):
            return None
        return parsed.argv
