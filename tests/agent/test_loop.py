"""The agent loop against scripted models: every way a run ends, and how calls run."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import pytest

from helpers.agent_cases import add, assert_protocol
from pymanus import (
    Agent,
    Message,
    ModelRequest,
    RunFinished,
    RunStarted,
    RunState,
    StepFinished,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolContext,
    tool,
)
from pymanus.agent.extensions import Extension
from pymanus.agent.notes import (
    NO_TOOL_CALL_NUDGE,
    UNREADABLE_NOTE,
)
from pymanus.errors import ModelError, ModelOutputError
from pymanus.models import FunctionModel, ScriptedModel, call
from pymanus.models.base import ToolDefinition
from pymanus.tools.middleware import ToolMiddleware
from pymanus.tools.tool import ToolResult


async def test_tool_call_then_terminate() -> None:
    model = ScriptedModel([call("add", a=2, b=40), call("terminate", status="success", message="The answer is 42.")])
    result = await Agent(model, tools=[add]).run("What is 2 + 40?")
    assert result.state is RunState.FINISHED
    assert result.reason == "terminate"
    assert result.output == "The answer is 42."
    assert result.steps == 2
    assert result.usage.requests == 2
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert result.messages[3].content == "42"
    assert result.messages[3].name == "add"
    assert_protocol(result.messages)


async def test_final_text_answer_finishes() -> None:
    result = await Agent(ScriptedModel(["42"]), tools=[add]).run("What is 2 + 40?")
    assert (result.state, result.reason, result.output, result.steps) == (RunState.FINISHED, "final_answer", "42", 1)


async def test_text_reply_is_nudged_when_not_allowed_to_finish() -> None:
    model = ScriptedModel(["let me think", call("terminate", status="success", message="done")])
    result = await Agent(model, finish_on_text=False).run("task")
    assert result.state is RunState.FINISHED and result.output == "done"
    assert result.messages[3] == Message.user(NO_TOOL_CALL_NUDGE)


async def test_terminate_with_failure_is_an_error_state() -> None:
    model = ScriptedModel([call("terminate", status="failure", message="The file does not exist.")])
    result = await Agent(model).run("task")
    assert (result.state, result.reason, result.output) == (RunState.ERROR, "terminate", "The file does not exist.")


async def test_terminate_can_be_disabled() -> None:
    agent = Agent(ScriptedModel(["x"]), tools=[add], terminate_tool=False)
    assert agent.toolset.names == ["add"]


async def test_max_steps_ends_in_error() -> None:
    model = FunctionModel(lambda messages, tools: call("add", a=len(messages), b=1))
    result = await Agent(model, tools=[add], max_steps=4).run("loop forever")
    assert (result.state, result.reason, result.steps) == (RunState.ERROR, "max_steps", 4)
    assert "limit of 4 steps" in result.output
    assert_protocol(result.messages)


async def test_wall_clock_timeout_ends_in_error() -> None:
    async def slow(messages: list[Message], tools: list[ToolDefinition]) -> str:
        await asyncio.sleep(10)
        return "late"

    result = await Agent(FunctionModel(slow), timeout=0.1).run("task")
    assert (result.state, result.reason) == (RunState.ERROR, "timeout")
    assert "time limit of 0.1 s" in result.output


async def test_an_unreadable_reply_is_asked_again_once() -> None:
    cut_off = ModelOutputError("local output ended inside a tool call")
    model = ScriptedModel([cut_off, call("add", a=2, b=40), call("terminate", status="success", message="42")])
    result = await Agent(model, tools=[add]).run("What is 2 + 40?")
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "42", 2)
    # The second request is the first one with a note; the dropped reply is not in the conversation.
    assert model.requests[1][:-1] == model.requests[0]
    assert model.requests[1][-1].role == "user" and model.requests[1][-1].text == UNREADABLE_NOTE
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    twice = await Agent(ScriptedModel([cut_off, cut_off, call("add", a=1, b=1)]), tools=[add]).run("task")
    assert (twice.state, twice.reason, twice.steps) == (RunState.ERROR, "unreadable", 1)
    assert twice.output == "The model's reply could not be read: local output ended inside a tool call"


async def test_timeout_during_a_tool_call_keeps_the_protocol() -> None:
    @tool
    async def wait() -> str:
        """Wait."""
        await asyncio.sleep(10)
        return "done"

    result = await Agent(ScriptedModel([call("wait")]), tools=[wait], timeout=0.1).run("task")
    assert result.reason == "timeout"
    # The unanswered call is the last message; the run ended before its result.
    assert result.messages[-1].tool_calls


async def test_model_error_ends_in_error() -> None:
    model = ScriptedModel([ModelError("HTTP 500 from the endpoint", status=500)])
    result = await Agent(model).run("task")
    assert (result.state, result.reason) == (RunState.ERROR, "model_error")
    assert "HTTP 500 from the endpoint" in result.output


async def test_bad_arguments_are_fed_back_and_corrected() -> None:
    model = ScriptedModel(
        [
            ToolCall(id="c1", name="add", arguments='{"a": "two", "b": 40}'),
            call("add", a="2", b=40),
            call("terminate", status="success", message="42"),
        ]
    )
    result = await Agent(model, tools=[add]).run("task")
    assert result.state is RunState.FINISHED
    error, fixed = [m.text for m in result.messages if m.role == "tool"][:2]
    assert "Invalid arguments for `add`" in error and "- a: Input should be a valid integer" in error
    assert fixed == "42"
    # The model saw the error before correcting itself.
    assert model.requests[1][-1].text == error


async def test_retry_budget_ends_a_run_that_keeps_failing() -> None:
    strict = tool(add.function, name="strict_add", max_retries=2)
    model = FunctionModel(
        lambda messages, tools: ToolCall(id=f"c{len(messages)}", name="strict_add", arguments='{"a": "x"}')
    )
    result = await Agent(model, tools=[strict], max_repeats=0).run("task")
    assert (result.state, result.reason, result.steps) == (RunState.ERROR, "tool_failures", 3)
    assert "`strict_add` failed 3 times in a row" in result.output


async def test_unknown_tool_and_malformed_json_are_observations() -> None:
    model = ScriptedModel(
        [
            [ToolCall(id="a", name="mul", arguments="{}"), ToolCall(id="b", name="add", arguments="{oops")],
            "fine",
        ]
    )
    result = await Agent(model, tools=[add]).run("task")
    first, second = (m.text for m in result.messages if m.role == "tool")
    assert first.startswith("There is no tool named `mul`")
    assert "not valid JSON" in second
    assert result.state is RunState.FINISHED
    assert_protocol(result.messages)


async def test_parallel_safe_calls_run_concurrently_and_keep_order() -> None:
    gate = asyncio.Event()

    @tool
    async def waiter() -> str:
        """Wait for the opener."""
        await asyncio.wait_for(gate.wait(), 2)
        return "waited"

    @tool
    async def opener() -> str:
        """Open the gate."""
        gate.set()
        return "opened"

    model = ScriptedModel([[call("waiter"), call("opener")], "done"])
    result = await Agent(model, tools=[waiter, opener]).run("task")
    # Sequential execution would time out the waiter: it only finishes if both ran at once.
    assert [m.text for m in result.messages if m.role == "tool"] == ["waited", "opened"]


async def test_unsafe_calls_run_one_after_another() -> None:
    active, peak = [0], [0]

    @tool(parallel_safe=False)
    async def exclusive(n: int) -> int:
        """Exclusive."""
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        await asyncio.sleep(0.01)
        active[0] -= 1
        return n

    model = ScriptedModel([[call("exclusive", n=1), call("exclusive", n=2), call("exclusive", n=3)], "done"])
    result = await Agent(model, tools=[exclusive]).run("task")
    assert peak[0] == 1
    assert [m.text for m in result.messages if m.role == "tool"] == ["1", "2", "3"]


async def test_events_tell_the_whole_run() -> None:
    model = ScriptedModel([call("add", a=1, b=1), call("terminate", status="success", message="2")])
    events = [event async for event in Agent(model, tools=[add]).iter("task")]
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "RunStarted",
        "ModelRequest",
        "ModelResponded",
        "ToolCallStarted",
        "ToolCallFinished",
        "StepFinished",
        "ModelRequest",
        "ModelResponded",
        "ToolCallStarted",
        "ToolCallFinished",
        "StepFinished",
        "RunFinished",
    ]
    assert isinstance(events[0], RunStarted) and events[0].tools == ["add", "terminate"]
    run_ids = {e.run_id for e in events}
    assert len(run_ids) == 1
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.state is RunState.FINISHED and finished.output == "2" and finished.usage.requests == 2
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    done = next(e for e in events if isinstance(e, ToolCallFinished))
    assert (started.step, done.step, done.content, done.call_id) == (1, 1, "2", started.call.id)
    assert [e.step for e in events if isinstance(e, StepFinished)] == [1, 2]
    request = next(e for e in events if isinstance(e, ModelRequest))
    assert [m.role for m in request.messages] == ["system", "user"]


async def test_next_step_prompt_is_sent_but_not_kept() -> None:
    model = ScriptedModel([call("add", a=1, b=1), "2"])
    result = await Agent(model, tools=[add], next_step_prompt="Decide the next step.").run("task")
    assert model.requests[0][-1].text == "task"
    assert model.requests[1][-1] == Message.user("Decide the next step.")
    assert all(m.text != "Decide the next step." for m in result.messages)


@dataclass
class _Briefed:
    first: str = ""


class _Notes(Extension):
    """An extension using every loop extension point, keeping its state in the run's typed store."""

    name = "notes"
    instructions = "Be brief."

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def briefing(self, task: str, context: ToolContext) -> str:
        context.store(_Briefed).first = "briefed"
        return "(workspace notes)"

    async def reminder(self, task: str, context: ToolContext) -> str | None:
        self.seen.append((task, context.run_id, context.step))
        return None if context.step == 3 else f"Step {context.step}: {context.store(_Briefed).first}"

    def check_answer(self, task: str, answer: str, context: ToolContext) -> str | None:
        return None if answer == "4" else "not 4"


async def test_an_extension_adds_instructions_briefing_reminders_and_checks() -> None:
    model = ScriptedModel([call("add", a=1, b=1), call("add", a=2, b=2), "5", "4"])
    notes = _Notes()
    result = await Agent(model, tools=[add], system_prompt="Add.", extensions=[notes]).run("task")
    assert model.requests[0][0] == Message.system("Add.\n\nBe brief.")
    assert model.requests[0][-1] == Message.user("task\n\n(workspace notes)")
    assert model.requests[1][-1] == Message.user("Step 2: briefed")
    assert model.requests[2][-1].role == "tool"  # None: no reminder this time
    assert [(task, step) for task, _, step in notes.seen] == [("task", 2), ("task", 3), ("task", 4)]
    assert {run_id for _, run_id, _ in notes.seen} == {result.run_id}
    assert (result.output, result.steps) == ("4", 4)  # "5" was sent back
    assert result.messages[1].text == "task\n\n(workspace notes)"
    assert_protocol(result.messages)


async def test_a_reminder_function_and_an_extension_reminder_are_joined() -> None:
    model = ScriptedModel([call("add", a=1, b=1), "2"])
    await Agent(model, tools=[add], next_step_prompt=lambda task, ctx: "Go on.", extensions=[_Notes()]).run("t")
    assert model.requests[1][-1] == Message.user("Go on.\n\nStep 2: briefed")


async def test_an_extension_that_raises_adds_nothing(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(Extension):
        name = "broken"

        def briefing(self, task: str, context: ToolContext) -> str:
            raise OSError("unreadable")

    model = ScriptedModel(["done"])
    result = await Agent(model, extensions=[Broken()]).run("task")
    assert model.requests[0][-1] == Message.user("task") and result.output == "done"
    assert "the briefing of broken failed; ignored" in caplog.text


async def test_extension_middleware_sees_every_call() -> None:
    class Doubler(ToolMiddleware):
        async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
            return result.model_copy(update={"content": result.text * 2})

    class WithMiddleware(Extension):
        middleware = Doubler()

    model = ScriptedModel([call("add", a=1, b=1), "done"])
    result = await Agent(model, tools=[add], extensions=[WithMiddleware()]).run("task")
    assert result.messages[3].text == "22"


async def test_a_runs_stores_that_hold_resources_are_closed_when_it_ends() -> None:
    @dataclass
    class Held:
        closed: int = 0

        def close(self) -> None:
            self.closed += 1

    held: list[Held] = []

    class Holder(ToolMiddleware):
        async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall:
            if not held:
                held.append(context.store(Held))
            return call

    class WithHolder(Extension):
        middleware = Holder()

    await Agent(ScriptedModel([call("add", a=1, b=1), "done"]), tools=[add], extensions=[WithHolder()]).run("task")
    assert held[0].closed == 1


async def test_streaming_models_emit_text_deltas() -> None:
    model = ScriptedModel(["The answer is 42."])
    events = [e async for e in Agent(model, stream=True).iter("task")]
    deltas = "".join(e.text for e in events if type(e).__name__ == "TextDelta")  # type: ignore[attr-defined]
    assert deltas == "The answer is 42."


def test_run_sync_works_outside_and_inside_a_loop() -> None:
    agent = Agent(FunctionModel(lambda messages, tools: "hi"))
    assert agent.run_sync("task").output == "hi"

    async def inside() -> str:
        return agent.run_sync("task").output

    assert asyncio.run(inside()) == "hi"


async def test_two_runs_share_nothing() -> None:
    agent = Agent(FunctionModel(lambda messages, tools: messages[-1].text.upper()))
    first, second = await asyncio.gather(agent.run("a"), agent.run("b"))
    assert (first.output, second.output) == ("A", "B")
    assert first.run_id != second.run_id


def test_max_steps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_steps must be at least 1"):
        Agent(ScriptedModel([]), max_steps=0)


async def test_plan_changes_become_events() -> None:
    from pymanus import PlanUpdated
    from pymanus.tools.builtin.planning import planning_tool

    model = ScriptedModel(
        [
            call("planning", command="create", title="Sum", steps=["add", "report"]),
            call("planning", command="mark_step", step_index=1, status="completed"),
            "done",
        ]
    )
    events = [e async for e in Agent(model, tools=[planning_tool()]).iter("task")]
    plans = [e.plan for e in events if isinstance(e, PlanUpdated)]
    assert [[s["status"] for s in p["steps"]] for p in plans] == [
        ["not_started", "not_started"],
        ["completed", "not_started"],
    ]
    assert plans[0]["title"] == "Sum"


async def test_each_run_keeps_its_own_plan() -> None:
    from pymanus.tools.builtin.planning import planning_tool

    def answer(messages: list[Message], tools: list[ToolDefinition]) -> ToolCall | str:
        if len(messages) > 2:
            return messages[-1].text
        if messages[1].text == "plan":
            return call("planning", command="create", title="T", steps=["one"])
        return call("planning", command="get")

    agent = Agent(FunctionModel(answer), tools=[planning_tool()])
    assert "1. [ ] one" in (await agent.run("plan")).output
    assert "no plan" in (await agent.run("look")).output.lower()


async def test_answer_check_sends_unfinished_answers_back() -> None:
    checked: list[str] = []

    def check(task: str, answer: str, context: object) -> str | None:
        checked.append(answer)
        return None if answer == "report written" else "report.md does not exist; write it first."

    model = ScriptedModel(
        [
            call("terminate", status="success", message="done"),
            "all done",
            call("terminate", status="success", message="report written"),
        ]
    )
    result = await Agent(model, answer_checks=[check]).run("write report.md")
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "report written", 3)
    assert checked == ["done", "all done"]  # two rejections used up: the third answer is accepted
    tool_answer = result.messages[3]
    assert tool_answer.role == "tool" and tool_answer.text.startswith("The task is not finished yet: report.md")
    assert result.messages[5] == Message.user("report.md does not exist; write it first.")
    assert_protocol(result.messages)


async def test_answer_check_gives_up_after_two_rejections() -> None:
    model = ScriptedModel(["a", "b", "c"])
    result = await Agent(model, answer_checks=[lambda task, answer, context: "missing"]).run("task")
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "c", 3)


async def test_an_answer_check_that_raises_accepts_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    # A bug in a check (a 300-character "path" from a copied note) once crashed a finished run.
    def check(task: str, answer: str, context: object) -> str:
        raise OSError(36, "File name too long")

    result = await Agent(ScriptedModel(["all done"]), answer_checks=[check]).run("task")
    assert (result.state, result.output) == (RunState.FINISHED, "all done")
    assert "the answer check of check failed; ignored" in caplog.text


async def test_run_end_hooks_run_once_even_when_abandoned() -> None:
    ended: list[str] = []

    async def hook(run_id: str) -> None:
        ended.append(run_id)

    agent = Agent(ScriptedModel(["a", "b"]))
    agent.on_run_end(hook)
    result = await agent.run("x")
    assert ended == [result.run_id]

    async with contextlib.aclosing(agent.iter("y")) as events:
        async for event in events:
            if isinstance(event, RunStarted):
                break  # abandon the run after its first event
    assert len(ended) == 2


async def test_terminate_beside_other_calls_is_not_run() -> None:
    model = ScriptedModel(
        [
            [call("add", a=1, b=2), call("terminate", status="success", message="3")],
            call("terminate", status="success", message="3 it is"),
        ]
    )
    result = await Agent(model, tools=[add]).run("task")
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "3 it is", 2)
    first, blocked = (m.text for m in result.messages[3:5])
    assert first == "3"
    assert blocked.startswith("`terminate` was not run: call it alone")
    assert_protocol(result.messages)


async def test_a_failure_terminate_is_not_checked() -> None:
    checked: list[str] = []

    def check(task: str, answer: str, context: object) -> str:
        checked.append(answer)
        return "missing"

    model = ScriptedModel([call("terminate", status="failure", message="cannot")])
    result = await Agent(model, answer_checks=[check]).run("task")
    assert (result.state, result.output, checked) == (RunState.ERROR, "cannot", [])
