"""The fallback chain: when one model fails or its breaker is open, the next one serves."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from helpers.chat_server import ChatServer, completion, context_overflow, error
from helpers.openai_cases import HISTORY, SETTINGS, TOOLS
from pymanus.agent.manus import preset_model
from pymanus.config import ModelConfig, Settings
from pymanus.errors import ConfigError, ContextOverflowError, ModelAuthError, ModelError
from pymanus.models.base import Model, TextChunk
from pymanus.models.openai import OpenAIModel
from pymanus.models.resilience import (
    CircuitBreaker,
    DeferredModel,
    FallbackModel,
    ResilientModel,
    RetryPolicy,
    gateway_model,
)

FAST = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.002)


@pytest.fixture
async def secondary() -> AsyncIterator[ChatServer]:
    """A second endpoint, for the fallback model."""
    async with ChatServer(validate=True) as server:
        yield server


def link(server: ChatServer, name: str, **options: Any) -> ResilientModel:
    options.setdefault("policy", FAST)
    return ResilientModel(OpenAIModel(name, base_url=server.url, api_key="sk-test"), **options)


@pytest.fixture
async def chain(chat_server: ChatServer, secondary: ChatServer) -> AsyncIterator[FallbackModel]:
    model = FallbackModel([link(chat_server, "primary", breaker=CircuitBreaker(2, 60.0)), link(secondary, "backup")])
    yield model
    await model.aclose()


def switches(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [r for r in caplog.records if getattr(r, "event", None) == "model_switch"]


@pytest.mark.parametrize("stream", [False, True])
async def test_exhausted_retries_switch_to_the_next_model(
    chain: FallbackModel,
    chat_server: ChatServer,
    secondary: ChatServer,
    caplog: pytest.LogCaptureFixture,
    stream: bool,
) -> None:
    chat_server.push(error(500, "down"), error(503, "still down"))
    secondary.push(completion("from the backup"))
    with caplog.at_level(logging.INFO, logger="pymanus.models"):
        if stream:
            items = [item async for item in chain.stream(HISTORY, TOOLS, SETTINGS)]
            text = "".join(i.text for i in items if isinstance(i, TextChunk))
            assert text == "from the backup"
            response: Any = items[-1]
        else:
            response = await chain.request(HISTORY, TOOLS, SETTINGS)
    assert response.message.content == "from the backup"
    assert len(chat_server.requests) == 2 and len(secondary.requests) == 1
    assert secondary.requests[0]["messages"] == chat_server.requests[0]["messages"]
    assert secondary.requests[0]["model"] == "backup"
    (record,) = switches(caplog)
    assert (record.from_model, record.to_model, record.reason, record.status) == (
        "openai:primary",
        "openai:backup",
        "ModelError",
        503,
    )
    assert record.levelno == logging.WARNING


async def test_an_open_breaker_goes_straight_to_the_next_model(
    chain: FallbackModel, chat_server: ChatServer, secondary: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    chat_server.push(error(500, "down"), error(500, "down"))
    secondary.push(completion("one"), completion("two"))
    await chain.request(HISTORY, TOOLS, SETTINGS)  # two failures: the primary's breaker opens
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pymanus.models"):
        response = await chain.request(HISTORY, TOOLS, SETTINGS)
    assert response.message.content == "two"
    assert len(chat_server.requests) == 2  # the primary was not asked again
    (record,) = switches(caplog)
    assert record.reason == "circuit_open"


async def test_a_non_retryable_error_switches_without_retrying(
    chain: FallbackModel, chat_server: ChatServer, secondary: ChatServer
) -> None:
    chat_server.push(error(404, "The model `primary` does not exist"))
    secondary.push(completion("backup"))
    response = await chain.request(HISTORY, TOOLS, SETTINGS)
    assert response.message.content == "backup"
    assert len(chat_server.requests) == 1


@pytest.mark.parametrize(
    ("reply", "kind"),
    [(error(401, "Incorrect API key provided"), ModelAuthError), (context_overflow(), ContextOverflowError)],
)
async def test_auth_and_overflow_errors_are_not_handed_on(
    chain: FallbackModel, chat_server: ChatServer, secondary: ChatServer, reply: Any, kind: type[ModelError]
) -> None:
    chat_server.push(reply)
    with pytest.raises(kind):
        await chain.request(HISTORY, TOOLS, SETTINGS)
    assert len(chat_server.requests) == 1 and secondary.requests == []


async def test_when_every_model_fails_the_last_error_is_raised(
    chain: FallbackModel, chat_server: ChatServer, secondary: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    chat_server.push(error(500, "a"), error(500, "b"))
    secondary.push(error(400, "Invalid value for 'temperature'"))
    with caplog.at_level(logging.INFO, logger="pymanus.models"), pytest.raises(ModelError, match="temperature"):
        await chain.request(HISTORY, TOOLS, SETTINGS)
    assert len(switches(caplog)) == 1


def test_the_chain_looks_like_its_first_model(chat_server: ChatServer) -> None:
    first = OpenAIModel("primary", base_url=chat_server.url, api_key="k", context_window=4096, vision=True)
    chain = FallbackModel([ResilientModel(first), DeferredModel("local:nope", _unbuildable)])
    assert (chain.name, chain.context_window, chain.vision) == ("openai:primary", 4096, True)


def _unbuildable() -> Model:
    raise ConfigError("no such pack")


# -- built from the config -------------------------------------------------------------------------


async def test_gateway_from_config_falls_back_past_a_model_that_cannot_load(
    chat_server: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    config = ModelConfig(
        name="openai:primary",
        base_url=chat_server.url,
        api_key="sk-test",
        max_retries=0,
        fallback=["local:/nonexistent/model.gguf", "openai:backup"],
    )
    model = gateway_model(config)
    assert isinstance(model, FallbackModel)
    assert [m.name for m in model.models] == ["openai:primary", "local:/nonexistent/model.gguf", "openai:backup"]
    chat_server.push(error(503, "overloaded"), completion("served by backup"))
    with caplog.at_level(logging.INFO, logger="pymanus.models"):
        response = await model.request(HISTORY, TOOLS, SETTINGS)
    await model.aclose()
    assert response.message.content == "served by backup"
    assert [r["model"] for r in chat_server.requests] == ["primary", "backup"]
    assert [(r.from_model, r.to_model) for r in switches(caplog)] == [
        ("openai:primary", "local:/nonexistent/model.gguf"),
        ("local:/nonexistent/model.gguf", "openai:backup"),
    ]
    assert "cannot be loaded" in switches(caplog)[1].error


def test_gateway_takes_timeouts_retries_and_breaker_from_config(chat_server: ChatServer) -> None:
    config = ModelConfig(
        name="openai:m",
        base_url=chat_server.url,
        api_key="k",
        request_timeout=20,
        connect_timeout=2,
        total_timeout=90,
        max_retries=2,
        breaker_failures=7,
        breaker_reset=12,
    )
    model = preset_model(Settings(model=config))
    assert isinstance(model, ResilientModel)
    inner = model.wrapped
    assert isinstance(inner, OpenAIModel)
    assert (inner.request_timeout, inner.connect_timeout, inner.max_retries) == (20, 2, 0)
    assert (model.policy.max_retries, model.total_timeout) == (2, 90)
    assert (model.breaker.failures, model.breaker.reset_after) == (7, 12)


def test_fallback_entries_are_checked_when_the_config_loads(tmp_path: Any) -> None:
    file = tmp_path / "pymanus.toml"
    file.write_text('[model]\nname = "openai:a"\nfallback = ["openai:b", "gpt-4o"]\n')
    with pytest.raises(ConfigError, match=r"model.fallback.*'gpt-4o' is not a model string"):
        Settings.load(path=file, env={})
