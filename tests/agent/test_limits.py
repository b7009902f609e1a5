"""Usage limits and prices: a run ends, with its reason, when it has spent what it may."""

from __future__ import annotations

import pytest

from helpers.agent_cases import add, assert_protocol
from pymanus import Agent, RunState
from pymanus.agent.limits import Price, UsageLimits
from pymanus.models import ScriptedModel, call


async def test_a_request_limit_ends_the_run_before_the_next_request() -> None:
    model = ScriptedModel([call("add", a=1, b=1), call("add", a=2, b=2), "4"])
    result = await Agent(model, tools=[add], usage_limits=UsageLimits(max_requests=2)).run("task")
    assert (result.state, result.reason, result.steps) == (RunState.ERROR, "usage_limit", 3)
    assert result.usage.requests == 2 and len(model.requests) == 2
    assert result.output == "The run reached its limit of 2 requests (2 spent)."
    assert_protocol(result.messages)  # the last call has its result


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        (UsageLimits(max_input_tokens=1), "input tokens"),
        (UsageLimits(max_output_tokens=1), "output tokens"),
        (UsageLimits(max_total_tokens=1), "total tokens"),
    ],
)
async def test_token_limits_end_the_run(limits: UsageLimits, said: str) -> None:
    model = ScriptedModel([call("add", a=1, b=1), "2"])
    result = await Agent(model, tools=[add], usage_limits=limits).run("task")
    assert (result.state, result.reason, result.usage.requests) == (RunState.ERROR, "usage_limit", 1)
    assert said in result.output


async def test_the_cost_is_counted_by_the_price_and_limited() -> None:
    model = ScriptedModel([call("add", a=1, b=1), call("add", a=2, b=2), "4"])
    price = Price(input=1_000_000.0, output=0.0)  # one unit per prompt token
    free = await Agent(model, tools=[add], price=price).run("task")
    assert free.cost == free.usage.prompt_tokens and free.state is RunState.FINISHED
    model = ScriptedModel([call("add", a=1, b=1), call("add", a=2, b=2), "4"])
    capped = await Agent(model, tools=[add], price=price, usage_limits=UsageLimits(max_cost=1.0)).run("task")
    assert (capped.reason, capped.usage.requests) == ("usage_limit", 1)
    assert capped.output.startswith("The run reached its cost limit of 1")
    assert (await Agent(ScriptedModel(["x"])).run("task")).cost is None  # no price, no cost
