"""The typed events of a run.

Everything a UI, a log or the HTTP stream shows comes from these. Each event carries
the run id, the step it belongs to and a timestamp; ``type`` tags it for JSON.
"""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from pymanus.messages import Message, ToolCall, Usage


class RunState(StrEnum):
    """Where a run is: IDLE → RUNNING → FINISHED or ERROR."""

    IDLE = "idle"
    RUNNING = "running"
    FINISHED = "finished"
    ERROR = "error"


class _Event(BaseModel):
    run_id: str
    step: int = 0
    ts: float = Field(default_factory=time.time)


class RunStarted(_Event):
    """The run began."""

    type: Literal["run_started"] = "run_started"
    task: str
    model: str
    workspace: str | None = None
    tools: list[str] = Field(default_factory=list)


class ModelRequest(_Event):
    """A request is about to go to the model."""

    type: Literal["model_request"] = "model_request"
    model: str
    messages: list[Message]
    """What is sent (after context trimming), so ``--verbose`` can show it."""
    estimated_tokens: int = 0


class TextDelta(_Event):
    """A piece of assistant text as it streams in."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class ModelResponded(_Event):
    """The model answered (the assistant message as recorded)."""

    type: Literal["model_responded"] = "model_responded"
    message: Message
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


class ModelSwitched(_Event):
    """The model failed a request, and the next model of its fallback chain takes the request over."""

    type: Literal["model_switched"] = "model_switched"
    from_model: str
    to_model: str
    reason: str
    """``circuit_open`` (the model's breaker refused the call), else the error's type (``ModelError``)."""
    error: str = ""
    """What went wrong, as the gateway's log record says it."""


class ToolCallStarted(_Event):
    """A tool call is about to run."""

    type: Literal["tool_call_started"] = "tool_call_started"
    call: ToolCall


class ToolCallFinished(_Event):
    """A tool call finished (successfully or not)."""

    type: Literal["tool_call_finished"] = "tool_call_finished"
    call_id: str
    name: str
    content: str
    """The text of the observation the model receives."""
    is_error: bool = False
    duration: float = 0.0


class StepFinished(_Event):
    """A think → act → observe step is complete."""

    type: Literal["step_finished"] = "step_finished"
    usage: Usage
    """Totals of the run so far."""


class PlanUpdated(_Event):
    """The run's plan changed."""

    type: Literal["plan_updated"] = "plan_updated"
    plan: dict[str, Any]


class FileChange(BaseModel):
    """One file a run created, modified or deleted (a rename is a deletion and a creation)."""

    path: str
    """Relative to the workspace."""
    change: Literal["created", "modified", "deleted"]
    size_before: int | None = None
    size_after: int | None = None


class FilesChanged(_Event):
    """Tool calls of this step changed files in the workspace."""

    type: Literal["files_changed"] = "files_changed"
    changes: list[FileChange]


class RunFinished(_Event):
    """The run ended; ``state`` says how and ``reason`` why."""

    type: Literal["run_finished"] = "run_finished"
    state: RunState
    output: str
    reason: str
    usage: Usage


AnyEvent = (
    RunStarted
    | ModelRequest
    | TextDelta
    | ModelResponded
    | ModelSwitched
    | ToolCallStarted
    | ToolCallFinished
    | StepFinished
    | PlanUpdated
    | FilesChanged
    | RunFinished
)
Event = Annotated[AnyEvent, Field(discriminator="type")]
"""Any event, tagged by ``type`` (validate JSON with ``TypeAdapter(Event)``)."""
