"""WindowedModel: fits requests, trims harder after an endpoint's overflow, counts with a model's tokenizer."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from helpers.chat_server import ChatServer, completion, context_overflow, tool_call
from pymanus import Agent, tool
from pymanus.config import Settings
from pymanus.context.tokens import estimate_messages_tokens
from pymanus.context.window import WindowedModel, WindowScope, windowed_model
from pymanus.errors import ContextOverflowError
from pymanus.messages import Message, ToolCall
from pymanus.models.base import ModelSettings
from pymanus.models.openai import OpenAIModel
from pymanus.models.testing import FunctionModel, ScriptedModel


def history(steps: int, size: int = 4000) -> list[Message]:
    messages = [Message.system("sys"), Message.user("the task")]
    for i in range(steps):
        messages.append(Message.assistant(None, [ToolCall(id=f"c{i}", name="read", arguments="{}")]))
        messages.append(Message.tool(f"c{i}", "read", f"result {i} " + "x" * size))
    return messages


async def test_an_endpoint_overflow_is_trimmed_harder_and_sent_once_more() -> None:
    # The config says 20000 tokens, the endpoint takes 6000: the first request is rejected.
    async with ChatServer(validate=True, max_prompt_tokens=6000) as server:
        server.respond_with(lambda body: completion("ok"))
        model = WindowedModel(OpenAIModel("m", base_url=server.url), context_window=20_000)
        response = await model.request(history(20), [], ModelSettings())
        assert response.message.text == "ok"
        assert server.prompt_tokens[0] > 6000 >= server.prompt_tokens[1]
        assert model.correction > 1
        # The correction holds: the next request fits at once.
        await model.request(history(22), [], ModelSettings())
        asked = [body["messages"][0]["content"] for body in server.requests]
        assert asked.count("sys") == 3  # (summary requests aside) no other rejection
        assert max(server.prompt_tokens[1:]) <= 6000
        await model.aclose()


async def test_a_second_overflow_is_raised() -> None:
    async with ChatServer() as server:
        server.push(context_overflow(15_000, 16_000), context_overflow(15_000, 16_000))
        model = WindowedModel(OpenAIModel("m", base_url=server.url), context_window=20_000)
        with pytest.raises(ContextOverflowError, match="maximum context length"):
            await model.request(history(3), [], ModelSettings())
        assert len(server.requests) == 2
        await model.aclose()


async def test_streams_are_fitted_and_retried_too() -> None:
    async with ChatServer(validate=True, max_prompt_tokens=3000) as server:
        server.respond_with(lambda body: completion("streamed"))
        model = WindowedModel(OpenAIModel("m", base_url=server.url), context_window=10_000)
        items = [item async for item in model.stream(history(12), [], ModelSettings())]
        assert items[-1].message.text == "streamed"  # type: ignore[union-attr]
        assert server.prompt_tokens[-1] <= 3000
        await model.aclose()


class TokenizerModel(FunctionModel):
    """A model whose own tokenizer counts twice what the estimate does."""

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return 2 * estimate_messages_tokens(messages)


async def test_a_model_with_its_own_tokenizer_is_checked_with_it() -> None:
    model = TokenizerModel(lambda messages, tools: "ok", context_window=8000)
    windowed = WindowedModel(model, reserve_tokens=500)
    assert windowed.exact
    await windowed.request(history(30, 2000), [], ModelSettings())
    sent = model.requests[-1]
    assert model.count_tokens(sent) <= 8000 - 500
    assert windowed.correction >= 2


async def test_without_a_known_window_requests_pass_unchanged() -> None:
    model = ScriptedModel(["ok"])
    messages = history(50)
    await WindowedModel(model).request(messages, [], ModelSettings())
    assert model.requests[0] == messages


async def test_summary_tokens_count_in_the_usage() -> None:
    def answer(messages: list[Message], tools: object) -> str:
        return "a summary" if "condense" in messages[0].text else "done"

    model = FunctionModel(answer, context_window=3000)
    windowed = WindowedModel(model, reserve_tokens=200)
    response = await windowed.request(history(20, 1500), [], ModelSettings())
    summaries = [r for r in model.requests if "condense" in r[0].text]
    assert len(summaries) >= 1 and len(model.requests) == len(summaries) + 1 and response.message.text == "done"
    assert response.usage.requests == len(model.requests)  # the summaries' cost is counted
    assert all(estimate_messages_tokens(r) <= 3000 for r in summaries)  # each summary request fits too


@tool
def read(n: int) -> str:
    """Read something big.

    Args:
        n: which
    """
    return "data " * 2000


async def test_every_trim_is_logged_with_the_run_id(caplog: pytest.LogCaptureFixture) -> None:
    async with ChatServer(validate=True) as server:
        calls = iter(range(8))

        def script(body: dict[str, object]) -> dict[str, object]:
            if not body.get("tools"):
                return completion("summary")
            n = next(calls, None)
            if n is None:
                return completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "ok"})])
            return completion(tool_calls=[tool_call("read", {"n": n})])

        server.respond_with(script)
        model = WindowedModel(OpenAIModel("m", base_url=server.url), context_window=6000)
        agent = Agent(model, tools=[read], extensions=[WindowScope()])
        with caplog.at_level(logging.INFO, logger="pymanus.context"):
            result = await agent.run("read them all")
        await agent.aclose()
    records = [r for r in caplog.records if getattr(r, "event", None) == "context_trim"]
    assert result.state.value == "finished" and records
    for record in records:
        assert record.run_id == result.run_id  # type: ignore[attr-defined]
        assert record.tokens_before > record.tokens_after  # type: ignore[attr-defined]
    assert any(r.step >= 2 for r in records)  # type: ignore[attr-defined]
    assert "tokens (budget" in records[-1].getMessage()


def test_the_preset_wraps_when_a_window_is_known() -> None:
    base = ScriptedModel([], context_window=None)
    settings = Settings.model_validate({"model": {"name": "openai:m", "context_window": 4096}})
    assert isinstance(windowed_model(base, settings), WindowedModel)
    off = Settings.model_validate(
        {"model": {"name": "openai:m", "context_window": 4096}, "context": {"enabled": False}}
    )
    assert windowed_model(base, off) is base
    local = Settings.model_validate({"model": {"name": "local:x"}})
    assert windowed_model(base, local) is base  # no window known
    base.context_window = 2048  # a local model's own n_ctx
    assert isinstance(windowed_model(base, local), WindowedModel)
