"""Aid ``error_hints``: after a failed ``python`` call, a note naming the likely cause and its fix.

A traceback alone often does not move a small model: told "'float' object is not iterable",
it runs the same code again. Each note here names the cause in the model's terms and the fix
to make, from the worker's structured report of the exception (``ToolResult.metadata``):
a shell command typed as Python, an unterminated string, a file that is not where the code
looked (with the workspace files of that name), an API that pandas or NumPy removed, a name a
workspace module lacks, a comprehension variable used outside it, a call's accepted
parameters, arithmetic that met a string, an unpacking of the wrong size.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from pymanus.local_aids.python_hints import (
    TEXT_READ_NOTE,
    column_lengths_note,
    missing_file_note,
    missing_import_note,
    missing_name_note,
    no_tests_note,
    removed_api_note,
    unimported_module_note,
)
from pymanus.messages import ToolCall
from pymanus.tools.builtin.workspace_scan import defining_module
from pymanus.tools.middleware import ToolMiddleware, with_note
from pymanus.tools.tool import ToolContext, ToolResult


class ErrorHints(ToolMiddleware):
    """Adds :func:`error_hint` to the result of a ``python`` call that raised, and a note to one
    whose test run found no tests (``Ran 0 tests ... OK`` reads like success)."""

    name = "error_hints"

    async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
        status = result.metadata.get("status")
        if call.name != "python" or not isinstance(status, dict):
            return result
        stderr = str(result.metadata.get("stderr", ""))
        if not result.is_error:
            return with_note(result, no_tests_note(stderr, context.workspace) or "")
        return with_note(result, error_hint(status, stderr, context.workspace))


def error_hint(status: dict[str, Any], stderr: str, workspace: Path) -> str:
    """The specific note for the exception the worker reported ("" when none applies)."""
    error = status.get("error")
    if error == "ModuleNotFoundError" and status.get("raised_in"):
        module = str(status.get("module", "")).split(".")[0]
        path, line = status["raised_in"]
        return missing_import_note(path, line, module, defining_module(workspace, module))
    if error == "SyntaxError" and _SHELL_LINE.search(stderr):
        return (
            "The code has a SyntaxError (see above): that line is a shell command, not Python. "
            "Run a script from Python with exec(open('script.py').read()), or its tests with "
            "unittest.main(module='test_name', exit=False)."
        )
    if error == "SyntaxError" and "unterminated string literal" in stderr:
        return (
            "The code has a SyntaxError (see above), so none of it ran: a quoted string does not end on the "
            "line it starts. Inside a Python string write \\n (\\\\n in the JSON arguments). To save fixed "
            "text (a script, a note), call write_file with it as content; build text from computed values "
            "in Python, line by line: '\\n'.join(lines) with f-strings, or DataFrame.to_markdown() for a table."
        )
    if error == "SyntaxError" and "was never closed" in stderr:
        return (
            "The code has a SyntaxError (see above), so none of it ran: a bracket it opens is never closed. "
            "Write the whole statement, up to its closing bracket."
        )
    if error in ("SyntaxError", "IndentationError") and "expected an indented block" in stderr:
        return (
            "The code has an IndentationError (see above), so none of it ran: a def, class, if, for or with "
            "line has no body. Write its statements under it, indented; a comment alone is not a body."
        )
    if error in ("SyntaxError", "IndentationError") and _CHAINED.search(stderr):
        return (
            f"The code has a {error} (see above), so none of it ran. Write one statement per line, "
            "separated by line breaks (\\n in the JSON string), with indented blocks for for/if/with; "
            "a for/if/with/def statement cannot follow `;` on the same line."
        )
    if error == "FileNotFoundError" and status.get("missing_file"):
        return missing_file_note(workspace, str(status["missing_file"]))
    if removed := removed_api_note(str(status.get("attribute", ""))):
        return removed
    if status.get("missing") and status.get("module_file"):
        return missing_name_note(
            workspace,
            str(status["missing"]),
            str(status["module_file"]),
            str(error),
            importer=str(status.get("importer", "")),
            circular="partially initialized module" in stderr,
        )
    if status.get("undefined") and status.get("comprehension_line"):
        name, line = status["undefined"], status["comprehension_line"]
        return (
            f"The code raised NameError (traceback above): `{name}` is the loop variable of the comprehension "
            f"on line {line} and exists only inside its brackets. To use what the comprehension computes, "
            f"assign it to a variable there (count = sum(... for {name} in ...)) and use that variable, "
            f"or write a for loop (for {name} in ...:) with the statements that need `{name}` inside it."
        )
    if status.get("undefined") and status.get("raised_in"):
        (path, line), name = status["raised_in"], status["undefined"]
        if name in sys.stdlib_module_names:  # a standard module the workspace file uses without importing it
            return unimported_module_note(path, line, name)
        return (
            f"The NameError is in {path}, line {line} (traceback above), a workspace file the code imports, not "
            f"in the code: `{name}` is not defined at that point of {path}. Fix {path} (edit_file), then run "
            "this again."
        )
    if status.get("undefined") and (home := defining_module(workspace, str(status["undefined"]))):
        name = status["undefined"]
        return (
            f"`{name}` is defined in {home.replace('.', '/')}.py, not in this code: "
            f"import it first (from {home} import {name})."
        )
    if status.get("signatures"):
        accepted = "\n".join(textwrap.indent(signature, "    ") for signature in status["signatures"])
        unknown = status.get("unknown")
        refused = f"`{unknown}` is not one of them. " if unknown else ""
        if status.get("renamed"):
            parameter, call = status["renamed"]
            refused += f"If it is meant as `{parameter}`, the call is:\n    {call}\n"
        return (
            "The code raised TypeError (traceback above): a call's arguments do not match its parameters. "
            f"The parameters it accepts:\n{accepted}\n{refused}Fix the call to use only these and run it again."
        )
    if lengths := status.get("column_lengths"):
        return column_lengths_note(lengths)
    if error == "TypeError" and (unwritable := _NOT_JSON.search(stderr)):
        return (
            f"The code raised TypeError (traceback above): json writes dicts, lists, strings, numbers, "
            f"True, False and None, not {unwritable.group(1)}. Convert the values before writing them: "
            "float(v) for Decimal and numpy numbers (int(v) for whole ones), str(v) for dates and times."
        )
    if error == "AttributeError" and "'str' object has no attribute 'read'" in stderr:
        return TEXT_READ_NOTE
    if error == "TypeError" and (mixed := _TEXT_WITH_NUMBER.search(stderr)):
        return (
            f"The code raised TypeError (traceback above): {mixed.group(0)}, so one of the values is text "
            "(a str), not a number. Often a list of rows starts with a header row of column names, or "
            "values read from a file are still strings: add up only the data rows, and convert text to "
            "numbers with int() or float() first."
        )
    if error in ("ValueError", "TypeError") and (unpacked := _UNPACK.search(stderr)):
        expected, got, single = unpacked.group("expected", "got", "single")
        holds = f"one {single}" if single else f"{got} values" if got else "more values"
        return (
            f"The code raised {error} (traceback above): the line unpacks {expected or 'several'} names from a "
            f"value that holds {holds} (in a for loop: each item does). Print one (print(items[0])) to see what "
            "it holds, then unpack that many names, or build the items with all the values you need "
            "(zip(a, b, c))."
        )
    if error == "TypeError" and (single := _NUMBER_NOT_ITERABLE.search(stderr)):
        return (
            f"The code raised TypeError (traceback above): a function that takes several values (sum, mean, "
            f"max, min, sorted, a for loop) got one number (a {single.group(1)}); the values above show which name "
            "holds it. When that number is already the result (a total added up in a loop), use it as it is; "
            "otherwise collect the numbers in a list first and pass the list."
        )
    return ""


_UNPACK = re.compile(
    r"(?:not enough|too many) values to unpack \(expected (?P<expected>\d+)(?:, got (?P<got>\d+))?\)"
    r"|cannot unpack non-iterable (?P<single>\w+) object"
)
"""Python's errors for ``for name, lines, words in pairs`` over items of another length, or of one value."""
_TEXT_WITH_NUMBER = re.compile(
    r"unsupported operand type\(s\) for [^:]+: (?:'(?:int|float)' and 'str'|'str' and '(?:int|float)')"
    r"|can't convert type 'str' to numerator/denominator|must be real number, not str"
    r"|type str doesn't define __round__ method"
)
"""Arithmetic that met a str: a sum over rows that include the header row, or numbers still read as text
(``statistics.mean`` of a csv column's strings)."""
_NOT_JSON = re.compile(r"Object of type (\w+) is not JSON serializable")
"""json.dump refused a value (a Decimal, a numpy number, a date): small models write money as Decimal."""
_SHELL_LINE = re.compile(r"line \d+\n\s+(?:python3?|pip3?|pytest|ls|cat|cd|echo) ")
"""The line a SyntaxError shows is a shell command (small models "run" scripts that way)."""
_CHAINED = re.compile(r"line \d+\n\s+[^\n]*(?:;|\\n)")
"""The line a SyntaxError shows chains statements with ``;`` or a typed ``\\n``: code squeezed onto one line."""
_NUMBER_NOT_ITERABLE = re.compile(r"'(int|float)' object is not iterable")
"""A number where values were expected: a total already added up in a loop, passed to ``mean`` or ``sum``."""
