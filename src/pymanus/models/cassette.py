"""Record a run's model exchanges to a cassette file, and play them back deterministically.

>>> agent = Agent(model=RecordingModel(model, "run.cassette.json"), ...)   # a real run
>>> agent = Agent(model=ReplayModel("run.cassette.json"), ...)             # the same answers, offline

A cassette is one JSON object: the model's name, the definitions of the tools offered and,
in call order, each exchange: the request (messages, the names of the tools offered, the
settings that were set) and what came back (the response, or the error with its type,
status and retry hints). Replayed errors are raised with their recorded type, so a run's
failure handling replays too. ``run`` holds what a recorder of a whole run adds
(``pymanus run --record``: the task, settings and starting files; see
:mod:`pymanus.cli.recording`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, Field, ValidationError

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
    tools: dict[str, ToolDefinition] = Field(default_factory=dict)
    """Each tool offered, as first described to the model (a strict replay compares them)."""
    exchanges: list[Exchange] = Field(default_factory=list)
    run: dict[str, Any] = Field(default_factory=dict)
    """About the recorded run, for whoever replays it; replaying the answers needs none of it."""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette file; a missing or unreadable one is a :class:`~pymanus.errors.ConfigError`."""
        try:
            cassette = cls.model_validate_json(Path(path).read_bytes())
        except OSError as exc:
            raise errors.ConfigError(f"cannot read cassette {path}: {exc.strerror}") from None
        except ValidationError as exc:
            raise errors.ConfigError(f"{path} is not a cassette: {_first_error(exc)}") from None
        if "exchanges" not in cassette.model_fields_set:  # any JSON object would pass otherwise
            raise errors.ConfigError(f"{path} is not a cassette: it has no exchanges")
        if cassette.version != CASSETTE_VERSION:
            raise errors.ConfigError(
                f"{path} is a cassette of version {cassette.version}; this PyManus reads version {CASSETTE_VERSION}"
            )
        return cassette

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the cassette (whole, replacing the file in one step)."""
        target = Path(path)
        partial = target.with_name(target.name + ".partial")
        try:
            partial.write_text(self.model_dump_json(indent=1, exclude_none=True), encoding="utf-8")
            os.replace(partial, target)
        except OSError:
            partial.unlink(missing_ok=True)
            raise


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
        for tool in tools:
            self.cassette.tools.setdefault(tool.name, tool.model_copy(deep=True))
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
        strict: check that each request is the recorded one: its messages, its tools (names
            and definitions) and its settings; a difference is a
            :class:`~pymanus.errors.ModelError` naming the first one. Off by default: tool
            results that hold times or temporary paths differ between runs without
            changing what the model was asked.

    Its name is the recorded model's, so a replayed run is set up like the recorded one.
    """

    def __init__(self, cassette: Cassette | str | os.PathLike[str], *, strict: bool = False) -> None:
        self.cassette = cassette if isinstance(cassette, Cassette) else Cassette.load(cassette)
        self.name = self.cassette.model or "replay"
        self.strict = strict
        self.position = 0
        """How many exchanges were played."""
        self.divergence: str | None = None
        """Why a request could not be answered from the cassette (a strict difference, none left)."""

    def __repr__(self) -> str:
        return f"ReplayModel({self.name!r}, {self.position}/{len(self.cassette.exchanges)} played)"

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """The next recorded answer (or error)."""
        exchanges = self.cassette.exchanges
        if self.position >= len(exchanges):
            self._diverge(f"request {self.position + 1}: the cassette has no answer left ({len(exchanges)} recorded)")
        exchange = exchanges[self.position]
        if self.strict and (difference := self._difference(exchange, messages, tools, settings)) is not None:
            self._diverge(f"request {self.position + 1} differs from the cassette: {difference}")
        self.position += 1
        if exchange.error is not None:
            raise exchange.error.rebuild()
        if exchange.response is None:
            raise ModelError(f"{self.name}: exchange {self.position} of the cassette has no answer")
        return exchange.response.model_copy(deep=True)

    def _diverge(self, why: str) -> NoReturn:
        self.divergence = why
        raise ModelError(f"{self.name}: {why}")

    def _difference(
        self,
        exchange: Exchange,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> str | None:
        """The first way this request differs from ``exchange``'s (``None``: it does not)."""
        names = [t.name for t in tools]
        if names != exchange.tools:
            return f"tools {names}, recorded {exchange.tools}"
        for tool in tools:
            recorded = self.cassette.tools.get(tool.name)
            if recorded is not None and recorded != tool:
                part = "description" if recorded.description != tool.description else "parameters"
                return f"the {part} of tool `{tool.name}`: {_change(tool, recorded)}"
        if len(messages) != len(exchange.messages):
            return f"{len(messages)} messages, {len(exchange.messages)} recorded"
        for index, (sent, recorded_message) in enumerate(zip(messages, exchange.messages, strict=True)):
            if sent.model_dump() != recorded_message.model_dump():
                return f"message {index} ({sent.role}): {_change(sent, recorded_message)}"
        sent_settings = settings.model_dump(exclude_none=True)
        if sent_settings != exchange.settings:
            return f"settings {sent_settings}, recorded {exchange.settings}"
        return None


def _first_error(exc: ValidationError) -> str:
    """The first problem pydantic found, on one line (``invalid JSON: ...`` or ``key: problem``)."""
    error = exc.errors(include_url=False)[0]
    if error["type"] == "json_invalid":
        return f"invalid JSON: {error['ctx'].get('error', error['msg'])}" if "ctx" in error else "invalid JSON"
    where = ".".join(str(part) for part in error["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {error['msg']}{more}" if where else f"{error['msg']}{more}"


def _change(sent: Message | ToolDefinition, recorded: Message | ToolDefinition) -> str:
    """Where ``sent`` departs from ``recorded``: in its text when that differs, else in its JSON."""
    if isinstance(sent, Message) and isinstance(recorded, Message) and sent.text != recorded.text:
        return _first_change(sent.text, recorded.text)
    return _first_change(sent.model_dump_json(), recorded.model_dump_json())


def _first_change(sent: str, recorded: str, context: int = 40) -> str:
    """Where ``sent`` first departs from ``recorded``, with a little of each around it."""
    at = next(
        (i for i, (a, b) in enumerate(zip(sent, recorded, strict=False)) if a != b), min(len(sent), len(recorded))
    )
    start = max(0, at - context)
    return f"now {sent[start : at + context]!r}, recorded {recorded[start : at + context]!r}"
