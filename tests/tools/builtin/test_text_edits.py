"""restated_context: lines a model's new_text repeats from around its old_text are replaced, not doubled."""

from __future__ import annotations

import pytest

from pymanus.tools.builtin.text_edits import restated_context, restated_note

MODULE = "def slugify(title):\n    return title\n\n\ndef word_count(text):\n    return len(text.split())\n"


def _edit(text: str, old: str, new: str) -> tuple[str, list[int]]:
    grown, numbers = restated_context(text, old, new)
    return text.replace(grown, new, 1), numbers


def test_a_line_new_text_starts_with_that_precedes_old_text_is_replaced() -> None:
    edited, numbers = _edit(MODULE, "return title", "def slugify(title):\n    return title.lower()")
    assert numbers == [1]
    assert edited == MODULE.replace("return title\n", "return title.lower()\n")


def test_lines_new_text_ends_with_that_follow_old_text_are_replaced() -> None:
    edited, numbers = _edit(MODULE, "    return title", "    return title.lower()\n\n\ndef word_count(text):")
    assert numbers == [3, 4, 5]
    assert edited == MODULE.replace("return title\n", "return title.lower()\n")


def test_context_on_both_sides_is_replaced_once() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    edited, numbers = _edit(text, "b = 2", "a = 1\nb = 20\nc = 3")
    assert (edited, numbers) == ("a = 1\nb = 20\nc = 3\n", [1, 3])


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        ("a = 1\nb = 2\n", "b = 2", "b = 3"),  # nothing repeated
        ("a = 1\nb = 2\n", "b = 2", "a = 1"),  # new_text is only the neighbour: nothing of its own
        ("x = [\n]\n}\nb = 2\n", "b = 2", "}\nb = 3"),  # a bracket line may be meant twice
        ("a = 1\n\nb = 2\n", "b = 2", "\nb = 3"),  # so may a blank line
        ("a = 1\nb = 2 + c\n", "c", "a = 1\nc"),  # old_text starts inside its line
        ("a = 1\nb = 2\nb = 2\n", "b = 2", "a = 1\nb = 3"),  # old_text occurs twice: the edit refuses it
    ],
)
def test_old_text_stays_as_given_without_restated_whole_lines(text: str, old: str, new: str) -> None:
    assert restated_context(text, old, new) == (old, [])


def test_the_note_names_the_lines() -> None:
    assert restated_note("m.py", [4]).startswith("new_text repeats line 4 of m.py, the line next to old_text, so it")
    assert restated_note("m.py", [3, 4, 5]).startswith("new_text repeats lines 3-5 of m.py, the lines next")
    assert restated_note("m.py", [1, 3]).startswith("new_text repeats lines 1, 3 of m.py")
