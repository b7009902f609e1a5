"""PyManus: a general-purpose autonomous AI agent.

>>> from pymanus import Agent, tool
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> agent = Agent(model="openai:gpt-4o-mini", tools=[add])  # doctest: +SKIP
>>> agent.run_sync("What is 2 + 40?").output  # doctest: +SKIP
"""

from pymanus.agent.agent import Agent
from pymanus.agent.events import (
    Event,
    ModelRequest,
    ModelResponded,
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

__all__ = [
    "Agent",
    "Event",
    "ImagePart",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponded",
    "ModelSettings",
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
