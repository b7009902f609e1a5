"""The think → act → observe loop of one run.

A :class:`Run` owns one conversation and drives it until a termination condition:
the ``terminate`` tool, a reply without tool calls (when allowed), the step limit,
the wall-clock limit, a stuck or failing agent, or a model error. Every change of
state is announced as an event.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pymanus.agent.attempts import ATTEMPT_TEMPERATURE, MIN_ATTEMPT_STEPS, RESTARTABLE, AttemptErrors, restart_note
from pymanus.agent.events import (
    AnyEvent,
    ModelRequest,
    ModelResponded,
    PlanUpdated,
    RunFinished,
    RunRestarted,
    RunStarted,
    RunState,
    StepFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from pymanus.agent.guards import (
    REPEAT_HINT,
    FailureGuard,
    RepeatGuard,
    StepLog,
    parrots_sent_back,
    repeated_step,
    sent_back_note,
)
from pymanus.agent.hooks import CompletionCheck, DoneCheck, NextStepPrompt, TaskMessage
from pymanus.agent.limits import RunLimits
from pymanus.agent.notes import (
    EARLIER_REPEAT_NOTE,
    FAILED_AGAIN_NOTE,
    GAVE_UP_NOTE,
    NO_TOOL_CALL_NUDGE,
    NOT_FINISHED,
    PARROT_NOTE,
    RESAMPLE_NOTE,
    SENT_BACK_QUOTED_CHARS,
    SENT_BACK_REPEAT_NOTE,
    UNREADABLE_NOTE,
    WITHHELD_NOTE,
    WRAP_UP_PROMPT,
)
from pymanus.agent.request_settings import request_settings
from pymanus.agent.result import RunResult
from pymanus.agent.snapshot import WorkspaceSnapshot
from pymanus.errors import ModelError, ModelOutputError
from pymanus.messages import Message, Usage
from pymanus.models.base import Model, ModelResponse, ModelSettings, TextChunk, ToolDefinition
from pymanus.tools.builtin.workspace_scan import scan
from pymanus.tools.tool import ToolContext
from pymanus.tools.toolset import ToolOutcome, Toolset

logger = logging.getLogger("pymanus.agent")
T = TypeVar("T")

EXPLORE_TEMPERATURE = 0.8
"""Sampling temperature of the request after a repeated call (deterministic models loop)."""


async def _settled(value: T | Awaitable[T]) -> T:
    """A hook's value, awaited when the hook is a coroutine function."""
    return await value if inspect.isawaitable(value) else value


@dataclass
class RunSpec:
    """Everything a run needs, fixed before it starts."""

    model: Model
    toolset: Toolset
    system_prompt: str
    next_step_prompt: str | NextStepPrompt | None
    settings: ModelSettings
    limits: RunLimits
    finish_on_text: bool
    stream: bool
    context: ToolContext
    completion_check: CompletionCheck | None = None
    task_message: TaskMessage | None = None
    done_check: DoneCheck | None = None
    on_end: tuple[Callable[[str], Awaitable[None]], ...] = ()
    on_restart: tuple[Callable[[str], Awaitable[None]], ...] = ()
    """Awaited with the run id when a run starts another attempt (to drop per-run tool state)."""


@dataclass
class Run:
    """One run of the loop; iterate :meth:`events` to drive it."""

    spec: RunSpec
    task: str
    messages: list[Message] = field(default_factory=list)
    state: RunState = RunState.IDLE
    usage: Usage = field(default_factory=Usage)
    step: int = 0
    output: str = ""
    reason: str = ""
    _deadline: float | None = None
    _rejections: int = 0
    _failures_sent_back: int = 0
    _explore: bool = False
    attempt: int = 1
    _unresolved: str | None = None
    """What the completion check still found in an answer accepted once its rejections ran out."""
    _snapshot: WorkspaceSnapshot | None = None
    _errors: AttemptErrors = field(default_factory=AttemptErrors)
    _notices: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        """The id of this run."""
        return self.spec.context.run_id

    def result(self) -> RunResult:
        """The run's result as it stands."""
        return RunResult(
            run_id=self.run_id,
            state=self.state,
            output=self.output,
            reason=self.reason,
            steps=self.step,
            usage=self.usage,
            messages=list(self.messages),
            workspace=str(self.spec.context.workspace),
        )

    async def events(self) -> AsyncGenerator[AnyEvent, None]:
        """Run the loop, yielding an event at every change."""
        try:
            async for event in self._run():
                yield event
        finally:
            await self._release()

    async def _run(self) -> AsyncGenerator[AnyEvent, None]:
        spec = self.spec
        self.state = RunState.RUNNING
        spec.context.notify = lambda kind, payload: self._notices.append((kind, payload))
        if spec.limits.attempts > 1:
            self._snapshot = await asyncio.to_thread(WorkspaceSnapshot.take, spec.context.workspace)
        await self._start_conversation()
        yield RunStarted(
            run_id=self.run_id,
            task=self.task,
            model=spec.model.name,
            workspace=str(spec.context.workspace),
            tools=spec.toolset.names,
        )
        if spec.limits.timeout is not None:
            self._deadline = asyncio.get_running_loop().time() + spec.limits.timeout
        try:
            async for event in self._attempt_steps():
                yield event
            while self._can_restart() and await self._undo_attempt():
                yield RunRestarted(
                    run_id=self.run_id, step=self.step, attempt=self.attempt + 1, reason=self.reason, output=self.output
                )
                await self._start_over()
                async for event in self._attempt_steps():
                    yield event
        except TimeoutError:
            self._end(RunState.ERROR, "timeout", f"The run hit its time limit of {spec.limits.timeout:g} s.")
        except ModelError as exc:
            self._end(RunState.ERROR, "model_error", f"The model request failed: {exc}")
        if self.state is RunState.RUNNING:  # the steps ran out
            self._end(RunState.ERROR, "max_steps", f"The run reached its limit of {spec.limits.max_steps} steps.")
        logger.info(
            "run finished: %s (%s)",
            self.state.value,
            self.reason,
            extra={**self._log_extra(), "state": self.state.value, "reason": self.reason},
        )
        await self._release()
        yield RunFinished(
            run_id=self.run_id,
            step=self.step,
            state=self.state,
            output=self.output,
            reason=self.reason,
            usage=self.usage,
        )

    async def _start_conversation(self, note: str = "") -> None:
        spec = self.spec
        first = await _settled(spec.task_message(self.task, spec.context)) if spec.task_message else self.task
        self.messages = [Message.system(spec.system_prompt), Message.user(first + note)]

    def _another_attempt_possible(self) -> bool:
        limits = self.spec.limits
        return (
            self.attempt < limits.attempts
            and limits.max_steps - self.step >= MIN_ATTEMPT_STEPS
            and self._snapshot is not None
        )

    def _can_restart(self) -> bool:
        return self.state is RunState.ERROR and self.reason in RESTARTABLE and self._another_attempt_possible()

    def _finish(self, reason: str, answer: str) -> None:
        """End the run with ``answer``, unless the completion check still doubts it and another attempt may start."""
        if self._unresolved is None:
            self._end(RunState.FINISHED, reason, answer)
        else:
            self._end(RunState.ERROR, "unfinished", f"{answer}\nStill unfinished: {self._unresolved}")

    async def _undo_attempt(self) -> bool:
        """Put the workspace back as the run found it; False (and the run ends as it is) if that fails."""
        assert self._snapshot is not None
        logger.info(
            "attempt %d failed (%s); starting over",
            self.attempt,
            self.reason,
            extra={**self._log_extra(), "reason": self.reason},
        )
        try:
            await asyncio.to_thread(self._snapshot.restore)
        except OSError as exc:
            logger.warning("could not put the workspace back (%s); the run ends with its failed attempt", exc)
            return False
        return True

    async def _start_over(self) -> None:
        """Start the conversation again (the workspace is already put back) with how the last attempt ended."""
        spec, why = self.spec, self.output
        for hook in spec.on_restart:
            await hook(self.run_id)
        spec.context.state.clear()
        self.attempt += 1
        self.state, self.reason, self.output = RunState.RUNNING, "", ""
        self._rejections = self._failures_sent_back = 0
        self._unresolved, self._explore = None, False
        note, self._errors = restart_note(why, self._errors), AttemptErrors()
        await self._start_conversation(note)

    async def _release(self) -> None:
        """Run the end-of-run hooks once, however the run ended (even if abandoned)."""
        if self._snapshot is not None:
            await asyncio.to_thread(self._snapshot.discard)
            self._snapshot = None
        hooks, self.spec = self.spec.on_end, replace(self.spec, on_end=())
        for hook in hooks:
            try:
                await hook(self.run_id)
            except Exception:
                logger.exception("end-of-run hook failed", extra={"run_id": self.run_id})

    def _end(self, state: RunState, reason: str, output: str) -> None:
        self.state, self.reason, self.output = state, reason, output

    async def _attempt_steps(self) -> AsyncGenerator[AnyEvent, None]:
        """The steps of one attempt; a reply that cannot be read even when asked again ends the attempt.

        The 1.5B began project_layout with one python call that wrote every file and never closed
        its string, twice: the run ended there, with 14 of its 15 steps and its second attempt unused.
        """
        try:
            async for event in self._steps():
                yield event
        except ModelOutputError as exc:
            self._end(RunState.ERROR, "unreadable", f"The model's reply could not be read: {exc}")

    async def _steps(self) -> AsyncGenerator[AnyEvent, None]:
        spec = self.spec
        repeats = RepeatGuard(spec.limits.max_repeats)
        failures = FailureGuard()
        recent = StepLog()
        for step in range(self.step + 1, spec.limits.max_steps + 1):
            self.step = spec.context.step = step
            request, tools = await self._request()
            response: ModelResponse | None = None
            note: str | None = None
            withheld: set[str] = set()
            for _ in range(max(0, spec.limits.resample_repeats) + 1):
                if note is not None:
                    logger.info("the response repeats calls without effect; sampling again", extra=self._log_extra())
                asked = [*request, Message.user(note)] if note else request
                async for item in self._ask_readable(asked, tools, explore=note is not None, withheld=withheld):
                    if isinstance(item, ModelResponse):
                        response = item
                    else:
                        yield item
                assert response is not None  # _ask_model always ends with the response
                repeated = repeated_step(self.messages, response.message)
                if parrots_sent_back(self.messages, response.message):
                    note, withheld = PARROT_NOTE, {"terminate"}
                    continue
                if repeated == "previous":
                    note = RESAMPLE_NOTE
                elif repeated == "before_answer":  # the answer's note may ask for that tool, so none is withheld
                    note = SENT_BACK_REPEAT_NOTE.format(
                        sent_back=sent_back_note(self.messages)[:SENT_BACK_QUOTED_CHARS]
                    )
                elif recent.repeats_unchanged(response.message):
                    note = EARLIER_REPEAT_NOTE
                elif repeats.doomed(response.message.tool_calls):
                    note = FAILED_AGAIN_NOTE
                else:
                    break
                calls = response.message.tool_calls if repeated != "before_answer" else []
                withheld = {c.name for c in calls if c.name != "terminate"}
                if withheld:
                    note += WITHHELD_NOTE.format(names=", ".join(f"`{name}`" for name in sorted(withheld)))
            assert response is not None
            message = response.message
            self.messages.append(message)
            if not message.tool_calls:
                problem = await self._unfinished(message.text) if spec.finish_on_text else NO_TOOL_CALL_NUDGE
                if problem is None:
                    self._finish("final_answer", message.text)
                    return
                self.messages.append(Message.user(problem))
                yield StepFinished(run_id=self.run_id, step=step, usage=self.usage)
                continue

            wrap_up: str | None = None
            for call in message.tool_calls:
                yield ToolCallStarted(run_id=self.run_id, step=step, call=call)
            outcomes = await self._bounded(spec.toolset.run_calls(message.tool_calls, spec.context))
            for event in self._drain_notices():
                yield event
            recent.record(message, outcomes, await asyncio.to_thread(scan, spec.context.workspace))
            for outcome in outcomes:
                content = outcome.result.content
                ending = outcome.result.end_run
                gave_up = ending == "failure"
                if ending and (problem := await self._unfinished(outcome.result.text, gave_up=gave_up)) is not None:
                    sent_back = GAVE_UP_NOTE.format(problem=problem) if gave_up else f"{NOT_FINISHED}{problem}"
                    ending, content = None, sent_back
                if outcome.result.is_error:
                    self._errors.observe(outcome.call.name, outcome.result.text)
                times = repeats.observe(outcome, content if isinstance(content, str) else None)
                if times >= 2:
                    self._explore = True
                if times == 2 and isinstance(content, str):
                    content += REPEAT_HINT
                self.messages.append(Message.tool(outcome.call.id, outcome.call.name, content))
                yield self._finished_event(outcome, content if isinstance(content, str) else outcome.result.text)
                tool = spec.toolset.get(outcome.call.name)
                budget = tool.max_retries if tool is not None else 3
                if failures.observe(outcome, budget):
                    self._end(
                        RunState.ERROR,
                        "tool_failures",
                        f"`{outcome.call.name}` failed {budget + 1} times in a row; last error: {outcome.result.text}",
                    )
                elif repeats.exhausted(times) and self.state is RunState.RUNNING:
                    stuck = f"The agent repeated the same `{outcome.call.name}` call {times} times without progress."
                    if outcome.failure is None and self._can_wrap_up():
                        wrap_up = stuck
                    else:
                        self._end(RunState.ERROR, "stuck", stuck)
                elif ending == "success" and self.state is RunState.RUNNING:
                    self._finish("terminate", outcome.result.text)
                elif ending is not None and self.state is RunState.RUNNING:
                    self._end(RunState.ERROR, "terminate", outcome.result.text)
            yield StepFinished(run_id=self.run_id, step=step, usage=self.usage)
            if wrap_up is not None and self.state is RunState.RUNNING:
                async for last in self._wrap_up(wrap_up):
                    yield last
            elif (
                self.state is RunState.RUNNING
                and all(outcome.failure is None for outcome in outcomes)
                and (answer := await self._done_answer()) is not None
            ):
                self._finish("done_check", answer)
            if self.state is not RunState.RUNNING:
                return

    def _log_extra(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "step": self.step}

    def _can_wrap_up(self) -> bool:
        tool = self.spec.toolset.get("terminate")
        return self.spec.limits.wrap_up and tool is not None and tool.exclusive

    async def _wrap_up(self, stuck: str) -> AsyncGenerator[AnyEvent, None]:
        """One last request offering only ``terminate``; the run ends either way."""
        spec = self.spec
        response: ModelResponse | None = None
        request, tools = await self._request(final=True)
        others = [tool.name for tool in tools if tool.name != "terminate"]
        async for item in self._ask_model(request, tools, withheld=others):
            if isinstance(item, ModelResponse):
                response = item
            else:
                yield item
        assert response is not None
        message = response.message
        self.messages.append(message)
        answer, ending = message.text, "success" if message.text and spec.finish_on_text else None
        if message.tool_calls:
            for call in message.tool_calls:
                yield ToolCallStarted(run_id=self.run_id, step=self.step, call=call)
            outcomes = await self._bounded(spec.toolset.run_calls(message.tool_calls, spec.context))
            for outcome in outcomes:  # every call gets its answer, as the protocol requires
                self.messages.append(Message.tool(outcome.call.id, outcome.call.name, outcome.result.content))
                yield self._finished_event(outcome, outcome.result.text)
                if outcome.call.name == "terminate":
                    answer, ending = outcome.result.text, outcome.result.end_run
        if ending == "success" and await self._unfinished(answer) is None:
            self._finish("terminate" if message.tool_calls else "final_answer", answer)
        else:
            self._end(RunState.ERROR, "stuck", stuck)
        yield StepFinished(run_id=self.run_id, step=self.step, usage=self.usage)

    async def _unfinished(self, answer: str, *, gave_up: bool = False) -> str | None:
        """What the completion check finds missing in a final answer, while rejections remain.

        ``gave_up``: the answer ends the run with status "failure" (checked as any answer, while
        steps remain to act on the problem).
        """
        limits = self.spec.limits  # without a check, _check_answer finds nothing and nothing is rejected
        if self._rejections >= limits.max_rejections:
            self._unresolved = None
            if not gave_up and self._another_attempt_possible():  # start over rather than accept it
                self._unresolved = await self._check_answer(answer)
            return None
        if gave_up and (self._failures_sent_back >= limits.failure_rejections or self.step >= limits.max_steps):
            return None
        problem = await self._check_answer(answer)
        if problem is not None:
            self._rejections += 1
            self._failures_sent_back += gave_up
        return problem

    async def _done_answer(self) -> str | None:
        """The done check's answer; one that raises (a bug in a check) is logged and the run goes on."""
        done, context = self.spec.done_check, self.spec.context
        try:
            return await _settled(done(self.task, context)) if done else None
        except Exception:
            logger.warning("the done check failed; the run goes on", exc_info=True, extra=self._log_extra())
            return None

    async def _check_answer(self, answer: str) -> str | None:
        """The completion check's verdict; one that raises (a bug in a check) is logged and accepts the answer."""
        check, context = self.spec.completion_check, self.spec.context
        try:
            return await _settled(check(self.task, answer, context)) if check else None
        except Exception:
            extra = self._log_extra()
            logger.warning("the completion check failed; the answer is accepted", exc_info=True, extra=extra)
            return None

    def _drain_notices(self) -> list[PlanUpdated]:
        """Turn what tools reported during the last calls into events."""
        events = [
            PlanUpdated(run_id=self.run_id, step=self.step, plan=payload)
            for kind, payload in self._notices
            if kind == "plan"
        ]
        self._notices.clear()
        return events

    def _finished_event(self, outcome: ToolOutcome, text: str) -> ToolCallFinished:
        return ToolCallFinished(
            run_id=self.run_id,
            step=self.step,
            call_id=outcome.call.id,
            name=outcome.call.name,
            content=text,
            is_error=outcome.result.is_error,
            duration=outcome.duration,
        )

    async def _request(self, *, final: bool = False) -> tuple[list[Message], list[ToolDefinition]]:
        """The messages and tools of the next request: the conversation and the reminder.

        ``final``: the wrap-up request (the caller lets it call only ``terminate``; every tool
        stays in the request, so a local model's prompt cache holds).
        """
        spec = self.spec
        tools = spec.toolset.definitions()
        if final:
            return [*self.messages, Message.user(WRAP_UP_PROMPT)], tools
        if spec.next_step_prompt and self.step > 1:
            prompt = spec.next_step_prompt
            reminder = prompt if isinstance(prompt, str) else await _settled(prompt(self.task, spec.context))
            if reminder:
                return [*self.messages, Message.user(reminder)], tools
        return self.messages, tools

    async def _ask_readable(
        self, request: list[Message], tools: list[ToolDefinition], *, explore: bool, withheld: Collection[str]
    ) -> AsyncGenerator[AnyEvent | ModelResponse, None]:
        """:meth:`_ask_model`, asked once more with :data:`UNREADABLE_NOTE` when its reply cannot be read.

        A small model that loops until it is cut off would otherwise end the run at that step
        (the 1.5B, writing a file); a second unreadable reply does.
        """
        try:
            async for item in self._ask_model(request, tools, explore=explore, withheld=withheld):
                yield item
        except ModelOutputError as exc:
            logger.warning("the model's reply could not be read (%s); asking again", exc, extra=self._log_extra())
            retry = [*request, Message.user(UNREADABLE_NOTE)]
            async for item in self._ask_model(retry, tools, explore=True, withheld=withheld):
                yield item

    async def _ask_model(
        self,
        request: list[Message],
        tools: list[ToolDefinition],
        *,
        explore: bool = False,
        withheld: Collection[str] = (),
    ) -> AsyncGenerator[AnyEvent | ModelResponse, None]:
        """Send ``request``; yield text deltas, then the :class:`ModelResponse`.

        ``explore``: sample more freely (the model is repeating itself); ``withheld``: tools
        the response may not call (they stay in the request, see ``ModelSettings.allowed_tools``).
        """
        spec = self.spec
        floor = ATTEMPT_TEMPERATURE if self.attempt > 1 else None
        if explore or self._explore:  # the model repeated itself: sample more freely to break the loop
            self._explore = False
            floor = EXPLORE_TEMPERATURE
        settings = await request_settings(spec.settings, spec.context, tools, min_temperature=floor, withheld=withheld)
        yield ModelRequest(run_id=self.run_id, step=self.step, model=spec.model.name, messages=request)
        started = time.perf_counter()
        if spec.stream:
            response = None
            stream = aiter(spec.model.stream(request, tools, settings))
            while response is None:
                try:
                    item = await self._bounded(anext(stream))
                except StopAsyncIteration:
                    raise ModelError(f"{spec.model.name} ended its stream without a response") from None
                if isinstance(item, TextChunk):
                    yield TextDelta(run_id=self.run_id, step=self.step, text=item.text)
                else:
                    response = item
        else:
            response = await self._bounded(spec.model.request(request, tools, settings))
        self.usage = self.usage + response.usage
        logger.info(
            "model call %s",
            spec.model.name,
            extra={
                **self._log_extra(),
                "model": spec.model.name,
                "finish_reason": response.finish_reason,
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "tool_calls": len(response.message.tool_calls),
                "duration_s": round(time.perf_counter() - started, 4),
            },
        )
        yield ModelResponded(
            run_id=self.run_id,
            step=self.step,
            message=response.message,
            finish_reason=response.finish_reason,
            usage=response.usage,
        )
        yield response

    async def _bounded(self, awaitable: Awaitable[T]) -> T:
        """Await within the run's wall-clock limit.

        The limit wraps each await rather than the whole generator: a timeout scope
        must never span a ``yield``, or its cancellation would land in the consumer.
        """
        if self._deadline is None:
            return await awaitable
        async with asyncio.timeout_at(self._deadline):
            return await awaitable
