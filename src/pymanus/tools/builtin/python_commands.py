"""Terminal commands typed into the python tool: ``python squares.py > squares.txt``.

Small models type the command they would run in a terminal into the ``python`` tool, or
end a correct block of code with ``python main.py``, get a SyntaxError, and give up. Code
that is not valid Python but ends with lines that start with ``python``, ``python3`` or
``pytest`` is therefore run as what it means: the Python before them, then each command on
the interpreter PyManus runs on, in the same sandbox, with an optional final ``> file``
that saves what it prints into the workspace. Anything else shell-like (pipes, ``&&``,
``;``, other redirections) stays Python, and its SyntaxError says how to run scripts.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r"(?:python3?|pytest)(?:[ \t]+[^\n]*)?")
_OPERATOR = frozenset("();<>|&")


@dataclass(frozen=True)
class PythonCommand:
    """A parsed ``python …`` / ``pytest …`` command line."""

    line: str
    argv: list[str]
    """The command on PyManus's interpreter."""
    script: str | None
    """The workspace file it runs (``python x.py``), if any."""
    output_file: str | None
    """Where ``> file`` saves what it prints, if given."""

    def lacks_script(self, workspace: Path) -> bool:
        """Whether it runs a script that ``workspace`` does not hold (yet)."""
        return self.script is not None and not (workspace / self.script).is_file()


def parse_command(line: str) -> PythonCommand | None:
    """``line`` as a command, or ``None`` when it is not one (then it is Python code)."""
    line = line.strip()
    if not _LINE.fullmatch(line):
        return None
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote
        return None
    output_file = None
    if len(words) >= 3 and words[-2] == ">":
        output_file, words = words[-1], words[:-2]
    if any(set(word) <= _OPERATOR for word in [*words, output_file or "x"]):
        return None  # pipes, `&&`, `;`, other redirections: a shell, which this is not
    program, *arguments = words
    if program == "pytest":
        return PythonCommand(line, [sys.executable, "-m", "pytest", *arguments], None, output_file)
    if not arguments:
        return None  # a bare interpreter does nothing here (and `python` alone is a Python name)
    script = None if arguments[0].startswith("-") else arguments[0]
    return PythonCommand(line, [sys.executable, *arguments], script, output_file)


def split_commands(code: str) -> tuple[str, list[PythonCommand]]:
    """``code`` as Python to run and the terminal commands to run after it.

    Valid Python is left alone (``python = 3`` and ``pytest`` are Python); otherwise the
    command lines at its end are split off when what remains is valid Python.
    """
    if compiles(code):
        return code, []
    lines = code.rstrip().splitlines()
    commands: list[PythonCommand] = []
    while lines and (command := parse_command(lines[-1])) is not None:
        commands.insert(0, command)
        lines.pop()
    body = "\n".join(lines)
    if not commands or not compiles(body):
        return code, []  # its SyntaxError is the model's to see
    return body, commands


def compiles(code: str) -> bool:
    """Whether ``code`` is valid Python."""
    try:
        compile(code, "<cell>", "exec")
    except (SyntaxError, ValueError):  # ValueError: a NUL byte
        return False
    return True
