"""Keywords small models give library methods under another name are renamed before the code runs."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from helpers.python_cases import call
from pymanus.sandbox import Sandbox
from pymanus.tools import Tool
from pymanus.tools.builtin.keyword_aliases import rename_keywords


def test_a_file_keyword_of_to_markdown_becomes_buf() -> None:
    code = "t = 'é'\ndf.to_markdown(index=False, file_path='report.md')\nother.to_markdown(path='b.md')"
    renamed, notes = rename_keywords(code)
    assert renamed == "t = 'é'\ndf.to_markdown(index=False, buf='report.md')\nother.to_markdown(buf='b.md')"
    assert notes == [
        "Note: to_markdown() has no `file_path` parameter; line 2 ran with `buf=` instead (the file to write).",
        "Note: to_markdown() has no `path` parameter; line 3 ran with `buf=` instead (the file to write).",
    ]


@pytest.mark.parametrize(
    "code",
    [
        "df.to_markdown('a.md', file_path='b.md')",  # buf given by position: tabulate's own error is the truth
        "df.to_markdown(buf='a.md', path='b.md')",
        "df.to_csv(file_path='a.csv')",  # not a method with aliases
        "to_markdown(file_path='a.md')",  # a function of the model's own, not the method
        "df.to_markdown(file_path=",  # does not parse: left to the repairs and the error
    ],
)
def test_other_calls_are_left_as_written(code: str) -> None:
    assert rename_keywords(code) == (code, [])


@pytest.mark.skipif(find_spec("pandas") is None or find_spec("tabulate") is None, reason="needs pandas and tabulate")
async def test_the_python_tool_runs_the_renamed_call_and_says_so(once: Tool, sandbox: Sandbox) -> None:
    code = (
        "import pandas as pd\n"
        "totals = pd.DataFrame({'region': ['North', 'South'], 'total': [4.5, 2.0]})\n"
        "totals.to_markdown(index=False, file_path='report.md')"
    )
    result = await call(once, code)
    assert not result.is_error, result.text
    assert result.text.startswith("Note: to_markdown() has no `file_path` parameter; line 3 ran with `buf=`")
    assert (sandbox.workspace / "report.md").read_text().splitlines()[2] == "| North    |     4.5 |"
