"""The result of a run."""

from __future__ import annotations

from pydantic import BaseModel, Field

from pymanus.agent.events import RunState
from pymanus.messages import Message, Usage


class RunResult(BaseModel):
    """What a finished run hands back."""

    run_id: str
    state: RunState
    output: str
    """The final answer (or, for a run that ended in error, what went wrong)."""
    reason: str
    """Why the run ended, e.g. ``"terminate"``, ``"final_answer"``, ``"max_steps"``."""
    steps: int
    usage: Usage
    messages: list[Message] = Field(default_factory=list)
    workspace: str | None = None

    def summary(self) -> dict[str, object]:
        """The JSON object ``pymanus run --json`` prints."""
        return {
            "run_id": self.run_id,
            "state": self.state.value,
            "output": self.output,
            "steps": self.steps,
            "usage": self.usage.model_dump(),
            "workspace": self.workspace,
        }
