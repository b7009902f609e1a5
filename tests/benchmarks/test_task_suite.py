"""The task suite's checkers fail on no work and on wrong work, and pass on a correct solution.

Each task has a hand-made solution here that reads the task's input files the way an agent
would, and a wrong solution with a plausible mistake (the runner: ``test_task_runner.py``).
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for ``benchmarks``

from benchmarks.tasks import checks
from benchmarks.tasks.suite import TASKS, Task, select

Solution = Callable[[Path], str]
"""Does a task's work in the workspace; returns the final answer."""


def read(workspace: Path, name: str) -> str:
    return (workspace / name).read_text(encoding="utf-8")


def write(workspace: Path, name: str, text: str) -> None:
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def csv_rows(workspace: Path, name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(read(workspace, name))))


def csv_text(header: list[str], rows: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


# -- hand-made solutions, correct and wrong --------------------------------------------------
def sales_report(workspace: Path, *, wrong: bool = False) -> str:
    totals: dict[str, float] = defaultdict(float)
    for row in csv_rows(workspace, "sales.csv"):
        totals[row["region"]] += 1 if wrong else float(row["amount"])  # wrong: counts sales
    lines = ["# Sales by region", "", "| Region | Total |", "|:--|--:|"]
    lines += [f"| **{region}** | ${total:,.2f} |" for region, total in sorted(totals.items())]
    lines += [f"| Total | ${sum(totals.values()):,.2f} |", "", "Computed from sales.csv."]
    write(workspace, "report.md", "\n".join(lines) + "\n")
    return "report.md written"


def shipped_orders(workspace: Path, *, wrong: bool = False) -> str:
    orders = json.loads(read(workspace, "orders.json"))
    keep = ("shipped", "pending") if wrong else ("shipped",)
    write(workspace, "shipped.json", json.dumps([o for o in orders if o["status"] in keep], indent=2))
    return "done"


def customer_totals(workspace: Path, *, wrong: bool = False) -> str:
    totals: dict[str, float] = defaultdict(float)
    for order in json.loads(read(workspace, "orders.json")):
        if wrong or order["status"] != "cancelled":
            totals[order["customer"]] += order["total"]
    write(workspace, "customer_totals.json", json.dumps({k: round(v, 2) for k, v in totals.items()}))
    return "done"


def merge_csv(workspace: Path, *, wrong: bool = False) -> str:
    customers = {row["customer_id"]: row for row in csv_rows(workspace, "customers.csv")}
    rows = []
    for order in csv_rows(workspace, "orders.csv"):
        customer = customers[order["customer_id"]]
        city = customer["name"] if wrong else customer["city"]  # wrong: a slipped column
        rows.append([order["order_id"], order["customer_id"], customer["name"], city, order["amount"]])
    write(workspace, "merged.csv", csv_text(["Order ID", "customer_id", "Name", "City", "Amount"], rows))
    return "done"


def csv_to_json(workspace: Path, *, wrong: bool = False) -> str:
    rows = csv_rows(workspace, "products.csv")
    if not wrong:  # wrong: every value stays a string
        for row in rows:
            row["price"], row["in_stock"] = float(row["price"]), int(row["in_stock"])  # type: ignore[assignment]
    write(workspace, "products.json", json.dumps(rows, indent=2))
    return "done"


def column_stats(workspace: Path, *, wrong: bool = False) -> str:
    values = [float(row["temperature"]) for row in csv_rows(workspace, "readings.csv")]
    median = values[len(values) // 2] if wrong else statistics.median(values)  # wrong: unsorted middle
    write(workspace, "stats.json", json.dumps({"mean": round(statistics.mean(values), 2), "median": round(median, 2)}))
    return "done"


def top_scores(workspace: Path, *, wrong: bool = False) -> str:
    rows = sorted(csv_rows(workspace, "scores.csv"), key=lambda row: int(row["score"]), reverse=not wrong)
    write(workspace, "top5.csv", csv_text(["player", "score"], [[r["player"], r["score"]] for r in rows[:5]]))
    return "done"


def squares_script(workspace: Path, *, wrong: bool = False) -> str:
    # wrong: the squares are right in squares.txt, but squares.py only defines a function
    script = "def squares():\n    for n in range(1, 11):\n        print(n * n)\n"
    write(workspace, "squares.py", script if wrong else script + "\n\nsquares()\n")
    write(workspace, "squares.txt", "".join(f"{n * n}\n" for n in range(1, 11)))
    return "done"


def fix_failing_test(workspace: Path, *, wrong: bool = False) -> str:
    source = read(workspace, "stats.py")
    if wrong:  # wrong: makes the test's own case pass and nothing else
        source = source.replace(
            "    ordered = sorted(values)",
            "    if values == [4, 1, 3, 2]:\n        return 2.5\n" + "    ordered = sorted(values)",
        )
    else:
        source = source.replace("ordered[middle] + ordered[middle + 1]", "ordered[middle - 1] + ordered[middle]")
    write(workspace, "stats.py", source)
    return "fixed"


def add_function(workspace: Path, *, wrong: bool = False) -> str:
    body = (
        '    return title.lower().replace(" ", "-")\n'
        if wrong
        else '    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")\n'
    )
    source = "import re\n\n" + read(workspace, "textutils.py") + "\n\ndef slugify(title: str) -> str:\n" + body
    write(workspace, "textutils.py", source)
    return "added"


def rename_function(workspace: Path, *, wrong: bool = False) -> str:
    names = ["shop/pricing.py"] if wrong else ["shop/pricing.py", "shop/cart.py", "main.py"]
    for name in names:
        write(workspace, name, read(workspace, name).replace("calc_tot", "compute_total"))
    return "renamed"


def project_layout(workspace: Path, *, wrong: bool = False) -> str:
    write(workspace, "weather/__init__.py", '"""Weather."""\n')
    write(workspace, "weather/cli.py", 'def main() -> None:\n    print("Weather CLI ready")\n')
    write(workspace, "tests/test_cli.py", "from weather.cli import main\n\n\ndef test_main(capsys):\n    main()\n")
    write(workspace, "README.md", "# weather\n\nA small command-line weather tool.\n")
    version = "1.0" if wrong else "0.1.0"
    write(workspace, "pyproject.toml", f'[project]\nname = "weather"\nversion = "{version}"\n')
    return "created"


def rename_product(workspace: Path, *, wrong: bool = False) -> str:
    names = ["docs/intro.md"] if wrong else [f"docs/{p.name}" for p in (workspace / "docs").iterdir()]
    for name in names:
        write(workspace, name, read(workspace, name).replace("Skylark", "Nimbus"))
    return "updated"


def meeting_bullets(workspace: Path, *, wrong: bool = False) -> str:
    text = read(workspace, "meeting.txt").strip()
    sentences = [text] if wrong else re.split(r"(?<=\.)\s+", text)
    write(workspace, "meeting_notes.md", "# Meeting notes\n\n" + "".join(f"- {s}\n" for s in sentences))
    return "done"


def status_summary(workspace: Path, *, wrong: bool = False) -> str:
    sections, blockers = [], []
    for path in sorted((workspace / "status").glob("*.txt")):
        lines = path.read_text().splitlines()
        team = lines[0].split()[-1]
        progress = next(line for line in lines if line.startswith("Progress"))
        blocked = next((line for line in lines if line.startswith("Blocked")), None)
        if blocked and not (wrong and team == "Beacon"):
            blockers.append(f"- {team}: {blocked.removeprefix('Blocked: ')}")
        sections.append(f"## {team}\n\n{progress}\n{blocked or 'No blockers.'}\n")
    write(workspace, "summary.md", "# Status\n\n" + "\n".join(sections) + "\n## Blockers\n\n" + "\n".join(blockers))
    return "done"


def word_counts(workspace: Path, *, wrong: bool = False) -> str:
    lines = ["| File | Lines | Words |", "|---|---|---|"]
    total_lines = total_words = 0
    for path in sorted((workspace / "texts").glob("*.txt")):
        text = path.read_text()
        n_lines, n_words = len(text.splitlines()), len(text.split())
        total_lines, total_words = total_lines + n_lines, total_words + n_words
        lines.append(f"| `{path.name}` | {n_lines} | {n_words} |")
    if not wrong:  # wrong: the total row the prompt asks for is missing
        lines.append(f"| **Total** | **{total_lines}** | **{total_words}** |")
    write(workspace, "counts.md", "\n".join(lines) + "\n")
    return "done"


def find_todos(workspace: Path, *, wrong: bool = False) -> str:
    base = workspace if wrong else workspace / "src"  # wrong: searches outside src/ too
    found = [p for p in sorted(base.rglob("*")) if p.is_file() and "TODO" in p.read_text()]
    write(workspace, "todo_files.txt", "".join(f"- ./{p.relative_to(workspace)}\n" for p in found))
    return "done"


def low_stock_answer(workspace: Path, *, wrong: bool = False) -> str:
    low = [row for row in csv_rows(workspace, "inventory.csv") if int(row["quantity"]) < (11 if wrong else 10)]
    return f"{len(low)} items have fewer than 10 units in stock."


def staging_port_answer(workspace: Path, *, wrong: bool = False) -> str:
    text = read(workspace, "config/servers.ini")
    section = "production" if wrong else "staging"
    port = re.search(rf"\[{section}\][^\[]*?port = (\d+)", text)
    assert port is not None
    return f"The {section} server uses port {port.group(1)}."


SOLUTIONS: dict[str, Callable[..., str]] = {
    fn.__name__: fn
    for fn in (
        sales_report,
        shipped_orders,
        customer_totals,
        merge_csv,
        csv_to_json,
        column_stats,
        top_scores,
        squares_script,
        fix_failing_test,
        add_function,
        rename_function,
        project_layout,
        rename_product,
        meeting_bullets,
        status_summary,
        word_counts,
        find_todos,
        low_stock_answer,
        staging_port_answer,
    )
}

TASK_IDS = [task.name for task in TASKS]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


# -- the suite --------------------------------------------------------------------------------
def test_suite_is_varied_and_complete() -> None:
    assert len(TASKS) >= 12
    assert len(set(TASK_IDS)) == len(TASK_IDS)
    assert {task.kind for task in TASKS} == {"data", "code", "text", "files", "answer"}
    assert set(SOLUTIONS) == set(TASK_IDS), "every task needs a hand-made solution here"
    original = select(["sales_report"])[0]
    assert original.prompt == (
        "Read sales.csv, compute the total amount per region, and write a markdown report to report.md "
        "with a table of regions and totals."
    )


def test_select_keeps_suite_order_and_rejects_unknown_names() -> None:
    assert [t.name for t in select(["top_scores", "sales_report"])] == ["sales_report", "top_scores"]
    assert select(None) == TASKS
    assert select(["", " "]) == TASKS
    with pytest.raises(KeyError, match="nope"):
        select(["nope"])


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_checker_fails_on_an_empty_workspace(task: Task, workspace: Path) -> None:
    ok, reason = task.check(workspace, "")
    assert not ok and reason


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_checker_fails_when_nothing_was_done(task: Task, workspace: Path) -> None:
    task.setup(workspace)
    ok, reason = task.check(workspace, "I have completed the task.")
    assert not ok and reason


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_checker_passes_a_correct_solution(task: Task, workspace: Path) -> None:
    task.setup(workspace)
    output = SOLUTIONS[task.name](workspace)
    assert task.check(workspace, output) == (True, "ok")


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_checker_fails_a_wrong_solution(task: Task, workspace: Path) -> None:
    task.setup(workspace)
    output = SOLUTIONS[task.name](workspace, wrong=True)
    ok, reason = task.check(workspace, output)
    assert not ok, f"{task.name} accepted a wrong solution"
    assert reason


@pytest.mark.parametrize("task", TASKS, ids=TASK_IDS)
def test_setup_is_deterministic(task: Task, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        task.setup(folder)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)


def test_checkers_survive_garbage_in_every_output_file(workspace: Path) -> None:
    names = ["report.md", "shipped.json", "customer_totals.json", "merged.csv", "products.json", "stats.json"]
    names += ["top5.csv", "meeting_notes.md", "summary.md", "counts.md", "todo_files.txt", "pyproject.toml"]
    for task in TASKS:
        task.setup(workspace)
    for name in names:
        (workspace / name).write_bytes(b"\xff\xfe not | what | was asked\n{[\n")
    for task in TASKS:
        ok, _ = task.check(workspace, "\x00")
        assert not ok, task.name


@pytest.mark.parametrize("toml", ['project = "weather"\n', 'tool = "poetry"\n', "[tool]\npoetry = 1\n"])
def test_the_project_checker_fails_a_pyproject_toml_of_the_wrong_shape(workspace: Path, toml: str) -> None:
    (layout,) = select(["project_layout"])
    project_layout(workspace)
    write(workspace, "pyproject.toml", toml)  # the checker must not crash on a string
    assert layout.check(workspace, "") == (False, "pyproject.toml has no [project] table")


def test_answer_checkers_accept_words_and_reject_ambiguity(workspace: Path) -> None:
    low_stock, port = select(["low_stock_answer", "staging_port_answer"])
    assert low_stock.check(workspace, "Seven.")[0]
    assert low_stock.check(workspace, "**7** items have fewer than 10 units.")[0]
    assert not low_stock.check(workspace, "7 (nuts 8, hinges 3, brackets 9, springs 0, chains 6, pins 4, magnets 7)")[0]
    assert not low_stock.check(workspace, "Between 5 and 7.")[0]
    assert port.check(workspace, "Port `9090` (see config/servers.ini).")[0]
    assert not port.check(workspace, "Staging: 9090, production: 8443")[0]


# -- the tolerant readers ---------------------------------------------------------------------
def test_numbers_are_read_with_separators_and_without_dates_or_versions() -> None:
    found = checks.numbers_in("$1,234.50, 7 and 12345.5 on 2024-03-05 with Python 3.11.7 at 80%")
    assert [(n.value, n.decimals) for n in found] == [(1234.5, 2), (7.0, 0), (12345.5, 1), (80.0, 0)]
    assert checks.mentions_value("total: 1,234.5", 1234.50)
    assert checks.mentions_value("about 1235", 1234.6)  # written rounded to a whole number
    assert not checks.mentions_value("1234.4", 1234.5)
    assert not checks.mentions_value("1,234", 1234.5, min_decimals=1)


def test_markdown_tables_are_read_loosely() -> None:
    text = "Intro | not a table?\n\nRegion | Total\n--- | ---\n**East** | 1,000\n| `West` | 2.50 |\n"
    rows = checks.markdown_rows(text)
    assert ["**East**", "1,000"] in rows and ["`West`", "2.50"] in rows
    assert checks.find_row(rows, "west") == ["`West`", "2.50"]
    assert checks.row_has_value(checks.find_row(rows, "east") or [], 1000, skip=["east"])
    linked = checks.markdown_rows("| [alpha.txt](texts/alpha.txt) | 3 |\n| North region | 4 |\n| alphabet.txt | 5 |")
    assert checks.find_row(linked, "alpha.txt") == ["[alpha.txt](texts/alpha.txt)", "3"]
    assert checks.find_row(linked, "north") == ["North region", "4"]
    assert checks.find_row(linked, "alpha") is None  # not a whole word of alphabet.txt or alpha.txt


def test_json_in_a_code_fence_is_accepted(workspace: Path) -> None:
    (workspace / "x.json").write_text('```json\n{"a": 1}\n```\n')
    assert checks.load_json(workspace, "x.json") == ({"a": 1}, None)


@pytest.mark.parametrize("name", ["test_cli.py", "cli_test.py"])
def test_the_project_checker_takes_every_test_file_name_pytest_collects(workspace: Path, name: str) -> None:
    (layout,) = select(["project_layout"])
    project_layout(workspace)
    (workspace / "tests" / "test_cli.py").rename(workspace / "tests" / name)  # a test file of another name
    assert layout.check(workspace, "") == (True, "ok")
    (workspace / "tests" / name).rename(workspace / "tests" / "cli_tests.py")  # pytest would not collect it
    assert layout.check(workspace, "") == (False, "tests/ has no test file that tests main()")
