"""Repair of line breaks that a JSON-encoded tool call put inside Python string literals."""

from __future__ import annotations

import pytest

from pymanus.tools.builtin.code_repair import repair_string_line_breaks


def test_line_break_inside_an_f_string_is_escaped() -> None:
    broken = "total = 3\nprint(f'Totals:\n{total}\nDone')"
    repaired = repair_string_line_breaks(broken)
    assert repaired == "total = 3\nprint(f'Totals:\\n{total}\\nDone')"
    scope: dict[str, object] = {}
    exec(compile(repaired, "<t>", "exec"), scope)  # the repaired code runs


def test_several_broken_strings_and_escaped_quotes() -> None:
    broken = "a = \"x\ny\"\nb = 'it\\'s\nfine'\nc = 1"
    assert repair_string_line_breaks(broken) == "a = \"x\\ny\"\nb = 'it\\'s\\nfine'\nc = 1"


@pytest.mark.parametrize(
    "code",
    [
        "x = 1\nprint(x)",  # compiles: nothing to repair
        "def f(:\n    pass",  # another syntax error
        'x = """a\nb\nprint(\'c',  # triple quotes: not touched
        "print('never closed)",  # the repair cannot make it compile
    ],
)
def test_nothing_is_changed_when_the_repair_does_not_apply(code: str) -> None:
    assert repair_string_line_breaks(code) is None


def test_quotes_in_comments_are_ignored() -> None:
    code = "# it's a comment\nprint('a\nb')"
    assert repair_string_line_breaks(code) == "# it's a comment\nprint('a\\nb')"
