"""``terminate``: the agent's way to say the task is over."""

from __future__ import annotations

from typing import Literal

from pymanus.tools.tool import ToolResult, tool


@tool(parallel_safe=False, exclusive=True)
def terminate(status: Literal["success", "failure"], message: str) -> ToolResult:
    """End the task. Call this when the task is complete, or when it cannot be completed.

    Args:
        status: "success" when the task is done, "failure" when it cannot be done.
        message: the final answer for the user, or why the task could not be done.
    """
    return ToolResult(content=message, end_run=status)
