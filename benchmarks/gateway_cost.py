"""CPU cost per chat-completions call of the OpenAI gateway, by way of reading the response.

Runs a tiny chat-completions server in a child process (so its CPU is not counted) and
measures the client process's CPU time per request, with ``--inflight`` requests in
flight, for:

* ``sdk-parsed``   ``client.chat.completions.create(...)``: the SDK builds its pydantic
                   ``ChatCompletion``, then we read it into a PyManus message;
* ``sdk-raw``      ``client.chat.completions.with_raw_response.create(...)``, JSON parsed by us;
* ``gateway``      ``OpenAIModel.request`` (the SDK's ``client.post(..., cast_to=object)``);
* ``gateway-stream`` ``OpenAIModel.stream`` (SSE, include_usage).

Usage: ``python benchmarks/gateway_cost.py [--requests 3000] [--inflight 100]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

RESPONSE = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 40}'}}
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
}
CHUNKS = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": ""}}
                    ]
                },
                "finish_reason": None,
            }
        ]
    },
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 2, '}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"b": 40}'}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 12}},
]


def serve(port: int) -> None:
    """The child process: answer every request with the same tiny tool call."""
    from aiohttp import web

    body = json.dumps(RESPONSE).encode()
    sse = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in CHUNKS) + b"data: [DONE]\n\n"

    async def handle(request: web.Request) -> web.Response:
        data = await request.json()
        if data.get("stream"):
            return web.Response(body=sse, content_type="text/event-stream")
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def measure(name: str, one: Callable[[], Awaitable[Any]], requests: int, inflight: int) -> float:
    """Run ``requests`` calls, ``inflight`` at a time; print and return CPU µs per call."""
    for _ in range(50):  # warm up connections and caches
        await one()
    queue = iter(range(requests))

    async def worker() -> None:
        for _ in queue:
            await one()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    per_call = cpu / requests * 1e6
    print(f"{name:16s} {per_call:8.0f} µs CPU/call   {requests / wall:8.0f} calls/s")
    return per_call


async def run(base_url: str, requests: int, inflight: int) -> None:
    import openai

    from pymanus.messages import Message, ToolCall
    from pymanus.models.base import ModelResponse, ModelSettings, ToolDefinition
    from pymanus.models.openai import OpenAIModel

    messages = [
        Message.system("You are a helpful agent."),
        Message.user("What is 2 + 40?"),
    ]
    tools = [
        ToolDefinition(
            name="add",
            description="Add two integers.",
            parameters={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        )
    ]
    settings = ModelSettings()
    wire = [m.to_wire() for m in messages]
    wire_tools = [t.to_wire() for t in tools]
    model = OpenAIModel("bench", base_url=base_url, api_key="sk-bench")
    client = openai.AsyncOpenAI(
        api_key="sk-bench", base_url=base_url, max_retries=0, http_client=openai.DefaultAioHttpClient()
    )

    async def sdk_parsed() -> ModelResponse:
        completion = await client.chat.completions.create(model="bench", messages=wire, tools=wire_tools)
        msg = completion.choices[0].message
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
            for c in msg.tool_calls or []
            if c.type == "function"
        ]
        return ModelResponse(message=Message.assistant(msg.content, tool_calls=calls), finish_reason="tool_calls")

    async def sdk_raw() -> ModelResponse:
        raw = await client.chat.completions.with_raw_response.create(model="bench", messages=wire, tools=wire_tools)
        return model._response(json.loads(raw.http_response.content), tools)

    async def gateway() -> ModelResponse:
        return await model.request(messages, tools, settings)

    async def gateway_stream() -> None:
        async for _ in model.stream(messages, tools, settings):
            pass

    print(f"{requests} calls, {inflight} in flight, tiny tool-call responses")
    for name, one in [
        ("sdk-parsed", sdk_parsed),
        ("sdk-raw", sdk_raw),
        ("gateway", gateway),
        ("gateway-stream", gateway_stream),
    ]:
        await measure(name, one, requests, inflight)
    await client.close()
    await model.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--inflight", type=int, default=100)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        asyncio.run(run(f"http://127.0.0.1:{port}/v1", args.requests, args.inflight))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
