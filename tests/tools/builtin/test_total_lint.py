"""A running total set to 0 that nothing adds to is named, in the python tool's result and for files."""

from __future__ import annotations

import pytest

from helpers.file_cases import call
from pymanus.tools import Tool
from pymanus.tools.builtin.total_lint import total_never_added

# word_counts run 231: total_lines grows in the loop, total_words never does; the total row said 0.
COUNTS = """rows = []
total_lines = 0
total_words = 0
for text in ['a b', 'c d e']:
    total_lines += 1
    rows.append((text, len(text.split())))
rows.append(('Total', total_lines, total_words))
print(rows[-1])
"""


async def test_the_python_tool_names_the_total_nothing_adds_to(once: Tool) -> None:
    result = await call(once, code=COUNTS)
    assert not result.is_error and result.text.startswith("('Total', 2, 0)")
    assert result.text.endswith(
        "Note: your code's line 3 sets total_words = 0 and nothing changes it, not even the loop at line 4, so it "
        "is still 0 where line 7 uses it: to add up values, add each one to it in the loop (total_words += value)."
    )


@pytest.mark.parametrize(
    "code",
    [
        COUNTS.replace("    total_lines += 1\n", "    total_lines += 1\n    total_words += 1\n"),  # it is added to
        "start = 0\nfor i in range(start, 3):\n    print(i)\n",  # used by the loop: a setting, not a total
        "total = 0\nprint(total)\n",  # no loop
        "total = 0\nfor x in [1]:\n    pass\ntotal = 5\nprint(total)\n",  # assigned again
        "def f(total=1):\n    return total\n\ntotal = 0\nfor x in [1]:\n    f(x)\nprint(f(total))\n",  # a parameter
        "for x in [1]:\n    pass\ntotal = 0\nprint(total)\n",  # set after the loop
        "total = 0\nfor x in [1]:\n    pass\n",  # never read
        "total = (\n",  # does not parse
    ],
)
def test_totals_that_change_or_are_no_totals_are_left_alone(code: str) -> None:
    assert total_never_added(code) is None
