"""Whole agent runs through the resilient gateway while the endpoint misbehaves."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from helpers.agent_cases import add, assert_protocol
from helpers.chat_server import ChatServer, Cut, Delay, Drop, completion, error, rate_limited, tool_call
from helpers.openai_cases import HISTORY, SETTINGS, TOOLS
from pymanus import Agent
from pymanus.models.openai import OpenAIModel
from pymanus.models.resilience import ResilientModel, RetryPolicy


@pytest.fixture
async def gateway(chat_server: ChatServer) -> AsyncIterator[ResilientModel]:
    inner = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test", request_timeout=0.25)
    model = ResilientModel(inner, policy=RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.005))
    yield model
    await model.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_run_survives_every_transient_fault(
    gateway: ResilientModel, chat_server: ChatServer, stream: bool, tmp_path: object
) -> None:
    fenced = '```json\n{"a": 2, "b": 40}\n```'  # arguments wrapped in a code fence
    chat_server.push(
        rate_limited(0),
        Drop(),
        completion(tool_calls=[tool_call("add", fenced, id="call_1")]),
        error(500, "The server had an error"),
        Cut(completion("The answer is 42."), after=3),
        Delay(0.6, completion("too late")),
        completion("The answer is 42."),
    )
    agent = Agent(model=gateway, tools=[add], max_steps=5, stream=stream, workspace=str(tmp_path))
    result = await agent.run("What is 2 + 40?")
    assert result.state == "finished", result.output
    assert result.output == "The answer is 42."
    assert len(chat_server.requests) == 7
    first, second = chat_server.messages[0:3], chat_server.messages[3:7]
    assert all(m == first[0] for m in first) and all(m == second[0] for m in second)
    # The second conversation is the first plus one call and its one result: nothing lost or doubled.
    assert second[0][: len(first[0])] == first[0]
    added = second[0][len(first[0]) :]
    assert [m["role"] for m in added] == ["assistant", "tool"]
    assert added[0]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b": 40}'
    assert added[1]["content"] == "42"
    assert_protocol(result.messages)
    assert [m.role for m in result.messages].count("assistant") == 2


async def test_a_bad_key_ends_the_run_at_once(tmp_path: object) -> None:
    async with ChatServer(api_key="sk-right") as server:
        inner = OpenAIModel("test-model", base_url=server.url, api_key="sk-wrong")
        model = ResilientModel(inner, policy=RetryPolicy(max_retries=6, base_delay=0.001))
        result = await Agent(model=model, tools=[add], workspace=str(tmp_path)).run("What is 2 + 40?")
        await model.aclose()
    assert result.state == "error"
    assert "HTTP 401" in result.output and "Incorrect API key" in result.output
    assert len(server.requests) == 1


async def test_arguments_in_prose_are_recovered_and_hopeless_ones_left_as_sent(
    gateway: ResilientModel, chat_server: ChatServer
) -> None:
    calls = [
        tool_call("add", 'Here you go: {"a": 1, "b": 2} <|im_end|>', id="c1"),
        tool_call("add", "a=1, b=2", id="c2"),
        tool_call("add", '{"a": 1, "b": 2}', id="c3"),
    ]
    chat_server.push(completion(tool_calls=calls))
    response = await gateway.request(HISTORY, TOOLS, SETTINGS)
    assert [c.arguments for c in response.message.tool_calls] == ['{"a": 1, "b": 2}', "a=1, b=2", '{"a": 1, "b": 2}']
