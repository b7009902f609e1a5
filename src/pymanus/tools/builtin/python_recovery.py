"""What follows the output of a failed block of model-written code: how it failed and what to do.

Only what the sandbox knows better than a traceback says: a time or resource limit that
killed the process, a module that cannot be installed here, a syntax error that lies in
an imported workspace file rather than in the code sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from pymanus.sandbox import Sandbox
from pymanus.tools.builtin.python_session import BlockOutcome

HELPERS = ("read_file", "write_file", "edit_file")
"""Functions predefined in the interpreter (see the python worker)."""


def recovery_note(outcome: BlockOutcome, sandbox: Sandbox, *, session: bool, libraries: Sequence[str]) -> str:
    """The note that follows a block's output ("" when the block succeeded).

    ``session``: the block ran in a per-run interpreter (a crash loses its variables);
    ``libraries``: the data libraries the sandbox's interpreter has.
    """
    lost = " The session's variables are lost." if session else ""
    limits = sandbox.limits
    if outcome.timed_out:
        return (
            f"Stopped: the code ran longer than {sandbox.timeout:g} s and was killed.{lost} "
            "Make it faster (smaller inputs, fewer iterations) or split the work over several calls."
        )
    if outcome.ended:
        text = f"The Python process ended before the code finished ({outcome.ended}).{lost}"
        if outcome.ended.startswith("killed"):
            text += (
                f" Limits: {limits.memory_mb} MB memory, {limits.cpu_seconds} s CPU, "
                f"{limits.max_processes} processes; use less memory or time."
            )
        return text
    status = outcome.status
    error = status.get("error")
    if error == "ModuleNotFoundError" and status.get("module"):
        module = str(status["module"]).split(".")[0]
        if module in HELPERS:
            return f"{module} is not a module: it is a function already defined here. Call it without importing."
        if (sandbox.workspace / module).exists() or (sandbox.workspace / f"{module}.py").exists():
            return f"The workspace's {module} has no module {status['module']} yet: write it before importing it."
        if status.get("raised_in"):  # imported by a workspace file: that file's import is what to fix
            path, line = status["raised_in"]
            return f"{path}, line {line}, imports {module}, which is neither installed nor in the workspace."
        available = ", ".join(libraries) or "none"
        return (
            f"The module '{module}' is not installed in the sandbox, and packages cannot be installed here. "
            f"Available data libraries: {available}. Otherwise use the standard library."
        )
    if error == "MemoryError":
        return (
            f"The code ran out of memory (limit {limits.memory_mb} MB per process). "
            "Process the data in smaller chunks, or read only the columns you need."
        )
    broken = str(status.get("broken_file", ""))
    if error in ("SyntaxError", "IndentationError") and broken and not broken.startswith(".."):
        return (
            f"The {error} (see above) is in {broken}, a file your code imports, not in your code. "
            f"Fix {broken} first, then run this again."
        )
    if error:
        return f"The code raised {error} (traceback above). Fix the code and run it again."
    exit_code = status.get("exit")
    if exit_code not in (None, 0):
        return f"The code exited with status {exit_code}."
    return ""
