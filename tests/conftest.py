"""Shared fixtures: a real chat-completions server on loopback, a clean OpenAI environment."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from helpers.chat_server import ChatServer


@pytest.fixture
async def chat_server() -> AsyncIterator[ChatServer]:
    """A validating chat-completions server running in the test's event loop."""
    async with ChatServer(validate=True) as server:
        yield server


@pytest.fixture
def chat_server_thread() -> Iterator[ChatServer]:
    """A validating chat-completions server running in a background thread."""
    with ChatServer(validate=True) as server:
        yield server


@pytest.fixture
def no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove the OpenAI environment variables so a test sees only what it sets."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _prompt_store_in_tmp(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Local models keep prompt heads in a folder of the test's own, never the user's cache."""
    folder = tmp_path_factory.mktemp("prompts")
    monkeypatch.setattr("pymanus.models.local.prompt_store_dir", lambda: folder)
