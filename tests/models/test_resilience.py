"""The resilient gateway against a real chat-completions server that misbehaves on purpose."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from helpers.chat_server import (
    ChatServer,
    Cut,
    Delay,
    Drop,
    completion,
    context_overflow,
    error,
    rate_limited,
    tool_call,
)
from helpers.openai_cases import HISTORY, SETTINGS, TOOLS
from pymanus.errors import CircuitOpenError, ContextOverflowError, ModelAuthError, ModelError
from pymanus.messages import Message
from pymanus.models.base import Model, ModelResponse, ModelSettings, TextChunk
from pymanus.models.openai import OpenAIModel
from pymanus.models.resilience import CircuitBreaker, ResilientModel, RetryPolicy, ShownText

FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.005)


class Clock:
    """A clock tests move by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Sleeps:
    """Records the waits asked for, without waiting them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)


@pytest.fixture
async def make(chat_server: ChatServer) -> AsyncIterator[Callable[..., ResilientModel]]:
    """Build ResilientModels over OpenAIModels pointed at the test's server (closed at the end)."""
    made: list[Model] = []

    def build(*, server: ChatServer = chat_server, read_timeout: float = 5.0, **options: Any) -> ResilientModel:
        inner = OpenAIModel("test-model", base_url=server.url, api_key="sk-test", request_timeout=read_timeout)
        options.setdefault("policy", FAST)
        model = ResilientModel(inner, **options)
        made.append(model)
        return model

    yield build
    for model in made:
        await model.aclose()


async def ask(model: Model, *, stream: bool, messages: list[Message] = HISTORY) -> tuple[str, ModelResponse]:
    """One call, plain or streamed; the streamed text and the response."""
    if not stream:
        return "", await model.request(messages, TOOLS, SETTINGS)
    text, final = "", None
    async for item in model.stream(messages, TOOLS, SETTINGS):
        if isinstance(item, TextChunk):
            text += item.text
        else:
            final = item
    assert final is not None
    return text, final


def same_conversation(server: ChatServer) -> None:
    """Every request the server received carried the same conversation and tools."""
    first = server.requests[0]
    for later in server.requests[1:]:
        assert later["messages"] == first["messages"]
        assert later["tools"] == first["tools"]


# -- transient faults are retried -----------------------------------------------------------------

TRANSIENT = {
    "429": rate_limited(0),
    "500": error(500, "The server had an error while processing your request."),
    "503": error(503, "overloaded"),
    "408": error(408, "request timeout"),
    "hang": Delay(0.6, completion("too late")),
    "drop": Drop(),
    "cut": Cut(completion("The answer is forty-two, as computed."), after=4),
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fault", list(TRANSIENT))
async def test_a_transient_fault_is_retried_with_the_same_conversation(
    make: Callable[..., ResilientModel], chat_server: ChatServer, fault: str, stream: bool
) -> None:
    sleeps = Sleeps()
    model = make(read_timeout=0.25, sleep=sleeps)
    chat_server.push(TRANSIENT[fault], completion("The answer is forty-two, as computed."))
    text, response = await ask(model, stream=stream)
    assert response.message.content == "The answer is forty-two, as computed."
    if stream:  # text cut off mid-way is not shown twice
        assert text == "The answer is forty-two, as computed."
    assert len(chat_server.requests) == 2
    same_conversation(chat_server)
    assert len(sleeps.waits) == 1


async def test_several_faults_in_a_row_then_success(
    make: Callable[..., ResilientModel], chat_server: ChatServer
) -> None:
    model = make(read_timeout=0.25)
    chat_server.push(
        rate_limited(0),
        error(502, "bad gateway"),
        Cut(completion("x" * 40), after=3),
        completion(tool_calls=[tool_call("add", {"a": 2}, id="call_1")]),
    )
    _, response = await ask(model, stream=True)
    assert [(c.id, c.name, c.arguments) for c in response.message.tool_calls] == [("call_1", "add", '{"a": 2}')]
    assert len(chat_server.requests) == 4
    same_conversation(chat_server)


async def test_retry_after_is_honoured(make: Callable[..., ResilientModel], chat_server: ChatServer) -> None:
    sleeps = Sleeps()
    model = make(sleep=sleeps)
    chat_server.push(rate_limited(7), error(503, "busy", headers={"retry-after-ms": "1500"}), completion("ok"))
    await ask(model, stream=False)
    assert sleeps.waits == [7.0, 1.5]


async def test_retry_after_is_really_waited(make: Callable[..., ResilientModel], chat_server: ChatServer) -> None:
    model = make()
    chat_server.push(error(429, "slow down", headers={"retry-after-ms": "200"}), completion("ok"))
    await ask(model, stream=False)
    assert chat_server.times[1] - chat_server.times[0] >= 0.19


async def test_a_retry_after_past_the_limit_fails_at_once(
    make: Callable[..., ResilientModel], chat_server: ChatServer
) -> None:
    model = make(policy=RetryPolicy(max_retries=3, max_retry_after=30))
    chat_server.push(rate_limited(120), completion("never sent"))
    with pytest.raises(ModelError, match="HTTP 429") as caught:
        await ask(model, stream=False)
    assert caught.value.retry_after == 120
    assert len(chat_server.requests) == 1


async def test_backoff_grows_exponentially_with_jitter(
    make: Callable[..., ResilientModel], chat_server: ChatServer
) -> None:
    sleeps = Sleeps()
    model = make(policy=RetryPolicy(max_retries=4, base_delay=1.0, max_delay=3.0), sleep=sleeps)
    chat_server.push(*[error(500, "down")] * 5)
    with pytest.raises(ModelError, match="HTTP 500"):
        await ask(model, stream=False)
    assert len(chat_server.requests) == 5  # the first attempt and 4 retries
    caps = [1.0, 2.0, 3.0, 3.0]
    assert all(0 <= wait <= cap for wait, cap in zip(sleeps.waits, caps, strict=True))


async def test_retries_exhausted_raise_the_last_error(
    make: Callable[..., ResilientModel], chat_server: ChatServer
) -> None:
    model = make()
    chat_server.push(error(500, "one"), error(500, "two"), error(500, "three"), error(503, "four"))
    with pytest.raises(ModelError, match=r"HTTP 503.*four") as caught:
        await ask(model, stream=True)
    assert caught.value.retryable
    assert len(chat_server.requests) == 4


async def test_total_timeout_bounds_the_call_with_its_retries(
    make: Callable[..., ResilientModel], chat_server: ChatServer
) -> None:
    model = make(read_timeout=5.0, total_timeout=0.3)
    chat_server.push(Delay(1.0, completion("late")))
    started = asyncio.get_running_loop().time()
    with pytest.raises(ModelError, match=r"total timeout of 0\.3s"):
        await ask(model, stream=True)
    assert asyncio.get_running_loop().time() - started < 1.5


# -- what is never retried -------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_bad_key_fails_fast_with_one_request(make: Callable[..., ResilientModel], stream: bool) -> None:
    async with ChatServer(api_key="sk-right") as server:
        model = make(server=server)
        with pytest.raises(ModelAuthError, match=r"HTTP 401.*Incorrect API key") as caught:
            await ask(model, stream=stream)
        assert caught.value.status == 401
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (error(400, "Invalid value for 'temperature'"), ModelError),
        (error(403, "Your region is not supported"), ModelAuthError),
        (error(404, "The model `nope` does not exist"), ModelError),
        (context_overflow(4096, 5000), ContextOverflowError),
    ],
)
async def test_client_errors_are_not_retried(
    make: Callable[..., ResilientModel], chat_server: ChatServer, reply: Any, kind: type[ModelError]
) -> None:
    model = make()
    chat_server.push(reply, completion("never sent"))
    with pytest.raises(kind) as caught:
        await ask(model, stream=False)
    assert type(caught.value) is kind
    assert len(chat_server.requests) == 1
    assert model.breaker.state == "closed"


# -- the circuit breaker ---------------------------------------------------------------------------


async def test_breaker_opens_after_consecutive_failures_and_probes_later(
    make: Callable[..., ResilientModel], chat_server: ChatServer
) -> None:
    clock = Clock()
    model = make(policy=RetryPolicy(max_retries=0), breaker=CircuitBreaker(3, 10.0, clock=clock))
    chat_server.push(*[error(500, "down")] * 3)
    for _ in range(3):
        with pytest.raises(ModelError, match="HTTP 500"):
            await ask(model, stream=False)
    assert model.breaker.state == "open"
    with pytest.raises(CircuitOpenError, match="circuit open after 3 failures"):
        await ask(model, stream=False)
    assert len(chat_server.requests) == 3  # refused without a request

    clock.now += 10.0  # half-open: one probe goes; it fails, so the circuit opens again
    chat_server.push(error(502, "still down"))
    with pytest.raises(ModelError, match="HTTP 502"):
        await ask(model, stream=False)
    assert model.breaker.state == "open"
    with pytest.raises(CircuitOpenError):
        await ask(model, stream=False)

    clock.now += 10.0  # the next probe succeeds: closed
    chat_server.push(completion("back"))
    _, response = await ask(model, stream=True)
    assert response.message.content == "back"
    assert model.breaker.state == "closed"
    assert len(chat_server.requests) == 5


async def test_breaker_stops_the_retries_of_a_call(
    make: Callable[..., ResilientModel], chat_server: ChatServer
) -> None:
    model = make(policy=RetryPolicy(max_retries=10, base_delay=0.001), breaker=CircuitBreaker(2, 60.0))
    chat_server.push(*[error(500, "down")] * 10)
    with pytest.raises(ModelError, match="HTTP 500"):
        await ask(model, stream=False)
    assert len(chat_server.requests) == 2


def test_half_open_lets_one_probe_through_at_a_time() -> None:
    clock = Clock()
    breaker = CircuitBreaker(1, 5.0, clock=clock)
    breaker.failed()
    assert not breaker.allow()
    assert breaker.retry_in == 5.0
    clock.now += 5.0
    assert breaker.allow()  # the probe
    assert not breaker.allow()  # others wait for its verdict
    breaker.released()  # the probe ended without one (cancelled)
    assert breaker.allow()
    breaker.succeeded()
    assert breaker.state == "closed" and breaker.allow() and breaker.allow()


# -- streams ---------------------------------------------------------------------------------------


def test_shown_text_is_not_repeated_by_a_retry() -> None:
    shown = ShownText()
    assert [shown.new(t) for t in ("The ", "answ")] == ["The ", "answ"]
    shown.restart()
    assert [shown.new(t) for t in ("Th", "e an", "swer", " is 42")] == ["", "", "er", " is 42"]
    shown.restart()
    assert [shown.new(t) for t in ("Other", " text")] == ["Other", " text"]  # departs: passed on whole


async def test_cancelling_a_stream_leaves_the_breaker_without_verdict() -> None:
    async def endless() -> AsyncIterator[str]:
        while True:
            yield "x"
            await asyncio.sleep(0)

    breaker = CircuitBreaker(1, 60.0)
    model = ResilientModel(_Streaming(endless), breaker=breaker)
    stream = model.stream(HISTORY, TOOLS, SETTINGS)
    assert isinstance(await anext(stream), TextChunk)
    await stream.aclose()  # type: ignore[attr-defined]
    assert breaker.state == "closed" and breaker.allow()


class _Streaming(Model):
    """A model whose stream is ``source()``'s text, never a response."""

    def __init__(self, source: Callable[[], AsyncIterator[str]]) -> None:
        self.source = source

    async def request(self, messages: Any, tools: Any, settings: ModelSettings) -> ModelResponse:
        raise NotImplementedError

    async def stream(self, messages: Any, tools: Any, settings: ModelSettings) -> AsyncIterator[Any]:
        async for text in self.source():
            yield TextChunk(text=text)


# -- telemetry -------------------------------------------------------------------------------------


async def test_one_record_per_call_with_what_the_gateway_knows(
    make: Callable[..., ResilientModel], chat_server: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    from pymanus.models.telemetry import call_scope

    model = make()
    chat_server.push(error(500, "down"), completion("ok", usage=(30, 7)))
    with caplog.at_level(logging.INFO, logger="pymanus.models"), call_scope(run_id="run-1", step=3):
        await ask(model, stream=True)
    calls = [r for r in caplog.records if getattr(r, "event", None) == "model_call"]
    retries = [r for r in caplog.records if getattr(r, "event", None) == "model_retry"]
    assert len(calls) == 1 and len(retries) == 1
    record: Any = calls[0]
    assert (record.run_id, record.step, record.model, record.endpoint) == ("run-1", 3, model.name, chat_server.url)
    assert (record.outcome, record.status, record.attempts, record.retries) == ("ok", 200, 2, 1)
    assert (record.prompt_tokens, record.completion_tokens, record.finish_reason) == (30, 7, "stop")
    assert record.latency_s > 0 and record.stream is True
    assert (retries[0].status, retries[0].attempt, retries[0].run_id) == (500, 1, "run-1")


async def test_a_failed_call_is_one_warning_record(
    make: Callable[..., ResilientModel], caplog: pytest.LogCaptureFixture
) -> None:
    async with ChatServer(api_key="sk-right") as server:
        model = make(server=server)
        with caplog.at_level(logging.INFO, logger="pymanus.models"), pytest.raises(ModelAuthError):
            await ask(model, stream=False)
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "model_call"]
    assert record.levelno == logging.WARNING
    assert (record.outcome, record.error_type, record.status, record.attempts) == (  # type: ignore[attr-defined]
        "error",
        "ModelAuthError",
        401,
        1,
    )


async def test_without_opentelemetry_calls_are_only_logged(
    make: Callable[..., ResilientModel],
    chat_server: ChatServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import opentelemetry now fails
    model = make()
    chat_server.push(completion("ok"))
    with caplog.at_level(logging.INFO, logger="pymanus.models"):
        await ask(model, stream=False)
    assert [getattr(r, "outcome", None) for r in caplog.records if getattr(r, "event", None) == "model_call"] == ["ok"]
