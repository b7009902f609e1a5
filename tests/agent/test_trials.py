"""A response whose calls fail the run's trial is sampled again; the first that passes runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from helpers.agent_cases import assert_protocol
from pymanus import Agent, Message, RunState, ToolContext, tool
from pymanus.agent.events import ModelResponded, ToolCallFinished
from pymanus.agent.hooks import TrialResult
from pymanus.agent.loop import EXPLORE_TEMPERATURE
from pymanus.errors import ModelOutputError
from pymanus.messages import ToolCall
from pymanus.models import ScriptedModel, call
from pymanus.models.base import Model, ModelResponse, ModelSettings, ToolDefinition


@tool
def save(value: int, ctx: ToolContext) -> str:
    """Save a value to value.txt.

    Args:
        value: the value to save
    """
    (Path(ctx.workspace) / "value.txt").write_text(str(value))
    return f"saved {value}"


class Trial:
    """Passes the calls that save ``good``; records the values it was asked about."""

    def __init__(self, good: int) -> None:
        self.good = good
        self.tried: list[int | None] = []

    async def __call__(self, task: str, calls: list[ToolCall], context: ToolContext) -> TrialResult | None:
        saves = [json.loads(c.arguments)["value"] for c in calls if c.name == "save"]
        self.tried.append(saves[0] if saves else None)
        if not saves:
            return None
        return TrialResult(passed=saves[0] == self.good, report=f"{saves[0]} is not {self.good}")


def saved(tmp_path: Path) -> str:
    return (tmp_path / "value.txt").read_text()


async def test_a_response_failing_its_trial_is_drawn_again_and_the_passing_draw_runs(tmp_path: Path) -> None:
    model = ScriptedModel([call("save", value=1), call("save", value=2), call("save", value=3), "done"])
    trial = Trial(good=3)
    agent = Agent(model, tools=[save], workspace=tmp_path, call_trial=trial, trial_samples=3)
    events = [event async for event in agent.iter("save 3")]
    assert trial.tried == [1, 2, 3]
    assert saved(tmp_path) == "3"  # the failing draws never ran
    assert [e.content for e in events if isinstance(e, ToolCallFinished)] == ["saved 3"]
    # every draw is a real model call, reported as one
    assert sum(isinstance(e, ModelResponded) for e in events) == 4
    # the draws after the first are sampled more freely, told why the first failed
    assert [s.temperature for s in model.request_settings[1:3]] == [EXPLORE_TEMPERATURE, EXPLORE_TEMPERATURE]
    assert [r[-1].text for r in model.requests[1:3]] == ["1 is not 3", "1 is not 3"]
    assert model.requests[1][:-1] == model.requests[0]  # the same request, the report added
    assert all(m.text != "1 is not 3" for m in model.requests[3])  # the report is not kept in the history


async def test_when_no_draw_passes_the_first_response_runs(tmp_path: Path) -> None:
    model = ScriptedModel([call("save", value=1), call("save", value=2), call("save", value=4), "done"])
    trial = Trial(good=3)
    result = await Agent(model, tools=[save], workspace=tmp_path, call_trial=trial, trial_samples=2).run("save 3")
    assert trial.tried == [1, 2, 4]
    assert (result.state, result.output) == (RunState.FINISHED, "done"), result.output
    assert saved(tmp_path) == "1"
    assert_protocol(result.messages)
    assert [m.text for m in result.messages if m.role == "tool"] == ["saved 1"]


async def test_a_passing_or_untried_first_response_runs_without_another_draw(tmp_path: Path) -> None:
    model = ScriptedModel([call("save", value=3), "done"])
    trial = Trial(good=3)
    result = await Agent(model, tools=[save], workspace=tmp_path, call_trial=trial).run("save 3")
    assert (trial.tried, len(model.requests), saved(tmp_path)) == ([3], 2, "3")
    assert result.state is RunState.FINISHED
    # no samples: the trial is not even asked
    model = ScriptedModel([call("save", value=1), "done"])
    trial = Trial(good=3)
    await Agent(model, tools=[save], workspace=tmp_path, call_trial=trial, trial_samples=0).run("save 3")
    assert (trial.tried, len(model.requests), saved(tmp_path)) == ([], 2, "1")


class UnreadableSecondDraw(Model):
    """A scripted model whose second answer cannot be read."""

    def __init__(self, answers: list[object]) -> None:
        self.inner = ScriptedModel(answers)  # type: ignore[arg-type]
        self.count = 0

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        self.count += 1
        if self.count == 2:
            raise ModelOutputError("unterminated JSON in the tool call")
        return await self.inner.request(messages, tools, settings)


async def test_an_unreadable_draw_counts_as_one_that_does_not_pass(tmp_path: Path) -> None:
    model = UnreadableSecondDraw([call("save", value=1), call("save", value=3), "done"])
    trial = Trial(good=3)
    result = await Agent(model, tools=[save], workspace=tmp_path, call_trial=trial, trial_samples=2).run("save 3")
    assert (result.state, saved(tmp_path)) == (RunState.FINISHED, "3"), result.output
    assert trial.tried == [1, 3]
