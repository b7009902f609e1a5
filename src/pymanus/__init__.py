"""PyManus: a general-purpose autonomous AI agent.

>>> from pymanus import Agent, tool
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> agent = Agent(model="openai:gpt-4o-mini", tools=[add])  # doctest: +SKIP
>>> agent.run_sync("What is 2 + 40?").output  # doctest: +SKIP

The public names are imported on first use (PEP 562): ``import pymanus`` alone, or
importing one of its submodules (``pymanus.errors``, the CLI), does not load asyncio,
pydantic or the agent loop until a name that needs them is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pymanus.agent.agent import Agent
    from pymanus.agent.events import (
        Event,
        FileChange,
        FilesChanged,
        ModelRequest,
        ModelResponded,
        ModelSwitched,
        PlanUpdated,
        RunFinished,
        RunStarted,
        RunState,
        StepFinished,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
    )
    from pymanus.agent.result import RunResult
    from pymanus.errors import ToolError
    from pymanus.messages import ImagePart, Message, TextPart, ToolCall, Usage
    from pymanus.models.base import Model, ModelSettings
    from pymanus.tools.tool import Tool, ToolContext, ToolResult, tool
    from pymanus.tools.toolset import Toolset

_MODULES = {
    "Agent": "pymanus.agent.agent",
    "Event": "pymanus.agent.events",
    "FileChange": "pymanus.agent.events",
    "FilesChanged": "pymanus.agent.events",
    "ModelRequest": "pymanus.agent.events",
    "ModelResponded": "pymanus.agent.events",
    "ModelSwitched": "pymanus.agent.events",
    "PlanUpdated": "pymanus.agent.events",
    "RunFinished": "pymanus.agent.events",
    "RunStarted": "pymanus.agent.events",
    "RunState": "pymanus.agent.events",
    "StepFinished": "pymanus.agent.events",
    "TextDelta": "pymanus.agent.events",
    "ToolCallFinished": "pymanus.agent.events",
    "ToolCallStarted": "pymanus.agent.events",
    "RunResult": "pymanus.agent.result",
    "ToolError": "pymanus.errors",
    "ImagePart": "pymanus.messages",
    "Message": "pymanus.messages",
    "TextPart": "pymanus.messages",
    "ToolCall": "pymanus.messages",
    "Usage": "pymanus.messages",
    "Model": "pymanus.models.base",
    "ModelSettings": "pymanus.models.base",
    "Tool": "pymanus.tools.tool",
    "ToolContext": "pymanus.tools.tool",
    "ToolResult": "pymanus.tools.tool",
    "tool": "pymanus.tools.tool",
    "Toolset": "pymanus.tools.toolset",
}
"""Where each public name is defined."""

__all__ = [
    "Agent",
    "Event",
    "FileChange",
    "FilesChanged",
    "ImagePart",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponded",
    "ModelSettings",
    "ModelSwitched",
    "PlanUpdated",
    "RunFinished",
    "RunResult",
    "RunStarted",
    "RunState",
    "StepFinished",
    "TextDelta",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Toolset",
    "Usage",
    "tool",
]


if not TYPE_CHECKING:  # hidden from type checkers, which would then accept any name

    def __getattr__(name: str) -> Any:
        module = _MODULES.get(name)
        if module is None:
            raise AttributeError(f"module 'pymanus' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups find it directly
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
