"""The python tool's sessions: state kept per run, restarts, and workers that never outlive them."""

from __future__ import annotations

import asyncio

import pytest

from helpers.python_cases import call, no_workers_left, quick, worker_processes
from pymanus.sandbox import Sandbox
from pymanus.tools import Tool
from pymanus.tools.builtin.python import PythonRunner
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
    # A list file written a line at a time from a loop.
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


async def test_importing_a_predefined_helper_says_it_is_defined(once: Tool) -> None:
    result = await call(once, "from read_file import read_file")
    assert result.is_error and "read_file is not a module: it is a function already defined here" in result.text
    assert "not installed" not in result.text


async def test_common_modules_are_already_imported(once: Tool) -> None:
    result = await call(once, "print(json.dumps({'m': statistics.median([1, 3])}))")
    assert not result.is_error, result.text
    assert '{"m": 2.0}' in result.text
    assert "Already imported: json" in once.description


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


async def test_command_lines_that_are_not_commands(once: Tool, sandbox: Sandbox) -> None:
    missing = await call(once, "python nothing_here.py")
    assert missing.is_error and "nothing_here.py, which does not exist in the workspace yet" in missing.text
    escape = await call(once, "python -c 'print(1)' > ../outside.txt")
    assert escape.is_error and not (sandbox.workspace.parent / "outside.txt").exists()
    (sandbox.workspace / "squares.py").write_text("print(4)\n")
    piped = await call(once, "python squares.py | head -1")  # a shell pipeline is not run
    assert piped.is_error and "SyntaxError" in piped.text and "as a command" not in piped.text
    assert (await call(once, "exec(open('squares.py').read())")).text == "4"
    assert (await call(once, "python = 3\npython")).text == "3"  # valid Python stays Python


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
