"""Responses that repeat calls without effect: drawn again, more freely and without the repeated tools."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from helpers.agent_cases import add, assert_protocol
from pymanus import Agent, Message, RunState, ToolContext, tool
from pymanus.agent.guards import REPEAT_HINT, parrots_sent_back
from pymanus.agent.loop import EXPLORE_TEMPERATURE
from pymanus.agent.notes import (
    EARLIER_REPEAT_NOTE,
    FAILED_AGAIN_NOTE,
    PARROT_NOTE,
    RESAMPLE_NOTE,
    SENT_BACK_REPEAT_NOTE,
)
from pymanus.models import ScriptedModel, call
from pymanus.models.base import Model, ModelResponse, ModelSettings, ToolDefinition


class TemperatureRecorder(Model):
    """A scripted model that also records the temperature of every request."""

    def __init__(self, answers: list[object]) -> None:
        self.inner = ScriptedModel(answers)  # type: ignore[arg-type]
        self.temperatures: list[float | None] = []
        self.top_ps: list[float | None] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        self.temperatures.append(settings.temperature)
        self.top_ps.append(settings.top_p)
        return await self.inner.request(messages, tools, settings)


@tool
def note(name: str, ctx: ToolContext) -> str:
    """Write a note file.

    Args:
        name: the note's file name
    """
    (Path(ctx.workspace) / name).write_text("noted")
    return f"wrote {name}"


async def test_a_repeated_call_raises_the_temperature_of_the_next_request() -> None:
    model = TemperatureRecorder([call("add", a=1, b=1), call("add", a=1, b=1), call("add", a=2, b=1), "3"])
    agent = Agent(model, tools=[add], settings=ModelSettings(temperature=0.1, top_p=0.9), resample_repeats=0)
    result = await agent.run("task")
    assert model.temperatures == [0.1, 0.1, EXPLORE_TEMPERATURE, 0.1]
    assert model.top_ps == [0.9, 0.9, 0.9, 0.9]  # only the temperature changes
    assert [m.text for m in result.messages if m.role == "tool"] == ["2", "2" + REPEAT_HINT, "3"]


async def test_a_response_repeating_the_last_step_is_sampled_again_before_it_runs() -> None:
    answers = [call("add", a=1, b=1), call("add", b=1, a=1), call("add", a=2, b=1), "3"]
    model = TemperatureRecorder(answers)
    result = await Agent(model, tools=[add], settings=ModelSettings(temperature=0.1)).run("task")
    assert model.temperatures == [0.1, 0.1, EXPLORE_TEMPERATURE, 0.1]
    # The repeat never ran: the history holds the first call and the resampled one.
    assert [m.text for m in result.messages if m.role == "tool"] == ["2", "3"]
    assert model.inner.requests[2][-1].text.startswith(RESAMPLE_NOTE)  # said once, not kept
    assert not any(m.text.startswith(RESAMPLE_NOTE) for m in model.inner.requests[3])
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "3", 3)
    assert_protocol(result.messages)


async def test_a_call_that_failed_twice_the_same_way_is_sampled_again_before_it_ends_the_run(tmp_path: Path) -> None:
    broken, other, third = call("add", a="x", b=1), call("note", name="a.txt"), call("note", name="b.txt")
    # broken fails twice, each time after a call that changed the workspace (so not a repeat of
    # a step nothing changed since, and it runs); a third time would end the run stuck, so the
    # model is asked again before it runs.
    model = TemperatureRecorder([broken, other, broken, third, broken, call("add", a=2, b=1), "3"])
    agent = Agent(model, tools=[add, note], settings=ModelSettings(temperature=0.1), max_repeats=3, workspace=tmp_path)
    result = await agent.run("task")
    assert model.inner.requests[5][-1].text.startswith(FAILED_AGAIN_NOTE)  # step 5, sampled again
    assert not any(m.text.startswith(FAILED_AGAIN_NOTE) for m in model.inner.requests[6])
    assert model.temperatures[5] == EXPLORE_TEMPERATURE
    calls = [c.arguments for m in result.messages for c in m.tool_calls]
    fixed = call("add", a=2, b=1).arguments
    assert calls == [broken.arguments, other.arguments, broken.arguments, third.arguments, fixed]
    assert (result.state, result.output) == (RunState.FINISHED, "3")
    assert_protocol(result.messages)


async def test_the_draw_after_a_repeat_cannot_call_the_repeated_tool() -> None:
    @tool
    def double(a: int) -> int:
        """Double an integer.

        Args:
            a: the integer
        """
        return 2 * a

    same = call("add", a=1, b=1)
    model = TemperatureRecorder([same, same, call("double", a=2), "4"])
    result = await Agent(model, tools=[add, double]).run("task")
    offered = [[t.name for t in tools] for tools in model.inner.request_tools]
    assert offered[:2] == [["add", "double", "terminate"]] * 2
    assert offered[2] == ["double", "terminate"]  # `add` stays in the prompt, not in what may be called
    note = model.inner.requests[2][-1].text
    assert note.startswith(RESAMPLE_NOTE) and "This time `add` cannot be called" in note
    assert offered[3] == ["add", "double", "terminate"]  # withheld for that draw only
    assert [m.text for m in result.messages if m.role == "tool"] == ["2", "4"]
    assert (result.state, result.output) == (RunState.FINISHED, "4")
    assert_protocol(result.messages)


async def test_a_failed_call_that_left_out_a_default_is_still_seen_failing_again(tmp_path: Path) -> None:
    @tool
    def lookup(key: str, exact: bool = False) -> str:
        """Look a key up.

        Args:
            key: the key
            exact: match exactly
        """
        raise ValueError(f"no key {key!r}")

    broken = call("lookup", key="x")  # `exact` left to its default
    other, third = call("note", name="a.txt"), call("note", name="b.txt")
    model = TemperatureRecorder([broken, other, broken, third, broken, call("lookup", key="y"), "done"])
    agent = Agent(model, tools=[lookup, note], settings=ModelSettings(temperature=0.1), workspace=tmp_path)
    result = await agent.run("task")
    assert model.inner.requests[5][-1].text.startswith(FAILED_AGAIN_NOTE)  # the third try is drawn again
    assert [c.arguments for m in result.messages for c in m.tool_calls][-1] == call("lookup", key="y").arguments
    assert_protocol(result.messages)


async def test_resampling_gives_up_and_runs_the_repeat() -> None:
    same = call("add", a=1, b=1)
    model = TemperatureRecorder([same, same, same, same, "2"])
    result = await Agent(model, tools=[add], settings=ModelSettings(temperature=0.1), resample_repeats=2).run("task")
    assert model.temperatures == [0.1, 0.1, EXPLORE_TEMPERATURE, EXPLORE_TEMPERATURE, EXPLORE_TEMPERATURE]
    assert [m.text for m in result.messages if m.role == "tool"] == ["2", "2" + REPEAT_HINT]
    assert (result.state, result.output) == (RunState.FINISHED, "2")


async def test_a_response_repeating_the_step_before_a_sent_back_answer_is_sampled_again_with_every_tool() -> None:
    # merge_csv: the completion check sent the answer back with the merge to run; the 1.5B re-ran its own.
    checked: list[str] = []

    def check(task: str, answer: str, context: object) -> str | None:
        checked.append(answer)
        return "the total is wrong: run add with a=2" if len(checked) == 1 else None

    same = call("add", a=1, b=1)
    done = call("terminate", status="success", message="done")
    model = TemperatureRecorder([same, done, same, call("add", a=2, b=1), done])
    agent = Agent(model, tools=[add], settings=ModelSettings(temperature=0.1), completion_check=check)
    result = await agent.run("task")
    note = model.inner.requests[3][-1].text
    sent_back = next(m.text for m in result.messages if m.name == "terminate")
    assert note == SENT_BACK_REPEAT_NOTE.format(sent_back=sent_back) and note.endswith(sent_back)
    assert "run add with a=2" in note
    # no tool withheld: the answer's note asks for `add` again
    assert [t.name for t in model.inner.request_tools[3]] == ["add", "terminate"]
    assert model.temperatures[3] == EXPLORE_TEMPERATURE
    assert [c.arguments for m in result.messages for c in m.tool_calls if c.name == "add"] == [
        same.arguments,
        call("add", a=2, b=1).arguments,
    ]
    assert (result.state, result.output) == (RunState.FINISHED, "done")
    assert_protocol(result.messages)


async def test_a_response_repeating_an_earlier_step_nothing_changed_since_is_sampled_again(tmp_path: Path) -> None:
    # fix_failing_test: run the code, list a folder outside the workspace (fails), run the same code again.
    run_it, outside = call("add", a=1, b=1), call("note", name="../out.txt")
    model = TemperatureRecorder([run_it, outside, run_it, call("note", name="fix.txt"), "done"])
    agent = Agent(model, tools=[add, note], settings=ModelSettings(temperature=0.1), workspace=tmp_path)
    result = await agent.run("task")
    note_sent = model.inner.requests[3][-1].text
    assert note_sent.startswith(EARLIER_REPEAT_NOTE) and "This time `add` cannot be called" in note_sent
    assert [t.name for t in model.inner.request_tools[3]] == ["note", "terminate"]
    assert model.temperatures[3] == EXPLORE_TEMPERATURE
    # The repeat never ran: the third step is the resampled call.
    assert [c.arguments for m in result.messages for c in m.tool_calls] == [
        run_it.arguments,
        outside.arguments,
        call("note", name="fix.txt").arguments,
    ]
    assert (result.state, result.output) == (RunState.FINISHED, "done")
    assert_protocol(result.messages)


async def test_an_earlier_step_is_repeated_freely_once_a_file_changed(tmp_path: Path) -> None:
    run_it = call("add", a=1, b=1)
    model = TemperatureRecorder([run_it, call("note", name="fix.txt"), run_it, "done"])
    agent = Agent(model, tools=[add, note], settings=ModelSettings(temperature=0.1), workspace=tmp_path)
    result = await agent.run("task")
    assert not any(m.text.startswith(EARLIER_REPEAT_NOTE) for request in model.inner.requests for m in request)
    assert len(model.inner.requests) == 4  # no draw again: the repeat ran
    assert [m.text.split("\n")[0] for m in result.messages if m.role == "tool"] == ["2", "wrote fix.txt", "2"]


async def test_an_earlier_step_is_repeated_freely_after_another_call_of_its_tool(tmp_path: Path) -> None:
    # A python call in between may have changed the session the repeated call reads.
    run_it = call("add", a=1, b=1)
    model = TemperatureRecorder([run_it, call("add", a=2, b=2), run_it, "done"])
    agent = Agent(model, tools=[add], settings=ModelSettings(temperature=0.1), workspace=tmp_path)
    result = await agent.run("task")
    assert len(model.inner.requests) == 4  # no draw again: the repeat ran
    assert [m.text.split("\n")[0] for m in result.messages if m.role == "tool"] == ["2", "4", "2"]


FIXES = (
    "counts.md has no Markdown table, and the task asks for one: a header row, a |---|---| line, then one row per item"
)


async def test_a_failure_answer_copying_the_note_it_was_sent_back_with_is_sampled_again_without_terminate() -> None:
    # word_counts: the 1.5B answered status "failure" with the fixes it had just been given, word for word.
    checked: list[str] = []

    def check(task: str, answer: str, context: object) -> str | None:
        checked.append(answer)
        return FIXES if len(checked) == 1 else None

    parrot = call("terminate", status="failure", message=f"The file is wrong: {FIXES}. Fix this.")
    done = call("terminate", status="success", message="done")
    model = TemperatureRecorder([done, parrot, call("add", a=2, b=1), done])
    agent = Agent(model, tools=[add], settings=ModelSettings(temperature=0.1), completion_check=check)
    result = await agent.run("task")
    assert model.inner.requests[2][-1].text == PARROT_NOTE
    assert [t.name for t in model.inner.request_tools[2]] == ["add"]  # terminate withheld for that draw
    assert model.temperatures[2] == EXPLORE_TEMPERATURE
    assert [c.name for m in result.messages for c in m.tool_calls] == ["terminate", "add", "terminate"]
    assert (result.state, result.output) == (RunState.FINISHED, "done")
    assert_protocol(result.messages)


def test_a_failure_answer_in_the_models_own_words_is_not_a_parrot() -> None:
    history = [
        Message.user("task"),
        Message.assistant(tool_calls=[call("terminate", status="success", message="done")]),
        Message.tool("c1", "terminate", FIXES),
    ]
    own = call("terminate", status="failure", message="texts/ is empty, so there is nothing to count.")
    quoted = call("terminate", status="failure", message=f"Not done: {FIXES[:70]}")
    assert not parrots_sent_back(history, Message.assistant(tool_calls=[own]))
    assert parrots_sent_back(history, Message.assistant(tool_calls=[quoted]))
    assert not parrots_sent_back(history[:1], Message.assistant(tool_calls=[quoted]))  # nothing sent back yet


def test_giving_up_with_the_words_of_the_last_tool_result_is_a_parrot() -> None:
    # sales_report run 104: status "failure" with the warning report.md had just got, word for word.
    warning = (
        "Warning: report.md is not valid Markdown (the table at line 2 has a second header at line 4: a table has "
        "one header row, then its data rows). Fix it before using the file."
    )
    history = [
        Message.user("task"),
        Message.assistant(tool_calls=[call("add", a=1, b=1)]),
        Message.tool("c1", "add", f"wrote 320 characters to report.md\n\n{warning}"),
    ]
    gave_up = call("terminate", status="failure", message=f"The table is wrong. {warning[9:120]}")
    quoting = call("terminate", status="success", message=f"Done; the tool said: {warning[9:120]}")
    own = call("terminate", status="failure", message="report.md cannot be written: the disk is full.")
    assert parrots_sent_back(history, Message.assistant(tool_calls=[gave_up]))
    assert not parrots_sent_back(history, Message.assistant(tool_calls=[quoting]))  # a success may quote results
    assert not parrots_sent_back(history, Message.assistant(tool_calls=[own]))
