"""The workspace briefing of the first message and the progress reminders of the Manus preset."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from helpers.file_cases import call
from pymanus.agent.manus import missing_outputs
from pymanus.agent.progress import (
    NEXT_STEP_PROMPT,
    QUESTION_STEP_PROMPT,
    named_folders,
    next_step_prompt,
    task_message,
)
from pymanus.agent.task_scope import locate, named_files
from pymanus.sandbox import PathJail
from pymanus.tools import ToolContext
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.workspace_scan import (
    BRIEF_FILES,
    DATA_ROWS_SHOWN,
    changed_files,
    describe_changes,
    describe_workspace,
    scan,
)


def context(workspace: Path) -> ToolContext:
    return ToolContext(run_id="r", workspace=workspace)


# -- scans and briefings ------------------------------------------------------------------
def test_briefing_names_files_with_their_shape_and_shows_small_ones(tmp_path: Path) -> None:
    (tmp_path / "sales.csv").write_text("date,region,amount\n2024-03-01,South,10.5\n2024-03-02,West,3\n")
    (tmp_path / "orders.json").write_text(json.dumps([{"id": 1, "status": "shipped"}, {"id": 2, "status": "new"}]))
    (tmp_path / "config.json").write_text(json.dumps({"port": 1, "host": "x"}))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("# Notes\n")
    (tmp_path / "big.txt").write_text("word " * 20_000)
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(300))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: main\n")
    brief = describe_workspace(tmp_path)
    assert "- sales.csv (3 lines; columns: date, region, amount; first row: 2024-03-01, South, 10.5)" in brief
    assert "- orders.json (1 line; a JSON list of 2 objects with keys id, status)" in brief
    assert "- config.json (1 line; a JSON object with keys port, host)" in brief
    assert "- docs/notes.md (1 line)" in brief
    assert "- big.txt (97.7 KB)" in brief and "- image.png (308 B)" in brief
    assert ".git" not in brief
    assert "sales.csv:\n```\ndate,region,amount\n2024-03-01,South,10.5\n2024-03-02,West,3\n```" in brief
    assert "word word" not in brief  # too big to show
    assert brief.index("- sales.csv") < brief.index("- docs/notes.md")  # top level first


def test_briefing_shows_indented_json_with_one_item_per_line(tmp_path: Path) -> None:
    orders = [{"id": 1001, "customer": "Zoë", "total": 291.88}, {"id": 1002, "customer": "Bob", "total": 478.0}]
    (tmp_path / "orders.json").write_text(json.dumps(orders, indent=2))
    (tmp_path / "config.json").write_text(json.dumps({"port": 8080, "hosts": ["a", "b"]}, indent=4))
    (tmp_path / "tight.json").write_text('{"a":1}')
    brief = describe_workspace(tmp_path)
    assert (
        "orders.json (its JSON with one item per line):\n```\n[\n"
        '{"id": 1001, "customer": "Zoë", "total": 291.88},\n{"id": 1002, "customer": "Bob", "total": 478.0}\n]\n```'
    ) in brief
    assert 'config.json (its JSON with one item per line):\n```\n{\n"port": 8080,\n"hosts": ["a", "b"]\n}\n```' in brief
    assert 'tight.json:\n```\n{"a":1}\n```' in brief  # already shorter than one item per line
    assert "- orders.json (12 lines; a JSON list of 2 objects with keys id, customer, total)" in brief


async def test_briefing_shows_only_the_first_records_of_a_data_file(tmp_path: Path) -> None:
    rows = [f"2024-03-{day:02},North,{day * 10}.5" for day in range(1, 21)]
    (tmp_path / "sales.csv").write_text("date,region,amount\n" + "\n".join(rows) + "\n")
    (tmp_path / "six.csv").write_text("n\n" + "\n".join(map(str, range(6))) + "\n")  # one row more: shown whole
    (tmp_path / "orders.json").write_text(json.dumps([{"id": n, "total": n * 2.5} for n in range(20)], indent=2))
    (tmp_path / "settings.json").write_text(json.dumps({f"key{n}": n for n in range(20)}, indent=2))
    (tmp_path / "events.jsonl").write_text("".join(json.dumps({"n": n}) + "\n" for n in range(10)))
    ctx = context(tmp_path)
    brief = task_message("Total the amounts per region in sales.csv.", ctx)
    shown = "\n".join(["date,region,amount", *rows[:DATA_ROWS_SHOWN]])
    assert f"sales.csv (first {DATA_ROWS_SHOWN} of 20 rows):\n```\n{shown}\n```" in brief
    assert rows[DATA_ROWS_SHOWN] not in brief
    assert "six.csv:\n```\nn\n0\n1\n2\n3\n4\n5\n```" in brief
    assert (
        "orders.json (its JSON with one item per line; first 5 of 20 items):\n```\n[\n"
        + ",\n".join(json.dumps({"id": n, "total": n * 2.5}) for n in range(5))
        + ",\n```"
    ) in brief
    assert '"key19": 19' in brief  # an object's keys are not records: shown whole
    assert 'events.jsonl (first 5 of 10 lines):\n```\n{"n": 0}\n' in brief and '{"n": 5}' not in brief
    [read] = [tool for tool in file_tools(PathJail(tmp_path)) if tool.name == "read_file"]
    assert rows[-1] in (await call(read, ctx, path="sales.csv", start_line=1)).text  # a range: read as usual
    ranged = (await call(read, ctx, path="sales.csv", start_line=1, end_line=6, preview=True)).text
    assert ranged.startswith("sales.csv (lines 1-6 of 21):") and rows[DATA_ROWS_SHOWN] not in ranged
    for whole in ({}, {"preview": True}):
        assert (await call(read, ctx, path="sales.csv", **whole)).text == (
            "The first rows of sales.csv are shown in the first message, and it has not changed since. It has 21 "
            "lines: compute from all of them with python (its code reads the file), or read_file with start_line "
            "and end_line for the lines you need."
        )
    (tmp_path / "sales.csv").write_text("date,region,amount\n2024-04-01,East,3\n")  # changed: previewed as usual
    assert "2024-04-01,East,3" in (await call(read, ctx, path="sales.csv", preview=True)).text


async def test_reading_a_file_the_first_message_shows_whole_says_so(tmp_path: Path) -> None:
    (tmp_path / "sales.csv").write_text("region,amount\nNorth,10\n")
    (tmp_path / "big.txt").write_text("word " * 20_000)  # too big to show: read as usual
    ctx = context(tmp_path)
    task_message("Total the amounts in sales.csv.", ctx)
    [read] = [tool for tool in file_tools(PathJail(tmp_path)) if tool.name == "read_file"]
    whole_ranges: list[dict[str, Any]] = [
        {},
        {"preview": True},
        {"start_line": 1, "end_line": 2},  # every line, numbered: still nothing new
        {"end_line": 9},
        {"start_line": 1, "end_line": 5, "preview": True},
    ]
    for arguments in whole_ranges:
        result = await call(read, ctx, path="sales.csv", **arguments)
        assert result.text == (
            "sales.csv is shown whole in the first message and has not changed since: use it from there "
            "(read_file with start_line and end_line within its 2 lines shows those lines numbered)."
        )
    assert "1\tregion,amount" in (await call(read, ctx, path="sales.csv", start_line=1, end_line=1)).text
    assert "2\tNorth,10" in (await call(read, ctx, path="sales.csv", start_line=2)).text
    assert "word word" in (await call(read, ctx, path="big.txt", end_line=1)).text
    (tmp_path / "sales.csv").write_text("region,amount\nNorth,12\n")  # changed since: shown again
    assert "North,12" in (await call(read, ctx, path="sales.csv")).text
    assert "North,12" in (await call(read, path="sales.csv")).text  # a run without a briefing


def test_briefing_counts_the_values_of_category_fields_in_all_records_of_a_data_file(tmp_path: Path) -> None:
    # customer_totals: the first five orders were shipped or pending; "not cancelled" kept only shipped ones.
    statuses = ["shipped", "pending", "shipped", "shipped", "pending", *["cancelled"] * 4, *["pending"] * 3]
    orders = [{"id": n, "status": s, "note": f"n{n}", "total": n * 2.5} for n, s in enumerate(statuses)]
    (tmp_path / "orders.json").write_text(json.dumps(orders, indent=2))
    rows = [f"{region},{10 + n}" for n, region in enumerate(["North", "South"] * 6)]
    (tmp_path / "sales.csv").write_text("region,amount\n" + "\n".join(rows) + "\n")
    (tmp_path / "few.csv").write_text("region,amount\nNorth,1\nSouth,2\n")  # shown whole: nothing to count
    brief = describe_workspace(tmp_path)
    assert "Counts of values in all of orders.json: status: pending 5, cancelled 4, shipped 3." in brief
    assert "Counts of values in all of sales.csv: region: North 6, South 6." in brief
    assert "note:" not in brief and "amount:" not in brief  # every value differs; numbers are not categories
    assert "of few.csv" not in brief


def test_briefing_shows_files_only_within_its_budget(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name[0] * 1500)
    brief = describe_workspace(tmp_path, show_budget=3200)
    assert brief.count("```") == 4  # two files shown, each opened and closed
    assert "c" * 1500 not in brief


def test_briefing_lists_and_shows_the_files_the_task_names_first_in_its_order(tmp_path: Path) -> None:
    for name in ("customers.csv", "orders.csv", "sub/notes.txt", "a.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(f"{name}\n")
    brief = describe_workspace(tmp_path, first=["notes.txt", "orders.csv", "customers.csv", "gone.csv"])
    listed = [line.split(" (")[0] for line in brief.splitlines() if line.startswith("- ")]
    assert listed == ["- sub/notes.txt", "- orders.csv", "- customers.csv", "- a.txt"]
    assert brief.index("orders.csv:\n```") < brief.index("customers.csv:\n```")
    assert next(line for line in describe_workspace(tmp_path).splitlines() if line.startswith("- ")).startswith(
        "- a.txt"
    )  # by default: shallowest first, then by name


def test_briefing_of_empty_crowded_and_broken_workspaces(tmp_path: Path) -> None:
    assert describe_workspace(tmp_path) == "The workspace is empty."
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "latin.csv").write_bytes("name,city\nJos\xe9,Z\xfcrich\n".encode("latin-1"))
    brief = describe_workspace(tmp_path)
    assert "- bad.json (1 line; not valid JSON)" in brief
    assert "- latin.csv (22 B; columns: name, city; first row: Jos\ufffd, Z\ufffdrich)" in brief
    for index in range(BRIEF_FILES + 5):
        (tmp_path / f"f{index:03}.txt").write_text("x")
    assert f"... and {BRIEF_FILES + 7 - BRIEF_FILES} more files" in describe_workspace(tmp_path)
    assert scan(tmp_path, limit=10) is None


def test_scan_never_follows_symlinks_out_of_the_workspace(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link").symlink_to(outside)
    (workspace / "file-link.txt").symlink_to(outside / "secret.txt")
    assert scan(workspace) == {}
    assert "secret" not in describe_workspace(workspace)


def test_changes_between_scans(tmp_path: Path) -> None:
    (tmp_path / "same.txt").write_text("a\n")
    (tmp_path / "edited.py").write_text("x = 1\n")
    before = scan(tmp_path)
    (tmp_path / "edited.py").write_text("x = 2\ny = 3\n")
    os.utime(tmp_path / "edited.py", ns=(1, 1))  # a different stamp even on a coarse clock
    (tmp_path / "new.md").write_text("")
    after = scan(tmp_path)
    assert changed_files(before, after) == ["edited.py", "new.md"]
    assert describe_changes(tmp_path, before, after) == "Files written: edited.py (2 lines), new.md (empty)."
    assert describe_changes(tmp_path, after, after) == ""
    assert changed_files(None, after) == []  # a scan that gave up reports nothing rather than everything


def test_changes_show_the_head_of_written_files(tmp_path: Path) -> None:
    """The rows a model's code wrote are in front of it: a wrong join or a 0 count is visible."""
    before = scan(tmp_path)
    (tmp_path / "merged.csv").write_text("id,name,amount\n1,Ann,3\n,Bob,\n" + "".join(f"{n},x,1\n" for n in range(20)))
    (tmp_path / "blank.txt").write_text("\n")
    after = scan(tmp_path)
    text = describe_changes(tmp_path, before, after, show_budget=1_000)
    assert text.startswith("Files written: blank.txt (1 line), merged.csv (23 lines).\n\n")
    assert "merged.csv (first 12 of 23 lines):\n```\nid,name,amount\n1,Ann,3\n,Bob,\n0,x,1\n" in text
    assert text.endswith("8,x,1\n```\nEmpty cells: 1 in id, 1 in amount.")
    assert "blank.txt:" not in text  # nothing to see
    tight = describe_changes(tmp_path, before, after, show_budget=20)
    assert "merged.csv (first 1 of 23 lines):\n```\nid,name,amount\n```\nEmpty cells" in tight
    printed = (tmp_path / "merged.csv").read_text()
    assert "Ann" not in describe_changes(tmp_path, before, after, show_budget=1_000, shown_already=printed)


def test_changes_warn_of_written_files_that_do_not_parse(tmp_path: Path) -> None:
    """Code that writes a broken file hears of it at once, as write_file would have said."""
    before = scan(tmp_path)
    (tmp_path / "report.md").write_text("# Sales\n\n| Region | Total |\n|---|---|\nregion\n4865.83\n")
    (tmp_path / "fine.json").write_text('{"a": 1}')
    after = scan(tmp_path)
    text = describe_changes(tmp_path, before, after, show_budget=1_000)
    assert "Warning: report.md is not valid Markdown (the table at line 3 has a header and no rows" in text
    assert text.endswith("Fix it before using the file.")
    assert text.count("Warning:") == 1  # the JSON parses
    assert "Warning: report.md" in describe_changes(tmp_path, before, after)  # shown even without the heads


# -- named files and progress -------------------------------------------------------------
def test_named_files_and_where_they_are(tmp_path: Path) -> None:
    task = "Make a package with __init__.py and cli.py, plus README.md; read data/in.csv and README.md."
    assert named_files(task) == ["__init__.py", "cli.py", "README.md", "data/in.csv"]
    (tmp_path / "weather").mkdir()
    (tmp_path / "weather" / "__init__.py").write_text("")
    assert locate(tmp_path, "__init__.py") == tmp_path / "weather" / "__init__.py"
    assert locate(tmp_path, "cli.py") is None
    assert locate(tmp_path, "data/in.csv") is None  # a path must be at that path
    # Files the task puts in a folder it names are expected there: cli.py at the top does not count.
    placed = "Create a package folder weather with __init__.py, cli.py and api.py; cli.py has main(). Add notes.md."
    assert named_files(placed) == ["weather/__init__.py", "weather/cli.py", "weather/api.py", "notes.md"]
    (tmp_path / "cli.py").write_text("")
    assert locate(tmp_path, "weather/cli.py") is None


def test_named_folders() -> None:
    layout = "Set up a package folder weather with cli.py; a tests folder with a test; a README.md in this folder."
    assert named_folders(layout) == ["weather", "tests"]
    assert named_folders("Put the charts in a directory named `plots`.") == ["plots"]
    assert named_folders("For each .txt file in the texts folder, count its lines.") == ["texts"]
    assert named_folders("Save it in the same folder as the input, or a new folder.") == []
    assert named_folders("Delete the tmp folder and write a log.") == []  # not one the task wants to exist


def test_the_reminder_and_the_completion_check_name_missing_folders(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    task = "Create a package folder app with main.py, and a tests folder with a test for it."
    task_message(task, ctx)
    assert "Not written yet: app/main.py, tests/." in next_step_prompt(task, ctx)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print(1)\n")
    assert "Not written yet: tests/." in next_step_prompt(task, ctx)
    problem = missing_outputs(task, "Done.", ctx)
    assert problem is not None
    assert "the task asks for a tests folder, but the workspace has no tests/ at its top" in problem
    (tmp_path / "app" / "tests").mkdir()  # project_layout: a new tests folder inside the package is not it
    (tmp_path / "app" / "tests" / "test_main.py").write_text("def test_main():\n    pass\n")
    assert "Not written yet: tests/." in next_step_prompt(task, ctx)
    (tmp_path / "app" / "tests").rename(tmp_path / "tests")
    assert "Not written" not in next_step_prompt(task, ctx)
    assert missing_outputs(task, "Done.", ctx) is None


def test_a_folder_the_workspace_had_anywhere_counts_where_it_is(tmp_path: Path) -> None:
    (tmp_path / "src" / "app" / "tests").mkdir(parents=True)
    (tmp_path / "src" / "app" / "tests" / "test_old.py").write_text("def test_old():\n    pass\n")
    ctx = context(tmp_path)
    task = "Add a test for parse() to the tests folder."
    task_message(task, ctx)
    assert "tests/" not in next_step_prompt(task, ctx)
    assert "tests folder" not in (missing_outputs(task, "Done.", ctx) or "")


def test_the_reminder_names_requested_files_that_are_still_empty(tmp_path: Path) -> None:
    """project_layout created README.md with `touch`, then spent its steps on tests: empty, it was
    still owed, and a reminder that called it written let the run end without it."""
    ctx = context(tmp_path)
    task = "Create a package folder app with __init__.py and a README.md that says what it does."
    task_message(task, ctx)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")  # a marker: empty is complete
    (tmp_path / "README.md").write_text("")
    reminder = next_step_prompt(task, ctx)
    assert "Still empty: README.md. Write what the task asks of it." in reminder
    assert "__init__.py" not in reminder.split("Still empty:")[1] and "call `terminate` now" not in reminder
    (tmp_path / "README.md").write_text("# app\n\nIt does things.\n")
    reminder = next_step_prompt(task, ctx)
    assert "Still empty" not in reminder and "call `terminate` now" in reminder


def test_progress_reminder_follows_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "scores.csv").write_text("player,score\nava,3\n")
    ctx = context(tmp_path)
    task = "From scores.csv, write top5.csv and summary.md."
    first = task_message(task, ctx)
    assert first.startswith(task + "\n\nFiles in the workspace:\n- scores.csv")
    reminder = next_step_prompt(task, ctx)
    assert reminder.startswith(f"The task: {task}\nNot written yet: top5.csv, summary.md. Write them now")
    assert "Files written" not in reminder
    assert "terminate` now" not in reminder
    (tmp_path / "top5.csv").write_text("player,score\n")
    reminder = next_step_prompt(task, ctx)
    assert reminder.startswith("Files written so far: top5.csv. Not written yet: summary.md. Write it now")
    assert "terminate` now" not in reminder
    (tmp_path / "summary.md").write_text("# Summary\n")
    reminder = next_step_prompt(task, ctx)
    assert "Files written so far: summary.md, top5.csv." in reminder and "Not written" not in reminder
    assert "call `terminate` now" in reminder


def test_progress_reminder_for_a_question_without_output_files(tmp_path: Path) -> None:
    (tmp_path / "inventory.csv").write_text("item,stock\nbolt,3\n")
    ctx = context(tmp_path)
    task = "How many items in inventory.csv have fewer than 10 units?"
    task_message(task, ctx)
    assert next_step_prompt(task, ctx) == f"The task: {task}\n{QUESTION_STEP_PROMPT}"
    change = "Find the items in inventory.csv with fewer than 10 units and write them to low.csv."
    task_message(change, ctx)
    assert next_step_prompt(change, ctx).endswith(NEXT_STEP_PROMPT)
    long_task = task + " Details: " + "x" * 5_000
    assert len(next_step_prompt(long_task, ctx)) < 1_000  # the task is repeated within a budget
