"""The think → act → observe loop of one run.

A :class:`Run` owns one conversation and drives it until a termination condition: the
``terminate`` tool, a reply without tool calls (when allowed), the step limit, the
wall-clock limit, a stuck or failing agent, or a model error. Every change of state is
announced as an event.

One step is: build the request (the conversation, plus the reminders of the extensions),
ask the model, then either judge its final answer (the extensions' answer checks may send
it back) or run its tool calls and record one result per call, in call order.

A call that repeats gets a note; the next response is sampled more freely and may not call
the repeated tool. A give-up (``terminate`` with status "failure") drawn in that response is
answered once, with the tool callable again: the loop's own restriction must not end a run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pymanus.agent.events import (
    AnyEvent,
    FileChange,
    FilesChanged,
    ModelRequest,
    ModelResponded,
    ModelSwitched,
    PlanUpdated,
    RunFinished,
    RunStarted,
    RunState,
    StepFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from pymanus.agent.extensions import Extension, settled
from pymanus.agent.guards import FailureGuard, RepeatGuard
from pymanus.agent.limits import Price, RunLimits
from pymanus.agent.notes import (
    AGAIN_HINT,
    GIVE_UP_NOTE,
    NO_TOOL_CALL_NUDGE,
    NOT_FINISHED,
    REPEAT_HINT,
    UNREADABLE_NOTE,
    WITHHELD_NOTE,
    WRAP_UP_PROMPT,
)
from pymanus.agent.result import RunResult, net_file_changes
from pymanus.errors import ModelError, ModelOutputError
from pymanus.messages import Message, Usage
from pymanus.models.base import Model, ModelResponse, ModelSettings, TextChunk, ToolDefinition
from pymanus.models.telemetry import call_scope
from pymanus.tools.tool import ToolContext
from pymanus.tools.toolset import ToolOutcome, Toolset

logger = logging.getLogger("pymanus.agent")
T = TypeVar("T")

EXPLORE_TEMPERATURE = 0.7
"""The least sampling temperature of the request after a repeated call: at a low temperature the
same conversation gives the same reply, so a model that repeated itself would do it again."""

NextStepPrompt = Callable[[str, ToolContext], "str | Awaitable[str | None] | None"]
"""``prompt(task, context)``: the reminder for the next request (``None``: no reminder)."""


@dataclass
class RunSpec:
    """Everything a run needs, fixed before it starts."""

    model: Model
    toolset: Toolset
    system_prompt: str
    settings: ModelSettings
    limits: RunLimits
    finish_on_text: bool
    stream: bool
    context: ToolContext
    next_step_prompt: str | NextStepPrompt | None = None
    extensions: Sequence[Extension] = ()
    on_end: tuple[Callable[[str], Awaitable[None]], ...] = ()
    price: Price | None = None
    """What the model costs, for ``limits.usage.max_cost`` and ``RunResult.cost``."""


@dataclass
class _Steps:
    """The guards of one run's steps."""

    repeats: RepeatGuard
    failures: FailureGuard = field(default_factory=FailureGuard)
    wrap_up: str | None = None
    """Why the run is stuck on a call that succeeds: it gets one last request for its answer."""


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
    _explore: bool = False
    _withheld: set[str] = field(default_factory=set)
    """Tools the next response may not call: the model just repeated calls of them."""
    _held_back: tuple[int, list[str]] | None = None
    """The step whose response was drawn with repeated tools withheld, and those tools."""
    _give_up_answered: bool = False
    _notices: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _changes: list[FileChange] = field(default_factory=list)

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
            changes=net_file_changes(self._changes),
            cost=self.cost if self.spec.price is not None else None,
        )

    async def events(self) -> AsyncGenerator[AnyEvent, None]:
        """Run the loop, yielding an event at every change."""
        try:
            async for event in self._run():
                yield event
        finally:
            await self._release()

    # -- the run -------------------------------------------------------------------------
    async def _run(self) -> AsyncGenerator[AnyEvent, None]:
        spec = self.spec
        self.state = RunState.RUNNING
        spec.context.notify = lambda kind, payload: self._notices.append((kind, payload))
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
            async for event in self._steps():
                yield event
        except TimeoutError:
            self._end(RunState.ERROR, "timeout", f"The run hit its time limit of {spec.limits.timeout:g} s.")
        except ModelOutputError as exc:
            self._end(RunState.ERROR, "unreadable", f"The model's reply could not be read: {exc}")
        except ModelError as exc:
            self._end(RunState.ERROR, "model_error", f"The model request failed: {exc}")
        if self.state is RunState.RUNNING:  # the steps ran out
            self._end(RunState.ERROR, "max_steps", f"The run reached its limit of {spec.limits.max_steps} steps.")
        for event in self._drain_notices():  # e.g. the switches of a request whose whole chain failed
            yield event
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

    async def _start_conversation(self) -> None:
        """The system prompt (with the extensions' instructions) and the task with their briefings."""
        spec = self.spec
        system = "\n\n".join(filter(None, [spec.system_prompt, *(e.instructions for e in spec.extensions)]))
        sections = [self.task]
        for extension in spec.extensions:
            sections.append(await self._extension_text(extension, "briefing", extension.briefing))
        self.messages = [Message.system(system), Message.user("\n\n".join(filter(None, sections)))]

    async def _release(self) -> None:
        """Run the end-of-run hooks once, however the run ended (even if abandoned), and close the run's stores."""
        hooks, self.spec = self.spec.on_end, replace(self.spec, on_end=())
        for hook in hooks:
            try:
                await hook(self.run_id)
            except Exception:
                logger.exception("end-of-run hook failed", extra={"run_id": self.run_id})
        try:
            self.spec.context.close_stores()
        except Exception:
            logger.exception("closing the run's stores failed", extra={"run_id": self.run_id})

    def _end(self, state: RunState, reason: str, output: str) -> None:
        self.state, self.reason, self.output = state, reason, output

    @property
    def cost(self) -> float:
        """What the run's requests cost by the model's price (0 without one)."""
        return self.spec.price.cost(self.usage) if self.spec.price is not None else 0.0

    def _spent(self) -> bool:
        """End the run if it has reached a usage limit; whether it has."""
        reached = self.spec.limits.usage.exceeded(self.usage, self.cost)
        if reached is not None:
            self._end(RunState.ERROR, "usage_limit", reached)
        return reached is not None

    # -- steps ---------------------------------------------------------------------------
    async def _steps(self) -> AsyncGenerator[AnyEvent, None]:
        guards = _Steps(RepeatGuard(self.spec.limits.max_repeats))
        for step in range(1, self.spec.limits.max_steps + 1):
            self.step = self.spec.context.step = step
            async for event in self._step(guards):
                yield event
            if self.state is not RunState.RUNNING:
                return

    async def _step(self, guards: _Steps) -> AsyncGenerator[AnyEvent, None]:
        """One step: ask the model, then judge its answer or run its calls."""
        if self._spent():
            return
        response: ModelResponse | None = None
        async for item in self._ask_readable(await self._request(), self.spec.toolset.definitions()):
            if isinstance(item, ModelResponse):
                response = item
            else:
                yield item
        assert response is not None  # _ask_model always ends with the response
        message = response.message
        self.messages.append(message)
        if message.tool_calls:
            async for event in self._act(message, guards):
                yield event
        else:
            await self._answer_in_text(message.text)
        yield StepFinished(run_id=self.run_id, step=self.step, usage=self.usage)
        if guards.wrap_up is not None and self.state is RunState.RUNNING and not self._spent():
            async for event in self._wrap_up(guards.wrap_up):
                yield event

    async def _answer_in_text(self, text: str) -> None:
        """A reply without tool calls: the final answer, unless it is sent back or not allowed."""
        problem = await self._unfinished(text) if self.spec.finish_on_text else NO_TOOL_CALL_NUDGE
        if problem is None:
            self._end(RunState.FINISHED, "final_answer", text)
        else:
            self.messages.append(Message.user(problem))

    async def _act(self, message: Message, guards: _Steps) -> AsyncGenerator[AnyEvent, None]:
        """Run the calls of ``message`` and record one result per call, in call order."""
        spec = self.spec
        for call in message.tool_calls:
            yield ToolCallStarted(run_id=self.run_id, step=self.step, call=call)
        outcomes = await self._bounded(spec.toolset.run_calls(message.tool_calls, spec.context))
        for event in self._drain_notices():
            yield event
        again = guards.repeats.repeats_last_step(message.tool_calls)
        for outcome in outcomes:
            content = await self._observed(outcome, guards, again=again)
            self.messages.append(Message.tool(outcome.call.id, outcome.call.name, content))
            yield self._finished_event(outcome, content if isinstance(content, str) else outcome.result.text)

    async def _observed(self, outcome: ToolOutcome, guards: _Steps, *, again: bool = False) -> Any:
        """What the model reads for ``outcome``; ends the run when the call ends it (or the guards do).

        ``again``: the step makes exactly the calls of the step before.
        """
        content = outcome.result.content
        ending = outcome.result.end_run
        if ending == "success" and (problem := await self._unfinished(outcome.result.text)) is not None:
            ending, content = None, f"{NOT_FINISHED}{problem}"
        elif ending == "failure" and (note := self._give_up_note()) is not None:
            ending, content = None, note
        times = guards.repeats.observe(outcome, content if isinstance(content, str) else None, step=self.step)
        if isinstance(content, str):
            content += self._repeat_note(outcome.call.name, times, again)
        tool = self.spec.toolset.get(outcome.call.name)
        budget = tool.max_retries if tool is not None else 3
        if self.state is not RunState.RUNNING:
            return content
        if guards.failures.observe(outcome, budget):
            why = f"`{outcome.call.name}` failed {budget + 1} times in a row; last error: {outcome.result.text}"
            self._end(RunState.ERROR, "tool_failures", why)
        elif guards.repeats.exhausted(times):
            stuck = f"The agent repeated the same `{outcome.call.name}` call {times} times without progress."
            if outcome.failure is None and self._can_wrap_up():
                guards.wrap_up = stuck
            else:
                self._end(RunState.ERROR, "stuck", stuck)
        elif ending == "success":
            self._end(RunState.FINISHED, "terminate", outcome.result.text)
        elif ending == "failure":
            self._end(RunState.ERROR, "terminate", outcome.result.text)
        return content

    def _give_up_note(self) -> str | None:
        """Why a give-up is not final: it was drawn while this step's response could not call tools the
        loop withheld after a repeat (once per run, with steps left); ``None`` accepts it."""
        held = self._held_back
        if self._give_up_answered or held is None or held[0] != self.step or self.step >= self.spec.limits.max_steps:
            return None
        self._give_up_answered = True
        names = ", ".join(f"`{name}`" for name in held[1])
        return GIVE_UP_NOTE.format(names=names, they="They" if len(held[1]) > 1 else "It")

    def _repeat_note(self, name: str, times: int, again: bool) -> str:
        """The note for a call of ``name`` made ``times`` times with this result (``again``: in the step
        before too); a repeat also makes the next request sample more freely, without that tool."""
        if times < 2 and not again:
            return ""
        self._explore = True
        if name != "terminate" and name in self.spec.toolset:
            self._withheld.add(name)
        note = REPEAT_HINT if times == 2 else AGAIN_HINT if again and times == 1 else ""
        return note + WITHHELD_NOTE.format(name=name) if note and name in self._withheld else note

    def _can_wrap_up(self) -> bool:
        tool = self.spec.toolset.get("terminate")
        return self.spec.limits.wrap_up and tool is not None and tool.exclusive

    async def _wrap_up(self, stuck: str) -> AsyncGenerator[AnyEvent, None]:
        """One last request offering only ``terminate``; the run ends either way."""
        spec = self.spec
        tools = spec.toolset.definitions()
        others = [tool.name for tool in tools if tool.name != "terminate"]
        response: ModelResponse | None = None
        async for item in self._ask_model([*self.messages, Message.user(WRAP_UP_PROMPT)], tools, withheld=others):
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
            for event in self._drain_notices():
                yield event
            for outcome in outcomes:  # every call gets its answer, as the protocol requires
                self.messages.append(Message.tool(outcome.call.id, outcome.call.name, outcome.result.content))
                yield self._finished_event(outcome, outcome.result.text)
                if outcome.call.name == "terminate":
                    answer, ending = outcome.result.text, outcome.result.end_run
        if ending == "success" and await self._unfinished(answer) is None:
            self._end(RunState.FINISHED, "terminate" if message.tool_calls else "final_answer", answer)
        else:
            self._end(RunState.ERROR, "stuck", stuck)
        yield StepFinished(run_id=self.run_id, step=self.step, usage=self.usage)

    # -- extensions ----------------------------------------------------------------------
    async def _unfinished(self, answer: str) -> str | None:
        """What the answer checks find wrong with a final answer, while rejections remain."""
        if self._rejections >= self.spec.limits.max_rejections:
            return None
        problems = []
        for extension in self.spec.extensions:
            check = extension.check_answer
            problems.append(await self._extension_text(extension, "answer check", check, answer))
        problem = "; ".join(filter(None, problems)) or None
        if problem is not None:
            self._rejections += 1
            logger.info("answer sent back: %s", problem, extra=self._log_extra())
        return problem

    async def _extension_text(self, extension: Extension, what: str, method: Callable[..., Any], *args: str) -> str:
        """What an extension's method returns; one that raises (a bug in it) is logged and adds nothing."""
        try:
            return await settled(method(self.task, *args, self.spec.context)) or ""
        except Exception:
            logger.warning("the %s of %s failed; ignored", what, extension.name, exc_info=True, extra=self._log_extra())
            return ""

    async def _request(self) -> list[Message]:
        """The messages of the next request: the conversation and, after the first step, the reminders."""
        spec = self.spec
        if self.step == 1:
            return self.messages
        reminders = []
        prompt = spec.next_step_prompt
        if isinstance(prompt, str):
            reminders.append(prompt)
        elif prompt is not None:
            written: str | None = await settled(prompt(self.task, spec.context))
            reminders.append(written or "")
        for extension in spec.extensions:
            reminders.append(await self._extension_text(extension, "reminder", extension.reminder))
        reminder = "\n\n".join(filter(None, reminders))
        return [*self.messages, Message.user(reminder)] if reminder else self.messages

    # -- the model -----------------------------------------------------------------------
    async def _ask_readable(
        self, request: list[Message], tools: list[ToolDefinition]
    ) -> AsyncGenerator[AnyEvent | ModelResponse, None]:
        """:meth:`_ask_model`, asked once more with :data:`UNREADABLE_NOTE` when its reply cannot be read;
        a second unreadable reply ends the run."""
        try:
            async for item in self._ask_model(request, tools):
                yield item
        except ModelOutputError as exc:
            logger.warning("the model's reply could not be read (%s); asking again", exc, extra=self._log_extra())
            async for item in self._ask_model([*request, Message.user(UNREADABLE_NOTE)], tools):
                yield item

    async def _ask_model(
        self, request: list[Message], tools: list[ToolDefinition], *, withheld: Collection[str] = ()
    ) -> AsyncGenerator[AnyEvent | ModelResponse, None]:
        """Send ``request``; yield text deltas, then the :class:`ModelResponse`.

        ``withheld``: tools the response may not call (they stay in the request, see
        ``ModelSettings.allowed_tools``, so a local model's prompt cache holds).
        """
        spec = self.spec
        settings = spec.settings
        if self._explore and (settings.temperature or 0.0) < EXPLORE_TEMPERATURE:
            settings = settings.model_copy(update={"temperature": EXPLORE_TEMPERATURE})
        if self._withheld:
            self._held_back = (self.step, sorted(self._withheld))
        withheld = {*withheld, *self._withheld}
        self._explore, self._withheld = False, set()
        if withheld:
            settings = settings.model_copy(update={"allowed_tools": [t.name for t in tools if t.name not in withheld]})
        yield ModelRequest(run_id=self.run_id, step=self.step, model=spec.model.name, messages=request)
        started = time.perf_counter()
        if spec.stream:
            response = None
            stream = aiter(spec.model.stream(request, tools, settings))
            while response is None:
                try:
                    with call_scope(listener=spec.context.notify, **self._log_extra()):
                        item = await self._bounded(anext(stream))
                except StopAsyncIteration:
                    raise ModelError(f"{spec.model.name} ended its stream without a response") from None
                for event in self._drain_notices():
                    yield event
                if isinstance(item, TextChunk):
                    yield TextDelta(run_id=self.run_id, step=self.step, text=item.text)
                else:
                    response = item
        else:
            with call_scope(listener=spec.context.notify, **self._log_extra()):
                response = await self._bounded(spec.model.request(request, tools, settings))
            for event in self._drain_notices():
                yield event
        self.usage = self.usage + response.usage
        spec.context.finish_reason = response.finish_reason
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

    # -- events --------------------------------------------------------------------------
    def _log_extra(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "step": self.step}

    def _drain_notices(self) -> list[PlanUpdated | FilesChanged | ModelSwitched]:
        """Turn what tools and the model reported during the last calls into events (and files changed
        into the result)."""
        events: list[PlanUpdated | FilesChanged | ModelSwitched] = []
        changed: list[FileChange] = []
        for kind, payload in self._notices:
            if kind == "plan":
                events.append(PlanUpdated(run_id=self.run_id, step=self.step, plan=payload))
            elif kind == "model_switch":
                events.append(ModelSwitched(run_id=self.run_id, step=self.step, **payload))
            elif kind == "files":
                changed += [FileChange.model_validate(change) for change in payload.get("changes", [])]
        self._notices.clear()
        if changed:
            self._changes += changed
            events.append(FilesChanged(run_id=self.run_id, step=self.step, changes=changed))
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
