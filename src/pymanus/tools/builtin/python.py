"""The ``python`` tool: model-written code, run in the sandbox, never in this process.

Code runs with the interpreter running PyManus (so it sees the same installed
libraries) inside :class:`~pymanus.sandbox.Sandbox`, in the workspace, with matplotlib
on its non-interactive ``Agg`` backend. Standard output and error are captured and
cut to the sandbox's output limit; a traceback, an exit code, a timeout or a resource
limit each become an observation that says how to recover.

Two flavours:

* :func:`python_tool` -- every call is a fresh process (nothing is kept between calls);
* :class:`PythonRunner` with ``session=True`` -- variables persist between calls like a
  notebook kernel: one long-lived sandboxed worker per run (keyed by ``run_id``). A
  timeout or crash kills the worker; the next call starts a fresh one and says that
  earlier variables are gone. Call :meth:`PythonRunner.aclose` (or
  :meth:`PythonRunner.close_session` for one run) when runs end.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import re
import secrets
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated

from pydantic import Field

from pymanus.errors import PathEscapeError
from pymanus.models.base import PYTHON_SOURCE
from pymanus.sandbox import PathJail, Sandbox
from pymanus.sandbox.streams import fit
from pymanus.tools.builtin.python_commands import PythonCommand, split_commands
from pymanus.tools.builtin.python_recovery import recovery_note
from pymanus.tools.builtin.python_session import BlockOutcome, WorkerSession, frame, parse_status
from pymanus.tools.builtin.workspace_scan import Snapshot, describe_changes, scan
from pymanus.tools.tool import DEFAULT_MAX_RESULT_CHARS, Tool, ToolContext, ToolResult

PythonCode = Annotated[str, Field(json_schema_extra={"contentMediaType": PYTHON_SOURCE})]

WORKER_SOURCE = (Path(__file__).parent / "python_worker.py").read_text(encoding="utf-8")
CODE_RETRIES = 6
"""Failed calls in a row a run tolerates: fixing code by trial and error is normal work."""
DATA_LIBRARIES = ("numpy", "pandas", "matplotlib", "scipy", "sklearn", "PIL", "openpyxl")

_STDERR = "[stderr]"
"""Heads what the code wrote to stderr in a result; what it printed comes before."""


def available_libraries() -> list[str]:
    """The data libraries importable by the sandbox's interpreter (the current one)."""
    return [name for name in DATA_LIBRARIES if importlib.util.find_spec(name) is not None]


WRITTEN_SHOWN_CHARS = 1_500
"""Characters of the files a block wrote that its observation shows (a few rows: enough to notice a wrong one)."""


class PythonRunner:
    """Owns the ``python`` tool and, in session mode, the live worker of each run.

    Args:
        sandbox: where code runs.
        session: keep variables between calls (one worker per ``run_id``).
    """

    def __init__(self, sandbox: Sandbox, *, session: bool = True) -> None:
        self.sandbox = sandbox
        self.session = session
        self.libraries = available_libraries()
        self._sessions: dict[str, WorkerSession] = {}
        self._restarted: set[str] = set()
        self._cleanups: set[asyncio.Future[None]] = set()
        self.tool_budget = DEFAULT_MAX_RESULT_CHARS
        self._stream_limit = (self.tool_budget - 2000) // 2  # both streams and the notes fit in one result
        self.tool: Tool = self._build_tool()

    async def close_session(self, run_id: str) -> None:
        """Stop the worker of one run (its variables are lost)."""
        self._restarted.discard(run_id)
        session = self._sessions.pop(run_id, None)
        if session is not None:
            await session.aclose()

    async def aclose(self) -> None:
        """Stop every worker."""
        for run_id in list(self._sessions):
            await self.close_session(run_id)

    # -- the tool ----------------------------------------------------------------------
    def _build_tool(self) -> Tool:
        function = self._session_function() if self.session else self._oneshot_function()
        return Tool(
            function,
            name="python",
            description=self._description(),
            parallel_safe=not self.session,
            timeout=self.sandbox.timeout + 15,
            max_retries=CODE_RETRIES,
        )

    def _session_function(self) -> Callable[..., Awaitable[ToolResult]]:
        async def python(code: PythonCode, ctx: ToolContext, reset: bool = False) -> ToolResult:
            """Run Python code.

            Args:
                code: the Python source to run.
                reset: start from a fresh interpreter, forgetting all variables.
            """
            return await self._answer(code, ctx, lambda source: self._run_in_session(source, ctx.run_id, reset=reset))

        return python

    def _oneshot_function(self) -> Callable[..., Awaitable[ToolResult]]:
        async def python(code: PythonCode, ctx: ToolContext) -> ToolResult:
            """Run Python code.

            Args:
                code: the Python source to run.
            """
            return await self._answer(code, ctx, self._run_fresh)

        return python

    async def _answer(
        self, code: str, ctx: ToolContext, run_code: Callable[[str], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Run ``code``, then the terminal commands it ends with, and say which files they changed."""
        body, commands = split_commands(code)
        before = await self._scan()
        results = [await run_code(body)] if body.strip() or not commands else []
        for command in commands:
            if results and results[-1].is_error:
                break
            results.append(await self._run_command(command))
        after = await self._scan()
        text = "\n\n".join(r.text for r in results)
        written = await asyncio.to_thread(
            describe_changes,
            self.sandbox.workspace,
            before,
            after,
            show_budget=min(WRITTEN_SHOWN_CHARS, self.tool_budget // 4),
            shown_already=text,
        )
        metadata = next((r.metadata for r in reversed(results) if r.metadata), {})
        unsaved = "" if written or any(r.is_error for r in results) else self._unsaved_note(body)
        return ToolResult(
            content="\n\n".join(filter(None, [text, written, unsaved])),
            is_error=any(r.is_error for r in results),
            metadata=metadata,
        )

    def _unsaved_note(self, code: str) -> str:
        """Says that the functions and classes ``code`` only defined live on in no file.

        Running a definition is easily taken for writing it: the code a task asks for is then
        run, found to raise nothing, and never saved.
        """
        names = only_definitions(code)
        if not names:
            return ""
        where = "this run's Python session" if self.session else "that interpreter, which has ended"
        listed = ", ".join(f"`{name}`" for name in names[:5])
        return (
            f"Note: no file changed. {listed} existed only in {where}; to keep code, write it to a file (write_file)."
        )

    def _description(self) -> str:
        libs = self.libraries
        isolated = self.sandbox.confined
        where = "an isolated sandbox" if isolated else "a separate process (not isolated: touch only the workspace)"
        missing = [name for name in ("numpy", "pandas", "matplotlib") if name not in libs]
        lines = [
            f"Run Python 3 code in {where} and see what it prints (stdout and stderr). "
            "The code itself is not saved: put code the task asks for in a file with write_file.",
            "The working directory is the workspace: read and write files there with relative paths; "
            "files elsewhere are not kept. The value of a final bare expression is printed. "
            "Already imported: json, csv, math, os, re, statistics, collections, datetime, pathlib. "
            "Helpers read_file(path) -> str, write_file(path, text) and "
            "edit_file(path, old_text, new_text, replace_all=False) are predefined.",
            f"Installed data libraries: {', '.join(libs) or 'none'}."
            + (f" Not installed: {', '.join(missing)}; do not try to install packages." if missing else ""),
        ]
        if "pandas" in libs:  # the csv module leaves numbers as strings, pandas parses them
            markdown = ", df.to_markdown(path) for a Markdown table" if importlib.util.find_spec("tabulate") else ""
            lines.append(
                "For CSV or JSON data use pandas: pd.read_csv / pd.read_json parse numbers; write results with "
                f"df.to_csv(path, index=False), df.to_json(path, orient='records', indent=2){markdown}."
            )
        if "matplotlib" in libs:
            lines.append("matplotlib draws off-screen: save figures with plt.savefig('chart.png').")
        if self.session:
            lines.append("Variables, imports and functions persist between calls, like a notebook.")
        else:
            lines.append("Each call starts a fresh interpreter: nothing persists between calls except files.")
        lines.append(f"Each call may run at most {self.sandbox.timeout:g} s.")
        return "\n".join(lines)

    # -- running -----------------------------------------------------------------------
    def _argv(self, token: str) -> list[str]:
        return [sys.executable, "-c", WORKER_SOURCE, token, str(self.sandbox.limits.cpu_seconds)]

    def _env(self) -> dict[str, str]:
        return {"MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/matplotlib"}

    async def _run_fresh(self, code: str) -> ToolResult:
        return self._observation(await self._run_once(code), note="")

    async def _run_once(self, code: str) -> BlockOutcome:
        token = secrets.token_hex(8)
        result = await self.sandbox.run(
            self._argv(token), stdin=frame(code), env=self._env(), output_limit=self._stream_limit
        )
        stdout, _ = _strip_marker(result.stdout, token)
        stderr, payload = _strip_marker(result.stderr, token)
        status = parse_status(payload)
        ended = None
        if payload is None and not result.timed_out:
            ended = result.exit_description(self.sandbox.limits)
        return BlockOutcome(stdout, stderr, status, timed_out=result.timed_out, ended=ended)

    async def _run_in_session(self, code: str, run_id: str, *, reset: bool) -> ToolResult:
        note = ""
        if reset:
            await self.close_session(run_id)
            note = "Started a fresh Python session: all earlier variables are gone."
        elif run_id in self._restarted:
            note = "This is a new Python session: variables from before the restart are gone."
        self._restarted.discard(run_id)
        session = await self._session(run_id)
        try:
            outcome = await session.run(code, self.sandbox.timeout)
        except asyncio.CancelledError:
            # The block may still be running: this worker's output can no longer be trusted.
            self._discard(run_id, session)
            raise
        if outcome.timed_out or outcome.ended:
            self._sessions.pop(run_id, None)
            await session.aclose()
            self._restarted.add(run_id)
        return self._observation(outcome, note=note)

    async def _run_command(self, command: PythonCommand) -> ToolResult:
        """Run a terminal command typed into the tool (see :mod:`python_commands`)."""
        workspace = self.sandbox.workspace
        if command.lacks_script(workspace):
            return ToolResult.error(
                f"`{command.line}` runs {command.script}, which does not exist in the workspace yet: "
                "write it first with write_file."
            )
        jail = PathJail(workspace)
        saving = command.output_file
        try:
            if saving is not None:
                jail.resolve(saving, write=True)
        except PathEscapeError as exc:
            return ToolResult.error(str(exc))
        # What goes to a file may be long (up to the sandbox's stream limit); what is shown is cut.
        limit = None if saving is not None else self._stream_limit
        result = await self.sandbox.run(command.argv, env=self._env(), output_limit=limit)
        parts = [f"Ran `{command.line}` as a command."]
        if saving is not None:
            handle, _, _ = jail.open_write(saving)
            with handle:
                handle.write(result.stdout.encode("utf-8"))
            if result.stdout_truncated:
                parts.append(f"Only the first {len(result.stdout):,} characters of its output were saved to {saving}.")
        elif result.stdout.strip():
            parts.append(fit(result.stdout.rstrip("\n"), self.tool_budget // 2))
        if result.stderr.strip():
            parts.append(f"{_STDERR}\n" + fit(result.stderr.rstrip("\n"), self.tool_budget // 3))
        if result.timed_out:
            parts.append(f"Stopped: it ran longer than {self.sandbox.timeout:g} s and was killed.")
        elif not result.ok:
            parts.append(f"It ended with {result.exit_description(self.sandbox.limits)}.")
        elif not result.stdout.strip() and not result.stderr.strip():
            parts.append("(it printed nothing)")
        return ToolResult(content="\n\n".join(parts), is_error=not result.ok)

    async def _scan(self) -> Snapshot | None:
        return await asyncio.to_thread(scan, self.sandbox.workspace)

    async def _session(self, run_id: str) -> WorkerSession:
        """The live worker of ``run_id``, started if needed."""
        session = self._sessions.get(run_id)
        if session is not None and session.usable:
            return session
        if session is not None:
            self._discard(run_id, session)
        token = secrets.token_hex(8)
        fresh = await WorkerSession.start(self.sandbox, self._argv(token), token, self._env(), self._stream_limit)
        current = self._sessions.get(run_id)
        if current is not None and current.usable:  # a concurrent call started one meanwhile
            await fresh.aclose()
            return current
        self._sessions[run_id] = fresh
        return fresh

    def _discard(self, run_id: str, session: WorkerSession) -> None:
        """Kill a worker now and release it in the background."""
        if self._sessions.get(run_id) is session:
            del self._sessions[run_id]
            self._restarted.add(run_id)
        session.process.kill_now()
        with contextlib.suppress(RuntimeError):  # no running loop: nothing more to release
            cleanup = asyncio.ensure_future(session.aclose())
            self._cleanups.add(cleanup)
            cleanup.add_done_callback(self._cleanups.discard)

    # -- observations ------------------------------------------------------------------
    def _observation(self, outcome: BlockOutcome, *, note: str) -> ToolResult:
        parts = [note] if note else []
        stdout, stderr = outcome.stdout.rstrip("\n"), outcome.stderr.rstrip("\n")
        room = self.tool_budget - 1000  # left for the note and the footer
        if stderr.strip():
            stderr = fit(stderr, max(room - len(stdout), room // 3))
            stdout = fit(stdout, room - len(stderr))
        else:
            stdout = fit(stdout, room)
        if stdout.strip():
            parts.append(stdout)
        if stderr.strip():
            parts.append(f"{_STDERR}\n" + stderr)
        ok = bool(outcome.status.get("ok")) and not outcome.timed_out and not outcome.ended
        footer = recovery_note(outcome, self.sandbox, session=self.session, libraries=self.libraries)
        if footer:
            parts.append(footer)
        elif ok and not stdout.strip() and not stderr.strip():
            parts.append(_silence(outcome.stdout))
        metadata = {"status": outcome.status, "stderr": outcome.stderr, "timed_out": outcome.timed_out}
        return ToolResult(content="\n\n".join(parts), is_error=not ok, metadata=metadata)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SETUP = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)


def only_definitions(code: str) -> list[str]:
    """The functions and classes ``code`` defines, when defining (and importing) is all it does.

    Empty when the code does anything else at its top level (a call, a loop), or does not parse.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not (isinstance(node, _DEFINITIONS + _SETUP) or docstring):
            return []
    return [node.name for node in tree.body if isinstance(node, _DEFINITIONS)]


def _silence(stdout: str) -> str:
    """What a block that printed no visible text printed: an empty result must not read as no result."""
    if not stdout:
        return "(the code ran without error and printed nothing)"
    return (
        f"(the code ran without error and printed only blank output: {fit(stdout, 200)!r}; "
        "an empty string prints as an empty line)"
    )


def python_tool(sandbox: Sandbox) -> Tool:
    """A ``python`` tool whose every call runs in a fresh sandboxed interpreter.

    It holds no process between calls, so it needs no closing. For variables that
    persist between calls use ``PythonRunner(sandbox, session=True)``.
    """
    return PythonRunner(sandbox, session=False).tool


def _strip_marker(text: str, token: str) -> tuple[str, str | None]:
    """Remove the worker's end marker from captured text; return the text and its payload."""
    match = re.search(re.escape(f"\x1e{token}:") + r"([^\x1e]*)\x1e", text)
    if match is None:
        return text, None
    return text[: match.start()] + text[match.end() :], match.group(1)
