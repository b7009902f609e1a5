"""What the loop tells the model when a step goes wrong: a repeated call, an answer sent back, no call."""

from __future__ import annotations

WRAP_UP_PROMPT = (
    "Stop repeating that call: its result is above. Call `terminate` now with your final answer to the task, "
    'taken from the results above, and status "success"; use status "failure" only if they do not answer it.'
)

RESAMPLE_NOTE = (
    "Your reply repeated the calls of your previous step exactly. Nothing has changed since, so they would "
    "give the same result again. Use that result: make a different call that moves the task forward."
)

EARLIER_REPEAT_NOTE = (
    "Your reply repeats the calls of an earlier step exactly, and no file has changed since, so they would "
    "give the same result again: it is above. Use that result: make a different call that moves the task forward."
)

SENT_BACK_REPEAT_NOTE = (
    "Your reply repeats the calls you made before your last answer, which was sent back. Nothing has changed "
    "since, so they would give the same result. Do what the note on your answer says: make a different call. "
    "The note:\n{sent_back}"
)
"""Quotes the note: the 1.5B re-ran its own merge twice in merge_csv (run 220), the note's merge further
back in its context than its own code."""
SENT_BACK_QUOTED_CHARS = 1_000
"""The most characters of the note :data:`SENT_BACK_REPEAT_NOTE` quotes."""

FAILED_AGAIN_NOTE = (
    "Your reply makes a call that has already failed twice with the same error. It would fail again and end "
    "the run. Read that error and make a different call: change what caused it."
)

WITHHELD_NOTE = (
    " This time {names} cannot be called: use another tool to change what made the result the same, "
    "or call `terminate` if the task is done."
)

PARROT_NOTE = (
    "Your answer repeats the note you were just given. That note says what is left to fix, not a reason "
    "the task cannot be done. Make its first fix now with a tool call; `terminate` cannot be called this time."
)

NOT_FINISHED = "The task is not finished yet: "

GAVE_UP_NOTE = (
    "Not accepted yet: steps remain, so fix what is left first. {problem} "
    'Use status "failure" again only if it truly cannot be done.'
)

NO_TOOL_CALL_NUDGE = (
    "You replied without calling a tool. Continue the task with a tool call, "
    "or call `terminate` with your final answer if the task is done."
)

UNREADABLE_NOTE = (
    "Your last reply could not be read as a tool call (it repeated itself or was cut off, and was dropped). "
    "Reply with one tool call, and keep long text short."
)
