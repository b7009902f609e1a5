"""Models behind any OpenAI-compatible chat-completions endpoint.

OpenAI, DeepSeek, Qwen/DashScope, GLM, Moonshot, vLLM, Ollama and a llama.cpp server all
speak this protocol, each with its own quirks; this module absorbs them, so the rest of
PyManus sees one :class:`~pymanus.models.base.Model`.

Cost per call matters (thousands of concurrent runs), so requests go through the SDK's
generic ``client.request(object, options)`` (what ``client.post(..., cast_to=object)``
calls) with a body we encode ourselves: the SDK still does auth, timeouts, optional
retries, SSE decoding and error statuses, but hands back the decoded JSON instead of
building its pydantic response objects, and skips its request parameter transforms. The
transport is aiohttp (``DefaultAioHttpClient``). Measured with
``benchmarks/gateway_cost.py`` (100 in flight): about half the CPU per call of
``chat.completions.create`` and of ``with_raw_response.create``.

Per call, less is built than ``client.post`` would build:

* the SDK's request options (``FinalRequestOptions``, from its private ``_models``) are
  made once per model and copied with each call's body; ``client.post`` makes them anew
  each time, deep-copying their defaults;
* the URL is passed whole, so the SDK parses it once instead of joining it onto its base;
* the SDK's platform headers (``X-Stainless-OS``, ``-Arch``, ``-Runtime``...) are not
  sent. They describe the user's machine to every endpoint, OpenAI or not, and no endpoint
  needs them; each header is copied and re-encoded several times per request on its way
  through httpx and aiohttp.

With 1000 runs in flight, everything a request allocates lives until its answer, long
enough to reach the garbage collector's oldest generation, so each object saved also
saves collector work. Together these cut the CPU of an agent step at 1000 concurrent
runs by about a quarter (``benchmarks/overhead.py``).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import time
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

import aiohttp
import openai
import pydantic_core
from openai import AsyncStream
from openai._models import FinalRequestOptions
from openai._streaming import ServerSentEvent

from pymanus.errors import ConfigError, ContextOverflowError, ModelAuthError, ModelError, ModelOutputError
from pymanus.messages import Message, ToolCall, Usage
from pymanus.models.base import (
    FinishReason,
    Model,
    ModelResponse,
    ModelSettings,
    StreamItem,
    TextChunk,
    ToolDefinition,
    callable_tools,
)
from pymanus.models.openai_stream import StreamState
from pymanus.models.textcalls import extract_text_tool_calls, new_call_id, recover_json_object

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "sk-no-key"
"""The key sent to a custom endpoint when none is configured (local servers ignore it)."""

IMAGE_OMITTED = "[image omitted: this model does not accept images]"

PLATFORM_HEADERS = (
    "X-Stainless-Lang",
    "X-Stainless-Package-Version",
    "X-Stainless-OS",
    "X-Stainless-Arch",
    "X-Stainless-Runtime",
    "X-Stainless-Runtime-Version",
    "X-Stainless-Async",
)
"""The SDK's description of the client machine, left out of every request (see above)."""

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "eos": "stop",
    "eos_token": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "model_length": "length",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "sensitive": "content_filter",
    "error": "error",
    "abort": "error",
}

_CONNECT_TIMEOUTS: tuple[type[BaseException], ...] = tuple(
    t for t in (getattr(aiohttp, "ConnectionTimeoutError", None),) if t is not None
)
"""What the aiohttp transport raises when a connection is not made in time (aiohttp >= 3.10)."""

# How providers word "the prompt does not fit" (OpenAI, vLLM, llama.cpp, DeepSeek, Moonshot,
# DashScope, GLM, Gemini, Anthropic-compatible gateways).
_CONTEXT_WORDING = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too many tokens|prompt is too long|input (is )?too long"
    r"|exceed(s|ed)? (the )?(model |maximum |max |available )*(token limit|context|length|number of tokens)"
    r"|token limit|range of input length|prompt exceeds max length|input length",
    re.IGNORECASE,
)


class OpenAIModel(Model):
    """A model served by an OpenAI-compatible chat-completions endpoint.

    Args:
        model_name: the provider's model id (``gpt-4o-mini``, ``deepseek-chat``, ``qwen2.5:7b``...).
        base_url: the endpoint, e.g. ``http://127.0.0.1:8080/v1``; else ``OPENAI_BASE_URL``,
            else OpenAI's own API.
        api_key: else ``OPENAI_API_KEY``. Without either, a custom ``base_url`` gets a
            placeholder key (local servers need none) and OpenAI's API is a
            :class:`~pymanus.errors.ConfigError`.
        context_window: tokens the endpoint accepts, if known.
        vision: whether image parts are sent; when ``False`` they become a short note.
        request_timeout: seconds to wait for each read of the response (the whole answer
            when not streaming; the gap between chunks when streaming).
        connect_timeout: seconds to wait for a connection.
        max_retries: retries done by the SDK itself; 0 because PyManus's resilience layer
            (:mod:`pymanus.models.resilience`) retries, with its own rules, budget and
            breaker; both at once would multiply the attempts.
        send_reasoning: send earlier assistant ``reasoning`` back as ``reasoning_content``.
            Off by default: OpenAI and DeepSeek's reasoner reject it; turn it on for
            providers that want it back (DeepSeek thinking mode with tool calls).
    """

    def __init__(
        self,
        model_name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        context_window: int | None = None,
        vision: bool = False,
        request_timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_retries: int = 0,
        send_reasoning: bool = False,
    ) -> None:
        if not model_name or not model_name.strip():
            raise ConfigError("openai: model name is empty (use openai:<model>, e.g. openai:gpt-4o-mini)")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None:
            if base_url is None:
                raise ConfigError(
                    "OPENAI_API_KEY is not set: export it, put it in the config, or set a base_url "
                    "(OPENAI_BASE_URL) for a local server that needs no key"
                )
            api_key = NO_KEY
        self.model_name = model_name.strip()
        self.name = f"openai:{self.model_name}"
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        # The SDK's options for every call, built once (see the module docstring).
        self._post = FinalRequestOptions.construct(method="post", url=f"{self.base_url}/chat/completions")
        self.context_window = context_window
        self.vision = vision
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        self.send_reasoning = send_reasoning
        self._api_key = api_key
        self._host = urlparse(self.base_url).netloc or self.base_url
        # OpenAI's newer models reject max_tokens; most other servers only know max_tokens.
        self._max_tokens_key = "max_completion_tokens" if self._host == "api.openai.com" else "max_tokens"
        # One SDK client per event loop: its aiohttp session belongs to the loop it was made in.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model_name!r}, base_url={self.base_url!r})"

    # -- the Model protocol ----------------------------------------------------------------
    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """Send the conversation and return the model's next message."""
        client = self._client()
        # Only the encoded bytes wait on the network: the body's dicts are freed before the await.
        tools = callable_tools(tools, settings)
        content = _encode(self._body(messages, tools, settings))
        try:
            data = await client.request(object, self._options(content, settings))
        except openai.APIError as exc:
            raise self._error(exc, settings) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise ModelOutputError(f"{self.name}: unreadable response from {self._host}: {exc}") from exc
        return self._response(data, tools)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """Yield text as it arrives, then the whole response (tool calls assembled)."""
        client = self._client()
        tools = callable_tools(tools, settings)
        content = _encode(self._body(messages, tools, settings, stream=True))
        state = StreamState()
        try:
            events = await client.request(
                object, self._options(content, settings), stream=True, stream_cls=_EventStream
            )
            async with events:
                async for chunk in events:
                    text = state.feed(chunk)
                    if state.error is not None:
                        raise self._status_error(None, state.error)
                    if text:
                        yield TextChunk(text=text)
        except openai.APIError as exc:
            raise self._error(exc, settings, streamed=state.chunks) from exc
        except ValueError as exc:  # an SSE event whose data is not JSON
            raise ModelOutputError(f"{self.name}: unreadable stream from {self._host}: {exc}") from exc
        if not state.chunks:
            raise ModelError(f"{self.name}: the stream from {self._host} ended without any data", retryable=True)
        if state.finish is None and not events.done:
            # A closed connection looks like a clean end to the SDK; servers end a stream with
            # ``[DONE]``, a choice with its finish_reason (some omit one or the other, not both).
            raise ModelError(
                f"{self.name}: the stream from {self._host} was cut after {state.chunks} chunks, before it finished",
                retryable=True,
            )
        yield self._response(state.result(), tools)

    async def aclose(self) -> None:
        """Close the HTTP connections of this event loop's client."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()
        # Clients of other loops cannot be closed from here; forget the dead ones.
        for other in [lp for lp in self._clients if lp.is_closed()]:
            self._clients.pop(other, None)

    # -- request ---------------------------------------------------------------------------
    def _client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self._timeout(self.request_timeout),
                max_retries=self.max_retries,
                http_client=openai.DefaultAioHttpClient(timeout=self._timeout(self.request_timeout)),
                # The SDK drops Omit() values from these as from per-request headers; its hint says str.
                default_headers=dict.fromkeys(PLATFORM_HEADERS, openai.Omit()),  # type: ignore[arg-type]
            )
            self._clients[loop] = client
        return client

    def _options(self, content: bytes, settings: ModelSettings) -> FinalRequestOptions:
        """This call's request options: the model's own, with the body and any timeout.

        A shallow copy: the SDK assigns to its own copies of the options and only reads
        their nested values (query params, security flags), so sharing those is safe.
        """
        update: dict[str, Any] = {"content": content}
        if settings.timeout is not None:
            update["timeout"] = self._timeout(settings.timeout)
        return self._post.model_copy(update=update)

    def _timeout(self, read: float) -> openai.Timeout:
        # Writes and waits for a pooled connection get the read timeout: a request body is
        # sent in one go, and a full pool is the caller's concurrency, not the endpoint.
        return openai.Timeout(read, connect=min(self.connect_timeout, read))

    def _body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
        *,
        stream: bool = False,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": wire_messages(messages, vision=self.vision, send_reasoning=self.send_reasoning),
        }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = [tool.to_wire() for tool in tools]
            if settings.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = settings.parallel_tool_calls
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.max_tokens is not None:
            body[self._max_tokens_key] = settings.max_tokens
        if settings.seed is not None:
            body["seed"] = settings.seed
        if settings.stop:
            body["stop"] = settings.stop
        return body

    # -- response --------------------------------------------------------------------------
    def _response(self, data: object, tools: Sequence[ToolDefinition]) -> ModelResponse:
        if not isinstance(data, dict):
            raise ModelOutputError(f"{self.name}: expected a JSON object from {self._host}, got {_preview(data)}")
        if data.get("error"):  # some gateways answer 200 with an error body
            raise self._status_error(None, data["error"])
        choices = data.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise ModelOutputError(f"{self.name}: the response from {self._host} has no choices: {_preview(data)}")
        choice = choices[0]
        wire = choice.get("message") or {}
        text = _text_of(wire.get("content"))
        reasoning = wire.get("reasoning_content") or wire.get("reasoning")
        calls = [_tool_call(c) for c in wire.get("tool_calls") or () if isinstance(c, dict)]
        raw_finish = choice.get("finish_reason")
        if not calls and tools and text:
            text, calls = extract_text_tool_calls(text, [t.name for t in tools])
        message = Message(
            role="assistant",
            content=text if text or not calls else None,
            tool_calls=calls,
            reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
        )
        return ModelResponse(
            message=message,
            finish_reason=_finish_reason(raw_finish, bool(calls)),
            usage=_usage(data.get("usage")),
            model_name=data.get("model") or self.model_name,
        )

    # -- errors ----------------------------------------------------------------------------
    def _error(self, exc: openai.APIError, settings: ModelSettings, *, streamed: int = 0) -> ModelError:
        if isinstance(exc, openai.APIConnectionError):
            causes = _causes(exc)
            # The SDK's aiohttp transport reports any failed connection (refused, dropped) as a
            # timeout: only a TimeoutError among the causes says that time ran out.
            if any(isinstance(e, TimeoutError) for e in causes):
                connect = isinstance(next(e for e in causes if isinstance(e, TimeoutError)), _CONNECT_TIMEOUTS)
                what = "connecting to" if connect else "request to"
                timeout = settings.timeout if settings.timeout is not None else self.request_timeout
                timeout = min(timeout, self.connect_timeout) if connect else timeout
                return ModelError(f"{self.name}: {what} {self._host} timed out after {timeout:g}s", retryable=True)
            refused = next((e for e in causes if isinstance(e, OSError)), None)
            # The transport's own exception says what happened; the httpx ones wrapping it do not.
            reason = refused or next((e for e in causes if not type(e).__module__.startswith("httpx")), None)
            detail = f": {' '.join(str(reason).split())}" if reason else ""
            if streamed:
                return ModelError(
                    f"{self.name}: the stream from {self._host} broke off after {streamed} chunks{detail}",
                    retryable=True,
                )
            if refused is not None:
                return ModelError(f"{self.name}: cannot connect to {self.base_url}{detail}", retryable=True)
            return ModelError(f"{self.name}: the connection to {self._host} failed{detail}", retryable=True)
        if isinstance(exc, openai.APIResponseValidationError):
            return ModelOutputError(f"{self.name}: invalid response from {self._host}: {exc.message}")
        if isinstance(exc, openai.APIStatusError):
            return self._status_error(exc.status_code, exc.body, fallback=exc.message, headers=exc.response.headers)
        # An error event inside a stream: usually the server gave up mid-answer.
        return self._status_error(None, exc.body, fallback=exc.message)

    def _status_error(
        self, status: int | None, body: object, fallback: str = "", headers: Mapping[str, str] | None = None
    ) -> ModelError:
        detail = _error_text(body) or fallback or "no details"
        where = f"HTTP {status} from {self._host}" if status else f"error from {self._host}"
        message = f"{self.name}: {where}: {detail}"
        if status in (401, 403):
            return ModelAuthError(message, status=status)
        if status == 413 or (status in (400, None) and _CONTEXT_WORDING.search(f"{detail} {_error_code(body)}")):
            return ContextOverflowError(message, status=status)
        if status is None:
            return ModelError(message, retryable=True)
        retryable = status in (408, 429) or status >= 500
        wait = retry_after(headers) if retryable and headers is not None else None
        return ModelError(message, status=status, retryable=retryable, retry_after=wait)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait, in seconds, an answer's ``retry-after-ms`` or ``Retry-After`` header asks for.

    ``Retry-After`` is seconds or an HTTP date; ``retry-after-ms`` (OpenAI's) is milliseconds.
    ``None`` when neither is there or readable.
    """
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# -- wire helpers ------------------------------------------------------------------------------


def wire_messages(messages: Sequence[Message], *, vision: bool, send_reasoning: bool = False) -> list[dict[str, Any]]:
    """The ``messages`` of a request, adapted to what chat-completions servers accept.

    Beyond :meth:`Message.to_wire`: only user messages keep a list of parts (others are
    sent as text, which every server accepts); images a tool returned go in a user message
    after the run of tool results (providers allow images only from the user); without
    ``vision`` each image becomes a short note; ``reasoning_content`` is dropped unless
    ``send_reasoning``.
    """
    out: list[dict[str, Any]] = []
    tool_images: list[dict[str, Any]] = []
    for message in messages:
        if tool_images and message.role != "tool":
            out.append({"role": "user", "content": tool_images})
            tool_images = []
        wire = message.to_wire()
        if not send_reasoning:
            wire.pop("reasoning_content", None)
        if isinstance(message.content, list):
            parts: list[dict[str, Any]] = wire["content"]
            has_images = any(p["type"] == "image_url" for p in parts)
            if message.role == "user":
                if has_images and not vision:
                    omitted = {"type": "text", "text": IMAGE_OMITTED}
                    wire["content"] = [p if p["type"] == "text" else omitted for p in parts]
            else:
                texts = [p["text"] if p["type"] == "text" else IMAGE_OMITTED for p in parts]
                if has_images and vision and message.role == "tool":
                    texts = [p["text"] for p in parts if p["type"] == "text"] or ["(image attached below)"]
                    tool_images.append({"type": "text", "text": f"Image(s) returned by tool {message.name or ''}:"})
                    tool_images.extend(p for p in parts if p["type"] == "image_url")
                wire["content"] = "\n".join(texts)
        out.append(wire)
    if tool_images:
        out.append({"role": "user", "content": tool_images})
    return out


def _encode(body: dict[str, Any]) -> bytes:
    # Encoded here rather than handed to the SDK as ``body``: measurably cheaper per call.
    # Compact UTF-8 JSON, as json.dumps(ensure_ascii=False) gives, in a third of its time.
    return pydantic_core.to_json(body)


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a few providers answer with content parts
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _arguments(value: object) -> str:
    if isinstance(value, str):
        # Arguments wrapped in prose or a code fence: keep the JSON object inside, if any.
        return recover_json_object(value) or "{}"
    if value is None:
        return "{}"
    return json.dumps(value, ensure_ascii=False)  # some servers send an object


def _tool_call(wire: dict[str, Any]) -> ToolCall:
    function = wire.get("function") or {}
    return ToolCall(
        id=wire.get("id") or new_call_id(),
        name=function.get("name") or "",
        arguments=_arguments(function.get("arguments")),
    )


def _finish_reason(raw: object, has_calls: bool) -> FinishReason:
    reason = _FINISH_REASONS.get(raw) if isinstance(raw, str) else None
    if has_calls:
        # Several servers say "stop" with tool calls; "length" means they may be cut short.
        return "length" if reason == "length" else "tool_calls"
    if reason is None or reason == "tool_calls":
        return "stop"
    return reason


def _usage(wire: object) -> Usage:
    if not isinstance(wire, dict):
        return Usage(requests=1)
    return Usage(
        prompt_tokens=int(wire.get("prompt_tokens") or wire.get("input_tokens") or 0),
        completion_tokens=int(wire.get("completion_tokens") or wire.get("output_tokens") or 0),
        requests=1,
    )


def _error_text(body: object) -> str:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message") or inner.get("msg") or inner.get("detail")
            if isinstance(message, str) and message:
                return message
            return _preview(inner)
        if isinstance(inner, str):
            return inner
    if isinstance(body, str):
        return _preview(body)
    return "" if body is None else _preview(body)


def _error_code(body: object) -> str:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return f"{inner.get('code') or ''} {inner.get('type') or ''}"
    return ""


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(chain) < 10:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


def _preview(value: object, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)[:limit]
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _EventStream(AsyncStream[object]):
    """The SDK's stream of decoded events, noting whether the server's ``[DONE]`` came."""

    done = False

    async def _iter_events(self) -> AsyncIterator[ServerSentEvent]:
        async for event in super()._iter_events():
            if event.data.startswith("[DONE]"):
                self.done = True
            yield event
