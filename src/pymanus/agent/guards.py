"""The limits that keep a run bounded: repeated calls and failing tools."""

from __future__ import annotations

import difflib
import itertools
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pymanus.messages import Message, ToolCall
from pymanus.tools.builtin.workspace_scan import Snapshot
from pymanus.tools.toolset import ToolOutcome

REPEAT_HINT = (
    "\n\n[Note: you already made this exact call (same tool, same arguments) and got this same result. "
    "Repeating it will not change anything: use the result, try a different approach, "
    "or call `terminate` if the task is done.]"
)


def canonical_call(name: str, arguments: dict[str, object] | str) -> str:
    """A key equal for two calls of one tool with the same arguments, in any key order."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return f"{name}:{arguments}"
    return f"{name}:{json.dumps(arguments, sort_keys=True, separators=(',', ':'), default=str)}"


def repeated_step(messages: Sequence[Message], message: Message) -> Literal["previous", "before_answer"] | None:
    """Which earlier step ``message`` makes exactly the calls of: ``"previous"``, the step before it;
    ``"before_answer"``, the step before the final answers that were sent back since (nothing they
    did changed the workspace: the 1.5B re-ran the merge the completion check had just sent back,
    the check's fix in front of it); or None."""
    if not message.tool_calls:
        return None
    steps = [m for m in reversed(messages) if m.role == "assistant"]
    calls = _calls(message)
    if steps and _calls(steps[0]) == calls:
        return "previous"
    answers = sum(1 for _ in itertools.takewhile(_answer_only, steps))
    if answers and len(steps) > answers and _calls(steps[answers]) == calls:
        return "before_answer"
    return None


PARROTED_CHARS = 60
"""Characters of a note an answer must copy verbatim to count as repeating it: a real reason the
task cannot be done names its cause in the model's own words."""


def parrots_sent_back(messages: Sequence[Message], message: Message) -> bool:
    """Whether ``message`` calls ``terminate`` with an answer that copies what it was last told to fix:
    the note the last answer was sent back with, or, for status "failure", the last tool result.

    word_counts ended that way in four runs out of five: the 1.5B answered status "failure" with the
    list of fixes it had just been given, word for word, and made none. sales_report run 104 gave up
    twice with the warning its report.md had just got, then with the note on its SyntaxError. A
    "success" answer may quote a result rightly (the line of a file it was asked for), so only the
    sent-back note counts against it.
    """
    sent_back = sent_back_note(messages)
    last_result = next((m.text for m in reversed(messages) if m.role == "tool"), "")
    for call in message.tool_calls:
        if call.name != "terminate":
            continue
        try:
            arguments = json.loads(call.arguments)
            answer, status = str(arguments.get("message", "")), arguments.get("status")
        except (json.JSONDecodeError, AttributeError):
            continue
        if any(_copies(answer, note) for note in (sent_back, last_result if status == "failure" else "")):
            return True
    return False


def sent_back_note(messages: Sequence[Message]) -> str:
    """What the last final answer was sent back with (the result of the last ``terminate`` call; empty: none)."""
    return next((m.text for m in reversed(messages) if m.role == "tool" and m.name == "terminate"), "")


def _copies(answer: str, note: str) -> bool:
    if not answer or not note:
        return False
    matcher = difflib.SequenceMatcher(None, answer, note, autojunk=False)
    return matcher.find_longest_match(0, len(answer), 0, len(note)).size >= PARROTED_CHARS


def _calls(message: Message) -> list[str]:
    return sorted(canonical_call(c.name, c.arguments) for c in message.tool_calls)


def _answer_only(message: Message) -> bool:
    return bool(message.tool_calls) and all(call.name == "terminate" for call in message.tool_calls)


RECENT_STEPS = 4
"""How far back :class:`StepLog` looks for a step a response repeats: the results of recent steps
are still in the conversation in full, so calling again only fetches what the model can read."""


@dataclass(frozen=True)
class _LoggedStep:
    calls: list[str]
    succeeded: frozenset[str]
    """The tools whose calls in the step succeeded."""
    files: Snapshot | None
    """The workspace's files after the step (``None``: not known)."""


@dataclass
class StepLog:
    """The recent steps of a run, to tell when a response repeats an earlier step that nothing has changed since.

    The 1.5B loops over two steps (run the failing code, list a folder that does not exist, run
    the same code again) where the repeat of the previous step (:func:`repeated_step`) never
    fires. A step that repeats one of the last :data:`RECENT_STEPS` exactly, while no file has
    changed and no call in between of one of its tools succeeded (a ``python`` call in between
    may have changed the session's variables), would give the same results again. A final answer
    is never such a repeat: the completion check may accept one it sent back before.
    """

    _steps: list[_LoggedStep] = field(default_factory=list)

    def record(self, message: Message, outcomes: Sequence[ToolOutcome], files: Snapshot | None) -> None:
        """Log a step that made calls: its calls, the tools that succeeded, and the files after it ran."""
        succeeded = frozenset(o.call.name for o in outcomes if o.failure is None)
        self._steps = [*self._steps, _LoggedStep(_calls(message), succeeded, files)][-RECENT_STEPS:]

    def repeats_unchanged(self, message: Message) -> bool:
        """Whether ``message`` makes exactly the calls of a recent step (other than the last one) with
        nothing changed since."""
        tools = {c.name for c in message.tool_calls}
        if not tools or "terminate" in tools or not self._steps or self._steps[-1].files is None:
            return False
        calls = _calls(message)
        for back in range(2, len(self._steps) + 1):
            since = self._steps[-back + 1 :]
            if any(tools & step.succeeded for step in since):
                return False
            earlier = self._steps[-back]
            if earlier.calls == calls and earlier.files == self._steps[-1].files:
                return True
        return False


@dataclass
class RepeatGuard:
    """Counts identical calls with identical results; the first repeat earns a hint, ``max_repeats`` ends the run.

    A call whose result changed is not a repeat: running the same test after editing the
    code is progress, and a hint that "repeating will not change anything" would be false.
    """

    max_repeats: int = 3
    _seen: Counter[str] = field(default_factory=Counter)
    _failing: dict[str, int] = field(default_factory=dict)
    """Per call: how many times it has given its last result, when that result was a failure."""

    def observe(self, outcome: ToolOutcome, shown: str | None = None) -> int:
        """Record a call; return how many times this exact call has now given this result.

        ``shown``: the result as the model saw it, when the run replaced it (a final answer sent back).
        """
        call = canonical_call(outcome.call.name, outcome.arguments or outcome.call.arguments)
        key = f"{call}\0{outcome.result.text if shown is None else shown}"
        self._seen[key] += 1
        # Under the call as written too: doomed() sees responses before their arguments are
        # validated, and validation fills in defaults (edit_file's insert_line) the model left out.
        written = canonical_call(outcome.call.name, outcome.call.arguments)
        for form in {call, written}:
            if outcome.failure is None:
                self._failing.pop(form, None)
            else:
                self._failing[form] = self._seen[key]
        return self._seen[key]

    def doomed(self, calls: list[ToolCall]) -> bool:
        """Whether one of ``calls`` has failed the same way often enough that once more ends the run."""
        return self.max_repeats > 0 and any(
            self._failing.get(canonical_call(c.name, c.arguments), 0) >= self.max_repeats - 1 for c in calls
        )

    def exhausted(self, count: int) -> bool:
        """Whether a call made ``count`` times should end the run."""
        return self.max_repeats > 0 and count >= self.max_repeats


@dataclass
class FailureGuard:
    """Counts failed calls in a row per tool; a tool past its retry budget ends the run."""

    _streaks: Counter[str] = field(default_factory=Counter)

    def observe(self, outcome: ToolOutcome, budget: int) -> bool:
        """Record an outcome; return True when the tool has failed more than ``budget`` times in a row."""
        name = outcome.call.name
        if outcome.failure is None:
            self._streaks[name] = 0
            return False
        self._streaks[name] += 1
        return self._streaks[name] > budget
