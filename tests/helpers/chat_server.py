"""A real chat-completions HTTP server on loopback, scripted per test.

``ChatServer`` speaks ``POST /v1/chat/completions`` like an OpenAI-compatible provider,
plain JSON or SSE streaming (``data: {...}`` lines, then ``data: [DONE]``). What it answers
comes from a queue of replies (:meth:`ChatServer.push`) or a function of the request
(:meth:`ChatServer.respond_with`); every request body is recorded in ``.requests``.

With ``validate=True`` it rejects, with HTTP 400 and OpenAI's error JSON, the histories real
providers reject: a tool message that does not answer a call of the immediately preceding
assistant message, calls left unanswered, images outside user messages, unknown roles.
With ``api_key=...`` it answers 401 to any other bearer token; with ``context_tokens=N`` it
answers 400 ``context_length_exceeded`` when the request is larger than about N tokens;
with ``max_prompt_tokens=N`` it counts the prompt's tokens as PyManus estimates them
(messages and tools, plus the ``max_tokens`` asked for) and answers that 400 above N.

Run it inside the test's event loop (``async with ChatServer() as server``) or in a
background thread with its own loop (``server.start()`` / ``server.stop()``), e.g. for a
``pymanus`` subprocess. ``server.url`` is the base URL to give a client (``.../v1``).

Reply builders: :func:`completion` (a whole answer; streamed automatically when the client
asks for a stream), :func:`tool_call`, :func:`error` (with headers, e.g. ``Retry-After``),
:class:`Chunks` (exact SSE chunks), :class:`Raw` (any status and body), :class:`Delay`
(answer late). Faults: :class:`Cut` (send part of an answer, then drop the connection),
:class:`Drop` (drop it without answering); :func:`rate_limited` (429 with ``Retry-After``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

# -- reply types --------------------------------------------------------------------------


@dataclass
class Chunks:
    """Stream exactly these chunk objects (each sent as one ``data:`` event), then ``[DONE]``.

    ``done=False`` omits the ``[DONE]`` marker.
    """

    chunks: list[dict[str, Any]] = field(default_factory=list)
    done: bool = True


@dataclass
class Raw:
    """Answer with any status, body and content type (for malformed or unusual replies)."""

    status: int = 200
    body: str | bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Delay:
    """Wait ``seconds`` before answering with ``then``."""

    seconds: float
    then: Reply | None = None


@dataclass
class ErrorReply:
    """An error answer in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The JSON body of the error."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


@dataclass
class Cut:
    """Send the first ``after`` streamed chunks of ``reply`` (or, to a plain request, the
    first ``after`` bytes of its JSON), then drop the connection: a stream cut mid-way."""

    reply: dict[str, Any]
    after: int = 2


@dataclass
class Drop:
    """Close the connection without answering (the client sees a connection error)."""


Reply = dict[str, Any] | Chunks | Raw | Delay | ErrorReply | Cut | Drop
Handler = Callable[[dict[str, Any]], "Reply | Awaitable[Reply]"]


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None) -> dict[str, Any]:
    """One tool call in the wire shape; ``arguments`` may be a dict (encoded) or raw text."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if id != "":
        call["id"] = id or f"call_{uuid.uuid4().hex[:12]}"
    return call


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    reasoning: str | None = None,
    reasoning_field: str = "reasoning_content",
    finish_reason: str | None = "auto",
    usage: tuple[int, int] | None = (10, 5),
    model: str | None = None,
) -> dict[str, Any]:
    """A whole chat completion (non-streamed shape).

    ``finish_reason="auto"`` picks ``tool_calls`` or ``stop``; ``usage=None`` omits usage;
    ``model=None`` echoes the requested model.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning is not None:
        message[reasoning_field] = reasoning
    if finish_reason == "auto":
        finish_reason = "tool_calls" if tool_calls else "stop"
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def error(
    status: int,
    message: str,
    *,
    type: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> ErrorReply:
    """An error reply; ``type`` defaults to what OpenAI sends for the status."""
    default_type = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status)
    if type is None:
        type = default_type or ("server_error" if status >= 500 else "invalid_request_error")
    return ErrorReply(status=status, message=message, type=type, code=code, headers=dict(headers or {}))


def rate_limited(retry_after: float | str = 1) -> ErrorReply:
    """The 429 a provider sends when its rate limit is hit, with ``Retry-After`` (seconds or a date)."""
    value = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
    return error(429, "Rate limit reached for requests. Please try again later.", headers={"Retry-After": value})


def context_overflow(limit: int = 4096, requested: int = 5000) -> ErrorReply:
    """The 400 OpenAI sends when a request does not fit the context window."""
    return ErrorReply(
        status=400,
        message=(
            f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
            f"{requested} tokens. Please reduce the length of the messages."
        ),
        code="context_length_exceeded",
        param="messages",
    )


def stream_chunks(body: dict[str, Any], *, include_usage: bool = False, piece: int = 4) -> list[dict[str, Any]]:
    """Turn a whole completion into the chunks a provider streams for it.

    Text and reasoning come in pieces of ``piece`` characters; each tool call's id, type and
    name arrive in its first delta only, its arguments split over several deltas; the last
    choice chunk carries ``finish_reason``; usage, when asked for, comes in a final chunk
    with no choices.
    """
    head = {"id": body.get("id", "chatcmpl-x"), "object": "chat.completion.chunk", "created": body.get("created", 0)}
    head["model"] = body.get("model")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    choice = body["choices"][0]
    message = choice.get("message") or {}
    out = [chunk({"role": "assistant", "content": ""})]
    for key in ("reasoning_content", "reasoning", "content"):
        text = message.get(key)
        if isinstance(text, str):
            out.extend(chunk({key: text[i : i + piece]}) for i in range(0, len(text), piece))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        args = function.get("arguments") or ""
        first: dict[str, Any] = {"index": index, "type": "function", "function": {"name": function.get("name")}}
        if call.get("id"):
            first["id"] = call["id"]
        first["function"]["arguments"] = args[:piece]
        out.append(chunk({"tool_calls": [first]}))
        for i in range(piece, len(args), piece):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i : i + piece]}}]}))
    out.append(chunk({}, choice.get("finish_reason")))
    if include_usage:
        out.append({**head, "choices": [], "usage": body.get("usage")})
    return out


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt tokens of a request body, as PyManus's calibrated estimate counts them."""
    from pymanus.context.tokens import estimate_messages_tokens, estimate_text_tokens
    from pymanus.messages import Message

    messages = [Message.from_wire(m) for m in body.get("messages") or []]
    tools = sum(estimate_text_tokens(json.dumps(t, separators=(",", ":"))) + 8 for t in body.get("tools") or [])
    return estimate_messages_tokens(messages) + tools


# -- validation of the conversation ---------------------------------------------------------

_ROLES = {"system", "user", "assistant", "tool", "developer"}


def validate_request(body: Any) -> ErrorReply | None:
    """The 400 a strict provider sends for this request body, or ``None`` when it is valid."""

    def bad(message: str, param: str | None = None) -> ErrorReply:
        return ErrorReply(status=400, message=message, param=param)

    if not isinstance(body, dict):
        return bad("We could not parse the JSON body of your request.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        return bad("you must provide a model parameter", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return bad("'messages' must contain at least one message.", "messages")
    pending: list[str] = []  # ids of the last assistant message's calls not yet answered
    answered_after: int | None = None  # index of the assistant message being answered
    for i, msg in enumerate(messages):
        where = f"messages.[{i}]"
        if not isinstance(msg, dict) or msg.get("role") not in _ROLES:
            return bad(f"Invalid value for '{where}.role'.", f"{where}.role")
        role = msg["role"]
        if role != "tool" and pending:
            return bad(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
                f"{where}.role",
            )
        if role != "tool":
            answered_after = None
        content = msg.get("content")
        if isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "image_url" and role != "user":
                    return bad(
                        f"Image URLs are only allowed for messages with role 'user', but this message with "
                        f"role '{role}' contains an image URL.",
                        f"{where}.content",
                    )
                if kind not in ("text", "image_url"):
                    return bad(f"Invalid content part type {kind!r}.", f"{where}.content")
        elif content is not None and not isinstance(content, str):
            return bad(f"Invalid type for '{where}.content'.", f"{where}.content")
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            if content is None and not calls:
                return bad(f"Invalid value for '{where}.content': expected a string, got null.", f"{where}.content")
            for j, call in enumerate(calls):
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(call.get("id"), str) or not call["id"]:
                    return bad(f"Missing required parameter: '{where}.tool_calls[{j}].id'.")
                if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
                    return bad(f"Invalid type for '{where}.tool_calls[{j}].function.arguments': expected a string.")
            pending = [c["id"] for c in calls]
            answered_after = i if calls else None
        elif role == "tool":
            call_id = msg.get("tool_call_id")
            if answered_after is None or call_id not in pending:
                return bad(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    f"{where}.role",
                )
            pending.remove(call_id)
    if pending:
        return bad(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
            "messages",
        )
    return None


# -- the server ------------------------------------------------------------------------------


class ChatServer:
    """A scripted chat-completions endpoint on ``127.0.0.1`` (a free port).

    Args:
        validate: reject invalid histories with HTTP 400, as real providers do.
        api_key: when set, answer 401 to requests without ``Authorization: Bearer <api_key>``.
        context_tokens: when set, answer 400 ``context_length_exceeded`` to requests whose
            JSON is longer than about ``context_tokens * 4`` characters.
        max_prompt_tokens: when set, answer that 400 to requests whose messages and tools,
            counted with :func:`prompt_tokens`, plus their ``max_tokens``, exceed it;
            ``.prompt_tokens`` records every request's count.
        piece: characters per streamed text delta.
    """

    def __init__(
        self,
        *,
        validate: bool = False,
        api_key: str | None = None,
        context_tokens: int | None = None,
        max_prompt_tokens: int | None = None,
        piece: int = 4,
    ) -> None:
        self.validate = validate
        self.api_key = api_key
        self.context_tokens = context_tokens
        self.max_prompt_tokens = max_prompt_tokens
        self.prompt_tokens: list[int] = []
        """With ``max_prompt_tokens``: the prompt tokens of every request, in order."""
        self.piece = piece
        self.requests: list[dict[str, Any]] = []
        """Every JSON body received, in order (including rejected ones)."""
        self.headers: list[dict[str, str]] = []
        """The headers of every request, in order."""
        self.times: list[float] = []
        """When each request arrived (``time.monotonic()``), in order."""
        self._script: deque[Reply] = deque()
        self._handler: Handler | None = None
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- scripting -------------------------------------------------------------------------
    def push(self, *replies: Reply) -> ChatServer:
        """Queue replies; each request takes the next one."""
        self._script.extend(replies)
        return self

    def respond_with(self, handler: Handler | None) -> ChatServer:
        """Answer requests the queue does not cover with ``handler(body)`` (sync or async)."""
        self._handler = handler
        return self

    @property
    def pending(self) -> int:
        """Replies queued and not yet served."""
        return len(self._script)

    @property
    def url(self) -> str:
        """The base URL clients use (``http://127.0.0.1:<port>/v1``)."""
        if not self._port:
            raise RuntimeError("ChatServer is not running")
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def messages(self) -> list[list[dict[str, Any]]]:
        """The ``messages`` of every request received."""
        return [r.get("messages", []) for r in self.requests]

    # -- lifecycle in the caller's loop ----------------------------------------------------
    async def start_async(self) -> ChatServer:
        """Start serving in the running event loop."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])
        return self

    async def stop_async(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._port = 0

    async def __aenter__(self) -> ChatServer:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # -- lifecycle in a background thread --------------------------------------------------
    def start(self) -> ChatServer:
        """Start serving from a background thread with its own event loop."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:  # pragma: no cover - reported to the caller
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop_async())
            loop.close()

        self._thread = threading.Thread(target=run, name="chat-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        """Stop the background server started with :meth:`start`."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = None
        self._thread = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP ------------------------------------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "test-model", "object": "model"}]})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.times.append(time.monotonic())
        self.headers.append(dict(request.headers))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self.requests.append(body if isinstance(body, dict) else {"_raw": raw.decode("utf-8", "replace")})
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._error(
                ErrorReply(
                    401,
                    "Incorrect API key provided. You can find your API key at the dashboard.",
                    code="invalid_api_key",
                )
            )
        if self.validate:
            problem = validate_request(body)
            if problem is not None:
                return self._error(problem)
        if self.context_tokens is not None and len(raw) > self.context_tokens * 4:
            return self._error(context_overflow(self.context_tokens, len(raw) // 4))
        if self.max_prompt_tokens is not None and isinstance(body, dict):
            tokens = prompt_tokens(body)
            self.prompt_tokens.append(tokens)
            if tokens + int(body.get("max_tokens") or 0) > self.max_prompt_tokens:
                return self._error(context_overflow(self.max_prompt_tokens, tokens))
        reply = await self._next_reply(body if isinstance(body, dict) else {})
        return await self._send(request, body if isinstance(body, dict) else {}, reply)

    async def _next_reply(self, body: dict[str, Any]) -> Reply:
        if self._script:
            return self._script.popleft()
        if self._handler is not None:
            result = self._handler(body)
            if inspect.isawaitable(result):
                result = await result
            return result
        return error(500, "ChatServer has no reply scripted for this request", type="server_error")

    async def _send(self, request: web.Request, body: dict[str, Any], reply: Reply) -> web.StreamResponse:
        while isinstance(reply, Delay):
            await asyncio.sleep(reply.seconds)
            reply = reply.then if reply.then is not None else completion("")
        if isinstance(reply, ErrorReply):
            return self._error(reply)
        if isinstance(reply, Drop):
            return await self._drop(request, None)
        if isinstance(reply, Cut):
            return await self._cut(request, body, reply)
        if isinstance(reply, Raw):
            return web.Response(
                status=reply.status,
                body=reply.body if isinstance(reply.body, bytes) else reply.body.encode(),
                content_type=reply.content_type,
                headers=reply.headers,
            )
        if isinstance(reply, dict):
            reply = {**reply, "model": reply.get("model") or body.get("model")}
            if not body.get("stream"):
                return web.json_response(reply)
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            reply = Chunks(stream_chunks(reply, include_usage=include_usage, piece=self.piece))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for chunk in reply.chunks:
            await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        if reply.done:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _cut(self, request: web.Request, body: dict[str, Any], cut: Cut) -> web.StreamResponse:
        reply = {**cut.reply, "model": cut.reply.get("model") or body.get("model")}
        if not body.get("stream"):
            data = json.dumps(reply).encode()
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.content_length = len(data)
            await response.prepare(request)
            await response.write(data[: cut.after])
            return await self._drop(request, response)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for chunk in stream_chunks(reply, piece=self.piece)[: cut.after]:
            await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        return await self._drop(request, response)

    @staticmethod
    async def _drop(request: web.Request, response: web.StreamResponse | None) -> web.StreamResponse:
        await asyncio.sleep(0.01)  # let what was written leave before the socket goes
        if request.transport is not None:
            request.transport.abort()
        # aiohttp ignores a handler's response once its connection is gone.
        return response or web.Response(status=500)

    @staticmethod
    def _error(reply: ErrorReply) -> web.Response:
        return web.json_response(reply.body(), status=reply.status, headers=reply.headers)
