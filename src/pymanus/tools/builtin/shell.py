"""The ``shell`` tool: ``bash -c`` inside the sandbox. Off by default.

A shell is the most powerful tool an agent can hold, so PyManus offers it only when the
configuration enables it: the application calls :func:`shell_tool` only then. It runs
in the same :class:`~pymanus.sandbox.Sandbox` as the ``python`` tool (same workspace,
isolation and limits).

``allow_programs`` restricts which programs a command may run. The command is parsed
with :mod:`shlex`; every command position (at the start, and after ``|``, ``;``,
``&&``, ``||``, ``&``, newlines and parentheses) must hold a bare program name from
the allowlist. Whatever the check cannot follow safely is refused rather than guessed:
command or process substitution (``$(...)``, backticks, ``<(...)``), here-documents,
variable assignments (``PATH=...`` would redirect the lookup), expansions or globs in a
program name, paths as program names, and shell keywords. Note that some programs run
others (``xargs``, ``env``, ``find -exec``, ``bash``): allowing them allows everything.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from pymanus.errors import ToolError
from pymanus.sandbox import Sandbox
from pymanus.sandbox.streams import fit
from pymanus.tools.tool import DEFAULT_MAX_RESULT_CHARS, Tool, ToolResult

_FORBIDDEN = {
    "$(": "command substitution $(...)",
    "`": "command substitution with backticks",
    "<(": "process substitution <(...)",
    ">(": "process substitution >(...)",
    "<<": "here-documents (<<)",
}
_SEPARATOR_CHARS = set(";&|()\n")
_PROGRAM = re.compile(r"[A-Za-z0-9_.+-]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def check_allowed(command: str, allowed: Iterable[str]) -> None:
    """Raise :class:`ToolError` unless every program ``command`` runs is in ``allowed``."""
    allow = set(allowed)
    names = ", ".join(sorted(allow)) or "none"
    for token, what in _FORBIDDEN.items():
        if token in command:
            raise ToolError(f"Refused: {what} is not allowed when programs are restricted. Allowed programs: {names}.")
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise ToolError(f"Refused: the command cannot be parsed safely ({exc}). Allowed programs: {names}.") from None
    expect_program = True
    after_redirect = False
    for token in tokens:
        if token and set(token) <= set(";&|()<>\n"):
            if set(token) & _SEPARATOR_CHARS and not _is_redirect(token):
                expect_program = True
            else:
                after_redirect = True
            continue
        if after_redirect:  # a file name after > or <
            after_redirect = False
            continue
        if not expect_program:
            continue
        expect_program = False
        if _ASSIGNMENT.match(token):
            raise ToolError(
                f"Refused: variable assignments ({token.split('=')[0]}=...) are not allowed when programs are "
                f"restricted. Allowed programs: {names}."
            )
        if not _PROGRAM.fullmatch(token) or token not in allow:
            raise ToolError(f"Refused: {token!r} is not an allowed program. Allowed programs: {names}.")


def _is_redirect(token: str) -> bool:
    """``>``, ``>>``, ``<``, ``>&``, ``&>``, ``&>>``, ``<&``, ``<>``: redirections, not separators."""
    return ("<" in token or ">" in token) and set(token) <= set("<>&")


def shell_tool(sandbox: Sandbox, *, allow_programs: Iterable[str] | None = None) -> Tool:
    """A ``shell`` tool running ``bash -c COMMAND`` in ``sandbox``.

    Only build it when the configuration enables the shell (it is off by default).

    Args:
        sandbox: where commands run (the workspace is the working directory).
        allow_programs: if given, the only programs a command may run (see the module
            docstring for what is refused); ``None`` allows any program.
    """
    allowed = None if allow_programs is None else sorted(set(allow_programs))
    limits = sandbox.limits

    async def shell(command: str) -> ToolResult:
        """Run a bash command.

        Args:
            command: the command line, run with `bash -c` in the workspace.
        """
        if not command.strip():
            raise ToolError("The command is empty. Give a bash command line, for example 'ls -la'.")
        if allowed is not None:
            check_allowed(command, allowed)
        result = await sandbox.run(["bash", "-c", command], output_limit=(DEFAULT_MAX_RESULT_CHARS - 2000) // 2)
        parts = []
        stdout, stderr = result.stdout.rstrip("\n"), result.stderr.rstrip("\n")
        room = DEFAULT_MAX_RESULT_CHARS - 1000  # left for the status line
        stderr = fit(stderr, max(room - len(stdout), room // 3))
        stdout = fit(stdout, room - len(stderr))
        if stdout:
            parts.append(stdout)
        if stderr.strip():
            parts.append("[stderr]\n" + stderr)
        if result.timed_out:
            parts.append(
                f"Stopped: the command ran longer than {sandbox.timeout:g} s and was killed, with everything it "
                "started. Run something shorter, or avoid commands that wait for input or run forever."
            )
            return ToolResult(content="\n\n".join(parts), is_error=True)
        if result.exit_code == 0:
            parts.append("[exit code 0]")
        elif result.exit_code is not None and result.exit_code < 0:
            parts.append(f"[{result.exit_description(limits)}]")
        else:
            parts.append(f"[exit code {result.exit_code}]")
        return ToolResult(content="\n\n".join(parts), is_error=result.exit_code != 0)

    description = [
        "Run a bash command line in the sandbox; the working directory is the workspace.",
        "Returns stdout, stderr and the exit code. Nothing runs in the background after the call ends.",
        f"Each command may run at most {sandbox.timeout:g} s; do not start servers or interactive programs.",
    ]
    if allowed is not None:
        description.append(
            f"Only these programs may be used: {', '.join(allowed)}. "
            "No $(...), backticks, here-documents or variable assignments."
        )
    if sandbox.confined and not sandbox.network:
        description.append("There is no network access.")
    return Tool(
        shell,
        name="shell",
        description="\n".join(description),
        parallel_safe=False,
        timeout=sandbox.timeout + 15,
        max_retries=6,  # failing commands are part of working in a shell, not a stuck run
    )
