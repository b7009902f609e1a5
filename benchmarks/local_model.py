"""The embedded local model: load time, generation speed, prompt cache, tool-call quality.

Usage::

    python benchmarks/local_model.py [PACK]             # default qwen2.5-coder-1.5b
    python benchmarks/local_model.py PACK --formats     # native vs JSON-envelope grammar
    python benchmarks/local_model.py PACK --replay run.json [--steps 12]  # drafting on real steps

Prints, for one pack:

* load time (weights mmap'd, context allocated; pack assembly excluded) and context size;
* generation speed in tokens/s: free text, and grammar-constrained tool calls;
* a 5-step growing agent conversation: prompt tokens per step and how many of them were
  actually evaluated (the rest came from the KV cache of the previous step);
* with ``--replay``: generation speed of real agent steps from a suite run, drafting off and on;
* with ``--formats``: for each tool-output shape, on 12 agent situations x ``--trials``,
  how often the model chose the right action (right tool, or a final answer when the
  task is done), argument correctness, and seconds per step.

Timing numbers depend on the machine and on other load; run it alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pymanus.errors import ModelOutputError
from pymanus.messages import Message, ToolCall
from pymanus.models.base import ModelSettings, ToolDefinition
from pymanus.models.local import LocalModel


def _tool(name: str, description: str, **props: tuple[str, str]) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {key: {"type": kind, "description": text} for key, (kind, text) in props.items()},
            "required": list(props),
        },
    )


TOOLS = [
    _tool("add", "Add two integers.", a=("integer", "first addend"), b=("integer", "second addend")),
    _tool("read_file", "Read a text file from the workspace.", path=("string", "path of the file")),
    _tool(
        "write_file",
        "Write a text file in the workspace.",
        path=("string", "path of the file"),
        content=("string", "text to write"),
    ),
    _tool("python_execute", "Run Python code and return what it prints.", code=("string", "Python source")),
    _tool("web_search", "Search the web.", query=("string", "search terms")),
]
SYSTEM = (
    "You are PyManus, an autonomous agent. Solve the user's task step by step with the tools. "
    "When the task is done, reply with the final answer as plain text."
)


def _call(name: str, **arguments: Any) -> ToolCall:
    import json

    return ToolCall(id=f"call_{name}", name=name, arguments=json.dumps(arguments))


def _history(task: str, *steps: tuple[ToolCall, str]) -> list[Message]:
    messages = [Message.system(SYSTEM), Message.user(task)]
    for call, result in steps:
        messages += [Message.assistant(tool_calls=[call]), Message.tool(call.id, call.name, result)]
    return messages


Check = Callable[[Message], bool]


def _calls(name: str, check: Callable[[dict[str, Any]], bool] = lambda args: True) -> Check:
    import json

    return lambda m: (
        bool(m.tool_calls) and m.tool_calls[0].name == name and check(json.loads(m.tool_calls[0].arguments))
    )


def _answers(pattern: str) -> Check:
    return lambda m: not m.tool_calls and re.search(pattern, m.text, re.IGNORECASE) is not None


@dataclass
class Case:
    """One agent situation: the conversation so far, the right action and a stricter argument check."""

    name: str
    messages: list[Message]
    action: Check
    exact: Check


SUM = _call("add", a=2, b=40)
READ = _call("read_file", path="notes.txt")
WRITE = _call("write_file", path="hello.txt", content="Hello, world!")
SEARCH = _call("web_search", query="latest Python release")
CASES = [
    Case("add", _history("What is 2 + 40?"), _calls("add"), _calls("add", lambda a: a == {"a": 2, "b": 40})),
    Case(
        "read",
        _history("Read the file notes.txt and tell me what it says."),
        _calls("read_file"),
        _calls("read_file", lambda a: a["path"].endswith("notes.txt")),
    ),
    Case(
        "search",
        _history("Search the web for the latest Python release."),
        _calls("web_search"),
        _calls("web_search", lambda a: "python" in a["query"].lower()),
    ),
    Case(
        "write",
        _history("Create a file hello.txt containing exactly: Hello, world!"),
        _calls("write_file"),
        _calls("write_file", lambda a: a["path"] == "hello.txt" and "Hello, world!" in a["content"]),
    ),
    Case(
        "python",
        _history("Use Python to compute the 20th Fibonacci number."),
        _calls("python_execute"),
        _calls("python_execute", lambda a: "fib" in a["code"].lower() or "for" in a["code"]),
    ),
    Case(
        "two-sums",
        _history("Add 3 and 4, and also add 10 and 20."),
        _calls("add"),
        lambda m: len(m.tool_calls) == 2 and all(c.name == "add" for c in m.tool_calls),
    ),
    Case(
        "multiply",
        _history("What is 123 * 456? Compute it with Python."),
        _calls("python_execute"),
        _calls("python_execute", lambda a: "123" in a["code"] and "456" in a["code"]),
    ),
    Case("greeting", _history("Hello! Who are you?"), _answers(r"\w"), _answers(r"pymanus|agent|assist")),
    Case("after-add", _history("What is 2 + 40?", (SUM, "42")), _answers(r"\w"), _answers(r"\b42\b")),
    Case(
        "after-read",
        _history("Read the file notes.txt and tell me what it says.", (READ, "Meeting at 3pm with Alice.")),
        _answers(r"\w"),
        _answers(r"3\s*pm"),
    ),
    Case(
        "after-write",
        _history("Create a file hello.txt containing exactly: Hello, world!", (WRITE, "wrote 13 bytes to hello.txt")),
        _answers(r"\w"),
        _answers(r"hello\.txt|created|written|wrote"),
    ),
    Case(
        "after-search",
        _history(
            "Search the web for the latest Python release.",
            (SEARCH, "python.org: Python 3.13.1 was released on December 3, 2024."),
        ),
        _answers(r"\w"),
        _answers(r"3\.13"),
    ),
]


class _Records(logging.Handler):
    """Collects the one log record LocalModel writes per call."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "prompt_eval_tokens"):
            self.records.append(record)


def _capture() -> _Records:
    handler = _Records()
    log = logging.getLogger("pymanus.models.local")
    log.setLevel(logging.DEBUG)
    log.addHandler(handler)
    return handler


EDIT_SOURCE = """def summarize(rows):
    total = 0
    count = 0
    for row in rows:
        total += row["amount"]
        count += 1
    average = total / count if count else 0
    return {"total": total, "count": count, "average": average}
"""


DRAFT = 16
"""Draft length tried against the default (off)."""
REPOSITORY = str(Path(__file__).resolve().parents[1])


async def speed(model: LocalModel, records: _Records) -> None:
    """Tokens/s for free text, a constrained tool call and an edit that copies code, with
    prompt-lookup drafting off (the default) and on (``DRAFT`` tokens; prompt already cached)."""
    story = [Message.user("Write the numbers from one to sixty in words, separated by commas.")]
    edit = [Message.user(f"Rename `count` to `n_rows` in this function and show the whole function:\n{EDIT_SOURCE}")]
    settings = ModelSettings(max_tokens=200, seed=1, temperature=0.0)
    default = model.sampling
    cases = (("free text", story, []), ("tool call (grammar)", CASES[3].messages, TOOLS), ("code edit", edit, []))
    for label, messages, tools in cases:
        line = []
        for drafting in (False, True):
            model.sampling = replace(default, draft_tokens=DRAFT if drafting else 0)
            rates = []
            for attempt in range(3):  # the first call fills the prompt cache
                with contextlib.suppress(ModelOutputError):  # a call cut off by max_tokens still measures speed
                    await model.request(messages, tools, settings)
                rec = records.records[-1].__dict__
                if attempt:
                    rates.append(rec["completion_tokens"] / rec["generate_seconds"])
            kept = f", {rec['accepted_tokens']} of {rec['drafted_tokens']} drafted kept" if drafting else ""
            line.append(f"{'drafting' if drafting else 'plain'} {statistics.mean(rates):.1f} tokens/s{kept}")
        print(f"  generation, {label} ({rec['completion_tokens']} tokens): {'; '.join(line)}")
    model.sampling = default


async def growing(model: LocalModel, records: _Records) -> None:
    """A 5-step agent run with scripted tool results: evaluated vs total prompt tokens per step."""
    results = {
        "add": "42",
        "read_file": "Meeting at 3pm with Alice.",
        "write_file": "wrote 40 bytes to summary.txt",
        "python_execute": "42",
        "web_search": "no results",
    }
    messages = [
        Message.system(SYSTEM),
        Message.user("Add 2 and 40, read notes.txt, then write a one-line summary of both to summary.txt."),
    ]
    print("  step  prompt  evaluated  seconds  action")
    for step in range(1, 6):
        start = time.perf_counter()
        response = await model.request(messages, TOOLS, ModelSettings(seed=step, max_tokens=256))
        seconds = time.perf_counter() - start
        rec = records.records[-1].__dict__
        calls = response.message.tool_calls
        action = ", ".join(f"{c.name}({c.arguments})" for c in calls) if calls else f"answer: {response.message.text}"
        print(f"  {step:>4}  {rec['prompt_tokens']:>6}  {rec['prompt_eval_tokens']:>9}  {seconds:>7.2f}  {action[:70]}")
        messages.append(response.message)
        if not calls:
            messages.append(Message.user("Continue with the rest of the task."))
        for call in calls:
            messages.append(Message.tool(call.id, call.name, results[call.name]))


async def formats(spec: str, trials: int) -> None:
    """Right-action and exact-argument rates of each grammar shape on CASES."""
    print(f"  {'format':<7} {'action':>8} {'exact':>8} {'s/step':>7}  failures")
    for fmt in ("native", "json"):
        model = LocalModel.from_spec(spec, tool_format=fmt)  # type: ignore[arg-type]
        right = exact = 0
        seconds: list[float] = []
        failures: list[str] = []
        for case in CASES:
            for trial in range(trials):
                start = time.perf_counter()
                response = await model.request(case.messages, TOOLS, ModelSettings(seed=trial, max_tokens=256))
                seconds.append(time.perf_counter() - start)
                message = response.message
                ok = case.action(message)
                right += ok
                exact += case.exact(message)
                if not ok:
                    got = message.tool_calls[0].name if message.tool_calls else f"answer {message.text[:30]!r}"
                    failures.append(f"{case.name}->{got}")
        total = len(CASES) * trials
        print(
            f"  {fmt:<7} {right:>4}/{total:<3} {exact:>4}/{total:<3} {statistics.mean(seconds):>7.2f}  "
            + "; ".join(sorted(set(failures)))
        )


async def replay(model: LocalModel, records: _Records, data: dict[str, Any], steps: int) -> None:
    """Tokens/s of real agent steps, drafting off and on: the requests before ``steps`` assistant
    messages of a suite run (``data``, from ``benchmarks/tasks/run.py --json``), each sent with the
    Manus preset's tools, prompt cached first, the same seed both ways, in alternating order."""
    sys.path.insert(0, REPOSITORY)  # run as a script: make ``benchmarks.tasks`` importable
    from benchmarks.tasks.run import manus_factory

    with tempfile.TemporaryDirectory() as folder:
        agent = manus_factory(model.name, max_steps=15, timeout=300)(Path(folder))
        tools = agent.toolset.definitions()
        await agent.aclose()
    requests = [
        [Message.model_validate(m) for m in run[:index]]
        for result in data["results"]
        for run in [*result["earlier"], result["messages"]]
        for index, message in enumerate(run)
        if message["role"] == "assistant" and index > 1
    ]
    random.Random(7).shuffle(requests)
    default, totals = model.sampling, {False: [0, 0.0], True: [0, 0.0]}
    for number, messages in enumerate(requests[:steps]):
        await model.request(messages, tools, ModelSettings(max_tokens=1, seed=1))  # the prompt into the cache
        for drafting in (False, True) if number % 2 else (True, False):
            model.sampling = replace(default, draft_tokens=DRAFT if drafting else 0)
            with contextlib.suppress(ModelOutputError):
                await model.request(messages, tools, ModelSettings(max_tokens=400, seed=1234))
            rec = records.records[-1].__dict__
            totals[drafting][0] += rec["completion_tokens"]
            totals[drafting][1] += rec["generate_seconds"]
    model.sampling = default
    for drafting, (tokens, seconds) in totals.items():
        label = f"drafting {DRAFT}" if drafting else "plain"
        print(
            f"  replayed {min(steps, len(requests))} steps, {label}: {tokens} tokens, {tokens / seconds:.1f} tokens/s"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pack", nargs="?", default="qwen2.5-coder-1.5b")
    parser.add_argument("--formats", action="store_true", help="compare the native and JSON grammar shapes")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--replay", type=Path, help="a suite run's --json file: replay its steps, drafting off and on")
    parser.add_argument("--steps", type=int, default=12, help="steps to replay")
    args = parser.parse_args()
    from pymanus.models.local import resolve_spec

    start = time.perf_counter()
    resolve_spec(args.pack)  # assembles the pack on first use; not part of the load time
    print(f"{args.pack}: pack ready in {time.perf_counter() - start:.2f}s")
    records = _capture()
    model = LocalModel.from_spec(args.pack)
    print(f"  load: {model.load_seconds:.2f}s, n_ctx={model.context_window}, tool format={model.tool_format}")
    if args.formats:
        await formats(args.pack, args.trials)
        return
    if args.replay:
        await replay(model, records, json.loads(args.replay.read_text()), args.steps)
        return
    await growing(model, records)  # first, so step 1 starts from an empty KV cache
    await speed(model, records)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
