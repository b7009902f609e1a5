"""Outputs about "each customer" or "per region", held against the groups of the input tables."""

from __future__ import annotations

import json
from pathlib import Path

from pymanus.agent import progress
from pymanus.agent.coverage_checks import coverage_problems
from pymanus.agent.manus import missing_outputs
from pymanus.tools.tool import ToolContext

TASK = (
    "Work out how much each customer spent in total, not counting cancelled orders. Save the result to "
    "customer_totals.json as a JSON object mapping each customer's name to their total."
)
ORDERS = [
    {"id": 1, "customer": "Ana Silva", "amount": 30.0, "status": "shipped"},
    {"id": 2, "customer": "Bob Chen", "amount": 12.5, "status": "pending"},
    {"id": 3, "customer": "Ana Silva", "amount": 5.0, "status": "cancelled"},
    {"id": 4, "customer": "Cleo Park", "amount": 8.0, "status": "shipped"},
]


def started(workspace: Path) -> ToolContext:
    (workspace / "orders.json").write_text(json.dumps(ORDERS))
    context = ToolContext(run_id="r", workspace=workspace)
    progress.task_message(TASK, context)
    return context


def test_a_customer_left_out_by_a_filter_sends_the_answer_back(tmp_path: Path) -> None:
    context = started(tmp_path)
    # The 1.5B kept only status == 'shipped': Bob Chen, whose order is pending, had no entry.
    (tmp_path / "customer_totals.json").write_text(json.dumps({"Ana Silva": 30.0, "Cleo Park": 8.0}))
    assert coverage_problems(TASK, context) == [
        "customer_totals.json has nothing for 'Bob Chen', a customer in orders.json, while the task asks about "
        "each customer: check which rows your code keeps (a filter such as == on one value drops the others) "
        "and write the file again"
    ]
    problem = missing_outputs(TASK, "Done.", context)
    assert problem is not None and "'Bob Chen'" in problem


def test_an_output_naming_every_group_passes(tmp_path: Path) -> None:
    context = started(tmp_path)
    (tmp_path / "customer_totals.json").write_text(json.dumps({"Ana Silva": 30.0, "Bob Chen": 12.5, "Cleo Park": 8.0}))
    assert coverage_problems(TASK, context) == []
    assert missing_outputs(TASK, "Done.", context) is None


def test_per_region_in_a_csv_names_each_missing_region_and_counts_the_rest(tmp_path: Path) -> None:
    regions = ["North", "South", "East", "West", "Centre"]
    rows = "".join(f"{region},{index}\n" for index, region in enumerate(regions))
    (tmp_path / "sales.csv").write_text("Region,amount\n" + rows)
    context = ToolContext(run_id="r", workspace=tmp_path)
    task = "Read sales.csv and write report.md with the total amount per region."
    progress.task_message(task, context)
    (tmp_path / "report.md").write_text("| region | total |\n|---|---|\n| North | 0 |\n")
    [problem] = coverage_problems(task, context)
    assert problem.startswith("report.md has nothing for 'South', 'East', 'West' (and 1 more), each a region")


def test_outputs_about_none_of_the_groups_or_tasks_without_each_are_not_judged(tmp_path: Path) -> None:
    context = started(tmp_path)
    (tmp_path / "summary.txt").write_text("Total spent: 55.5\n")  # names no customer at all
    assert coverage_problems(TASK, context) == []
    (tmp_path / "ana.txt").write_text("Ana Silva spent 30.0\n")
    assert coverage_problems("Write ana.txt with what Ana Silva spent.", context) == []
    # A column of numbers is no group, nor is a table with a single value in the column.
    (tmp_path / "ids.csv").write_text("id,customer\n1,7\n2,8\n")
    (tmp_path / "one.csv").write_text("region,amount\nNorth,3\nNorth,4\n")
    assert coverage_problems("For each id and each region, list it in summary.txt.", context) == []
