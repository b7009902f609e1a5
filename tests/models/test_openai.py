"""OpenAIModel against a real local chat-completions server: provider variants, streaming, errors."""

from __future__ import annotations

import asyncio
import json

import pytest

from helpers.chat_server import (
    ChatServer,
    Chunks,
    completion,
    tool_call,
)
from helpers.openai_cases import CALL_ID, HISTORY, SETTINGS, TOOLS, both, call_delta, chunk, collect
from pymanus.errors import ConfigError, ModelAuthError
from pymanus.messages import ImagePart, Message, TextPart, ToolCall
from pymanus.models.base import ModelSettings
from pymanus.models.openai import IMAGE_OMITTED, NO_KEY, PLATFORM_HEADERS, OpenAIModel

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


async def test_any_text_is_sent_as_utf8_json(model: OpenAIModel, chat_server: ChatServer) -> None:
    text = 'naïve "quotes" \\ back\nslash, 中文, emoji 😀, control \x01'
    chat_server.push(completion("ok"))
    await model.request([Message.user(text)], [], ModelSettings(temperature=0.25))
    sent = chat_server.requests[-1]
    assert sent["messages"] == [{"role": "user", "content": text}]
    assert sent["temperature"] == 0.25


async def test_requests_do_not_describe_the_client_machine(chat_server: ChatServer) -> None:
    # A base URL with a trailing slash still reaches .../v1/chat/completions.
    model = OpenAIModel("m", base_url=f"{chat_server.url}/", api_key="sk-test")
    chat_server.push(completion("ok"), completion("ok"))
    await model.request(HISTORY, [], SETTINGS)
    await collect(model)
    for headers in chat_server.headers[-2:]:
        names = {name.lower() for name in headers}
        assert {"authorization", "content-type", "user-agent"} <= names
        assert not names & {name.lower() for name in PLATFORM_HEADERS}
        assert "x-stainless-os" not in names
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


async def test_only_the_allowed_tools_are_sent(model: OpenAIModel, chat_server: ChatServer) -> None:
    chat_server.push(completion("a"))
    await model.request(HISTORY, TOOLS, ModelSettings(allowed_tools=[TOOLS[-1].name]))
    assert chat_server.requests[-1]["tools"] == [TOOLS[-1].to_wire()]


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
