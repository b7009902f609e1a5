"""The python tool's sessions: state kept per run, restarts, and workers that never outlive them."""

from __future__ import annotations

import asyncio

import pytest

from helpers.python_cases import call, no_workers_left, quick, worker_processes
from pymanus.sandbox import Sandbox
from pymanus.tools import Tool, ToolContext, ToolResult
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.builtin.python_state import CODE_OUTPUT, CODE_RAN
from pymanus.tools.builtin.python_worker import cell_name


# -- sessions ----------------------------------------------------------------------------
async def test_one_shot_calls_share_nothing(once: Tool) -> None:
    await call(once, "secret = 41")
    result = await call(once, "secret + 1")
    assert result.is_error and "NameError" in result.text


async def test_session_keeps_variables(runner: PythonRunner) -> None:
    await call(runner.tool, "import math\ntotal = 40")
    result = await call(runner.tool, "total + 2")
    assert result.text == "42"
    assert (await call(runner.tool, "math.sqrt(16)")).text == "4.0"


async def test_a_block_that_replaces_the_output_streams_does_not_hide_later_errors(runner: PythonRunner) -> None:
    replaced = await call(runner.tool, "import io, sys\nsys.stdout = io.StringIO()\nsys.stderr = io.StringIO()\n1 / 0")
    assert replaced.is_error and "ZeroDivisionError: division by zero" in replaced.text
    later = await call(runner.tool, "print('seen')\nundefined_name")
    assert later.is_error and "seen" in later.text and "NameError: name 'undefined_name'" in later.text


async def test_code_written_as_a_script_finds_the_workspace_next_to_its_file(once: Tool, sandbox: Sandbox) -> None:
    (sandbox.workspace / "data.txt").write_text("42\n")
    result = await call(once, "import os\nprint(open(os.path.join(os.path.dirname(__file__), 'data.txt')).read())")
    assert not result.is_error and result.text.strip() == "42"


async def test_sessions_are_per_run(runner: PythonRunner) -> None:
    await call(runner.tool, "owner = 'a'", run_id="a")
    other = await call(runner.tool, "owner", run_id="b")
    assert other.is_error and "NameError" in other.text
    assert (await call(runner.tool, "owner", run_id="a")).text == "'a'"


async def test_session_restarts_after_a_crash_and_says_so(runner: PythonRunner) -> None:
    await call(runner.tool, "kept = 1")
    crash = await call(runner.tool, "import os\nprint('before', flush=True)\nos._exit(9)")
    assert crash.is_error and "before" in crash.text
    assert "ended before the code finished (exit code 9)" in crash.text and "variables are lost" in crash.text
    after = await call(runner.tool, "kept")
    assert "new Python session" in after.text and "NameError" in after.text
    assert (await call(runner.tool, "kept = 2\nkept")).text == "2"


async def test_session_restarts_after_a_timeout(sandbox: Sandbox) -> None:
    runner = PythonRunner(quick(sandbox), session=True)
    await call(runner.tool, "kept = 1")
    stuck = await call(runner.tool, "while True:\n    pass")
    assert stuck.is_error and "killed" in stuck.text and "variables are lost" in stuck.text
    after = await call(runner.tool, "print('alive')")
    assert "new Python session" in after.text and "alive" in after.text
    await runner.aclose()


async def test_session_reset(runner: PythonRunner) -> None:
    await call(runner.tool, "kept = 1")
    result = await call(runner.tool, "'kept' in dir()", reset=True)
    assert "fresh Python session" in result.text and "False" in result.text


async def test_session_memory_error_keeps_the_session(runner: PythonRunner, sandbox: Sandbox) -> None:
    await call(runner.tool, "kept = 'still here'")
    result = await call(runner.tool, "x = bytearray(10 * 1024**3)")
    assert result.is_error and "MemoryError" in result.text
    assert (await call(runner.tool, "kept")).text == "'still here'"


async def test_aclose_stops_every_worker(sandbox: Sandbox) -> None:
    runner = PythonRunner(sandbox, session=True)
    await call(runner.tool, "a = 1", run_id="one")
    await call(runner.tool, "b = 1", run_id="two")
    assert len(worker_processes()) >= 2
    await runner.aclose()
    assert await no_workers_left()
    await runner.aclose()  # closing twice is fine


async def test_a_cancelled_call_discards_the_session(runner: PythonRunner) -> None:
    await call(runner.tool, "kept = 1")
    task = asyncio.ensure_future(call(runner.tool, "import time\ntime.sleep(30)"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    after = await call(runner.tool, "print('fresh')")
    assert "new Python session" in after.text and "fresh" in after.text
    await runner.aclose()
    assert await no_workers_left()


async def test_line_breaks_inside_string_literals_are_repaired(once: Tool) -> None:
    result = await call(once, "n = 2\nprint(f'Count:\n{n}')")
    assert not result.is_error, result.text
    assert "Count:\n2" in result.text
    assert "line breaks inside string literals" in result.text


async def test_backspaces_from_json_run_as_the_regex_escapes_meant(once: Tool) -> None:
    result = await call(once, "import re\nprint(re.findall(r'\x08\\w+\x08', 'two words'))")
    assert not result.is_error, result.text
    assert "['two', 'words']" in result.text


async def test_blocks_nested_on_one_line_are_repaired(runner: PythonRunner) -> None:
    (runner.sandbox.workspace / "a.py").write_text("# TODO\n")
    code = "import os\nfor root, dirs, files in os.walk('.'): for name in files: if name.endswith('.py'): print(name)"
    result = await call(runner.tool, code)
    assert not result.is_error and result.text.startswith("Note: your code chained for/if/with statements")
    assert result.text.endswith("in indented blocks.\n\na.py")


async def test_the_same_failing_code_reads_the_same(runner: PythonRunner) -> None:
    """A repeated failing call must look repeated (the agent's repeat guard compares results)."""
    first = await call(runner.tool, "1 / 0")
    await call(runner.tool, "x = 1")
    again = await call(runner.tool, "1 / 0")
    assert first.is_error and first.text == again.text


async def test_library_frames_are_left_out_of_tracebacks(once: Tool) -> None:
    code = "import json\njson.loads('{bad')"
    result = await call(once, code)
    assert result.is_error
    assert f'File "{cell_name(code)}", line 2' in result.text
    assert "inside libraries omitted" in result.text
    assert "json/decoder.py" not in result.text
    assert "JSONDecodeError: Expecting property name" in result.text


async def test_file_helpers_are_predefined(once: Tool, sandbox: Sandbox) -> None:
    code = "write_file('out/a.txt', 42)\nprint(read_file('out/a.txt'))"
    result = await call(once, code)
    assert not result.is_error, result.text
    assert "wrote 2 characters to out/a.txt" in result.text and "42" in result.text
    assert (sandbox.workspace / "out" / "a.txt").read_text() == "42"
    assert "write_file(path, text)" in once.description
    # find_todos: the 1.5B wrote its list a line at a time with append=True, refused before.
    loop = "for path in ['a.py', 'b.py']:\n    write_file('out/a.txt', path + '\\n', append=True)"
    added = await call(once, loop)
    assert not added.is_error and "added 5 characters to out/a.txt" in added.text
    assert (sandbox.workspace / "out" / "a.txt").read_text() == "42a.py\nb.py\n"


async def test_read_file_helper_takes_the_read_file_tools_arguments(once: Tool, sandbox: Sandbox) -> None:
    (sandbox.workspace / "rows.txt").write_text("".join(f"row {n}\n" for n in range(1, 31)))
    code = (
        "print(repr(read_file('rows.txt', start_line=2, end_line=3)))\n"
        "print(len(read_file('rows.txt', preview=True).splitlines()), len(read_file('rows.txt').splitlines()))\n"
        "print(repr(read_file('rows.txt', start_line=30)))"
    )
    result = await call(once, code)
    assert not result.is_error, result.text
    assert "'row 2\\nrow 3\\n'\n20 30\n'row 30\\n'" in result.text


async def test_edit_file_helper_replaces_text(once: Tool, sandbox: Sandbox) -> None:
    """Small models call the file tools from code: edit_file works there too."""
    (sandbox.workspace / "cart.py").write_text("from pricing import calc_tot\nx = calc_tot([])\n")
    twice = await call(once, "edit_file('cart.py', 'calc_tot', 'compute_total')")
    assert twice.is_error and "occurs 2 times in cart.py: pass replace_all=True" in twice.text
    done = await call(once, "edit_file('cart.py', 'calc_tot', 'compute_total', replace_all=True)")
    assert not done.is_error and "edited cart.py: replaced 2 occurrences" in done.text
    assert (sandbox.workspace / "cart.py").read_text() == "from pricing import compute_total\nx = compute_total([])\n"
    missing = await call(once, "edit_file('cart.py', 'calc_tot', 'x')")
    assert missing.is_error and "old_text 'calc_tot' was not found in cart.py" in missing.text
    # rename_function: a loop over every file stopped at the first one without the old name.
    (sandbox.workspace / "main.py").write_text("print(calc_tot([]))\n")
    loop = "for name in ('cart.py', 'main.py'):\n    edit_file(name, 'calc_tot', 'compute_total', replace_all=True)"
    renamed = await call(once, loop)
    assert not renamed.is_error and "cart.py has no 'calc_tot': left as it is" in renamed.text
    assert (sandbox.workspace / "main.py").read_text() == "print(compute_total([]))\n"
    assert "edit_file(path, old_text, new_text, replace_all=False)" in once.description


async def test_a_name_defined_in_a_workspace_module_says_where(once: Tool, sandbox: Sandbox) -> None:
    (sandbox.workspace / "pkg").mkdir()
    (sandbox.workspace / "pkg" / "text.py").write_text("import re\n\n\ndef slugify(title):\n    return title\n")
    result = await call(once, "print(slugify('Hello'))")
    assert result.is_error and "`slugify` is defined in pkg/text.py, not in this code: import it first" in result.text
    assert "(from pkg.text import slugify)" in result.text
    unknown = await call(once, "print(nowhere)")
    assert unknown.is_error and "The code raised NameError" in unknown.text


async def test_a_name_error_raised_in_a_workspace_module_names_that_module(once: Tool, sandbox: Sandbox) -> None:
    # add_function: the 1.5B appended `result = result[:-1]` to textutils.py, and was told to import `result`.
    body = "def slugify(title):\n    result = title.lower()\n    return result\nresult = result[:-1]\n"
    (sandbox.workspace / "textutils.py").write_text(body)
    result = await call(once, "from textutils import slugify\nprint(slugify('Hello'))")
    assert result.is_error and result.text.endswith(
        "The NameError is in textutils.py, line 4 (traceback above), a workspace file the code imports, not in the "
        "code: `result` is not defined at that point of textutils.py. Fix textutils.py (edit_file), then run this "
        "again."
    )
    (sandbox.workspace / "textutils.py").write_text("def slugify(title):\n    return titel\n")
    inside = await call(once, "from textutils import slugify\nprint(slugify('Hello'))")
    assert inside.is_error and "The NameError is in textutils.py, line 2" in inside.text
    # add_function run 83: the 1.5B's slugify used re without importing it, and never added the import.
    (sandbox.workspace / "textutils.py").write_text("def slugify(title):\n    return re.sub('[^a-z]+', '-', title)\n")
    module = await call(once, "from textutils import slugify\nprint(slugify('Hello'))")
    assert module.is_error and module.text.endswith(
        "The NameError is in textutils.py, line 2 (traceback above): `re` is a standard module that textutils.py "
        "does not import. Add the import as its first line: edit_file with path 'textutils.py', old_text \"\", "
        'insert_line 0 and new_text "import re"; then run this again.'
    )


async def test_a_missing_import_in_a_workspace_module_names_that_module(once: Tool, sandbox: Sandbox) -> None:
    # project_layout run 97: weather/cli.py began with `import main`, and the 1.5B was told that `main` is
    # a library missing from the sandbox, so it rewrote the files that were right.
    (sandbox.workspace / "weather").mkdir()
    (sandbox.workspace / "weather" / "__init__.py").write_text("from weather.cli import main\n")
    (sandbox.workspace / "weather" / "cli.py").write_text("import main\n")
    result = await call(once, "import weather.cli")
    assert result.is_error and "No module named 'main'" in result.text
    assert "not installed in the sandbox" not in result.text
    assert result.text.endswith(
        "The ModuleNotFoundError is in weather/cli.py, line 1 (traceback above), a workspace file the code "
        "imports: it imports `main`, which is neither a module in the workspace nor an installed library "
        "(packages cannot be installed here). Fix that line of weather/cli.py (edit_file): remove it, or import "
        "what the file needs from the workspace module that defines it."
    )
    (sandbox.workspace / "weather" / "cli.py").write_text("import main\n\n\ndef main():\n    print('ready')\n")
    itself = await call(once, "import weather.cli")
    assert itself.text.endswith("`main` is defined in weather/cli.py itself, so remove the import.")
    (sandbox.workspace / "weather" / "__init__.py").write_text("")
    (sandbox.workspace / "weather" / "app.py").write_text("import main\n")
    elsewhere = await call(once, "import weather.app")
    assert elsewhere.text.endswith(
        "`main` is defined in weather/cli.py, so import it from there (from weather.cli import main)."
    )
    # Imported by the code itself, a missing module is still a library the sandbox lacks.
    direct = await call(once, "import main")
    assert direct.is_error and "'main' is not installed in the sandbox" in direct.text


async def test_a_comprehension_variable_used_outside_its_brackets_is_named(once: Tool) -> None:
    code = (
        "lines = ['a b', 'c']\nwords = sum(len(line.split()) for line in lines)\nprint(len(lines), len(line.split()))"
    )
    result = await call(once, code)
    assert result.is_error and "NameError: name 'line' is not defined" in result.text
    assert (
        "`line` is the loop variable of the comprehension on line 2 and exists only inside its brackets"
    ) in result.text
    plain = await call(once, "print([x for x in range(3)], y)")
    assert plain.is_error and "loop variable" not in plain.text


async def test_an_unclosed_bracket_is_named(once: Tool) -> None:
    result = await call(once, "print(max([1, 2])")
    assert result.is_error and "a bracket it opens is never closed" in result.text


async def test_importing_a_predefined_helper_says_it_is_defined(once: Tool) -> None:
    result = await call(once, "from read_file import read_file")
    assert result.is_error and "read_file is not a module: it is a function already defined here" in result.text
    assert "not installed" not in result.text


async def test_common_modules_are_already_imported(once: Tool) -> None:
    result = await call(once, "print(json.dumps({'m': statistics.median([1, 3])}))")
    assert not result.is_error, result.text
    assert '{"m": 2.0}' in result.text
    assert "Already imported: json" in once.description


async def test_a_method_imported_from_a_module_is_named_as_the_method_it_is(runner: PythonRunner) -> None:
    # fix_failing_test: the 1.5B imported a TestCase's method from the test module, was told to write it
    # there, and added a copy to the test file.
    test = "import unittest\n\nclass StatsTest(unittest.TestCase):\n    def test_median_even(self):\n        pass\n"
    (runner.sandbox.workspace / "test_stats.py").write_text(test)
    result = await call(runner.tool, "from test_stats import test_median_even")
    assert result.is_error and result.text.endswith(
        "`test_median_even` in test_stats.py is a method of the class StatsTest, not a name the module defines, "
        "so it cannot be imported: import StatsTest, or call it on an instance, StatsTest().test_median_even(...). "
        "Run the tests with `python -m unittest test_stats`."
    )


async def test_a_name_missing_from_a_workspace_module_says_where_to_write_it(runner: PythonRunner) -> None:
    workspace = runner.sandbox.workspace
    (workspace / "textutils.py").write_text("def word_count(text):\n    return len(text.split())\n")
    result = await call(runner.tool, "from textutils import slugify")
    assert result.is_error
    assert "textutils.py in the workspace does not define `slugify` yet" in result.text
    assert 'edit_file with path "textutils.py", old_text "" and the new code as new_text' in result.text
    result = await call(runner.tool, "import textutils\ntextutils.slugify('A b')")
    assert "textutils.py in the workspace does not define `slugify`" in result.text
    # Defined in another module of the workspace: import it from there, or write it where the task wants it.
    (runner.sandbox.workspace / "slugs.py").write_text("def slugify(title):\n    return title\n")
    result = await call(runner.tool, "from textutils import slugify")
    assert result.text.endswith(
        "textutils.py in the workspace does not define `slugify`; slugs.py does. If the task asks for it in "
        "textutils.py, write it there (edit_file with an empty old_text adds code after the last line); otherwise "
        "import it from where it is: from slugs import slugify."
    )
    # A library's missing name is an ordinary error: nothing to write into the workspace.
    result = await call(runner.tool, "from json import slugify")
    assert result.is_error and "does not define" not in result.text and "ImportError" in result.text


async def test_a_package_importing_a_module_it_lacks_says_to_write_it_or_remove_the_import(
    runner: PythonRunner,
) -> None:
    package = runner.sandbox.workspace / "weather"
    package.mkdir()
    (package / "__init__.py").write_text("from . import cli, utils\n")
    (package / "cli.py").write_text("def main():\n    print('ready')\n")
    result = await call(runner.tool, "import weather")
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
    assert not (await call(runner.tool, "import weather")).is_error
    # Reading a name the package lacks is no import to remove: define it, or use what is there.
    result = await call(runner.tool, "import weather\nprint(weather.__version__)")
    assert result.text.endswith(
        "The package weather has no `__version__`: weather/__init__.py does not define it. Define it there if "
        "the task asks for it; otherwise use only names the package's files define (read_file them)."
    )


async def test_a_function_imported_from_the_package_is_found_or_defined_where_it_belongs(
    runner: PythonRunner,
) -> None:
    # project_layout: "from . import main" where main is cli.py's function, or as cli.py's whole content.
    package = runner.sandbox.workspace / "weather"
    package.mkdir()
    (package / "__init__.py").write_text("from . import main\n")
    (package / "cli.py").write_text("def main():\n    print('Weather CLI ready')\n")
    result = await call(runner.tool, "import weather")
    assert result.is_error and result.text.endswith(
        "The package weather has no `main`: weather/__init__.py does not define it; weather/cli.py does. Import it "
        "from that module: from .cli import main (inside the package), or from weather.cli import main."
    )
    (package / "__init__.py").write_text("from .cli import main\n")
    (package / "cli.py").write_text("from . import main\n")
    result = await call(runner.tool, "import weather.cli")
    assert result.is_error and result.text.endswith(
        "The package weather has no `main`: weather/__init__.py does not define it, and no module of the package "
        "does. weather/cli.py imports `main` from its own package: if weather/cli.py should have `main`, define "
        "it there instead (def main(): with the parameters it takes, and its body), and remove that import; "
        "write_file weather/cli.py with its whole content."
    )
    (package / "cli.py").write_text("def main():\n    print('Weather CLI ready')\n")
    assert (await call(runner.tool, "from weather.cli import main\nmain()")).text == "Weather CLI ready"


async def test_an_edited_workspace_module_is_imported_afresh(runner: PythonRunner) -> None:
    module = runner.sandbox.workspace / "textutils.py"
    module.write_text("def shout(text):\n    return text\n")
    assert (await call(runner.tool, "import textutils\ntextutils.shout('hi')")).text == "'hi'"
    module.write_text("def shout(text):\n    return text.upper() + '!'\n")  # as edit_file would
    result = await call(runner.tool, "import textutils\ntextutils.shout('hi')")
    assert result.text == "'HI!'"  # not the module cached by the session
    (runner.sandbox.workspace / "fresh.py").write_text("VALUE = 7\n")  # created after the session started
    assert (await call(runner.tool, "from fresh import VALUE\nVALUE")).text == "7"


async def test_files_the_code_wrote_are_reported(runner: PythonRunner) -> None:
    workspace = runner.sandbox.workspace
    (workspace / "kept.txt").write_text("unchanged\n")
    code = "import os\nos.makedirs('out', exist_ok=True)\nwrite_file('out/top5.csv', 'a,b\\n1,2\\n')"
    result = await call(runner.tool, code)
    assert "Files written: out/top5.csv (2 lines).\n\nout/top5.csv:\n```\na,b\n1,2\n```" in result.text
    assert "kept.txt" not in result.text
    printed = await call(runner.tool, "write_file('same.txt', 'shown once')\nprint(read_file('same.txt'))")
    assert printed.text.count("shown once") == 1  # what the code printed is not shown again
    result = await call(runner.tool, "print(read_file('out/top5.csv').count(','))")
    assert result.text == "2"  # reading writes nothing, so nothing is reported


async def test_unittest_main_finds_the_tests_the_code_defines(runner: PythonRunner) -> None:
    code = (
        "import unittest\n"
        "class T(unittest.TestCase):\n"
        "    def test_ok(self):\n"
        "        self.assertEqual(1 + 1, 2)\n"
        "    def test_bad(self):\n"
        "        self.assertEqual(1 + 1, 3)\n"
        "unittest.main()"
    )
    result = await call(runner.tool, code)
    assert "Ran 2 tests" in result.text and "FAILED (failures=1)" in result.text
    assert result.is_error and "exited with status 1" in result.text
    result = await call(runner.tool, "import pickle\ndef f():\n    return 7\npickle.loads(pickle.dumps(f))()")
    assert result.text == "7"


async def test_a_python_command_line_runs_as_a_command(runner: PythonRunner, sandbox: Sandbox) -> None:
    """Small models type terminal commands into the tool: they mean what they say."""
    (sandbox.workspace / "squares.py").write_text("for n in range(1, 4):\n    print(n * n)\n")
    result = await call(runner.tool, "python squares.py")
    assert not result.is_error and result.text == "Ran `python squares.py` as a command.\n\n1\n4\n9"
    saved = await call(runner.tool, "python3 squares.py > out/squares.txt")
    assert not saved.is_error and "Files written: out/squares.txt (3 lines)" in saved.text
    assert (sandbox.workspace / "out" / "squares.txt").read_text() == "1\n4\n9\n"
    (sandbox.workspace / "test_sq.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        self.assertEqual(1, 2)\n"
    )
    failing = await call(runner.tool, "python -m unittest test_sq")
    assert failing.is_error and "AssertionError: 1 != 2" in failing.text and "exit code 1" in failing.text
    # A block that ends with the command to run it: the code, then the command, then what the call wrote.
    both = await call(runner.tool, "open('squares.py', 'w').write('print(7)')\npython squares.py")
    assert not both.is_error, both.text
    assert both.text.startswith("8\n\nRan `python squares.py` as a command.\n\n7\n\nFiles written: squares.py (1 line)")
    broken = await call(runner.tool, "1 / 0\npython squares.py")  # the command runs only after the code worked
    assert broken.is_error and "ZeroDivisionError" in broken.text and "as a command" not in broken.text
    # The session is untouched: commands run in their own process.
    await call(runner.tool, "kept = 5")
    await call(runner.tool, "python squares.py")
    assert (await call(runner.tool, "kept")).text == "5"


async def test_a_script_that_only_defines_its_function_is_told_to_call_it(once: Tool, sandbox: Sandbox) -> None:
    """squares_script: the 1.5B's squares.py defined squares() and never called it; running it printed nothing."""
    (sandbox.workspace / "squares.py").write_text(
        '"""Squares."""\nimport math\nLIMIT = 10\n\ndef squares():\n    for n in range(1, 4):\n        print(n * n)\n'
    )
    result = await call(once, "python squares.py > squares.txt")
    assert not result.is_error and (sandbox.workspace / "squares.txt").read_text() == ""
    assert (
        "squares.py only defines squares() and never calls it, so running it does nothing: "
        "add the call `squares()` as the last line of squares.py (edit_file), then run it again."
    ) in result.text
    (sandbox.workspace / "squares.py").write_text("def squares():\n    return 1\n\nresult = squares()\n")
    quiet = await call(once, "python squares.py")  # it calls squares(), it just prints nothing
    assert "(it printed nothing)" in quiet.text and "never calls" not in quiet.text
    (sandbox.workspace / "squares.py").write_text(
        "def squares():\n    print(1)\n\nif __name__ == '__main__':\n    squares()\n"
    )
    assert "never calls" not in (await call(once, "python squares.py")).text


async def test_command_lines_that_are_not_commands(once: Tool, sandbox: Sandbox) -> None:
    missing = await call(once, "python nothing_here.py")
    assert missing.is_error and "nothing_here.py, which does not exist in the workspace yet" in missing.text
    escape = await call(once, "python -c 'print(1)' > ../outside.txt")
    assert escape.is_error and not (sandbox.workspace.parent / "outside.txt").exists()
    (sandbox.workspace / "squares.py").write_text("print(4)\n")
    piped = await call(once, "python squares.py | head -1")  # a shell pipeline is not run
    assert piped.is_error and "that line is a shell command, not Python" in piped.text
    assert (await call(once, "exec(open('squares.py').read())")).text == "4"  # the way the hint gives works
    assert (await call(once, "python = 3\npython")).text == "3"  # valid Python stays Python


async def test_code_listing_a_folder_with_nested_files_gets_a_note(runner: PythonRunner) -> None:
    (runner.sandbox.workspace / "src" / "app").mkdir(parents=True)
    (runner.sandbox.workspace / "src" / "app" / "main.py").write_text("# TODO\n")
    result = await call(runner.tool, "import os\nprint([f for f in os.listdir('src') if f.endswith('.py')])")
    assert result.text.startswith("[]")
    assert result.text.endswith(
        "Note: your code's line 2 lists 'src' with os.listdir, which gives the names in that one folder only, "
        "not the files in its subfolders (such as src/app/main.py); os.walk('src') visits them all."
    )


async def test_code_defining_a_workspace_modules_function_again_gets_a_note(runner: PythonRunner) -> None:
    # fix_failing_test: the 1.5B "fixed" median by redefining it in a block, and stats.py kept its bug.
    (runner.sandbox.workspace / "stats.py").write_text("def median(values):\n    return values[0]\n")
    code = (
        "from stats import median\n\ndef median(values):\n    return sorted(values)[len(values) // 2]\n\n"
        "print(median([3, 1, 2]))"
    )
    result = await call(runner.tool, code)
    assert result.text.startswith("2")
    assert result.text.endswith(
        "Note: your code's line 3 defines `median` in this Python session only: stats.py keeps its own `median`, "
        "and code that imports it from there (its tests) still gets that one; to change it, edit stats.py "
        "(edit_file)."
    )
    only = await call(runner.tool, "def slugify(title):\n    return title.lower()")
    assert "line 1 defines `slugify` in this Python session only, and the code runs nothing" in only.text


async def test_code_that_merges_its_own_output_again_gets_a_note(runner: PythonRunner) -> None:
    # merge_csv: told to reorder merged.csv's columns, the 1.5B merged merged.csv with the customers again.
    workspace = runner.sandbox.workspace
    (workspace / "orders.csv").write_text("order_id,customer_id\n1,7\n")
    (workspace / "customers.csv").write_text("customer_id,name\n7,Ana\n")
    merge = (
        "import csv\nrows = list(csv.reader(open('{source}')))\nnames = list(csv.reader(open('customers.csv')))\n"
        "with open('merged.csv', 'w') as f:\n    f.write(str(rows + names))"
    )
    context = ToolContext(run_id="merge", workspace=workspace)

    async def run(code: str) -> ToolResult:
        return await runner.tool.run(runner.tool.validate({"code": code}), context)

    first = await run(merge.format(source="orders.csv"))
    assert not first.is_error and "Note:" not in first.text
    again = await run(merge.format(source="merged.csv"))
    assert (
        "Note: your code's line 2 reads merged.csv, which earlier code of this run wrote, then writes it" in again.text
    )


async def test_selecting_a_column_the_code_made_the_index_gets_a_note(runner: PythonRunner) -> None:
    (runner.sandbox.workspace / "orders.csv").write_text("order_id,amount\n5001,9.5\n")
    code = "import pandas as pd\norders = pd.read_csv('orders.csv', index_col='order_id')\nprint(orders[['order_id']])"
    result = await call(runner.tool, code)
    assert result.is_error and "KeyError" in result.text
    assert "Note: your code's line 2 makes 'order_id' the DataFrame's index (index_col='order_id')" in result.text


async def test_a_test_run_that_found_no_tests_names_the_test_modules(runner: PythonRunner) -> None:
    # fix_failing_test: a block with a bare test function and unittest.main() "passed" with 0 tests.
    workspace = runner.sandbox.workspace
    (workspace / "stats.py").write_text("def median(v):\n    return v[0]\n")
    (workspace / "test_stats.py").write_text(
        "import unittest\nfrom stats import median\n\n\nclass StatsTest(unittest.TestCase):\n"
        "    def test_one(self):\n        self.assertEqual(median([4]), 4)\n"
    )
    code = "import unittest\ndef test_median(self):\n    pass\nunittest.main(exit=False)"
    result = await call(runner.tool, code)
    assert "Ran 0 tests" in result.text and result.text.endswith(
        "unittest ran 0 tests, so nothing was tested: unittest.main() collects the TestCase classes of the code "
        "that calls it, not of the workspace's test files. Run those with "
        "unittest.main(module='test_stats', exit=False)."
    )
    ran = await call(runner.tool, "import unittest\nunittest.main(module='test_stats', exit=False)")
    assert "Ran 1 test" in ran.text and "ran 0 tests" not in ran.text


async def test_text_given_where_a_file_is_read_names_json_loads(runner: PythonRunner) -> None:
    (runner.sandbox.workspace / "orders.json").write_text('[{"total": 2.5}]')
    result = await call(runner.tool, "import json\nprint(json.load(open('orders.json').read()))")
    assert result.is_error and "parse it with json.loads(read_file(path))" in result.text
    fixed = await call(runner.tool, "import json\nprint(json.loads(read_file('orders.json')))")
    assert fixed.text == "[{'total': 2.5}]"


async def test_read_file_text_also_reads_like_an_open_file(runner: PythonRunner) -> None:
    # customer_totals: json.load(read_file('orders.json')), three times, the note above after each.
    (runner.sandbox.workspace / "orders.json").write_text('[{"total": 2.5}]')
    (runner.sandbox.workspace / "sales.csv").write_text("region,amount\nNorth,3\nNorth,4\n")
    code = (
        "import json\nprint(json.load(read_file('orders.json')))\n"
        "text = read_file('sales.csv', end_line=1)\n"
        "print(text.read(6), text.upper().strip(), text == 'region,amount\\n')"
    )
    result = await call(runner.tool, code)
    assert result.text == "[{'total': 2.5}]\nregion REGION,AMOUNT True", result.text


async def test_printing_typed_values_computes_nothing(runner: PythonRunner) -> None:
    context = ToolContext(run_id="typed", workspace=runner.sandbox.workspace)

    async def run(code: str) -> ToolResult:
        return await runner.tool.run(runner.tool.validate({"code": code}), context)

    typed = await run("print({'mean': 23.5})")
    assert typed.text.endswith(
        "Note: this code only prints values typed into it, so they count as typed, not computed."
    )
    assert CODE_RAN not in context.state and "23.5" not in context.state.get(CODE_OUTPUT, "")
    computed = await run("values = [23.0, 24.0]\nprint(sum(values) / 2)")
    assert computed.text == "23.5" and CODE_RAN in context.state and "23.5" in context.state[CODE_OUTPUT]
