"""Prompt tokens per step of a long run, with the context window and with the full history.

A scripted model reads a 100-part archive, one ``read_part`` call per step (each result
about ``--result-chars`` characters), then terminates. The same run is made twice through
``pymanus.Agent``: once through :class:`pymanus.context.window.WindowedModel` with a window
of ``--window`` tokens, once sending the whole history each step. Prompt tokens are counted
with the calibrated estimate, tools included; the windowed run's total includes the
summary requests. Printed: the prompt tokens of every tenth step (they flatten once the
window fills), the totals and their ratio (the target is under one third), the summary
calls, and the time spent fitting per step.

    python benchmarks/context_window.py [--steps 100] [--window 8192] [--result-chars 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence

from pymanus import Agent, tool
from pymanus.context.tokens import estimate_messages_tokens, estimate_tool_tokens
from pymanus.context.window import WindowedModel
from pymanus.messages import Message, ToolCall
from pymanus.models.base import Model, ModelResponse, ModelSettings, ToolDefinition, WrapperModel
from pymanus.models.testing import FunctionModel


class Meter(WrapperModel):
    """Records the prompt tokens of every request that reaches the model."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        self.agent_prompts: list[int] = []
        self.summary_prompts: list[int] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        tokens = estimate_messages_tokens(messages) + estimate_tool_tokens(tools)
        (self.agent_prompts if tools else self.summary_prompts).append(tokens)
        return await self.wrapped.request(messages, tools, settings)


def scripted(steps: int) -> FunctionModel:
    def answer(messages: list[Message], tools: list[ToolDefinition]) -> str | ToolCall:
        if not tools:
            return "Summary: parts read so far were archive lines of lorem ipsum; nothing unusual found."
        done = sum(1 for m in messages if m.role == "assistant" and m.tool_calls)
        step = len(state)
        state.append(done)
        if step + 1 >= steps:
            return ToolCall(id=f"t{step}", name="terminate", arguments='{"status": "success", "message": "done"}')
        return ToolCall(id=f"c{step}", name="read_part", arguments=json.dumps({"part": step}))

    state: list[int] = []
    return FunctionModel(answer, name="scripted")


def reader(result_chars: int):  # type: ignore[no-untyped-def]
    @tool
    def read_part(part: int) -> str:
        """Read one part of the archive.

        Args:
            part: the part number
        """
        line = f"line of part {part}: lorem ipsum dolor sit amet, consectetur adipiscing elit\n"
        return (line * (result_chars // len(line) + 1))[:result_chars]

    return read_part


async def run(steps: int, window: int | None, result_chars: int) -> tuple[Meter, float, int]:
    meter = Meter(scripted(steps))
    model: Model = meter if window is None else WindowedModel(meter, context_window=window)
    agent = Agent(model, tools=[reader(result_chars)], max_steps=steps)
    started = time.perf_counter()
    result = await agent.run("Read every part of the archive with read_part and report what it holds.")
    elapsed = time.perf_counter() - started
    assert result.state.value == "finished", result.output
    return meter, elapsed, len(result.messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--result-chars", type=int, default=3000)
    args = parser.parse_args()

    full, full_time, _ = asyncio.run(run(args.steps, None, args.result_chars))
    windowed, windowed_time, kept = asyncio.run(run(args.steps, args.window, args.result_chars))

    print(f"{args.steps} steps, results of {args.result_chars} characters, window {args.window} tokens")
    print(f"{'step':>5} {'full history':>13} {'windowed':>9}")
    for index in [0, *range(9, args.steps, 10)]:
        print(f"{index + 1:>5} {full.agent_prompts[index]:>13} {windowed.agent_prompts[index]:>9}")
    late = windowed.agent_prompts[args.steps // 2 :]
    print(f"windowed steps {args.steps // 2 + 1}-{args.steps}: min {min(late)}, max {max(late)} prompt tokens")
    total_full = sum(full.agent_prompts)
    total_windowed = sum(windowed.agent_prompts) + sum(windowed.summary_prompts)
    print(f"total prompt tokens: full history {total_full}, windowed {total_windowed} ", end="")
    print(f"(of which {len(windowed.summary_prompts)} summary requests: {sum(windowed.summary_prompts)})")
    print(f"ratio windowed / full: {total_windowed / total_full:.3f}  (target < 0.333)")
    print(f"history kept in RunResult.messages: {kept} messages")
    overhead = (windowed_time - full_time) / args.steps * 1000
    print(f"run time: full {full_time:.2f}s, windowed {windowed_time:.2f}s ({overhead:+.2f} ms per step)")


if __name__ == "__main__":
    main()
