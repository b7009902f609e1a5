"""planning: every command, every bad input, and the change callback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pymanus.messages import ToolCall
from pymanus.tools.builtin.planning import Plan, PlanBoard, PlanStep, planning_tool
from pymanus.tools.tool import ToolContext, ToolResult
from pymanus.tools.toolset import Toolset

CONTEXT = ToolContext(run_id="run-1")


class Harness:
    """A board, its tool in a toolset, and the plans its callback saw."""

    def __init__(self) -> None:
        self.changes: list[Plan] = []
        self.board = PlanBoard(on_change=self.changes.append)
        self.toolset = Toolset([planning_tool(self.board)])

    async def call(self, **arguments: Any) -> ToolResult:
        outcome = await self.toolset.run_call(
            ToolCall(id="c", name="planning", arguments=json.dumps(arguments)), CONTEXT
        )
        return outcome.result


@pytest.fixture
def plan() -> Harness:
    return Harness()


async def created(plan: Harness) -> Harness:
    result = await plan.call(command="create", title="Trip", steps=["Book flight", "Book hotel", "Pack"])
    assert not result.is_error, result.text
    return plan


def test_tool_shape() -> None:
    tool = planning_tool(PlanBoard())
    assert tool.name == "planning" and not tool.parallel_safe
    assert tool.parameters["properties"]["command"]["enum"] == ["create", "update", "mark_step", "get"]
    assert tool.parameters["properties"]["status"]["anyOf"][0]["enum"] == [
        "not_started",
        "in_progress",
        "completed",
        "blocked",
    ]


async def test_create_renders_a_checklist(plan: Harness) -> None:
    result = await plan.call(command="create", title="  Trip ", steps=["Book   flight", "Book hotel", "Pack"])
    assert result.text == (
        "Plan created.\nPlan: Trip (0/3 completed)\n1. [ ] Book flight\n2. [ ] Book hotel\n3. [ ] Pack"
    )
    assert plan.board.plan == Plan(
        title="Trip",
        steps=[PlanStep(id=1, text="Book flight"), PlanStep(id=2, text="Book hotel"), PlanStep(id=3, text="Pack")],
    )
    assert plan.changes == [plan.board.plan]


async def test_create_without_title_and_create_again_replaces(plan: Harness) -> None:
    result = await plan.call(command="create", steps=["Only step"])
    assert "Plan: Plan (0/1 completed)" in result.text
    await created(plan)
    assert plan.board.plan is not None and plan.board.plan.title == "Trip"
    assert len(plan.changes) == 2


async def test_mark_step_with_notes_and_progress(plan: Harness) -> None:
    await created(plan)
    done = await plan.call(command="mark_step", step_index=1, status="completed", notes="AF 123, 9:00")
    assert done.text.splitlines() == [
        "Step 1 is now completed.",
        "Plan: Trip (1/3 completed)",
        "1. [x] Book flight — AF 123, 9:00",
        "2. [ ] Book hotel",
        "3. [ ] Pack",
        "Next: step 2.",
    ]
    await plan.call(command="mark_step", step_index=2, status="in_progress")
    blocked = await plan.call(command="mark_step", step_index=3, status="blocked", notes="need weather")
    assert "Plan: Trip (1/3 completed, 1 in progress, 1 blocked)" in blocked.text
    assert "2. [>] Book hotel" in blocked.text and "3. [!] Pack — need weather" in blocked.text
    # notes are kept when a later mark gives none
    again = await plan.call(command="mark_step", step_index=1, status="completed")
    assert "1. [x] Book flight — AF 123, 9:00" in again.text
    assert len(plan.changes) == 5


async def test_all_completed(plan: Harness) -> None:
    await created(plan)
    for index in (1, 2, 3):
        result = await plan.call(command="mark_step", step_index=index, status="completed")
    assert "(3/3 completed)" in result.text and result.text.endswith("All steps are completed.")


async def test_get(plan: Harness) -> None:
    await created(plan)
    await plan.call(command="mark_step", step_index=1, status="in_progress")
    result = await plan.call(command="get")
    assert result.text.startswith("Plan: Trip (0/3 completed, 1 in progress)\n1. [>] Book flight")
    assert result.text.endswith("Next: step 1.")
    assert len(plan.changes) == 2  # get changes nothing


async def test_update_keeps_status_of_unchanged_steps(plan: Harness) -> None:
    await created(plan)
    await plan.call(command="mark_step", step_index=1, status="completed", notes="done early")
    await plan.call(command="mark_step", step_index=3, status="blocked")
    result = await plan.call(command="update", steps=["Get visa", "Book flight", "Book hotel", "Pack bags"])
    assert result.text.splitlines() == [
        "Plan updated.",
        "Plan: Trip (1/4 completed)",
        "1. [ ] Get visa",
        "2. [x] Book flight — done early",
        "3. [ ] Book hotel",
        "4. [ ] Pack bags",
    ]
    renamed = await plan.call(command="update", title="Holiday", steps=["Book flight", "Book flight"])
    assert renamed.text.splitlines()[1:] == [
        "Plan: Holiday (1/2 completed)",
        "1. [x] Book flight — done early",
        "2. [ ] Book flight",
    ]


# -- bad inputs --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"command": "get"}, "There is no plan yet"),
        ({"command": "update", "steps": ["a"]}, "There is no plan yet"),
        ({"command": "mark_step", "step_index": 1, "status": "completed"}, "There is no plan yet"),
        ({"command": "create", "title": "T"}, 'command="create" needs `steps`'),
        ({"command": "create", "steps": []}, "at least one step"),
        ({"command": "create", "steps": ["ok", "  "]}, "Every step needs some text"),
    ],
)
async def test_errors_without_a_plan(plan: Harness, arguments: dict[str, Any], message: str) -> None:
    result = await plan.call(**arguments)
    assert result.is_error and message in result.text
    assert plan.board.plan is None and plan.changes == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"command": "update"}, 'command="update" needs `steps`'),
        ({"command": "update", "steps": []}, "at least one step"),
        ({"command": "mark_step", "status": "completed"}, "needs `step_index` (from 1) and `status`"),
        ({"command": "mark_step", "step_index": 2}, "needs `step_index` (from 1) and `status`"),
        (
            {"command": "mark_step", "step_index": 4, "status": "completed"},
            "There is no step 4: the plan has steps 1 to 3.",
        ),
        ({"command": "mark_step", "step_index": 0, "status": "completed"}, "There is no step 0"),
        ({"command": "mark_step", "step_index": 1, "status": "done"}, "status"),
        ({"command": "mark_step", "step_index": "first", "status": "completed"}, "step_index"),
        ({"command": "delete"}, "command"),
        ({"command": "create", "steps": "one step"}, "steps"),
        ({"command": "get", "extra": 1}, "extra"),
        ({}, "command"),
    ],
)
async def test_errors_with_a_plan_change_nothing(plan: Harness, arguments: dict[str, Any], message: str) -> None:
    await created(plan)
    before = plan.board.plan
    result = await plan.call(**arguments)
    assert result.is_error and message in result.text, result.text
    assert plan.board.plan == before and len(plan.changes) == 1


async def test_bad_status_names_the_allowed_values(plan: Harness) -> None:
    await created(plan)
    result = await plan.call(command="mark_step", step_index=1, status="done")
    assert "'not_started', 'in_progress', 'completed' or 'blocked'" in result.text


def test_two_boards_share_nothing() -> None:
    first, second = PlanBoard(), PlanBoard()
    first.create("A", ["x"])
    assert second.plan is None
