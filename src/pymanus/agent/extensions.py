"""What an application adds to the loop: prompts and answer checks, bundled with tool middleware.

An :class:`Extension` can

* add ``instructions`` to the system prompt,
* add a section to the first message (:meth:`Extension.briefing`),
* add a reminder to every later request (:meth:`Extension.reminder`; sent, never kept),
* check a final answer before it is accepted (:meth:`Extension.check_answer`): a returned
  message goes back to the model and the run goes on, ``None`` accepts it,
* bring :class:`~pymanus.tools.middleware.ToolMiddleware` for every tool call.

These are the only ways into a run: the loop itself knows nothing of what an extension does.
Each method may be sync or async.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pymanus.tools.middleware import ToolMiddleware
from pymanus.tools.tool import ToolContext

T = TypeVar("T")

AnswerCheck = Callable[[str, str, ToolContext], "str | Awaitable[str | None] | None"]
"""``check(task, answer, context)``: what is still wrong with ``answer`` (sent back to the
model), or ``None`` to accept it."""


class Extension:
    """Override what you need; the defaults add nothing and accept every answer."""

    name: str = "extension"
    """Names the extension in logs and in the switches that turn it on or off."""
    instructions: str = ""
    """Added to the end of the system prompt."""
    middleware: ToolMiddleware | None = None
    """Applied to every tool call of the agent's runs."""

    def briefing(self, task: str, context: ToolContext) -> str | Awaitable[str | None] | None:
        """A section added to the first message, after the task."""
        return None

    def reminder(self, task: str, context: ToolContext) -> str | Awaitable[str | None] | None:
        """A note sent after the conversation at every step after the first (not kept in it)."""
        return None

    def check_answer(self, task: str, answer: str, context: ToolContext) -> str | Awaitable[str | None] | None:
        """What is still wrong with the final ``answer`` (sent back), or ``None`` to accept it."""
        return None


class AnswerCheckExtension(Extension):
    """An :class:`Extension` made of one answer check function (``Agent(answer_checks=[...])``)."""

    def __init__(self, check: AnswerCheck) -> None:
        self.name = getattr(check, "__name__", "answer_check")
        self._check = check

    def check_answer(self, task: str, answer: str, context: ToolContext) -> str | Awaitable[str | None] | None:
        return self._check(task, answer, context)


async def settled(value: T | Awaitable[T]) -> T:
    """An extension's value, awaited when its method is a coroutine function."""
    return await value if inspect.isawaitable(value) else value
