"""A file the task says holds a script's output: "run squares.py and save what it prints to squares.txt".

The 1.5B typed squares.txt by hand, then wrote a squares.py that printed ``1.0``, ``4.0``, …,
ran it, and called the task done: the file and the script disagreed and nothing said so.
When the task names the script (a ``.py`` file) and the file that keeps its output, the
script runs as a check (:mod:`pymanus.agent.task_checks`) and its standard output must be
the file's text, line for line, up to trailing spaces and empty lines at the end.

A script whose output changes from run to run (a time, a random number) cannot pass this
check; tasks that ask to keep such output seldom ask for the output "saved" in these words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import zip_longest

_SCRIPT = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[A-Za-z_]\w*\.py)\b")
_SAVED = re.compile(
    r"\b(?:save|saves|saving|write|writes|writing|store|stores|storing|put|copy)\s+"
    r"(?:what\s+(?:it|the\s+script|(?P<named>(?:[\w-]+/)*\w+\.py))\s+(?:prints|outputs|shows)"
    r"|(?:its|the(?:\s+script's)?)\s+output)\s+"
    r"(?:to|in|into|as)\s+`?(?P<file>(?:[\w.-]+/)*[\w-]+\.\w+)`?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SavedOutput:
    """The script the task has run and the file it says keeps what the script prints."""

    script: str
    file: str


def saved_output(task: str) -> SavedOutput | None:
    """The script and file of the task's "save what it prints to FILE", or ``None``.

    The script is the one the sentence names ("what report.py prints"), else the last
    ``.py`` file the task names before the sentence ("write squares.py ..., run it, and ...").
    """
    match = _SAVED.search(task)
    if match is None or match["file"].endswith(".py"):
        return None
    script = match["named"]
    if script is None:
        named_before = _SCRIPT.findall(task[: match.start()])
        script = named_before[-1] if named_before else None
    return SavedOutput(script, match["file"]) if script else None


def output_lines(text: str) -> list[str]:
    """``text`` as the lines a comparison looks at: trailing spaces and trailing empty lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def first_difference(printed: list[str], kept: list[str], file: str) -> str:
    """Where the lines a script printed and the different lines ``file`` keeps first differ, in words."""
    number, (shown, held) = next(
        (number, pair) for number, pair in enumerate(zip_longest(printed, kept), 1) if pair[0] != pair[1]
    )
    prints = f"it prints {shown!r}" if shown is not None else "it prints no more lines"
    has = f"{file} has {held!r}" if held is not None else f"{file} has no more lines"
    return f"line {number}: {prints}, {has}"
