"""The settings of one model request: the agent's, adjusted by what the run's state asks for.

A ``task_message`` hook may set the ``ToolContext.state`` keys below; the loop reads them
before every request (see :func:`request_settings`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence

from pymanus.models.base import ModelSettings, ToolDefinition
from pymanus.tools.builtin.workspace_scan import scan
from pymanus.tools.tool import ToolContext

WITHHELD_TOOLS = "loop.withheld_tools"
"""``ToolContext.state`` key: names of offered tools no response of the run may call (set by a
``task_message`` hook; they stay in the request, see ``ModelSettings.allowed_tools``)."""
BRIEFED_WITHHELD_TOOLS = "loop.briefed_withheld_tools"
"""``ToolContext.state`` key: ``(snapshot, names)``, offered tools no response may call while the
workspace scans as ``snapshot`` (set by a ``task_message`` hook whose message shows that workspace:
until a file changes, those tools would only repeat it)."""
PARALLEL_WHILE_UNCHANGED = "loop.parallel_while_unchanged"
"""``ToolContext.state`` key: a snapshot; while the workspace scans as it, a response may make several
calls even where the model's settings allow one (set by a ``task_message`` hook when nothing needs
reading first, so no call can depend on a result it has not seen)."""


async def request_settings(
    settings: ModelSettings,
    context: ToolContext,
    tools: Sequence[ToolDefinition],
    *,
    min_temperature: float | None = None,
    withheld: Collection[str] = (),
) -> ModelSettings:
    """``settings`` for the next request: at least ``min_temperature``, without the ``withheld``
    tools and those the run's state withholds now, and several calls where the state allows them."""
    if min_temperature is not None and (settings.temperature or 0.0) < min_temperature:
        settings = settings.model_copy(update={"temperature": min_temperature})
    withheld = {*withheld, *context.state.get(WITHHELD_TOOLS, ())}
    briefed = context.state.get(BRIEFED_WITHHELD_TOOLS)
    parallel_from = context.state.get(PARALLEL_WHILE_UNCHANGED)
    now = await asyncio.to_thread(scan, context.workspace) if briefed or parallel_from is not None else None
    if briefed is not None and now == briefed[0]:
        withheld.update(briefed[1])
    if parallel_from is not None and now == parallel_from and settings.parallel_tool_calls is False:
        settings = settings.model_copy(update={"parallel_tool_calls": None})
    if withheld:
        settings = settings.model_copy(update={"allowed_tools": [t.name for t in tools if t.name not in withheld]})
    return settings
