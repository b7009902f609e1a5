"""OpenTelemetry spans of gateway calls, following the GenAI semantic conventions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from helpers.chat_server import ChatServer, completion, error
from helpers.openai_cases import HISTORY, TOOLS
from pymanus.errors import ModelAuthError
from pymanus.models.base import ModelSettings
from pymanus.models.openai import OpenAIModel
from pymanus.models.resilience import ResilientModel, RetryPolicy
from pymanus.models.telemetry import call_scope

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra's SDK is not installed")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (set once) exporting to memory."""
    memory = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory


@pytest.fixture
async def model(chat_server: ChatServer, exporter: InMemorySpanExporter) -> AsyncIterator[ResilientModel]:
    exporter.clear()
    inner = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test")
    m = ResilientModel(inner, policy=RetryPolicy(max_retries=2, base_delay=0.001))
    yield m
    await m.aclose()


async def test_a_call_is_one_client_span_with_gen_ai_attributes(
    model: ResilientModel, chat_server: ChatServer, exporter: InMemorySpanExporter
) -> None:
    chat_server.push(error(500, "down"), completion("ok", usage=(12, 3)))
    settings = ModelSettings(temperature=0.2, max_tokens=64)
    with call_scope(run_id="r1", step=2):
        await model.request(HISTORY, TOOLS, settings)
    (span,) = exporter.get_finished_spans()
    attributes: dict[str, Any] = dict(span.attributes or {})
    assert span.name == "chat test-model"
    assert span.kind == trace.SpanKind.CLIENT
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "test-model"
    assert (attributes["gen_ai.request.temperature"], attributes["gen_ai.request.max_tokens"]) == (0.2, 64)
    assert attributes["server.address"] == "127.0.0.1"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (12, 3)
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert (attributes["pymanus.attempts"], attributes["pymanus.run_id"], attributes["pymanus.step"]) == (2, "r1", 2)
    assert span.status.is_ok


async def test_a_failed_call_is_an_error_span(
    exporter: InMemorySpanExporter, chat_server: ChatServer, model: ResilientModel
) -> None:
    async with ChatServer(api_key="sk-right") as server:
        failing = ResilientModel(OpenAIModel("m", base_url=server.url, api_key="sk-wrong"))
        with pytest.raises(ModelAuthError):
            await failing.request(HISTORY, TOOLS, ModelSettings())
        await failing.aclose()
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["error.type"] == "401"
    assert not span.status.is_ok
