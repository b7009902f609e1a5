"""Recording a run's model exchanges to a cassette, and replaying them without a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.agent_cases import add
from helpers.chat_server import ChatServer, completion, error, tool_call
from helpers.openai_cases import HISTORY, SETTINGS, TOOLS
from pymanus import Agent
from pymanus.errors import ConfigError, ModelAuthError, ModelError
from pymanus.messages import Message
from pymanus.models.cassette import Cassette, RecordingModel, ReplayModel
from pymanus.models.openai import OpenAIModel


@pytest.mark.parametrize("stream", [False, True])
async def test_a_recorded_run_replays_the_same_without_the_endpoint(
    chat_server: ChatServer, tmp_path: Path, stream: bool
) -> None:
    tape = tmp_path / "run.cassette.json"
    chat_server.push(
        completion("Adding.", tool_calls=[tool_call("add", {"a": 2, "b": 40}, id="call_1")], usage=(50, 9)),
        completion("The answer is 42.", usage=(70, 6)),
    )
    endpoint = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test")
    recorder = RecordingModel(endpoint, tape)
    recorded = await Agent(model=recorder, tools=[add], stream=stream, workspace=tmp_path).run("What is 2 + 40?")
    await recorder.aclose()
    assert recorded.state == "finished" and recorded.output == "The answer is 42."

    cassette = json.loads(tape.read_text())
    assert cassette["model"] == "openai:test-model"
    assert [len(e["messages"]) for e in cassette["exchanges"]] == [2, 4]
    assert cassette["exchanges"][0]["tools"] == ["add", "terminate"]

    replay = ReplayModel(tape, strict=True)
    assert replay.name == "openai:test-model"
    replayed = await Agent(model=replay, tools=[add], stream=stream, workspace=tmp_path).run("What is 2 + 40?")
    assert len(chat_server.requests) == 2  # nothing more reached the endpoint
    assert replayed.output == recorded.output
    assert replayed.usage == recorded.usage
    assert [m.model_dump() for m in replayed.messages] == [m.model_dump() for m in recorded.messages]


async def test_errors_are_recorded_and_replayed_with_their_type(tmp_path: Path) -> None:
    tape = tmp_path / "auth.json"
    async with ChatServer(api_key="sk-right") as server:
        recorder = RecordingModel(OpenAIModel("m", base_url=server.url, api_key="sk-wrong"), tape)
        with pytest.raises(ModelAuthError):
            await recorder.request(HISTORY, TOOLS, SETTINGS)
        await recorder.aclose()
    replay = ReplayModel(tape)
    with pytest.raises(ModelAuthError, match="HTTP 401") as caught:
        await replay.request(HISTORY, TOOLS, SETTINGS)
    assert (caught.value.status, caught.value.retryable) == (401, False)


async def test_a_rate_limit_replays_with_its_retry_hint(chat_server: ChatServer, tmp_path: Path) -> None:
    chat_server.push(error(429, "slow down", headers={"Retry-After": "3"}))
    recorder = RecordingModel(OpenAIModel("m", base_url=chat_server.url, api_key="k"), tmp_path / "t.json")
    with pytest.raises(ModelError):
        await recorder.request(HISTORY, TOOLS, SETTINGS)
    await recorder.aclose()
    with pytest.raises(ModelError) as caught:
        await ReplayModel(recorder.cassette).request(HISTORY, TOOLS, SETTINGS)
    assert (type(caught.value), caught.value.status, caught.value.retry_after) == (ModelError, 429, 3.0)


async def test_strict_replay_names_the_first_difference(chat_server: ChatServer, tmp_path: Path) -> None:
    chat_server.push(completion("hello"))
    recorder = RecordingModel(OpenAIModel("m", base_url=chat_server.url, api_key="k"), tmp_path / "t.json")
    await recorder.request(HISTORY, TOOLS, SETTINGS)
    await recorder.aclose()
    other = [HISTORY[0], Message.user("What is 3 + 40?")]
    strict = ReplayModel(recorder.cassette, strict=True)
    with pytest.raises(ModelError, match=r"request 1 differs from the cassette: message 1 \(user\)") as caught:
        await strict.request(other, TOOLS, SETTINGS)
    assert strict.divergence is not None and strict.divergence in str(caught.value)
    assert "now 'What is 3 + 40?', recorded 'What is 2 + 40?'" in strict.divergence
    loose = ReplayModel(recorder.cassette)
    assert (await loose.request(other, TOOLS, SETTINGS)).message.content == "hello"
    assert loose.divergence is None
    with pytest.raises(ModelError, match="no answer left"):
        await loose.request(other, TOOLS, SETTINGS)
    assert loose.divergence == "request 2: the cassette has no answer left (1 recorded)"


async def test_strict_replay_compares_tool_definitions_and_settings(chat_server: ChatServer, tmp_path: Path) -> None:
    chat_server.push(completion("hello"))
    recorder = RecordingModel(OpenAIModel("m", base_url=chat_server.url, api_key="k"), tmp_path / "t.json")
    await recorder.request(HISTORY, TOOLS, SETTINGS)
    await recorder.aclose()
    assert Cassette.load(tmp_path / "t.json").tools == {t.name: t for t in TOOLS}
    described = [TOOLS[0].model_copy(update={"description": "Add two whole numbers."}), *TOOLS[1:]]
    with pytest.raises(ModelError, match=r"the description of tool `add`: now .*whole.*, recorded .*integers"):
        await ReplayModel(recorder.cassette, strict=True).request(HISTORY, described, SETTINGS)
    with pytest.raises(ModelError, match=r"tools \['add'\], recorded \['add', 'search'\]"):
        await ReplayModel(recorder.cassette, strict=True).request(HISTORY, TOOLS[:1], SETTINGS)
    warmer = SETTINGS.model_copy(update={"temperature": 0.7})
    with pytest.raises(ModelError, match=r"settings \{'temperature': 0.7\}, recorded \{\}"):
        await ReplayModel(recorder.cassette, strict=True).request(HISTORY, TOOLS, warmer)
    replay = ReplayModel(recorder.cassette, strict=True)
    assert (await replay.request(HISTORY, TOOLS, SETTINGS)).message.content == "hello"


def test_a_missing_or_foreign_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read cassette"):
        ReplayModel(tmp_path / "nope.json")
    (tmp_path / "x.json").write_text('{"exchanges": 3}')
    with pytest.raises(ConfigError, match="is not a cassette"):
        Cassette.load(tmp_path / "x.json")
