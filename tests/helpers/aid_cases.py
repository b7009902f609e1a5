"""Calling tools through the small-model aids' middleware, as the toolset of a preset agent does."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pymanus.messages import ToolCall
from pymanus.tools import Tool, ToolContext, ToolOutcome, ToolResult, Toolset
from pymanus.tools.middleware import ToolMiddleware


class Aided:
    """Tools run by a real :class:`Toolset` with ``middleware``, in one run whose workspace is ``workspace``."""

    def __init__(self, tools: Sequence[Tool], workspace: Path, middleware: Sequence[ToolMiddleware]) -> None:
        self.toolset = Toolset(tools, middleware=middleware)
        self.context = ToolContext(run_id="aided", workspace=workspace)
        self._ids = itertools.count(1)

    async def outcome(self, name: str, **arguments: Any) -> ToolOutcome:
        """Run one call of ``name`` with ``arguments`` (sent as the JSON text a model writes)."""
        call = ToolCall(id=f"call_{next(self._ids)}", name=name, arguments=json.dumps(arguments))
        return await self.toolset.run_call(call, self.context)

    async def __call__(self, code: str) -> ToolResult:
        """The result the model reads for a ``python`` call running ``code``."""
        return (await self.outcome("python", code=code)).result
