"""Shared cases for the OpenAIModel tests: a tool list, a history, and readers of responses."""

from __future__ import annotations

import re
from typing import Any

from helpers.chat_server import ChatServer
from pymanus.messages import Message
from pymanus.models.base import ModelResponse, ModelSettings, TextChunk, ToolDefinition
from pymanus.models.openai import OpenAIModel

TOOLS = [
    ToolDefinition(name="add", description="Add two integers.", parameters={"type": "object", "properties": {}}),
    ToolDefinition(name="search", description="Search the web."),
]
SETTINGS = ModelSettings()
HISTORY = [Message.system("You are helpful."), Message.user("What is 2 + 40?")]
CALL_ID = re.compile(r"^call_[0-9a-f]{12}$")


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
