"""Live progress of a run in the terminal, drawn from its events."""

from __future__ import annotations

import contextlib
import json

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from pymanus.agent.agent import Agent
from pymanus.agent.events import (
    Event,
    FileChange,
    FilesChanged,
    ModelRequest,
    ModelResponded,
    ModelSwitched,
    RunFinished,
    RunStarted,
    RunState,
    StepFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from pymanus.agent.result import RunResult
from pymanus.messages import Message

ARGUMENT_PREVIEW_CHARS = 120
RESULT_PREVIEW_CHARS = 160


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_MARKS = {"created": "+", "modified": "~", "deleted": "-"}


def changes_line(changes: list[FileChange]) -> str:
    """``3 files changed: +report.csv ~data.csv -old.txt`` ("" when nothing changed)."""
    if not changes:
        return ""
    files = " ".join(f"{_MARKS[c.change]}{c.path}" for c in changes)
    return f"{len(changes)} file{'s' * (len(changes) != 1)} changed: {files}"


def format_arguments(arguments: str) -> str:
    """``a=1, path='x.csv'`` from a call's JSON arguments (raw text if not JSON)."""
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return _one_line(arguments, ARGUMENT_PREVIEW_CHARS)
    if not isinstance(parsed, dict):
        return _one_line(arguments, ARGUMENT_PREVIEW_CHARS)
    parts = [f"{key}={value!r}" for key, value in parsed.items()]
    return _one_line(", ".join(parts), ARGUMENT_PREVIEW_CHARS)


class ProgressView:
    """Prints each step, tool call and result; a spinner shows the step and tokens so far."""

    def __init__(self, console: Console, *, verbose: bool = False, sandbox: str | None = None) -> None:
        self.console = console
        self.verbose = verbose
        self.sandbox = sandbox
        """What isolates the run's code (e.g. ``sandbox bwrap (bubblewrap)``), named in the first line."""
        self._status: Status | None = None
        self._tokens = 0
        self._streamed = False

    def __enter__(self) -> ProgressView:
        self._status = self.console.status("starting…")
        self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()

    def _spin(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)

    def show(self, event: Event) -> None:
        """Render one event."""
        out = self.console
        match event:
            case RunStarted():
                where = f" · {escape(self.sandbox)}" if self.sandbox else ""
                out.print(f"[bold]run {event.run_id}[/] · model [cyan]{escape(event.model)}[/]{where}")
                if event.workspace:
                    out.print(f"workspace: {escape(event.workspace)}")
            case ModelRequest():
                self._spin(f"step {event.step} · thinking · {self._tokens:,} tokens so far")
                if self.verbose:
                    self._show_messages(f"step {event.step} request", event.messages)
            case TextDelta():
                if self.verbose:
                    out.print(escape(event.text), end="")
                    self._streamed = True
            case ModelResponded():
                if self._streamed:
                    out.print()
                    self._streamed = False
                if self.verbose:
                    self._show_messages(f"step {event.step} response ({event.finish_reason})", [event.message])
                elif event.message.text.strip() and event.message.tool_calls:
                    out.print(f"[dim]  {escape(_one_line(event.message.text, RESULT_PREVIEW_CHARS))}[/]")
            case ModelSwitched():
                out.print(
                    f"   [yellow]⇄[/] model [cyan]{escape(event.from_model)}[/] failed ({escape(event.reason)}); "
                    f"switched to [cyan]{escape(event.to_model)}[/]"
                )
                if self.verbose and event.error:
                    out.print(f"     [dim]{escape(event.error)}[/]")
            case ToolCallStarted():
                call = event.call
                out.print(
                    f"[bold]step {event.step}[/] → [green]{call.name}[/]({escape(format_arguments(call.arguments))})"
                )
                self._spin(f"step {event.step} · running {call.name}")
            case ToolCallFinished():
                mark = "[red]✗[/]" if event.is_error else "[green]✓[/]"
                preview = event.content if self.verbose else _one_line(event.content, RESULT_PREVIEW_CHARS)
                out.print(f"   {mark} [dim]{event.duration:.2f}s[/] {escape(preview)}")
            case FilesChanged():
                out.print(f"   [dim]{escape(changes_line(event.changes))}[/]")
            case StepFinished():
                self._tokens = event.usage.total_tokens
                self._spin(f"step {event.step} done · {self._tokens:,} tokens so far")
            case RunFinished():
                style = "green" if event.state is RunState.FINISHED else "red"
                out.print(
                    f"[bold {style}]{event.state.value}[/] ({event.reason}) after {event.step} steps · "
                    f"{event.usage.total_tokens:,} tokens in {event.usage.requests} requests"
                )

    def _show_messages(self, title: str, messages: list[Message]) -> None:
        self.console.rule(escape(title))
        for message in messages:
            self.console.print(f"[bold]{message.role}[/]: {escape(message.text)}")
            for call in message.tool_calls:
                self.console.print(f"  tool call {call.id}: {call.name}({escape(call.arguments)})")


async def run_with_progress(
    agent: Agent, task: str, console: Console, *, verbose: bool = False, sandbox: str | None = None
) -> RunResult:
    """Run ``task``, showing its progress in ``console``; the agent is closed after it."""
    run = agent.start(task)
    try:
        with ProgressView(console, verbose=verbose, sandbox=sandbox) as view:
            async with contextlib.aclosing(run.events()) as events:
                async for event in events:
                    view.show(event)
                    if isinstance(event, RunFinished):
                        break
    finally:
        await agent.aclose()
    return run.result()
