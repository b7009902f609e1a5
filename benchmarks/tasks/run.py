"""Run the task suite against one or more models and print how many tasks each finished.

    python benchmarks/tasks/run.py                                   # the configured model
    python benchmarks/tasks/run.py --model local:qwen2.5-coder-1.5b --model local:qwen2.5-coder-0.5b
    python benchmarks/tasks/run.py --model openai:qwen2.5-7b-instruct --base-url http://localhost:8000/v1
    python benchmarks/tasks/run.py --tasks sales_report,fix_failing_test --repeat 3 --json out.json

For every model and task: a fresh temporary workspace, the task's setup, one run of the
Manus preset (``build_manus_agent``) with a per-task time limit, then the task's checker.
It prints a row per run (task, ok, steps, seconds, prompt tokens, how the run ended, the
checker's reason) and, per model, the success rate and the median seconds and steps;
``--json`` writes every outcome, with the run's conversation, and the summary.

A task counts as done when its checker passes (the files and answer are what the user gets),
however the run ended; ``--strict`` also requires the run to have finished normally. A
crash or a run cut off by the time limit is a failure, and the runner goes on. ``ask_human``
gets no answer (standard input is not a terminal), so the agent must proceed on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

if __package__ in (None, ""):  # run as a script: make ``benchmarks.tasks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.tasks.suite import Task, select

from pymanus import Agent, Message, RunState

AgentFactory = Callable[[Path], Agent]
"""Builds a fresh agent working in the given workspace."""

DEFAULT_TIMEOUT = 300.0
GRACE = 15.0
"""Seconds past the agent's own time limit before the runner cuts the run off."""


@dataclass
class TaskOutcome:
    """How one run of one task went."""

    model: str
    task: str
    ok: bool
    reason: str
    """The checker's reason, or what went wrong."""
    end: str
    """How the run ended: ``finished:<reason>``, ``error:<reason>``, ``timeout`` or ``crash``."""
    steps: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    output: str = ""
    repeat: int = 1
    workspace: str | None = None
    """Kept workspace (with ``--keep``), for a look at what the agent did."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The run's conversation (without the per-step reminders), in the ``--json`` file: why a task failed."""


async def run_task(
    agent_factory: AgentFactory,
    task: Task,
    *,
    model: str = "",
    time_limit: float = DEFAULT_TIMEOUT + GRACE,
    strict: bool = False,
    keep: bool = False,
    repeat: int = 1,
) -> TaskOutcome:
    """Set up a fresh workspace, run ``task`` with an agent from ``agent_factory``, check the result.

    Never raises for a failing run: a crash (of the factory, the run or the checker) or a
    run cut off after ``time_limit`` seconds is an outcome with ``ok=False`` and the reason.
    """
    workspace = Path(tempfile.mkdtemp(prefix=f"pymanus-task-{task.name}-"))
    outcome = TaskOutcome(model=model, task=task.name, ok=False, reason="", end="crash", repeat=repeat)
    start = time.perf_counter()
    try:
        await asyncio.to_thread(task.setup, workspace)
        await _run_agent(agent_factory, task, workspace, time_limit, outcome)
        outcome.seconds = time.perf_counter() - start
        if outcome.end in ("crash", "timeout"):
            return outcome
        try:
            passed, why = await asyncio.to_thread(task.check, workspace, outcome.output)
        except Exception as exc:  # a checker bug must not stop the suite
            passed, why = False, f"checker crashed: {type(exc).__name__}: {exc}"
        outcome.ok = passed and (not strict or outcome.end.startswith("finished"))
        outcome.reason = why if passed or not outcome.end.startswith("error") else f"{why} ({outcome.end})"
        return outcome
    finally:
        outcome.seconds = outcome.seconds or time.perf_counter() - start
        if keep:
            outcome.workspace = str(workspace)
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def _dump(messages: list[Message]) -> list[dict[str, Any]]:
    return [message.model_dump(mode="json", exclude_defaults=True) for message in messages]


async def _run_agent(
    agent_factory: AgentFactory, task: Task, workspace: Path, time_limit: float, out: TaskOutcome
) -> None:
    """Run the agent on ``task``, filling ``out`` with how it went (partial stats on a cut-off)."""
    agent: Agent | None = None
    run = None
    try:
        agent = agent_factory(workspace)
        run = agent.start(task.prompt)
        async with asyncio.timeout(time_limit), contextlib.aclosing(run.events()) as events:
            async for _ in events:
                pass
        result = run.result()
        out.end = f"{'finished' if result.state is RunState.FINISHED else 'error'}:{result.reason}"
        out.output = result.output
    except TimeoutError:
        out.end, out.reason = "timeout", f"cut off after {time_limit:g} s"
    except Exception as exc:
        out.end, out.reason = "crash", f"{type(exc).__name__}: {exc}"
    finally:
        if run is not None:
            out.messages = _dump(run.messages)
            out.steps = run.step
            out.prompt_tokens = run.usage.prompt_tokens
            out.completion_tokens = run.usage.completion_tokens
        if agent is not None:
            try:
                await agent.aclose()
            except Exception as exc:  # closing must not hide the outcome
                logging.getLogger(__name__).warning("closing the agent failed: %s", exc)


def manus_factory(
    model: str, *, max_steps: int, timeout: float, base_url: str | None = None, aids: list[str] | None = None
) -> AgentFactory:
    """Agents of the Manus preset for ``model``, as ``pymanus run`` would build them.

    ``aids``: exactly these local aids (``None``: those the configuration turns on for the model).
    """
    from pymanus.config import Settings
    from pymanus.local_aids import equipped_agent

    def build(workspace: Path) -> Agent:
        overrides = {
            "model": {"name": model, "base_url": base_url},
            "agent": {"workspace": str(workspace), "max_steps": max_steps, "timeout": timeout},
        }
        return equipped_agent(Settings.load(overrides=overrides), aids=aids)

    return build


def parse_aids(spec: str | None) -> list[str] | None:
    """The aids ``--aids`` names: ``none``, ``all``, names, and ``-name`` to leave one out (``all,-code_repair``).

    Raises :class:`ValueError` naming an unknown aid.
    """
    if spec is None:
        return None
    from pymanus.local_aids import AIDS

    chosen: list[str] = []
    for token in (t.strip() for t in spec.split(",") if t.strip()):
        name = token.lstrip("-")
        if name not in {"all", "none", *AIDS}:
            raise ValueError(f"unknown aid {name!r}; known: all, none, {', '.join(AIDS)}")
        if token == "all":
            chosen = list(AIDS)
        elif token == "none":
            chosen = []
        elif token.startswith("-"):
            chosen = [aid for aid in chosen if aid != name]
        elif name not in chosen:
            chosen.append(name)
    return [aid for aid in AIDS if aid in chosen]


async def run_suite(
    factories: dict[str, AgentFactory],
    tasks: Sequence[Task],
    *,
    time_limit: float = DEFAULT_TIMEOUT + GRACE,
    repeat: int = 1,
    strict: bool = False,
    keep: bool = False,
    report: Callable[[TaskOutcome], None] | None = None,
) -> list[TaskOutcome]:
    """Every task ``repeat`` times for every model, one run at a time; ``report`` sees each outcome."""
    outcomes: list[TaskOutcome] = []
    for model, factory in factories.items():
        unavailable = await _preflight(factory)
        for task in tasks:
            for index in range(1, repeat + 1):
                if unavailable:  # every run would crash the same way: say so without running
                    outcome = TaskOutcome(model, task.name, ok=False, reason=unavailable, end="crash", repeat=index)
                else:
                    outcome = await run_task(
                        factory, task, model=model, time_limit=time_limit, strict=strict, keep=keep, repeat=index
                    )
                outcomes.append(outcome)
                if report is not None:
                    report(outcome)
    return outcomes


async def _preflight(factory: AgentFactory) -> str | None:
    """Why no agent can be built (a model that is not installed, a bad config), or ``None``.

    It also sends the model one tiny request with the agent's system prompt and tools, so
    one-time costs (a local model's weights and the evaluation of that shared prompt head, a
    connection) are not counted in the first task's seconds: every later task reuses them,
    as later ``pymanus run`` processes reuse a local model's saved prompt head. A failing
    warm-up is only logged: the tasks will show it.
    """
    from pymanus import Message, ModelSettings

    with tempfile.TemporaryDirectory(prefix="pymanus-preflight-") as folder:
        try:
            agent = factory(Path(folder))
        except Exception as exc:
            return f"cannot build the agent: {type(exc).__name__}: {exc}"
        try:
            messages = [Message.system(agent.system_prompt), Message.user("Reply with OK.")]
            tools = agent.toolset.definitions()  # in the prompt; a text reply (no tool allowed) ends at once
            await agent.model.request(messages, tools, ModelSettings(max_tokens=8, allowed_tools=[]))
        except Exception as exc:
            logging.getLogger(__name__).warning("warm-up request failed: %s: %s", type(exc).__name__, exc)
        finally:
            await agent.aclose()
    return None


# -- reporting --------------------------------------------------------------------------------
COLUMNS = (("task", 20), ("ok", 4), ("steps", 5), ("seconds", 8), ("prompt tok", 10), ("end", 22), ("reason", 0))


def header() -> str:
    """The table's header line."""
    return "  ".join(f"{name:<{width}}" if width else name for name, width in COLUMNS)


def format_row(outcome: TaskOutcome) -> str:
    """One outcome as a table line."""
    name = outcome.task if outcome.repeat == 1 else f"{outcome.task} #{outcome.repeat}"
    cells = (
        name,
        "yes" if outcome.ok else "NO",
        str(outcome.steps),
        f"{outcome.seconds:.1f}",
        str(outcome.prompt_tokens),
        outcome.end,
        " ".join(outcome.reason.split())[:160],
    )
    return "  ".join(f"{cell:<{width}}" if width else cell for cell, (_, width) in zip(cells, COLUMNS, strict=True))


def summarize(outcomes: Sequence[TaskOutcome]) -> dict[str, dict[str, float | int]]:
    """Per model: successes, runs, success rate, median seconds and steps, total tokens."""
    summary: dict[str, dict[str, float | int]] = {}
    for model in dict.fromkeys(outcome.model for outcome in outcomes):
        mine = [outcome for outcome in outcomes if outcome.model == model]
        successes = sum(outcome.ok for outcome in mine)
        summary[model] = {
            "success": successes,
            "runs": len(mine),
            "rate": successes / len(mine),
            "median_seconds": statistics.median(outcome.seconds for outcome in mine),
            "median_steps": statistics.median(outcome.steps for outcome in mine),
            "prompt_tokens": sum(outcome.prompt_tokens for outcome in mine),
            "completion_tokens": sum(outcome.completion_tokens for outcome in mine),
        }
    return summary


def format_summary(summary: dict[str, dict[str, float | int]]) -> str:
    """One line per model: ``success X/N (P%), median seconds, median steps``."""
    lines = []
    for model, stats in summary.items():
        lines.append(
            f"{model}: success {stats['success']}/{stats['runs']} ({stats['rate']:.0%}), "
            f"median {stats['median_seconds']:.1f} s, median {stats['median_steps']:g} steps, "
            f"{stats['prompt_tokens']} prompt + {stats['completion_tokens']} completion tokens"
        )
    return "\n".join(lines)


# -- command line -----------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The runner's flags."""
    parser = argparse.ArgumentParser(description="Score models on the PyManus task suite.")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        help="model string (repeat, or separate with commas); default: the configured model",
    )
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument(
        "--aids",
        default=None,
        help="local aids: none, all, names, -name to leave one out (all,-code_repair); default: the config's",
    )
    parser.add_argument("--max-steps", type=int, default=20, help="step limit per run (default 20)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per run (default 300)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per task and model (default 1)")
    parser.add_argument("--base-url", default=None, help="endpoint for openai: models (else config / env)")
    parser.add_argument("--strict", action="store_true", help="a run must also finish normally to count")
    parser.add_argument("--keep", action="store_true", help="keep each workspace and print where it is")
    parser.add_argument("--json", type=Path, default=None, help="write all outcomes and the summary here")
    parser.add_argument("--list", action="store_true", help="list the tasks and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log the agent's steps")
    args = parser.parse_args(argv)
    args.models = [m.strip() for spec in args.model for m in spec.split(",") if m.strip()]
    if args.max_steps < 1 or args.repeat < 1 or args.timeout <= 0:
        parser.error("--max-steps and --repeat must be at least 1, --timeout positive")
    return args


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the suite from the command line; 0 when it ran, 2 on a usage or configuration error."""
    args = parse_args(argv)
    out = out or sys.stdout
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        tasks = select(args.tasks.split(","))
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    if args.list:
        for task in tasks:
            print(f"{task.name:<20} {task.kind:<6} {task.prompt}", file=out)
        return 0
    from pymanus.config import Settings
    from pymanus.errors import ConfigError

    try:
        models = args.models or [Settings.load().model.name]
        for model in models:  # a bad model string is a usage error, before any run
            Settings.load(overrides={"model": {"name": model, "base_url": args.base_url}})
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        aids = parse_aids(args.aids)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    factories = {
        m: manus_factory(m, max_steps=args.max_steps, timeout=args.timeout, base_url=args.base_url, aids=aids)
        for m in models
    }

    outcomes: list[TaskOutcome] = []

    def report(outcome: TaskOutcome) -> None:
        if not any(seen.model == outcome.model for seen in outcomes):
            print(f"\n== {outcome.model}\n{header()}", file=out)
        outcomes.append(outcome)
        print(format_row(outcome), file=out, flush=True)
        if outcome.workspace:
            print(f"    workspace: {outcome.workspace}", file=out)
        if args.json is not None:
            write_json(args.json, args, outcomes)

    with open(os.devnull, encoding="utf-8") as devnull:  # nobody answers ask_human in a benchmark
        stdin, sys.stdin = sys.stdin, devnull
        try:
            asyncio.run(
                run_suite(
                    factories,
                    tasks,
                    time_limit=args.timeout + GRACE,
                    repeat=args.repeat,
                    strict=args.strict,
                    keep=args.keep,
                    report=report,
                )
            )
        except KeyboardInterrupt:  # show what ran so far
            print(f"\ninterrupted after {len(outcomes)} run(s)", file=out)
        finally:
            sys.stdin = stdin
    if not outcomes:
        return 130
    print(f"\n{format_summary(summarize(outcomes))}", file=out)
    return 0


def write_json(path: Path, args: argparse.Namespace, outcomes: list[TaskOutcome]) -> None:
    """All outcomes so far and their summary; rewritten after every run, so a stopped suite keeps its transcripts."""
    settings = {key: getattr(args, key) for key in ("max_steps", "timeout", "repeat", "strict", "base_url", "aids")}
    payload = {"settings": settings, "summary": summarize(outcomes), "results": [asdict(o) for o in outcomes]}
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
