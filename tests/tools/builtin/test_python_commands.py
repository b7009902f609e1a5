"""Parsing the terminal commands the python tool runs as commands."""

from __future__ import annotations

import sys

import pytest

from pymanus.tools.builtin.python_commands import parse_command, split_commands


@pytest.mark.parametrize(
    ("line", "argv", "script", "output_file"),
    [
        ("python squares.py", ["squares.py"], "squares.py", None),
        ("python3 squares.py > squares.txt", ["squares.py"], "squares.py", "squares.txt"),
        ("python a.py>out.txt", ["a.py"], "a.py", "out.txt"),
        ("python -m unittest test_stats", ["-m", "unittest", "test_stats"], None, None),
        ("python -c 'import time; print(1)'", ["-c", "import time; print(1)"], None, None),
        ("pytest -q tests", ["-m", "pytest", "-q", "tests"], None, None),
    ],
)
def test_commands(line: str, argv: list[str], script: str | None, output_file: str | None) -> None:
    command = parse_command(line)
    assert command is not None
    assert (command.argv, command.script, command.output_file) == ([sys.executable, *argv], script, output_file)


@pytest.mark.parametrize(
    "line",
    [
        "python",  # a bare interpreter
        "print(1)",
        "pythonic = 1",
        "python a.py | head",
        "python a.py 2>&1",
        "python a.py >> log.txt",
        "python -m unittest t && echo ok",
        "python a.py; rm -rf /",
        "python 'unclosed",
        "ls -la",
    ],
)
def test_not_commands(line: str) -> None:
    assert parse_command(line) is None


def test_commands_ending_a_block_are_split_off() -> None:
    code = "open('a.txt', 'w').write('x')\nprint('done')\npython main.py\npython -m unittest test_a"
    body, commands = split_commands(code)
    assert body == "open('a.txt', 'w').write('x')\nprint('done')"
    assert [command.line for command in commands] == ["python main.py", "python -m unittest test_a"]
    # Valid Python, a broken body, or a command in the middle: the code is left as it is.
    for code in ("python = 3\npython", "print(1\npython main.py", "python main.py\nprint(1)", "\x00"):
        assert split_commands(code) == (code, [])
    assert [c.line for c in split_commands("python main.py")[1]] == ["python main.py"]
