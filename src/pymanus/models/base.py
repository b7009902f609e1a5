"""The model protocol: messages and tool definitions in, one assistant message out."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pymanus.messages import Message, Usage

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]


PYTHON_SOURCE = "text/x-python"
"""JSON Schema ``contentMediaType`` of a string argument that holds Python source; grammar-
constrained models may treat it specially (see :mod:`pymanus.models.local_format`)."""


class ToolDefinition(BaseModel):
    """What a model is told about one tool: its name, description and JSON Schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_wire(self) -> dict[str, Any]:
        """The chat-completions ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ModelSettings(BaseModel):
    """Per-request sampling and transport settings; ``None`` means the model's default."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] | None = None
    timeout: float | None = None
    parallel_tool_calls: bool | None = None
    allowed_tools: list[str] | None = None
    """Names of the offered tools the response may call (``None``: all of them). The others
    stay in the request, so a local model's prompt cache still holds: its grammar leaves
    them out. Endpoints are sent the allowed tools only."""


def callable_tools(tools: Sequence[ToolDefinition], settings: ModelSettings) -> list[ToolDefinition]:
    """The tools of ``tools`` a response may call under ``settings.allowed_tools``."""
    if settings.allowed_tools is None:
        return list(tools)
    return [tool for tool in tools if tool.name in settings.allowed_tools]


class ModelResponse(BaseModel):
    """One model answer: the assistant message, why generation stopped, and its usage."""

    message: Message
    finish_reason: FinishReason | None = None
    usage: Usage = Field(default_factory=Usage)
    model_name: str = ""


class TextChunk(BaseModel):
    """A piece of assistant text streamed before the response is complete."""

    text: str


StreamItem = TextChunk | ModelResponse


class Model(abc.ABC):
    """A chat model PyManus can drive.

    Implementations answer :meth:`request`; :meth:`stream` by default yields the whole
    text as one chunk, then the response. ``context_window`` is the number of tokens the
    model accepts (``None`` when unknown).
    """

    name: str = "model"
    context_window: int | None = None
    vision: bool = False

    @abc.abstractmethod
    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """Send the conversation and return the model's next message."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """Yield :class:`TextChunk` items as text arrives, then the :class:`ModelResponse`."""
        response = await self.request(messages, tools, settings)
        if response.message.text:
            yield TextChunk(text=response.message.text)
        yield response

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Estimate the prompt tokens of ``messages`` (models with a tokenizer override this)."""
        from pymanus.context.tokens import estimate_messages_tokens

        return estimate_messages_tokens(messages)

    def count_text(self, text: str) -> int:
        """Estimate the tokens of ``text`` inside a prompt (models with a tokenizer override this)."""
        from pymanus.context.tokens import estimate_text_tokens

        return estimate_text_tokens(text)

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most models hold nothing
        """Release connections or other resources held by the model."""


class WrapperModel(Model):
    """A model that hands everything to ``wrapped``; subclasses override what they change.

    ``name``, ``context_window`` and ``vision`` are the wrapped model's, so code that looks
    at them (aids chosen by the model's name, the context window) sees through wrappers.
    """

    def __init__(self, wrapped: Model) -> None:
        self.wrapped = wrapped

    @property
    def name(self) -> str:
        return self.wrapped.name

    @name.setter
    def name(self, value: str) -> None:
        self.wrapped.name = value

    @property
    def context_window(self) -> int | None:
        return self.wrapped.context_window

    @context_window.setter
    def context_window(self, value: int | None) -> None:
        self.wrapped.context_window = value

    @property
    def vision(self) -> bool:
        return self.wrapped.vision

    @vision.setter
    def vision(self, value: bool) -> None:
        self.wrapped.vision = value

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """The wrapped model's answer."""
        return await self.wrapped.request(messages, tools, settings)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """The wrapped model's stream."""
        async for item in self.wrapped.stream(messages, tools, settings):
            yield item

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """The wrapped model's count."""
        return self.wrapped.count_tokens(messages)

    def count_text(self, text: str) -> int:
        """The wrapped model's count."""
        return self.wrapped.count_text(text)

    async def aclose(self) -> None:
        """Close the wrapped model."""
        await self.wrapped.aclose()
