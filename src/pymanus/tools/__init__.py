"""Tools: functions the model can call, and the toolset that runs them."""

from pymanus.tools.tool import Tool, ToolContext, ToolResult, tool
from pymanus.tools.toolset import ToolOutcome, Toolset

__all__ = ["Tool", "ToolContext", "ToolOutcome", "ToolResult", "Toolset", "tool"]
