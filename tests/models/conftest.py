"""Fixtures for the model gateway tests: a real chat-completions server on loopback."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

# tests/ holds the shared helpers package; make it importable however pytest was started.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from helpers.chat_server import ChatServer  # noqa: E402


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
