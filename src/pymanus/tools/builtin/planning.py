"""``planning``: the agent's own checklist for a run.

A :class:`PlanBoard` holds the plan of one run; every change is reported to its
``on_change`` callback (the agent loop turns it into a ``PlanUpdated`` event).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from pymanus.errors import ToolError
from pymanus.tools.tool import Tool, ToolContext, tool

StepStatus = Literal["not_started", "in_progress", "completed", "blocked"]
STATUS_MARKS: dict[str, str] = {"not_started": "[ ]", "in_progress": "[>]", "completed": "[x]", "blocked": "[!]"}


class PlanStep(BaseModel):
    """One step of a plan; ``id`` is its number in the checklist, from 1."""

    id: int
    text: str
    status: StepStatus = "not_started"
    notes: str = ""


class Plan(BaseModel):
    """A titled list of steps."""

    title: str
    steps: list[PlanStep]

    def count(self, status: StepStatus) -> int:
        """How many steps have ``status``."""
        return sum(1 for step in self.steps if step.status == status)

    def render(self) -> str:
        """A compact checklist with progress counts."""
        counts = [f"{self.count('completed')}/{len(self.steps)} completed"]
        counts += [f"{self.count(s)} {s.replace('_', ' ')}" for s in ("in_progress", "blocked") if self.count(s)]
        lines = [f"Plan: {self.title} ({', '.join(counts)})"]
        for step in self.steps:
            notes = f" — {step.notes}" if step.notes else ""
            lines.append(f"{step.id}. {STATUS_MARKS[step.status]} {step.text}{notes}")
        return "\n".join(lines)


class PlanBoard:
    """The plan of one run, and who to tell when it changes."""

    def __init__(self, on_change: Callable[[Plan], None] | None = None) -> None:
        self.plan: Plan | None = None
        self.on_change = on_change

    def create(self, title: str, steps: list[str]) -> Plan:
        """Start a new plan (replacing any current one)."""
        texts = _clean_steps(steps)
        return self._set(Plan(title=title.strip() or "Plan", steps=_numbered(texts)))

    def update(self, steps: list[str], title: str | None = None) -> Plan:
        """Replace the steps; a step whose text is unchanged keeps its status and notes."""
        current = self.current()
        texts = _clean_steps(steps)
        old = {}
        for step in reversed(current.steps):  # the first of equal texts wins
            old[step.text] = step
        new_steps = []
        for number, text in enumerate(texts, 1):
            kept = old.pop(text, None)
            status: StepStatus = kept.status if kept else "not_started"
            new_steps.append(PlanStep(id=number, text=text, status=status, notes=kept.notes if kept else ""))
        new_title = title.strip() if title and title.strip() else current.title
        return self._set(Plan(title=new_title, steps=new_steps))

    def mark(self, step_id: int, status: StepStatus, notes: str | None = None) -> Plan:
        """Set the status (and, if given, the notes) of step number ``step_id``."""
        current = self.current()
        if not 1 <= step_id <= len(current.steps):
            raise ToolError(f"There is no step {step_id}: the plan has steps 1 to {len(current.steps)}.")
        steps = [s.model_copy() for s in current.steps]
        step = steps[step_id - 1]
        step.status = status
        if notes is not None:
            step.notes = notes.strip()
        return self._set(current.model_copy(update={"steps": steps}))

    def current(self) -> Plan:
        """The plan; a :class:`ToolError` for the model if there is none yet."""
        if self.plan is None:
            raise ToolError('There is no plan yet. Create one first with command="create", a title and steps.')
        return self.plan

    def _set(self, plan: Plan) -> Plan:
        self.plan = plan
        if self.on_change is not None:
            self.on_change(plan)
        return plan


@dataclass
class _RunBoard:
    """The plan board of one run (kept in its :meth:`ToolContext.store`)."""

    board: PlanBoard | None = None


def planning_tool(board: PlanBoard | None = None) -> Tool:
    """Build the ``planning`` tool.

    With a ``board``, every run shares it; without one (the usual case) each run keeps
    its own board in its context, and every change is announced to the run as a
    ``"plan"`` notification (the loop's ``PlanUpdated`` event).
    """

    def board_of(context: ToolContext) -> PlanBoard:
        if board is not None:
            return board
        held = context.store(_RunBoard)
        if held.board is None:
            held.board = PlanBoard(on_change=lambda plan: context.notify("plan", plan.model_dump()))
        return held.board

    # Async so it runs on the event loop: ``on_change`` is then called from the loop's thread.
    @tool(name="planning", parallel_safe=False)
    async def planning(
        context: ToolContext,
        command: Literal["create", "update", "mark_step", "get"],
        title: str | None = None,
        steps: list[str] | None = None,
        step_index: int | None = None,
        status: StepStatus | None = None,
        notes: str | None = None,
    ) -> str:
        """Keep a plan for the task as a checklist: create it, revise it, mark steps, read it.

        Args:
            command: "create" (title, steps), "update" (steps; unchanged steps keep their
                status), "mark_step" (step_index, status, optional notes), or "get".
            title: the plan's title (create; optional for update).
            steps: the step texts, in order (create, update).
            step_index: the step's number as shown in the checklist, starting at 1 (mark_step).
            status: the step's new status (mark_step).
            notes: a short note on the step, e.g. what was found or why it is blocked (mark_step).
        """
        current = board_of(context)
        if command == "create":
            if steps is None:
                raise ToolError('command="create" needs `steps`: a list of step texts (and a `title`).')
            return "Plan created.\n" + current.create(title or "", steps).render()
        if command == "update":
            if steps is None:
                raise ToolError('command="update" needs `steps`: the full new list of step texts.')
            return "Plan updated.\n" + current.update(steps, title).render()
        if command == "mark_step":
            if step_index is None or status is None:
                raise ToolError('command="mark_step" needs `step_index` (from 1) and `status`.')
            plan = current.mark(step_index, status, notes)
            return f"Step {step_index} is now {status}.\n" + plan.render() + _next_hint(plan)
        plan = current.current()
        return plan.render() + _next_hint(plan)

    return planning


def _clean_steps(steps: list[str]) -> list[str]:
    texts = [" ".join(text.split()) for text in steps]
    if not texts:
        raise ToolError("The plan needs at least one step.")
    if any(not text for text in texts):
        raise ToolError("Every step needs some text; remove the empty steps.")
    return texts


def _numbered(texts: list[str]) -> list[PlanStep]:
    return [PlanStep(id=number, text=text) for number, text in enumerate(texts, 1)]


def _next_hint(plan: Plan) -> str:
    for step in plan.steps:
        if step.status in ("in_progress", "not_started"):
            return f"\nNext: step {step.id}."
    if all(step.status == "completed" for step in plan.steps):
        return "\nAll steps are completed."
    return ""
