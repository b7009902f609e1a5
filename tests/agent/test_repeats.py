"""The loop's answer to repeated calls: notes, freer sampling, a withheld tool, the give-up it induces, wrap-up."""

from __future__ import annotations

from collections.abc import Sequence

from helpers.agent_cases import add, assert_protocol
from pymanus import (
    Agent,
    Message,
    RunFinished,
    RunState,
    ToolCall,
    ToolCallFinished,
    tool,
)
from pymanus.agent.loop import EXPLORE_TEMPERATURE
from pymanus.agent.notes import (
    AGAIN_HINT,
    GIVE_UP_NOTE,
    REPEAT_HINT,
    WITHHELD_NOTE,
    WRAP_UP_PROMPT,
)
from pymanus.models import ScriptedModel, call
from pymanus.models.base import ModelResponse, ModelSettings, ToolDefinition


async def test_first_repeat_gets_a_hint_and_more_end_the_run() -> None:
    same = [call("add", a=1, b=2), call("add", b=2, a=1), call("add", a=1, b=2), "never reached"]
    agent = Agent(ScriptedModel(same), tools=[add], max_repeats=3, wrap_up=False)
    result = await agent.run("task")
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert tool_messages[0].content == "3"
    assert tool_messages[1].content == "3" + REPEAT_HINT + WITHHELD_NOTE.format(name="add")  # key order does not matter
    assert (result.state, result.reason, result.steps) == (RunState.ERROR, "stuck", 3)


async def test_a_give_up_drawn_while_a_tool_was_withheld_is_answered_once() -> None:
    give_up = call("terminate", status="failure", message="cannot")
    model = ScriptedModel([call("add", a=1, b=2), call("add", a=1, b=2), give_up, call("add", a=3, b=4), give_up])
    result = await Agent(model, tools=[add]).run("task")
    note = GIVE_UP_NOTE.format(names="`add`", they="It")
    terminate_results = [m.content for m in result.messages if m.role == "tool" and m.name == "terminate"]
    assert terminate_results == [note, "cannot"]  # the second give-up, with nothing withheld, is final
    assert model.request_settings[2].allowed_tools == ["terminate"]  # `add` was withheld for that response
    assert model.request_settings[3].allowed_tools is None  # and callable again after the note
    assert (result.state, result.reason, result.output) == (RunState.ERROR, "terminate", "cannot")


async def test_a_give_up_is_answered_only_for_the_response_drawn_without_the_tool() -> None:
    # Nothing withheld: a give-up is final at once.
    model = ScriptedModel([call("add", a=1, b=2), call("terminate", status="failure", message="cannot")])
    result = await Agent(model, tools=[add]).run("task")
    assert (result.state, result.steps) == (RunState.ERROR, 2)
    # A give-up one step after the withheld response is final too.
    later = [call("add", a=1, b=2), call("add", a=1, b=2), call("add", a=5, b=5)]
    model = ScriptedModel([*later, call("terminate", status="failure", message="cannot")])
    result = await Agent(model, tools=[add]).run("task")
    assert (result.state, result.steps, result.output) == (RunState.ERROR, 4, "cannot")
    # On the last step there is nothing left to try: the give-up stands.
    model = ScriptedModel(
        [call("add", a=1, b=2), call("add", a=1, b=2), call("terminate", status="failure", message="x")]
    )
    result = await Agent(model, tools=[add], max_steps=3).run("task")
    assert (result.state, result.reason, result.steps) == (RunState.ERROR, "terminate", 3)


async def test_the_request_after_a_repeat_samples_more_freely() -> None:
    model = ScriptedModel([call("add", a=1, b=2), call("add", a=1, b=2), call("add", a=2, b=2), "4"])
    settings = ModelSettings(temperature=0.0)
    result = await Agent(model, tools=[add], settings=settings).run("task")
    assert result.output == "4"
    assert [s.temperature for s in model.request_settings] == [0.0, 0.0, EXPLORE_TEMPERATURE, 0.0]


async def test_same_call_with_a_new_result_is_not_a_repeat() -> None:
    """Re-running a check after a change is progress, not a loop."""
    counter = iter(range(100))

    @tool
    def check() -> str:
        """Run the check."""
        return f"run {next(counter)}"

    model = ScriptedModel([call("check")] * 4 + [call("terminate", status="success", message="done")])
    result = await Agent(model, tools=[check], max_repeats=2).run("task")
    assert (result.state, result.reason, result.steps) == (RunState.FINISHED, "terminate", 5)
    assert not any(REPEAT_HINT in str(m.content) for m in result.messages if m.role == "tool")


async def test_a_step_repeating_the_last_one_is_told_so_whatever_its_result() -> None:
    counter = iter(range(100))

    @tool
    def check() -> str:
        """Run the check (its output names the run, as a timing would differ)."""
        return f"run {next(counter)}"

    script = [call("check"), call("check"), call("add", a=1, b=1), call("check"), "done"]
    model = ScriptedModel(script)
    result = await Agent(model, tools=[check, add], settings=ModelSettings(temperature=0.1)).run("task")
    results = [m.text for m in result.messages if m.role == "tool"]
    withheld = WITHHELD_NOTE.format(name="check")
    assert results == ["run 0", "run 1" + AGAIN_HINT + withheld, "2", "run 2"]  # a call in between: no note
    assert [s.temperature for s in model.request_settings] == [0.1, 0.1, EXPLORE_TEMPERATURE, 0.1, 0.1]
    callable_then = [[t.name for t in tools] for tools in model.request_tools]
    assert callable_then[2] == ["add", "terminate"] and "check" in callable_then[3]  # for one response only


class OfferRecordingModel(ScriptedModel):
    """Also records every tool in each request, callable or not (what a prompt renders)."""

    def __init__(self, answers: list[ToolCall]) -> None:
        super().__init__(answers)
        self.offered: list[list[str]] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        self.offered.append([tool.name for tool in tools])
        return await super().request(messages, tools, settings)


async def test_stuck_on_a_successful_call_is_asked_for_its_final_answer() -> None:
    same = [call("add", a=1, b=2)] * 3
    model = OfferRecordingModel([*same, call("terminate", status="success", message="1 + 2 = 3")])
    events = [event async for event in Agent(model, tools=[add]).iter("task")]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.state, finished.reason, finished.output, finished.step) == (
        RunState.FINISHED,
        "terminate",
        "1 + 2 = 3",
        3,
    )
    last_request = model.requests[-1]
    assert last_request[-1] == Message.user(WRAP_UP_PROMPT)
    assert [tool.name for tool in model.request_tools[-1]] == ["terminate"]  # nothing else to call
    assert model.offered[-1] == model.offered[0]  # but the prompt keeps every tool (its cache holds)
    assert [e.name for e in events if isinstance(e, ToolCallFinished)] == ["add", "add", "add", "terminate"]


async def test_wrap_up_that_does_not_finish_ends_stuck() -> None:
    failing = [call("add", a=1, b=2)] * 3 + [call("terminate", status="failure", message="cannot")]
    result = await Agent(ScriptedModel(failing), tools=[add]).run("task")
    assert (result.state, result.reason) == (RunState.ERROR, "stuck")
    assert "repeated the same `add` call 3 times" in result.output
    # A repeated call that fails is not wrapped up: the model has no answer to give.
    broken = [call("add", a="x", b=2)] * 3
    model = ScriptedModel(broken)
    result = await Agent(model, tools=[add], max_repeats=3).run("task")
    assert (result.state, result.reason, len(model.requests)) == (RunState.ERROR, "stuck", 3)
    # Without terminate there is nothing to offer.
    model = ScriptedModel([call("add", a=1, b=2)] * 3)
    result = await Agent(model, tools=[add], terminate_tool=False).run("task")
    assert (result.state, result.reason, len(model.requests)) == (RunState.ERROR, "stuck", 3)


async def test_the_same_call_twice_in_one_response_is_not_a_repeat() -> None:
    model = ScriptedModel([[call("add", a=1, b=2)] * 3, "3"])
    result = await Agent(model, tools=[add], max_repeats=2).run("task")
    assert (result.state, result.output) == (RunState.FINISHED, "3")
    assert [m.text for m in result.messages if m.role == "tool"] == ["3", "3", "3"]
    assert_protocol(result.messages)
