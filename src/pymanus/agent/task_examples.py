"""Examples the task gives, as checks: 'slugify("Hello, World!") returns "hello-world"'.

A task that asks for a function often states what a call returns, or what it prints
('a main() function that prints "Weather CLI ready"'). That is a test the user wrote: a
small model runs the call, reads ``''`` and declares success, or gives ``main`` a parameter
its own test passes. An example counts when the call's arguments and the value are Python
literals (a string, for what a call prints) and the task names the module (a ``.py`` file)
that holds the function, found where :func:`~pymanus.agent.task_scope.locate` finds it ("a
package folder weather with cli.py" is ``weather/cli.py``). It then runs, like the named
commands, in the sandbox (see :mod:`pymanus.agent.task_checks`). A call that prints passes
when one line of its output, or all of it, is the string, without the spaces around it.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pymanus.agent.task_scope import locate, named_files
from pymanus.tools.builtin.workspace_scan import scan

_STRING = r"\"[^\"\n]*\"|'[^'\n]*'"
_LITERAL = _STRING + r"|-?\d+(?:\.\d+)?|True|False|None|\[[^\]\n]*\]|\{[^}\n]*\}|\([^)\n]*\)"
_CALL = r"`?(?P<call>[A-Za-z_]\w*\((?:[^()\n]|\([^()\n]*\))*\))`?"
_EXAMPLE = re.compile(rf"{_CALL}\s*(?:returns|should return|must return|gives|==|->|→)\s*`?(?P<expected>{_LITERAL})`?")
_PRINTS = re.compile(
    rf"{_CALL}(?:\s+(?:function|method))?(?:\s+(?:that|which))?\s+(?:prints|should print|must print|outputs)\s+"
    rf"`?(?P<expected>{_STRING})`?"
)

# Runs in the sandbox: the call in the named modules' namespace, compared with the value (what
# it returned, or the line it printed that is the value, else all it printed). Two
# strings that differ also get where they differ: the 1.5B read 'hello-world-' against
# 'hello-world' as a match and called its slugify done. When a step or two of trimming or
# collapsing a separator turns the result into the value, the note gives that expression: told
# only that '--' should be '-', the 1.5B edited its slugify for 15 steps and never got there.
_SETUP = """\
import contextlib, difflib, importlib, io, re, sys
CALL, PRINTS = {call!r}, {prints!r}
VERB = "printed" if PRINTS else "returned"
namespace = {{}}
for module in {modules!r}:
    namespace.update(vars(importlib.import_module(module)))
printed = io.StringIO()
try:
    with contextlib.redirect_stdout(printed):
        result = eval(CALL, namespace)
except SystemExit as error:
    if error.code not in (None, 0):
        print(CALL, "exited with", error.code, "after printing", repr(printed.getvalue()))
        sys.exit(1)
    result = None
except Exception as error:
    print(CALL, "raised", type(error).__name__ + ":", error)
    sys.exit(1)
expected = {expected}
if PRINTS:
    text = printed.getvalue().strip()
    result = expected if expected.strip() in [text, *(line.strip() for line in text.splitlines())] else text
"""
_COMPARE = """\
same = result == expected
if same or not (isinstance(result, str) and isinstance(expected, str) and result):
    print(CALL, VERB, repr(result) + ("" if same else ", expected " + repr(expected)))
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
if fix and not PRINTS:  # a printed text is fixed in the literal it prints
    shown += "; " + fix + " gives the expected value, where value is what it returns now"
print(CALL, VERB, repr(result) + ", expected " + repr(expected) + " (" + shown + ")")
sys.exit(1)
"""


@dataclass(frozen=True)
class Example:
    """A call the task gives with the value it must return (or print), and the modules that define it."""

    call: str
    expected: str
    modules: tuple[str, ...]
    prints: bool = False
    """Whether ``expected`` is what the call prints, not what it returns."""

    @property
    def returns(self) -> str:
        """The literal the call must return ("" for an example of what it prints)."""
        return "" if self.prints else self.expected

    @property
    def label(self) -> str:
        return f"{self.call} {'prints' if self.prints else '=='} {self.expected}"

    def argv(self) -> list[str]:
        """The check on PyManus's interpreter (``-c`` puts the working directory, the workspace, on the path)."""
        setup = _SETUP.format(modules=self.modules, call=self.call, expected=self.expected, prints=self.prints)
        return [sys.executable, "-c", setup + _COMPARE]


def task_examples(task: str, workspace: Path) -> list[Example]:
    """The examples in ``task`` that can run: literal arguments and value, a module the task names."""
    found = [
        (match.group("call"), match.group("expected"), prints)
        for prints, pattern in ((False, _EXAMPLE), (True, _PRINTS))
        for match in pattern.finditer(task)
        if _literal_call(match.group("call")) and _is_literal(match.group("expected"))
    ]
    modules = _modules(task, workspace) if found else ()
    if not modules:
        return []
    return list(dict.fromkeys(Example(call, expected, modules, prints) for call, expected, prints in found))


def _modules(task: str, workspace: Path) -> tuple[str, ...]:
    """The importable modules the ``.py`` files ``task`` names are, where they are in ``workspace``."""
    snapshot = scan(workspace)
    found = []
    for name in named_files(task):
        if not name.endswith(".py") or PurePosixPath(name).name.startswith("__"):  # __init__.py: its package
            continue
        if (path := locate(workspace, name, snapshot)) is not None and path.is_file():
            parts = path.relative_to(workspace).with_suffix("").parts
            found += [".".join(parts)] if all(part.isidentifier() for part in parts) else []
    return tuple(dict.fromkeys(found))


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
