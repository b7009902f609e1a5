"""A cap on the requests in flight to one endpoint, shared by every run that uses the model.

Thousands of concurrent runs on one agent would otherwise send thousands of requests at
once, and a provider answers a burst with 429s that the retries then make worse. A
:class:`ConcurrencyQuota` wraps the gateway model: every run of the agents holding that
model object waits its turn (a stream holds its place until it ends). Agents that should
share a quota share the wrapped model; two that do not share it share nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from pymanus.messages import Message
from pymanus.models.base import Model, ModelResponse, ModelSettings, StreamItem, ToolDefinition, WrapperModel


class ConcurrencyQuota(WrapperModel):
    """``wrapped``, with at most ``limit`` requests in flight at a time.

    Args:
        wrapped: the model (usually the resilient gateway of one endpoint).
        limit: requests in flight at most; the others wait, in arrival order.
    """

    def __init__(self, wrapped: Model, limit: int) -> None:
        if limit < 1:
            raise ValueError("a concurrency quota must allow at least one request")
        super().__init__(wrapped)
        self.limit = limit
        self._slots: asyncio.Semaphore | None = None

    @property
    def slots(self) -> asyncio.Semaphore:
        """The semaphore, made on first use (inside the event loop that runs the requests)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        return self._slots

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        async with self.slots:
            return await self.wrapped.request(messages, tools, settings)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        async with self.slots:
            async for item in self.wrapped.stream(messages, tools, settings):
                yield item
