"""The resilient gateway: retries with backoff, a circuit breaker per endpoint, a fallback chain.

OpenManus retried every error six times, authentication failures included. Here a call is
sent again only when that can succeed: rate limits (429), request timeouts (408), server
errors (5xx), failed connections, timeouts and streams cut mid-way, as the model marks them
(``ModelError.retryable``). A bad request (400), bad key (401, 403), unknown model (404),
a prompt too long for the window (:class:`~pymanus.errors.ContextOverflowError`, which the
context window trims and sends again) and an unreadable answer fail at once, typed.

Waits grow exponentially with full jitter (a random wait up to ``base * 2**retry``, capped),
so many runs hitting one limit do not come back together; a ``Retry-After`` the endpoint
sends is honoured as it is. The SDK's own retries stay off (``OpenAIModel(max_retries=0)``):
both at once would multiply the attempts.

Retries are written here rather than with a retry library: a stream must be retried
around the ``yield`` of its chunks, and a context-manager attempt (tenacity's) would catch
the ``GeneratorExit`` or cancellation thrown in at a ``yield`` as a failed attempt.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal, TypeVar

from pymanus.errors import (
    CircuitOpenError,
    ContextOverflowError,
    ModelAuthError,
    ModelError,
    ModelOutputError,
    PyManusError,
)
from pymanus.messages import Message
from pymanus.models.base import (
    Model,
    ModelResponse,
    ModelSettings,
    StreamItem,
    TextChunk,
    ToolDefinition,
    WrapperModel,
)
from pymanus.models.telemetry import CallTrace, post_notice, scope_fields

if TYPE_CHECKING:
    from pymanus.config import ModelConfig

logger = logging.getLogger("pymanus.models")

T = TypeVar("T")

FINAL_ERRORS = (ModelAuthError, ContextOverflowError, ModelOutputError)
"""Errors neither retried nor handed to a fallback model: the same request fails anywhere
(a bad key is the user's to fix; an overflow is the context window's to trim; an
unreadable answer is the loop's to ask again about)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a failed call is sent again."""

    max_retries: int = 4
    """Retries after the first attempt (0: never retry)."""
    base_delay: float = 0.5
    """The wait before the first retry is random in ``[0, base_delay]``; it doubles each retry."""
    max_delay: float = 20.0
    """The most a backoff wait grows to."""
    max_retry_after: float = 60.0
    """The longest ``Retry-After`` waited for; asked for more, the call fails (a fallback may serve)."""

    def retries(self, error: ModelError, retries_done: int) -> bool:
        """Whether a call that failed with ``error`` after ``retries_done`` retries is sent again."""
        return error.retryable and not isinstance(error, FINAL_ERRORS) and retries_done < self.max_retries

    def delay(self, error: ModelError, retries_done: int) -> float | None:
        """Seconds to wait before the next attempt; ``None`` when the endpoint asks for too long a wait."""
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_retry_after else None
        return random.uniform(0, min(self.max_delay, self.base_delay * 2**retries_done))


class CircuitBreaker:
    """Refuses calls to an endpoint that keeps failing, until a probe finds it back.

    After ``failures`` transient failures in a row the circuit opens: calls are refused at
    once. ``reset_after`` seconds later it is half-open: one call goes through as a probe;
    its success closes the circuit, its failure opens it again. Errors that are not
    transient (a 400, a bad key) say nothing about the endpoint's health and count neither
    way.
    """

    def __init__(self, failures: int = 5, reset_after: float = 30.0, *, clock: Callable[[], float] = time.monotonic):
        self.failures = failures
        self.reset_after = reset_after
        self.state: Literal["closed", "open", "half_open"] = "closed"
        self._clock = clock
        self._count = 0
        self._opened_at = 0.0
        self._probing = False

    def allow(self) -> bool:
        """Whether a call may go now (in half-open state, the first caller becomes the probe)."""
        if self.state == "closed":
            return True
        if self.state == "open":
            if self._clock() - self._opened_at < self.reset_after:
                return False
            self.state = "half_open"
        if self._probing:
            return False
        self._probing = True
        return True

    def succeeded(self) -> None:
        """A call was answered: the endpoint works."""
        self.state = "closed"
        self._count = 0
        self._probing = False

    def failed(self) -> None:
        """A call failed transiently."""
        self._probing = False
        self._count += 1
        if self.state == "half_open" or self._count >= self.failures:
            self.state = "open"
            self._opened_at = self._clock()

    def released(self) -> None:
        """A call ended with no verdict on the endpoint (cancelled, or a non-transient error)."""
        self._probing = False

    @property
    def retry_in(self) -> float:
        """Seconds until an open circuit lets a probe through."""
        if self.state != "open":
            return 0.0
        return max(0.0, self._opened_at + self.reset_after - self._clock())


class ResilientModel(WrapperModel):
    """A model whose transient failures are retried, behind a circuit breaker.

    Args:
        wrapped: the model called (typically an :class:`~pymanus.models.openai.OpenAIModel`).
        policy: when to retry and how long to wait.
        breaker: this endpoint's breaker (default: 5 failures, 30 s).
        total_timeout: seconds one call may take, retries and waits included (``None``:
            no limit beyond each attempt's own timeouts).
        sleep: how to wait between attempts (tests pass a recorder).

    Every call is reported once (see :mod:`pymanus.models.telemetry`); every retry and
    breaker change is a log record of ``pymanus.models``.
    """

    def __init__(
        self,
        wrapped: Model,
        *,
        policy: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        total_timeout: float | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        super().__init__(wrapped)
        self.policy = policy or RetryPolicy()
        self.breaker = breaker or CircuitBreaker()
        self.total_timeout = total_timeout
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"ResilientModel({self.wrapped!r})"

    @property
    def endpoint(self) -> str:
        """Where the wrapped model's requests go (its base URL, else its name)."""
        base_url = getattr(self.wrapped, "base_url", None)
        return base_url if isinstance(base_url, str) else self.name

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """The wrapped model's answer, retried while it fails transiently."""
        call = _Attempts(self, settings, stream=False)
        while True:
            call.begin()
            try:
                response = await call.bounded(self.wrapped.request(messages, tools, settings))
            except ModelError as exc:
                await call.failed(exc)  # raises when there is no retry
                continue
            except BaseException as exc:
                call.abandoned(exc)
                raise
            call.succeeded(response)
            return response

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """The wrapped model's stream, retried while it fails transiently, even mid-way.

        Text already passed on is not passed on again when a retry repeats it; the final
        :class:`ModelResponse` is always the one complete answer.
        """
        call = _Attempts(self, settings, stream=True)
        shown = ShownText()
        while True:
            call.begin()
            shown.restart()
            stream = aiter(self.wrapped.stream(messages, tools, settings))
            try:
                while True:
                    try:
                        item = await call.bounded(anext(stream))
                    except StopAsyncIteration:
                        raise ModelError(f"{self.name} ended its stream without a response", retryable=True) from None
                    if isinstance(item, TextChunk):
                        if text := shown.new(item.text):
                            yield TextChunk(text=text)
                        continue
                    call.succeeded(item)
                    yield item
                    return
            except ModelError as exc:
                await call.failed(exc)
            except BaseException as exc:
                call.abandoned(exc)
                raise
            finally:
                await _close(stream)


class FallbackModel(WrapperModel):
    """The first model of a chain that answers.

    A model is passed over when it fails with anything but :data:`FINAL_ERRORS` (its
    retries exhausted, its breaker open, a 404 for its name...); the next one serves. Every
    switch is a warning record of ``pymanus.models`` (``event="model_switch"``) and a notice to
    the call's listener (:func:`~pymanus.models.telemetry.post_notice`; a run makes it a
    ``ModelSwitched`` event). Name, context window and vision are the first model's. Models
    later in the chain may be built on first use (:func:`gateway_model` does so, a local
    model being costly to load).
    """

    def __init__(self, models: Sequence[Model]) -> None:
        if not models:
            raise ValueError("FallbackModel needs at least one model")
        super().__init__(models[0])
        self.models = list(models)

    def __repr__(self) -> str:
        return f"FallbackModel({self.models!r})"

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """The answer of the first model that gives one."""
        for index, model in enumerate(self.models):
            try:
                return await model.request(messages, tools, settings)
            except FINAL_ERRORS:
                raise
            except ModelError as exc:
                self._switch(index, exc)
        raise AssertionError("unreachable: the last model's error is raised")  # pragma: no cover

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """The stream of the first model that answers (text already passed on is not repeated)."""
        shown = ShownText()
        for index, model in enumerate(self.models):
            shown.restart()
            try:
                async for item in model.stream(messages, tools, settings):
                    if not isinstance(item, TextChunk):
                        yield item
                    elif text := shown.new(item.text):
                        yield TextChunk(text=text)
                return
            except FINAL_ERRORS:
                raise
            except ModelError as exc:
                self._switch(index, exc)

    def _switch(self, index: int, error: ModelError) -> None:
        """Report the switch from model ``index`` to the next one; re-raise ``error`` after the last."""
        if index + 1 >= len(self.models):
            raise error
        switch = {
            "from_model": self.models[index].name,
            "to_model": self.models[index + 1].name,
            "reason": "circuit_open" if isinstance(error, CircuitOpenError) else type(error).__name__,
            "error": str(error),
        }
        logger.warning(
            "model %s failed (%s); switching to %s",
            switch["from_model"],
            error,
            switch["to_model"],
            extra={**scope_fields(), "event": "model_switch", **switch, "status": error.status},
        )
        post_notice("model_switch", switch)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """The first model's count."""
        return self.models[0].count_tokens(messages)

    async def aclose(self) -> None:
        """Close every model of the chain."""
        for model in self.models:
            await model.aclose()


class DeferredModel(WrapperModel):
    """A model built on its first call, named ``name`` until then.

    A build that fails (a missing pack, a missing key) becomes a :class:`ModelError` of the
    call, so a fallback chain passes over it; it is tried again on the next call.
    """

    def __init__(self, name: str, build: Callable[[], Model]) -> None:
        self._name = name
        self._build = build
        self._model: Model | None = None

    @property
    def wrapped(self) -> Model:  # type: ignore[override]
        """The model, built now if it was not yet."""
        if self._model is None:
            try:
                self._model = self._build()
            except PyManusError as exc:
                raise ModelError(f"{self._name}: cannot be loaded: {exc}") from exc
        return self._model

    @property
    def name(self) -> str:
        return self._model.name if self._model is not None else self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    def __repr__(self) -> str:
        return f"DeferredModel({self._name!r}, built={self._model is not None})"

    async def aclose(self) -> None:
        """Close the model if it was built."""
        if self._model is not None:
            await self._model.aclose()


def gateway_model(config: ModelConfig) -> Model:
    """The model ``config`` names, as the agent should call it.

    ``openai:`` models are :class:`ResilientModel` s with the config's timeouts, retries
    and breaker (behind a :class:`~pymanus.models.quota.ConcurrencyQuota` with
    ``max_concurrency``); ``local:`` models (in-process) are used as they are. With
    ``fallback`` models, the chain is a :class:`FallbackModel` whose fallbacks are built on
    first use.
    """
    primary = _gateway_link(config, config.name)
    if not config.fallback:
        return primary
    chain = [primary] + [DeferredModel(spec, partial(_gateway_link, config, spec)) for spec in config.fallback]
    return FallbackModel(chain)


def _gateway_link(config: ModelConfig, spec: str) -> Model:
    from pymanus.models.resolve import resolve_model

    model = resolve_model(
        spec,
        base_url=config.base_url or None,
        api_key=config.api_key or None,
        context_window=config.context_window,
        vision=config.vision,
        request_timeout=config.request_timeout,
        connect_timeout=config.connect_timeout,
    )
    if not spec.startswith("openai:"):
        return model
    resilient = ResilientModel(
        model,
        policy=RetryPolicy(max_retries=config.max_retries),
        breaker=CircuitBreaker(config.breaker_failures, config.breaker_reset),
        total_timeout=config.total_timeout,
    )
    if config.max_concurrency is None:
        return resilient
    from pymanus.models.quota import ConcurrencyQuota

    return ConcurrencyQuota(resilient, config.max_concurrency)


# -- helpers -------------------------------------------------------------------------------------


class ShownText:
    """The text of a stream already passed on, so that a retried stream does not repeat it.

    Each attempt's text is compared with what was shown: the part already shown is held
    back, the rest passed on. An attempt whose text departs from it is passed on whole
    (a display then shows both; the final response is what counts).
    """

    def __init__(self) -> None:
        self.shown = ""
        self._attempt = ""
        self._diverged = False

    def restart(self) -> None:
        """A new attempt begins."""
        self._attempt = ""
        self._diverged = False

    def new(self, text: str) -> str:
        """The part of ``text`` (the attempt's next chunk) to pass on."""
        if self._diverged:
            return text
        self._attempt += text
        if self.shown.startswith(self._attempt):
            return ""
        if self._attempt.startswith(self.shown):
            fresh = self._attempt[len(self.shown) :]
            self.shown = self._attempt
            return fresh
        self._diverged = True
        return text


class _Attempts:
    """The attempts of one call to a :class:`ResilientModel`: deadline, breaker, waits, report."""

    def __init__(self, model: ResilientModel, settings: ModelSettings, *, stream: bool) -> None:
        self.model = model
        self.trace = CallTrace(model.name, model.endpoint, settings, stream=stream)
        loop = asyncio.get_running_loop()
        self.deadline = None if model.total_timeout is None else loop.time() + model.total_timeout
        self.last: ModelError | None = None

    def begin(self) -> None:
        """Start an attempt, unless the breaker refuses it."""
        breaker = self.model.breaker
        if not breaker.allow():
            error = self.last or CircuitOpenError(
                f"{self.model.name}: circuit open after {breaker.failures} failures in a row; "
                f"next probe in {breaker.retry_in:.1f}s",
                retryable=True,
            )
            self.trace.finish(error=error)
            raise error
        self.trace.attempts += 1

    async def bounded(self, awaitable: Awaitable[T]) -> T:
        """Await within the call's total timeout (each await alone: a scope never spans a ``yield``)."""
        if self.deadline is None:
            return await awaitable
        try:
            async with asyncio.timeout_at(self.deadline):
                return await awaitable
        except TimeoutError:
            raise ModelError(
                f"{self.model.name}: no answer within the total timeout of {self.model.total_timeout:g}s "
                f"({self.trace.attempts} attempts)",
                retryable=True,
            ) from None

    def succeeded(self, response: ModelResponse) -> None:
        """The attempt answered."""
        if self.model.breaker.state != "closed":
            self._breaker_log("closed")
        self.model.breaker.succeeded()
        self.trace.finish(response)

    async def failed(self, error: ModelError) -> None:
        """The attempt failed: wait for the next one, or raise ``error`` when there is none."""
        model, breaker = self.model, self.model.breaker
        transient = error.retryable and not isinstance(error, FINAL_ERRORS)
        if transient:
            before = breaker.state
            breaker.failed()
            if breaker.state == "open" and before != "open":
                self._breaker_log("open")
        else:
            breaker.released()
        self.last = error
        retries = self.trace.attempts - 1
        delay = model.policy.delay(error, retries) if model.policy.retries(error, retries) else None
        loop = asyncio.get_running_loop()
        if delay is None or (self.deadline is not None and loop.time() + delay >= self.deadline):
            self.trace.finish(error=error)
            raise error
        logger.info(
            "%s: retrying in %.2fs after: %s",
            model.name,
            delay,
            error,
            extra={
                **self.trace.scope,
                "event": "model_retry",
                "model": model.name,
                "endpoint": model.endpoint,
                "attempt": self.trace.attempts,
                "status": error.status,
                "error_type": type(error).__name__,
                "delay_s": round(delay, 3),
            },
        )
        await model._sleep(delay)

    def abandoned(self, error: BaseException) -> None:
        """The attempt ended otherwise (cancelled, or a bug below): no verdict on the endpoint."""
        self.model.breaker.released()
        self.trace.finish(error=error)

    def _breaker_log(self, state: str) -> None:
        model = self.model
        logger.warning(
            "%s: circuit %s",
            model.name,
            state,
            extra={"event": "circuit_" + state, "model": model.name, "endpoint": model.endpoint},
        )


async def _close(stream: AsyncIterator[StreamItem]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
