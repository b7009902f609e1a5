"""Fixtures for the model gateway tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from helpers.chat_server import ChatServer
from pymanus.models.openai import OpenAIModel


@pytest.fixture
async def model(chat_server: ChatServer) -> AsyncIterator[OpenAIModel]:
    """An OpenAIModel pointed at the test's chat-completions server."""
    m = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test")
    yield m
    await m.aclose()
