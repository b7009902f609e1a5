"""Record a run's model exchanges to a cassette file, and play them back deterministically.

>>> agent = Agent(model=RecordingModel(model, "run.cassette.json"), ...)   # a real run
>>> agent = Agent(model=ReplayModel("run.cassette.json"), ...)             # the same answers, offline

A cassette is one JSON object: the model's name and, in call order, each exchange: the
request (messages, the names of the tools offered, the settings that were set) and what
came back (the response, or the error with its type, status and retry hints). Replayed
errors are raised with their recorded type, so a run's failure handling replays too.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from pymanus import errors
from pymanus.errors import ModelError
from pymanus.messages import Message
from pymanus.models.base import (
    Model,
    ModelResponse,
    ModelSettings,
    StreamItem,
    ToolDefinition,
    WrapperModel,
)

CASSETTE_VERSION = 1


class RecordedError(BaseModel):
    """A :class:`~pymanus.errors.ModelError` as recorded."""

    type: str
    message: str
    status: int | None = None
    retryable: bool = False
    retry_after: float | None = None

    @classmethod
    def of(cls, error: ModelError) -> RecordedError:
        """The record of ``error``."""
        return cls(
            type=type(error).__name__,
            message=str(error),
            status=error.status,
            retryable=error.retryable,
            retry_after=error.retry_after,
        )

    def rebuild(self) -> ModelError:
        """The error again, of its recorded type (a plain ModelError when the type is unknown)."""
        kind = getattr(errors, self.type, ModelError)
        if not (isinstance(kind, type) and issubclass(kind, ModelError)):
            kind = ModelError
        return kind(self.message, status=self.status, retryable=self.retryable, retry_after=self.retry_after)


class Exchange(BaseModel):
    """One model call: what was sent and what came back."""

    messages: list[Message]
    tools: list[str] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    response: ModelResponse | None = None
    error: RecordedError | None = None


class Cassette(BaseModel):
    """The model exchanges of a run, in order."""

    version: int = CASSETTE_VERSION
    model: str = ""
    exchanges: list[Exchange] = Field(default_factory=list)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette file; a missing or unreadable one is a :class:`~pymanus.errors.ConfigError`."""
        try:
            return cls.model_validate_json(Path(path).read_bytes())
        except OSError as exc:
            raise errors.ConfigError(f"cannot read cassette {path}: {exc.strerror}") from None
        except ValueError as exc:
            raise errors.ConfigError(f"{path} is not a cassette: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the cassette (whole, replacing the file in one step)."""
        target = Path(path)
        partial = target.with_name(target.name + ".partial")
        partial.write_text(self.model_dump_json(indent=1, exclude_none=True), encoding="utf-8")
        os.replace(partial, target)


class RecordingModel(WrapperModel):
    """Passes every call to ``wrapped`` and writes each exchange to the cassette at ``path``.

    The file is rewritten after every exchange, so a run that crashes keeps what it did.
    """

    def __init__(self, wrapped: Model, path: str | os.PathLike[str]) -> None:
        super().__init__(wrapped)
        self.path = Path(path)
        self.cassette = Cassette(model=wrapped.name)

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """The wrapped model's answer, recorded."""
        try:
            response = await self.wrapped.request(messages, tools, settings)
        except ModelError as exc:
            await self._record(messages, tools, settings, error=exc)
            raise
        await self._record(messages, tools, settings, response=response)
        return response

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """The wrapped model's stream; its final response recorded."""
        try:
            async for item in self.wrapped.stream(messages, tools, settings):
                if isinstance(item, ModelResponse):
                    await self._record(messages, tools, settings, response=item)
                yield item
        except ModelError as exc:
            await self._record(messages, tools, settings, error=exc)
            raise

    async def _record(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
        *,
        response: ModelResponse | None = None,
        error: ModelError | None = None,
    ) -> None:
        self.cassette.exchanges.append(
            Exchange(
                messages=[m.model_copy(deep=True) for m in messages],
                tools=[t.name for t in tools],
                settings=settings.model_dump(exclude_none=True),
                response=response.model_copy(deep=True) if response is not None else None,
                error=RecordedError.of(error) if error is not None else None,
            )
        )
        await asyncio.to_thread(self.cassette.save, self.path)


class ReplayModel(Model):
    """Answers with the exchanges of a cassette, in order, without any model.

    Args:
        cassette: a :class:`Cassette` or the path of one.
        strict: check that each request's messages and tools are the recorded ones; a
            difference is a :class:`~pymanus.errors.ModelError` naming the first one.
            Off by default: tool results that hold times or temporary paths differ
            between runs without changing what the model was asked.

    Its name is the recorded model's, so a replayed run is set up like the recorded one.
    """

    def __init__(self, cassette: Cassette | str | os.PathLike[str], *, strict: bool = False) -> None:
        self.cassette = cassette if isinstance(cassette, Cassette) else Cassette.load(cassette)
        self.name = self.cassette.model or "replay"
        self.strict = strict
        self.position = 0
        """How many exchanges were played."""

    def __repr__(self) -> str:
        return f"ReplayModel({self.name!r}, {self.position}/{len(self.cassette.exchanges)} played)"

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """The next recorded answer (or error)."""
        exchanges = self.cassette.exchanges
        if self.position >= len(exchanges):
            raise ModelError(f"{self.name}: the cassette has no answer left ({len(exchanges)} recorded)")
        exchange = exchanges[self.position]
        if self.strict:
            self._check(exchange, messages, tools)
        self.position += 1
        if exchange.error is not None:
            raise exchange.error.rebuild()
        if exchange.response is None:
            raise ModelError(f"{self.name}: exchange {self.position} of the cassette has no answer")
        return exchange.response.model_copy(deep=True)

    def _check(self, exchange: Exchange, messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> None:
        where = f"{self.name}: request {self.position + 1} differs from the cassette"
        if [t.name for t in tools] != exchange.tools:
            raise ModelError(f"{where}: tools {[t.name for t in tools]} != {exchange.tools}")
        if len(messages) != len(exchange.messages):
            raise ModelError(f"{where}: {len(messages)} messages, {len(exchange.messages)} recorded")
        for index, (sent, recorded) in enumerate(zip(messages, exchange.messages, strict=True)):
            if sent.model_dump() != recorded.model_dump():
                raise ModelError(f"{where} at message {index} ({sent.role}): {str(sent.content)[:120]!r}")
