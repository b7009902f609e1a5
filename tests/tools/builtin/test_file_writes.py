"""What write_file and edit_file say of, repair in, or refuse to write: files that do not parse,
Python records in a .json file, modules that import themselves or lose definitions, tests no
runner collects, and line breaks meant as escapes."""

from __future__ import annotations

import json
import tomllib

import pytest

from helpers.file_cases import call
from pymanus.sandbox import PathJail
from pymanus.tools import Tool, ToolContext
from pymanus.tools.builtin.markdown_tables import close_table_gaps


async def test_a_written_file_that_does_not_parse_gets_a_warning(tools: dict[str, Tool], jail: PathJail) -> None:
    result = await call(tools["write_file"], path="products.json", content="{'name': 'bolt', 'tags': {'a'}}")
    assert not result.is_error
    assert result.text.endswith(
        "\nWarning: products.json is not valid JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)); write it from python with json.dump(value, f, indent=2), which quotes every "
        "key and string. Fix it before using the file."
    )
    broken = await call(tools["write_file"], path="cli.py", content="def main(:\n    print('ready')\n")
    assert "Warning: cli.py is not valid Python (invalid syntax at line 1)" in broken.text
    added = await call(tools["edit_file"], path="cli.py", old_text="", new_text="main()\n")
    assert "Warning: cli.py is not valid Python" in added.text  # still broken above: fixing may take more edits
    fixed = await call(tools["edit_file"], path="cli.py", old_text="def main(:", new_text="def main():")
    assert not fixed.is_error and "Warning" not in fixed.text


async def test_a_change_that_breaks_a_module_that_parsed_is_refused(tools: dict[str, Tool], jail: PathJail) -> None:
    # add_function: the 1.5B appended a function whose docstring it never closed, and every import failed after.
    original = "def title_case(text):\n    return text.title()\n"
    (jail.root / "textutils.py").write_text(original)
    new_text = 'def slugify(title):\n    """A slug.\n    ""\n    return title.lower()\n'
    added = await call(tools["edit_file"], path="textutils.py", old_text="", new_text=new_text)
    assert added.is_error and added.text == (
        "textutils.py is unchanged: with this change it would not be valid Python (unterminated triple-quoted "
        'string literal (detected at line 6), line 4: \'"""A slug.\'). Fix the code and send it again.'
    )
    replaced = await call(tools["edit_file"], path="textutils.py", old_text="(text):", new_text="(text:")
    assert replaced.is_error and "line 1: 'def title_case(text:'" in replaced.text
    # add_function, run 65: the body of the new function left unindented, which only the compiler rejects.
    unindented = 'def slugify(title):\n    """A slug."""\n\ntitle = title.lower()\nreturn title\n'
    compiled = await call(tools["edit_file"], path="textutils.py", old_text="", new_text=unindented)
    assert compiled.is_error and "('return' outside function, line 7: 'return title')" in compiled.text
    overwritten = await call(tools["write_file"], path="textutils.py", content="def title_case(text)\n")
    assert overwritten.is_error and "textutils.py is unchanged: with this change it would not be" in overwritten.text
    assert (jail.root / "textutils.py").read_text() == original
    assert not (await call(tools["edit_file"], path="textutils.py", old_text="", new_text="X = 1\n")).is_error


GAPPED_TABLE = "| file | lines |\n|---|---|\n\n| alpha.txt | 3 |\n\n| beta.txt | 5 |\n\n| Total | 8 |\n"
"""``'\\n'.join(rows)`` of rows that each end in a line break (word_counts, runs 100-103)."""


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        (GAPPED_TABLE, "| file | lines |\n|---|---|\n| alpha.txt | 3 |\n| beta.txt | 5 |\n| Total | 8 |\n"),
        (
            "# Counts\n\n| a | b |\n|---|---|\n\n\n| 1 | 2 |\n\nDone.\n",
            "# Counts\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone.\n",
        ),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n\n| c | d |\n|---|---|\n| 3 | 4 |\n", None),  # two tables
        ("| a | b |\n|---|---|\n| 1 | 2 |\n\nText after it.\n", None),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n\n| x | y | z |\n", None),  # another number of cells
        ("Not a table.\n\n| 1 | 2 |\n", None),
        ("| a | b |\n\n|---|---|\n\n| 1 | 2 |\n", "| a | b |\n|---|---|\n| 1 | 2 |\n"),  # every row ended in \n
        ("| a | b | c |\n\n|---|---|\n| 1 | 2 |\n", None),  # a rule of other cells: no header of it
    ],
)
def test_only_gaps_between_rows_of_one_table_are_closed(text: str, closed: str | None) -> None:
    assert close_table_gaps(text) == closed


async def test_a_table_written_with_empty_lines_between_its_rows_is_written_whole(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    result = await call(tools["write_file"], path="counts.md", content=GAPPED_TABLE)
    assert (jail.root / "counts.md").read_text() == close_table_gaps(GAPPED_TABLE)
    assert result.text.endswith(
        "Note: the empty lines between its table rows were removed (a table has one header row and ends at an "
        "empty line)."
    )
    assert "Warning" not in result.text
    notes = await call(tools["write_file"], path="notes.txt", content=GAPPED_TABLE)  # Markdown files only
    assert "empty lines" not in notes.text and (jail.root / "notes.txt").read_text() == GAPPED_TABLE


async def test_a_table_written_as_one_line_of_escapes_gets_its_line_breaks(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # word_counts run 100: the arguments escaped twice, so counts.md was one line and held no table.
    table = "| file | lines |\\n|---|---|\\n| texts/alpha.txt | 3 |\\n"
    result = await call(tools["write_file"], path="counts.md", content=table)
    assert not result.is_error
    assert (jail.root / "counts.md").read_text() == "| file | lines |\n|---|---|\n| texts/alpha.txt | 3 |\n"
    assert result.text.startswith("Created counts.md: 51 bytes written, 3 lines.\nNote: the content was one line")
    # Real lines, a single escape, or a file of another kind are written as they are.
    kept = {
        "notes.md": "Use \\n for a line break.\nAnd \\n again.\n",
        "regex.md": "The pattern is a\\nb",
        "data.json": '{"text": "a\\nb\\nc"}',
        "code.txt": "print('a\\nb\\nc')",
    }
    for name, content in kept.items():
        written = await call(tools["write_file"], path=name, content=content)
        assert "\\n escapes" not in written.text, name
        assert (jail.root / name).read_text() == content, name


async def test_python_records_written_to_a_json_file_are_written_as_json(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # What print(records) shows, copied into write_file: single quotes, None, True.
    content = "[{'sku': 'A-100', 'price': 24.5, 'note': None, 'ok': True}, {'sku': 'B-2', 'price': 3, 'note': 'x'}]"
    result = await call(tools["write_file"], path="products.json", content=content)
    assert not result.is_error and "Warning" not in result.text
    assert "the content was Python syntax (single quotes, None, True), not JSON; it was written as JSON" in result.text
    assert json.loads((jail.root / "products.json").read_text()) == [
        {"sku": "A-100", "price": 24.5, "note": None, "ok": True},
        {"sku": "B-2", "price": 3, "note": "x"},
    ]
    valid = '{"a": 1}'  # JSON is written as it is, spacing and all
    assert "Note" not in (await call(tools["write_file"], path="a.json", content=valid)).text
    assert (jail.root / "a.json").read_text() == valid
    for literal in ("{'a': float('nan')}", "{'a': b'x'}", "{(1, 2): 'tuple key'}", "'just a string'"):
        kept = await call(tools["write_file"], path="b.json", content=literal)
        assert "Warning: b.json is not valid JSON" in kept.text, literal
        assert (jail.root / "b.json").read_text() == literal
    same = "{'a': 1}"  # only .json files are converted
    await call(tools["write_file"], path="notes.txt", content=same)
    assert (jail.root / "notes.txt").read_text() == same


async def test_a_module_that_imports_itself_is_not_written(tools: dict[str, Tool], jail: PathJail) -> None:
    original = "def word_count(text):\n    return len(text.split())\n"
    (jail.root / "textutils.py").write_text(original)
    whole = await call(tools["write_file"], path="textutils.py", content="import textutils\nx = textutils.y\n")
    assert whole.is_error and whole.text.startswith("Not written: textutils.py imports itself at line 1")
    assert "(`import textutils`)" in whole.text and "textutils.py is unchanged; write it again" in whole.text
    missing = await call(tools["edit_file"], path="textutils.py", old_text="", new_text="from textutils import slug\n")
    assert missing.is_error and "imports itself at line 3 (`from textutils import slug`)" in missing.text
    assert (jail.root / "textutils.py").read_text() == original
    other = await call(tools["write_file"], path="app.py", content="from textutils import word_count\n")
    assert not other.is_error  # importing another module is fine


async def test_a_module_importing_names_it_defines_is_written_without_that_line(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # The 1.5B wrote this line above the function it added, four times after being told to remove it.
    original = "def word_count(text):\n    return len(text.split())\n"
    (jail.root / "textutils.py").write_text(original)
    new = "from textutils import slugify, word_count as wc\ndef slugify(title):\n    return title.lower()\n"
    appended = await call(tools["edit_file"], path="textutils.py", old_text="", new_text=new)
    assert not appended.is_error and "Lines 3-4 now read" in appended.text
    assert appended.text.endswith(
        "Note: `from textutils import slugify, word_count as wc` was left out: textutils.py defines its own names "
        "itself, and a module that imports them from itself or its package fails as a circular import."
    )
    assert (jail.root / "textutils.py").read_text() == original + new.split("\n", 1)[1]
    only = await call(tools["edit_file"], path="textutils.py", old_text="", new_text="from textutils import slugify\n")
    assert only.is_error and only.text.startswith("textutils.py is unchanged: `from textutils import slugify` was")
    whole = await call(
        tools["write_file"], path="textutils.py", content="from textutils import slugify\nslugify = str.lower\n"
    )
    assert not whole.is_error and "Note: `from textutils import slugify` was left out" in whole.text
    assert (jail.root / "textutils.py").read_text() == "slugify = str.lower\n"
    # add_function: a whole new module that began by importing a name it no longer defined was refused three times.
    content = "from textutils import slugify, word_count\n\ndef slugify(title):\n    return title.lower()\n"
    rewritten = await call(tools["write_file"], path="textutils.py", content=content)
    assert not rewritten.is_error and "Note: `from textutils import slugify, word_count` was left out" in rewritten.text
    assert "textutils.py no longer defines" not in rewritten.text  # slugify = str.lower was no def
    assert (jail.root / "textutils.py").read_text() == content.split("\n", 1)[1]


@pytest.mark.parametrize("line", ["from . import cli", "import weather.cli"])
async def test_a_package_module_that_imports_itself_is_not_written(
    tools: dict[str, Tool], jail: PathJail, line: str
) -> None:
    result = await call(tools["write_file"], path="weather/cli.py", content=f"{line}\n\ndef main():\n    print(1)\n")
    assert result.is_error and f"weather/cli.py imports itself at line 1 (`{line}`)" in result.text
    assert not (jail.root / "weather" / "cli.py").exists()
    assert not (await call(tools["write_file"], path="weather/cli.py", content="def main():\n    print(1)\n")).is_error
    for sibling in ("from .cli import main\n", "from . import cli\n", "from weather import cli\n"):
        assert not (await call(tools["write_file"], path="weather/__init__.py", content=sibling)).is_error
    assert not (await call(tools["write_file"], path="weather/api.py", content="from .cli import main\n")).is_error


# project_layout run 65: `from . import main` above cli.py's own main, while __init__.py imported main from cli.
@pytest.mark.parametrize(
    "line", ["from .cli import main", "from weather.cli import main", "from . import main", "from weather import main"]
)
async def test_a_package_module_importing_its_own_function_is_written_without_it(
    tools: dict[str, Tool], jail: PathJail, line: str
) -> None:
    result = await call(tools["write_file"], path="weather/cli.py", content=f"{line}\n\ndef main():\n    print(1)\n")
    assert not result.is_error and f"Note: `{line}` was left out: weather/cli.py defines" in result.text
    assert (jail.root / "weather" / "cli.py").read_text() == "\ndef main():\n    print(1)\n"


async def test_a_module_that_is_only_an_import_of_itself_is_told_to_define_the_names(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # project_layout: the 1.5B wrote `from weather.cli import main` as the whole of cli.py, six times.
    result = await call(tools["write_file"], path="weather/cli.py", content="from weather.cli import main, run\n")
    assert result.is_error and result.text.endswith(
        "weather/cli.py is unchanged. weather/cli.py is the module that must define `main`, `run`: write it with the "
        "definition itself (def main(): with the parameters it takes, and its body), not an import."
    )
    assert not (jail.root / "weather" / "cli.py").exists()


async def test_a_module_giving_a_pattern_to_str_replace_gets_a_warning(tools: dict[str, Tool], jail: PathJail) -> None:
    code = "def slugify(title):\n    return title.lower().replace('[^a-z0-9]+', '-')\n"
    result = await call(tools["write_file"], path="textutils.py", content=code)
    assert not result.is_error
    assert result.text.endswith(
        "\nWarning: textutils.py line 2 calls .replace(r'[^a-z0-9]+', ...), but str.replace looks for that exact "
        "text, not a regular expression; for a pattern use re.sub(pattern, replacement, text) (import re)."
    )
    fixed = await call(
        tools["edit_file"], path="textutils.py", old_text=".replace('[^a-z0-9]+', '-')", new_text=".replace(' ', '-')"
    )
    assert "Warning" not in fixed.text
    notes = await call(tools["write_file"], path="notes.md", content="Use .replace('[^a-z0-9]+', '-') here.\n")
    assert "Warning" not in notes.text  # only Python files are read as code


async def test_a_new_test_file_runners_would_not_collect_gets_a_note(tools: dict[str, Tool], jail: PathJail) -> None:
    tests = "def test_main():\n    assert True\n"
    created = await call(tools["write_file"], path="tests/main.py", content=tests)
    assert created.text.endswith("so they will not run tests/main.py; name it tests/test_main.py.")
    assert "Note" not in (await call(tools["write_file"], path="tests/test_main.py", content=tests)).text


async def test_overwriting_a_module_says_which_definitions_it_dropped(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "textutils.py").write_text("def word_count(t):\n    return 1\n\n\nclass Title:\n    pass\n")
    result = await call(tools["write_file"], path="textutils.py", content="def slugify(t):\n    return t\n")
    assert result.text.endswith(
        "\nNote: textutils.py no longer defines word_count, Title, which it defined before this write. "
        "If they must stay, write the file again with them."
    )
    kept = "def word_count(t):\n    return 2\n\n\nclass Title:\n    pass\n\n\ndef slugify(t):\n    return t\n"
    (jail.root / "textutils.py").write_text("def word_count(t):\n    return 1\n\n\nclass Title:\n    pass\n")
    assert "Note" not in (await call(tools["write_file"], path="textutils.py", content=kept)).text


async def test_line_breaks_a_model_put_inside_python_string_literals_are_written_as_escapes(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # JSON's \n decoded inside print('...'): the script the model meant prints four lines.
    result = await call(tools["write_file"], path="squares.py", content="print('1\n4\n9\n16')")
    assert (jail.root / "squares.py").read_text() == "print('1\\n4\\n9\\n16')"
    assert "line breaks inside string literals; they were written as \\n escapes" in result.text
    assert "Warning" not in result.text
    text = "print('1\n4')"  # the same text in a file that is not Python is written as it is
    await call(tools["write_file"], path="notes.txt", content=text)
    assert (jail.root / "notes.txt").read_text() == text


async def test_a_module_with_escaped_line_breaks_between_statements_is_written_with_line_breaks(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # project_layout run 70: JSON's \\n between statements, and cli.py did not parse.
    content = 'def main(): print("Weather CLI ready")\\nif __name__ == "__main__": main()'
    result = await call(tools["write_file"], path="weather/cli.py", content=content)
    assert (jail.root / "weather" / "cli.py").read_text() == content.replace("\\n", "\n")
    assert result.text.endswith(
        "\nNote: the file's code had \\n between statements instead of line breaks; it was written with line "
        "breaks there. In the JSON arguments, a line break is \\n (one backslash)."
    )
    kept = "print('a\\nb')\n"  # an escape inside a string is the code's own
    assert "Note" not in (await call(tools["write_file"], path="ab.py", content=kept)).text
    assert (jail.root / "ab.py").read_text() == kept


async def test_a_markdown_table_cut_by_an_empty_line_it_cannot_close_gets_a_warning(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # The row after the empty line has a cell more than the header: it may not belong to the table.
    content = "| region | total |\n|---|---|\n| East | 4865.83 |\n\n| North | 4329.53 | x |\n"
    result = await call(tools["write_file"], path="report.md", content=content)
    assert (jail.root / "report.md").read_text() == content
    assert (
        "Warning: report.md is not valid Markdown (the table at line 1 is cut by the empty line 4, and a table "
        "ends at an empty line: write its rows one after another with no empty line between them"
    ) in result.text
    for fine in (
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n| x | y |\n|---|---|\n| 3 | 4 |\n",  # two tables
        "| a | b |\n|---|---|\n| 1 | 2 |\n\nTotal: 3 | of 4\n\nText after the table.\n",
    ):
        result = await call(tools["write_file"], path="report.md", content=fine)
        assert "Warning" not in result.text, fine


async def test_code_written_as_a_result_file_gets_a_warning(tools: dict[str, Tool], jail: PathJail) -> None:
    code = "'\\n'.join([path for folder, _, names in os.walk('src/') for path in names])"
    result = await call(tools["write_file"], path="todo_files.txt", content=code)
    assert not result.is_error and (jail.root / "todo_files.txt").read_text() == code
    assert result.text.endswith(
        "Warning: todo_files.txt holds Python code, not what the code computes: run the code with python and "
        "write its result (write_file('todo_files.txt', text) inside the code). Fix it before using the file."
    )
    for content in ("src/app/main.py\nsrc/app/db/models.py\n", "Alice, 3\nBob, 4\n", "total: 12\n", "print(x)\n"):
        assert "Warning" not in (await call(tools["write_file"], path="out.txt", content=content)).text, content
    module = f"import os\n{code}"
    assert "Warning" not in (await call(tools["write_file"], path="tool.py", content=module)).text  # code's place


async def test_a_traceback_written_as_a_result_file_gets_a_warning(tools: dict[str, Tool], jail: PathJail) -> None:
    # word_counts run 212: the 1.5B wrote its code's ValueError to counts.md
    error = (
        '[stderr]\nTraceback (most recent call last):\n  File "<cell 624ce6>", line 10, in <module>\n'
        "ValueError: too many values to unpack (expected 2)\n"
    )
    result = await call(tools["write_file"], path="counts.md", content=error)
    assert not result.is_error and (jail.root / "counts.md").read_text() == error
    assert result.text.endswith(
        "Warning: counts.md holds a Python traceback, the error output of code, not a result: fix the code the "
        "error came from (the note after the traceback says how) and let it write counts.md. Fix it before using "
        "the file."
    )
    assert "Warning" not in (await call(tools["write_file"], path="error.log", content=error)).text  # a log's place


async def test_a_markdown_table_whose_first_row_repeats_its_header_is_written_without_it(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # pd.DataFrame([['file', 'lines'], ...]) given column names again: the header is also row 1.
    content = "| file | lines |\n|:-----|:------|\n| File  | lines |\n| a.txt | 3 |\n"
    result = await call(tools["write_file"], path="counts.md", content=content)
    assert (jail.root / "counts.md").read_text() == "| file | lines |\n|:-----|:------|\n| a.txt | 3 |\n"
    assert "Note: the first row, a copy of the header, was removed" in result.text
    assert "Warning" not in result.text


async def test_a_pyproject_with_project_keys_outside_a_table_gets_a_warning(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # project_layout: the 1.5B's whole pyproject.toml, twice.
    result = await call(tools["write_file"], path="pyproject.toml", content="name = 'weather'\nversion = '0.1.0'\n")
    assert result.text.endswith(
        "Warning: pyproject.toml sets name, version outside any table, where packaging tools do not read them: "
        "they belong under a [project] line; write_file pyproject.toml with this content: "
        "\"[project]\\nname = 'weather'\\nversion = '0.1.0'\\n\". Fix it before using the file."
    )
    long = "name = 'weather'\n" + "# note\n" * 80
    assert (
        "write [project] as the file's first line"
        in (await call(tools["write_file"], path="pyproject.toml", content=long)).text
    )
    fine = await call(tools["write_file"], path="pyproject.toml", content="[project]\nname = 'weather'\n")
    assert "Warning" not in fine.text
    other = await call(tools["write_file"], path="config/settings.toml", content="name = 'staging'\n")
    assert "Warning" not in other.text  # only pyproject.toml has a [project] table


@pytest.mark.parametrize(
    ("written", "parse_error", "what_it_is"),
    [
        (  # What the 1.5B wrote, stray bracket and all.
            "from setuptools import setup\nsetup(\n    name='weather',\n    version='0.1.0',\n    packages=[],\n)}",
            "Expected '=' after a key in a key/value pair (at line 1, column 6)",
            "it is a setup.py script, and pyproject.toml is TOML",
        ),
        (  # project_layout, run 220: the 1.5B's whole pyproject.toml.
            "project = {\n    name = 'weather',\n    version = '0.1.0',\n}",
            "Invalid initial character for a key part (at line 1, column 12)",
            "it writes `project = {...}` over several lines, and a TOML table written so must be on one line",
        ),
    ],
)
async def test_a_pyproject_toml_that_is_not_toml_gets_the_project_table_it_means(
    tools: dict[str, Tool], written: str, parse_error: str, what_it_is: str
) -> None:
    result = await call(tools["write_file"], path="pyproject.toml", content=written)
    fixed = '[project]\nname = "weather"\nversion = "0.1.0"\n'
    assert result.text.endswith(
        f"Warning: pyproject.toml is not valid TOML ({parse_error}); {what_it_is}: "
        f"write_file pyproject.toml with {json.dumps(fixed)}. Fix it before using the file."
    )
    assert tomllib.loads(fixed) == {"project": {"name": "weather", "version": "0.1.0"}}


async def test_a_pyproject_toml_that_is_neither_a_setup_script_nor_an_inline_project_gets_the_parse_error(
    tools: dict[str, Tool],
) -> None:
    other = await call(tools["write_file"], path="pyproject.toml", content="name weather\n")
    assert "not valid TOML" in other.text and "setup.py" not in other.text and "project = {" not in other.text
    one_line = await call(tools["write_file"], path="pyproject.toml", content="project = {name = 'weather'}\n")
    assert "Warning" not in one_line.text  # valid TOML: the same [project] table


async def test_lines_new_text_repeats_next_to_old_text_are_replaced_not_written_twice(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # add_function: the 1.5B gave the body line as old_text and the def line plus the new body as new_text.
    original = "def word_count(text):\n    return len(text.split())\n\n\ndef slugify(title):\n    return title\n"
    (jail.root / "textutils.py").write_text(original)
    result = await call(
        tools["edit_file"],
        path="textutils.py",
        old_text="return title",
        new_text="def slugify(title):\n    return title.lower()",
    )
    assert not result.is_error and "Warning" not in result.text
    assert result.text.endswith(
        "Note: new_text repeats line 5 of textutils.py, the line next to old_text, so it was replaced, "
        "not written twice."
    )
    assert (jail.root / "textutils.py").read_text() == original.replace("return title\n", "return title.lower()\n")
    undone = await call(tools["edit_file"], path="textutils.py", undo=True)
    assert not undone.is_error and (jail.root / "textutils.py").read_text() == original


async def test_adding_code_a_module_already_has_is_refused(tools: dict[str, Tool], jail: PathJail) -> None:
    # add_function: each time its check failed, the 1.5B added the same line to the end of the module again.
    original = "def word_count(text):\n    return len(text.split())\n\nslugify = lambda title: title.lower()\n"
    (jail.root / "textutils.py").write_text(original)
    again = "from textutils import slugify\nslugify = lambda title: title.lower()"
    result = await call(tools["edit_file"], path="textutils.py", old_text="", new_text=again)
    assert result.is_error and result.text.startswith(
        "textutils.py is unchanged: it already has this code, from line 4; adding it again would only repeat it."
    )
    assert (jail.root / "textutils.py").read_text() == original
    inserted = await call(tools["edit_file"], path="textutils.py", old_text="", new_text="\ndef word_count(text):\n")
    assert inserted.is_error and "from line 1" in inserted.text
    other = await call(tools["edit_file"], path="textutils.py", old_text="", new_text="slugify = str.lower\n")
    assert not other.is_error  # new code is added
    (jail.root / "notes.md").write_text("- milk\n")
    listed = await call(tools["edit_file"], path="notes.md", old_text="", new_text="- milk\n")
    assert not listed.is_error  # a repeated line of text may be meant


async def test_a_module_that_imports_a_workspace_module_not_written_yet_names_it(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # project_layout: the 1.5B began with `from .cli import main`, then "edited" the cli.py it never wrote.
    first = await call(tools["write_file"], path="weather/api.py", content="from .cli import main\n")
    assert not first.is_error and first.text.endswith(
        "\nNote: weather/api.py imports main from weather/cli.py, which does not exist yet: write "
        "weather/cli.py next, with write_file and its whole content, defining main (def main(): with the "
        "parameters it takes, and its body)."
    )
    test = "import os.path\nfrom weather.cli import main\n\ndef test_main():\n    main()\n"
    written = await call(tools["write_file"], path="tests/test_main.py", content=test)
    assert "imports main from weather/cli.py, which does not exist yet" in written.text
    edited = await call(tools["edit_file"], path="./weather/api.py", old_text="", new_text="from . import db\n")
    assert "Note: weather/api.py imports main from weather/cli.py" in edited.text  # the first one missing
    absolute = await call(tools["write_file"], path="weather/api.py", content="import weather.cli\n")
    assert absolute.text.endswith(
        "Note: weather/api.py imports weather/cli.py, which does not exist yet: write weather/cli.py next, "
        "with write_file and its whole content."
    )
    cli = await call(tools["write_file"], path="weather/cli.py", content="def main():\n    print('ready')\n")
    assert "does not exist yet" not in cli.text
    assert "does not exist yet" not in (await call(tools["write_file"], path="tests/test_main.py", content=test)).text
    outside = await call(tools["write_file"], path="app.py", content="import xml.etree\nfrom yaml.nodes import Node\n")
    assert "does not exist yet" not in outside.text  # not the workspace's own modules
    # project_layout run 66: `from . import weather` in weather/cli.py was told to write weather/weather.py.
    package = await call(tools["write_file"], path="weather/cli.py", content="from . import weather\n\nX = 1\n")
    assert package.text.endswith(
        "Note: weather/cli.py imports `weather` from its own package, which would be a module weather/weather.py "
        "(there is none): weather/cli.py is already part of the package weather, so leave that import out, and "
        "import the package's modules by their own names (from .cli import main)."
    )


@pytest.mark.parametrize("content", ["from .cli import main\n", "from . import cli\n", "from weather import cli\n"])
async def test_a_package_init_importing_a_module_not_written_yet_is_refused_once(
    tools: dict[str, Tool], jail: PathJail, content: str
) -> None:
    # project_layout runs 66-69: every run began with such an __init__.py, and no import of the package
    # worked until the end of the run.
    context = ToolContext(run_id="test")
    refused = await call(tools["write_file"], context, path="weather/__init__.py", content=content)
    names = "main from weather/cli.py" if "main" in content else "weather/cli.py"
    defining = ", defining main (def main(): with the parameters it takes, and its body)" if "main" in content else ""
    assert refused.is_error and refused.text == (
        f"weather/__init__.py was not written: it imports {names}, which does not exist yet, and every import of "
        "the package runs weather/__init__.py first, so all of them would fail. Write weather/cli.py first, with "
        f"write_file and its whole content{defining}; then weather/__init__.py can import from it. An empty "
        "weather/__init__.py also makes a package."
    )
    assert not (jail.root / "weather").exists()
    # Written again (project_layout run 81 wrote it five times over), it goes through, saying what comes next.
    added = await call(tools["edit_file"], context, path="weather/__init__.py", old_text="", new_text=content)
    assert not added.is_error
    assert added.text.endswith(
        f"Note: weather/__init__.py imports {names}, which does not exist yet: write weather/cli.py next, with "
        f"write_file and its whole content{defining}."
    )
    assert (jail.root / "weather" / "__init__.py").read_text() == content


async def test_a_package_init_importing_a_module_written_already_is_not_refused(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    assert not (await call(tools["write_file"], path="weather/__init__.py", content="")).is_error
    await call(tools["write_file"], path="weather/cli.py", content="def main():\n    print('ready')\n")
    content = "from .cli import main\n"
    assert not (await call(tools["edit_file"], path="weather/__init__.py", old_text="", new_text=content)).is_error
    assert (jail.root / "weather" / "__init__.py").read_text() == content


async def test_a_pyproject_toml_is_not_written_inside_a_package(tools: dict[str, Tool], jail: PathJail) -> None:
    # project_layout run 66: the 1.5B wrote weather/pyproject.toml, where packaging tools never look.
    (jail.root / "weather").mkdir()
    (jail.root / "weather" / "__init__.py").write_text("")
    content = '[project]\nname = "weather"\nversion = "0.1.0"\n'
    inside = await call(tools["write_file"], path="weather/pyproject.toml", content=content)
    assert inside.is_error and inside.text == (
        "weather/pyproject.toml was not written: weather/ is a package (it has __init__.py), and a project's "
        "pyproject.toml goes in the folder above its packages. Write it as pyproject.toml."
    )
    assert not (jail.root / "weather" / "pyproject.toml").exists()
    assert not (await call(tools["write_file"], path="pyproject.toml", content=content)).is_error
    (jail.root / "tools").mkdir()  # a folder that is no package may hold its own project
    assert not (await call(tools["write_file"], path="tools/pyproject.toml", content=content)).is_error


async def test_an_edit_going_back_to_a_version_it_changed_again_is_refused(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    """fix_failing_test: the 1.5B swapped sorted(values) and sorted(values, reverse=True) six times."""
    context = ToolContext(run_id="r", workspace=jail.root)
    original, reversed_ = "ordered = sorted(values)\n", "ordered = sorted(values, reverse=True)\n"
    (jail.root / "stats.py").write_text(original)

    async def swap(old: str, new: str) -> str:
        result = await call(tools["edit_file"], context, path="./stats.py", old_text=old.strip(), new_text=new.strip())
        return result.text

    assert (await swap(original, reversed_)).startswith("Edited ./stats.py")
    assert (await swap(reversed_, original)).startswith("Edited ./stats.py")  # back to the file as given: once
    refused = await swap(original, reversed_)
    assert refused.startswith("stats.py is unchanged: this edit makes it exactly as one of your earlier edits made it")
    assert (jail.root / "stats.py").read_text() == original
    other = "ordered = sorted(values)\nmiddle = len(ordered) // 2 - 1\n"
    assert (await swap(original, other)).startswith("Edited ./stats.py")  # a different change goes through
    fresh = ToolContext(run_id="s", workspace=jail.root)  # another run starts its own record
    result = await call(
        tools["edit_file"], fresh, path="stats.py", old_text="middle = len(ordered) // 2 - 1", new_text="x = 1"
    )
    assert result.text.startswith("Edited stats.py")
