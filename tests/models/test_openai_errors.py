"""OpenAIModel: how provider errors, and a strict provider, are reported."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from helpers.chat_server import (
    ChatServer,
    Chunks,
    Delay,
    Raw,
    completion,
    context_overflow,
    error,
    tool_call,
)
from helpers.openai_cases import HISTORY, SETTINGS, TOOLS, chunk, collect
from pymanus.errors import ContextOverflowError, ModelAuthError, ModelError, ModelOutputError
from pymanus.messages import Message, ToolCall
from pymanus.models.base import ModelSettings
from pymanus.models.openai import OpenAIModel

# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("reply", "kind", "status", "retryable", "words"),
    [
        (error(401, "Incorrect API key provided"), ModelAuthError, 401, False, "Incorrect API key"),
        (error(403, "Your region is not supported"), ModelAuthError, 403, False, "region"),
        (context_overflow(4096, 5000), ContextOverflowError, 400, False, "maximum context length"),
        (
            error(400, "the request exceeds the available context size, try increasing it"),
            ContextOverflowError,
            400,
            False,
            "context size",
        ),
        (error(400, "Invalid value for 'temperature'"), ModelError, 400, False, "temperature"),
        (error(404, "The model `nope` does not exist"), ModelError, 404, False, "does not exist"),
        (error(429, "Rate limit reached for requests"), ModelError, 429, True, "Rate limit"),
        (error(500, "The server had an error"), ModelError, 500, True, "server had an error"),
        (Raw(502, "<html>Bad Gateway</html>", content_type="text/html"), ModelError, 502, True, "Bad Gateway"),
    ],
)
async def test_http_errors_are_mapped(
    model: OpenAIModel,
    chat_server: ChatServer,
    stream: bool,
    reply: Any,
    kind: type[ModelError],
    status: int,
    retryable: bool,
    words: str,
) -> None:
    chat_server.push(reply)
    with pytest.raises(ModelError) as caught:
        if stream:
            await collect(model)
        else:
            await model.request(HISTORY, TOOLS, SETTINGS)
    exc = caught.value
    assert type(exc) is kind
    assert exc.status == status
    assert exc.retryable is retryable
    assert f"HTTP {status}" in str(exc)
    assert words in str(exc)
    assert "openai:test-model" in str(exc)


async def test_connection_refused_is_retryable(no_openai_env: None) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1")
    for stream in (False, True):
        with pytest.raises(ModelError) as caught:
            await (collect(model) if stream else model.request(HISTORY, [], SETTINGS))
        assert caught.value.retryable is True
        assert type(caught.value) is ModelError
        assert f"cannot connect to http://127.0.0.1:{port}/v1" in str(caught.value)
    await model.aclose()


async def test_timeout_is_retryable(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(Delay(2.0, completion("late")))
    with pytest.raises(ModelError, match="timed out") as caught:
        await model.request(HISTORY, [], ModelSettings(timeout=0.2))
    assert caught.value.retryable is True


async def test_a_call_timeout_applies_to_that_call_only(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(Delay(0.5, completion("late")), Delay(0.5, completion("in time")))
    with pytest.raises(ModelError, match="timed out"):
        await model.request(HISTORY, [], ModelSettings(timeout=0.2))
    assert (await model.request(HISTORY, [], SETTINGS)).message.content == "in time"


async def test_error_event_inside_stream(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(
        Chunks([chunk({"content": "par"}), {"error": {"message": "overloaded, try later", "type": "server_error"}}])
    )
    with pytest.raises(ModelError, match="overloaded, try later") as caught:
        await collect(model)
    assert caught.value.retryable is True


async def test_empty_stream_is_retryable_error(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(Chunks([]))
    with pytest.raises(ModelError, match="without any data") as caught:
        await collect(model)
    assert caught.value.retryable is True


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Raw(200, "this is not json", content_type="text/plain"), "expected a JSON object"),
        (Raw(200, '{"id": "x", "choices": []}'), "no choices"),
        (Raw(200, "{not json"), "unreadable response"),
    ],
)
async def test_unusable_answers_are_output_errors(
    model: OpenAIModel, chat_server: ChatServer, reply: Raw, words: str
) -> None:
    chat_server.push(reply)
    with pytest.raises(ModelOutputError, match=words):
        await model.request(HISTORY, [], SETTINGS)


async def test_error_body_with_status_200(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(Raw(200, json.dumps({"error": {"message": "quota exhausted", "code": 1113}})))
    with pytest.raises(ModelError, match="quota exhausted"):
        await model.request(HISTORY, [], SETTINGS)


async def test_sdk_retries_can_be_turned_on(chat_server: ChatServer) -> None:
    failing = error(500, "flaky")
    failing.headers["retry-after-ms"] = "10"
    chat_server.push(failing, completion("ok"))
    model = OpenAIModel("m", base_url=chat_server.url, api_key="k", max_retries=1)
    response = await model.request(HISTORY, [], SETTINGS)
    assert response.message.content == "ok"
    assert len(chat_server.requests) == 2
    await model.aclose()


async def test_no_sdk_retries_by_default(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(error(500, "flaky"), completion("ok"))
    with pytest.raises(ModelError):
        await model.request(HISTORY, [], SETTINGS)
    assert len(chat_server.requests) == 1


# -- a strict provider: the conversation protocol ---------------------------------------------


async def test_validating_server_rejects_unanswered_tool_call(model: OpenAIModel, chat_server: ChatServer) -> None:
    broken = [*HISTORY, Message.assistant(tool_calls=[ToolCall(id="call_1", name="add")]), Message.user("and?")]
    with pytest.raises(ModelError, match=r"messages: call_1$") as caught:
        await model.request(broken, TOOLS, SETTINGS)
    assert caught.value.status == 400 and caught.value.retryable is False
    assert "did not have response messages" in str(caught.value)


async def test_validating_server_rejects_orphan_tool_message(model: OpenAIModel, chat_server: ChatServer) -> None:
    broken = [*HISTORY, Message.tool("call_9", "add", "42")]
    with pytest.raises(ModelError, match="must be a response to a preceeding message"):
        await model.request(broken, TOOLS, SETTINGS)


async def test_validating_server_rejects_answer_to_an_older_call(model: OpenAIModel, chat_server: ChatServer) -> None:
    broken = [
        *HISTORY,
        Message.assistant(tool_calls=[ToolCall(id="call_1", name="add")]),
        Message.tool("call_1", "add", "42"),
        Message.assistant(tool_calls=[ToolCall(id="call_2", name="add")]),
        Message.tool("call_1", "add", "42 again"),
    ]
    with pytest.raises(ModelError, match="HTTP 400"):
        await model.request(broken, TOOLS, SETTINGS)


async def test_tool_call_round_trip_is_accepted(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(
        completion("Adding.", tool_calls=[tool_call("add", {"a": 2, "b": 40}), tool_call("add", {"a": 1, "b": 1})]),
        completion("42 and 2."),
    )
    first = await model.request(HISTORY, TOOLS, SETTINGS)
    history = [*HISTORY, first.message]
    history += [Message.tool(c.id, c.name, str(i)) for i, c in enumerate(first.message.tool_calls)]
    _, second = await collect(model, history)
    assert second.message.content == "42 and 2."
    assert chat_server.messages[-1] == [m.to_wire() for m in history]
