"""What the loop tells the model when a step goes wrong: a repeated call, an answer sent back, no call."""

from __future__ import annotations

REPEAT_HINT = (
    "\n\n[Note: you already made this exact call (same tool, same arguments) and got this same result. "
    "Repeating it will not change anything: use the result, try a different approach, "
    "or call `terminate` if the task is done.]"
)

AGAIN_HINT = (
    "\n\n[Note: your previous step made this exact call (same tool, same arguments), and nothing was "
    "changed in between, so it gave the same kind of result. Change something first (a file, the code), "
    "try a different approach, or call `terminate` if the task is done.]"
)

WITHHELD_NOTE = " [Your next reply cannot call `{name}`: do something else first.]"
"""Follows a repeat note: the repeated tool is not callable for one response (it stays in the request)."""

GIVE_UP_NOTE = (
    "Not accepted yet: your reply gave up while it could not call {names}. {they} can be called again now. "
    "Take the next step of the task (a different approach, or the files the task asks for); if it truly "
    'cannot be done, call `terminate` with status "failure" again and say why.'
)
"""Answers a give-up drawn while tools were withheld: the loop's own restriction must not end the run."""

WRAP_UP_PROMPT = (
    "Stop repeating that call: its result is above. Call `terminate` now with your final answer to the task, "
    'taken from the results above, and status "success"; use status "failure" only if they do not answer it.'
)

NOT_FINISHED = "The task is not finished yet: "

NO_TOOL_CALL_NUDGE = (
    "You replied without calling a tool. Continue the task with a tool call, "
    "or call `terminate` with your final answer if the task is done."
)

UNREADABLE_NOTE = (
    "Your last reply could not be read as a tool call (it repeated itself or was cut off, and was dropped). "
    "Reply with one tool call, and keep long text short."
)
