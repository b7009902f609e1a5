"""Windows-style workspace paths in code the python tool runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.python_cases import call
from pymanus.tools.builtin.path_repair import windows_paths
from pymanus.tools.builtin.python import PythonRunner


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "alpha.txt").write_text("one two\n")
    return tmp_path


def test_a_path_with_backslashes_that_names_a_workspace_path_with_slashes_is_rewritten(texts: Path) -> None:
    code = "import os\nfor folder, _, names in os.walk('.\\\\texts'):\n    print(open(r'texts\\alpha.txt').read())"
    fixed, notes = windows_paths(code, texts)
    assert fixed == "import os\nfor folder, _, names in os.walk('./texts'):\n    print(open('texts/alpha.txt').read())"
    assert notes == [
        "Note: line 2's path '.\\\\texts' uses \\, which Linux reads as part of a name; it ran as './texts'.",
        "Note: line 3's path 'texts\\\\alpha.txt' uses \\, which Linux reads as part of a name; it ran as "
        "'texts/alpha.txt'.",
    ]


def test_a_path_whose_backslash_made_an_escape_is_rewritten(texts: Path) -> None:
    # word_counts run 206: os.walk('.\texts') walked '.', a tab and 'exts', found nothing, and the
    # table of counts had a total row only.
    code = "import os\nprint(list(os.walk('.\\texts')), open('texts\\alpha.txt'), 'a\\tb', '\\n')"
    fixed, notes = windows_paths(code, texts)
    assert fixed == "import os\nprint(list(os.walk('./texts')), open('texts/alpha.txt'), 'a\\tb', '\\n')"
    assert notes == [
        "Note: line 2's path '.\\texts' uses \\, which Linux reads as part of a name; it ran as './texts'.",
        "Note: line 2's path 'texts\\alpha.txt' uses \\, which Linux reads as part of a name; it ran as "
        "'texts/alpha.txt'.",
    ]


@pytest.mark.parametrize(
    "code",
    [
        "import re\nprint(re.findall(r'\\w+', 'a b'), '\\n'.join(['a']))",  # escapes, not paths
        "print('.\\\\docs')",  # no such folder either way
        "print(f'.\\\\texts', b'.\\\\texts')",  # f-strings and bytes are left alone
        "print('..\\\\..\\\\etc')",  # outside the workspace
        "print('.\\\\texts'",  # does not tokenize
    ],
)
def test_other_strings_are_left_alone(texts: Path, code: str) -> None:
    assert windows_paths(code, texts) == (code, [])


def test_a_path_that_exists_with_its_backslashes_is_left_alone(texts: Path) -> None:
    (texts / "a\\b").write_text("")  # a name with a backslash in it, as Linux allows
    (texts / "a").mkdir()
    (texts / "a" / "b").write_text("")
    assert windows_paths("open('a\\\\b')", texts) == ("open('a\\\\b')", [])


async def test_the_python_tool_runs_the_path_with_slashes(runner: PythonRunner) -> None:
    workspace = Path(runner.sandbox.workspace)
    (workspace / "texts").mkdir(parents=True)
    (workspace / "texts" / "alpha.txt").write_text("one two\n")
    code = "import os\nprint(sorted(n for _, _, names in os.walk('.\\\\texts') for n in names))"
    result = await call(runner.tool, code)
    assert result.text == (
        "Note: line 2's path '.\\\\texts' uses \\, which Linux reads as part of a name; it ran as './texts'.\n"
        "['alpha.txt']"
    )
