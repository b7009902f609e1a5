"""How edit_file changes text: Windows line endings, one or every occurrence, shifted indentation, added lines."""

from __future__ import annotations

import pytest

from pymanus.errors import ToolError
from pymanus.tools.builtin.text_edits import (
    insert_lines,
    not_found,
    replace_every,
    replace_once,
    same_line_endings,
    shifted_match,
)

MODULE = "def slugify(title):\n    return title\n\n\ndef word_count(text):\n    return len(text.split())\n"


def test_old_and_new_text_take_the_files_windows_line_endings() -> None:
    text = "a = 1\r\nb = 2\r\n"
    assert same_line_endings(text, "a = 1\nb = 2", "a = 10\nb = 20") == ("a = 1\r\nb = 2", "a = 10\r\nb = 20")
    assert same_line_endings("a = 1\nb = 2\n", "a = 1\nb = 2", "x") == ("a = 1\nb = 2", "x")
    assert replace_once("m.py", text, "a = 1\nb = 2", "a = 10\nb = 20") == ("a = 10\r\nb = 20\r\n", 1)


def test_replace_once_gives_the_first_line_and_refuses_text_that_occurs_twice() -> None:
    assert replace_once("m.py", MODULE, "return len(text.split())", "return 0") == (
        MODULE.replace("return len(text.split())", "return 0"),
        6,
    )
    with pytest.raises(ToolError, match=r"old_text occurs 2 times in m.py \(at lines 1, 5\)"):
        replace_once("m.py", MODULE, "def ", "async def ")


def test_replace_every_counts_what_it_replaced() -> None:
    assert replace_every("m.py", MODULE, "def ", "async def ") == (MODULE.replace("def ", "async def "), 2)


def test_old_text_without_its_indentation_is_found_once_and_new_text_is_shifted_alike() -> None:
    found = shifted_match(MODULE, "return title", "text = title.lower()\nreturn text")
    assert found == ("    return title", "    text = title.lower()\n    return text", 2, "    ")
    assert shifted_match(MODULE, "return x", "return y") is None  # not in the file at all
    assert shifted_match(MODULE, "    return title", "return y") is None  # already indented: another mismatch
    twice = "if a:\n    x = 1\nif b:\n    x = 1\n"
    assert shifted_match(twice, "x = 1", "x = 2") is None  # two places: which one is not known


def test_not_found_names_the_closest_line() -> None:
    message = not_found("m.py", MODULE, "return len(text.split(' '))")
    assert message.startswith("old_text was not found in m.py. The closest line is 6: '    return len(text.split())'.")
    assert "The closest line" not in not_found("m.py", MODULE, "zzzz qqqq")


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        ("a\nb\n", 0, ("x\na\nb\n", 1)),
        ("a\nb\n", 1, ("a\nx\nb\n", 2)),
        ("a\nb", 2, ("a\nb\nx\n", 3)),  # a last line without its line break gets one
        ("", 0, ("x\n", 1)),
    ],
)
def test_insert_lines_after_a_line(text: str, after: int, expected: tuple[str, int]) -> None:
    assert insert_lines("m.py", text, after, "x") == expected


def test_insert_lines_refuses_a_line_out_of_range_and_empty_text() -> None:
    with pytest.raises(ToolError, match="insert_line must be between 0 and 2"):
        insert_lines("m.py", "a\nb\n", 3, "x")
    with pytest.raises(ToolError, match="new_text is empty"):
        insert_lines("m.py", "a\n", 1, "")
