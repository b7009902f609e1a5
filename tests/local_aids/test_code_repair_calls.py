"""CodeRepair: python calls and .py files written with write_file, repaired before they run.

Every test runs the call through a real Toolset with the CodeRepair (and ErrorHints) middleware, on
a real python tool in a sandbox without confinement (backend "none")."""

from __future__ import annotations

import json

from helpers.aid_cases import Aided
from pymanus.local_aids.code_repair import BLOCKS_NOTE, WRITTEN_STRING_NOTE, CodeRepair
from pymanus.messages import ToolCall
from pymanus.sandbox import PathJail, Sandbox
from pymanus.tools import Tool, ToolContext, ToolResult
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.python import python_tool
from pymanus.tools.builtin.python_commands import compiles


async def test_a_one_line_chained_block_is_rewritten_to_code_that_compiles(sandbox: Sandbox) -> None:
    seen: list[str] = []

    def python(code: str) -> str:
        seen.append(code)
        return "ran"

    aided = Aided([Tool(python)], sandbox.workspace, [CodeRepair()])
    outcome = await aided.outcome("python", code="for i in range(3): if i: print(i)")
    assert seen == ["for i in range(3):\n    if i:\n        print(i)"] and compiles(seen[0])
    assert outcome.result.text == f"{BLOCKS_NOTE}\n\nran"
    assert json.loads(outcome.call.arguments)["code"] == "for i in range(3): if i: print(i)"  # the model's call
    ran = await Aided([python_tool(sandbox)], sandbox.workspace, [CodeRepair()])("for i in range(3): if i: print(i)")
    assert not ran.is_error and ran.text == f"{BLOCKS_NOTE}\n\n1\n2"


async def test_code_that_compiles_passes_through_unchanged(sandbox: Sandbox) -> None:
    repair = CodeRepair()
    context = ToolContext(run_id="r", workspace=sandbox.workspace)
    call = ToolCall(id="c1", name="python", arguments=json.dumps({"code": "for i in range(3):\n    print(i)"}))
    assert await repair.before_call(call, context) is call
    result = ToolResult(content="0\n1\n2")
    assert await repair.after_call(call, result, context) is result
    bare = Aided([python_tool(sandbox)], sandbox.workspace, [])
    aided = Aided([python_tool(sandbox)], sandbox.workspace, [repair])
    code = "total = 0\nfor x in [1, 2]:\n    total += x\nprint(total)"
    assert (await aided(code)) == (await bare(code))
    other = ToolCall(id="c2", name="read_file", arguments=json.dumps({"path": "a.py"}))
    assert await repair.before_call(other, context) is other  # other tools are left alone


async def test_a_python_file_written_with_a_line_break_inside_a_string_is_repaired(sandbox: Sandbox) -> None:
    aided = Aided(file_tools(PathJail(sandbox.workspace)), sandbox.workspace, [CodeRepair()])
    outcome = await aided.outcome("write_file", path="hello.py", content="print('a\nb')\n")
    written = (sandbox.workspace / "hello.py").read_text()
    assert written == "print('a\\nb')\n" and compiles(written)
    assert not outcome.result.is_error and outcome.result.text.startswith(WRITTEN_STRING_NOTE)
    assert "Warning" not in outcome.result.text
    text = await aided.outcome("write_file", path="notes.txt", content="print('a\nb')\n")  # not Python
    assert (sandbox.workspace / "notes.txt").read_text() == "print('a\nb')\n"
    assert not text.result.text.startswith("Note")


async def test_one_line_compound_statement_runs_or_gets_a_recovery_hint(once: Aided) -> None:
    repaired = await once("total = 0; for x in [1, 2]: total += x; print(total)")
    assert not repaired.is_error and repaired.text.endswith("in indented blocks.\n\n1\n3")
    result = await once("total = 0; for x in [1, 2]: total += x print(total)")  # cannot be read
    assert result.is_error
    assert "none of it ran" in result.text
    assert "cannot follow `;`" in result.text


async def test_a_file_written_as_one_string_with_its_own_quotes_is_written_as_meant(
    once: Aided, sandbox: Sandbox
) -> None:
    # project_layout runs 222 and 224: line breaks from the JSON, and '__main__' quoted inside the string.
    code = "with open('s.py', 'w') as f:\nf.write('def f():\n    print(1)\nif __name__ == '__main__':\n    f()')"
    result = await once(code)
    assert not result.is_error and "were run as \\' escapes" in result.text, result.text
    assert "it was run indented under that line" in result.text
    written = (sandbox.workspace / "s.py").read_text()
    assert written == "def f():\n    print(1)\nif __name__ == '__main__':\n    f()"


async def test_line_breaks_inside_string_literals_are_repaired(once: Aided) -> None:
    result = await once("n = 2\nprint(f'Count:\n{n}')")
    assert not result.is_error, result.text
    assert "Count:\n2" in result.text
    assert "line breaks inside string literals" in result.text


async def test_backspaces_from_json_run_as_the_regex_escapes_meant(once: Aided) -> None:
    result = await once("import re\nprint(re.findall(r'\x08\\w+\x08', 'two words'))")
    assert not result.is_error, result.text
    assert "['two', 'words']" in result.text


async def test_blocks_nested_on_one_line_are_repaired(session: Aided, sandbox: Sandbox) -> None:
    (sandbox.workspace / "a.py").write_text("# TODO\n")
    code = "import os\nfor root, dirs, files in os.walk('.'): for name in files: if name.endswith('.py'): print(name)"
    result = await session(code)
    assert not result.is_error and result.text.startswith("Note: your code chained for/if/with statements")
    assert result.text.endswith("in indented blocks.\n\na.py")


async def test_line_breaks_a_model_put_inside_python_string_literals_are_written_as_escapes(
    once: Aided, sandbox: Sandbox
) -> None:
    # JSON's \n decoded inside print('...'): the script the model meant prints four lines.
    result = (await once.outcome("write_file", path="squares.py", content="print('1\n4\n9\n16')")).result
    assert (sandbox.workspace / "squares.py").read_text() == "print('1\\n4\\n9\\n16')"
    assert "line breaks inside string literals; they were written as \\n escapes" in result.text
    assert "Warning" not in result.text
    text = "print('1\n4')"  # the same text in a file that is not Python is written as it is
    await once.outcome("write_file", path="notes.txt", content=text)
    assert (sandbox.workspace / "notes.txt").read_text() == text


async def test_a_module_with_escaped_line_breaks_between_statements_is_written_with_line_breaks(
    once: Aided, sandbox: Sandbox
) -> None:
    # JSON's \\n between statements: the module would not parse.
    content = 'def main(): print("Weather CLI ready")\\nif __name__ == "__main__": main()'
    result = (await once.outcome("write_file", path="weather/cli.py", content=content)).result
    assert (sandbox.workspace / "weather" / "cli.py").read_text() == content.replace("\\n", "\n")
    assert result.text.startswith(
        "Note: the file's code had \\n between statements instead of line breaks; it was written with line "
        "breaks there. In the JSON arguments, a line break is \\n (one backslash).\n\nCreated weather/cli.py"
    )
    kept = "print('a\\nb')\n"  # an escape inside a string is the code's own
    assert "Note" not in (await once.outcome("write_file", path="ab.py", content=kept)).result.text
    assert (sandbox.workspace / "ab.py").read_text() == kept
