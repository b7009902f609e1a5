"""Aid ``test_check``: a final answer is sent back while the workspace's tests fail.

When the workspace has test files (``test_*.py``, ``*_test.py``) and the run changed a Python
file, the tests run in the sandbox before an answer is accepted (pytest when the sandbox's
interpreter has it, else unittest discovery); their failing output goes back to the model.
A model that wrote or fixed code and read one passing example as success is shown what its
own project says.
"""

from __future__ import annotations

import importlib.util
import re
import sys

from pymanus.agent.extensions import Extension
from pymanus.local_aids.start import changed_since_start, record_start
from pymanus.sandbox.process import Sandbox
from pymanus.sandbox.streams import fit
from pymanus.tools.tool import ToolContext

SHOWN_CHARS = 1_500
"""Characters of the failing tests' output quoted in the note."""
_TEST_FILE = re.compile(r"(?:test_\w*|\w+_test)\.py")


class TestsPass(Extension):
    """Runs the workspace's tests before an answer that follows a change of Python code is accepted."""

    name = "test_check"

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def briefing(self, task: str, context: ToolContext) -> None:
        record_start(context)

    async def check_answer(self, task: str, answer: str, context: ToolContext) -> str | None:
        now, changed = changed_since_start(context)
        if now is None or not any(_TEST_FILE.fullmatch(path.rsplit("/", 1)[-1]) for path in now):
            return None
        if not any(path.endswith(".py") for path in changed) or self.sandbox.refusal() is not None:
            return None  # nothing to test, or no sandbox to run the tests in
        result = await self.sandbox.run(test_command(), env={"PYTHONDONTWRITEBYTECODE": "1"})
        if result.ok:
            return None
        output = fit((result.stdout + "\n" + result.stderr).strip(), SHOWN_CHARS)
        command = " ".join(test_command()[1:])
        return f"the workspace's tests fail (`{command}`):\n{output}\nFix the code, then call terminate again."


def test_command() -> list[str]:
    """How the sandbox runs the workspace's tests."""
    if importlib.util.find_spec("pytest") is not None:
        return [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header"]
    return [sys.executable, "-m", "unittest", "discover", "-q"]
