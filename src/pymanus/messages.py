"""Messages of a conversation, in the chat-completions shape.

A :class:`Message` maps one-to-one onto a chat-completions message, so a history can be
sent to any OpenAI-compatible endpoint and read back without loss
(:meth:`Message.to_wire` / :meth:`Message.from_wire`).
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

Role = Literal["system", "user", "assistant", "tool"]


class TextPart(BaseModel):
    """A piece of text inside a multi-part message."""

    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image inside a multi-part message: an ``https://`` URL or a ``data:`` URL."""

    type: Literal["image"] = "image"
    url: str
    detail: Literal["auto", "low", "high"] | None = None

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str = "image/png") -> ImagePart:
        """Build an image part from raw bytes, as a base64 data URL."""
        encoded = base64.b64encode(data).decode("ascii")
        return cls(url=f"data:{media_type};base64,{encoded}")


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class ToolCall(BaseModel):
    """A call of a tool requested by the model.

    ``arguments`` is kept as the raw JSON text the model wrote: a malformed argument
    string must reach the tool layer unchanged so the model can be told what was wrong.
    """

    id: str
    name: str
    arguments: str = "{}"


class Usage(BaseModel):
    """Token and request counts; add two with ``+``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            requests=self.requests + other.requests,
        )


class Message(BaseModel):
    """One message of a conversation.

    * ``system`` / ``user``: ``content`` is text or a list of parts (text, images).
    * ``assistant``: text, tool calls, both, or neither; ``reasoning`` holds a
      provider's separate reasoning text (``reasoning_content``) when it sends one.
    * ``tool``: the result of one tool call; ``tool_call_id`` and ``name`` say which.
    """

    model_config = ConfigDict(frozen=False)

    role: Role
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def system(cls, text: str) -> Message:
        """A system message."""
        return cls(role="system", content=text)

    @classmethod
    def user(cls, content: str | list[ContentPart]) -> Message:
        """A user message (text or parts)."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls, text: str | None = None, tool_calls: list[ToolCall] | None = None, reasoning: str | None = None
    ) -> Message:
        """An assistant message with optional text and tool calls."""
        return cls(role="assistant", content=text, tool_calls=tool_calls or [], reasoning=reasoning)

    @classmethod
    def tool(cls, call_id: str, name: str, content: str | list[ContentPart]) -> Message:
        """The answer to the tool call ``call_id``."""
        return cls(role="tool", content=content, tool_call_id=call_id, name=name)

    # -- views --------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The text of the message: its string content, or its text parts joined."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content if isinstance(part, TextPart))

    @property
    def images(self) -> list[ImagePart]:
        """The image parts of the message."""
        if isinstance(self.content, list):
            return [part for part in self.content if isinstance(part, ImagePart)]
        return []

    # -- wire format --------------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        """This message as a chat-completions request message."""
        wire: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, list):
            wire["content"] = [_part_to_wire(part) for part in self.content]
        else:
            wire["content"] = self.content
        if self.tool_calls:
            wire["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.role == "tool":
            wire["tool_call_id"] = self.tool_call_id
            if self.name is not None:
                wire["name"] = self.name
        if self.reasoning is not None:
            wire["reasoning_content"] = self.reasoning
        return wire

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> Message:
        """Read a chat-completions message (request or response shape)."""
        content = wire.get("content")
        if isinstance(content, list):
            content = [_part_from_wire(part) for part in content]
        calls = [
            ToolCall(
                id=c.get("id") or "",
                name=c["function"]["name"],
                arguments=c["function"].get("arguments") or "{}",
            )
            for c in wire.get("tool_calls") or []
        ]
        return cls(
            role=wire["role"],
            content=content,
            tool_calls=calls,
            tool_call_id=wire.get("tool_call_id"),
            name=wire.get("name"),
            reasoning=wire.get("reasoning_content"),
        )


def _part_to_wire(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    image: dict[str, Any] = {"url": part.url}
    if part.detail is not None:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def _part_from_wire(part: dict[str, Any]) -> TextPart | ImagePart:
    kind = part.get("type")
    if kind == "text":
        return TextPart(text=part.get("text", ""))
    if kind == "image_url":
        image = part["image_url"]
        if isinstance(image, str):
            return ImagePart(url=image)
        return ImagePart(url=image["url"], detail=image.get("detail"))
    raise ValueError(f"unsupported content part type: {kind!r}")
