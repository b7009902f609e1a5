"""``Agent``: the public entry point of a run."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pymanus.agent.events import Event, RunFinished
from pymanus.agent.extensions import AnswerCheck, AnswerCheckExtension, Extension
from pymanus.agent.limits import Price, RunLimits, UsageLimits
from pymanus.agent.loop import NextStepPrompt, Run, RunSpec
from pymanus.agent.result import RunResult
from pymanus.models.base import Model, ModelSettings
from pymanus.tools.builtin.terminate import terminate
from pymanus.tools.middleware import ToolMiddleware
from pymanus.tools.tool import Tool, ToolContext
from pymanus.tools.toolset import Toolset

if TYPE_CHECKING:
    from pymanus.sandbox.history import UndoReport

DEFAULT_SYSTEM_PROMPT = (
    "You are PyManus, an autonomous agent that completes the user's task by calling tools. "
    "Think about what is needed, call the tools that do it, read their results, and go on until the task "
    'is done. When it is done, call `terminate` with status "success" and your final answer for the '
    'user; if it cannot be done, call `terminate` with status "failure" and say why.'
)


class Agent:
    """An autonomous agent: a model, tools, and the limits of its runs.

    Args:
        model: a :class:`~pymanus.models.Model`, or a model string (``"openai:gpt-4o-mini"``,
            ``"local:qwen2.5-coder-1.5b"``, ``"local:/path/model.gguf"``); ``None`` takes the
            configured model, else the embedded default.
        tools: the tools offered, as ``@tool`` objects or plain functions.
        system_prompt: replaces the default instructions.
        next_step_prompt: a reminder sent after every step (not kept in the history), or a
            function ``(task, context) -> str | None`` that writes it from the run's progress.
        max_steps: steps before the run ends in error.
        timeout: wall-clock seconds for a whole run.
        max_repeats: identical calls with identical results (same tool, arguments and result)
            that end a run as stuck; the first repeat earns a hint.
        wrap_up: when the repeated call succeeds, ask once more, offering only ``terminate``,
            for the final answer before ending the run as stuck.
        terminate_tool: offer the ``terminate`` tool (the usual way to finish).
        finish_on_text: a reply without tool calls is the final answer; when False the
            model is reminded to call a tool and the run goes on.
        stream: stream model output (``TextDelta`` events) when the model supports it.
        settings: sampling settings for every request.
        workspace: the folder tools work in; passed to tools in their context.
        deps: any object the application wants its tools to see (``ToolContext.deps``).
        answer_checks: ``check(task, answer, context) -> str | None`` functions run before a
            final answer is accepted; a returned problem goes back to the model (twice at most)
            instead of ending the run.
        middleware: :class:`~pymanus.tools.middleware.ToolMiddleware` every tool call goes through.
        extensions: :class:`~pymanus.agent.extensions.Extension` objects adding instructions,
            a briefing to the first message, per-step reminders, answer checks and middleware.
        usage_limits: the requests, tokens and cost a run may spend (:class:`UsageLimits`).
        price: what the model costs per million tokens, for ``usage_limits.max_cost`` and
            ``RunResult.cost``.
    """

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        system_prompt: str | None = None,
        next_step_prompt: str | NextStepPrompt | None = None,
        max_steps: int = 30,
        timeout: float | None = None,
        max_repeats: int = 3,
        wrap_up: bool = True,
        terminate_tool: bool = True,
        finish_on_text: bool = True,
        stream: bool = False,
        settings: ModelSettings | None = None,
        workspace: str | Path | None = None,
        deps: Any = None,
        answer_checks: Sequence[AnswerCheck] = (),
        middleware: Sequence[ToolMiddleware] = (),
        extensions: Sequence[Extension] = (),
        usage_limits: UsageLimits | None = None,
        price: Price | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.extensions = [*extensions, *(AnswerCheckExtension(check) for check in answer_checks)]
        layers = [*middleware, *(e.middleware for e in self.extensions if e.middleware is not None)]
        self.toolset = Toolset(tools, layers)
        if terminate_tool and "terminate" not in self.toolset:
            self.toolset.add(terminate)
        self._model_spec = model
        self._model: Model | None = model if isinstance(model, Model) else None
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT
        self.next_step_prompt = next_step_prompt
        self.limits = RunLimits(
            max_steps=max_steps,
            timeout=timeout,
            max_repeats=max_repeats,
            usage=usage_limits or UsageLimits(),
            wrap_up=wrap_up,
        )
        self.price = price
        self.finish_on_text = finish_on_text
        self.stream = stream
        self.settings = settings or ModelSettings()
        self.workspace = Path(workspace) if workspace is not None else Path("workspace")
        self.deps = deps
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._run_end_hooks: list[Callable[[str], Awaitable[None]]] = []

    def on_run_end(self, hook: Callable[[str], Awaitable[None]]) -> None:
        """Register a coroutine function awaited with the run id when a run ends (e.g. to stop its processes)."""
        self._run_end_hooks.append(hook)

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Register a coroutine function :meth:`aclose` awaits (e.g. to stop tool processes)."""
        self._closers.append(closer)

    @property
    def model(self) -> Model:
        """The model, resolved from its string on first use."""
        if self._model is None:
            from pymanus.models.resolve import resolve_model

            spec = self._model_spec
            if spec is None:
                from pymanus.config import Settings

                spec = Settings.load().model.name
            self._model = resolve_model(spec)
        return self._model

    def start(self, task: str) -> Run:
        """Prepare a run of ``task``: drive it with ``run.events()``, then read ``run.result()``."""
        context = ToolContext(run_id=uuid.uuid4().hex[:12], workspace=self.workspace.resolve(), deps=self.deps)
        spec = RunSpec(
            model=self.model,
            toolset=self.toolset,
            system_prompt=self.system_prompt,
            settings=self.settings,
            limits=self.limits,
            finish_on_text=self.finish_on_text,
            stream=self.stream,
            context=context,
            next_step_prompt=self.next_step_prompt,
            extensions=tuple(self.extensions),
            on_end=tuple(self._run_end_hooks),
            price=self.price,
        )
        return Run(spec=spec, task=task)

    async def iter(self, task: str) -> AsyncIterator[Event]:
        """Run ``task``, yielding every event; the last one is :class:`RunFinished`.

        To stop early, close the iterator (``contextlib.aclosing``) so the run's
        processes are released at once rather than when it is garbage-collected.
        """
        run = self.start(task)
        async with contextlib.aclosing(run.events()) as events:
            async for event in events:
                yield event

    async def run(self, task: str) -> RunResult:
        """Run ``task`` to the end and return its result."""
        run = self.start(task)
        async with contextlib.aclosing(run.events()) as events:
            async for event in events:
                if isinstance(event, RunFinished):
                    break
        return run.result()

    async def aclose(self) -> None:
        """Release what the agent holds (model connections, tool processes)."""
        for closer in self._closers:
            await closer()
        if self._model is not None:
            await self._model.aclose()

    def undo(self, run_id: str, *, step: int | None = None, force: bool = False) -> UndoReport:
        """Put back the files run ``run_id`` changed in this agent's workspace (from ``step`` on).

        Needs the run to have been journaled (the Manus preset does it; else add
        :class:`~pymanus.tools.journaling.FileJournal` to ``middleware``). Files changed
        since the run are left alone and listed in the report, unless ``force``.
        Raises :class:`~pymanus.sandbox.journal.JournalError` for an unknown run or a
        saved copy that is missing or corrupted (then nothing is changed).
        """
        from pymanus.sandbox.history import undo_run

        return undo_run(self.workspace, run_id, from_step=step, force=force)

    def run_sync(self, task: str) -> RunResult:
        """Blocking :meth:`run`, for scripts; inside a running loop (a notebook) it runs in a thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(task))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.run(task)).result()
