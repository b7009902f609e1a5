"""The python tool's note on code that looks for text the workspace's files spell in another case."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.python_cases import call
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.builtin.search_lint import other_case_search

# rename_product: the check matched nothing, the code printed "Updated all documents", three times.
RENAME = (
    "import os\nfor folder, _, names in os.walk('docs'):\n    for name in sorted(names):\n"
    "        path = os.path.join(folder, name)\n        if 'skylark' in read_file(path):\n"
    "            edit_file(path, 'skylark', 'nimbus', replace_all=True)\nprint('Updated all documents')\n"
)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "faq.md").write_text("Skylark syncs your notes.\n")
    (tmp_path / "docs" / "intro.md").write_text("Meet Skylark.\n")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\0skylark")  # binary files are not read
    return tmp_path


def test_a_search_for_text_the_files_spell_in_another_case_is_named(docs: Path) -> None:
    assert other_case_search(RENAME, docs) == (
        "line 5 looks for 'skylark', which no workspace file has; docs/faq.md and 1 more file have 'Skylark', "
        "in another case. Search for the text as the files spell it (the search found nothing, without an error)"
    )
    replaced = "text = open('docs/faq.md').read()\nprint(text.replace('SKYLARK', 'Nimbus'))"
    assert "line 2 looks for 'SKYLARK'" in (other_case_search(replaced, docs) or "")
    edited = "edit_file('docs/faq.md', old_text='skylark syncs', new_text='Nimbus syncs')"
    assert "has 'Skylark syncs', in another case" in (other_case_search(edited, docs) or "")


@pytest.mark.parametrize(
    "code",
    [
        RENAME.replace("'skylark'", "'Skylark'"),  # spelled as the files have it
        RENAME.replace("read_file(path)", "read_file(path).lower()").replace("edit_file(path, 'skylark'", "f(x"),
        "print('nimbus' in 'x')",  # in no file in any case: nothing to say
        "print('sk' in text)",  # too short to tell
        "print([n for n in names if n.endswith('SKYLARK')])",  # a file name's end, not a search of the files
        "if 'skylark' in (",  # does not parse
    ],
)
def test_searches_that_match_the_files_or_lower_their_case_are_fine(docs: Path, code: str) -> None:
    assert other_case_search(code, docs) is None


async def test_the_python_tool_adds_the_note(runner: PythonRunner) -> None:
    workspace = Path(runner.sandbox.workspace)
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "faq.md").write_text("Skylark syncs your notes.\n")
    code = "import os\nfor name in os.listdir('docs'):\n    if 'skylark' in read_file(f'docs/{name}'): print(name)"
    result = await call(runner.tool, code)
    assert result.text.endswith(
        "Note: your code's line 3 looks for 'skylark', which no workspace file has; docs/faq.md has 'Skylark', in "
        "another case. Search for the text as the files spell it (the search found nothing, without an error)."
    )
