"""The result of a run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from pymanus.agent.events import FileChange, RunState
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
    changes: list[FileChange] = Field(default_factory=list)
    cost: float | None = None
    """What the run's requests cost by the model's price (``None``: no price was given)."""
    """The files the run created, modified and deleted, each once, as the run left them."""

    def summary(self) -> dict[str, object]:
        """The JSON object ``pymanus run --json`` prints."""
        return {
            "run_id": self.run_id,
            "state": self.state.value,
            "output": self.output,
            "steps": self.steps,
            "usage": self.usage.model_dump(),
            "workspace": self.workspace,
            "changes": [change.model_dump() for change in self.changes],
        }


def net_file_changes(changes: Iterable[FileChange]) -> list[FileChange]:
    """One change per path, from before its first change to after its last, in path order.

    A file created and then deleted is left out; one deleted and created again was modified.
    """
    first: dict[str, FileChange] = {}
    last: dict[str, FileChange] = {}
    for change in changes:
        first.setdefault(change.path, change)
        last[change.path] = change
    net = []
    for path in sorted(first):
        existed, exists = first[path].change != "created", last[path].change != "deleted"
        if existed or exists:
            kind: Literal["created", "modified", "deleted"] = (
                "modified" if existed and exists else "deleted" if existed else "created"
            )
            net.append(
                FileChange(
                    path=path,
                    change=kind,
                    size_before=first[path].size_before if existed else None,
                    size_after=last[path].size_after if exists else None,
                )
            )
    return net
