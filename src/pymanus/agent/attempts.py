"""When a failed attempt may be followed by another, and what the new one is told."""

from __future__ import annotations

ATTEMPT_TEMPERATURE = 0.6
"""Lowest sampling temperature of every request of a second or later attempt: at a small
model's usual 0.2, the new attempt began with the failed one's very calls, token for token."""

RESTART_NOTE = (
    "\n\nNote: an earlier attempt at this task failed and was undone; every file is as it was at the start. "
    "It ended with: {why}\nDo the task again from the beginning, and do not repeat what went wrong."
)

RESTARTABLE = frozenset({"stuck", "tool_failures", "terminate", "unfinished"})
"""End reasons (of a run in error) after which another attempt may start over: the agent was
stuck, a tool kept failing, it called ``terminate`` with status "failure", or the completion
check still found its answer unfinished after sending it back ``max_rejections`` times (an
attempt that may be followed by another ends ``unfinished`` then; the last one's answer is
accepted). A run out of steps or time has nothing left to try with."""

RESTART_REASON_CHARS = 600
"""Characters of the failed attempt's ending quoted in :data:`RESTART_NOTE`."""

MIN_ATTEMPT_STEPS = 3
"""Steps that must remain for another attempt to be worth starting."""


def restart_note(why: str) -> str:
    """The note added to the task for a new attempt, quoting how the last one ended."""
    clipped = why if len(why) <= RESTART_REASON_CHARS else why[: RESTART_REASON_CHARS - 1] + "…"
    return RESTART_NOTE.format(why=clipped)
