"""Renames the task asks for: found in its words, and tracked in the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymanus.agent import progress
from pymanus.agent.manus import missing_outputs
from pymanus.agent.renames import Rename, rename_notes, requested_renames
from pymanus.tools import ToolContext


@pytest.mark.parametrize(
    ("task", "old", "new"),
    [
        ("Rename the function calc_tot to compute_total everywhere in this project.", "calc_tot", "compute_total"),
        ("rename `load` to `read_config` in the code", "load", "read_config"),
        ("Our product was renamed from Skylark to Nimbus. Update the docs.", "Skylark", "Nimbus"),
        ("Replace every foo with bar in the scripts.", "foo", "bar"),
        ("Update the files so they say Nimbus instead of Skylark.", "Skylark", "Nimbus"),
    ],
)
def test_renames_are_found_in_the_task(tmp_path: Path, task: str, old: str, new: str) -> None:
    assert requested_renames(task, tmp_path) == [Rename(old, new)]


@pytest.mark.parametrize(
    "task",
    [
        "Rename the file notes.txt to notes.md.",  # a file, not a name in the files
        "Find every file under src/ that contains TODO.",
        "Write a report of the totals to report.md.",
    ],
)
def test_tasks_without_a_rename_of_a_name(tmp_path: Path, task: str) -> None:
    assert requested_renames(task, tmp_path) == []


def test_leftovers_are_counted_inside_the_folder_the_task_names(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "intro.md").write_text("Skylark keeps notes. Skylark is fast.\n")
    (tmp_path / "docs" / "faq.md").write_text("Is Nimbus free? Skylarks sing.\n")
    (tmp_path / "CHANGELOG.md").write_text("First release of Skylark.\n")
    task = "Our product was renamed from Skylark to Nimbus. Update the documents in the docs folder."
    assert requested_renames(task, tmp_path) == [Rename("Skylark", "Nimbus", "docs")]
    assert rename_notes(task, tmp_path) == [
        "Skylark is still used in docs/intro.md (2): replace it by Nimbus there "
        '(edit_file {"path": "docs/intro.md", "old_text": "Skylark", "new_text": "Nimbus", "replace_all": true})'
    ]
    everywhere = "Our product was renamed from Skylark to Nimbus."
    assert rename_notes(everywhere, tmp_path)[0].startswith("Skylark is still used in CHANGELOG.md (1), docs/intro.md")
    (tmp_path / "docs" / "intro.md").write_text("Nimbus keeps notes.\n")
    assert rename_notes(task, tmp_path) == []


def test_an_unfinished_rename_is_in_the_reminder_and_sends_the_answer_back(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "pricing.py").write_text("def compute_total(items):\n    return sum(items)\n")
    (tmp_path / "main.py").write_text("from shop.pricing import calc_tot\nprint(calc_tot([1]))\n")
    context = ToolContext(run_id="r", workspace=tmp_path)
    task = "Rename the function calc_tot to compute_total everywhere."
    progress.task_message(task, context)
    reminder = progress.next_step_prompt(task, context)
    assert (
        'calc_tot is still used in main.py (2): replace it by compute_total there (edit_file {"path": "main.py", '
        '"old_text": "calc_tot", "new_text": "compute_total", "replace_all": true}), then the same in each other file.'
    ) in reminder
    assert "call `terminate` now" not in reminder
    problem = missing_outputs(task, "Done.", context)
    assert problem is not None and "calc_tot is still used in main.py (2)" in problem
    (tmp_path / "main.py").write_text("from shop.pricing import compute_total\nprint(compute_total([1]))\n")
    assert missing_outputs(task, "Done.", context) is None
    assert "still used" not in progress.next_step_prompt(task, context)
