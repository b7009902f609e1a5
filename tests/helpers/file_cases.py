"""Calling the file tools in tests."""

from __future__ import annotations

from typing import Any

from pymanus.tools import Tool, ToolContext, ToolResult


async def call(tool: Tool, context: ToolContext | None = None, **arguments: Any) -> ToolResult:
    """Validate ``arguments`` as the model's call would be, then run ``tool``."""
    return await tool.run(tool.validate(arguments), context or ToolContext(run_id="test"))
