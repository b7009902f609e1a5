"""How a failing test's call into the workspace ran, line by line, for the model.

A named check (:mod:`pymanus.agent.task_checks`) that fails shows the model only the test
runner's output: ``AssertionError: 3.5 != 2.5`` at ``self.assertEqual(median([4, 1, 3, 2]), 2.5)``.
The 1.5B cannot get from there to the bug in ``stats.median``; it rereads the code and guesses.
So the first failing test runs again under :func:`sys.settrace`, and the call it made into the
workspace's code (not a test file, not an installed package) is shown as it ran: each line, the
locals it changed, and the value returned or the exception raised, with the values of the
return line's parts (``ordered[middle + 1] = 4``).

When the test compares the call with a literal (``assertEqual(median(x), 2.5)``, ``assert
f(x) == 2.5``, or the value of an example) and the return line reads list items, the line is
tried with those indexes one off, each alone and all together: a version that returns the
expected value is shown (``return (ordered[middle - 1] + ordered[middle]) / 2`` would return
2.5). Told only that ``ordered[middle] = 3, ordered[middle + 1] = 4`` where 2.5 was expected,
the 1.5B edited the line into itself, or rewrote the module without its other function.

The call shown is the last one the test made, from the line its traceback points at, straight
into workspace code (what that code calls is not traced, except its comprehensions, shown with the
values their loop variables took and what they built: ``word = 'Hello,'; word = 'World!', giving []``
says the filter dropped every word): a test that asserts
``median([1, 2, 3])`` and then ``median([4, 1, 3, 2])`` fails on the second. The trace runs in
the same sandbox as the check and only reads: the parts evaluated contain no call. An example
the task gives that fails (:mod:`pymanus.agent.task_examples`) is traced the same way
(:func:`example_trace`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pymanus.sandbox.process import Sandbox
from pymanus.tools.builtin.workspace_scan import is_test_file

TRACE_CHARS = 800
"""The most characters a trace takes; the lines in the middle of a long one are cut."""
TRACE_TIMEOUT = 20.0
"""Wall-clock seconds a traced rerun may take: a check's test that runs longer is not worth the wait."""
_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""As a check's, and without pytest plugins: one (pytest-cov) would replace the tracer."""
_MARK = "<<<pymanus failure trace>>>"
"""Precedes the trace in the program's output: what the test itself prints comes before it."""

_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (test\w*) \(([\w.]+)\)", re.MULTILINE)
_UNITTEST_END = re.compile(r"^(?:={20,}|Ran \d+ tests?\b)", re.MULTILINE)
_UNITTEST_AT = re.compile(r'File "([^"\n]+)", line (\d+)')
_PYTEST = re.compile(r"^FAILED (\S+?\.py)::(\S+)", re.MULTILINE)
_PYTEST_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$", re.MULTILINE)
_PYTEST_AT = re.compile(r"^([^\s:]+\.py):(\d+):", re.MULTILINE)


@dataclass(frozen=True)
class FailingTest:
    """The first failing test in a check's output, and the line of its file the failure points at."""

    id: str
    """A unittest name (``test_stats.StatsTest.test_median_even``) or a pytest node id."""
    runner: Literal["unittest", "pytest"]
    file: str = ""
    """The test file as the traceback names it; empty when the output has no traceback."""
    line: int = 0
    """The line of the test file the traceback ends at (0: unknown): where the failing call was made."""


def failing_test(output: str) -> FailingTest | None:
    """The first failing test in a unittest or pytest ``output``; ``None`` when there is none."""
    unittest_match = _UNITTEST.search(output)
    pytest_match = _PYTEST.search(output)
    if unittest_match and (not pytest_match or unittest_match.start() < pytest_match.start()):
        method, name = unittest_match.groups()
        if name.startswith("unittest."):
            return None  # the module did not import (``unittest.loader._FailedTest``)
        # Python 3.11 names the method inside the parentheses; 3.10 and older only the class.
        test_id = name if name.endswith(f".{method}") else f"{name}.{method}"
        end = _UNITTEST_END.search(output, unittest_match.end())
        block = output[unittest_match.end() : end.start() if end else len(output)]
        return FailingTest(test_id, "unittest", *_last_test_line(_UNITTEST_AT.findall(block)))
    if pytest_match:
        path, rest = pytest_match.groups()
        block = _pytest_block(output, rest.replace("::", "."))
        return FailingTest(f"{path}::{rest}", "pytest", *_last_test_line(_PYTEST_AT.findall(block)))
    return None


def _pytest_block(output: str, title: str) -> str:
    """The traceback pytest shows under ``____ title ____``; empty when it shows none."""
    headers = list(_PYTEST_HEADER.finditer(output))
    for index, header in enumerate(headers):
        if header.group(1) == title:
            end = headers[index + 1].start() if index + 1 < len(headers) else len(output)
            summary = re.compile(r"^={3,}", re.MULTILINE).search(output, header.end(), end)
            return output[header.end() : summary.start() if summary else end]
    return ""


def _last_test_line(places: list[tuple[str, str]]) -> tuple[str, int]:
    """The last (file, line) of the traceback in a test file: the test's line that made the failing call."""
    in_tests = [(path, int(line)) for path, line in places if is_test_file(path)]
    return in_tests[-1] if in_tests else ("", 0)


async def failure_trace(
    sandbox: Sandbox,
    output: str,
    timeout: float,  # noqa: ASYNC109 - a limit on the rerun, enforced by the sandbox
) -> str | None:
    """How the call of the first failing test in ``output`` ran, rerun in ``sandbox``; ``None`` if unknown.

    ``timeout``: wall-clock seconds for the rerun, which traces and is slower than the check was.
    """
    test = failing_test(output)
    if test is None:
        return None
    argv = [sys.executable, "-c", _PROGRAM, test.id, test.runner, test.file, str(test.line), str(TRACE_CHARS)]
    return await _traced(sandbox, argv, timeout)


async def example_trace(
    sandbox: Sandbox,
    call: str,
    modules: Sequence[str],
    timeout: float,  # noqa: ASYNC109 - a limit on the rerun, enforced by the sandbox
    expected: str = "",
) -> str | None:
    """How ``call``, an example the task gives (``slugify("Hello, World!")``), ran in the workspace
    ``modules`` that define it; ``None`` if it could not be traced.

    ``expected``: the literal the call should return, when the example gives one.
    """
    argv = [sys.executable, "-c", _PROGRAM, call, "example", ",".join(modules), "0", str(TRACE_CHARS), expected]
    return await _traced(sandbox, argv, timeout)


async def _traced(sandbox: Sandbox, argv: list[str], timeout: float) -> str | None:  # noqa: ASYNC109
    outcome = await sandbox.run(argv, env=_ENV, timeout=timeout, output_limit=20_000)
    _, mark, trace = outcome.stdout.rpartition(_MARK)
    return (trace.strip() or None) if mark else None


# Runs in the sandbox, the workspace the working directory: argv is the test id, the runner,
# the test file, the line of it the failure points at and the most characters to print. For
# the runner "example", the test id is the call to trace, the file the modules to import, and
# a seventh argument the literal the call should return ("" when it is not known).
_PROGRAM = r'''
import ast
import contextlib
import io
import linecache
import os
import reprlib
import sys

TEST_ID, RUNNER, TEST_FILE, LINE, CHARS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
EXPECTED = sys.argv[6] if len(sys.argv) > 6 else ""
ROOT = os.path.realpath(os.getcwd())
MAX_LINES, VALUE_CHARS, SOURCE_CHARS = 40, 60, 70
SHORT = reprlib.Repr()
SHORT.maxstring = SHORT.maxother = VALUE_CHARS
SHORT.maxlist = SHORT.maxtuple = SHORT.maxset = SHORT.maxdict = 10
# What evaluating could run code or change state: the parts shown contain none of it.
UNSAFE = (ast.Call, ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom,
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
kinds, trees = {}, {}


def kind(filename):
    """'test' for a test file in the workspace (or the example's call), 'code' for its other code, else None."""
    if filename not in kinds:
        found = "test" if filename == "<example>" else None
        if filename.endswith(".py") and not filename.startswith("<"):
            path = os.path.realpath(os.path.join(ROOT, filename))
            name = os.path.basename(path)
            installed = {"site-packages", "dist-packages"} & set(path.split(os.sep))
            if path.startswith(ROOT + os.sep) and not installed and name != "conftest.py":
                found = "test" if name.startswith("test_") or name.endswith("_test.py") else "code"
        kinds[filename] = found
    return kinds[filename]


def show(value):
    try:
        text = SHORT.repr(value)
    except Exception:
        text = f"<unprintable {type(value).__name__}>"
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 3] + "..."


def source(filename, lineno):
    text = linecache.getline(filename, lineno).strip()
    return text if len(text) <= SOURCE_CHARS else text[: SOURCE_CHARS - 3] + "..."


def statement(filename, lineno):
    """The innermost statement on ``lineno`` and the expressions of it that run there."""
    if filename not in trees:
        try:
            trees[filename] = ast.parse("".join(linecache.getlines(filename)))
        except (SyntaxError, ValueError):
            trees[filename] = ast.Module(body=[], type_ignores=[])
    best = None
    for node in ast.walk(trees[filename]):
        if not isinstance(node, ast.stmt) or not node.lineno <= lineno <= node.end_lineno:
            continue
        if best is None or node.end_lineno - node.lineno <= best.end_lineno - best.lineno:
            best = node  # on a tie the later one, nested deeper: ``if x: return y``
    if best is None or isinstance(best, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None, []
    if hasattr(best, "body"):  # a compound statement: only its header runs on the line
        return best, [getattr(best, field) for field in ("test", "iter", "subject") if hasattr(best, field)]
    return best, list(ast.iter_child_nodes(best))


def parts(nodes, frame):
    """'expression = value' for the subscripts, attributes and global names in ``nodes`` that call nothing."""
    found = []

    def visit(node):
        if isinstance(node, ast.Call):  # not the call, but what its arguments read
            for child in [*node.args, *(keyword.value for keyword in node.keywords)]:
                visit(child)
        elif isinstance(node, UNSAFE) or isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            return
        elif isinstance(node, (ast.Subscript, ast.Attribute)):
            if not any(isinstance(inner, UNSAFE) for inner in ast.walk(node)):
                found.append(node)
        elif isinstance(node, ast.Name):  # the locals are shown already
            if node.id not in frame.f_locals and node.id not in frame.f_code.co_varnames:
                found.append(node)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child)

    for node in nodes:
        visit(node)
    shown = []
    for node in found:
        text = ast.unparse(node)
        try:
            value = eval(compile(ast.Expression(node), "<trace>", "eval"), frame.f_globals, dict(frame.f_locals))
        except Exception as error:
            shown.append(f"{text} raises {type(error).__name__}")
            continue
        if not (callable(value) or type(value).__name__ == "module"):
            shown.append(f"{text} = {show(value)}")
    return list(dict.fromkeys(shown))[:6]


EQUALITY_ASSERTS = ("assertEqual", "assertEquals", "assertAlmostEqual")


def expected_value(frame, function):
    """(True, the literal the caller's line compares its call of ``function`` with), else (False, None)."""
    if frame.f_code.co_filename == "<example>":
        candidates = [EXPECTED] if EXPECTED else []  # a literal (see task_examples)
    else:
        node, _ = statement(frame.f_code.co_filename, frame.f_lineno)
        candidates = []
        for inner in ast.walk(node) if node is not None else ():
            if isinstance(inner, ast.Call) and getattr(inner.func, "attr", "") in EQUALITY_ASSERTS:
                sides = inner.args[:2]
            elif isinstance(inner, ast.Compare) and [type(op) for op in inner.ops] == [ast.Eq]:
                sides = [inner.left, inner.comparators[0]]
            else:
                continue
            for called, other in (sides, sides[::-1]) if len(sides) == 2 else ():
                calls = [n.func for n in ast.walk(called) if isinstance(n, ast.Call)]
                candidates += [other] if function in [getattr(f, "id", getattr(f, "attr", "")) for f in calls] else []
    for candidate in candidates:
        try:
            return True, ast.literal_eval(candidate)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return False, None


def shifted(index, delta):
    """The index expression ``index`` one lower or higher: ``m + 1`` becomes ``m``, ``m`` becomes ``m - 1``."""
    if isinstance(index, ast.Constant) and type(index.value) is int:
        return ast.Constant(index.value + delta)
    base, offset = index, delta
    right = getattr(index, "right", None)
    if isinstance(index, ast.BinOp) and isinstance(right, ast.Constant) and type(right.value) is int:
        if isinstance(index.op, (ast.Add, ast.Sub)):
            base, offset = index.left, delta + (right.value if isinstance(index.op, ast.Add) else -right.value)
    if offset == 0:
        return base
    return ast.BinOp(base, ast.Add() if offset > 0 else ast.Sub(), ast.Constant(abs(offset)))


def same_value(value, expected):
    """Whether ``value`` is ``expected``: equal, and of its type (a number may be an int or a float)."""
    numbers = (int, float)
    if type(value) is not type(expected) and not (type(value) in numbers and type(expected) in numbers):
        return False
    try:
        return bool(value == expected)
    except Exception:  # an array compares item by item
        return False


def index_fix(node, frame, expected):
    """``node``, a return line, with its indexes one off so that it returns ``expected`` in ``frame``; or None."""
    if node.value is None or any(isinstance(inner, UNSAFE) for inner in ast.walk(node.value)):
        return None
    reads = [n for n in ast.walk(node.value) if isinstance(n, ast.Subscript) and not isinstance(n.slice, ast.Slice)]
    originals = [read.slice for read in reads]
    for chosen in [*([read] for read in reads), *([reads] if len(reads) > 1 else [])]:
        for delta in (-1, 1):
            for read in chosen:
                read.slice = shifted(read.slice, delta)
            try:
                tree = ast.fix_missing_locations(ast.Expression(node.value))
                value = eval(compile(tree, "<trace>", "eval"), frame.f_globals, dict(frame.f_locals))
                if same_value(value, expected):
                    return ast.unparse(node)
            except Exception:
                pass
            finally:
                for read, original in zip(reads, originals):
                    read.slice = original
    return None


def signature(frame):
    """The call as ``name(arguments)``, with the values the arguments had on entry."""
    code, values = frame.f_code, frame.f_locals
    names, count, keywords = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    shown = [show(values.get(name)) for index, name in enumerate(names[:count]) if index or name not in ("self", "cls")]
    rest = count + keywords
    if code.co_flags & 4:  # *args
        shown.extend(show(value) for value in values.get(names[rest], ()))
    shown.extend(f"{name}={show(values.get(name))}" for name in names[count : count + keywords])
    if code.co_flags & 8:  # **kwargs
        kwargs = values.get(names[rest + 1 if code.co_flags & 4 else rest], {})
        shown.extend(f"{key}={show(value)}" for key, value in kwargs.items())
    return f"{getattr(code, 'co_qualname', code.co_name)}({', '.join(shown)})"


COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")
SHOWN_ITEMS = 6


class Comprehension:
    """A comprehension the traced call ran: the values its loop variables took, and what it built."""

    def __init__(self, frame):
        self.frame, self.items, self.result = frame, [], None

    def local(self, frame, event, arg):
        if event in ("line", "return"):
            now = ", ".join(f"{name} = {show(value)}" for name, value in frame.f_locals.items() if name[0] != ".")
            if now and (not self.items or self.items[-1] != now):
                self.items.append(now)
        if event == "return" and frame.f_code.co_name != "<genexpr>":  # a generator returns at every yield
            self.result = show(arg)
        return self.local

    def describe(self):
        items = self.items[:SHOWN_ITEMS] + (["..."] if len(self.items) > SHOWN_ITEMS else [])
        built = f", giving {self.result}" if self.result is not None else ""
        return f"the comprehension ran with {'; '.join(items) or 'no items'}{built}"


class Call:
    """One call the test made into workspace code, as it ran."""

    def __init__(self, frame):
        code, back = frame.f_code, frame.f_back
        self.frame, self.comprehensions = frame, {}  # id(frame) -> [row, Comprehension]
        self.code, self.caller, self.caller_line = code, back.f_code.co_name, back.f_lineno
        self.caller_file = os.path.basename(back.f_code.co_filename)
        self.signature = signature(frame)
        self.seen = self.locals(frame)
        self.rows = []  # [line, the locals it changed, how the call ended there]
        self.error = None
        self.where = []  # the values of the last line's parts
        self.expected = expected_value(back, code.co_name)
        self.fix = None  # the return line with its indexes one off, when that returns the expected value
        self.stopped = False

    def locals(self, frame):
        return {name: show(value) for name, value in frame.f_locals.items()}

    def note_changes(self, frame):
        now = self.locals(frame)
        if self.rows:
            self.rows[-1][1].extend(f"{name} = {text}" for name, text in now.items() if self.seen.get(name) != text)
        self.seen = now

    def local(self, frame, event, arg):
        # A "line" event comes before its line runs: what changed is seen at the next event.
        if event == "line":
            self.error = None  # an exception before it was handled
            if not self.stopped:
                self.note_changes(frame)
                self.rows.append([frame.f_lineno, [], ""])
                if len(self.rows) >= MAX_LINES:
                    self.stopped, frame.f_trace_lines = True, False
        elif event == "exception":
            self.error = arg[1]
        elif event == "return":
            if not self.stopped:
                self.note_changes(frame)
            if self.stopped or not self.rows or self.rows[-1][0] != frame.f_lineno:
                self.rows.append([frame.f_lineno, [], ""])
            if self.stopped:  # the locals as they ended, on the last line
                self.note_changes(frame)
            node, nodes = statement(self.code.co_filename, frame.f_lineno)
            if self.error is not None:
                message = str(self.error).strip().split("\n")[0][:100]
                self.rows[-1][2] = f"raised {type(self.error).__name__}" + (f": {message}" if message else "")
                self.where = parts(nodes, frame)
            else:
                self.rows[-1][2] = f"returned {show(arg)}"
                self.where = parts(nodes, frame) if isinstance(node, ast.Return) else []
                known, expected = self.expected
                if known and isinstance(node, ast.Return) and not same_value(arg, expected):
                    self.fix = index_fix(node, frame, expected)
        return self.local

    def render(self):
        where = os.path.relpath(self.code.co_filename, ROOT)
        head = f"How {self.signature} ran in {where}"
        if self.caller_file != "<example>":
            head += f", called from {self.caller_file} line {self.caller_line} ({self.caller})"
        head += ":"
        width = max(len(str(row[0])) for row in self.rows)
        lines = []
        ran = {}
        for row, comprehension in self.comprehensions.values():
            ran.setdefault(row, []).append(comprehension.describe())
        for index, (lineno, changes, end) in enumerate(self.rows):
            notes = "; ".join(ran.get(index, []) + changes + ([end] if end else []))
            text = source(self.code.co_filename, lineno) + (f"  # {notes}" if notes else "")
            lines.append(f"  line {str(lineno).rjust(width)}  {text}")
        tail = lines[-3:] if self.stopped else lines[-2:]  # a stopped trace ends on a line it did not follow
        body = lines[: len(lines) - len(tail)]
        if self.where:
            tail.append(" " * (width + 8) + "where " + ", ".join(self.where))
        if self.fix:
            expected = show(self.expected[1])
            tail.append(" " * (width + 8) + f"expected {expected}: `{self.fix}` would return {expected}")
        room = CHARS - len(head) - sum(len(line) + 1 for line in tail) - 60
        kept = []
        for line in body:
            if len(line) + 1 > room:
                break
            kept.append(line)
            room -= len(line) + 1
        cut = len(body) - len(kept)
        if cut or self.stopped:
            kept.append(f"  ... ({cut} more lines" + (f"; the trace stops after {MAX_LINES})" if self.stopped else ")"))
        return "\n".join([head, *kept, *tail])[:CHARS]


calls = {"last": None, "at_line": None}


def tracer(frame, event, arg):
    # Every call passes here; only one straight from a test into workspace code is followed,
    # with the comprehensions it runs (a generator's frame calls in again at every item).
    back = frame.f_back
    if event != "call" or back is None or frame.f_code.co_name == "<module>":
        return None
    call = calls["last"]
    if frame.f_code.co_name in COMPREHENSIONS and call is not None and back is call.frame and call.rows:
        row, comprehension = call.comprehensions.get(id(frame), (None, None))
        if comprehension is None or comprehension.frame is not frame:
            comprehension = Comprehension(frame)
            call.comprehensions[id(frame)] = [len(call.rows) - 1, comprehension]
        return comprehension.local
    if kind(frame.f_code.co_filename) != "code" or kind(back.f_code.co_filename) != "test":
        return None
    call = Call(frame)
    calls["last"] = call
    if back.f_lineno == LINE:
        calls["at_line"] = call
    return call.local


def run():
    if RUNNER == "example":
        import importlib

        namespace = {}
        for module in TEST_FILE.split(","):
            namespace.update(vars(importlib.import_module(module)))
        code = compile(TEST_ID, "<example>", "eval")
        sys.settrace(tracer)
        try:
            eval(code, namespace)
        except Exception:
            pass  # the trace shows where it raised
        finally:
            sys.settrace(None)
    elif RUNNER == "unittest":
        import unittest

        if TEST_FILE and os.path.dirname(TEST_FILE) not in sys.path:
            sys.path.append(os.path.dirname(TEST_FILE))  # a test that discovery found in a folder
        loader = unittest.TestLoader()
        suite = loader.loadTestsFromName(TEST_ID)  # imports before the tracing starts
        if loader.errors:
            return
        sys.settrace(tracer)
        try:
            suite.run(unittest.TestResult())
        finally:
            sys.settrace(None)
    else:
        import pytest

        sys.settrace(tracer)
        try:
            pytest.main([TEST_ID, "-q", "-p", "no:cacheprovider", "-p", "no:faulthandler", "-o", "addopts="])
        finally:
            sys.settrace(None)


try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run()
        call = calls["at_line"] or calls["last"]
        text = call.render() if call is not None and call.rows else ""
    if text:
        sys.stdout.write("\n<<<pymanus failure trace>>>\n" + text + "\n")  # _MARK
except BaseException:
    pass
sys.stdout.flush()
os._exit(0)  # not waiting for threads the tested code left running
'''
