"""Running tools: results, errors, truncation, timeouts and the toolset."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from pymanus import ImagePart, ToolCall, ToolContext, ToolError, ToolResult, Toolset, tool
from pymanus.tools.tool import EMPTY_RESULT_NOTE


@pytest.fixture
def ctx(tmp_path) -> ToolContext:
    return ToolContext(run_id="r1", step=1, workspace=tmp_path, deps={"user": "ann"})


class Row(BaseModel):
    name: str
    total: float


async def test_return_values_become_results(ctx: ToolContext) -> None:
    @tool
    def as_model() -> Row:
        """Model."""
        return Row(name="north", total=1.5)

    @tool
    async def as_dict() -> dict[str, int]:
        """Dict."""
        return {"a": 1}

    @tool
    def as_image() -> ImagePart:
        """Image."""
        return ImagePart.from_bytes(b"\x89PNG")

    @tool
    def as_nothing() -> None:
        """Nothing."""

    assert (await as_model.run({}, ctx)).content == '{"name":"north","total":1.5}'
    assert (await as_dict.run({}, ctx)).content == '{"a":1}'
    image = (await as_image.run({}, ctx)).content
    assert isinstance(image, list) and image[0].url.startswith("data:image/png;base64,")
    assert (await as_nothing.run({}, ctx)).content == EMPTY_RESULT_NOTE


async def test_context_reaches_the_tool(ctx: ToolContext) -> None:
    @tool
    def who(context: ToolContext) -> str:
        """Who."""
        return f"{context.run_id}:{context.deps['user']}"

    assert (await who.run({}, ctx)).content == "r1:ann"


async def test_errors_become_observations(ctx: ToolContext) -> None:
    @tool
    def refuses() -> str:
        """Refuse."""
        raise ToolError("the file is locked; try again later")

    @tool
    def crashes() -> str:
        """Crash."""
        raise KeyError("region")

    refused = await refuses.run({}, ctx)
    assert refused.is_error and refused.content == "the file is locked; try again later"
    crashed = await crashes.run({}, ctx)
    assert crashed.is_error and crashed.content == "`crashes` raised KeyError: 'region'"


async def test_long_text_is_cut_with_a_marker(ctx: ToolContext) -> None:
    @tool(max_result_chars=100)
    def chatty() -> str:
        """Talk."""
        return "abcdefghij" * 50

    text = (await chatty.run({}, ctx)).text
    assert text.startswith("abcdefghij" * 10)
    assert "output truncated: showing the first 100 of 500 characters" in text
    assert len(text) < 200


async def test_async_tool_timeout_cancels_it(ctx: ToolContext) -> None:
    cancelled = asyncio.Event()

    @tool(timeout=0.05)
    async def slow() -> str:
        """Slow."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    result = await slow.run({}, ctx)
    assert result.is_error and "timed out after 0.05 s" in result.content
    assert cancelled.is_set()


async def test_async_tool_runs_in_the_callers_task(ctx: ToolContext) -> None:
    # No task per call (cheaper at thousands of runs); the timeout still applies.
    @tool(timeout=5)
    async def which_task() -> str:
        """Task."""
        return str(id(asyncio.current_task()))

    result = await which_task.run({}, ctx)
    assert result.content == str(id(asyncio.current_task()))


async def test_sync_tool_timeout_stops_the_thread(ctx: ToolContext) -> None:
    ticks = [0]
    stopped = threading.Event()

    @tool(timeout=0.1)
    def spin() -> str:
        """Spin."""
        try:
            while True:
                ticks[0] += 1
        finally:
            stopped.set()

    result = await spin.run({}, ctx)
    assert result.is_error and "timed out" in result.content
    assert await asyncio.to_thread(stopped.wait, 5), "the busy thread was not stopped"
    after = ticks[0]
    await asyncio.sleep(0.05)
    assert ticks[0] == after


async def test_toolset_reports_unknown_tools_and_bad_json(ctx: ToolContext) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    toolset = Toolset([add])
    unknown = await toolset.run_call(ToolCall(id="1", name="mul", arguments="{}"), ctx)
    assert unknown.failure == "unknown_tool"
    assert unknown.result.content == "There is no tool named `mul`. Available tools: add."
    bad = await toolset.run_call(ToolCall(id="2", name="add", arguments="{'a': 1}"), ctx)
    assert bad.failure == "bad_arguments" and "not valid JSON" in bad.result.text
    ok = await toolset.run_call(ToolCall(id="3", name="add", arguments='{"a": "2", "b": 40}'), ctx)
    assert ok.failure is None and ok.result.content == "42" and ok.arguments == {"a": 2, "b": 40}


def test_toolset_names_are_unique() -> None:
    @tool
    def add(a: int) -> int:
        """Add."""
        return a

    with pytest.raises(ValueError, match="two tools are named 'add'"):
        Toolset([add, add])


def test_plain_functions_are_wrapped_and_tools_stay_callable() -> None:
    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    toolset = Toolset([double])
    assert toolset.names == ["double"]
    assert toolset.get("double")(4) == 8  # type: ignore[misc]
    assert toolset.definitions()[0].description == "Double x."


async def test_tool_result_passthrough(ctx: ToolContext) -> None:
    @tool
    def explicit() -> ToolResult:
        """Explicit."""
        return ToolResult(content="done", end_run="success")

    assert (await explicit.run({}, ctx)).end_run == "success"
