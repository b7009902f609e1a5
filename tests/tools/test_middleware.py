"""Tool middleware: calls rewritten or refused before they run, results annotated after; typed per-run stores."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pymanus import ToolCall, ToolContext, ToolResult, Toolset, tool
from pymanus.tools.middleware import ToolMiddleware, with_note


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(run_id="r1", step=1, workspace=tmp_path)


def make_tools(ran: list[int]) -> list:
    @tool
    def double(n: int) -> int:
        """Double a number.

        Args:
            n: the number
        """
        ran.append(n)
        return 2 * n

    return [double]


def double_call(n: int, call_id: str = "call_1") -> ToolCall:
    return ToolCall(id=call_id, name="double", arguments=json.dumps({"n": n}))


class Rewrite(ToolMiddleware):
    """Adds one to every ``n``."""

    name = "rewrite"

    async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall | ToolResult:
        arguments = json.loads(call.arguments)
        return call.model_copy(update={"arguments": json.dumps({**arguments, "n": arguments["n"] + 1})})


class Refuse(ToolMiddleware):
    """Refuses calls with a negative ``n``."""

    name = "refuse"

    async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall | ToolResult:
        if json.loads(call.arguments)["n"] < 0:
            return ToolResult.error("n must not be negative")
        return call


class Annotate(ToolMiddleware):
    """Adds a note naming the call it saw after every result."""

    name = "annotate"

    async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
        return with_note(result, f"(saw {call.arguments})")


class Trace(ToolMiddleware):
    """Records the order it sees calls and results in, and marks the results."""

    def __init__(self, label: str, log: list[str]) -> None:
        self.name = label
        self.log = log

    async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall | ToolResult:
        self.log.append(f"{self.name} before")
        return call

    async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
        self.log.append(f"{self.name} after")
        return with_note(result, self.name)


async def test_before_call_may_rewrite_the_call(ctx: ToolContext) -> None:
    ran: list[int] = []
    outcome = await Toolset(make_tools(ran), middleware=[Rewrite()]).run_call(double_call(2), ctx)
    assert ran == [3] and outcome.result.text == "6" and outcome.failure is None
    assert outcome.arguments == {"n": 3}  # what ran
    assert outcome.call == double_call(2)  # what the model asked for


async def test_before_call_may_refuse_the_call(ctx: ToolContext) -> None:
    ran: list[int] = []
    toolset = Toolset(make_tools(ran), middleware=[Refuse()])
    outcome = await toolset.run_call(double_call(-1, "call_7"), ctx)
    assert outcome.failure == "refused" and outcome.arguments is None
    assert outcome.result == ToolResult.error("n must not be negative")
    assert ran == []  # the tool never ran
    assert outcome.call.id == "call_7"  # the refusal answers the call it refused
    [refused, allowed] = await toolset.run_calls([double_call(-2, "a"), double_call(4, "b")], ctx)
    assert [refused.call.id, allowed.call.id] == ["a", "b"] and refused.failure == "refused"
    assert allowed.result.text == "8" and ran == [4]


async def test_after_call_may_annotate_the_result(ctx: ToolContext) -> None:
    ran: list[int] = []
    outcome = await Toolset(make_tools(ran), middleware=[Annotate()]).run_call(double_call(5), ctx)
    assert outcome.result.text == '10\n\n(saw {"n": 5})' and not outcome.result.is_error
    unknown = await Toolset(make_tools(ran), middleware=[Annotate()]).run_call(
        ToolCall(id="x", name="triple", arguments='{"n": 1}'), ctx
    )
    assert unknown.failure == "unknown_tool" and unknown.result.text.endswith('(saw {"n": 1})')


async def test_after_call_sees_the_call_that_ran(ctx: ToolContext) -> None:
    outcome = await Toolset(make_tools([]), middleware=[Annotate(), Rewrite()]).run_call(double_call(1), ctx)
    assert outcome.result.text == '4\n\n(saw {"n": 2})'


async def test_the_first_middleware_sees_the_call_first_and_the_result_last(ctx: ToolContext) -> None:
    log: list[str] = []
    toolset = Toolset(make_tools([]), middleware=[Trace("outer", log), Trace("inner", log)])
    outcome = await toolset.run_call(double_call(1), ctx)
    assert log == ["outer before", "inner before", "inner after", "outer after"]
    assert outcome.result.text == "2\n\ninner\n\nouter"


async def test_a_refusal_passes_back_only_through_the_middleware_before_the_refusing_one(ctx: ToolContext) -> None:
    log: list[str] = []
    toolset = Toolset(make_tools([]), middleware=[Trace("outer", log), Refuse(), Trace("inner", log)])
    outcome = await toolset.run_call(double_call(-1), ctx)
    assert log == ["outer before", "outer after"]
    assert outcome.failure == "refused" and outcome.result.text == "n must not be negative\n\nouter"


async def test_middleware_is_kept_by_without(ctx: ToolContext) -> None:
    toolset = Toolset(make_tools([]), middleware=[Rewrite()])
    assert toolset.without("nothing").middleware == toolset.middleware


def test_with_note_adds_a_paragraph_after_or_before() -> None:
    result = ToolResult(content="body", is_error=True)
    assert with_note(result, "note").content == "body\n\nnote"
    assert with_note(result, "note", before=True).content == "note\n\nbody"
    assert with_note(result, "note").is_error and with_note(result, "") is result


@dataclass
class Seen:
    paths: list[str] = field(default_factory=list)


def test_a_store_is_one_instance_within_a_run_and_separate_between_runs(tmp_path: Path) -> None:
    first = ToolContext(run_id="r1", workspace=tmp_path)
    second = ToolContext(run_id="r2", workspace=tmp_path)
    first.store(Seen).paths.append("a.txt")
    assert first.store(Seen) is first.store(Seen) and first.store(Seen).paths == ["a.txt"]
    assert second.store(Seen) is not first.store(Seen) and second.store(Seen).paths == []
    first.reset_stores()
    assert first.store(Seen).paths == []


async def test_a_tool_and_a_middleware_share_the_runs_store(ctx: ToolContext) -> None:
    @tool
    def note(path: str, context: ToolContext) -> str:
        """Note a path.

        Args:
            path: the path
        """
        context.store(Seen).paths.append(path)
        return "noted"

    class Count(ToolMiddleware):
        async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
            return with_note(result, f"{len(context.store(Seen).paths)} noted")

    toolset = Toolset([note], middleware=[Count()])
    for index, path in enumerate(["a", "b"]):
        call = ToolCall(id=str(index), name="note", arguments=json.dumps({"path": path}))
        outcome = await toolset.run_call(call, ctx)
    assert outcome.result.text == "noted\n\n2 noted" and ctx.store(Seen).paths == ["a", "b"]
    other = ToolContext(run_id="r2")
    outcome = await toolset.run_call(ToolCall(id="9", name="note", arguments='{"path": "c"}'), other)
    assert outcome.result.text == "noted\n\n1 noted" and ctx.store(Seen).paths == ["a", "b"]
