"""Framework overhead per agent step: process CPU and memory, PyManus against a peer.

A chat-completions server in a *separate process* answers instantly: a tool call
(``add``) for steps 1-9, then a final text answer at step 10, deciding from the number
of messages it receives (stateless, so any number of runs can share it). The client
process runs 1, 100 and 1000 concurrent 10-step runs and reports the CPU time it spent
per step — the framework plus its HTTP client, not the server. Memory: tracemalloc
bytes per run while N runs wait on the model, and the RSS of a fresh interpreter after
``import pymanus`` and after ``from pymanus import Agent, tool, Toolset``.

Peer: pydantic-ai (``pip install 'pymanus[bench]'``), run in the same process
and against the same server; skipped with a note when it is not installed.

    python benchmarks/overhead.py [--runs 1,100,1000] [--steps 10]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

STEPS = 10


# -- the server (runs in its own process) -------------------------------------------------
def serve(port: int, steps: int, hold: bool) -> None:
    """Answer chat completions: ``add`` calls until step ``steps``, then text."""
    from aiohttp import web

    gate = asyncio.Event()
    waiting = [0]

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        step = sum(1 for m in body["messages"] if m["role"] == "assistant") + 1
        if hold and step == 1:
            waiting[0] += 1
            await gate.wait()
        if step < steps:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{step}",
                        "type": "function",
                        "function": {"name": "add", "arguments": json.dumps({"a": step, "b": 1})},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": "done"}, "stop"
        return web.json_response(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "bench"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            }
        )

    async def waiting_count(request: web.Request) -> web.Response:
        return web.json_response({"waiting": waiting[0]})

    async def release(request: web.Request) -> web.Response:
        gate.set()
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/waiting", waiting_count)
    app.router.add_post("/release", release)
    web.run_app(app, host="127.0.0.1", port=port, print=None, backlog=4096, access_log=None)


def start_server(steps: int, hold: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [sys.executable, __file__, "--serve", str(port), "--steps", str(steps)] + (["--hold"] if hold else [])
    process = subprocess.Popen(args)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the benchmark server did not start")


# -- the frameworks under test ----------------------------------------------------------------
RunFn = Callable[[], Awaitable[Any]]


def pymanus_runner(base_url: str) -> tuple[RunFn, Callable[[], Awaitable[None]]]:
    from pymanus import Agent, tool
    from pymanus.models.openai import OpenAIModel

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    model = OpenAIModel("bench", base_url=f"{base_url}/v1", api_key="x")
    agent = Agent(model, tools=[add], max_steps=STEPS + 5, max_repeats=0)

    async def one() -> Any:
        result = await agent.run("Add numbers.")
        assert result.steps == STEPS, result
        return result

    return one, agent.aclose


def pydantic_ai_runner(base_url: str) -> tuple[RunFn, Callable[[], Awaitable[None]]]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("bench", provider=OpenAIProvider(base_url=f"{base_url}/v1", api_key="x"))
    agent = Agent(model)

    @agent.tool_plain
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def one() -> Any:
        return await agent.run("Add numbers.")

    async def close() -> None:
        return None

    return one, close


FRAMEWORKS: dict[str, Callable[[str], tuple[RunFn, Callable[[], Awaitable[None]]]]] = {
    "pymanus": pymanus_runner,
    "pydantic-ai": pydantic_ai_runner,
}


async def measure_cpu(make: Callable[[str], tuple[RunFn, Callable[[], Awaitable[None]]]], url: str, n: int) -> float:
    """Process CPU seconds per step for ``n`` concurrent runs (after one warm-up run)."""
    one, close = make(url)
    await one()
    gc.collect()
    started = time.process_time()
    async with asyncio.TaskGroup() as runs:  # like gather, but a failure cancels the other runs
        for _ in range(n):
            runs.create_task(one())
    spent = time.process_time() - started
    await close()
    return spent / (n * STEPS)


async def measure_waiting_memory(make: Callable[[str], tuple[RunFn, Callable[[], Awaitable[None]]]], n: int) -> float:
    """Python heap bytes per run while ``n`` runs wait for the model's first answer."""
    import aiohttp

    server, url = start_server(STEPS, hold=True)
    try:
        one, close = make(url)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tasks = [asyncio.ensure_future(one()) for _ in range(n)]
        async with aiohttp.ClientSession() as session:
            while True:
                await asyncio.sleep(0.05)
                async with session.get(f"{url}/waiting") as response:
                    if (await response.json())["waiting"] >= n:
                        break
            gc.collect()
            during = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            await session.post(f"{url}/release")
        await asyncio.gather(*tasks)
        await close()
        return (during - before) / n
    finally:
        server.terminate()
        server.wait()


async def measure_idle_memory(n: int) -> float:
    """Python heap bytes per PyManus run while ``n`` runs sit idle inside a tool call.

    An idle run has had one model answer and waits on a tool (a human, a slow job): what
    it holds is its conversation, state and task, without an HTTP request in flight.
    """
    from pymanus import Agent, ToolCall, tool
    from pymanus.models import FunctionModel

    gate, all_waiting = asyncio.Event(), asyncio.Event()
    waiting = [0]

    @tool(timeout=None)
    async def wait_for_human() -> str:
        """Wait."""
        waiting[0] += 1
        if waiting[0] == n:
            all_waiting.set()
        await gate.wait()
        return "ok"

    def answer(messages: list[Any], tools: list[Any]) -> Any:
        return ToolCall(id="c1", name="wait_for_human") if len(messages) == 2 else "done"

    agent = Agent(FunctionModel(answer), tools=[wait_for_human])
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tasks = [asyncio.ensure_future(agent.run("Wait for the human.")) for _ in range(n)]
    await all_waiting.wait()
    gc.collect()
    during = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    gate.set()
    await asyncio.gather(*tasks)
    return (during - before) / n


def import_rss_mib(statement: str) -> float:
    """RSS in MiB of a fresh interpreter after running ``statement`` (``""``: a bare one)."""
    probe = "print(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])"
    return int(subprocess.check_output([sys.executable, "-c", f"{statement}\n{probe}"])) / 1024


async def attempt(label: str, measurement: Awaitable[float]) -> float | None:
    """Await a measurement; a failure is printed and the report goes on.

    At 1000 runs on a busy machine a peer's HTTP client may give up (connect timeouts):
    that must not lose the rest of the report.
    """
    try:
        return await measurement
    except Exception as exc:
        print(f"{label} failed: {type(exc).__name__}: {exc}")
        return None


def available(name: str) -> bool:
    try:
        if name == "pydantic-ai":
            import pydantic_ai  # noqa: F401
        return True
    except ImportError:
        return False


async def main(run_counts: list[int]) -> None:
    server, url = start_server(STEPS)
    try:
        print(f"{STEPS}-step runs against a local chat-completions server (process CPU of the client only)")
        print(f"{'framework':<12} {'runs':>6} {'CPU ms/step':>12}")
        for name, make in FRAMEWORKS.items():
            if not available(name):
                print(f"{name:<12} (not installed: pip install 'pymanus[bench]')")
                continue
            for n in run_counts:
                per_step = await attempt(f"{name:<12} {n:>6}", measure_cpu(make, url, n))
                if per_step is not None:
                    print(f"{name:<12} {n:>6} {per_step * 1000:>12.3f}")
    finally:
        server.terminate()
        server.wait()

    n = max(run_counts)
    print(
        f"\nPython heap per idle PyManus run ({n} runs waiting inside a tool call): "
        f"{await measure_idle_memory(n) / 1024:.1f} KiB"
    )
    print(f"\nPython heap per run while {n} runs wait on the model, HTTP request in flight (tracemalloc)")
    for name, make in FRAMEWORKS.items():
        if available(name) and (per_run := await attempt(f"{name:<12}", measure_waiting_memory(make, n))) is not None:
            print(f"{name:<12} {per_run / 1024:>8.1f} KiB")
    # The package imports its public names on first use, so both are shown: the bare
    # package, and what a program that builds an agent imports.
    print(f"\nRSS of a fresh interpreter (bare: {import_rss_mib(''):.1f} MiB)")
    for statement in ("import pymanus", "from pymanus import Agent, tool, Toolset"):
        print(f"  after `{statement}`: {import_rss_mib(statement):.1f} MiB")
    print(f"max RSS of this benchmark process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="1,100,1000", help="comma-separated concurrency levels")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--hold", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    STEPS = options.steps
    if options.serve:
        serve(options.serve, options.steps, options.hold)
    else:
        os.environ.pop("OPENAI_BASE_URL", None)
        asyncio.run(main([int(x) for x in options.runs.split(",")]))
