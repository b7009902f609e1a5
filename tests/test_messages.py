"""Messages: the chat-completions wire format, both ways and through a real server."""

from __future__ import annotations

import pytest

from pymanus.messages import ImagePart, Message, TextPart, ToolCall, Usage

PNG = ImagePart.from_bytes(b"\x89PNG\r\n\x1a\n fake", "image/png")

CONVERSATION = [
    Message.system("You are an agent."),
    Message.user("Describe this image and add 2 and 40."),
    Message.user([TextPart(text="Here:"), PNG, ImagePart(url="https://example.com/a.jpg", detail="low")]),
    Message.assistant(
        "Let me look.",
        tool_calls=[
            ToolCall(id="call_1", name="add", arguments='{"a": 2, "b": 40}'),
            ToolCall(id="call_2", name="search", arguments='{"q": "北京"}'),
        ],
        reasoning="Two tools at once.",
    ),
    Message.tool("call_1", "add", "42"),
    Message.tool("call_2", "search", [TextPart(text="sunny")]),
    Message.assistant(tool_calls=[ToolCall(id="call_3", name="add", arguments="{}")]),
    Message.tool("call_3", "add", "0"),
    Message.assistant("It is 42, and sunny."),
]


@pytest.mark.parametrize("message", CONVERSATION, ids=lambda m: m.role)
def test_wire_round_trip_is_lossless(message: Message) -> None:
    assert Message.from_wire(message.to_wire()) == message


def test_wire_shapes() -> None:
    assistant = CONVERSATION[3].to_wire()
    assert assistant["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 2, "b": 40}'},
    }
    assert assistant["reasoning_content"] == "Two tools at once."
    assert CONVERSATION[6].to_wire()["content"] is None
    assert CONVERSATION[4].to_wire() == {"role": "tool", "content": "42", "tool_call_id": "call_1", "name": "add"}
    parts = CONVERSATION[2].to_wire()["content"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": PNG.url}}
    assert parts[2] == {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg", "detail": "low"}}


def test_from_wire_accepts_provider_variants() -> None:
    message = Message.from_wire(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": None}}],
        }
    )
    assert message.tool_calls == [ToolCall(id="", name="add", arguments="{}")]
    image = Message.from_wire({"role": "user", "content": [{"type": "image_url", "image_url": "https://x/y.png"}]})
    assert image.images == [ImagePart(url="https://x/y.png")]


def test_unknown_part_type_is_an_error() -> None:
    with pytest.raises(ValueError, match="unsupported content part type"):
        Message.from_wire({"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]})


def test_text_and_images_views() -> None:
    message = CONVERSATION[2]
    assert message.text == "Here:"
    assert len(message.images) == 2
    assert Message.assistant().text == ""
    assert PNG.url.startswith("data:image/png;base64,")


def test_usage_adds_up() -> None:
    total = Usage(prompt_tokens=10, completion_tokens=5, requests=1) + Usage(
        prompt_tokens=1, completion_tokens=2, requests=1
    )
    assert total == Usage(prompt_tokens=11, completion_tokens=7, requests=2)
    assert total.total_tokens == 18
    assert total.model_dump()["total_tokens"] == 18


async def test_round_trip_through_a_real_server() -> None:
    """What the gateway sends, read back by the server, is the same conversation."""
    from helpers.chat_server import ChatServer, completion
    from pymanus.models.base import ModelSettings
    from pymanus.models.openai import OpenAIModel

    async with ChatServer(validate=True) as server:
        server.push(completion("ok"))
        # vision: images are sent; send_reasoning: reasoning is sent; the tool's text part list
        # goes as a string (every server accepts that), so compare its text.
        model = OpenAIModel("m", base_url=server.url, api_key="k", vision=True, send_reasoning=True)
        await model.request(CONVERSATION, [], ModelSettings())
        await model.aclose()
    received = [Message.from_wire(wire) for wire in server.messages[-1]]
    assert len(received) == len(CONVERSATION)
    for sent, got in zip(CONVERSATION, received, strict=True):
        if sent.role == "tool" and isinstance(sent.content, list):
            assert got.model_copy(update={"content": sent.content}) == sent
            assert got.content == sent.text
        else:
            assert got == sent
