"""The bounds of one run: steps, time, repeats, rejections, resampling and attempts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RunLimits:
    """The bounds of one run."""

    max_steps: int = 30
    timeout: float | None = None
    """Wall-clock seconds for the whole run (``None``: no limit)."""
    max_repeats: int = 3
    """Identical calls that end the run as stuck; the first repeat only earns a hint."""
    max_rejections: int = 2
    """Final answers the completion check may send back before one is accepted anyway (or, when
    the check still finds a problem and another attempt may start, the attempt ends ``unfinished``)."""
    failure_rejections: int = 1
    """Of those, ``terminate`` calls with status "failure" the check may send back while it still
    finds something to fix: small models give up on a problem a tool just described (a table
    with no rows yet, a file written by hand), often quoting the fix in their answer. A task
    that truly cannot be done costs one step more."""
    resample_repeats: int = 1
    """Times a response that repeats the previous step's calls exactly is sampled again, more
    freely, with :data:`~pymanus.agent.notes.RESAMPLE_NOTE` and without the repeated calls' tools (``terminate``
    stays callable), before it runs: nothing changed since, so the same calls would give the
    same results (small models re-run a failing test unchanged until the run ends stuck). So
    is a response making a call that has failed the same way ``max_repeats - 1`` times, with
    :data:`~pymanus.agent.notes.FAILED_AGAIN_NOTE`: once more would end the run stuck; and one repeating a recent step
    that nothing has changed since (:class:`~pymanus.agent.guards.StepLog`), with
    :data:`~pymanus.agent.notes.EARLIER_REPEAT_NOTE`. The tools are withheld
    because a higher temperature alone rarely moved the 1.5B: it re-drew a repeated test run
    token for token at any temperature that kept its calls well formed, and every draw of a
    long call costs half a minute on 2 cores. They stay in the prompt (the grammar leaves them
    out), so the prompt cache holds. A response repeating the step before final answers that
    were sent back is sampled again too, with :data:`~pymanus.agent.notes.SENT_BACK_REPEAT_NOTE` and every tool: the
    answer's note may ask for the same tool with other arguments (merge_csv's "run: ..."). So is a
    ``terminate`` that copies the note the last answer was sent back with, or gives up (status
    "failure") with the words of the last tool result (:func:`~pymanus.agent.guards.parrots_sent_back`),
    with ``terminate`` withheld."""
    attempts: int = 1
    """Attempts a run may make. When one fails early (an end reason in :data:`~pymanus.agent.attempts.RESTARTABLE`, with
    :data:`~pymanus.agent.attempts.MIN_ATTEMPT_STEPS` steps left), the workspace is put back as the run found it (see
    :mod:`pymanus.agent.snapshot`) and the conversation starts again from the task, with a note of
    how the failed attempt ended; its requests are sampled at :data:`~pymanus.agent.attempts.ATTEMPT_TEMPERATURE` at
    least. Steps and time are shared by all attempts. A small model that went wrong early keeps
    building on its own mistakes (its broken code and files are in front of it); a fresh start
    with the reason is its best chance."""
    wrap_up: bool = True
    """A run stuck repeating a call that *succeeds* gets one last request, offering only
    ``terminate``, for its final answer (small models compute the answer, then keep
    recomputing it); without it, or when that answer is not accepted, the run ends stuck."""
