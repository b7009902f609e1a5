"""The python tool: observations for every way code can go wrong, sessions, and containment."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from helpers.python_cases import call, needs_bwrap, no_workers_left, quick
from pymanus.sandbox import Limits, Sandbox
from pymanus.sandbox.limits import find_pids_parent
from pymanus.tools import Tool, ToolContext
from pymanus.tools.builtin.python import (
    EMPTY_RESULT_NOTE,
    PythonRunner,
    available_libraries,
    python_tool,
)
from pymanus.tools.builtin.python_state import CODE_OUTPUT, CODE_RAN
from pymanus.tools.builtin.python_worker import cell_name, parameter_notes


# -- the tool as the model sees it ---------------------------------------------------------
def test_description_lists_the_data_libraries(tmp_path: Path) -> None:
    tool = python_tool(Sandbox(tmp_path, backend="none", timeout=7))
    assert tool.name == "python"
    for name in available_libraries():
        assert name in tool.description
    for name in ("numpy", "pandas", "matplotlib"):
        if name not in available_libraries():
            assert name in tool.description.split("Not installed")[1]
    assert "workspace" in tool.description and "7 s" in tool.description
    assert tool.timeout is not None and tool.timeout > 7
    assert list(tool.parameters["properties"]) == ["code"]
    assert ("pd.read_csv" in tool.description) == ("pandas" in available_libraries())
    if "pandas" in available_libraries() and find_spec("tabulate"):
        # The whole call, to copy: DataFrame.to_markdown returns the table's text.
        assert "df.to_markdown(path) for a Markdown table" in tool.description


def test_session_tool_has_a_reset_and_is_not_parallel(tmp_path: Path) -> None:
    tool = PythonRunner(Sandbox(tmp_path, backend="none"), session=True).tool
    assert list(tool.parameters["properties"]) == ["code", "reset"]
    assert not tool.parallel_safe and "persist" in tool.description


# -- observations ------------------------------------------------------------------------
async def test_prints_and_shows_the_last_expression(once: Tool) -> None:
    result = await call(once, "print('hello')\n6 * 7")
    assert not result.is_error and result.text == "hello\n42"


async def test_silent_code_says_so(once: Tool) -> None:
    result = await call(once, "x = 1")
    assert not result.is_error and "printed nothing" in result.text
    # An empty result printed is not "nothing": the model must see that its function returned "".
    blank = await call(once, "print('')")
    assert not blank.is_error and "printed only blank output: '\\n'" in blank.text, blank.text
    assert "printed nothing" not in blank.text


async def test_an_empty_result_asks_to_check_the_filters(once: Tool) -> None:
    code = "import re\nfound = [n for n in ['a.md'] if n.endswith('.py')]\nprint('files:', found)"
    result = await call(once, code)
    assert not result.is_error
    assert result.text == "files: []\n\n" + EMPTY_RESULT_NOTE
    for empty in ("{}", "set()", "__import__('pandas').DataFrame({'a': []})"):
        assert EMPTY_RESULT_NOTE in (await call(once, empty)).text, empty
    for full in ("[1]", "print([])\nprint('done')", "'[]'"):
        assert EMPTY_RESULT_NOTE not in (await call(once, full)).text, full


async def test_a_pattern_given_to_str_replace_is_named(once: Tool) -> None:
    result = await call(once, "print('Hello, World!'.lower().replace('[^a-z0-9]+', '-'))")
    assert not result.is_error
    assert result.text == (
        "hello, world!\n\nNote: your code's line 1 calls .replace(r'[^a-z0-9]+', ...), but str.replace looks for "
        "that exact text, not a regular expression; for a pattern use re.sub(pattern, replacement, text) (import re)."
    )


async def test_a_loop_variable_named_like_the_list_it_fills_is_named(once: Tool) -> None:
    code = "files = []\nfor root, dirs, files in os.walk('.'):\n    files.append(root)\nprint(len(files))"
    result = await call(once, code)
    assert "Note: your code's line 2's for loop makes `files` its own loop variable" in result.text
    # Chained on one line (run unfolded), as the 1.5B wrote it: the note is about the code that ran.
    chained = "import os\nfiles = []\nfor root, dirs, files in os.walk('.'): for name in files:\n    files.append(name)"
    result = await call(once, chained)
    assert "chained for/if/with statements on one line" in result.text
    assert "Note: your code's line 3's for loop makes `files` its own loop variable" in result.text


async def test_traceback_shows_the_failing_line(once: Tool) -> None:
    code = "def f(x):\n    return 1 / x\nf(0)"
    result = await call(once, code)
    assert result.is_error
    assert f'File "{cell_name(code)}", line 2, in f' in result.text and "return 1 / x" in result.text
    assert "ZeroDivisionError" in result.text and "Fix the code" in result.text
    assert "Values on line 2: x = 0 (int)" in result.text


async def test_a_wrong_value_shows_the_values_its_line_read(once: Tool) -> None:
    """customer_totals: the 1.5B called mean() on each customer's summed float and, told only
    "'float' object is not iterable", ran the same code again."""
    code = (
        "from statistics import mean\n"
        "totals = {'Alice': 291.88}\n"
        "label = 'x' * 500\n"
        "average = {name: mean(total) for name, total in totals.items()}\n"
    )
    result = await call(once, code)
    assert "TypeError: 'float' object is not iterable" in result.text
    assert "Values on line 4: name = 'Alice' (str); total = 291.88 (float); totals = {'Alice': 291.88} (dict)" in (
        result.text
    )  # mean, a function, and average, assigned, are not shown
    # the note says what the number is: run 211 summed each customer's orders, then took mean(total)
    assert "got one number (a float); the values above show which name holds it. When that number is already the " in (
        result.text
    )
    long = await call(once, "label = 'x' * 500\nlabel + 1")
    shown = long.text.split("Values on line 2: ")[1].splitlines()[0]
    assert shown.startswith("label = 'xxx") and "..." in shown and len(shown) < 100  # a long value is cut
    other = await call(once, "import missing_module_xyz")
    assert "Values on line" not in other.text  # not a wrong value: nothing to show
    assert "python_worker" not in result.text and "<string>" not in result.text


async def test_traceback_shows_workspace_modules_but_not_installed_packages(once: Tool, sandbox: Sandbox) -> None:
    installed = sandbox.workspace / ".venv" / "site-packages" / "lib1"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("def f():\n    return 1 / 0\n")
    (sandbox.workspace / "mod.py").write_text("import lib1\n\n\ndef g():\n    return lib1.f()\n")
    result = await call(once, "import sys\nsys.path.insert(0, '.venv/site-packages')\nimport mod\nmod.g()")
    assert result.is_error
    assert 'File "mod.py", line 5, in g\n    return lib1.f()' in result.text
    assert "__init__.py" not in result.text and "... 1 frame inside libraries omitted ..." in result.text


@pytest.mark.parametrize(
    ("code", "holds"),
    [
        ("rows = [('a', 1)]\nfor f, l, w in rows:\n    print(f)", "3 names from a value that holds 2 values"),
        ("a, b = [1, 2, 3]", "2 names from a value that holds more values"),
        ("for name, (lines, words) in [('a', 3)]:\n    print(name)", "several names from a value that holds one int"),
    ],
)
async def test_unpacking_the_wrong_number_of_values_says_to_look_at_one_item(once: Tool, code: str, holds: str) -> None:
    result = await call(once, code)
    assert result.is_error and f"Error (traceback above): the line unpacks {holds}" in result.text
    assert "Print one (print(items[0]))" in result.text


@pytest.mark.skipif(find_spec("pandas") is None, reason="pandas is not installed")
async def test_a_table_of_columns_of_different_lengths_names_their_lengths(runner: PythonRunner) -> None:
    # word_counts run 81: the total appended to two of the three lists, then the same code sent again.
    code = (
        "import pandas as pd\nfiles = ['a.txt', 'b.txt']\nlines = [3, 5]\nwords = [20, 22]\n"
        "lines.append(sum(lines))\nwords.append(sum(words))\n"
        "df = pd.DataFrame({'file': files, 'lines': lines, 'words': words})"
    )
    result = await call(runner.tool, code)
    assert result.is_error and "All arrays must be of the same length" in result.text
    assert "the table's columns have different lengths: file 2, lines 3, words 3." in result.text, result.text
    columns = "columns = {'file': files, 'lines': lines}\npd.DataFrame(columns)"
    assert "file 2, lines 3." in (await call(runner.tool, columns)).text
    other = await call(runner.tool, "raise ValueError('All arrays must be of the same length')")
    assert "different lengths" not in other.text  # no table on the line: nothing to name


async def test_wrong_arguments_show_the_callee_parameters(runner: PythonRunner) -> None:
    code = "def area(width, height):\n    return width * height\narea(w=2, height=3)"
    result = await call(runner.tool, code)
    assert result.is_error and "unexpected keyword argument 'w'" in result.text
    assert "The parameters it accepts:\n    area(width, height)\n" in result.text, result.text
    missing = await call(runner.tool, "print(area(2))")
    assert "    area(width, height)\n" in missing.text and "print(" not in missing.text.split("accepts:")[1]
    # The misnamed keyword, renamed to the parameter the call leaves unset, written out.
    renamed = "`w` is not one of them. If it is meant as `width`, the call is:\n    area(width=2, height=3)\n"
    assert renamed in result.text
    builtin = await call(runner.tool, "sorted([2, 1], reversed=True)")
    assert "sorted(iterable, /, *, key=None, reverse=False)" in builtin.text
    assert "meant as" not in builtin.text  # no parameter left that takes a keyword


async def test_a_method_of_a_computed_object_is_named_without_calling_the_model_code(runner: PythonRunner) -> None:
    # Like pandas' to_markdown passing unknown keywords on to tabulate: the error comes from a
    # library function the method calls; the signature is the method's, from the frame it opened.
    library = (
        "def render(rows, *, upper=False):\n    return str(rows)\n"
        "class Table:\n    def to_text(self, buf=None, *, index=True, **kwargs):\n"
        '        """Render the table.\n\n        Parameters\n        ----------\n'
        "        buf : str, Path or file-like, optional\n            The file to write to. If None,\n"
        '            the text is returned.\n        index : bool\n            Add row labels.\n        """\n'
        "        return render([], **kwargs)\n"
    )
    (Path(runner.sandbox.workspace) / "tables.py").write_text(library)
    code = (
        "from tables import Table\nmade = []\n"
        "def make():\n    made.append(1)\n    return Table()\n"
        "make().to_text(index=False, file_path='t.txt')"
    )
    result = await call(runner.tool, code)
    assert "render() got an unexpected keyword argument 'file_path'" in result.text
    assert "    Table.to_text(buf=None, *, index=True, **kwargs)\n" in result.text, result.text
    # What each parameter takes, from the docstring: the name `buf` alone does not say it is the path.
    assert (
        "        buf: str, Path or file-like, optional - The file to write to. If None, the text is returned.\n"
        "        index: bool - Add row labels.\n"
        "`file_path` is not one of them. If it is meant as `buf`, the call is:\n"
        "    make().to_text(index=False, buf='t.txt')\n"
    ) in result.text, result.text
    assert (await call(runner.tool, "len(made)")).text == "1"  # make() ran once: by the code, not the hint
    # A title given as `name=` is not what `buf` takes: no renamed call for it.
    titled = await call(runner.tool, "Table().to_text(index=False, name='Totals per region')")
    assert "`name` is not one of them. Fix the call" in titled.text and "meant as" not in titled.text


def test_parameter_notes_read_numpydoc_and_google_docstrings() -> None:
    google = (
        "Save rows.\n\nArgs:\n    path (str): Where to write. The file is\n        created if missing.\n"
        "    rows: The rows.\n    self: not a parameter a caller passes.\n"
    )
    assert parameter_notes(google, ["self", "path", "rows", "missing"]) == [
        "path: (str) Where to write. The file is created if missing.",
        "rows: The rows.",
    ]
    numpy = "Parameters\n----------\n" + "".join(f"p{i} : int\n    Number {i}.\n" for i in range(5))
    notes = parameter_notes(numpy, [f"p{i}" for i in range(5)])
    assert notes == ["p0: int - Number 0.", "p1: int - Number 1.", "p2: int - Number 2."]  # the first three only
    long = parameter_notes("x : str\n    " + "word " * 100, ["x"])[0]
    assert len(long) <= 163 and long.endswith("...")


async def test_a_missing_file_points_to_the_files_of_that_name(once: Tool, sandbox: Sandbox) -> None:
    texts = Path(sandbox.workspace) / "texts"
    texts.mkdir()
    (texts / "alpha.txt").write_text("a b\n")
    result = await call(once, "open('xts/alpha.txt').read()")  # a path cut short, as [2:] on 'texts/...' does
    assert result.is_error and "FileNotFoundError" in result.text
    assert "the workspace has no xts/alpha.txt, but has texts/alpha.txt. Use that path" in result.text, result.text
    assert "os.walk" not in result.text
    nowhere = await call(once, "open('beta.txt').read()")
    assert "the workspace has no file named beta.txt" in nowhere.text
    lost = await call(once, "for folder, _, names in os.walk('text'):\n    print(names)")
    assert lost.text.endswith(
        "Note: your code's line 1 walks 'text', which is not a folder of the workspace, so os.walk gives nothing, "
        "without an error; its folders are texts."
    )
    # find_todos: a name from os.walk opened without its folder.
    walked = await call(once, "for folder, _, names in os.walk('.'):\n    for name in names:\n        open(name)")
    assert walked.text.endswith(
        "the workspace has no alpha.txt, but has texts/alpha.txt. Use that path (relative to the workspace folder) "
        "and run it again. os.walk and os.listdir give names without their folder: os.path.join(folder, name)."
    )


async def test_other_type_errors_get_the_plain_hint(once: Tool) -> None:
    result = await call(once, "total = len([1]) + None")
    assert result.is_error and "unsupported operand" in result.text
    assert "Fix the code and run it again" in result.text and "accepts" not in result.text


async def test_arithmetic_on_text_suggests_a_header_row_or_unconverted_values(once: Tool) -> None:
    # word_counts: sum(row[1] for row in rows) over rows that began with ['file', 'lines', 'words'].
    code = "rows = [['file', 'lines'], ['a.txt', 3]]\nprint(sum(row[1] for row in rows))"
    result = await call(once, code)
    assert result.is_error and result.text.endswith(
        "The code raised TypeError (traceback above): unsupported operand type(s) for +: 'int' and 'str', so one "
        "of the values is text (a str), not a number. Often a list of rows starts with a header row of column "
        "names, or values read from a file are still strings: add up only the data rows, and convert text to "
        "numbers with int() or float() first."
    )
    assert "'str' and 'int', so one of the values is text" in (await call(once, "'3' - 1")).text
    # column_stats: statistics.mean over a csv column's strings.
    strings = await call(once, "import statistics\nstatistics.mean(['21.5', '23.0'])")
    assert "numerator/denominator, so one of the values is text" in strings.text
    assert (
        "must be real number, not str, so one of the values is text"
        in (await call(once, "import math\nmath.sqrt('4')")).text
    )
    assert "__round__ method, so one of the values is text" in (await call(once, "round('2.5')")).text


async def test_values_json_cannot_write_get_a_conversion_hint(once: Tool) -> None:
    result = await call(once, "import json, decimal\njson.dumps({'Ana': decimal.Decimal('2.50')})")
    assert result.is_error and "json writes dicts, lists, strings, numbers" in result.text
    assert "not Decimal" in result.text and "float(v)" in result.text


async def test_an_api_removed_from_a_library_names_what_replaces_it(once: Tool) -> None:
    pytest.importorskip("pandas")
    code = "import pandas as pd\nrows = pd.DataFrame({'a': []})\nrows = rows.append({'a': 1}, ignore_index=True)"
    result = await call(once, code)
    assert result.is_error and "'DataFrame' object has no attribute 'append'" in result.text
    assert "`DataFrame.append` was removed in pandas 2.0: collect the rows in a list of dicts" in result.text
    other = await call(once, "import pandas as pd\npd.DataFrame().no_such_method()")
    assert other.is_error and "was removed" not in other.text


async def test_syntax_error(once: Tool) -> None:
    result = await call(once, "def broken(:\n    pass")
    assert result.is_error and "SyntaxError" in result.text and "def broken(:" in result.text


async def test_a_syntax_error_in_an_imported_workspace_file_is_located_there(once: Tool, sandbox: Sandbox) -> None:
    (sandbox.workspace / "stats.py").write_text("def median(values) ->\n    return values[0]\n")
    result = await call(once, "from stats import median\nprint(median([3]))")
    assert result.is_error and "expected ':'" in result.text and "stats.py" in result.text
    assert "is in stats.py, a file your code imports, not in your code. Fix stats.py first" in result.text
    assert "one statement per line" not in result.text


async def test_a_module_that_imports_itself_is_named_with_the_line(once: Tool, sandbox: Sandbox) -> None:
    code = "def word_count(text):\n    return 0\nfrom textutils import slugify\nslugify = lambda t: t\n"
    (sandbox.workspace / "textutils.py").write_text(code)
    result = await call(once, "import textutils\nprint(textutils.slugify('a'))")
    assert result.is_error and "partially initialized module 'textutils'" in result.text
    assert "textutils.py imports itself at line 3 (`from textutils import slugify`)" in result.text
    assert "does not define" not in result.text


async def test_a_file_written_through_a_broken_string_literal_points_to_write_file(once: Tool) -> None:
    # A line break the JSON decoding put inside a string that is never closed: it cannot be repaired.
    code = "open('s.py', 'w').write('def f():\n    print(1)\nf()\n"
    result = await call(once, code)
    assert result.is_error and "unterminated string literal" in result.text
    assert "call write_file with it as content" in result.text


async def test_a_file_written_as_one_string_with_its_own_quotes_is_written_as_meant(
    once: Tool, sandbox: Sandbox
) -> None:
    # project_layout runs 222 and 224: line breaks from the JSON, and '__main__' quoted inside the string.
    code = "with open('s.py', 'w') as f:\nf.write('def f():\n    print(1)\nif __name__ == '__main__':\n    f()')"
    result = await call(once, code)
    assert not result.is_error and "were run as \\' escapes" in result.text, result.text
    assert "it was run indented under that line" in result.text
    written = (sandbox.workspace / "s.py").read_text()
    assert written == "def f():\n    print(1)\nif __name__ == '__main__':\n    f()"


async def test_a_report_built_in_a_broken_string_literal_points_to_joining_lines(once: Tool) -> None:
    # The string is never closed, so the line breaks cannot be escaped back.
    code = "total = 3\nreport = f'| Region | Total |\n|---|---|\n| North | {total} |\nprint(report)"
    result = await call(once, code)
    assert result.is_error and "unterminated string literal" in result.text
    assert "'\\n'.join(lines)" in result.text and "to_markdown()" in result.text


async def test_one_line_compound_statement_runs_or_gets_a_recovery_hint(once: Tool) -> None:
    repaired = await call(once, "total = 0; for x in [1, 2]: total += x; print(total)")
    assert not repaired.is_error and repaired.text.endswith("in indented blocks.\n\n1\n3")
    result = await call(once, "total = 0; for x in [1, 2]: total += x print(total)")  # cannot be read
    assert result.is_error
    assert "none of it ran" in result.text
    assert "cannot follow `;`" in result.text


async def test_missing_module_says_how_to_recover(once: Tool) -> None:
    result = await call(once, "import surely_not_installed_xyz.sub")
    assert result.is_error
    assert "'surely_not_installed_xyz' is not installed" in result.text
    assert "standard library" in result.text and "csv" in result.text


async def test_a_missing_module_of_a_workspace_package_names_the_file_to_write(once: Tool, sandbox: Sandbox) -> None:
    (Path(sandbox.workspace) / "weather").mkdir()
    (Path(sandbox.workspace) / "weather" / "__init__.py").write_text("")
    result = await call(once, "from weather.cli import main")
    assert result.is_error
    assert result.text.endswith(
        "weather/cli.py does not exist: weather, a folder in the workspace, has no module cli yet. "
        "Write weather/cli.py (write_file) before you import it."
    )
    assert "not installed" not in result.text


async def test_exit_status_and_input(once: Tool) -> None:
    exited = await call(once, "import sys; print('bye'); sys.exit(4)")
    assert exited.is_error and "bye" in exited.text and "status 4" in exited.text
    fine = await call(once, "raise SystemExit(0)")
    assert not fine.is_error
    reading = await call(once, "input('name? ')")
    assert reading.is_error and "EOFError" in reading.text


async def test_files_land_in_the_workspace_and_matplotlib_is_headless(once: Tool, sandbox: Sandbox) -> None:
    result = await call(once, "import os\nopen('made.txt', 'w').write('data')\nprint(os.environ['MPLBACKEND'])")
    assert result.text == "Agg\n\nFiles written: made.txt (1 line).\n\nmade.txt:\n```\ndata\n```"
    assert (sandbox.workspace / "made.txt").read_text() == "data"
    assert "data" in (await call(once, "print(open('made.txt').read())")).text


async def test_listed_libraries_really_import(once: Tool) -> None:
    libraries = available_libraries()
    if not libraries:
        pytest.skip("no data library installed")
    result = await call(once, f"import {', '.join(libraries)}\nprint('imported')")
    assert result.text == "imported", result.text


async def test_infinite_loop_is_stopped(sandbox: Sandbox) -> None:
    result = await call(python_tool(quick(sandbox)), "print('start')\nwhile True:\n    pass")
    assert result.is_error and "start" in result.text
    assert "ran longer than 1 s and was killed" in result.text
    assert await no_workers_left()


async def test_gigabytes_of_output_are_cut(sandbox: Sandbox) -> None:
    result = await call(python_tool(quick(sandbox)), "while True:\n    print('x' * 10000)")
    assert result.is_error and "bytes of output cut" in result.text and "killed" in result.text
    assert len(result.text) < sandbox.output_limit + 1000
    assert await no_workers_left()


async def test_memory_bomb_is_a_memory_error(tmp_path: Path, sandbox: Sandbox) -> None:
    small = Sandbox(sandbox.workspace, backend=sandbox.backend, limits=Limits(memory_mb=256), timeout=5)
    result = await call(python_tool(small), "blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))")
    assert result.is_error and "MemoryError" in result.text and "256 MB" in result.text


FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""


async def test_fork_bomb_is_contained_and_ended(sandbox: Sandbox) -> None:
    if os.geteuid() == 0 and find_pids_parent() is None:
        pytest.skip("root without a writable pids cgroup: a fork bomb would only be bounded by the timeout")
    capped = Sandbox(sandbox.workspace, backend=sandbox.backend, limits=Limits(max_processes=32), timeout=1.5)
    result = await call(python_tool(capped), FORK_BOMB)
    assert result.is_error and "ran longer than 1.5 s and was killed" in result.text
    assert await no_workers_left()


# -- isolation (bubblewrap) ------------------------------------------------------------------
@needs_bwrap
async def test_code_cannot_write_or_read_outside(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "ws", backend="bwrap", timeout=5)
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    tool = python_tool(sandbox)
    writes = await call(tool, "open('/etc/pymanus-x', 'w')")
    assert writes.is_error and "Read-only file system" in writes.text
    climbs = await call(tool, "import os\nos.chdir('..')\nopen('escaped.txt', 'w').write('x')\nprint(os.getcwd())")
    assert not (tmp_path / "escaped.txt").exists()
    assert climbs.text  # whatever it did, it did it in the sandbox's private scratch space
    reads = await call(tool, f"print(open({str(secret)!r}).read())")
    assert reads.is_error and "FileNotFoundError" in reads.text and "host secret" not in reads.text
    home = await call(tool, "import os\nprint(os.listdir(os.path.expanduser('~')))")
    assert "pymanus" not in home.text


@pytest.fixture
def listener() -> Iterator[tuple[int, list[socket.socket]]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


@needs_bwrap
async def test_code_cannot_reach_the_network(tmp_path: Path, listener: tuple[int, list[socket.socket]]) -> None:
    port, accepted = listener
    tool = python_tool(Sandbox(tmp_path / "ws", backend="bwrap", timeout=5))
    local = await call(tool, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)")
    assert local.is_error and ("ConnectionRefusedError" in local.text or "OSError" in local.text)
    public = await call(tool, "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)")
    assert public.is_error and "unreachable" in public.text.lower()
    await asyncio.sleep(0.2)
    assert accepted == []


async def test_the_run_state_records_when_code_first_ran_and_what_it_printed(once: Tool) -> None:
    context = ToolContext(run_id="run")
    before = time.time()
    await once.run(once.validate({"code": "1 / 0"}), context)
    assert CODE_RAN not in context.state  # a failed block computed nothing
    await once.run(once.validate({"code": "print(41 + 1)"}), context)
    first = context.state[CODE_RAN]
    assert before <= first <= time.time()
    await once.run(once.validate({"code": "print('again')"}), context)
    assert context.state[CODE_RAN] == first
    assert "42" in context.state[CODE_OUTPUT] and "again" in context.state[CODE_OUTPUT]


# -- what the code wrote ----------------------------------------------------------------
GAPPED_ROWS = (
    "rows = ['| file | lines |\\n', '|---|---|\\n', '| alpha.txt | 3 |\\n', '| beta.txt | 5 |\\n']\n"
    "open('{name}', 'w').write('\\n'.join(rows))"
)


async def test_empty_lines_code_left_between_table_rows_are_removed(once: Tool, sandbox: Sandbox) -> None:
    # word_counts: '\n'.join of rows that end in '\n' cut counts.md's table after its header.
    result = await call(once, GAPPED_ROWS.format(name="counts.md"))
    table = "| file | lines |\n|---|---|\n| alpha.txt | 3 |\n| beta.txt | 5 |\n"
    assert (sandbox.workspace / "counts.md").read_text() == table
    assert result.text.endswith(
        f"counts.md:\n```\n{table}```\n\nNote: in counts.md, the empty lines between its table rows were removed "
        "(a table has one header row and ends at an empty line)."
    )
    assert "Warning" not in result.text
    plain = await call(once, GAPPED_ROWS.format(name="counts.txt"))  # Markdown files only
    assert "empty lines" not in plain.text and "\n\n| alpha.txt" in (sandbox.workspace / "counts.txt").read_text()


async def test_a_markdown_link_out_of_the_workspace_is_not_mended(once: Tool, sandbox: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    gapped = "| a | b |\n|---|---|\n\n| 1 | 2 |\n"
    outside.write_text(gapped)
    code = f"import os\nos.symlink({str(outside)!r}, 'report.md')\nopen('notes.md', 'w').write('x')"
    result = await call(once, code)
    assert outside.read_text() == gapped
    assert "was removed" not in result.text and "were removed" not in result.text


async def test_a_header_code_wrote_above_to_markdowns_own_is_dropped(once: Tool, sandbox: Sandbox) -> None:
    code = (
        "rows = '| region | total |\\n|:---|---:|\\n| East | 4.5 |'\n"
        "open('report.md', 'w').write('| Region | Total |\\n|---|---|\\n' + rows)"
    )
    result = await call(once, code)
    assert (sandbox.workspace / "report.md").read_text() == "| region | total |\n|:---|---:|\n| East | 4.5 |"
    assert "Note: in report.md, the header row written above the table's own header was removed" in result.text


async def test_a_first_row_repeating_the_header_of_a_table_code_wrote_is_dropped(once: Tool, sandbox: Sandbox) -> None:
    # sales_report, run 220: the rows given to pd.DataFrame started with the column names.
    code = (
        "import pandas as pd\n"
        "rows = [['Region', 'Total'], ['South', 4865.83], ['West', 4329.53]]\n"
        "pd.DataFrame(rows, columns=['Region', 'Total']).to_markdown('report.md', index=False)"
    )
    result = await call(once, code)
    table = (sandbox.workspace / "report.md").read_text()
    first_cells = [line.split("|")[1].strip() for line in table.splitlines()]
    assert first_cells[:1] + first_cells[2:] == ["Region", "South", "West"]
    assert "Note: in report.md, the first row, a copy of the header, was removed" in result.text
