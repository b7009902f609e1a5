"""When a failed attempt may be followed by another, and what the new one is told."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ATTEMPT_TEMPERATURE = 0.6
"""Lowest sampling temperature of every request of a second or later attempt: at a small
model's usual 0.2, the new attempt began with the failed one's very calls, token for token."""

RESTART_NOTE = (
    "\n\nNote: an earlier attempt at this task failed and was undone; every file is as it was at the start. "
    "It ended with: {why}{errors}\nDo the task again from the beginning, and do not repeat what went wrong."
)
ERRORS_NOTE = "\nErrors it met on the way:\n{lines}"

RESTARTABLE = frozenset({"stuck", "tool_failures", "terminate", "unfinished", "unreadable"})
"""End reasons (of a run in error) after which another attempt may start over: the agent was
stuck, a tool kept failing, the model's reply could not be read even when asked again, it
called ``terminate`` with status "failure", or the completion
check still found its answer unfinished after sending it back ``max_rejections`` times (an
attempt that may be followed by another ends ``unfinished`` then; the last one's answer is
accepted). A run out of steps or time has nothing left to try with."""

RESTART_REASON_CHARS = 600
"""Characters of the failed attempt's ending quoted in :data:`RESTART_NOTE`."""

MIN_ATTEMPT_STEPS = 3
"""Steps that must remain for another attempt to be worth starting."""


MAX_ERRORS = 3
"""Distinct tool errors of a failed attempt quoted in the new attempt's note."""
ERROR_CHARS = 200

# The line that names an exception in a traceback: "TypeError: f() got an unexpected keyword argument 'x'".
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?\w+(?:Error|Exception): .+$", re.MULTILINE)


@dataclass
class AttemptErrors:
    """The distinct errors the tools of one attempt reported, for the note of the next.

    How an attempt ended rarely says what went wrong on the way: the 1.5B met a
    ``TypeError`` from ``to_markdown(file_path=...)``, gave up on another point, and began
    its second attempt with the same call.
    """

    lines: list[str] = field(default_factory=list)

    def observe(self, tool: str, text: str) -> None:
        """Record the error observation ``text`` of a ``tool`` call."""
        raised = [match.group(0) for match in _EXCEPTION_LINE.finditer(text)]  # the last one is what ended it
        what = raised[-1] if raised else next((line for line in text.splitlines() if line.strip()), "")
        line = f"- {tool}: {what.strip()}"
        line = line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 1] + "…"
        if line not in self.lines and len(self.lines) < MAX_ERRORS:
            self.lines.append(line)


def restart_note(why: str, errors: AttemptErrors | None = None) -> str:
    """The note added to the task for a new attempt, quoting how the last one ended and the errors it met."""
    clipped = why if len(why) <= RESTART_REASON_CHARS else why[: RESTART_REASON_CHARS - 1] + "…"
    met = ERRORS_NOTE.format(lines="\n".join(errors.lines)) if errors and errors.lines else ""
    return RESTART_NOTE.format(why=clipped, errors=met)
