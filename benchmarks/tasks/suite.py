"""The task suite: real work of the kinds users ask for, each with a checker.

>>> from benchmarks.tasks.suite import TASKS, select
>>> [task.name for task in select(["sales_report"])]
['sales_report']

Each :class:`Task` writes its inputs into an empty workspace (small deterministic data made
in code), and its checker verifies the files the agent produced, or its final answer,
against values computed from the same data. The tasks live by kind in ``data_tasks``,
``code_tasks``, ``text_tasks`` and ``file_tasks``.
"""

from __future__ import annotations

from collections.abc import Iterable

from benchmarks.tasks import code_tasks, data_tasks, file_tasks, text_tasks
from benchmarks.tasks.task import Task, Verdict

TASKS: list[Task] = [*data_tasks.TASKS, *code_tasks.TASKS, *text_tasks.TASKS, *file_tasks.TASKS]
"""Every task, in the order the runner runs them."""


def select(names: Iterable[str] | None = None) -> list[Task]:
    """The tasks named in ``names`` (all when ``None`` or empty), in suite order.

    Raises :class:`KeyError` naming the unknown tasks and the known ones.
    """
    wanted = [name.strip() for name in names or () if name.strip()]
    if not wanted:
        return list(TASKS)
    known = {task.name for task in TASKS}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise KeyError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [task for task in TASKS if task.name in wanted]


__all__ = ["TASKS", "Task", "Verdict", "select"]
