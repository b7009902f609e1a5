"""The toolset: the registry of tools offered to the model, and how calls are run."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pymanus.messages import ToolCall
from pymanus.models.base import ToolDefinition
from pymanus.tools.middleware import ToolMiddleware
from pymanus.tools.tool import ArgumentsError, Tool, ToolContext, ToolResult, tool

logger = logging.getLogger("pymanus.tools")

Failure = Literal["unknown_tool", "bad_arguments", "refused", "error"]


@dataclass(frozen=True)
class ToolOutcome:
    """One executed call: the call, its result, and how it went."""

    call: ToolCall
    result: ToolResult
    arguments: dict[str, Any] | None
    """The validated arguments, or ``None`` when they were invalid."""
    failure: Failure | None
    duration: float


class Toolset:
    """An ordered set of tools with unique names, and the middleware every call goes through."""

    def __init__(
        self, tools: Iterable[Tool | Callable[..., Any]] = (), middleware: Sequence[ToolMiddleware] = ()
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self.middleware: tuple[ToolMiddleware, ...] = tuple(middleware)
        for item in tools:
            self.add(item)

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (a plain function is wrapped with ``@tool``); names must be unique."""
        new = item if isinstance(item, Tool) else tool(item)
        if new.name in self._tools:
            raise ValueError(f"two tools are named {new.name!r}; tool names must be unique")
        self._tools[new.name] = new
        return new

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if offered."""
        return self._tools.get(name)

    def without(self, *names: str) -> Toolset:
        """A copy of this toolset without the named tools."""
        return Toolset((t for t in self._tools.values() if t.name not in names), self.middleware)

    @property
    def names(self) -> list[str]:
        """The tool names, in order."""
        return list(self._tools)

    def definitions(self) -> list[ToolDefinition]:
        """What the model is told about every tool."""
        return [t.definition for t in self._tools.values()]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    async def run_calls(self, calls: list[ToolCall], context: ToolContext) -> list[ToolOutcome]:
        """Run the calls of one model response; outcomes come back in call order.

        The calls run concurrently when every tool involved is ``parallel_safe``,
        otherwise one after another. An ``exclusive`` tool called beside others is not
        run: its outcome tells the model to call it alone.
        """
        blocked = {
            index for index, c in enumerate(calls) if len(calls) > 1 and (t := self._tools.get(c.name)) and t.exclusive
        }
        runnable = [c for index, c in enumerate(calls) if index not in blocked]
        parallel = len(runnable) > 1 and all(
            (t := self._tools.get(c.name)) is None or t.parallel_safe for c in runnable
        )
        if parallel:
            done = iter(await asyncio.gather(*(self.run_call(c, context) for c in runnable)))
        else:
            done = iter([await self.run_call(c, context) for c in runnable])
        return [_not_alone(c) if index in blocked else next(done) for index, c in enumerate(calls)]

    async def run_call(self, call: ToolCall, context: ToolContext) -> ToolOutcome:
        """Run one call through the middleware; every failure becomes an error result for the model."""
        started = time.perf_counter()
        asked = call
        for layer in self.middleware:
            verdict = await layer.before_call(asked, context)
            if isinstance(verdict, ToolResult):
                logger.info("tool call %s refused by %s", call.name, layer.name, extra=_log_extra(call, context))
                outcome = ToolOutcome(call, verdict, None, "refused", time.perf_counter() - started)
                return await self._annotated(outcome, self.middleware[: self.middleware.index(layer)], context)
            asked = verdict
        result, arguments, failure = await self._execute(asked, context)
        outcome = ToolOutcome(call, result, arguments, failure, time.perf_counter() - started)
        outcome = await self._annotated(outcome, self.middleware, context, ran=asked)
        logger.info(
            "tool call %s %s",
            call.name,
            "failed" if failure else "ok",
            extra={**_log_extra(call, context), "failure": failure, "duration_s": round(outcome.duration, 4)},
        )
        return outcome

    async def _execute(
        self, call: ToolCall, context: ToolContext
    ) -> tuple[ToolResult, dict[str, Any] | None, Failure | None]:
        """Validate and run ``call`` itself: its result, validated arguments and failure kind."""
        target = self._tools.get(call.name)
        if target is None:
            known = ", ".join(self._tools) or "none"
            return (
                ToolResult.error(f"There is no tool named `{call.name}`. Available tools: {known}."),
                None,
                "unknown_tool",
            )
        try:
            arguments = target.validate(call.arguments)
        except ArgumentsError as exc:
            return ToolResult.error(str(exc)), None, "bad_arguments"
        result = await target.run(arguments, context)
        return result, arguments, "error" if result.is_error else None

    @staticmethod
    async def _annotated(
        outcome: ToolOutcome, layers: Sequence[ToolMiddleware], context: ToolContext, ran: ToolCall | None = None
    ) -> ToolOutcome:
        """``outcome`` with its result passed back through ``layers``, innermost first."""
        result = outcome.result
        for layer in reversed(layers):
            result = await layer.after_call(ran or outcome.call, result, context)
        return outcome if result is outcome.result else replace(outcome, result=result)


def _log_extra(call: ToolCall, context: ToolContext) -> dict[str, Any]:
    return {"run_id": context.run_id, "step": context.step, "tool": call.name, "call_id": call.id}


def _not_alone(call: ToolCall) -> ToolOutcome:
    message = (
        f"`{call.name}` was not run: call it alone, in a response of its own, "
        "after you have seen the results of your other calls."
    )
    return ToolOutcome(call=call, result=ToolResult.error(message), arguments=None, failure="error", duration=0.0)
