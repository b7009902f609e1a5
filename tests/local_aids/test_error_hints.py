"""ErrorHints: after a failed ``python`` call, a note naming the likely cause and its fix.

Every test runs code through a real Toolset with the CodeRepair and ErrorHints middleware, on a
real python tool in a sandbox without confinement (backend "none")."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from helpers.aid_cases import Aided
from pymanus.local_aids.error_hints import ErrorHints
from pymanus.messages import ToolCall
from pymanus.sandbox import Sandbox
from pymanus.tools import ToolResult
from pymanus.tools.builtin.python import python_tool


async def test_a_missing_file_note_names_the_workspace_file_of_that_name(sandbox: Sandbox) -> None:
    (sandbox.workspace / "data").mkdir(parents=True)
    (sandbox.workspace / "data" / "sales.csv").write_text("region,amount\n")
    aided = Aided([python_tool(sandbox)], sandbox.workspace, [ErrorHints()])
    failed = ToolResult(
        content="FileNotFoundError: [Errno 2] No such file or directory: 'sales.csv'",
        is_error=True,
        metadata={"status": {"error": "FileNotFoundError", "missing_file": "sales.csv"}},
    )
    hints = aided.toolset.middleware[0]
    noted = await hints.after_call(ToolCall(id="c1", name="python", arguments="{}"), failed, aided.context)
    assert noted.text.startswith(failed.text + "\n\n")
    assert "the workspace has no sales.csv, but has data/sales.csv" in noted.text
    # The same through the tool: the worker reports the missing file in the result's metadata.
    result = await aided("open('sales.csv').read()")
    assert result.is_error and result.metadata["status"]["missing_file"] == "sales.csv"
    assert "the workspace has no sales.csv, but has data/sales.csv. Use that path" in result.text


async def test_a_successful_result_is_not_annotated(sandbox: Sandbox) -> None:
    bare = Aided([python_tool(sandbox)], sandbox.workspace, [])
    hinted = Aided([python_tool(sandbox)], sandbox.workspace, [ErrorHints()])
    code = "print(sum([1, 2]))"
    assert (await hinted(code)) == (await bare(code))
    assert (await hinted(code)).text == "3"
    # Even with a status that would get a note if the call had failed.
    ok = ToolResult(content="done", metadata={"status": {"error": "FileNotFoundError", "missing_file": "a.csv"}})
    call = ToolCall(id="c1", name="python", arguments="{}")
    assert await ErrorHints().after_call(call, ok, hinted.context) is ok


async def test_a_number_where_values_were_expected_names_the_single_value(once: Aided) -> None:
    """Told only "'float' object is not iterable" for mean() of a summed float, a model runs the same code again."""
    code = "from statistics import mean\ntotals = {'Alice': 291.88}\naverage = {n: mean(t) for n, t in totals.items()}"
    result = await once(code)
    assert "TypeError: 'float' object is not iterable" in result.text
    assert "got one number (a float); the values above show which name holds it. When that number is already the " in (
        result.text
    )


async def test_a_shell_pipeline_typed_as_python_is_named(once: Aided, sandbox: Sandbox) -> None:
    (sandbox.workspace / "squares.py").write_text("print(4)\n")
    piped = await once("python squares.py | head -1")  # a shell pipeline is not run
    assert piped.is_error and "that line is a shell command, not Python" in piped.text
    assert (await once("exec(open('squares.py').read())")).text == "4"  # the way the hint gives works


@pytest.mark.parametrize(
    ("code", "holds"),
    [
        ("rows = [('a', 1)]\nfor f, l, w in rows:\n    print(f)", "3 names from a value that holds 2 values"),
        ("a, b = [1, 2, 3]", "2 names from a value that holds more values"),
        ("for name, (lines, words) in [('a', 3)]:\n    print(name)", "several names from a value that holds one int"),
    ],
)
async def test_unpacking_the_wrong_number_of_values_says_to_look_at_one_item(
    once: Aided, code: str, holds: str
) -> None:
    result = await once(code)
    assert result.is_error and f"Error (traceback above): the line unpacks {holds}" in result.text
    assert "Print one (print(items[0]))" in result.text


@pytest.mark.skipif(find_spec("pandas") is None, reason="pandas is not installed")
async def test_a_table_of_columns_of_different_lengths_names_their_lengths(session: Aided) -> None:
    # A total appended to two of three lists: pandas does not say which column is short.
    code = (
        "import pandas as pd\nfiles = ['a.txt', 'b.txt']\nlines = [3, 5]\nwords = [20, 22]\n"
        "lines.append(sum(lines))\nwords.append(sum(words))\n"
        "df = pd.DataFrame({'file': files, 'lines': lines, 'words': words})"
    )
    result = await session(code)
    assert result.is_error and "All arrays must be of the same length" in result.text
    assert "the table's columns have different lengths: file 2, lines 3, words 3." in result.text, result.text
    columns = "columns = {'file': files, 'lines': lines}\npd.DataFrame(columns)"
    assert "file 2, lines 3." in (await session(columns)).text
    other = await session("raise ValueError('All arrays must be of the same length')")
    assert "different lengths" not in other.text  # no table on the line: nothing to name


async def test_wrong_arguments_show_the_callee_parameters(session: Aided) -> None:
    code = "def area(width, height):\n    return width * height\narea(w=2, height=3)"
    result = await session(code)
    assert result.is_error and "unexpected keyword argument 'w'" in result.text
    assert "The parameters it accepts:\n    area(width, height)\n" in result.text, result.text
    missing = await session("print(area(2))")
    assert "    area(width, height)\n" in missing.text and "print(" not in missing.text.split("accepts:")[1]
    # The misnamed keyword, renamed to the parameter the call leaves unset, written out.
    renamed = "`w` is not one of them. If it is meant as `width`, the call is:\n    area(width=2, height=3)\n"
    assert renamed in result.text
    builtin = await session("sorted([2, 1], reversed=True)")
    assert "sorted(iterable, /, *, key=None, reverse=False)" in builtin.text
    assert "meant as" not in builtin.text  # no parameter left that takes a keyword


async def test_a_method_of_a_computed_object_is_named_without_calling_the_model_code(
    session: Aided, sandbox: Sandbox
) -> None:
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
    (sandbox.workspace / "tables.py").write_text(library)
    code = (
        "from tables import Table\nmade = []\n"
        "def make():\n    made.append(1)\n    return Table()\n"
        "make().to_text(index=False, file_path='t.txt')"
    )
    result = await session(code)
    assert "render() got an unexpected keyword argument 'file_path'" in result.text
    assert "    Table.to_text(buf=None, *, index=True, **kwargs)\n" in result.text, result.text
    # What each parameter takes, from the docstring: the name `buf` alone does not say it is the path.
    assert (
        "        buf: str, Path or file-like, optional - The file to write to. If None, the text is returned.\n"
        "        index: bool - Add row labels.\n"
        "`file_path` is not one of them. If it is meant as `buf`, the call is:\n"
        "    make().to_text(index=False, buf='t.txt')\n"
    ) in result.text, result.text
    assert (await session("len(made)")).text == "1"  # make() ran once: by the code, not the hint
    # A title given as `name=` is not what `buf` takes: no renamed call for it.
    titled = await session("Table().to_text(index=False, name='Totals per region')")
    assert "`name` is not one of them. Fix the call" in titled.text and "meant as" not in titled.text


async def test_a_missing_file_points_to_the_files_of_that_name(once: Aided, sandbox: Sandbox) -> None:
    texts = sandbox.workspace / "texts"
    texts.mkdir()
    (texts / "alpha.txt").write_text("a b\n")
    result = await once("open('xts/alpha.txt').read()")  # a path cut short, as [2:] on 'texts/...' does
    assert result.is_error and "FileNotFoundError" in result.text
    assert "the workspace has no xts/alpha.txt, but has texts/alpha.txt. Use that path" in result.text, result.text
    assert "os.walk" not in result.text
    nowhere = await once("open('beta.txt').read()")
    assert "the workspace has no file named beta.txt" in nowhere.text
    # find_todos: a name from os.walk opened without its folder.
    walked = await once("for folder, _, names in os.walk('.'):\n    for name in names:\n        open(name)")
    assert walked.text.endswith(
        "the workspace has no alpha.txt, but has texts/alpha.txt. Use that path (relative to the workspace folder) "
        "and run it again. os.walk and os.listdir give names without their folder: os.path.join(folder, name)."
    )


async def test_arithmetic_on_text_suggests_a_header_row_or_unconverted_values(once: Aided) -> None:
    # word_counts: sum(row[1] for row in rows) over rows that began with ['file', 'lines', 'words'].
    code = "rows = [['file', 'lines'], ['a.txt', 3]]\nprint(sum(row[1] for row in rows))"
    result = await once(code)
    assert result.is_error and result.text.endswith(
        "The code raised TypeError (traceback above): unsupported operand type(s) for +: 'int' and 'str', so one "
        "of the values is text (a str), not a number. Often a list of rows starts with a header row of column "
        "names, or values read from a file are still strings: add up only the data rows, and convert text to "
        "numbers with int() or float() first."
    )
    assert "'str' and 'int', so one of the values is text" in (await once("'3' - 1")).text
    # column_stats: statistics.mean over a csv column's strings.
    strings = await once("import statistics\nstatistics.mean(['21.5', '23.0'])")
    assert "numerator/denominator, so one of the values is text" in strings.text
    assert (
        "must be real number, not str, so one of the values is text" in (await once("import math\nmath.sqrt('4')")).text
    )
    assert "__round__ method, so one of the values is text" in (await once("round('2.5')")).text


async def test_values_json_cannot_write_get_a_conversion_hint(once: Aided) -> None:
    result = await once("import json, decimal\njson.dumps({'Ana': decimal.Decimal('2.50')})")
    assert result.is_error and "json writes dicts, lists, strings, numbers" in result.text
    assert "not Decimal" in result.text and "float(v)" in result.text


async def test_an_api_removed_from_a_library_names_what_replaces_it(once: Aided) -> None:
    pytest.importorskip("pandas")
    code = "import pandas as pd\nrows = pd.DataFrame({'a': []})\nrows = rows.append({'a': 1}, ignore_index=True)"
    result = await once(code)
    assert result.is_error and "'DataFrame' object has no attribute 'append'" in result.text
    assert "`DataFrame.append` was removed in pandas 2.0: collect the rows in a list of dicts" in result.text
    other = await once("import pandas as pd\npd.DataFrame().no_such_method()")
    assert other.is_error and "was removed" not in other.text


async def test_a_module_that_imports_itself_is_named_with_the_line(once: Aided, sandbox: Sandbox) -> None:
    code = "def word_count(text):\n    return 0\nfrom textutils import slugify\nslugify = lambda t: t\n"
    (sandbox.workspace / "textutils.py").write_text(code)
    result = await once("import textutils\nprint(textutils.slugify('a'))")
    assert result.is_error and "partially initialized module 'textutils'" in result.text
    assert "textutils.py imports itself at line 3 (`from textutils import slugify`)" in result.text
    assert "does not define" not in result.text


async def test_a_file_written_through_a_broken_string_literal_points_to_write_file(once: Aided) -> None:
    # A line break the JSON decoding put inside a string that is never closed: it cannot be repaired.
    code = "open('s.py', 'w').write('def f():\n    print(1)\nf()\n"
    result = await once(code)
    assert result.is_error and "unterminated string literal" in result.text
    assert "call write_file with it as content" in result.text


async def test_a_report_built_in_a_broken_string_literal_points_to_joining_lines(once: Aided) -> None:
    # The string is never closed, so the line breaks cannot be escaped back.
    code = "total = 3\nreport = f'| Region | Total |\n|---|---|\n| North | {total} |\nprint(report)"
    result = await once(code)
    assert result.is_error and "unterminated string literal" in result.text
    assert "'\\n'.join(lines)" in result.text and "to_markdown()" in result.text


async def test_a_name_defined_in_a_workspace_module_says_where(once: Aided, sandbox: Sandbox) -> None:
    (sandbox.workspace / "pkg").mkdir()
    (sandbox.workspace / "pkg" / "text.py").write_text("import re\n\n\ndef slugify(title):\n    return title\n")
    result = await once("print(slugify('Hello'))")
    assert result.is_error and "`slugify` is defined in pkg/text.py, not in this code: import it first" in result.text
    assert "(from pkg.text import slugify)" in result.text
    unknown = await once("print(nowhere)")
    assert unknown.is_error and "The code raised NameError" in unknown.text


async def test_a_name_error_raised_in_a_workspace_module_names_that_module(once: Aided, sandbox: Sandbox) -> None:
    # A module-level statement that fails in a workspace module must not read as a name to import.
    body = "def slugify(title):\n    result = title.lower()\n    return result\nresult = result[:-1]\n"
    (sandbox.workspace / "textutils.py").write_text(body)
    result = await once("from textutils import slugify\nprint(slugify('Hello'))")
    assert result.is_error and result.text.endswith(
        "The NameError is in textutils.py, line 4 (traceback above), a workspace file the code imports, not in the "
        "code: `result` is not defined at that point of textutils.py. Fix textutils.py (edit_file), then run this "
        "again."
    )
    (sandbox.workspace / "textutils.py").write_text("def slugify(title):\n    return titel\n")
    inside = await once("from textutils import slugify\nprint(slugify('Hello'))")
    assert inside.is_error and "The NameError is in textutils.py, line 2" in inside.text
    # A workspace module that uses a standard module without importing it.
    (sandbox.workspace / "textutils.py").write_text("def slugify(title):\n    return re.sub('[^a-z]+', '-', title)\n")
    module = await once("from textutils import slugify\nprint(slugify('Hello'))")
    assert module.is_error and module.text.endswith(
        "The NameError is in textutils.py, line 2 (traceback above): `re` is a standard module that textutils.py "
        "does not import. Add the import as its first line: edit_file with path 'textutils.py', old_text \"\", "
        'insert_line 0 and new_text "import re"; then run this again.'
    )


async def test_a_missing_import_in_a_workspace_module_names_that_module(once: Aided, sandbox: Sandbox) -> None:
    # A workspace module importing a name that is neither installed nor written: the module's line is what to fix.
    (sandbox.workspace / "weather").mkdir()
    (sandbox.workspace / "weather" / "__init__.py").write_text("from weather.cli import main\n")
    (sandbox.workspace / "weather" / "cli.py").write_text("import main\n")
    result = await once("import weather.cli")
    assert result.is_error and "No module named 'main'" in result.text
    # The tool's own note says only that `main` is not installed; the hint names the line to fix.
    assert result.text.endswith(
        "The ModuleNotFoundError is in weather/cli.py, line 1 (traceback above), a workspace file the code "
        "imports: it imports `main`, which is neither a module in the workspace nor an installed library "
        "(packages cannot be installed here). Fix that line of weather/cli.py (edit_file): remove it, or import "
        "what the file needs from the workspace module that defines it."
    )
    (sandbox.workspace / "weather" / "cli.py").write_text("import main\n\n\ndef main():\n    print('ready')\n")
    itself = await once("import weather.cli")
    assert itself.text.endswith("`main` is defined in weather/cli.py itself, so remove the import.")
    (sandbox.workspace / "weather" / "__init__.py").write_text("")
    (sandbox.workspace / "weather" / "app.py").write_text("import main\n")
    elsewhere = await once("import weather.app")
    assert elsewhere.text.endswith(
        "`main` is defined in weather/cli.py, so import it from there (from weather.cli import main)."
    )
    # Imported by the code itself, a missing module is still a library the sandbox lacks.
    direct = await once("import main")
    assert direct.is_error and "'main' is not installed in the sandbox" in direct.text


async def test_a_comprehension_variable_used_outside_its_brackets_is_named(once: Aided) -> None:
    code = (
        "lines = ['a b', 'c']\nwords = sum(len(line.split()) for line in lines)\nprint(len(lines), len(line.split()))"
    )
    result = await once(code)
    assert result.is_error and "NameError: name 'line' is not defined" in result.text
    assert (
        "`line` is the loop variable of the comprehension on line 2 and exists only inside its brackets"
    ) in result.text
    plain = await once("print([x for x in range(3)], y)")
    assert plain.is_error and "loop variable" not in plain.text


async def test_an_unclosed_bracket_is_named(once: Aided) -> None:
    result = await once("print(max([1, 2])")
    assert result.is_error and "a bracket it opens is never closed" in result.text


async def test_a_method_imported_from_a_module_is_named_as_the_method_it_is(session: Aided, sandbox: Sandbox) -> None:
    # A test method imported from a test module is a method of its TestCase, not a function to write.
    test = "import unittest\n\nclass StatsTest(unittest.TestCase):\n    def test_median_even(self):\n        pass\n"
    (sandbox.workspace / "test_stats.py").write_text(test)
    result = await session("from test_stats import test_median_even")
    assert result.is_error and result.text.endswith(
        "`test_median_even` in test_stats.py is a method of the class StatsTest, not a name the module defines, "
        "so it cannot be imported: import StatsTest, or call it on an instance, StatsTest().test_median_even(...). "
        "Run the tests with `python -m unittest test_stats`."
    )


async def test_a_name_missing_from_a_workspace_module_says_where_to_write_it(session: Aided, sandbox: Sandbox) -> None:
    workspace = sandbox.workspace
    (workspace / "textutils.py").write_text("def word_count(text):\n    return len(text.split())\n")
    result = await session("from textutils import slugify")
    assert result.is_error
    assert "textutils.py in the workspace does not define `slugify` yet" in result.text
    assert 'edit_file with path "textutils.py", old_text "" and the new code as new_text' in result.text
    result = await session("import textutils\ntextutils.slugify('A b')")
    assert "textutils.py in the workspace does not define `slugify`" in result.text
    # Defined in another module of the workspace: import it from there, or write it where the task wants it.
    (sandbox.workspace / "slugs.py").write_text("def slugify(title):\n    return title\n")
    result = await session("from textutils import slugify")
    assert result.text.endswith(
        "textutils.py in the workspace does not define `slugify`; slugs.py does. If the task asks for it in "
        "textutils.py, write it there (edit_file with an empty old_text adds code after the last line); otherwise "
        "import it from where it is: from slugs import slugify."
    )
    # A library's missing name is an ordinary error: nothing to write into the workspace.
    result = await session("from json import slugify")
    assert result.is_error and "does not define" not in result.text and "ImportError" in result.text


async def test_a_package_importing_a_module_it_lacks_says_to_write_it_or_remove_the_import(
    session: Aided,
    sandbox: Sandbox,
) -> None:
    package = sandbox.workspace / "weather"
    package.mkdir()
    (package / "__init__.py").write_text("from . import cli, utils\n")
    (package / "cli.py").write_text("def main():\n    print('ready')\n")
    result = await session("import weather")
    assert result.is_error
    # The workspace module's frame is shown, by its relative path: it holds the import to fix.
    assert 'File "weather/__init__.py", line 1, in <module>\n    from . import cli, utils\n' in result.text
    assert result.text.endswith(
        "The package weather has no `utils`: weather/__init__.py does not define it and there is no "
        "weather/utils.py. Importing `utils` from the package (from . import utils) needs one of them: if the "
        "task asks for a module weather/utils.py, write it first (write_file with its whole content); otherwise "
        "remove `utils` from that import (traceback above)."
    )
    (package / "utils.py").write_text("")
    assert not (await session("import weather")).is_error
    # Reading a name the package lacks is no import to remove: define it, or use what is there.
    result = await session("import weather\nprint(weather.__version__)")
    assert result.text.endswith(
        "The package weather has no `__version__`: weather/__init__.py does not define it. Define it there if "
        "the task asks for it; otherwise use only names the package's files define (read_file them)."
    )


async def test_a_function_imported_from_the_package_is_found_or_defined_where_it_belongs(
    session: Aided,
    sandbox: Sandbox,
) -> None:
    # project_layout: "from . import main" where main is cli.py's function, or as cli.py's whole content.
    package = sandbox.workspace / "weather"
    package.mkdir()
    (package / "__init__.py").write_text("from . import main\n")
    (package / "cli.py").write_text("def main():\n    print('Weather CLI ready')\n")
    result = await session("import weather")
    assert result.is_error and result.text.endswith(
        "The package weather has no `main`: weather/__init__.py does not define it; weather/cli.py does. Import it "
        "from that module: from .cli import main (inside the package), or from weather.cli import main."
    )
    (package / "__init__.py").write_text("from .cli import main\n")
    (package / "cli.py").write_text("from . import main\n")
    result = await session("import weather.cli")
    assert result.is_error and result.text.endswith(
        "The package weather has no `main`: weather/__init__.py does not define it, and no module of the package "
        "does. weather/cli.py imports `main` from its own package: if weather/cli.py should have `main`, define "
        "it there instead (def main(): with the parameters it takes, and its body), and remove that import; "
        "write_file weather/cli.py with its whole content."
    )
    (package / "cli.py").write_text("def main():\n    print('Weather CLI ready')\n")
    assert (await session("from weather.cli import main\nmain()")).text == "Weather CLI ready"


async def test_text_given_where_a_file_is_read_names_json_loads(session: Aided, sandbox: Sandbox) -> None:
    (sandbox.workspace / "orders.json").write_text('[{"total": 2.5}]')
    result = await session("import json\nprint(json.load(open('orders.json').read()))")
    assert result.is_error and "parse it with json.loads(read_file(path))" in result.text
    fixed = await session("import json\nprint(json.loads(read_file('orders.json')))")
    assert fixed.text == "[{'total': 2.5}]"


async def test_a_block_without_a_body_says_so(once: Aided) -> None:
    result = await once("def area(r):\n    # the code goes here\n")
    assert result.is_error and "IndentationError" in result.text
    assert "has no body. Write its statements under it, indented" in result.text
    assert "one statement per line" not in result.text


async def test_syntax_errors_get_the_one_line_note_only_for_code_chained_on_one_line(once: Aided) -> None:
    plain = await once("total = = 1")
    assert plain.is_error and "SyntaxError" in plain.text and "one statement per line" not in plain.text
    chained = await once("x = 1; if x print(x)")
    assert chained.is_error and "Write one statement per line" in chained.text
