"""The files a task only reads or says not to change, kept as they are, and the folder it limits itself to."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymanus.agent.task_scope import files_not_to_change, scoped_folder, source_files

EXISTING = {"sales.csv", "orders.json", "orders.csv", "customers.csv", "products.csv", "notes.txt", "config.txt"}


@pytest.mark.parametrize(
    ("task", "sources"),
    [
        ("Read sales.csv, compute the total per region, and write report.md.", ["sales.csv"]),
        ("Using orders.json, work out what each customer spent; save it to totals.json.", ["orders.json"]),
        ("Merge orders.csv with customers.csv on customer_id and write merged.csv.", ["orders.csv", "customers.csv"]),
        ("Convert products.csv to products.json.", ["products.csv"]),
        ("Convert the file `products.csv` to JSON.", ["products.csv"]),
        ("From scores.csv, write top5.csv.", []),  # scores.csv is not in the workspace
        ("Remove the debug lines from config.txt, then read notes.txt.", ["notes.txt"]),
        ("What is the mean of the amount column in sales.csv? Save it to mean.json.", ["sales.csv"]),
        ("Count the rows of orders.csv and write the count to count.txt.", ["orders.csv"]),
    ],
)
def test_files_the_task_reads_to_make_its_output_are_sources(task: str, sources: list[str]) -> None:
    assert source_files(task, EXISTING) == sources


@pytest.mark.parametrize(
    "task",
    [
        "Read notes.txt and append a line to notes.txt.",  # written to as well
        "Read products.csv and drop its empty rows in place.",
        "Read orders.csv and fix orders.csv where the amounts are negative.",
        "Add a total row to sales.csv.",
        "Load config.txt and overwrite the port.",
        "Read config.txt and add a debug setting.",  # no other file named: the change is to config.txt
        "Using orders.json, remove the cancelled orders.",
        "Delete the duplicate rows in sales.csv.",  # no other file named: the change is to sales.csv
    ],
)
def test_files_the_task_also_changes_are_not_sources(task: str) -> None:
    assert source_files(task, EXISTING) == []


def test_the_folder_a_task_limits_itself_to(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    assert scoped_folder("Find every file under src/ that contains TODO.", tmp_path) == "src"
    assert scoped_folder("Find every file under lib/ that contains TODO.", tmp_path) == ""  # not a folder here


PROJECT = {"stats.py", "test_stats.py", "tests/test_io.py", "tests/conftest.py", "io_test.py", "config.json"}


@pytest.mark.parametrize(
    ("task", "kept"),
    [
        (
            "Find the bug in stats.py and fix it so that the tests pass. Don't change the tests.",
            ["io_test.py", "test_stats.py", "tests/conftest.py", "tests/test_io.py"],
        ),
        (
            "Fix it without touching the test files.",
            ["io_test.py", "test_stats.py", "tests/conftest.py", "tests/test_io.py"],
        ),
        ("Turn debug on, but do not modify `config.json`.", ["config.json"]),
        ("Do not change settings.json.", []),  # not in the workspace
        ("Change the tests so they use pytest.", []),
        ("Fix stats.py.", []),
    ],
)
def test_files_the_task_says_not_to_change(task: str, kept: list[str]) -> None:
    assert files_not_to_change(task, PROJECT) == kept
