"""ScriptedModel, FunctionModel and call(): the models the loop tests drive the agent with."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from pymanus.errors import ModelError
from pymanus.messages import Message, ToolCall, Usage
from pymanus.models import FunctionModel, ModelResponse, ModelSettings, ScriptedModel, TextChunk, ToolDefinition, call

SETTINGS = ModelSettings()
TOOLS = [ToolDefinition(name="add")]


async def ask(model: ScriptedModel | FunctionModel, text: str = "hi") -> ModelResponse:
    return await model.request([Message.user(text)], TOOLS, SETTINGS)


def test_call_builds_json_arguments_and_an_id() -> None:
    first, second = call("add", a=2, b=40), call("add")
    assert first.name == "add"
    assert json.loads(first.arguments) == {"a": 2, "b": 40}
    assert second.arguments == "{}"
    assert first.id.startswith("call_") and first.id != second.id


async def test_every_kind_of_answer() -> None:
    add = call("add", a=1)
    several = [call("add", a=2), call("add", a=3)]
    given = ModelResponse(message=Message.assistant("given"), finish_reason="length", usage=Usage(requests=5))
    model = ScriptedModel(["plain", Message.assistant("msg", tool_calls=[add]), add, several, given])
    plain = await ask(model)
    assert plain.message == Message.assistant("plain") and plain.finish_reason == "stop"
    message = await ask(model)
    assert message.message.text == "msg" and message.message.tool_calls == [add]
    assert message.finish_reason == "tool_calls"
    single = await ask(model)
    assert single.message.tool_calls == [add] and single.message.content is None
    assert (await ask(model)).message.tool_calls == several
    kept = await ask(model)
    assert kept.finish_reason == "length" and kept.usage == Usage(requests=5)


async def test_exceptions_in_the_script_are_raised() -> None:
    model = ScriptedModel([ModelError("boom", retryable=True), "after"])
    with pytest.raises(ModelError, match="boom"):
        await ask(model)
    assert (await ask(model)).message.text == "after"


async def test_running_out_of_answers() -> None:
    model = ScriptedModel(["one", "two"])
    await ask(model)
    await ask(model)
    assert model.remaining == 0
    with pytest.raises(ModelError, match="ScriptedModel ran out of responses after 2"):
        await ask(model)


async def test_requests_are_recorded() -> None:
    model = ScriptedModel(["a", "b"])
    history = [Message.system("sys"), Message.user("first")]
    await model.request(history, TOOLS, SETTINGS)
    history.append(Message.user("second"))  # the caller's list changing later changes nothing recorded
    await model.request(history, [], SETTINGS)
    assert [[m.text for m in request] for request in model.requests] == [["sys", "first"], ["sys", "first", "second"]]
    assert model.request_tools == [TOOLS, []]


async def test_usage_is_estimated_one_request_per_call() -> None:
    model = ScriptedModel(["The answer is forty-two.", call("add", a=1)])
    first = await model.request([Message.user("x" * 400)], [], SETTINGS)
    assert first.usage.requests == 1
    assert first.usage.prompt_tokens == model.count_tokens([Message.user("x" * 400)]) > 100
    assert first.usage.completion_tokens > 0
    second = await ask(model)
    assert second.usage.completion_tokens > 0 and second.usage.requests == 1


async def test_non_assistant_message_is_rejected() -> None:
    with pytest.raises(TypeError, match="assistant"):
        await ask(ScriptedModel([Message.user("me?")]))


async def test_scripted_stream_yields_text_then_response() -> None:
    items = [item async for item in ScriptedModel(["streamed"]).stream([Message.user("q")], [], SETTINGS)]
    assert items[0] == TextChunk(text="streamed")
    assert isinstance(items[1], ModelResponse) and items[1].message.text == "streamed"


async def test_function_model_sync_and_async() -> None:
    def echo(messages: list[Message], tools: list[ToolDefinition]) -> str:
        return f"{messages[-1].text} with {len(tools)} tools"

    async def adds(messages: list[Message], tools: list[ToolDefinition]) -> ToolCall:
        return call("add", a=len(messages))

    assert (await ask(FunctionModel(echo), "hello")).message.text == "hello with 1 tools"
    response = await ask(FunctionModel(adds))
    assert json.loads(response.message.tool_calls[0].arguments) == {"a": 1}
    assert response.usage.requests == 1


async def test_function_model_decides_from_history() -> None:
    def agent_like(messages: list[Message], tools: list[ToolDefinition]) -> str | ToolCall:
        if messages[-1].role == "tool":
            return f"result: {messages[-1].text}"
        return call("add", a=2, b=40)

    model = FunctionModel(agent_like)
    first = await ask(model)
    history = [Message.user("hi"), first.message, Message.tool(first.message.tool_calls[0].id, "add", "42")]
    assert (await model.request(history, TOOLS, SETTINGS)).message.text == "result: 42"
    assert len(model.requests) == 2


async def test_function_model_raises_what_fn_raises() -> None:
    def broken(messages: list[Message], tools: list[ToolDefinition]) -> str:
        raise ModelError("down", retryable=True)

    with pytest.raises(ModelError, match="down"):
        await ask(FunctionModel(broken))


async def test_function_model_streams_an_async_generator() -> None:
    async def pieces(messages: list[Message], tools: list[ToolDefinition]) -> AsyncIterator[str | ToolCall]:
        yield "The "
        yield "answer"
        yield call("add", a=1)

    model = FunctionModel(pieces)
    items = [item async for item in model.stream([Message.user("q")], TOOLS, SETTINGS)]
    assert [i.text for i in items if isinstance(i, TextChunk)] == ["The ", "answer"]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.message.text == "The answer" and len(final.message.tool_calls) == 1
    assert final.finish_reason == "tool_calls"
    assert (await ask(model)).message.text == "The answer"
