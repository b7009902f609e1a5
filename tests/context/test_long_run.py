"""A 200-step run against a real chat-completions server that rejects oversize requests.

The server counts each request's tokens with PyManus's estimate and answers OpenAI's 400
``context_length_exceeded`` above its limit; it also validates the tool-call protocol. The
model is built the way ``pymanus run`` builds it (``preset_model``), so the test covers the
wiring of the context window too.
"""

from __future__ import annotations

import json
from typing import Any

from helpers.chat_server import ChatServer, completion, tool_call
from pymanus import Agent, tool
from pymanus.agent.manus import preset_model
from pymanus.config import Settings
from pymanus.context.window import WindowedModel, WindowScope

WINDOW = 8192
STEPS = 200
TASK = "Read all 200 parts of the archive with read_part and report what they say."


@tool
def read_part(part: int) -> str:
    """Read one part of the archive.

    Args:
        part: the part number
    """
    return f"part {part}:\n" + "\n".join(f"line {i} of part {part}: " + "lorem ipsum " * 6 for i in range(32))


def script(body: dict[str, Any]) -> dict[str, Any]:
    """The model: a summary when asked for one, else the next part to read (two at a time every 7th step)."""
    if not body.get("tools"):
        return completion("Parts read so far held lorem ipsum lines; nothing else of note.")
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    step = len(SEEN)
    SEEN.append(done)
    if step + 1 >= STEPS:
        return completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "all parts read"})])
    calls = [tool_call("read_part", {"part": step})]
    if step % 7 == 3:
        calls.append(tool_call("read_part", {"part": step + 1000}))
    return completion(content=f"Reading part {step}.", tool_calls=calls)


SEEN: list[int] = []


def protocol_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Each assistant tool call answered by exactly one tool message right after it, and no other tool message."""
    problems = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "tool":
            problems.append(f"message {i}: tool message without a call before it")
        ids = [c["id"] for c in message.get("tool_calls") or []]
        j = i + 1
        answers = []
        while j < len(messages) and messages[j]["role"] == "tool":
            answers.append(messages[j]["tool_call_id"])
            j += 1
        if ids and sorted(answers) != sorted(ids):
            problems.append(f"message {i}: calls {ids} answered by {answers}")
        if ids:
            i = j
        else:
            i += 1
    return problems


async def test_200_steps_never_overflow_and_keep_every_call_with_its_result() -> None:
    SEEN.clear()
    async with ChatServer(validate=True, max_prompt_tokens=WINDOW) as server:
        server.respond_with(script)
        settings = Settings.model_validate(
            {"model": {"name": "openai:test-model", "base_url": server.url, "api_key": "k", "context_window": WINDOW}}
        )
        model = preset_model(settings)
        assert isinstance(model, WindowedModel)
        agent = Agent(model, tools=[read_part], max_steps=STEPS, extensions=[WindowScope()])
        result = await agent.run(TASK)
        await agent.aclose()

    assert result.state.value == "finished", result.output
    assert result.steps == STEPS
    agent_requests = [r for r in server.requests if r.get("tools")]
    summary_requests = [r for r in server.requests if not r.get("tools")]
    assert len(agent_requests) == STEPS
    # No request was rejected: every one was within the window, and the protocol held.
    assert len(server.prompt_tokens) == len(server.requests)
    assert max(server.prompt_tokens) <= WINDOW
    for index, body in enumerate(server.requests):
        assert protocol_problems(body["messages"]) == [], f"request {index}"
    for body in agent_requests:
        assert body["messages"][1]["role"] == "user" and body["messages"][1]["content"].startswith(TASK)
    # The full history stays in the result; the model saw a fitted one.
    full = sum(1 for m in result.messages if m.role == "tool")
    assert full == STEPS - 1 + len([s for s in range(STEPS - 1) if s % 7 == 3]) + 1
    assert json.dumps(result.messages[-1].model_dump())  # serialisable
    # Summaries are written now and then, not at every step; cost per step stays flat.
    assert 1 <= len(summary_requests) <= STEPS // 5
    late = [t for t, body in zip(server.prompt_tokens, server.requests, strict=True) if body.get("tools")][50:]
    assert max(late) <= WINDOW and min(late) > WINDOW * 0.4
