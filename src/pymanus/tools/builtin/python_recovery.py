"""What a failed block of model-written code should be followed by: how to recover.

A traceback alone did not move small models: told "'float' object is not iterable", the 1.5B ran
the same code again. Each note here names the cause in the model's terms and the fix to make.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from pymanus.sandbox import Sandbox
from pymanus.tools.builtin.python_hints import (
    TEXT_READ_NOTE,
    column_lengths_note,
    missing_file_note,
    missing_import_note,
    missing_name_note,
    removed_api_note,
    unimported_module_note,
)
from pymanus.tools.builtin.python_session import BlockOutcome
from pymanus.tools.builtin.workspace_scan import defining_module


def recovery_note(outcome: BlockOutcome, sandbox: Sandbox, *, session: bool, libraries: Sequence[str]) -> str:
    """The note that follows a block's output: what to do about the way it failed ("" when none applies).

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
        if module in ("read_file", "write_file", "edit_file"):  # the predefined helpers, "imported" by small models
            return f"{module} is not a module: it is a function already defined here. Call it without importing."
        missing = str(status["module"])
        if "." in missing and (Path(sandbox.workspace) / module).is_dir():
            path = missing.replace(".", "/") + ".py"
            return (
                f"{path} does not exist: {module}, a folder in the workspace, has no module "
                f"{missing.partition('.')[2]} yet. Write {path} (write_file) before you import it."
            )
        if status.get("raised_in"):  # project_layout run 97: `import main` at the top of weather/cli.py
            path, line = status["raised_in"]
            return missing_import_note(path, line, module, defining_module(sandbox.workspace, module))
        available = ", ".join(libraries) or "none"
        return (
            f"The module '{module}' is not installed in the sandbox, and packages cannot be installed here. "
            f"Available data libraries: {available}. Otherwise use the standard library "
            "(csv, json, statistics, math, collections, sqlite3)."
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
            f"Fix {broken} first (read it, then edit_file or write_file), then run this again."
        )
    if error == "SyntaxError" and _SHELL_LINE.search(outcome.stderr):
        return (
            "The code has a SyntaxError (see above): that line is a shell command, not Python. "
            "Run a script from Python with exec(open('script.py').read()), or its tests with "
            "unittest.main(module='test_name', exit=False)."
        )
    if error == "SyntaxError" and "unterminated string literal" in outcome.stderr:
        return (
            "The code has a SyntaxError (see above), so none of it ran: a quoted string does not end on the "
            "line it starts. Inside a Python string write \\n (\\\\n in the JSON arguments). To save fixed "
            "text (a script, a note), call write_file with it as content; build text from computed values "
            "in Python, line by line: '\\n'.join(lines) with f-strings, or DataFrame.to_markdown() for a table."
        )
    if error == "SyntaxError" and "was never closed" in outcome.stderr:
        return (
            "The code has a SyntaxError (see above), so none of it ran: a bracket it opens is never closed. "
            "Write the whole statement, up to its closing bracket."
        )
    if error in ("SyntaxError", "IndentationError"):
        return (
            f"The code has a {error} (see above), so none of it ran. Write one statement per line, "
            "separated by line breaks (\\n in the JSON string), with indented blocks for for/if/with; "
            "a for/if/with/def statement cannot follow `;` on the same line."
        )
    if error == "FileNotFoundError" and status.get("missing_file"):
        return missing_file_note(sandbox.workspace, str(status["missing_file"]))
    if removed := removed_api_note(str(status.get("attribute", ""))):
        return removed
    if status.get("missing") and status.get("module_file"):
        return missing_name_note(
            sandbox.workspace,
            str(status["missing"]),
            str(status["module_file"]),
            str(error),
            importer=str(status.get("importer", "")),
            circular="partially initialized module" in outcome.stderr,
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
        if name in sys.stdlib_module_names:  # add_function run 83: re.compile in textutils.py, never imported
            return unimported_module_note(path, line, name)
        return (
            f"The NameError is in {path}, line {line} (traceback above), a workspace file the code imports, not "
            f"in the code: `{name}` is not defined at that point of {path}. Fix {path} (edit_file), then run "
            "this again."
        )
    if status.get("undefined") and (home := defining_module(sandbox.workspace, str(status["undefined"]))):
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
    if error == "TypeError" and (unwritable := _NOT_JSON.search(outcome.stderr)):
        return (
            f"The code raised TypeError (traceback above): json writes dicts, lists, strings, numbers, "
            f"True, False and None, not {unwritable.group(1)}. Convert the values before writing them: "
            "float(v) for Decimal and numpy numbers (int(v) for whole ones), str(v) for dates and times."
        )
    if error == "AttributeError" and "'str' object has no attribute 'read'" in outcome.stderr:
        return TEXT_READ_NOTE
    if error == "TypeError" and (mixed := _TEXT_WITH_NUMBER.search(outcome.stderr)):
        return (
            f"The code raised TypeError (traceback above): {mixed.group(0)}, so one of the values is text "
            "(a str), not a number. Often a list of rows starts with a header row of column names, or "
            "values read from a file are still strings: add up only the data rows, and convert text to "
            "numbers with int() or float() first."
        )
    if error in ("ValueError", "TypeError") and (unpacked := _UNPACK.search(outcome.stderr)):
        expected, got, single = unpacked.group("expected", "got", "single")
        holds = f"one {single}" if single else f"{got} values" if got else "more values"
        return (
            f"The code raised {error} (traceback above): the line unpacks {expected or 'several'} names from a "
            f"value that holds {holds} (in a for loop: each item does). Print one (print(items[0])) to see what "
            "it holds, then unpack that many names, or build the items with all the values you need "
            "(zip(a, b, c))."
        )
    if error == "TypeError" and (single := _NUMBER_NOT_ITERABLE.search(outcome.stderr)):
        return (
            f"The code raised TypeError (traceback above): a function that takes several values (sum, mean, "
            f"max, min, sorted, a for loop) got one number (a {single.group(1)}); the values above show which name "
            "holds it. When that number is already the result (a total added up in a loop), use it as it is; "
            "otherwise collect the numbers in a list first and pass the list."
        )
    if error:
        return f"The code raised {error} (traceback above). Fix the code and run it again."
    exit_code = status.get("exit")
    if exit_code not in (None, 0):
        return f"The code exited with status {exit_code}."
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
_NUMBER_NOT_ITERABLE = re.compile(r"'(int|float)' object is not iterable")
"""A number where values were expected: customer_totals summed each customer's orders in a loop, then
took ``mean(total)`` of each sum."""
