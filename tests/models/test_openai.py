"""OpenAIModel against a real local chat-completions server: provider variants, streaming, errors."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import AsyncIterator
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
from pymanus.errors import ConfigError, ContextOverflowError, ModelAuthError, ModelError, ModelOutputError
from pymanus.messages import ImagePart, Message, TextPart, ToolCall
from pymanus.models.base import ModelResponse, ModelSettings, TextChunk, ToolDefinition
from pymanus.models.openai import IMAGE_OMITTED, NO_KEY, OpenAIModel

TOOLS = [
    ToolDefinition(name="add", description="Add two integers.", parameters={"type": "object", "properties": {}}),
    ToolDefinition(name="search", description="Search the web."),
]
SETTINGS = ModelSettings()
HISTORY = [Message.system("You are helpful."), Message.user("What is 2 + 40?")]
CALL_ID = re.compile(r"^call_[0-9a-f]{12}$")


@pytest.fixture
async def model(chat_server: ChatServer) -> AsyncIterator[OpenAIModel]:
    m = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test")
    yield m
    await m.aclose()


async def collect(
    model: OpenAIModel, messages: list[Message] = HISTORY, tools: list[ToolDefinition] = TOOLS
) -> tuple[list[str], ModelResponse]:
    """Stream a response; return the text chunks and the final response."""
    chunks: list[str] = []
    final: ModelResponse | None = None
    async for item in model.stream(messages, tools, SETTINGS):
        if isinstance(item, TextChunk):
            assert final is None, "text after the final response"
            chunks.append(item.text)
        else:
            final = item
    assert final is not None
    return chunks, final


async def both(
    model: OpenAIModel, server: ChatServer, reply: dict[str, Any], tools: list[ToolDefinition] = TOOLS
) -> list[ModelResponse]:
    """The same reply read once plainly and once streamed."""
    server.push(reply, reply)
    plain = await model.request(HISTORY, tools, SETTINGS)
    _, streamed = await collect(model, tools=tools)
    return [plain, streamed]


# -- answers ------------------------------------------------------------------------------------


async def test_plain_text_answer(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(completion("The answer is 42.", usage=(31, 7)))
    response = await model.request(HISTORY, [], SETTINGS)
    assert response.message == Message.assistant("The answer is 42.")
    assert response.finish_reason == "stop"
    assert response.usage.prompt_tokens == 31
    assert response.usage.completion_tokens == 7
    assert response.usage.requests == 1
    assert response.model_name == "test-model"
    sent = chat_server.requests[-1]
    assert sent["model"] == "test-model"
    assert sent["messages"] == [m.to_wire() for m in HISTORY]
    assert "tools" not in sent and "stream" not in sent


async def test_streamed_text_arrives_in_pieces(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(completion("The answer is 42.", usage=(31, 7)))
    chunks, response = await collect(model)
    assert len(chunks) > 1
    assert "".join(chunks) == "The answer is 42."
    assert response.message.content == "The answer is 42."
    assert response.finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.requests) == (31, 7, 1)
    sent = chat_server.requests[-1]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


async def test_null_content_with_several_tool_calls(model: OpenAIModel, chat_server: ChatServer) -> None:
    reply = completion(
        None,
        tool_calls=[
            tool_call("add", {"a": 2, "b": 40}, id="call_a"),
            tool_call("search", {"query": "pymanus"}, id="call_b"),
        ],
    )
    for response in await both(model, chat_server, reply):
        assert response.message.content is None
        assert response.message.tool_calls == [
            ToolCall(id="call_a", name="add", arguments='{"a": 2, "b": 40}'),
            ToolCall(id="call_b", name="search", arguments='{"query": "pymanus"}'),
        ]
        assert response.finish_reason == "tool_calls"


async def test_text_and_tool_calls_together(model: OpenAIModel, chat_server: ChatServer) -> None:
    reply = completion("Let me add them.", tool_calls=[tool_call("add", {"a": 2, "b": 40}, id="call_a")])
    for response in await both(model, chat_server, reply):
        assert response.message.content == "Let me add them."
        assert [c.id for c in response.message.tool_calls] == ["call_a"]
        assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_becomes_message_reasoning(model: OpenAIModel, chat_server: ChatServer, field: str) -> None:
    reply = completion("42", reasoning="2 + 40 = 42, simple.", reasoning_field=field)
    for response in await both(model, chat_server, reply):
        assert response.message.reasoning == "2 + 40 = 42, simple."
        assert response.message.content == "42"


async def test_tool_calls_without_ids_get_generated_ids(model: OpenAIModel, chat_server: ChatServer) -> None:
    reply = completion(None, tool_calls=[tool_call("add", {"a": 1}, id=""), tool_call("add", {"a": 2}, id="")])
    for response in await both(model, chat_server, reply):
        ids = [c.id for c in response.message.tool_calls]
        assert all(CALL_ID.match(i) for i in ids), ids
        assert len(set(ids)) == 2


async def test_arguments_sent_as_object_or_empty(model: OpenAIModel, chat_server: ChatServer) -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": "é"}}},
        {"id": "c2", "type": "function", "function": {"name": "search", "arguments": ""}},
        {"id": "c3", "type": "function", "function": {"name": "search"}},
    ]
    chat_server.push(completion(None, tool_calls=calls))
    response = await model.request(HISTORY, TOOLS, SETTINGS)
    assert [json.loads(c.arguments) for c in response.message.tool_calls] == [{"a": 1, "b": "é"}, {}, {}]


async def test_missing_usage_is_zero_tokens_one_request(model: OpenAIModel, chat_server: ChatServer) -> None:
    for response in await both(model, chat_server, completion("hi", usage=None)):
        assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.requests) == (0, 0, 1)


@pytest.mark.parametrize(
    ("raw", "with_calls", "expected"),
    [
        ("stop", False, "stop"),
        ("stop", True, "tool_calls"),  # vLLM/Ollama say "stop" with tool calls
        ("tool_calls", False, "stop"),
        ("length", False, "length"),
        ("length", True, "length"),
        ("max_tokens", False, "length"),
        ("eos", False, "stop"),
        ("function_call", True, "tool_calls"),
        ("content_filter", False, "content_filter"),
        (None, False, "stop"),
        (None, True, "tool_calls"),
        ("something_new", False, "stop"),
    ],
)
async def test_finish_reason_is_normalised(
    model: OpenAIModel, chat_server: ChatServer, raw: str | None, with_calls: bool, expected: str
) -> None:
    calls = [tool_call("add", {"a": 1}, id="c1")] if with_calls else None
    for response in await both(model, chat_server, completion("x", tool_calls=calls, finish_reason=raw)):
        assert response.finish_reason == expected


async def test_text_written_tool_calls_become_real_calls(model: OpenAIModel, chat_server: ChatServer) -> None:
    text = 'I will add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n</tool_call>'
    for response in await both(model, chat_server, completion(text)):
        assert response.message.content == "I will add."
        assert [(c.name, json.loads(c.arguments)) for c in response.message.tool_calls] == [("add", {"a": 2, "b": 40})]
        assert response.finish_reason == "tool_calls"


async def test_text_tool_calls_ignored_without_tools(model: OpenAIModel, chat_server: ChatServer) -> None:
    text = '<tool_call>{"name": "add", "arguments": {}}</tool_call>'
    for response in await both(model, chat_server, completion(text), tools=[]):
        assert response.message.content == text
        assert response.message.tool_calls == []


async def test_content_as_parts_is_read_as_text(model: OpenAIModel, chat_server: ChatServer) -> None:
    body = completion(None)
    body["choices"][0]["message"]["content"] = [{"type": "text", "text": "forty"}, {"type": "text", "text": "-two"}]
    chat_server.push(body)
    response = await model.request(HISTORY, [], SETTINGS)
    assert response.message.content == "forty-two"


# -- streamed tool calls ------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": choices, **extra}


def call_delta(
    index: int | None, *, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    delta: dict[str, Any] = {"function": {}}
    if index is not None:
        delta["index"] = index
    if id is not None:
        delta["id"] = id
        delta["type"] = "function"
    if name is not None:
        delta["function"]["name"] = name
    if args is not None:
        delta["function"]["arguments"] = args
    return {"tool_calls": [delta]}


async def test_streamed_tool_call_deltas_are_assembled_by_index(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(
        Chunks(
            [
                chunk({"role": "assistant", "content": None}),
                chunk(call_delta(0, id="call_a", name="add", args="")),
                chunk(call_delta(0, args='{"a": ')),
                chunk(call_delta(1, id="call_b", name="search", args='{"query"')),
                chunk(call_delta(0, args="2}")),
                chunk(call_delta(1, args=': "x"}')),
                chunk({}, "tool_calls"),
                chunk(None, usage={"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}),
            ]
        )
    )
    chunks, response = await collect(model)
    assert chunks == []
    assert response.message.content is None
    assert response.message.tool_calls == [
        ToolCall(id="call_a", name="add", arguments='{"a": 2}'),
        ToolCall(id="call_b", name="search", arguments='{"query": "x"}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 9)


async def test_streamed_tool_calls_without_index_or_id(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(
        Chunks(
            [
                chunk({"content": "Adding. "}),
                chunk(call_delta(None, id="call_a", name="add", args='{"a": 1')),
                chunk(call_delta(None, args="}")),
                chunk(call_delta(None, id="call_b", name="add", args='{"a": 2}')),
                chunk({}, "stop"),
            ]
        )
    )
    chunks, response = await collect(model)
    assert "".join(chunks) == "Adding. "
    assert [(c.id, c.arguments) for c in response.message.tool_calls] == [
        ("call_a", '{"a": 1}'),
        ("call_b", '{"a": 2}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage.prompt_tokens == 0 and response.usage.requests == 1


async def test_streamed_calls_all_indexed_zero_with_distinct_ids(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(
        Chunks(
            [
                chunk(call_delta(0, id="call_a", name="add", args='{"a": 1}')),
                chunk(call_delta(0, id="call_b", name="search", args='{"q": 2}')),
                chunk({}, "tool_calls"),
            ]
        )
    )
    _, response = await collect(model)
    assert [(c.id, c.name) for c in response.message.tool_calls] == [("call_a", "add"), ("call_b", "search")]


async def test_streamed_call_without_any_id_gets_one(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(Chunks([chunk(call_delta(0, name="add", args="{}")), chunk({}, "tool_calls")]))
    _, response = await collect(model)
    assert CALL_ID.match(response.message.tool_calls[0].id)


async def test_streamed_reasoning_deltas(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(
        Chunks(
            [
                chunk({"reasoning_content": "thinking "}),
                chunk({"reasoning_content": "hard"}),
                chunk({"content": "42"}),
                chunk({}, "stop"),
            ]
        )
    )
    chunks, response = await collect(model)
    assert chunks == ["42"]
    assert response.message.reasoning == "thinking hard"


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


# -- configuration ------------------------------------------------------------------------------


def test_missing_key_is_config_error(no_openai_env: None) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        OpenAIModel("gpt-4o-mini")


def test_empty_model_name_is_config_error(no_openai_env: None) -> None:
    with pytest.raises(ConfigError, match="model name is empty"):
        OpenAIModel(" ", api_key="k")


async def test_base_url_and_key_from_environment(chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    chat_server.api_key = "sk-from-env"
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = OpenAIModel("m")
    # read at construction: later changes do not matter
    monkeypatch.setenv("OPENAI_API_KEY", "sk-changed")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    chat_server.push(completion("ok"))
    assert (await model.request(HISTORY, [], SETTINGS)).message.content == "ok"
    assert model.base_url == chat_server.url
    await model.aclose()


async def test_arguments_override_environment(chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    chat_server.api_key = "sk-arg"
    model = OpenAIModel("m", base_url=chat_server.url, api_key="sk-arg")
    chat_server.push(completion("ok"))
    assert (await model.request(HISTORY, [], SETTINGS)).message.content == "ok"
    await model.aclose()


async def test_local_endpoint_without_key_gets_placeholder(chat_server: ChatServer, no_openai_env: None) -> None:
    model = OpenAIModel("m", base_url=chat_server.url)
    chat_server.push(completion("ok"))
    await model.request(HISTORY, [], SETTINGS)
    assert chat_server.headers[-1]["Authorization"] == f"Bearer {NO_KEY}"
    await model.aclose()


async def test_wrong_key_is_auth_error(chat_server: ChatServer) -> None:
    chat_server.api_key = "sk-right"
    model = OpenAIModel("m", base_url=chat_server.url, api_key="sk-wrong")
    with pytest.raises(ModelAuthError, match="HTTP 401"):
        await model.request(HISTORY, [], SETTINGS)
    await model.aclose()


async def test_settings_are_sent(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(completion("a"), completion("b"))
    settings = ModelSettings(temperature=0.2, top_p=0.9, max_tokens=64, seed=7, stop=["END"], parallel_tool_calls=False)
    await model.request(HISTORY, TOOLS, settings)
    sent = chat_server.requests[-1]
    assert {k: sent[k] for k in ("temperature", "top_p", "max_tokens", "seed", "stop", "parallel_tool_calls")} == {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["END"],
        "parallel_tool_calls": False,
    }
    assert sent["tools"] == [t.to_wire() for t in TOOLS]
    await model.request(HISTORY, [], settings)
    assert "parallel_tool_calls" not in chat_server.requests[-1]
    assert "tools" not in chat_server.requests[-1]


def test_openai_itself_gets_max_completion_tokens(no_openai_env: None) -> None:
    model = OpenAIModel("gpt-4o-mini", api_key="k")
    body = model._body(HISTORY, [], ModelSettings(max_tokens=10))
    assert body["max_completion_tokens"] == 10 and "max_tokens" not in body
    assert model.base_url == "https://api.openai.com/v1"
    assert model.name == "openai:gpt-4o-mini"


# -- what is sent -------------------------------------------------------------------------------


PNG = ImagePart.from_bytes(b"\x89PNG fake", "image/png")


async def test_images_become_a_note_without_vision(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(completion("ok"))
    await model.request([Message.user([TextPart(text="look"), PNG])], [], SETTINGS)
    assert chat_server.messages[-1][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": IMAGE_OMITTED},
    ]


async def test_images_sent_with_vision(chat_server: ChatServer) -> None:
    model = OpenAIModel("m", base_url=chat_server.url, api_key="k", vision=True)
    chat_server.push(completion("ok"))
    message = Message.user([TextPart(text="look"), PNG])
    await model.request([message], [], SETTINGS)
    assert chat_server.messages[-1] == [message.to_wire()]
    await model.aclose()


async def test_tool_images_move_to_a_user_message(chat_server: ChatServer) -> None:
    """Providers accept images only from the user; the validating server checks it."""
    model = OpenAIModel("m", base_url=chat_server.url, api_key="k", vision=True)
    history = [
        *HISTORY,
        Message.assistant(tool_calls=[ToolCall(id="c1", name="shot"), ToolCall(id="c2", name="add")]),
        Message.tool("c1", "shot", [TextPart(text="screenshot taken"), PNG]),
        Message.tool("c2", "add", [TextPart(text="42")]),
    ]
    chat_server.push(completion("I see it."))
    assert (await model.request(history, [], SETTINGS)).message.content == "I see it."
    sent = chat_server.messages[-1]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert sent[3]["content"] == "screenshot taken"
    assert sent[4]["content"] == "42"
    assert sent[5]["content"][1] == {"type": "image_url", "image_url": {"url": PNG.url}}
    await model.aclose()


async def test_reasoning_is_not_sent_back_by_default(chat_server: ChatServer) -> None:
    history = [*HISTORY, Message.assistant("42", reasoning="because"), Message.user("sure?")]
    chat_server.push(completion("yes"), completion("yes"))
    quiet = OpenAIModel("m", base_url=chat_server.url, api_key="k")
    await quiet.request(history, [], SETTINGS)
    assert "reasoning_content" not in chat_server.messages[-1][2]
    chatty = OpenAIModel("m", base_url=chat_server.url, api_key="k", send_reasoning=True)
    await chatty.request(history, [], SETTINGS)
    assert chat_server.messages[-1][2]["reasoning_content"] == "because"
    await quiet.aclose()
    await chatty.aclose()


# -- lifecycle ----------------------------------------------------------------------------------


def test_one_model_across_event_loops(chat_server_thread: ChatServer) -> None:
    """run_sync twice means two loops; the model must not reuse a dead loop's session."""
    model = OpenAIModel("m", base_url=chat_server_thread.url, api_key="k")
    chat_server_thread.push(completion("one"), completion("two"))

    async def ask() -> str | None:
        try:
            response = await model.request(HISTORY, [], SETTINGS)
        finally:
            await model.aclose()  # closes this loop's session
        return response.message.text

    assert asyncio.run(ask()) == "one"
    assert asyncio.run(ask()) == "two"


async def test_aclose_then_reuse(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(completion("one"), completion("two"))
    await model.request(HISTORY, [], SETTINGS)
    await model.aclose()
    assert (await model.request(HISTORY, [], SETTINGS)).message.content == "two"


async def test_many_concurrent_requests(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.respond_with(lambda body: completion(body["messages"][-1]["content"]))
    asks = [model.request([Message.user(f"q{i}")], [], SETTINGS) for i in range(50)]
    answers = await asyncio.gather(*asks)
    assert [a.message.content for a in answers] == [f"q{i}" for i in range(50)]


def test_import_openai_is_lazy() -> None:
    import subprocess
    import sys

    code = "import sys, pymanus.models; assert 'openai' not in sys.modules, 'openai imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
