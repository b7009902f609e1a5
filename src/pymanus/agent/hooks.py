"""The types of the functions a run calls into: the prompts it builds and the checks of its work."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pymanus.tools.tool import ToolContext

CompletionCheck = Callable[[str, str, ToolContext], "str | Awaitable[str | None] | None"]
"""``check(task, answer, context)``: what is still missing before ``answer`` is final, or None
(a coroutine function too, e.g. to run the task's tests)."""

NextStepPrompt = Callable[[str, ToolContext], "str | Awaitable[str | None] | None"]
"""``prompt(task, context)``: the reminder for the next request (``None``: no reminder)."""

TaskMessage = Callable[[str, ToolContext], "str | Awaitable[str]"]
"""``message(task, context)``: the first user message of a run, built from the task."""

DoneCheck = Callable[[str, ToolContext], "str | Awaitable[str | None] | None"]
"""``done(task, context)``: after a step whose calls all succeeded, the final answer when the
workspace shows the task done (its outputs exist and pass their checks), else None: the run
then ends without spending a step on ``terminate``."""
