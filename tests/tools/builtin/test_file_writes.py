"""What write_file and edit_file say of a file they wrote that does not parse as its extension says
(JSON, TOML, Python)."""

from __future__ import annotations

from helpers.file_cases import call
from pymanus.sandbox import PathJail
from pymanus.tools import Tool


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


async def test_a_toml_file_that_does_not_parse_gets_the_parse_error(
    tools: dict[str, Tool],
) -> None:
    other = await call(tools["write_file"], path="pyproject.toml", content="name weather\n")
    assert "not valid TOML" in other.text
    one_line = await call(tools["write_file"], path="pyproject.toml", content="project = {name = 'weather'}\n")
    assert "Warning" not in one_line.text  # valid TOML: the same [project] table
