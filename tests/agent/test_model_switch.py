"""A fallback switch is an event of the run, once per switch, as well as a log record."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from helpers.agent_cases import add, assert_protocol
from helpers.chat_server import ChatServer, completion, error, tool_call
from pymanus import Agent, ModelSwitched, RunFinished
from pymanus.agent.events import Event
from pymanus.messages import Message
from pymanus.models.openai import OpenAIModel
from pymanus.models.resilience import CircuitBreaker, FallbackModel, ResilientModel, RetryPolicy

FAST = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.002)


@pytest.fixture
async def backup() -> AsyncIterator[ChatServer]:
    async with ChatServer(validate=True) as server:
        yield server


def chain(primary: ChatServer, backup: ChatServer) -> FallbackModel:
    def link(server: ChatServer, name: str) -> ResilientModel:
        model = OpenAIModel(name, base_url=server.url, api_key="sk-test")
        return ResilientModel(model, policy=FAST, breaker=CircuitBreaker(2, 60.0))

    return FallbackModel([link(primary, "primary"), link(backup, "backup")])


async def run_events(model: FallbackModel, tmp_path: Path, *, stream: bool) -> list[Event]:
    agent = Agent(model=model, tools=[add], stream=stream, workspace=tmp_path)
    try:
        return [event async for event in agent.iter("What is 2 + 40?")]
    finally:
        await agent.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_each_switch_is_one_event_of_its_step(
    chat_server: ChatServer, backup: ChatServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    chat_server.respond_with(lambda body: error(500, "The server had an error"))
    backup.push(
        completion(tool_calls=[tool_call("add", {"a": 2, "b": 40}, id="call_1")]),
        completion("The answer is 42."),
    )
    with caplog.at_level(logging.INFO, logger="pymanus.models"):
        events = await run_events(chain(chat_server, backup), tmp_path, stream=stream)

    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.output == "The answer is 42."
    switched = [e for e in events if isinstance(e, ModelSwitched)]
    # Step 1: the primary fails twice (a retry) and its breaker opens; step 2: the open breaker refuses it.
    assert [(e.step, e.from_model, e.to_model, e.reason) for e in switched] == [
        (1, "openai:primary", "openai:backup", "ModelError"),
        (2, "openai:primary", "openai:backup", "circuit_open"),
    ]
    assert "HTTP 500" in switched[0].error
    assert len(chat_server.requests) == 2 and len(backup.requests) == 2
    for event in switched:  # between the request it served and the response
        kinds = [type(e).__name__ for e in events if e.step == event.step]
        assert kinds.index("ModelRequest") < kinds.index("ModelSwitched") < kinds.index("ModelResponded")
    records = [r for r in caplog.records if getattr(r, "event", None) == "model_switch"]
    assert [(r.from_model, r.to_model, r.run_id, r.step) for r in records] == [
        ("openai:primary", "openai:backup", finished.run_id, 1),
        ("openai:primary", "openai:backup", finished.run_id, 2),
    ]
    assert_protocol([Message.from_wire(m) for m in backup.messages[-1]])


async def test_switches_before_a_whole_chain_failed_reach_the_stream(
    chat_server: ChatServer, backup: ChatServer, tmp_path: Path
) -> None:
    chat_server.push(error(500, "down"), error(503, "still down"))
    backup.push(error(400, "Invalid value for 'temperature'"))
    events = await run_events(chain(chat_server, backup), tmp_path, stream=False)
    (switched,) = [e for e in events if isinstance(e, ModelSwitched)]
    assert (switched.from_model, switched.to_model, switched.step) == ("openai:primary", "openai:backup", 1)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.reason == "model_error" and "temperature" in finished.output
    assert events.index(switched) == len(events) - 2


async def test_a_run_without_fallback_has_no_switch_event(chat_server: ChatServer, tmp_path: Path) -> None:
    chat_server.push(error(500, "down"), completion("fine"))
    model = ResilientModel(OpenAIModel("m", base_url=chat_server.url, api_key="k"), policy=FAST)
    agent = Agent(model=model, tools=[add], workspace=tmp_path)
    events = [event async for event in agent.iter("task")]
    await agent.aclose()
    assert not any(isinstance(e, ModelSwitched) for e in events)
    assert isinstance(events[-1], RunFinished) and events[-1].output == "fine"
