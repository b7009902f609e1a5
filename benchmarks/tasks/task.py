"""``Task``: one piece of real work for the agent, with the files it starts from and a checker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

Verdict = tuple[bool, str]
"""What a checker returns: whether the task was done, and why (or why not)."""


@dataclass(frozen=True)
class Task:
    """A task as a user would give it, the files it starts from, and how to tell it was done.

    ``setup`` writes the input files into an empty workspace; ``check`` looks at the
    workspace (and the agent's final answer) afterwards and never raises for a bad
    result: it returns ``(False, reason)``. Expected values are computed from the same
    code that wrote the inputs, never read back from the workspace the agent may have changed.
    """

    name: str
    """Short identifier, used by ``--tasks``."""
    prompt: str
    """What the user asks, in plain language."""
    setup: Callable[[Path], None]
    """Writes the input files into the workspace."""
    check: Callable[[Path, str], Verdict]
    """``check(workspace, output)``: whether the work is done, and a one-line reason."""
    kind: str = "files"
    """What the task exercises: ``data``, ``code``, ``text``, ``files`` or ``answer``."""
    tags: tuple[str, ...] = field(default=())
    """Free labels (e.g. ``"csv"``, ``"multi-file"``)."""
