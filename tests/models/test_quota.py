"""The concurrency quota: at most N requests reach an endpoint at once, over all runs sharing the model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from helpers.chat_server import ChatServer, completion
from helpers.openai_cases import HISTORY, SETTINGS, TOOLS
from pymanus.config import ModelConfig
from pymanus.models.openai import OpenAIModel
from pymanus.models.quota import ConcurrencyQuota
from pymanus.models.resilience import gateway_model


class InFlight:
    """A server handler that answers after a pause and records how many requests it held at once."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.05)
        self.now -= 1
        return completion("ok")


@pytest.mark.parametrize("limit", [1, 2])
async def test_requests_beyond_the_quota_wait_their_turn(chat_server: ChatServer, limit: int) -> None:
    counter = InFlight()
    chat_server.respond_with(counter)
    inner = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test")
    model = ConcurrencyQuota(inner, limit)
    try:
        responses = await asyncio.gather(*(model.request(HISTORY, TOOLS, SETTINGS) for _ in range(5)))
        streamed = [item async for item in model.stream(HISTORY, TOOLS, SETTINGS)]
    finally:
        await model.aclose()
    assert [r.message.text for r in responses] == ["ok"] * 5 and streamed
    assert counter.most == limit and len(chat_server.requests) == 6


def test_the_gateway_applies_the_configured_quota() -> None:
    capped = gateway_model(ModelConfig(name="openai:x", api_key="k", max_concurrency=3))
    assert isinstance(capped, ConcurrencyQuota) and capped.limit == 3 and capped.name == "openai:x"
    assert not isinstance(gateway_model(ModelConfig(name="openai:x", api_key="k")), ConcurrencyQuota)
    with pytest.raises(ValueError, match="at least one request"):
        ConcurrencyQuota(capped.wrapped, 0)
