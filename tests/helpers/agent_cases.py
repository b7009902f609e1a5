"""A tool and a protocol check shared by the agent loop's tests."""

from __future__ import annotations

from collections.abc import Sequence

from pymanus import Message, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first addend
        b: second addend
    """
    return a + b


def assert_protocol(messages: Sequence[Message]) -> None:
    """Every assistant tool call is answered by one tool message with its id, in order."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "assistant" and message.tool_calls:
            answers = messages[index : index + len(message.tool_calls)]
            assert [m.role for m in answers] == ["tool"] * len(message.tool_calls)
            assert [m.tool_call_id for m in answers] == [c.id for c in message.tool_calls]
            index += len(message.tool_calls)
        else:
            assert message.role != "tool", f"orphan tool message at {index - 1}"
