"""Examples the task gives, as checks: 'slugify("Hello, World!") returns "hello-world"'.

A task that asks for a function often states what a call returns. That is a test the
user wrote: a small model runs the call, reads ``''`` and declares success. An example
counts when the call's arguments and the value are Python literals and the task names
the module (a ``.py`` file in the workspace) that holds the function; it then runs, like
the named commands, in the sandbox (see :mod:`pymanus.agent.task_checks`).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

_LITERAL = r"\"[^\"\n]*\"|'[^'\n]*'|-?\d+(?:\.\d+)?|True|False|None|\[[^\]\n]*\]|\{[^}\n]*\}|\([^)\n]*\)"
_EXAMPLE = re.compile(
    r"`?(?P<call>[A-Za-z_]\w*\((?:[^()\n]|\([^()\n]*\))*\))`?\s*"
    r"(?:returns|should return|must return|gives|==|->|→)\s*"
    rf"`?(?P<expected>{_LITERAL})`?"
)
_MODULE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[A-Za-z_]\w*\.py)\b")

# Runs in the sandbox: the call in the named modules' namespace, compared with the value. Two
# strings that differ also get where they differ: the 1.5B read 'hello-world-' against
# 'hello-world' as a match and called its slugify done. When a step or two of trimming or
# collapsing a separator turns the result into the value, the note gives that expression: told
# only that '--' should be '-', the 1.5B edited its slugify for 15 steps and never got there.
_SETUP = """\
import difflib, importlib, re, sys
CALL = {call!r}
namespace = {{}}
for module in {modules!r}:
    namespace.update(vars(importlib.import_module(module)))
try:
    result = eval(CALL, namespace)
except Exception as error:
    print(CALL, "raised", type(error).__name__ + ":", error)
    sys.exit(1)
expected = {expected}
"""
_COMPARE = """\
same = result == expected
if same or not (isinstance(result, str) and isinstance(expected, str) and result):
    print(CALL, "returned", repr(result) + ("" if same else ", expected " + repr(expected)))
    sys.exit(0 if same else 1)
differences = []
matcher = difflib.SequenceMatcher(None, result, expected, autojunk=False)
for tag, i1, i2, j1, j2 in matcher.get_opcodes():
    if tag == "equal":
        continue
    where = "at the start" if i1 == 0 else "at the end" if i2 == len(result) else "after " + repr(result[:i1][-12:])
    if tag == "delete":
        differences.append(repr(result[i1:i2]) + " is extra " + where)
    elif tag == "insert":
        differences.append(repr(expected[j1:j2]) + " is missing " + where)
    else:
        differences.append(repr(result[i1:i2]) + " should be " + repr(expected[j1:j2]) + " " + where)
shown = "; ".join(differences[:3]) + ("; ..." if len(differences) > 3 else "")
steps = [("{}.lower()", str.lower), ("{}.strip()", str.strip)]
for sep in sorted({char for char in result if not char.isalnum() and not char.isspace() and char != "\\\\"}):
    run = (re.escape(sep) if sep in ".^$*+?{}[]|()" else sep) + "+"
    collapse = "re.sub(" + repr(run) + ", " + repr(sep) + ", {})"
    steps.append((collapse, lambda text, run=run, sep=sep: re.sub(run, sep, text)))
    steps.append(("{}.strip(" + repr(sep) + ")", lambda text, sep=sep: text.strip(sep)))
fix = next((f.format("value") for f, step in steps if step(result) == expected), None) or next(
    (g.format(f.format("value")) for f, first in steps for g, then in steps if then(first(result)) == expected), None
)
if fix:
    shown += "; " + fix + " gives the expected value, where value is what it returns now"
print(CALL, "returned", repr(result) + ", expected " + repr(expected) + " (" + shown + ")")
sys.exit(1)
"""


@dataclass(frozen=True)
class Example:
    """A call the task gives with the value it must return, and the modules that define it."""

    call: str
    expected: str
    modules: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.call} == {self.expected}"

    def argv(self) -> list[str]:
        """The check on PyManus's interpreter (``-c`` puts the working directory, the workspace, on the path)."""
        program = _SETUP.format(modules=self.modules, call=self.call, expected=self.expected) + _COMPARE
        return [sys.executable, "-c", program]


def task_examples(task: str, workspace: Path) -> list[Example]:
    """The examples in ``task`` that can run: literal arguments and value, a module the task names."""
    modules = tuple(
        dict.fromkeys(
            name.removesuffix(".py").replace("/", ".") for name in _MODULE.findall(task) if (workspace / name).is_file()
        )
    )
    if not modules:
        return []
    found = []
    for match in _EXAMPLE.finditer(task):
        call, expected = match.group("call"), match.group("expected")
        if _literal_call(call) and _is_literal(expected):
            found.append(Example(call, expected, modules))
    return list(dict.fromkeys(found))


def _literal_call(call: str) -> bool:
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return False
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and all(_is_literal(ast.unparse(arg)) for arg in [*node.args, *(k.value for k in node.keywords)])
    )


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True
