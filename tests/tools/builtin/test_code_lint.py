"""Code that runs but cannot do what it means: a regular expression given to str.replace."""

from __future__ import annotations

import pytest

from pymanus.tools.builtin.code_lint import regex_in_replace


@pytest.mark.parametrize(
    ("source", "line", "shown"),
    [
        ("slug = title.lower().replace(r'[^a-zA-Z0-9]', '-')", 1, "r'[^a-zA-Z0-9]'"),
        ("x = 1\ntext = text.replace('\\\\s+', ' ')", 2, "r'\\s+'"),
        ("df['name'].str.replace('[a-z]+', '')", 1, "r'[a-z]+'"),
        ("t.replace(\"(?i)it's\", '')", 1, '"(?i)it\'s"'),
        ("def f(t):\n    return t.replace('.*', '')", 2, "r'.*'"),
    ],
)
def test_a_pattern_given_to_replace_is_named(source: str, line: int, shown: str) -> None:
    assert regex_in_replace(source) == (
        f"line {line} calls .replace({shown}, ...), but str.replace looks for that exact text, not a regular "
        "expression; for a pattern use re.sub(pattern, replacement, text) (import re)"
    )


@pytest.mark.parametrize(
    "source",
    [
        "t.replace('a', 'b')",
        "t.replace('- [ ]', '- [x]')",  # a checkbox, not a character class
        "t.replace('...', '…')",
        "s.str.replace(r'\\s+', ' ', regex=True)",
        "re.sub(r'[^a-z]+', '-', t)",
        "t.replace(old, new)",
        "t.replace(",  # does not parse: the syntax check speaks for it
    ],
)
def test_plain_replacements_are_fine(source: str) -> None:
    assert regex_in_replace(source) is None
