"""What the model gateway reports of each call: one structured log record and one span.

The record goes to ``logging.getLogger("pymanus.models")`` with its fields in ``extra``
(``event="model_call"``, model, endpoint, outcome, HTTP status, attempts, retries,
latency, tokens, finish reason), so any JSON formatter renders it as one object. Fields
set with :func:`call_scope` (the run id and step) are added to every record and span of
the calls made inside it.

Spans follow the OpenTelemetry GenAI semantic conventions (``chat <model>``, kind
``CLIENT``, ``gen_ai.*`` attributes) when ``opentelemetry-api`` is installed (the
``[otel]`` extra) and are skipped when it is not; without a configured SDK the API's
tracer is a no-op.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any
from urllib.parse import urlparse

from pymanus.errors import ModelError
from pymanus.models.base import ModelResponse, ModelSettings

logger = logging.getLogger("pymanus.models")

_NO_SCOPE: Mapping[str, Any] = MappingProxyType({})
_SCOPE: ContextVar[Mapping[str, Any]] = ContextVar("pymanus_model_call_scope", default=_NO_SCOPE)

Listener = Callable[[str, dict[str, Any]], None]
"""``listener(kind, payload)``: hears what the gateway reports during a call (see :func:`post_notice`)."""
_LISTENER: ContextVar[Listener | None] = ContextVar("pymanus_model_call_listener", default=None)


@contextmanager
def call_scope(*, listener: Listener | None = None, **fields: Any) -> Iterator[None]:
    """Add ``fields`` (e.g. ``run_id=..., step=...``) to the records and spans of the calls made inside;
    ``listener`` hears their notices (default: the enclosing scope's)."""
    token = _SCOPE.set({**_SCOPE.get(), **fields})
    heard = _LISTENER.set(listener) if listener is not None else None
    try:
        yield
    finally:
        if heard is not None:
            _LISTENER.reset(heard)
        _SCOPE.reset(token)


def scope_fields() -> Mapping[str, Any]:
    """The fields of the current call scope (the run id and step), for a record of the gateway's own."""
    return _SCOPE.get()


def post_notice(kind: str, payload: dict[str, Any]) -> None:
    """Tell the listener of the current call scope that ``kind`` happened (nobody listening: nothing).

    Kinds: ``"model_switch"`` (``from_model``, ``to_model``, ``reason``, ``error``).
    """
    listener = _LISTENER.get()
    if listener is not None:
        listener(kind, payload)


class CallTrace:
    """One model call as the gateway saw it, reported once when it ends (:meth:`finish`).

    Args:
        model: the model's name (``openai:gpt-4o-mini``).
        endpoint: where requests go (a base URL), or the model's name for in-process models.
        settings: the call's sampling settings (recorded on the span).
        stream: whether the call streams.
    """

    def __init__(self, model: str, endpoint: str, settings: ModelSettings, *, stream: bool) -> None:
        self.model = model
        self.endpoint = endpoint
        self.stream = stream
        self.attempts = 0
        self.status: int | None = None
        self.scope = _SCOPE.get()
        self._finished = False
        self._started = time.perf_counter()
        self._span = _start_span(model, endpoint, settings, self.scope)

    def finish(self, response: ModelResponse | None = None, error: BaseException | None = None) -> None:
        """Log the call's record and end its span: answered with ``response`` or failed with ``error``.

        Only the first call counts (a stream closed after its response ends no second time).
        """
        if self._finished:
            return
        self._finished = True
        latency = time.perf_counter() - self._started
        if isinstance(error, ModelError):
            self.status = error.status
        elif response is not None:
            self.status = 200 if self.endpoint.startswith(("http://", "https://")) else None
        fields: dict[str, Any] = {
            **self.scope,
            "event": "model_call",
            "model": self.model,
            "endpoint": self.endpoint,
            "stream": self.stream,
            "outcome": "ok" if error is None else ("cancelled" if _cancelled(error) else "error"),
            "error_type": None if error is None else type(error).__name__,
            "status": self.status,
            "attempts": self.attempts,
            "retries": max(0, self.attempts - 1),
            "latency_s": round(latency, 4),
        }
        if response is not None:
            fields.update(
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
                finish_reason=response.finish_reason,
            )
        level = logging.INFO if error is None else logging.WARNING
        logger.log(level, "gateway call %s: %s", self.model, fields["outcome"], extra=fields)
        if self._span is not None:
            _end_span(self._span, fields, response, error)


def _cancelled(error: BaseException) -> bool:
    return not isinstance(error, Exception)  # CancelledError, KeyboardInterrupt, GeneratorExit


# -- OpenTelemetry ------------------------------------------------------------------------------


def _start_span(model: str, endpoint: str, settings: ModelSettings, scope: Mapping[str, Any]) -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider, _, model_id = model.partition(":")
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider or "unknown",
        "gen_ai.request.model": model_id or model,
    }
    url = urlparse(endpoint)
    if url.hostname:
        attributes["server.address"] = url.hostname
        attributes["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    for key, value in (
        ("gen_ai.request.temperature", settings.temperature),
        ("gen_ai.request.top_p", settings.top_p),
        ("gen_ai.request.max_tokens", settings.max_tokens),
        ("gen_ai.request.seed", settings.seed),
        ("gen_ai.request.stop_sequences", settings.stop),
    ):
        if value is not None:
            attributes[key] = value
    for key, value in scope.items():
        if isinstance(value, str | int | float | bool):
            attributes[f"pymanus.{key}"] = value
    tracer = trace.get_tracer("pymanus.models")
    return tracer.start_span(f"chat {model_id or model}", kind=trace.SpanKind.CLIENT, attributes=attributes)


def _end_span(
    span: Any, fields: Mapping[str, Any], response: ModelResponse | None, error: BaseException | None
) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("pymanus.attempts", fields["attempts"])
    if response is not None:
        if response.model_name:
            span.set_attribute("gen_ai.response.model", response.model_name)
        if response.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
        span.set_attribute("gen_ai.usage.input_tokens", response.usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", response.usage.completion_tokens)
    if error is not None:
        status = fields.get("status")
        span.set_attribute("error.type", str(status) if status else type(error).__name__)
        if status:
            span.set_attribute("http.response.status_code", status)
        span.set_status(Status(StatusCode.ERROR, str(error)[:500]))
    span.end()
