"""The python tool: observations for every way code can go wrong, sessions, and containment."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from helpers.python_cases import call, needs_bwrap, no_workers_left, quick
from pymanus.sandbox import Limits, Sandbox
from pymanus.sandbox.limits import find_pids_parent
from pymanus.tools import Tool
from pymanus.tools.builtin.python import PythonRunner, available_libraries, python_tool
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


async def test_code_that_only_defines_is_told_nothing_was_saved(once: Tool) -> None:
    code = (
        'import math\n\n\ndef area(r):\n    """Disc area."""\n    return math.pi * r * r\n\n\nclass Shape:\n    pass\n'
    )

    result = await call(once, code)
    assert not result.is_error
    assert "Note: no file changed. `area`, `Shape` existed only in that interpreter" in result.text, result.text
    assert "write_file" in result.text


async def test_code_that_does_more_than_define_gets_no_unsaved_note(once: Tool, sandbox: Sandbox) -> None:
    used = await call(once, "def f(x):\n    return x * 2\n\nprint(f(21))")
    assert "42" in used.text and "no file changed" not in used.text
    saved = await call(once, "def f():\n    pass\n\nwrite_file('f.py', 'def f():\\n    pass\\n')")
    assert (sandbox.workspace / "f.py").is_file() and "no file changed" not in saved.text
    failed = await call(once, "def f(:\n    pass")
    assert failed.is_error and "no file changed" not in failed.text


async def test_traceback_shows_the_failing_line(once: Tool) -> None:
    code = "def f(x):\n    return 1 / x\nf(0)"
    result = await call(once, code)
    assert result.is_error
    assert f'File "{cell_name(code)}", line 2, in f' in result.text and "return 1 / x" in result.text
    assert "ZeroDivisionError" in result.text and "Fix the code" in result.text
    assert "Values on line 2: x = 0 (int)" in result.text


async def test_a_wrong_value_shows_the_values_its_line_read(once: Tool) -> None:
    """Told only "'float' object is not iterable" for mean() of a summed float, a model runs the same code again."""
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


async def test_other_type_errors_get_the_plain_hint(once: Tool) -> None:
    result = await call(once, "total = len([1]) + None")
    assert result.is_error and "unsupported operand" in result.text
    assert "Fix the code and run it again" in result.text and "accepts" not in result.text


async def test_syntax_error(once: Tool) -> None:
    result = await call(once, "def broken(:\n    pass")
    assert result.is_error and "SyntaxError" in result.text and "def broken(:" in result.text


async def test_a_syntax_error_in_an_imported_workspace_file_is_located_there(once: Tool, sandbox: Sandbox) -> None:
    (sandbox.workspace / "stats.py").write_text("def median(values) ->\n    return values[0]\n")
    result = await call(once, "from stats import median\nprint(median([3]))")
    assert result.is_error and "expected ':'" in result.text and "stats.py" in result.text
    assert "is in stats.py, a file your code imports, not in your code. Fix stats.py first" in result.text
    assert "one statement per line" not in result.text


async def test_missing_module_says_how_to_recover(once: Tool) -> None:
    result = await call(once, "import surely_not_installed_xyz.sub")
    assert result.is_error
    assert "'surely_not_installed_xyz' is not installed" in result.text
    assert "standard library" in result.text


async def test_a_missing_module_of_a_workspace_package_names_the_file_to_write(once: Tool, sandbox: Sandbox) -> None:
    (Path(sandbox.workspace) / "weather").mkdir()
    (Path(sandbox.workspace) / "weather" / "__init__.py").write_text("")
    result = await call(once, "from weather.cli import main")
    assert result.is_error
    assert result.text.endswith("The workspace's weather has no module weather.cli yet: write it before importing it.")
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
