"""A task that leaves records out ("not counting cancelled orders"), held against the code the run ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.preset_cases import run_preset
from pymanus import RunState
from pymanus.agent import progress
from pymanus.agent.exclusion_checks import unfiltered_exclusions
from pymanus.agent.manus import missing_outputs
from pymanus.models import ScriptedModel, call
from pymanus.tools.builtin.python_state import CODE_SOURCES
from pymanus.tools.tool import ToolContext

TASK = (
    "Using orders.json, work out how much each customer spent in total, not counting cancelled orders. "
    "Save the result to customer_totals.json as a JSON object mapping each customer's name to their total."
)
STATUSES = ["shipped", "pending", "cancelled", "shipped", "pending", "shipped", "cancelled", "shipped"]
ORDERS = [
    {"id": 1001 + i, "customer": ["Ana Silva", "Bob Chen"][i % 2], "status": status, "total": 10.0 * (i + 1)}
    for i, status in enumerate(STATUSES)
]
SUM_ALL = (
    "import json\ntotals = {}\nfor o in json.load(open('orders.json')):\n"
    "    totals[o['customer']] = totals.get(o['customer'], 0) + o['total']\n"
    "json.dump(totals, open('customer_totals.json', 'w'))"
)
LEFT_OUT_NOTE = (
    "the task leaves out what is cancelled, and 2 records of orders.json have status 'cancelled', but no code "
    "this run ran compares with 'cancelled': compute the result again with python, skipping those records "
    "(if row['status'] != 'cancelled'), and save it again"
)


def started(workspace: Path, task: str = TASK) -> ToolContext:
    (workspace / "orders.json").write_text(json.dumps(ORDERS))
    context = ToolContext(run_id="r", workspace=workspace)
    progress.task_message(task, context)
    return context


def test_totals_from_code_that_never_names_the_left_out_value_are_sent_back(tmp_path: Path) -> None:
    context = started(tmp_path)
    context.state[CODE_SOURCES] = SUM_ALL
    (tmp_path / "customer_totals.json").write_text('{"Ana Silva": 160.0, "Bob Chen": 200.0}')
    assert unfiltered_exclusions(TASK, context) == [LEFT_OUT_NOTE]
    answer = missing_outputs(TASK, "Done.", context)
    assert answer is not None and LEFT_OUT_NOTE in answer


def test_a_filter_that_keeps_one_value_by_name_is_sent_back_too(tmp_path: Path) -> None:
    # customer_totals run 102: `if order['status'] == 'shipped'` lost every pending order.
    context = started(tmp_path)
    context.state[CODE_SOURCES] = SUM_ALL.replace("    totals", "    if o['status'] == 'shipped':\n        totals")
    assert unfiltered_exclusions(TASK, context) == [LEFT_OUT_NOTE]


@pytest.mark.parametrize(
    ("code", "script"),
    [
        (SUM_ALL.replace("    totals", "    if o['status'] != 'cancelled':\n        totals"), None),
        ('orders = [o for o in orders if o["status"] != "Cancelled"]', None),
        ("python totals.py", "orders = [o for o in orders if o['status'] not in ('cancelled',)]\n"),
    ],
)
def test_code_or_a_written_script_that_names_the_value_passes(tmp_path: Path, code: str, script: str | None) -> None:
    context = started(tmp_path)
    context.state[CODE_SOURCES] = code
    if script is not None:
        (tmp_path / "totals.py").write_text(script)
    assert unfiltered_exclusions(TASK, context) == []


@pytest.mark.parametrize(
    "task",
    [
        "Using orders.json, work out how much each customer spent in total.",  # nothing left out
        "Sum the totals of orders.json without rounding.",  # left out, but no field holds "rounding"
    ],
)
def test_tasks_that_leave_out_no_value_of_the_data_pass(tmp_path: Path, task: str) -> None:
    context = started(tmp_path, task)
    context.state[CODE_SOURCES] = SUM_ALL
    assert unfiltered_exclusions(task, context) == []


async def test_a_run_that_counted_the_left_out_records_is_sent_back_and_fixes_them(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "orders.json").write_text(json.dumps(ORDERS))
    model = ScriptedModel(
        [
            call("python", code=SUM_ALL),
            call("terminate", status="success", message="Saved customer_totals.json."),
            call("python", code=SUM_ALL.replace("    totals", "    if o['status'] != 'cancelled':\n        totals")),
            call("terminate", status="success", message="Saved customer_totals.json."),
        ]
    )
    result = await run_preset(workspace, model, TASK)
    sent_back = next(m.text for m in result.messages if m.role == "tool" and m.name == "terminate")
    assert LEFT_OUT_NOTE in sent_back
    assert result.state is RunState.FINISHED
    assert json.loads((workspace / "customer_totals.json").read_text()) == {"Ana Silva": 60.0, "Bob Chen": 200.0}
