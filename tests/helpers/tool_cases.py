"""A toolset of fifteen tools for the tool-selection tests, and small helpers around it."""

from __future__ import annotations

from benchmarks.tool_selection import DESCRIPTIONS as BENCHMARK_TOOLS

from pymanus.messages import Message
from pymanus.models.base import ToolDefinition

DESCRIPTIONS = dict(list(BENCHMARK_TOOLS.items())[:15])
"""The first fifteen tools of the tool-selection benchmark: files, code, web, and unrelated ones."""
TOOLS = [ToolDefinition(name=n, description=d) for n, d in DESCRIPTIONS.items()]


def ask(text: str, *history: Message) -> list[Message]:
    return [Message.system("sys"), Message.user(text), *history]


def names(tools: list[ToolDefinition]) -> list[str]:
    return [t.name for t in tools]
